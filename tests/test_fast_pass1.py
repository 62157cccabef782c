"""The compiled (numba) pass 1 against the numpy path, bit for bit (counts and exact Cllr sums),
and against a brute-force histogram and float sums; skipped where numba is not installed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.passes import fast_pass1, kernels
from bosaris_dask.passes.binmap import BinMap

pytest.importorskip("numba")

SPECIAL = [
    0.0,
    -0.0,
    np.inf,
    -np.inf,
    np.nan,
    1e-45,
    -1e-45,
    3e38,
    -3e38,
    1.0,
    -1.0,
    131071.99,
    131072.0,
    -131072.0,
    2e5,
    -2e5,
    40.0,
    -40.0,
    745.5,
    -745.5,
    1e300,
    -1e300,
]


@st.composite
def chunks(draw):
    """A chunk of codes, scores and masks: few distinct scores or many, with signed zeros,
    subnormals, extremes and non-finite scores, non-trials and unscored cells; a uniform or
    adaptive bin map."""
    rows, cols = draw(st.integers(1, 9)), draw(st.integers(1, 700))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    p_zero = draw(st.sampled_from([0.0, 0.3]))
    cls = rng.choice(
        np.array([-1, 0, 1], np.int8), size=(rows, cols), p=[0.6 - p_zero, p_zero, 0.4]
    )
    s = rng.normal(size=(rows, cols)) * draw(st.sampled_from([1.0, 1e3]))
    if draw(st.booleans()):  # terms near 2**-57 (grid ties) or near 2**17 (the exact path)
        s += draw(st.sampled_from([38.0, -38.0, 131072.0, -131072.0]))
    if draw(st.booleans()):
        s = rng.choice(np.array(SPECIAL), size=(rows, cols))
    elif draw(st.booleans()):
        s.flat[rng.integers(0, s.size, size=3)] = rng.choice(np.array(SPECIAL), size=3)
    with np.errstate(over="ignore"):  # 1e300 as float32 is inf
        s = s.astype(dtype)
    m = rng.random((rows, cols)) > draw(st.sampled_from([0.0, 0.1]))
    bits = 32 if dtype == np.float32 else 64
    if draw(st.booleans()):
        bm = BinMap.uniform(bits, draw(st.integers(1, 12)))
    else:
        from bosaris_dask.passes.keys import order_keys

        sample = order_keys(s.reshape(-1)[np.isfinite(s.reshape(-1))])
        bm = BinMap.from_sample(sample, bits, draw(st.integers(6, 12)))
    block = draw(st.sampled_from([1, 7, 64, 4096]))
    return cls, s, m, bm, block


def _system(cls, s, m, bm, block):
    rows, cols = np.arange(cls.shape[0]), np.arange(cls.shape[1])
    shift = 0 if bm.adaptive else bm.shift
    return kernels.system_kernel(rows, cols, cls, s, m, system=0, shift=shift, nbins=bm.nbins,
                                 block=block, slice_size=4 * block,
                                 binmap=bm if bm.adaptive else None)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(chunks())
def test_compiled_counts_equal_the_numpy_path_bit_for_bit(problem):
    cls, s, m, bm, block = problem
    with np.errstate(all="ignore"):
        compiled = _system(cls, s, m, bm, block)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(fast_pass1.DISABLE_ENV, "1")
            numpy_path = _system(cls, s, m, bm, block)
    np.testing.assert_array_equal(compiled.view(np.int64), numpy_path.view(np.int64))
    # brute force: a histogram of the trials' bins, non-finite scores counted as 0.0
    trial = (cls != 0) & m
    x = np.where(np.isfinite(s), s, 0).astype(s.dtype)[trial] + s.dtype.type(0)
    u = x.view(np.uint32 if s.dtype == np.float32 else np.uint64).astype(object)
    width = 8 * s.dtype.itemsize
    keys = np.array([v ^ ((1 << width) - 1) if v >> (width - 1) else v | (1 << (width - 1))
                     for v in u.tolist()], dtype=np.uint64)  # fmt: skip
    bins = bm.bin_of(keys)
    expected = np.zeros((2, bm.nbins), np.int64)
    np.add.at(expected, ((cls[trial] > 0).astype(np.intp), bins), 1)
    np.testing.assert_array_equal(compiled[: 2 * bm.nbins], expected.reshape(-1))
    missing, bad = compiled[-2:]
    assert missing == np.count_nonzero((cls != 0) & ~m)
    assert bad == np.count_nonzero(trial & ~np.isfinite(s))
    # float sums of the Cllr terms, a non-finite score counted as 0.0: within the grid's rounding
    x = np.where(np.isfinite(s), s, 0).astype(np.float64)
    sums = compiled[2 * bm.nbins : 2 * bm.nbins + 72].reshape(2, 36)  # targets, non-targets
    for code, limbs in ((1, sums[0]), (-1, sums[1])):
        sel = trial & (cls == code)
        want = math.fsum(np.logaddexp(0.0, -code * x[sel]).tolist())
        got = sum(int(v) << (32 * k) for k, v in enumerate(limbs.tolist())) / 2**57
        assert got == pytest.approx(want, rel=1e-13, abs=sel.sum() * 2.0**-56 + 1e-300)


def test_disabling_numba_gives_the_numpy_path(monkeypatch):
    monkeypatch.setenv(fast_pass1.DISABLE_ENV, "1")
    assert fast_pass1.block_kernel() is None
    monkeypatch.delenv(fast_pass1.DISABLE_ENV)
    assert fast_pass1.block_kernel() is not None


@pytest.mark.parametrize("adaptive", [0, 2])
def test_an_evaluation_with_compiled_counts_reports_the_same_bits(monkeypatch, adaptive):
    import json

    import dask

    from bosaris_dask import engine, metrics, report
    from bosaris_dask.trials import make_key, make_scores

    rng = np.random.default_rng(3)
    mask = rng.choice(np.array([-1, 0, 1], np.int8), size=(30, 70), p=[0.7, 0.1, 0.2])
    a = rng.normal(size=mask.shape) * 2 + mask * 2
    b = (np.round((rng.normal(size=mask.shape) + mask) * 8) / 8).astype(np.float32)  # ties

    def evaluate() -> str:
        key = make_key(range(30), range(70), mask, chunks=(7, 30))
        scores = [make_scores(range(30), range(70), x, chunks=(7, 30)) for x in (a, b)]
        with dask.config.set({"scheduler": "threads", "bosaris_dask.adaptive-bins": adaptive}):
            ds = metrics.evaluate(scores, key, names=["a", "b"])
        return json.dumps(report.to_json_dict(ds))

    calls = []
    block_into = fast_pass1.block_into
    monkeypatch.setattr(fast_pass1, "block_into", lambda *a: calls.append(1) or block_into(*a))
    numpy_path = evaluate()
    assert not calls  # small evaluations do not load numba
    monkeypatch.setattr(engine, "COMPILED_PASS1_TRIALS", 0)
    assert evaluate() == numpy_path
    assert calls


def test_a_broadcast_mask_gives_the_same_bits():
    """A label-derived key's mask is a broadcast (stride 0): the compiled loops copy each block
    to a contiguous one (numba's loops over strided arrays are slow), with the same results."""
    rng = np.random.default_rng(5)
    cls = rng.choice(np.array([-1, 1], np.int8), size=(40, 300), p=[0.9, 0.1])
    s = (rng.normal(size=cls.shape) * 3).astype(np.float32)
    m = np.broadcast_to(np.ones((1, 1), bool), cls.shape)
    bm = BinMap.from_sample(np.sort(s.view(np.uint32).reshape(-1)), 32, 10)
    compiled = _system(cls, s, m, bm, 4096)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(fast_pass1.DISABLE_ENV, "1")
        numpy_path = _system(cls, s, m, bm, 4096)
    np.testing.assert_array_equal(compiled.view(np.int64), numpy_path.view(np.int64))
    np.testing.assert_array_equal(compiled, _system(cls, s, np.ones(cls.shape, bool), bm, 4096))
