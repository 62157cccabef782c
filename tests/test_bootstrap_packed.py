"""The two-way bootstrap of sparse text lists read packed (:mod:`bosaris_dask.bootstrap.cells`,
:mod:`bosaris_dask.bootstrap.cell_blocks`): every trial's groups from its own ids, and the same
resamples, histograms and intervals, bit for bit, as through the ids' grid."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask import metrics
from bosaris_dask.bootstrap import Binning, cell_blocks, histograms
from bosaris_dask.bootstrap import blocks as chunk_blocks
from bosaris_dask.bootstrap.cells import TrialResample
from bosaris_dask.bootstrap.evaluation import add_intervals
from bosaris_dask.cli import main
from bosaris_dask.conditions.cells import trial_conditions
from bosaris_dask.io.text import packed
from bosaris_dask.io.text.packed import TrialList, on_grid, pack

PRIORS = [0.5, 0.05]
SPECS = ["model.spk", "segment.spk"]


def _lists(d, seed=0, n_utt=90, n_spk=9, n=500):
    """A VoxCeleb-like sparse key and two score files (their trials in other orders), tables
    of each utterance's speaker (a few ids the key lacks too) and two more columns."""
    rng = np.random.default_rng(seed)
    spk = rng.integers(0, n_spk, n_utt)
    spk[:n_spk] = np.arange(n_spk)
    enrol, test = rng.integers(0, n_utt // 2, n), rng.integers(0, n_utt, n)
    pairs = list(dict.fromkeys(zip(enrol.tolist(), test.tolist(), strict=True)))
    labels = np.array([spk[a] == spk[b] or rng.random() < 0.15 for a, b in pairs])
    labels[:2] = True, False
    raw = [np.round(rng.normal(size=len(pairs)) * 3 + 4 * labels) / 2 for _ in (0, 1)]  # ties
    word = {True: "target", False: "nontarget"}
    key = [f"u{a} u{b} {word[bool(t)]}\n" for (a, b), t in zip(pairs, labels, strict=True)]
    (d / "trials").write_text("".join(key))
    for k, r in enumerate(raw):
        lines = [f"u{a} u{b} {float(x)!r}\n" for (a, b), x in zip(pairs, r, strict=True)]
        (d / f"s{k}").write_text("".join(lines[i] for i in rng.permutation(len(lines))))
    ids = [f"u{i}" for i in range(n_utt + 3)]
    spk = np.r_[spk, [0, 1, 2]]
    (d / "m.tsv").write_text("model\tspk\tg\n" + "".join(
        f"{u}\tp{spk[i]}\t{i % 2}\n" for i, u in enumerate(ids)))  # fmt: skip
    (d / "s.tsv").write_text("segment\tspk\tlang\n" + "".join(
        f"{u}\tp{spk[i]}\t{'abc'[i % 3]}\n" for i, u in enumerate(ids)))  # fmt: skip
    return [d / "m.tsv", d / "s.tsv"]


def _both(d, width, chunks):
    """The lists through the ids' grid, and packed ``width`` to a row in dask ``chunks``, each
    as (key, systems, listed trials, key list)."""
    from bosaris_dask import io

    key_list = TrialList.read(d / "trials", "key")
    lists = [TrialList.read(d / f"s{k}", "scores") for k in (0, 1)]
    grid_key = io.read(d / "trials", "key")
    grid = [on_grid(x, grid_key) for x in lists]
    key, systems = pack(key_list, lists, width=width)
    key, *systems = (x.chunk({"model": chunks[0], "segment": chunks[1]}) for x in (key, *systems))
    return (grid_key, grid), (key, systems, key_list.listed(width), key_list)


def _recipe(trials, tables, specs=SPECS):
    return TrialResample(tuple(specs), tuple(map(str, tables)), trials)


def _intervals(ds):
    """Every interval, comparison and binned value of a result, and its bootstrap attrs."""
    names = [n for n in ds.data_vars if n.endswith(("_ci", "_binned", "_p_better", "_resolution"))
             or "compare_" in n or n.startswith("replicate_")]  # fmt: skip
    attrs = {k: ds.attrs[k] for k in ("bootstrap", "bootstrap_seed", "resample", "bootstrap_bins",
                                      "bootstrap_groups", "bootstrap_degenerate")}  # fmt: skip
    return {n: ds[n].values for n in names}, attrs


def _assert_same(got, want):
    (gv, ga), (wv, wa) = _intervals(got), _intervals(want)
    assert ga == wa and sorted(gv) == sorted(wv) and len(gv) > 5
    for name, values in wv.items():  # bit for bit (NaN where the grid has NaN)
        np.testing.assert_array_equal(gv[name].view(np.int64), values.view(np.int64), err_msg=name)


@pytest.mark.parametrize(("width", "chunks", "method"), [
    (4096, (1, -1), "multinomial"), (37, (3, 16), "multinomial"), (23, (2, -1), "poisson"),
])  # fmt: skip
def test_intervals_and_comparisons_are_the_grids_bit_for_bit(tmp_path, width, chunks, method):
    tables = _lists(tmp_path, seed=width)
    (grid_key, grid), (key, systems, trials, key_list) = _both(tmp_path, width, chunks)
    kw = {"priors": PRIORS, "bootstrap": 40, "seed": 7, "compare": True, "split_every": 2,
          "bootstrap_method": method}  # fmt: skip
    want = metrics.evaluate(grid, grid_key, conditions=tables, resample=SPECS, **kw)
    got = metrics.evaluate(systems, key, conditions=tables,
                           resample=[_recipe(trials, tables)], **kw)  # fmt: skip
    _assert_same(got, want)
    assert want.attrs["bootstrap_groups"] == [9, 9] and "compare_eer_ci" in want


@pytest.mark.parametrize("side", [["model.spk"], ["segment.spk"]])
def test_every_resample_is_the_grids_one_side_or_two(tmp_path, side):
    tables = _lists(tmp_path, seed=3)
    (grid_key, grid), (key, systems, trials, key_list) = _both(tmp_path, 29, (2, 13))
    out = []
    for k, s, resample in ((grid_key, grid, side),
                           (key, systems, [_recipe(trials, tables, side)])):  # fmt: skip
        ds = metrics.evaluate(s, k, priors=PRIORS)
        out.append(add_intervals(ds, s, k, conditions=tables, resample=resample, bootstrap=30,
                                 seed=1, split_every=2, keep_replicates=True))  # fmt: skip
    _assert_same(out[1], out[0])
    assert out[1].replicate_eer.shape == (2, 31)


def test_per_condition_intervals_and_comparisons_are_the_grids(tmp_path):
    tables = _lists(tmp_path, seed=5, n=700)
    (grid_key, grid), (key, systems, trials, key_list) = _both(tmp_path, 41, (2, 20))
    by = ["model.g", "same.spk", "segment.lang"]
    from bosaris_dask.conditions import read_condition_table

    cond = trial_conditions(trials, [read_condition_table(t) for t in tables], by)
    kw = {"priors": PRIORS, "bootstrap": 30, "seed": 2, "compare": True, "by": by,
          "split_every": 2}  # fmt: skip
    want = metrics.evaluate(grid, grid_key, conditions=tables, resample=SPECS, **kw)
    got = metrics.evaluate(systems, key, conditions=[cond],
                           resample=[_recipe(trials, tables)], **kw)  # fmt: skip
    _assert_same(got, want)
    assert want.sizes["condition"] == 12 and "condition_compare_eer_ci" in want


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 300), g=st.integers(1, 7),
       n_cond=st.integers(0, 3), small=st.booleans(), per_group=st.booleans())  # fmt: skip
def test_the_cell_kernel_is_the_grid_kernel_on_the_same_trials(seed, n, g, n_cond, small,
                                                               per_group):  # fmt: skip
    """One chunk's histograms from each trial's own groups (trials of a random grid laid out
    in a row, in random order) against the grid kernel's: numba and numpy paths, one block or
    many, products per model group or batched."""
    from bosaris_dask.passes import jit

    rng = np.random.default_rng(seed)
    rows, cols = int(rng.integers(1, 20)), int(rng.integers(1, 20))
    classes = rng.choice(np.array([-1, 0, 1], np.int8), (rows, cols), p=[0.6, 0.1, 0.3])
    score = np.round(rng.normal(size=(rows, cols)) * 3, 1)
    score[rng.random((rows, cols)) < 0.1] = -0.0
    mask = rng.random((rows, cols)) < 0.9
    mcode, scode = rng.integers(0, g, rows), rng.integers(0, g + 1, cols)
    m = rng.integers(0, 4, (8, int(mcode.max()) + 1))
    s = rng.integers(0, 4, (8, int(scode.max()) + 1))
    cond = rng.integers(0, max(1, n_cond), (rows, cols)).astype(np.int8)
    binning = Binning.from_edges(np.unique(rng.choice(score.ravel(), 5)), np.float64)
    kw = {"system": 0, "binning": binning, "n_conditions": n_cond, "pin_blas": False}
    extra = [cond] if n_cond else []
    # the grid's cells in a random order, ``n`` of them padded to a packed row
    order = rng.permutation(rows * cols)
    width = max(1, n)
    length = -(-len(order) // width) * width

    def row(a, fill=0):  # noqa: E306
        out = np.full(length, fill, dtype=a.dtype)
        out[: len(order)] = a.ravel()[order]
        return out.reshape(-1, width)

    grid_cells = (
        np.repeat(mcode, cols).reshape(rows, cols),
        np.tile(scode, rows).reshape(rows, cols),
    )
    cell_args = [row(classes), row(score), row(mask), *map(row, extra), *map(row, grid_cells)]
    saved = chunk_blocks._TRIALS, histograms._MIN_RUN, chunk_blocks.BLOCK_BYTES
    chunk_blocks._TRIALS = 7 if small else saved[0]
    chunk_blocks.BLOCK_BYTES = 3 * (binning.n_bins + histograms.LIMBS) * 8 if small else saved[2]
    histograms._MIN_RUN = 1 if per_group else 10**9
    try:
        want = histograms.chunk_histograms(m, s, mcode, scode, classes, score, mask, *extra, **kw)
        got = [cell_blocks.cell_chunk_histograms(m, s, *cell_args, **kw)]
        os.environ[jit.DISABLE_ENV] = "1"
        got.append(cell_blocks.cell_chunk_histograms(m, s, *cell_args, **kw))
    finally:
        os.environ.pop(jit.DISABLE_ENV, None)
        chunk_blocks._TRIALS, histograms._MIN_RUN, chunk_blocks.BLOCK_BYTES = saved
    for out in got:  # counts and Cllr limbs: the same integers (the guard is a bound)
        np.testing.assert_array_equal(out[:-1], want[:-1])


def _cli(d, name, *extra, quiet=True):
    out = d / f"{name}.json"
    argv = ["evaluate", "--key", str(d / "trials"), "--scores", str(d / "s0"), "--scores",
            str(d / "s1"), "--prior", "0.5", "--prior", "0.01", "--conditions", str(d / "m.tsv"),
            "--conditions", str(d / "s.tsv"), "--bootstrap", "30", "--resample", "model.spk",
            "--resample", "segment.spk", "--seed", "4", "--compare", "--json", str(out),
            *(["-q"] if quiet else []), *extra]  # fmt: skip
    assert main(argv) == 0
    doc = json.loads(out.read_text())
    doc.pop("passes")
    return doc


@pytest.mark.parametrize("by", [[], ["--by", "model.g", "--by", "same.spk"]])
def test_cli_packs_with_the_bootstrap_and_reports_the_grids_intervals(tmp_path, monkeypatch,
                                                                      capsys, by):  # fmt: skip
    _lists(tmp_path, seed=11, n_utt=150, n=900)
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 1 << 62)
    grid = _cli(tmp_path, "grid", *by)
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 0)
    monkeypatch.setattr(packed, "SPARSE_CELLS_PER_TRIAL", 0)
    monkeypatch.setattr(packed, "WIDTH", 64)  # several rows
    got = _cli(tmp_path, "packed", *by, quiet=False)
    assert "read as packed trial lists" in capsys.readouterr().err
    assert got == grid  # every interval and comparison (per condition too), bit for bit
    assert "eer_ci" in got["systems"][0] and got["comparisons"]


@pytest.mark.parametrize(("extra", "message"), [
    (["--resample", "model.lang"], "--resample model.lang: no model column 'lang' in the "
     "condition tables (model columns: g, spk; 'lang' is a segment column)"),
    (["--resample", "model.spk", "--resample", "model.g"], "(--resample): one spec per side"),
    (["--resample", "segment.spk", "--missing"], "s.tsv: 1 segment id of the key is not in "
     "the table, e.g. 'u5'"),
    (["--resample", "model.spk", "--missing", "--by", "segment.lang"], "s.tsv: 1 segment id of"),
    (["--resample", "model.spk", "--ci", "1.5"], "ci (--ci) must be"),
    ([], "bootstrap (--bootstrap) needs resample (--resample)"),
    # a bad --by table and a bad option: the option first, both ways (packed lists read the
    # tables while packing, the grid after)
    (["--missing", "--by", "segment.lang"], "bootstrap (--bootstrap) needs resample (--resample)"),
    (["--missing", "--by", "segment.lang", "--resample", "model.spk", "--ci", "1.5"],
     "ci (--ci) must be"),
])  # fmt: skip
def test_errors_are_the_grids_one_line_errors(tmp_path, monkeypatch, capsys, extra, message):
    _lists(tmp_path, seed=2)
    if "--missing" in extra:
        extra = [x for x in extra if x != "--missing"]
        lines = (tmp_path / "s.tsv").read_text().splitlines(keepends=True)
        (tmp_path / "s.tsv").write_text("".join(x for x in lines if not x.startswith("u5\t")))
    argv = ["evaluate", "--key", str(tmp_path / "trials"), "--scores", str(tmp_path / "s0"),
            "--conditions", str(tmp_path / "m.tsv"), "--conditions", str(tmp_path / "s.tsv"),
            "--bootstrap", "20", "-q", *extra]  # fmt: skip
    said = []
    for cells in (1 << 62, 0):  # the grid, then packed
        monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", cells)
        monkeypatch.setattr(packed, "SPARSE_CELLS_PER_TRIAL", 0)
        assert main(argv) == 1
        said.append(capsys.readouterr().err.strip().splitlines())
    assert said[0] == said[1]
    assert len(said[0]) == 1 and said[0][0].startswith("bosaris-dask: error: ")
    assert message in said[0][0]
