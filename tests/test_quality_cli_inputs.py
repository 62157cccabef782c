"""How the CLI takes a quality fusion's measures: a store or side tables (not both), the eval
set's store checked before the fit, the counts it reports, and what it says about files given
in the wrong place (audit of quality fusion)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import bosaris_dask as bd
from bosaris_dask.cli import main
from bosaris_dask.errors import TrialError
from bosaris_dask.trials import make_quality, quality_table


def _write(path, lines) -> None:
    path.write_text("".join(f"{line}\n" for line in lines))


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(5)
    models = [f"m{i:02d}" for i in range(12)]
    segments = [f"s{j:02d}" for j in range(15)]
    tar = rng.integers(0, 4, 12)[:, None] == rng.integers(0, 4, 15)[None, :]
    cells = [(m, s, bool(tar[i, j])) for i, m in enumerate(models) for j, s in enumerate(segments)]
    _write(tmp_path / "key.txt", [f"{m} {s} {'target' if t else 'nontarget'}" for m, s, t in cells])
    for k in (1, 2):
        values = {(m, s): (1.5 if t else -1.0) * k + rng.normal() for m, s, t in cells}
        _write(tmp_path / f"s{k}.txt", [f"{m} {s} {float(values[m, s])!r}" for m, s, _ in cells])
        # system 2 lacks every 17th trial, one of them in m03's row (whose quality is NaN)
        if k == 2:
            kept = [
                f"{m} {s} {float(values[m, s])!r}" for n, (m, s, _) in enumerate(cells) if n % 17
            ]
            _write(tmp_path / "s2_miss.txt", kept)
    qm, qs = rng.normal(size=(12, 2)), rng.normal(size=(15, 2))
    qm[3] = np.nan  # m03 has no quality
    for name, ids, values in (("mq.txt", models, qm), ("sq.txt", segments, qs)):
        rows = [f"{i} {float(a)!r} {float(b)!r}" for i, (a, b) in zip(ids, values, strict=True)]
        _write(tmp_path / name, ["2", *rows])
    bd.write(make_quality(quality_table(models, np.nan_to_num(qm)), quality_table(segments, qs)),
             tmp_path / "q.zarr")  # fmt: skip
    return tmp_path


def _fuse(d, *extra):
    return main(
        [
            "fuse",
            "-q",
            "--key",
            str(d / "key.txt"),
            "--scores",
            str(d / "s1.txt"),
            "--scores",
            str(d / "s2.txt"),
            "--model-out",
            str(d / "model.json"),
            *extra,
        ]
    )


def test_a_quality_store_and_side_tables_together_are_refused(files, capsys):
    """Both were accepted and the tables silently left unread (the store won)."""
    d = files
    tables = ["--model-quality", str(d / "mq.txt"), "--segment-quality", str(d / "sq.txt")]
    assert _fuse(d, "--quality", str(d / "q.zarr"), *tables) == 1
    err = capsys.readouterr().err
    assert "--model-quality and --segment-quality: give the quality store (both sides) or the " \
           "side tables, not both" in err and not (d / "model.json").exists()  # fmt: skip
    assert _fuse(d, *tables) == 0
    capsys.readouterr()
    rc = main(["apply", "-q", "--model", str(d / "model.json"), "--scores", str(d / "s1.txt"),
               "--scores", str(d / "s2.txt"), "--quality", str(d / "q.zarr"), tables[0],
               tables[1], "--out", str(d / "out.txt")])  # fmt: skip
    assert rc == 1 and "not both" in capsys.readouterr().err


def test_the_eval_quality_store_is_checked_before_the_fit(files, capsys):
    """A side table given as --apply-quality failed after the whole fit, with a hint to
    --model-quality (the training tables in fuse)."""
    d = files
    rc = _fuse(d, "--model-quality", str(d / "mq.txt"), "--segment-quality", str(d / "sq.txt"),
               "--apply", str(d / "s1.txt"), "--apply", str(d / "s2.txt"), "--apply-quality",
               str(d / "mq.txt"), "--out", str(d / "out.txt"))  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 1 and "--apply-quality " in err and "a quality table of one side" in err
    assert "apply with bosaris-dask apply --model-quality" in err
    assert not (d / "model.json").exists() and not (d / "out.txt").exists()


def test_the_dropped_trials_are_all_those_without_a_score(files, capsys):
    """With --allow-missing, the quality stage counted only the trials of ids with quality
    (the message and n_missing said 2 fewer than were dropped)."""
    d = files
    n_cells = len((d / "key.txt").read_text().splitlines())
    dropped = n_cells - len((d / "s2_miss.txt").read_text().splitlines())
    rc = main(
        [
            "fuse",
            "--key",
            str(d / "key.txt"),
            "--scores",
            str(d / "s1.txt"),
            "--scores",
            str(d / "s2_miss.txt"),
            "--model-quality",
            str(d / "mq.txt"),
            "--segment-quality",
            str(d / "sq.txt"),
            "--allow-missing",
            "--model-out",
            str(d / "model.json"),
        ]
    )
    assert rc == 0
    model = json.loads((d / "model.json").read_text())
    assert model["n_missing"] == model["linear"]["n_missing"] == dropped == 11
    assert f"dropped {dropped} key trials without a score" in capsys.readouterr().err
    scored_without_quality = 15 - 1  # m03's row but its one trial without a score
    assert model["n_no_quality"] == scored_without_quality


def test_swapped_side_tables_are_named_as_such(files, capsys):
    d = files
    rc = _fuse(d, "--model-quality", str(d / "sq.txt"), "--segment-quality", str(d / "mq.txt"))
    err = capsys.readouterr().err
    assert rc == 0 and "no training trial has quality measures on both sides" in err
    assert "the model and segment tables given the other way round?" in err


def test_a_store_given_as_a_side_table_says_what_it_holds(files, capsys):
    d = files
    bd.write(bd.read(d / "s1.txt"), d / "s1.zarr")
    assert _fuse(d, "--model-quality", str(d / "s1.zarr"), "--segment-quality",
                 str(d / "sq.txt")) == 1  # fmt: skip
    err = capsys.readouterr().err
    assert "s1.zarr: a zarr store holding scores, not quality" in err
    assert _fuse(d, "--model-quality", str(d / "q.zarr"), "--segment-quality",
                 str(d / "sq.txt")) == 1  # fmt: skip
    assert "holding a Quality object of both sides (--quality" in capsys.readouterr().err


def test_write_quality_takes_one_side_of_a_quality_object(tmp_path):
    q = make_quality(quality_table(["m1", "m2"], [[1.0, 3.0], [2.0, 4.0]]),
                     quality_table(["s1"], [[0.5, 5.0]]))  # fmt: skip
    bd.write_quality(q.model_quality, tmp_path / "m.txt")
    bd.write_quality(q.segment_quality, tmp_path / "s.h5")
    assert (tmp_path / "m.txt").read_text() == "2\nm1 1.0 3.0\nm2 2.0 4.0\n"
    assert bd.read_quality(tmp_path / "s.h5").values.tolist() == [[0.5, 5.0]]
    with pytest.raises(TrialError, match="holds both sides: write each side's table"):
        bd.write_quality(q, tmp_path / "q.txt")


@pytest.mark.filterwarnings("always::bosaris_dask.fusion.QualityBackoffWarning")
def test_eval_scores_whose_ids_have_no_quality_are_said_to_be_all_of_them(files, capsys):
    """Applied to an eval set with the training tables, every trial backed off with only a
    count ('120 trials have no quality')."""
    d = files
    for k in (1, 2):
        lines = (d / f"s{k}.txt").read_text().replace("m", "e").replace("s", "t")
        (d / f"e{k}.txt").write_text(lines)
    rc = _fuse(d, "--model-quality", str(d / "mq.txt"), "--segment-quality", str(d / "sq.txt"),
               "--apply", str(d / "e1.txt"), "--apply", str(d / "e2.txt"), "--out",
               str(d / "out.txt"))  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 0 and "180 trials have no quality" in err
    assert "(every trial: no model or segment id of these scores is in the quality" in err
