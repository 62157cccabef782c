"""The compiled (numba) selection of a refinement pass against the numpy path: the same trials,
keys and flags in the same order, and against a brute-force selection; skipped where numba is
not installed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.passes import fast_select, kernels, refine_kernels
from bosaris_dask.passes.binmap import BinMap
from bosaris_dask.passes.refine_kernels import RefineSpec

pytest.importorskip("numba")

SPECIAL = [0.0, -0.0, 1e-45, -1e-45, 3e38, -3e38, 1.0, -1.0]


def _keys(x: np.ndarray) -> np.ndarray:
    """Order keys by the definition (sign flips all bits, else the sign bit), -0.0 as +0.0."""
    width = 8 * x.dtype.itemsize
    u = (x + x.dtype.type(0)).view(np.uint32 if width == 32 else np.uint64).astype(object)
    return np.array([v ^ ((1 << width) - 1) if v >> (width - 1) else v | (1 << (width - 1))
                     for v in u.tolist()], dtype=np.uint64)  # fmt: skip


@st.composite
def problems(draw):
    """A chunk (codes, finite trial scores, non-finite scores only in non-trial or unscored
    cells, a mask), a uniform or adaptive bin map and candidates: whole pass-1 bins, or some
    narrower than their bin."""
    n = draw(st.integers(1, 3000))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    cls = rng.choice(np.array([-1, 0, 1], np.int8), size=n, p=[0.5, 0.2, 0.3])
    s = rng.normal(size=n) * draw(st.sampled_from([1.0, 1e3]))
    if draw(st.booleans()):
        s = rng.choice(np.array(SPECIAL), size=n)
    m = rng.random(n) > draw(st.sampled_from([0.0, 0.1]))
    off = (cls == 0) | ~m
    s[off & (rng.random(n) < 0.3)] = rng.choice(np.array([np.inf, -np.inf, np.nan]))
    s = s.astype(dtype)
    bits = 32 if dtype == np.float32 else 64
    finite = s[np.isfinite(s)]
    if draw(st.booleans()):
        bm = BinMap.uniform(bits, draw(st.integers(1, 12)))
    else:
        bm = BinMap.from_sample(_keys(finite), bits, draw(st.integers(6, 12)))
    bins = np.unique(bm.bin_of(_keys(finite))) if finite.size else np.zeros(1, np.intp)
    cands = np.sort(rng.choice(bins, size=draw(st.integers(1, len(bins))), replace=False))
    lo, width = bm.bin_lo_bits(cands)
    width = width.astype(np.int64)
    if draw(st.booleans()):  # some candidates narrower than their bin: its first half
        narrow = (rng.random(len(cands)) < 0.5) & (width > 0)
        width[narrow] -= 1
    spec = RefineSpec(0 if bm.adaptive else bm.shift, bm.top, lo.astype(np.uint64), width,
                      np.zeros(len(cands), np.int64), raw=True,
                      binmap=bm if draw(st.booleans()) or bm.adaptive else None)  # fmt: skip
    block = draw(st.sampled_from([1, 7, 64, 4096]))
    return cls, s, m, spec, block


@settings(max_examples=150, deadline=None)
@given(problems())
def test_compiled_selection_equals_the_numpy_path(problem):
    cls, s, m, spec, block = problem
    ws = kernels.workspace(np.dtype(s.dtype), block, 4 * block)
    with np.errstate(all="ignore"):
        keys, tar = refine_kernels.select_trials(cls, s, m, spec, ws, compiled=True)
        want_keys, want_tar = refine_kernels.select_trials(cls, s, m, spec, ws, compiled=False)
    assert keys.dtype == want_keys.dtype and tar.dtype == want_tar.dtype == bool
    np.testing.assert_array_equal(keys, want_keys)
    np.testing.assert_array_equal(tar, want_tar)
    # brute force: the trials whose key lies in a candidate [lo, lo + 2**bits)
    trial = (cls != 0) & m
    k = _keys(s[trial])
    inside = ((k[:, None] >= spec.cand_lo) & ((k[:, None] - spec.cand_lo)
              >> spec.cand_bits.astype(np.uint64) == 0)).any(axis=1)  # fmt: skip
    np.testing.assert_array_equal(keys.astype(np.uint64), k[inside])
    np.testing.assert_array_equal(tar, cls[trial][inside] == 1)


def test_disabling_numba_gives_the_numpy_path(monkeypatch):
    monkeypatch.setenv(fast_select.DISABLE_ENV, "1")
    assert fast_select.select_loop() is None
