"""Scores from embeddings are the exact dot products of the prepared rows rounded to float32:
checked against rational arithmetic written here (no code shared with the package), on random
rows, on rows built to sit on or next to a float32 tie, and under any strip, block or BLAS
thread count."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.embeddings import kernel
from bosaris_dask.embeddings.rounding import exact_round, round_certified


def _reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Every ``a[i] . b[j]`` summed exactly, then the float32 nearest to it (ties to even)."""
    out = np.empty((len(a), len(b)), dtype=np.float32)
    for i, x in enumerate(a.tolist()):
        for j, y in enumerate(b.tolist()):
            exact = sum((Fraction(p) * Fraction(q) for p, q in zip(x, y, strict=True)), Fraction(0))
            if exact == 0:
                out[i, j] = 0.0
                continue
            guess = np.float32(float(exact))
            grid = [np.nextafter(guess, np.float32(-np.inf)), guess,
                    np.nextafter(guess, np.float32(np.inf))]  # fmt: skip
            dist = [abs(Fraction(float(g)) - exact) for g in grid]
            best = min(dist)
            near = [g for g, d in zip(grid, dist, strict=True) if d == best]
            out[i, j] = (
                near[0]
                if len(near) == 1
                else next(g for g in near if int(np.float32(g).view(np.uint32)) % 2 == 0)
            )
    return out


def _same_bits(x: np.ndarray, y: np.ndarray) -> bool:
    return x.shape == y.shape and bool((x.view(np.uint32) == y.view(np.uint32)).all())


def _unit_rows(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    x = rng.normal(size=(n, d))
    return x / np.sqrt((x * x).sum(axis=1, keepdims=True))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12), st.integers(1, 12), st.integers(1, 64), st.integers(0, 2**32 - 1),
       st.sampled_from([1e-30, 1e-3, 1.0, 1e5]), st.booleans())  # fmt: skip
def test_scores_are_the_exact_products_rounded(m, n, d, seed, scale, unit):
    rng = np.random.default_rng(seed)
    a = _unit_rows(rng, m, d) if unit else rng.normal(size=(m, d)) * scale
    b = _unit_rows(rng, n, d) if unit else rng.normal(size=(n, d)) * scale
    b[: n // 3] = np.round(b[: n // 3] * 4) / 4  # short mantissas: exact cancellations, zeros
    assert _same_bits(kernel.score_block(a, b), _reference(a, b))


def _on_a_tie(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows whose exact dot product is a float32 tie plus ``nudge`` (-1, 0 or +1 times a tiny
    amount hidden in a far smaller component), and the float32 the exact product rounds to."""
    r = rng.uniform(-1, 1, size=n).astype(np.float32)
    up = np.nextafter(r, np.float32(np.inf))
    tie = (r.astype(np.float64) + up) / 2  # exact in float64
    nudge = rng.integers(-1, 2, size=n)
    a = np.stack([tie, nudge * np.abs(tie) * 2.0**-60, np.full(n, 0.25)], axis=1)
    b = np.stack([np.ones(n), np.ones(n), np.zeros(n)], axis=1)
    even = np.where(r.view(np.uint32) % 2 == 0, r, up)
    return a, b, np.where(nudge > 0, up, np.where(nudge < 0, r, even)).astype(np.float32)


def test_ties_and_near_ties_round_as_the_exact_product():
    rng = np.random.default_rng(5)
    a, b, expected = _on_a_tie(rng, 300)
    got = np.array([kernel.score_block(a[i : i + 1], b[i : i + 1])[0, 0] for i in range(300)])
    assert _same_bits(got, expected)
    assert _same_bits(exact_round(a, b), expected)  # a pair alone gives the same bits
    naive = np.einsum("ij,ij->i", a, b).astype(np.float32)  # float64 sum, then float32
    assert (naive != expected).sum() > 50  # the float64 sum alone gets the nudged ties wrong


@pytest.mark.parametrize("strip", [1, 7, 1024])
def test_any_strip_block_or_blas_threads_give_the_same_bits(monkeypatch, strip):
    rng = np.random.default_rng(11)
    a, b = _unit_rows(rng, 40, 256), _unit_rows(rng, 45, 256)
    whole = kernel.score_block(a, b)
    monkeypatch.setattr(kernel, "STRIP_ROWS", strip)
    parts = np.block([[kernel.score_block(a[r], b[c]) for c in (slice(0, 13), slice(13, 45))]
                      for r in (slice(0, 29), slice(29, 40))])  # fmt: skip
    assert _same_bits(parts, whole)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=2, user_api="blas"):
        rounded = np.empty_like(whole)
        round_failed = round_certified(a @ b.T, 1e-13, rounded)  # a 2-thread product
    rounded.flat[round_failed] = exact_round(a[round_failed // 45], b[round_failed % 45])
    assert _same_bits(rounded, whole)
    assert _same_bits(whole[:6, :7], _reference(a[:6], b[:7]))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 20), st.integers(1, 20), st.integers(0, 2**32 - 1),
       st.sampled_from([1e-15, 1e-9, 1e-3]))  # fmt: skip
def test_compiled_certification_equals_the_numpy_path(m, n, seed, bound):
    pytest.importorskip("numba")
    rng = np.random.default_rng(seed)
    p = rng.normal(size=(m, n)) * rng.choice([1e-12, 1e-6, 1.0], size=(m, n))
    fast, slow = np.empty((m, n), np.float32), np.empty((m, n), np.float32)
    failed_fast = round_certified(p, bound, fast)
    failed_slow = round_certified(p, bound, slow, compiled_loop=False)
    assert _same_bits(fast, slow) and failed_fast.tolist() == failed_slow.tolist()
    assert _same_bits(fast, p.astype(np.float32))
    lo, hi = (p - bound).astype(np.float32), (p + bound).astype(np.float32)
    assert set(failed_fast.tolist()) == set(np.flatnonzero((lo != fast) | (hi != fast)).tolist())


def test_products_that_are_exactly_zero_are_positive_zero():
    a = np.array([[1.0, 0.0, -0.0], [0.6, 0.8, 0.0]])
    b = np.array([[0.0, 1.0, 5.0], [0.8, -0.6, 0.0]])
    s = kernel.score_block(a, b)
    assert _same_bits(s, _reference(a, b))
    assert s[0, 0] == 0 and not np.signbit(s[0, 0]) and not np.signbit(s[1, 1])


def test_realistic_cosine_block_equals_the_reference():
    rng = np.random.default_rng(3)
    a, b = _unit_rows(rng, 30, 256), _unit_rows(rng, 30, 256)
    b[:3] = -a[:3]  # exact -1s
    assert _same_bits(kernel.score_block(a, b), _reference(a, b))
