"""The compiled (numba) selection of a grouped refinement pass against the numpy path: every
part gets the same trials, keys and flags in the same order, and against a brute-force
selection; skipped where numba is not installed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.passes import fast_select, kernels
from bosaris_dask.passes.binmap import BinMap
from bosaris_dask.passes.grouped_kernels import Part
from bosaris_dask.passes.grouped_refine_kernels import _select_parts
from bosaris_dask.passes.refine_kernels import RefineSpec
from tests.test_fast_select import SPECIAL, _keys

pytest.importorskip("numba")


def _map(draw, rng, bits: int, finite: np.ndarray) -> BinMap:
    if draw(st.booleans()):
        return BinMap.uniform(bits, draw(st.integers(1, 12)))
    return BinMap.from_sample(_keys(finite), bits, draw(st.integers(6, 12)))


def _spec(draw, rng, bm: BinMap, keys: np.ndarray) -> RefineSpec:
    """Candidates among the bins of ``keys`` (some narrower than their bin)."""
    bins = np.unique(bm.bin_of(keys)) if keys.size else np.zeros(1, np.intp)
    cands = np.sort(rng.choice(bins, size=draw(st.integers(1, len(bins))), replace=False))
    lo, width = bm.bin_lo_bits(cands)
    width = width.astype(np.int64)
    if draw(st.booleans()):
        narrow = (rng.random(len(cands)) < 0.5) & (width > 0)
        width[narrow] -= 1
    return RefineSpec(0 if bm.adaptive else bm.shift, bm.top, lo.astype(np.uint64), width,
                      np.zeros(len(cands), np.int64), raw=True,
                      binmap=bm if draw(st.booleans()) or bm.adaptive else None)  # fmt: skip


@st.composite
def problems(draw):
    """A chunk (codes, finite trial scores, non-finite ones only in non-trial or unscored
    cells, a mask, group codes), pooled parts with candidates in one map and parts of groups
    (a condition's, or its targets with two groups' non-targets) in another."""
    n = draw(st.integers(1, 3000))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    n_groups = draw(st.integers(1, 5))
    cls = rng.choice(np.array([-1, 0, 1], np.int8), size=n, p=[0.5, 0.2, 0.3])
    s = rng.normal(size=n) * draw(st.sampled_from([1.0, 1e3]))
    if draw(st.booleans()):
        s = rng.choice(np.array(SPECIAL), size=n)
    m = rng.random(n) > draw(st.sampled_from([0.0, 0.1]))
    off = (cls == 0) | ~m
    s[off & (rng.random(n) < 0.3)] = rng.choice(np.array([np.inf, -np.inf, np.nan]))
    s = s.astype(dtype)
    groups = rng.integers(0, n_groups, n).astype(draw(st.sampled_from([np.int16, np.int32])))
    bits = 32 if dtype == np.float32 else 64
    finite = s[np.isfinite(s)]
    keys = _keys(finite)
    parts, specs = [], []
    if draw(st.booleans()):  # pooled parts: one map
        pmap = _map(draw, rng, bits, finite)
        for _ in range(draw(st.integers(1, 2))):
            parts.append(Part(0))
            specs.append(_spec(draw, rng, pmap, keys) if draw(st.booleans()) else None)
    gmap = _map(draw, rng, bits, finite)
    for _ in range(draw(st.integers(0 if parts else 1, 4))):
        g = int(rng.integers(n_groups))
        other = int(rng.integers(n_groups))
        parts.append(Part(0, (g,), (g,)) if draw(st.booleans())
                     else Part(0, (g,), tuple(sorted({g, other}))))  # fmt: skip
        specs.append(_spec(draw, rng, gmap, keys) if draw(st.booleans()) else None)
    block = draw(st.sampled_from([1, 7, 64, 4096]))
    return cls, s, m, groups, n_groups, parts, specs, block


@settings(max_examples=150, deadline=None)
@given(problems())
def test_compiled_grouped_selection_equals_the_numpy_path(problem):
    cls, s, m, groups, n_groups, parts, specs, block = problem
    ws = kernels.workspace(np.dtype(s.dtype), block, 4 * block)
    with np.errstate(all="ignore"):
        got = _select_parts(cls, groups, s, m, specs, parts, n_groups, ws, compiled=True)
        want = _select_parts(cls, groups, s, m, specs, parts, n_groups, ws, compiled=False)
    trial = (cls != 0) & m
    for part, spec, mine, theirs in zip(parts, specs, got, want, strict=True):
        if spec is None:
            assert mine is None and theirs is None
            continue
        assert mine[0].dtype == theirs[0].dtype and mine[1].dtype == theirs[1].dtype == bool
        np.testing.assert_array_equal(mine[0], theirs[0])
        np.testing.assert_array_equal(mine[1], theirs[1])
        # brute force: the part's trials whose key lies in a candidate [lo, lo + 2**bits)
        tar, non = part.groups(n_groups)
        own = trial & np.where(cls == 1, tar[groups], non[groups])
        k = _keys(s[own])
        inside = ((k[:, None] >= spec.cand_lo) & ((k[:, None] - spec.cand_lo)
                  >> spec.cand_bits.astype(np.uint64) == 0)).any(axis=1)  # fmt: skip
        assert sorted(
            zip(mine[0].astype(np.uint64).tolist(), mine[1].tolist(), strict=True)
        ) == sorted(zip(k[inside].tolist(), (cls[own][inside] == 1).tolist(), strict=True))


def test_disabling_numba_gives_the_numpy_path(monkeypatch):
    monkeypatch.setenv(fast_select.DISABLE_ENV, "1")
    assert fast_select.grouped_select_loop() is None


@st.composite
def overlap_problems(draw):
    """A first map and candidates of specs in another map, over the keys of random scores."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    s = rng.normal(size=draw(st.integers(1, 500))) * draw(st.sampled_from([1.0, 1e3]))
    finite = s.astype(dtype)
    keys = _keys(finite)
    bits = 32 if dtype == np.float32 else 64
    first = _spec(draw, rng, _map(draw, rng, bits, finite), keys)
    other = _map(draw, rng, bits, finite)
    return first, [_spec(draw, rng, other, keys) for _ in range(draw(st.integers(0, 3)))]


@settings(max_examples=100, deadline=None)
@given(overlap_problems())
def test_overlap_table_marks_exactly_the_bins_meeting_a_candidate(problem):
    first, specs = problem
    got = fast_select.overlap_table(first, specs)
    assert got.shape == (first.nbins,) and got.dtype == bool
    # brute force, in Python integers: bin b's keys [lo, lo + 2**w) meet a candidate's
    bm = first.binmap if first.binmap is not None else BinMap.uniform(
        first.prefix_bits + first.shift, first.prefix_bits)  # fmt: skip
    lo, width = bm.bin_lo_bits(np.arange(first.nbins))
    spans = [(int(a), int(a) + (1 << int(w)) - 1) for s in specs
             for a, w in zip(s.cand_lo, s.cand_bits, strict=True)]  # fmt: skip
    want = [any(int(a) <= hi and a2 <= int(a) + (1 << int(w)) - 1 for a2, hi in spans)
            for a, w in zip(lo, width, strict=True)]  # fmt: skip
    assert got.tolist() == want
