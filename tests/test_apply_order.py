"""Text scores applied to a text file keep the input's line order (``cli/in_order.py``): a
Kaldi recipe pastes the output beside its trial list. The lines and values are the grid path's."""

from __future__ import annotations

import numpy as np
import pytest

from bosaris_dask.cli import in_order, main
from bosaris_dask.errors import ParseError


def _lines(path) -> list[str]:
    return path.read_text().splitlines()


def _write(path, lines) -> None:
    path.write_text("".join(f"{line}\n" for line in lines))


@pytest.fixture
def lists(tmp_path):
    """A key, two systems' score files in different shuffled orders (the second lacks a few
    trials and has trials of its own), ids interleaved so that a grid writes other orders."""
    rng = np.random.default_rng(3)
    models = [f"spk{i}-enr" for i in range(12)]
    segments = [f"utt{j:02d}" for j in range(15)]
    cells = [(m, s) for m in models for s in segments if rng.random() < 0.6]
    rng.shuffle(cells)
    target = {c: rng.random() < 0.3 for c in cells}
    _write(tmp_path / "key.lst", [f"{m} {s} {'target' if target[m, s] else 'nontarget'}"
                                  for m, s in cells])  # fmt: skip
    score = {c: (2.0 if target[c] else -1.0) + rng.normal() for c in cells}
    _write(tmp_path / "s1.lst", [f"{m} {s} {score[m, s]!r}" for m, s in cells])
    other = [c for c in cells if rng.random() < 0.9] + [("zz", "utt00")]
    rng.shuffle(other)
    _write(tmp_path / "s2.lst", [f"{m} {s} {score.get((m, s), 0.0) * 0.5 + rng.normal()!r}"
                                 for m, s in other])  # fmt: skip
    return tmp_path


def _grid(tmp_path, argv, out) -> list[str]:
    """The same command through the grid (a zarr --out), converted to text."""
    main([*argv, "--out", str(tmp_path / "grid.zarr"), "-q"])
    main(["convert", str(tmp_path / "grid.zarr"), str(out), "-q"])
    return _lines(out)


@pytest.mark.parametrize("method", ["linear", "pav"])
def test_calibrated_lines_keep_the_input_order_and_the_grid_values(lists, method):
    d = lists
    main(["calibrate", "--method", method, "--key", str(d / "key.lst"), "--scores",
          str(d / "s1.lst"), "--model-out", str(d / "cal.json"), "-q"])  # fmt: skip
    argv = ["apply", "--model", str(d / "cal.json"), "--scores", str(d / "s1.lst")]
    main([*argv, "--out", str(d / "out.txt"), "-q"])
    out = _lines(d / "out.txt")
    grid = _grid(d, argv, d / "grid.txt")
    assert [line.split()[:2] for line in out] == [line.split()[:2] for line in
                                                  _lines(d / "s1.lst")]  # fmt: skip
    assert out != grid and sorted(out) == sorted(grid)  # the order differs, not the lines


def test_fused_lines_follow_the_first_file_and_leave_out_unscored_trials(lists, capsys):
    d = lists
    main(["fuse", "--key", str(d / "key.lst"), "--scores", str(d / "s1.lst"), "--scores",
          str(d / "s2.lst"), "--model-out", str(d / "fus.json"), "--allow-missing",
          "--apply", str(d / "s1.lst"), "--apply", str(d / "s2.lst"), "--out",
          str(d / "fit.txt")])  # fmt: skip
    err = capsys.readouterr().err
    argv = ["apply", "--model", str(d / "fus.json"), "--scores", str(d / "s1.lst"),
            "--scores", str(d / "s2.lst")]  # fmt: skip
    main([*argv, "--out", str(d / "out.txt"), "-q"])
    out, grid = _lines(d / "out.txt"), _grid(d, argv, d / "grid.txt")
    assert _lines(d / "fit.txt") == out and sorted(out) == sorted(grid)
    first = [tuple(line.split()[:2]) for line in _lines(d / "s1.lst")]
    trials = [tuple(line.split()[:2]) for line in out]
    assert trials == [t for t in first if t in set(trials)]
    dropped = len(first) - len(trials)
    assert dropped > 0
    assert f"{dropped} of the {len(first)} trials of s1.lst lack a score in some system" in err
    assert "estimated target proportion" in err  # fuse's report from the packed lists


def test_the_grid_path_says_how_many_trials_it_leaves_out_as_the_text_path_does(lists, capsys):
    d = lists
    main(["fuse", "--key", str(d / "key.lst"), "--scores", str(d / "s1.lst"), "--scores",
          str(d / "s2.lst"), "--model-out", str(d / "fus.json"), "--allow-missing",
          "-q"])  # fmt: skip
    argv = ["apply", "--model", str(d / "fus.json"), "--scores", str(d / "s1.lst"),
            "--scores", str(d / "s2.lst")]  # fmt: skip
    first = {tuple(line.split()[:2]) for line in _lines(d / "s1.lst")}
    second = {tuple(line.split()[:2]) for line in _lines(d / "s2.lst")}
    dropped = len(first - second)
    assert main([*argv, "--out", str(d / "out.txt")]) == 0  # the text path
    said = f"{dropped} of the {len(first)} trials of s1.lst lack a score in some system: "
    assert said + "not written" in capsys.readouterr().err
    assert main([*argv, "--out", str(d / "out.zarr")]) == 0  # the grid path (a store)
    assert said + "not written" in capsys.readouterr().err
    ndx = sorted(first)[::2]
    _write(d / "trials.ndx", [" ".join(t) for t in ndx])
    assert main([*argv, "--ndx", str(d / "trials.ndx"), "--out", str(d / "ndx.zarr")]) == 0
    unscored = len(set(ndx) - second)
    assert unscored > 0
    assert (f"{unscored} of the {len(ndx)} trials of trials.ndx lack a score in some system: "
            "not written") in capsys.readouterr().err  # fmt: skip
    main(["calibrate", "--key", str(d / "key.lst"), "--scores", str(d / "s2.lst"),
          "--model-out", str(d / "cal.json"), "--allow-missing", "-q"])  # fmt: skip
    argv = ["apply", "--model", str(d / "cal.json"), "--scores", str(d / "s2.lst")]
    assert main([*argv, "--out", str(d / "cal.zarr")]) == 0  # one system: nothing left out
    assert "not written" not in capsys.readouterr().err


def test_ndx_order_fill_and_llr_base(lists):
    d = lists
    main(["fuse", "--key", str(d / "key.lst"), "--scores", str(d / "s1.lst"), "--scores",
          str(d / "s2.lst"), "--model-out", str(d / "fus.json"), "--allow-missing",
          "--llr-base", "10", "-q"])  # fmt: skip
    ndx = [line.split()[:2] for line in _lines(d / "s2.lst")][::-1] + [["nobody", "utt01"]]
    _write(d / "trials.ndx", [" ".join(t) for t in ndx])
    argv = ["apply", "--model", str(d / "fus.json"), "--scores", str(d / "s1.lst"), "--scores",
            str(d / "s2.lst"), "--ndx", str(d / "trials.ndx"), "--fill-missing", "0"]  # fmt: skip
    main([*argv, "--out", str(d / "out.txt"), "-q"])
    out = _lines(d / "out.txt")
    assert [line.split()[:2] for line in out] == ndx
    assert out[-1] == "nobody utt01 0.0"
    assert sorted(out) == sorted(_grid(d, argv, d / "grid.txt"))


def test_errors_name_their_line_and_kind(lists, capsys):
    d = lists
    main(["calibrate", "--key", str(d / "key.lst"), "--scores", str(d / "s1.lst"),
          "--model-out", str(d / "cal.json"), "--allow-missing", "-q"])  # fmt: skip
    lines = _lines(d / "s1.lst")
    _write(d / "twice.lst", [*lines, lines[4]])
    with pytest.raises(ParseError, match=rf"twice.lst:{len(lines) + 1}:.*given twice.*line 5"):
        main(["apply", "--model", str(d / "cal.json"), "--scores", str(d / "twice.lst"),
              "--out", str(d / "out.txt"), "-q", "--debug"])  # fmt: skip
    code = main(["apply", "--model", str(d / "cal.json"), "--scores", str(d / "s1.lst"),
                 "--ndx", str(d / "s1.lst"), "--out", str(d / "out.txt"), "-q"])  # fmt: skip
    assert code != 0 and "holds scores, not a trial list" in capsys.readouterr().err
    assert not (d / "out.txt").exists()


def test_large_files_go_through_the_grid_and_say_so(lists, monkeypatch, capsys):
    d = lists
    main(["calibrate", "--key", str(d / "key.lst"), "--scores", str(d / "s1.lst"),
          "--model-out", str(d / "cal.json"), "--allow-missing", "-q"])  # fmt: skip
    monkeypatch.setattr(in_order, "LIST_MAX_BYTES", 100)
    argv = ["apply", "--model", str(d / "cal.json"), "--scores", str(d / "s1.lst")]
    main([*argv, "--out", str(d / "out.txt")])
    assert "written model by model" in capsys.readouterr().err
    assert _lines(d / "out.txt") == _grid(d, argv, d / "grid.txt")  # the grid's order


def test_a_text_output_that_cannot_keep_the_order_says_why(lists, capsys):
    d = lists
    main(["calibrate", "--key", str(d / "key.lst"), "--scores", str(d / "s1.lst"),
          "--model-out", str(d / "cal.json"), "--allow-missing", "-q"])  # fmt: skip
    ndx = [line.split()[:2] for line in _lines(d / "s1.lst")][:5]
    _write(d / "trials.ndx", [" ".join(t) for t in ndx])
    main(["convert", str(d / "trials.ndx"), str(d / "ndx.zarr"), "-q"])
    capsys.readouterr()
    main(["apply", "--model", str(d / "cal.json"), "--scores", str(d / "s1.lst"), "--ndx",
          str(d / "ndx.zarr"), "--out", str(d / "out.txt")])  # fmt: skip
    err = capsys.readouterr().err
    assert "lines written model by model, not in the order of the input lines" in err
    assert len(_lines(d / "out.txt")) == 5


def test_fill_messages_count_trials_and_refuse_a_non_finite_value(lists, capsys):
    d = lists
    main(["calibrate", "--key", str(d / "key.lst"), "--scores", str(d / "s1.lst"),
          "--model-out", str(d / "cal.json"), "--allow-missing", "-q"])  # fmt: skip
    first = _lines(d / "s1.lst")[0].split()[:2]
    _write(d / "trials.ndx", [" ".join(first), "nobody utt00", "spk0-enr nothing"])
    argv = ["apply", "--model", str(d / "cal.json"), "--scores", str(d / "s1.lst"), "--ndx",
            str(d / "trials.ndx"), "--fill-missing"]  # fmt: skip
    for out in ("out.txt", "out.zarr"):  # the lists, then the grid
        capsys.readouterr()
        assert main([*argv, "0", "--out", str(d / out)]) == 0
        assert "2 of the 3 --ndx trials have no score: filled with 0" in capsys.readouterr().err
        assert main([*argv, "nan", "--out", str(d / out)]) != 0
        assert "the fill value must be a finite number, got nan" in capsys.readouterr().err
    _write(d / "none.ndx", ["nobody utt00"])
    assert main(["apply", "--model", str(d / "cal.json"), "--scores", str(d / "s1.lst"),
                 "--ndx", str(d / "none.ndx"), "--out", str(d / "none.txt")]) != 0  # fmt: skip
    err = capsys.readouterr().err
    assert "no trial to write (no trial of the list has a score" in err
    assert not (d / "none.txt").exists()
