"""A quality fusion applied from text score files to a text file keeps the input's line order
and is applied packed (``cli/in_order.py``; each trial its own model's and segment's quality
vectors, :class:`bosaris_dask.objectives.TrialQuality`): the lines and values of the grid path
(a store ``--out``, converted), bit for bit, the same back-off, warnings and errors."""

from __future__ import annotations

import json
import warnings
from argparse import Namespace
from dataclasses import replace

import numpy as np
import pytest

from bosaris_dask import io
from bosaris_dask.cli import in_order, main, packed_inputs
from bosaris_dask.errors import TrialError
from bosaris_dask.fusion import QualityBackoffWarning, QualityFuser
from bosaris_dask.io.text.packed import TrialList, as_packed, joined, unpacked
from bosaris_dask.objectives import trial_quality
from bosaris_dask.trials import make_quality, quality_table

#: The back-off warning is one ``warning:`` line of the CLI, compared between the two paths.
pytestmark = pytest.mark.filterwarnings("always::bosaris_dask.fusion.QualityBackoffWarning")


def _lines(path) -> list[str]:
    return path.read_text().splitlines()


def _write(path, lines) -> None:
    path.write_text("".join(f"{line}\n" for line in lines))


def _table(path, ids, values) -> None:
    _write(path, [str(values.shape[1])] + [
        f"{i} " + " ".join(repr(float(v)) for v in row) for i, row in zip(ids, values, strict=True)
    ])  # fmt: skip


@pytest.fixture
def lists(tmp_path):
    """A sparse key (ids shared by several trials, interleaved so that a grid writes another
    order), two systems' score files in other shuffled orders (the second lacks a few trials
    and has one of its own), and quality tables where a few ids are absent and one row is
    NaN (their trials back off to the linear fusion)."""
    rng = np.random.default_rng(11)
    models = [f"enr{i:02d}" for i in range(40)]
    segments = [f"tst{j:03d}" for j in range(90)]
    cells = list(dict.fromkeys(
        (models[a], segments[b]) for a, b in zip(rng.integers(0, 40, 500), rng.integers(0, 90, 500),
                                                 strict=True)
    ))  # fmt: skip
    rng.shuffle(cells)
    target = {c: rng.random() < 0.35 for c in cells}
    _write(tmp_path / "key.lst", [f"{m} {s} {'target' if target[m, s] else 'nontarget'}"
                                  for m, s in cells])  # fmt: skip
    score = {c: (2.0 if target[c] else -1.0) + rng.normal() for c in cells}
    _write(tmp_path / "s1.lst", [f"{m} {s} {score[m, s]!r}" for m, s in cells])
    other = [c for c in cells if rng.random() < 0.95] + [("zz", "tst000")]
    rng.shuffle(other)
    _write(tmp_path / "s2.lst", [f"{m} {s} {score.get((m, s), 0.0) * 0.5 + rng.normal()!r}"
                                 for m, s in other])  # fmt: skip
    for name, ids in (("mq", models), ("sq", segments)):
        kept = [i for n, i in enumerate(ids) if n % 7 != 3]  # a few ids without quality
        values = rng.normal(size=(len(kept), 2))
        values[2] = np.nan  # and a NaN row
        _table(tmp_path / name, kept, values)
    return tmp_path


def _quality_options(d) -> list[str]:
    return ["--model-quality", str(d / "mq"), "--segment-quality", str(d / "sq")]


@pytest.fixture
def model(lists):
    """A quality fusion trained on the lists (packed)."""
    d = lists
    assert main(["fuse", "--key", str(d / "key.lst"), "--scores", str(d / "s1.lst"), "--scores",
                 str(d / "s2.lst"), *_quality_options(d), "--allow-missing", "--model-out",
                 str(d / "q.json"), "-q"]) == 0  # fmt: skip
    return d / "q.json"


def _grid(d, argv, capsys) -> tuple[list[str], str]:
    """The same command through the grid (a zarr --out), converted to text, and its stderr."""
    capsys.readouterr()
    assert main([*argv, "--out", str(d / "grid.zarr")]) == 0
    err = capsys.readouterr().err
    main(["convert", str(d / "grid.zarr"), str(d / "grid.txt"), "-q"])
    return _lines(d / "grid.txt"), err


def _in_order(d, argv, capsys) -> tuple[list[str], str]:
    capsys.readouterr()
    assert main([*argv, "--out", str(d / "out.txt")]) == 0
    return _lines(d / "out.txt"), capsys.readouterr().err


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines()
            if line.startswith(("warning:", "bosaris-dask: error:"))]  # fmt: skip


def _by_hand(d, model_path, trials) -> dict[tuple[str, str], float]:
    """Each trial's fused score from the model's JSON: ``a + b's + q_m' W q_s`` where both
    ids have quality (a row without NaN), else the first-stage linear fusion's."""
    doc = json.loads(model_path.read_text())
    W = np.array(doc["quality_matrix"])
    tables = {}
    for name in ("mq", "sq"):
        rows = [line.split() for line in _lines(d / name)[1:]]
        tables[name] = {r[0]: np.array([*map(float, r[1:]), 1.0]) for r in rows}
    scores = [{tuple(r[:2]): float(r[2]) for r in map(str.split, _lines(d / f"s{k}.lst"))}
              for k in (1, 2)]  # fmt: skip
    out = {}
    for m, s in trials:
        x = np.array([scores[0][m, s], scores[1][m, s]])
        qm, qs = tables["mq"].get(m), tables["sq"].get(s)
        if qm is not None and qs is not None and not np.isnan(qm).any() | np.isnan(qs).any():
            out[m, s] = doc["offset"] + np.dot(doc["weights"], x) + qm @ W @ qs
        else:
            out[m, s] = doc["linear"]["offset"] + np.dot(doc["linear"]["weights"], x)
    return out


def test_apply_keeps_the_first_files_order_and_the_grids_values(lists, model, capsys):
    d = lists
    argv = ["apply", "--model", str(model), "--scores", str(d / "s1.lst"), "--scores",
            str(d / "s2.lst"), *_quality_options(d)]  # fmt: skip
    out, err = _in_order(d, argv, capsys)
    grid, grid_err = _grid(d, argv, capsys)
    assert "model by model" not in err
    assert out != grid and sorted(out) == sorted(grid)  # the same lines, bit for bit
    first = [tuple(line.split()[:2]) for line in _lines(d / "s1.lst")]
    trials = [tuple(line.split()[:2]) for line in out]
    assert trials == [t for t in first if t in set(trials)] and len(trials) < len(first)
    backoff = [w for w in _warnings(err) if "have no quality" in w]
    assert len(backoff) == 1 and _warnings(err) == _warnings(grid_err)
    n_backoff = int(backoff[0].split()[1])
    assert 0 < n_backoff < len(trials)
    want = _by_hand(d, model, trials)
    got = {t: float(line.split()[2]) for t, line in zip(trials, out, strict=True)}
    np.testing.assert_allclose([got[t] for t in trials], [want[t] for t in trials], rtol=1e-12,
                               atol=1e-12)  # fmt: skip


def test_fuse_apply_writes_the_applys_lines(lists, model, capsys):
    d = lists
    argv = ["fuse", "--key", str(d / "key.lst"), "--scores", str(d / "s1.lst"), "--scores",
            str(d / "s2.lst"), *_quality_options(d), "--allow-missing", "--model-out",
            str(d / "again.json"), "--apply", str(d / "s1.lst"), "--apply",
            str(d / "s2.lst")]  # fmt: skip
    out, err = _in_order(d, argv, capsys)
    assert "estimated target proportion" in err and "have no quality" in err
    assert json.loads((d / "again.json").read_text()) == json.loads(model.read_text())
    applied, _ = _in_order(d, ["apply", "--model", str(model), "--scores", str(d / "s1.lst"),
                               "--scores", str(d / "s2.lst"), *_quality_options(d)],
                           capsys)  # fmt: skip
    assert out == applied
    grid, _ = _grid(d, argv, capsys)
    assert sorted(out) == sorted(grid) and out != grid


def test_fuse_apply_quality_gives_the_eval_sets_quality(lists, capsys):
    # --apply-quality (a quality store) replaces the training tables for the eval trials
    d = lists
    rng = np.random.default_rng(2)
    ids = {side: [line.split()[0] for line in _lines(d / name)[1:]]
           for side, name in (("model", "mq"), ("segment", "sq"))}  # fmt: skip
    eval_q = make_quality(quality_table(ids["model"][:-4], rng.normal(size=(len(ids["model"]) - 4,
                                                                             2))),
                          quality_table(ids["segment"], rng.normal(size=(len(ids["segment"]),
                                                                         2))))  # fmt: skip
    io.write(eval_q, d / "eval_q.zarr")
    argv = [
        "fuse",
        "--key",
        str(d / "key.lst"),
        "--scores",
        str(d / "s1.lst"),
        "--scores",
        str(d / "s2.lst"),
        *_quality_options(d),
        "--allow-missing",
        "--model-out",
        str(d / "q.json"),
        "--apply",
        str(d / "s1.lst"),
        "--apply",
        str(d / "s2.lst"),
        "-q",
    ]
    given = [*argv, "--apply-quality", str(d / "eval_q.zarr")]
    out, _ = _in_order(d, given, capsys)
    grid, _ = _grid(d, given, capsys)
    assert sorted(out) == sorted(grid)
    tables, _ = _in_order(d, argv, capsys)  # the training tables instead
    assert len(tables) == len(out) and tables != out


def test_ndx_order_fill_and_llr_base(lists, capsys):
    d = lists
    assert main(["fuse", "--key", str(d / "key.lst"), "--scores", str(d / "s1.lst"), "--scores",
                 str(d / "s2.lst"), *_quality_options(d), "--allow-missing", "--llr-base", "10",
                 "--model-out", str(d / "q10.json"), "-q"]) == 0  # fmt: skip
    ndx = [line.split()[:2] for line in _lines(d / "s2.lst")][::-1] + [["nobody", "tst001"]]
    _write(d / "trials.ndx", [" ".join(t) for t in ndx])
    argv = ["apply", "--model", str(d / "q10.json"), "--scores", str(d / "s1.lst"), "--scores",
            str(d / "s2.lst"), *_quality_options(d), "--ndx", str(d / "trials.ndx"),
            "--fill-missing", "0"]  # fmt: skip
    out, err = _in_order(d, argv, capsys)
    assert [line.split()[:2] for line in out] == ndx
    assert out[-1] == "nobody tst001 0.0"
    grid, grid_err = _grid(d, argv, capsys)
    assert sorted(out) == sorted(grid)
    assert _warnings(err) == _warnings(grid_err)


def _bad_model(d, model, change):
    doc = json.loads(model.read_text())
    change(doc)
    path = d / "bad.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("problem", [
    "measure count", "sides differ", "infinite", "no tables", "names", "no linear",
    "linear model",
])  # fmt: skip
def test_errors_are_the_grids(lists, model, capsys, problem):
    d = lists
    quality = _quality_options(d)
    path = model
    if problem == "measure count":  # 3 measures on both sides, the model 2
        _table(d / "mq3", ["enr00"], np.ones((1, 3)))
        _table(d / "sq3", ["tst000"], np.ones((1, 3)))
        quality = ["--model-quality", str(d / "mq3"), "--segment-quality", str(d / "sq3")]
    elif problem == "sides differ":
        _table(d / "sq3", ["tst000"], np.ones((1, 3)))
        quality = ["--model-quality", str(d / "mq"), "--segment-quality", str(d / "sq3")]
    elif problem == "infinite":  # of an id of the lists, in a store (a table refuses it)
        table = io.read_quality(d / "sq")
        values = table.values.copy()
        values[0, 1] = np.inf
        io.write(make_quality(io.read_quality(d / "mq"), quality_table(table.id.values, values)),
                 d / "inf.zarr")  # fmt: skip
        quality = ["--quality", str(d / "inf.zarr")]
    elif problem == "no tables":
        quality = []
    elif problem == "names":  # a quality store naming the measures in another order
        named = make_quality(
            quality_table(["enr00"], [[1.0, 2.0]], measures=["dur", "snr"]),
            quality_table(["tst000"], [[1.0, 2.0]], measures=["dur", "snr"]),
        )
        io.write(named, d / "named.zarr")
        path = _bad_model(d, model, lambda doc: doc.update(measures=["snr", "dur"]))
        quality = ["--quality", str(d / "named.zarr")]
    elif problem == "no linear":  # trials without quality and nothing to back off to
        path = _bad_model(d, model, lambda doc: doc.pop("linear"))
    else:  # quality given to a linear fusion
        assert main(["fuse", "--key", str(d / "key.lst"), "--scores", str(d / "s1.lst"),
                     "--scores", str(d / "s2.lst"), "--allow-missing", "--model-out",
                     str(d / "lin.json"), "-q"]) == 0  # fmt: skip
        path = d / "lin.json"
    argv = ["apply", "--model", str(path), "--scores", str(d / "s1.lst"), "--scores",
            str(d / "s2.lst"), *quality]  # fmt: skip
    said = []
    for out in ("out.txt", "out.zarr"):  # the lists, then the grid
        capsys.readouterr()
        assert main([*argv, "--out", str(d / out)]) != 0
        said.append(_warnings(capsys.readouterr().err))
        assert not (d / out).exists()
    assert said[0] == said[1] and said[0][-1].startswith("bosaris-dask: error:")
    words = {
        "measure count": "the model has 2 quality measures, the quality 3",
        "sides differ": "W is symmetric",
        "infinite": "infinite",
        "no tables": "is a quality fusion: give the scores' quality measures",
        "names": "W pairs them by position",
        "no linear": "fit it again",
        "linear model": "takes no quality measures",
    }
    assert words[problem] in said[0][-1]


def test_quality_does_not_send_text_through_the_grid(lists, model, capsys):
    d = lists
    args = Namespace(out=str(d / "out.txt"), ndx=None, model_quality=str(d / "mq"),
                     segment_quality=str(d / "sq"), quiet=False)  # fmt: skip
    assert in_order.keeps_line_order(args, [str(d / "s1.lst"), str(d / "s2.lst")])
    main(["convert", str(d / "s1.lst"), str(d / "s1.zarr"), "-q"])  # a store: the grid
    capsys.readouterr()
    assert (
        main(
            [
                "apply",
                "--model",
                str(model),
                "--scores",
                str(d / "s1.zarr"),
                "--scores",
                str(d / "s2.lst"),
                *_quality_options(d),
                "--out",
                str(d / "o.txt"),
            ]
        )
        == 0
    )
    assert "lines written model by model" in capsys.readouterr().err


@pytest.mark.parametrize("width", [4096, 64, 37])
def test_transform_of_packed_trials_is_the_grids_bit_for_bit(lists, model, width):
    d = lists
    fuser = QualityFuser.load(model)
    quality = make_quality(io.read_quality(d / "mq"), io.read_quality(d / "sq"))
    systems = [io.read(d / f"s{k}.lst", "scores") for k in (1, 2)]
    with warnings.catch_warnings(record=True) as on_grid:
        warnings.simplefilter("always")
        grid = fuser.transform(systems, quality).compute()
    order = TrialList.read(d / "s1.lst", "scores")
    lists_ = [TrialList.read(d / f"s{k}.lst", "scores") for k in (1, 2)]
    packed = [as_packed(order, *joined(order, s), width=width) for s in lists_]
    cells = packed_inputs.list_quality(quality, order)
    if width != 4096:
        cells = trial_quality(quality, order.listed(width))
        packed = [s.chunk({"model": 2, "segment": 16}) for s in packed]
    with warnings.catch_warnings(record=True) as on_cells:
        warnings.simplefilter("always")
        values, scored = unpacked(fuser.transform(packed, cells), len(order.values))
    assert [str(w.message) for w in on_cells] == [str(w.message) for w in on_grid]
    assert on_grid[0].category is QualityBackoffWarning
    m = {x: i for i, x in enumerate(grid.model.values)}
    s = {x: i for i, x in enumerate(grid.segment.values)}
    rows = [m[x] for x in order.models[order.model_codes]]
    cols = [s[x] for x in order.segments[order.segment_codes]]
    np.testing.assert_array_equal(scored, grid.score_mask.values[rows, cols])
    np.testing.assert_array_equal(values[scored], grid.score.values[rows, cols][scored])
    with pytest.raises(TrialError, match="laid out 1 x 3, the trials"):
        fuser.transform(packed, packed_inputs.list_quality(quality, _three(order)))


def _three(order):
    return replace(order, model_codes=order.model_codes[:3],
                   segment_codes=order.segment_codes[:3], values=order.values[:3])  # fmt: skip


def test_apply_of_scores_from_embeddings_of_a_text_ndx_with_quality(lists, capsys):
    """``apply --enrol --test --ndx LIST`` with a quality fusion whose last system is scored
    from embeddings: pair by pair in the ndx's order, the grid's lines and values."""
    d = lists
    ids = sorted({w for line in _lines(d / "key.lst") for w in line.split()[:2]})
    rng = np.random.default_rng(3)
    np.savez(d / "emb.npz", ids=np.array(ids), embeddings=rng.normal(size=(len(ids), 8)))
    embeddings = ["--enrol", str(d / "emb.npz"), "--test", str(d / "emb.npz")]
    assert main(["fuse", "--key", str(d / "key.lst"), "--scores", str(d / "s1.lst"),
                 *embeddings, *_quality_options(d), "--model-out", str(d / "qe.json"),
                 "-q"]) == 0  # fmt: skip
    ndx = list(reversed(_lines(d / "key.lst")))[:300]
    _write(d / "ndx.lst", [" ".join(line.split()[:2]) for line in ndx])
    argv = ["apply", "--model", str(d / "qe.json"), "--scores", str(d / "s1.lst"), *embeddings,
            "--ndx", str(d / "ndx.lst"), *_quality_options(d)]  # fmt: skip
    out, err = _in_order(d, argv, capsys)
    grid, grid_err = _grid(d, argv, capsys)
    assert "model by model" not in err
    assert [line.split()[:2] for line in out] == [line.split()[:2] for line in ndx]
    assert sorted(out) == sorted(grid) and _warnings(err) == _warnings(grid_err)
