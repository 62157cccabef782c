"""Quality fusion trained on sparse text lists packed (:mod:`bosaris_dask.io.text.packed`,
:class:`bosaris_dask.objectives.TrialQuality`): each packed trial gets its own model's and
segment's quality vectors, and the fit is the grid's fit (the same counts, warnings and
errors; the parameters to float rounding, the sums running over other chunks in another
order)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bosaris_dask import io
from bosaris_dask.cli import main
from bosaris_dask.errors import TrialError
from bosaris_dask.fusion import QualityBackoffWarning, QualityFuser
from bosaris_dask.io.text import packed
from bosaris_dask.io.text.packed import TrialList, pack
from bosaris_dask.objectives import block_sums, fusion_data, trial_quality
from bosaris_dask.trials import make_quality, quality_table
from bosaris_dask.trials.listed import ListedTrials

#: How close a packed fit is to the grid's: relative to the largest parameter (measured
#: here: at most ~1e-15; the fits run the same iterations on sums that differ in the last
#: ulps).
CLOSE = 1e-12


def _lists(tmp_path, n=400, seed=0, n_measures=2):
    """A sparse list (ids of their own, some shared), two systems' score files in other line
    orders, and quality tables with a few ids absent and a NaN row (trials without quality)."""
    rng = np.random.default_rng(seed)
    enrol, test = rng.integers(0, n // 3, n), rng.integers(0, n, n)
    pairs = list(dict.fromkeys(zip(enrol.tolist(), test.tolist(), strict=True)))
    labels = rng.random(len(pairs)) < 0.4
    word = {True: "target", False: "nontarget"}
    (tmp_path / "trials").write_text("".join(
        f"e{a} t{b} {word[bool(t)]}\n" for (a, b), t in zip(pairs, labels, strict=True)
    ))  # fmt: skip
    for k in (1, 2):
        s = rng.normal(size=len(pairs)) + (1.0 + k) * labels
        order = rng.permutation(len(pairs))
        (tmp_path / f"sys{k}").write_text("".join(
            f"e{pairs[i][0]} t{pairs[i][1]} {float(s[i])!r}\n" for i in order
        ))  # fmt: skip
    for side, prefix, count in (("mq", "e", n // 3), ("sq", "t", n)):
        ids = [i for i in range(count) if i % 17 != 3]  # a few ids absent
        values = rng.normal(size=(len(ids), n_measures))
        values[1] = np.nan  # and one NaN row
        rows = "".join(f"{prefix}{i} " + " ".join(repr(float(v)) for v in row) + "\n"
                       for i, row in zip(ids, values, strict=True))  # fmt: skip
        (tmp_path / side).write_text(f"{n_measures}\n{rows}")


def _quality(tmp_path):
    return make_quality(io.read_quality(tmp_path / "mq"), io.read_quality(tmp_path / "sq"))


def _packed_inputs(tmp_path, quality, width=packed.WIDTH):
    key = TrialList.read(tmp_path / "trials", "key")
    lists = [TrialList.read(tmp_path / f"sys{k}", "scores") for k in (1, 2)]
    pkey, systems = pack(key, lists, width=width)
    return pkey, systems, trial_quality(quality, key.listed(width))


def _grid_inputs(tmp_path):
    key = io.read(tmp_path / "trials", "key")
    return key, [io.read(tmp_path / f"sys{k}", "scores") for k in (1, 2)]


def _assert_same_model(got: QualityFuser, want: QualityFuser) -> None:
    scale = max(np.abs(want.weights_).max(), abs(want.offset_), np.abs(want.quality_matrix_).max())
    for name in ("weights_", "offset_", "quality_matrix_", "objective_"):
        np.testing.assert_allclose(getattr(got, name), getattr(want, name), rtol=0,
                                   atol=CLOSE * scale, err_msg=name)  # fmt: skip
    np.testing.assert_allclose(got.linear_.weights_, want.linear_.weights_, atol=CLOSE * scale)
    assert got.counts_ == want.counts_
    assert got.fit_warnings_ == want.fit_warnings_
    assert (got.iterations_, got.passes_) == (want.iterations_, want.passes_)


@pytest.mark.parametrize(("seed", "width", "chunks"), [
    (0, packed.WIDTH, None),  # one row
    (1, 64, None),  # rows of 64 trials
    (2, 50, (3, 16)),  # chunks that split rows and columns
    (3, 37, (2, 37)),
])  # fmt: skip
def test_a_packed_quality_fit_is_the_grid_fit(tmp_path, seed, width, chunks):
    _lists(tmp_path, seed=seed)
    quality = _quality(tmp_path)
    key, systems = _grid_inputs(tmp_path)
    want = QualityFuser(0.3).fit(systems, key, quality)
    pkey, psystems, cells = _packed_inputs(tmp_path, quality, width)
    if chunks is not None:
        psystems = [s.chunk(dict(zip(("model", "segment"), chunks, strict=True)))
                    for s in psystems]  # fmt: skip
        assert psystems[0].score.data.numblocks[0] > 1
    got = QualityFuser(0.3).fit(psystems, pkey, cells)
    assert got.counts_["n_no_quality"] > 0  # some trials back off: they are the same ones
    _assert_same_model(got, want)


def test_qtrans_and_l2_on_packed_trials(tmp_path):
    _lists(tmp_path, seed=4, n_measures=3)
    quality = _quality(tmp_path)
    qtrans = np.array([[1.0, 0.5, 0.0], [0.0, 1.0, -1.0]])
    key, systems = _grid_inputs(tmp_path)
    want = QualityFuser(0.5, qtrans=qtrans, l2=1e-3).fit(systems, key, quality)
    pkey, psystems, cells = _packed_inputs(tmp_path, quality, 64)
    got = QualityFuser(0.5, qtrans=qtrans, l2=1e-3).fit(psystems, pkey, cells)
    assert got.quality_matrix_.shape == (3, 3)
    _assert_same_model(got, want)


def test_each_cell_gets_its_trials_vectors_bit_for_bit():
    # a full grid, laid out as its own cells: the kernel's sums are the grid's, bit for bit
    rng = np.random.default_rng(5)
    scores = [rng.normal(size=(7, 9)) for _ in range(2)]
    masks = [np.ones((7, 9), bool)] * 2
    cls = np.where(rng.random((7, 9)) < 0.4, 1, -1).astype(np.int8)
    qm, qs = rng.normal(size=(7, 3)), rng.normal(size=(9, 3))
    theta = rng.normal(size=3 + 5)
    kw = dict(n_systems=2, quality=True, mode="fgH", theta=theta, plo=0.3)
    grid = block_sums(*scores, *masks, cls, qm, qs, **kw)
    cells = block_sums(*scores, *masks, cls, np.broadcast_to(qm[:, None], (7, 9, 3)),
                       np.broadcast_to(qs[None, :], (7, 9, 3)), **kw)  # fmt: skip
    np.testing.assert_array_equal(cells, grid)
    # (W is symmetric, so the sides could swap; another trial's segment vector may not)
    shifted = block_sums(
        *scores,
        *masks,
        cls,
        np.broadcast_to(qm[:, None], (7, 9, 3)),
        np.broadcast_to(np.roll(qs, 1, axis=0)[None, :], (7, 9, 3)),
        **kw,
    )
    assert not np.allclose(shifted, grid)


def test_quality_laid_out_for_other_trials_is_refused(tmp_path):
    _lists(tmp_path)
    quality = _quality(tmp_path)
    pkey, psystems, cells = _packed_inputs(tmp_path, quality, 64)
    five = ListedTrials(cells.models, cells.segments, np.zeros(5, int), np.zeros(5, int),
                        lambda v: v[None])  # fmt: skip
    other = trial_quality(quality, five)
    with pytest.raises(TrialError, match="laid out 1 x 5, the trials .* x 64"):
        fusion_data(psystems, pkey, other)


def _fuse(tmp_path, name, *extra):
    out = tmp_path / f"{name}.json"
    argv = ["fuse", "--key", str(tmp_path / "trials"), "--scores", str(tmp_path / "sys1"),
            "--scores", str(tmp_path / "sys2"), "--model-out", str(out), *extra]  # fmt: skip
    code = main(argv)
    return code, json.loads(out.read_text()) if code == 0 else None


def _grid_then_packed(tmp_path, monkeypatch, capsys, *extra):
    """``fuse`` through the ids' grid, then packed: return codes, models and stderr."""
    runs = []
    for cells in (1 << 62, 0):
        monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", cells)
        monkeypatch.setattr(packed, "SPARSE_CELLS_PER_TRIAL", 0)
        code, model = _fuse(tmp_path, "packed" if cells == 0 else "grid", *extra)
        runs.append((code, model, capsys.readouterr().err))
    return runs


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if "warning:" in line or "error:" in line]


def test_fuse_with_quality_tables_trains_packed(tmp_path, monkeypatch, capsys):
    _lists(tmp_path, seed=6)
    options = ["--model-quality", str(tmp_path / "mq"), "--segment-quality",
               str(tmp_path / "sq"), "--train-prior", "0.2"]  # fmt: skip
    (gc, grid, gerr), (pc, got, perr) = _grid_then_packed(tmp_path, monkeypatch, capsys,
                                                          *options)  # fmt: skip
    assert gc == pc == 0
    assert "read as packed trial lists" in perr and "read as packed" not in gerr
    assert "trials without quality trained the linear stage only" in perr
    assert _warnings(perr) == _warnings(gerr)
    scale = max(np.abs(grid["weights"]).max(), np.abs(grid["quality_matrix"]).max())
    for name in ("weights", "offset", "objective", "quality_matrix"):
        np.testing.assert_allclose(got[name], grid[name], rtol=0, atol=CLOSE * scale)
        np.testing.assert_allclose(got["linear"].get(name, 0), grid["linear"].get(name, 0),
                                   rtol=0, atol=CLOSE * scale)  # fmt: skip
        for doc in (grid, got, grid["linear"], got["linear"]):
            doc.pop(name, None)
    assert got == grid  # counts (n_no_quality too), passes, measures, warnings


@pytest.mark.parametrize(("tables", "problem"), [
    ("inf", "is not finite"),  # an infinite measure
    ("measures", "W is symmetric"),  # 2 measures on one side, 3 on the other
    ("one side", "both a model-side and a segment-side"),
    ("no segment quality", "no training trial has quality"),  # a FitWarning, not an error
    ("missing score", "no score"),
])  # fmt: skip
def test_quality_errors_and_warnings_are_the_grids(tmp_path, monkeypatch, capsys, tables,
                                                   problem):  # fmt: skip
    _lists(tmp_path, seed=7)
    options = ["--model-quality", str(tmp_path / "mq"), "--segment-quality", str(tmp_path / "sq")]
    if tables == "inf":
        text = (tmp_path / "sq").read_text().splitlines()
        text[3] = text[3].split()[0] + " inf 1.0"
        (tmp_path / "sq").write_text("\n".join(text) + "\n")
    elif tables == "measures":
        (tmp_path / "sq").write_text("3\nt0 1 2 3\n")
    elif tables == "one side":
        options = options[:2]
    elif tables == "missing score":  # a key trial without a score in sys2
        lines = (tmp_path / "sys2").read_text().splitlines()
        (tmp_path / "sys2").write_text("\n".join(lines[1:]) + "\n")
    else:  # no key segment has quality: the quality fusion is the linear fusion
        (tmp_path / "sq").write_text("2\nnot-a-key-id 1 2\n")
    (gc, grid, gerr), (pc, got, perr) = _grid_then_packed(tmp_path, monkeypatch, capsys,
                                                          *options)  # fmt: skip
    if tables != "inf":  # (a table that cannot be read is the first error: nothing is packed)
        assert "read as packed trial lists" in perr
    if tables == "missing score":  # worded by the packing, as without quality: the same facts
        for said in (_warnings(perr), _warnings(gerr)):
            assert len(said) == 1 and all(f in said[0] for f in ("1 key trial has", "sys2", "(e"))
    else:
        assert _warnings(perr) == _warnings(gerr)
    assert problem in "\n".join(_warnings(perr))
    assert gc == pc
    if gc == 0:
        assert got["quality_matrix"] == grid["quality_matrix"] == [[0.0] * 3] * 3
        assert got["n_target"] == grid["n_target"]


def test_the_bootstrap_and_a_dense_list_still_take_the_grid(tmp_path, monkeypatch, capsys):
    _lists(tmp_path, n=120)
    options = ["--model-quality", str(tmp_path / "mq"), "--segment-quality", str(tmp_path / "sq")]
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 1 << 62)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _fuse(tmp_path, "dense", *options)[0] == 0
    assert "read as packed" not in capsys.readouterr().err


def test_an_infinite_measure_of_a_key_id_is_the_grids_error(tmp_path):
    _lists(tmp_path)
    key, systems = _grid_inputs(tmp_path)
    table = io.read_quality(tmp_path / "sq")
    values = table.values.copy()
    values[0, 1] = np.inf  # t0
    sq = quality_table(table.id.values, values)
    quality = make_quality(io.read_quality(tmp_path / "mq"), sq)
    pkey, psystems, cells = _packed_inputs(tmp_path, quality, 64)
    errors = []
    for args in ((systems, key, quality), (psystems, pkey, cells)):
        with pytest.raises(Exception) as caught:
            QualityFuser(0.5).fit(*args)
        errors.append((type(caught.value), str(caught.value)))
    assert errors[0] == errors[1] and "infinite" in errors[0][1]


def test_fuse_apply_after_a_packed_fit_applies_on_the_eval_grid(tmp_path, monkeypatch, capsys):
    # the eval scores go through the grid (a store output): the training trials' quality is
    # given as the ids' Quality object there, as after a grid fit
    _lists(tmp_path, seed=8)
    options = ["--model-quality", str(tmp_path / "mq"), "--segment-quality",
               str(tmp_path / "sq"), "--apply", str(tmp_path / "sys1"), "--apply",
               str(tmp_path / "sys2"), "--out"]  # fmt: skip
    outs = []
    for name, cells in (("grid", 1 << 62), ("packed", 0)):
        monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", cells)
        monkeypatch.setattr(packed, "SPARSE_CELLS_PER_TRIAL", 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", QualityBackoffWarning)  # (as the CLI says it)
            code, _ = _fuse(tmp_path, name, *options, str(tmp_path / f"{name}.zarr"))
        assert code == 0
        outs.append(io.read(tmp_path / f"{name}.zarr").compute())
        err = capsys.readouterr().err
        assert ("read as packed trial lists" in err) == (name == "packed")
    np.testing.assert_array_equal(outs[0].score_mask.values, outs[1].score_mask.values)
    np.testing.assert_allclose(outs[1].score.values, outs[0].score.values, rtol=0, atol=1e-12)


def test_a_bad_quality_table_is_the_first_error_before_a_missing_score(tmp_path, monkeypatch,
                                                                        capsys):  # fmt: skip
    # the packed lists named the missing score (found while packing) and the grid the table
    _lists(tmp_path, seed=7)
    text = (tmp_path / "sq").read_text().splitlines()
    text[3] = text[3].split()[0] + " inf 1.0"
    (tmp_path / "sq").write_text("\n".join(text) + "\n")
    lines = (tmp_path / "sys2").read_text().splitlines()
    (tmp_path / "sys2").write_text("\n".join(lines[1:]) + "\n")
    options = ["--model-quality", str(tmp_path / "mq"), "--segment-quality", str(tmp_path / "sq")]
    (gc, _, gerr), (pc, _, perr) = _grid_then_packed(tmp_path, monkeypatch, capsys, *options)
    assert gc == pc == 1 and _warnings(perr) == _warnings(gerr)
    assert "is not finite" in _warnings(perr)[0]


@given(
    st.integers(1, 40),
    st.integers(1, 40),
    st.integers(1, 5),
    st.integers(0, 2**32 - 1),
    st.sampled_from([8, 64, 2**19]),
)
def test_quality_terms_are_the_same_bits_on_the_grid_and_in_cells(rows, cols, q, seed, band):
    # the grid's qm @ W @ qs.T and a stacked product per cell differed in the last bit on AVX2
    # OpenBLAS: packed trials and the grid gave different fused scores
    from bosaris_dask.objectives import cells as module

    rng = np.random.default_rng(seed)
    qm, qs = rng.normal(size=(rows, q)), rng.normal(size=(cols, q))
    W = rng.normal(size=(q, q))
    W = W + W.T
    old = module._TERM_BAND_BYTES
    module._TERM_BAND_BYTES = band  # several bands of rows, down to one row each
    try:
        grid = module.quality_terms(qm, W, qs)
    finally:
        module._TERM_BAND_BYTES = old
    r, c = rng.integers(0, rows, size=50), rng.integers(0, cols, size=50)
    cells = module.quality_terms(qm[r][None], W, qs[c][None])[0]
    np.testing.assert_array_equal(cells, grid[r, c])
    reference = np.einsum("ri,ij,cj->rc", qm, W, qs)
    np.testing.assert_allclose(grid, reference, rtol=1e-9, atol=1e-9 * np.abs(reference).max())
