"""The compiled (numba) ECE sums against the numpy path, bit for bit (pooled and per group), and
against brute-force float sums; an evaluation reports the same bits either way; skipped where
numba is not installed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.passes import exact_sum, fast_ece, grouped_cross_entropy, softplus

pytest.importorskip("numba")

SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3e38, -3e38, 1.0, -1.0,
           131060.5, -131060.5, 131072.0, 2e5, -2e5, 40.0, -40.0, 745.5, -745.5, 1e300]  # fmt: skip


@st.composite
def chunks(draw):
    """A chunk of codes, scores, masks and groups, and an ECE grid: few distinct scores or
    many, signed zeros, subnormals, extremes, non-finite scores, non-trials, unscored cells,
    and grid points whose terms reach ``2**17`` (the numpy path's exact branch)."""
    rows, cols = draw(st.integers(1, 7)), draw(st.integers(1, 500))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    p_zero = draw(st.sampled_from([0.0, 0.3]))
    cls = rng.choice(
        np.array([-1, 0, 1], np.int8), size=(rows, cols), p=[0.6 - p_zero, p_zero, 0.4]
    )
    s = rng.normal(size=(rows, cols)) * draw(st.sampled_from([1.0, 1e3]))
    if draw(st.booleans()):  # ties
        s = np.round(s)
    if draw(st.booleans()):
        s = rng.choice(np.array(SPECIAL), size=(rows, cols))
    elif draw(st.booleans()):
        s.flat[rng.integers(0, s.size, size=3)] = rng.choice(np.array(SPECIAL), size=3)
    with np.errstate(over="ignore"):  # 1e300 as float32 is inf
        s = s.astype(dtype)
    m = rng.random((rows, cols)) > draw(st.sampled_from([0.0, 0.1]))
    n_groups = draw(st.integers(1, 5))
    groups = rng.integers(0, n_groups, size=(rows, cols)).astype(np.int16)
    plo = np.array(draw(st.lists(st.sampled_from([-10.0, -2.5, 0.0, 0.25, 3.0, 10.0, 131070.0,
                                                  -131080.0, 1e6]),
                                 min_size=1, max_size=5)))  # fmt: skip
    block = draw(st.sampled_from([1, 7, 64, 4096]))
    return cls, s, m, groups, n_groups, plo, block


def _pooled(cls, s, m, plo, block, compiled):
    rows, cols = np.arange(cls.shape[0]), np.arange(cls.shape[1])
    return softplus.cross_entropy_kernel(rows, cols, cls, s, m, system=0, plo=plo, block=block,
                                        slice_size=4 * block, compiled=compiled)  # fmt: skip


def _grouped(cls, s, m, groups, n_groups, plo, block, compiled):
    rows, cols = np.arange(cls.shape[0]), np.arange(cls.shape[1])
    return grouped_cross_entropy.grouped_cross_entropy_kernel(
        rows, cols, cls, groups, s, m, system=0, plo=plo, n_groups=n_groups, block=block,
        slice_size=4 * block, compiled=compiled,
    )  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(chunks())
def test_compiled_ece_sums_equal_the_numpy_path_bit_for_bit(problem):
    cls, s, m, groups, n_groups, plo, block = problem
    with np.errstate(all="ignore"):
        pooled = _pooled(cls, s, m, plo, block, True)
        grouped = _grouped(cls, s, m, groups, n_groups, plo, block, True)
        numpy_pooled = _pooled(cls, s, m, plo, block, False)
        numpy_grouped = _grouped(cls, s, m, groups, n_groups, plo, block, False)
    np.testing.assert_array_equal(pooled.view(np.int64), numpy_pooled.view(np.int64))
    np.testing.assert_array_equal(grouped.view(np.int64), numpy_grouped.view(np.int64))
    # brute force: float sums of softplus(-c (s + a)), a non-finite score counted as 0.0
    x = np.where(np.isfinite(s), s, 0).astype(np.float64)
    trial = (cls != 0) & m
    sums = pooled.reshape(len(plo), 2, exact_sum.LIMBS)  # per a: targets, non-targets
    per_group = grouped.reshape(len(plo), n_groups, 2, exact_sum.LIMBS)
    for j, a in enumerate(plo):
        for t, code in enumerate((1, -1)):
            for g in (None, *range(n_groups)):
                sel = trial & (cls == code) & (True if g is None else groups == g)
                limbs = sums[j, t] if g is None else per_group[j, g, t]
                got = sum(int(v) << (32 * k) for k, v in enumerate(limbs.tolist())) / 2**57
                want = math.fsum(np.logaddexp(0.0, -code * (x[sel] + a)).tolist())
                tol = sel.sum() * 2.0**-56 + 1e-300
                assert got == pytest.approx(want, rel=1e-13, abs=tol)


def test_disabling_numba_gives_the_numpy_path(monkeypatch):
    monkeypatch.setenv(fast_ece.DISABLE_ENV, "1")
    assert fast_ece.loops() is None
    monkeypatch.delenv(fast_ece.DISABLE_ENV)
    assert fast_ece.loops() is not None


def test_fits_bounds_every_term_below_the_exact_branch():
    assert fast_ece.fits(131000.0, 70.0) and not fast_ece.fits(131000.0, 71.0)
    z = 131000.0 + 70.0  # the largest |s + a| that fits, and its softplus
    assert np.logaddexp(0.0, z) < exact_sum.BIG


@pytest.mark.parametrize("by", [False, True])
def test_an_evaluation_with_compiled_ece_sums_reports_the_same_bits(monkeypatch, by):
    import json

    import dask

    from bosaris_dask import engine, metrics, report
    from bosaris_dask.conditions import condition_table
    from bosaris_dask.trials import make_key, make_scores

    rng = np.random.default_rng(3)
    mask = rng.choice(np.array([-1, 0, 1], np.int8), size=(30, 70), p=[0.7, 0.1, 0.2])
    a = rng.normal(size=mask.shape) * 2 + mask * 2
    b = (np.round((rng.normal(size=mask.shape) + mask) * 8) / 8).astype(np.float32)  # ties
    table = condition_table("model", list(range(30)), {"g": np.arange(30) % 3})
    options = dict(conditions=[table], by=["model.g"]) if by else {}

    def evaluate() -> str:
        key = make_key(range(30), range(70), mask, chunks=(7, 30))
        scores = [make_scores(range(30), range(70), x, chunks=(7, 30)) for x in (a, b)]
        with dask.config.set({"scheduler": "threads"}):
            ds = metrics.evaluate(scores, key, names=["a", "b"], ece_plo=[-4.0, 0.0, 2.5],
                                  **options)  # fmt: skip
        return json.dumps(report.to_json_dict(ds))

    calls = []
    for name in ("two_sums", "run_sums"):
        real = getattr(fast_ece, name)
        monkeypatch.setattr(fast_ece, name, lambda *x, f=real: calls.append(1) or f(*x))
    numpy_path = evaluate()
    assert not calls  # small evaluations do not load numba
    monkeypatch.setattr(engine, "COMPILED_ECE_TERMS", 0)
    assert evaluate() == numpy_path
    assert calls
