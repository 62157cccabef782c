"""The float32 screen of the refinement passes from embeddings (``bosaris_dask.embeddings.screen``,
``bosaris_dask.passes.screening``): its error bound holds for any summation order (against exact
rational dot products), a screened block is exact wherever a score can lie in a range and
outside every range elsewhere, and evaluations from embeddings give the same bits with the
screen on and off (ties, duplicated embeddings, integer embeddings, several chunkings, both
back-ends, conditions, every refinement mode), while recomputing few pairs exactly."""

from __future__ import annotations

from fractions import Fraction

import dask
import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask import engine, metrics
from bosaris_dask.conditions import condition_table
from bosaris_dask.embeddings import from_arrays, rounding, scores_from_embeddings, screen
from bosaris_dask.embeddings.kernel import score_block
from bosaris_dask.passes import screening
from bosaris_dask.passes.keys import order_keys
from bosaris_dask.trials import key_from_labels

OFF = {"bosaris_dask.screen": 0}


def _exact(a: np.ndarray, b: np.ndarray) -> list[list[Fraction]]:
    return [[sum((Fraction(x) * Fraction(y) for x, y in zip(r, c, strict=True)), Fraction(0))
             for c in b.tolist()] for r in a.tolist()]  # fmt: skip


def _orders(a32: np.ndarray, b32: np.ndarray) -> list[np.ndarray]:
    """float32 dot products of every pair in several summation orders (and the BLAS's)."""
    p = a32[:, None, :] * b32[None, :, :]  # float32 products, rounded
    seq = np.add.accumulate(p, axis=2, dtype=np.float32)[..., -1]
    rev = np.add.accumulate(p[..., ::-1], axis=2, dtype=np.float32)[..., -1]
    big_first = np.take_along_axis(p, np.argsort(-np.abs(p), axis=2), axis=2)
    by_size = np.add.accumulate(big_first, axis=2, dtype=np.float32)[..., -1]
    return [a32 @ b32.T, seq, rev, by_size, p.sum(axis=2, dtype=np.float32)]


@st.composite
def adversarial_rows(draw):
    n, m, d = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 48))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["normal", "cancel", "magnitudes", "tiny", "integer"]))
    a, b = rng.normal(size=(n, d)), rng.normal(size=(m, d))
    if kind == "cancel":  # b nearly orthogonal to a: large products that cancel
        b[0] = a[0, ::-1] * np.where(np.arange(d) % 2, 1.0, -1.0) * (1 + 1e-9 * rng.normal(size=d))
    elif kind == "magnitudes":
        a *= 10.0 ** rng.integers(-15, 15, size=(n, d))
        b *= 10.0 ** rng.integers(-15, 15, size=(m, d))
    elif kind == "tiny":  # subnormal in float32, or flushed to zero
        a *= 10.0 ** rng.integers(-46, -36, size=(n, d))
        b *= 10.0 ** rng.integers(-3, 3, size=(m, d))
    elif kind == "integer":
        a, b = rng.integers(-3, 4, size=(n, d)) * 1.0, rng.integers(-3, 4, size=(m, d)) * 1.0
    if draw(st.booleans()):
        a[:, : d // 2] += 1e-7 * rng.normal(size=(n, d // 2))  # not exact in float32
    return a, b


@settings(max_examples=60, deadline=None)
@given(adversarial_rows())
def test_the_screen_bound_holds_for_any_summation_order(rows):
    a, b = rows
    na, nb = np.sqrt((a * a).sum(axis=1)), np.sqrt((b * b).sum(axis=1))
    c, t = rounding.screen_factors(a.shape[1], float(na.max()), float(nb.max()))
    bound = c * na[:, None] * nb[None, :] + t
    exact = _exact(a, b)
    rounded = score_block(a, b).astype(np.float64)  # the scores the screen stands for
    for v in _orders(a.astype(np.float32), b.astype(np.float32)):
        for i in range(a.shape[0]):
            for j in range(b.shape[0]):
                assert abs(Fraction(float(v[i, j])) - exact[i][j]) <= Fraction(bound[i, j])
                assert abs(float(v[i, j]) - rounded[i, j]) <= bound[i, j]


@st.composite
def blocks_and_ranges(draw):
    n, m, d = draw(st.integers(1, 40)), draw(st.integers(1, 40)), draw(st.integers(1, 24))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if draw(st.booleans()):
        a, b = rng.integers(-2, 3, size=(n, d)) * 1.0, rng.integers(-2, 3, size=(m, d)) * 1.0
    else:
        a, b = rng.normal(size=(n, d)), rng.normal(size=(m, d))
        a[: n // 2] /= np.linalg.norm(a[: n // 2], axis=1, keepdims=True) + 1e-300
    k = min(n, m // 3)
    b[:k] = a[:k]  # equal rows: scores of 1 (cosine) and other ties
    exact = score_block(a, b).reshape(-1)
    ends = rng.choice(exact, size=2 * draw(st.integers(0, 4)))  # ranges ending on scores
    lo, hi = screening.merge_ranges(
        np.minimum(ends[::2], ends[1::2]).astype(np.float64),
        np.maximum(ends[::2], ends[1::2]).astype(np.float64),
    )
    return a, b, lo, hi


@settings(max_examples=60, deadline=None)
@given(blocks_and_ranges(), st.booleans())
def test_a_screened_block_is_exact_near_the_ranges_and_outside_them_elsewhere(problem, fast):
    a, b, lo, hi = problem
    exact = score_block(a, b)
    got, recomputed = screen.screen_block(a, b, lo, hi, compiled_loop=fast)
    assert_screened(got, recomputed, exact, lo, hi)


def assert_screened(got, recomputed, exact, lo, hi):
    """``got`` holds ``exact``'s bits wherever ``exact`` lies in a range ``[lo[k], hi[k]]`` and
    a value outside every range elsewhere; at least the pairs inside were recomputed."""
    x = exact.astype(np.float64)[..., None]
    inside = ((x >= lo) & (x <= hi)).any(axis=-1)
    assert got.dtype == np.float32 and got.shape == exact.shape
    assert (order_keys(got[inside]) == order_keys(exact[inside])).all()
    g = got.astype(np.float64)[..., None]
    assert not ((g >= lo) & (g <= hi)).any(axis=-1)[~inside].any()
    assert int(inside.sum()) <= recomputed <= exact.size


def test_a_pair_scored_alone_gives_the_bits_of_its_block():
    rng = np.random.default_rng(5)
    a = rng.normal(size=(12, 64))
    b = np.concatenate([rng.normal(size=(8, 64)), a[:4] * -1.0, a[4:8]])
    block = score_block(a, b)
    alone = np.array([[score_block(a[i : i + 1], b[j : j + 1])[0, 0] for j in range(len(b))]
                      for i in range(len(a))])  # fmt: skip
    assert (order_keys(alone) == order_keys(block)).all()


def _data(kind: str, n_e: int, n_t: int, d: int):
    rng = np.random.default_rng(11)
    speakers = 6
    lab_e, lab_t = np.arange(n_e) % speakers, rng.integers(0, speakers, size=n_t)
    if kind == "integer":  # small integers: exact ties, many at bin edges
        centres = rng.integers(-2, 3, size=(speakers, d))
        e = centres[lab_e] + rng.integers(-1, 2, size=(n_e, d))
        t = centres[lab_t] + rng.integers(-1, 2, size=(n_t, d))
    else:
        centres = rng.normal(size=(speakers, d))
        e = centres[lab_e] + rng.normal(size=(n_e, d))
        t = centres[lab_t] + rng.normal(size=(n_t, d))
    if kind == "duplicated":  # equal embeddings: many equal scores
        e[n_e // 2 :] = e[: n_e - n_e // 2]
        t[::3] = t[0]
        t[1::5] = e[lab_t[1::5] % n_e]
        lab_t[1::5] = lab_e[lab_t[1::5] % n_e]
    e_ids, t_ids = [f"e{i}" for i in range(n_e)], [f"t{i}" for i in range(n_t)]
    key = key_from_labels(e_ids, lab_e, t_ids, lab_t)
    return from_arrays(e_ids, e.astype(np.float32)), from_arrays(t_ids, t.astype(np.float32)), key


def _both(run):
    screen.reset_counts()
    on = run()
    counted = screen.counts()
    with dask.config.set(OFF):
        off = run()
    return on, off, counted


@pytest.mark.parametrize(
    ("kind", "backend", "chunks", "knobs"),
    [
        ("random", "cosine", (40, 50), {}),
        ("random", "dot", (97, 64), {"bosaris_dask.keep-limit": 0}),
        ("duplicated", "cosine", (33, 120), {"bosaris_dask.raw-limit": 0}),
        ("duplicated", "dot", (120, 150), {}),
        ("integer", "dot", (50, 37), {"bosaris_dask.keep-limit": 0}),
        ("integer", "cosine", (64, 64), {"bosaris_dask.skip-chunks": 0}),
        ("integer", "dot", (29, 150), {"bosaris_dask.raw-limit": 0,
                                       "bosaris_dask.dense-budget": 64}),
    ],
)  # fmt: skip
def test_evaluate_is_the_same_with_and_without_the_screen(kind, backend, chunks, knobs):
    e, t, key = _data(kind, 120, 150, 8 if kind == "integer" else 24)

    def run():
        s = scores_from_embeddings(e, t, backend=backend, chunks=chunks)
        with dask.config.set(knobs):
            ds = metrics.evaluate(s, key, sweep=np.linspace(-3, 3, 61), fmr=[0.01], fnmr=[0.1])
            summary = engine.summarize(s, key, thresholds=[0.0, 0.5, 1.0], pav_bounds=True)
        return ds, summary

    counted = same_with_and_without_the_screen(run)
    assert counted["blocks"] > 0  # the refinement passes were screened
    assert counted["recomputed"] < counted["pairs"]


def same_with_and_without_the_screen(run):
    """Assert that ``run()`` (an evaluation and a one-system summary list) gives the same bits
    with the screen on and off; the screen's counts of the run with it on."""
    (ds_on, (s_on,)), (ds_off, (s_off,)), counted = _both(run)
    xr.testing.assert_identical(ds_on, ds_off)
    for field in ("lo", "bits", "n_tar", "n_non"):
        assert np.array_equal(getattr(s_on, field), getattr(s_off, field))
    assert (s_on.softplus_tar, s_on.softplus_non, s_on.passes) == (
        s_off.softplus_tar, s_off.softplus_non, s_off.passes)  # fmt: skip
    return counted


def test_the_screen_recomputes_few_pairs():
    e, t, key = _data("random", 600, 500, 64)
    screen.reset_counts()
    with dask.config.set({"bosaris_dask.keep-limit": 0}):
        (on,) = engine.summarize(scores_from_embeddings(e, t, chunks=(200, 250)), key,
                                 thresholds=[0.0, 0.3])  # fmt: skip
    counted = screen.counts()
    with dask.config.set({"bosaris_dask.keep-limit": 0, **OFF}):
        (off,) = engine.summarize(scores_from_embeddings(e, t, chunks=(200, 250)), key,
                                  thresholds=[0.0, 0.3])  # fmt: skip
    assert np.array_equal(on.n_tar, off.n_tar) and np.array_equal(on.lo, off.lo)
    assert on.passes >= 2 and counted["pairs"] >= 600 * 500
    assert 0 < counted["recomputed"] < 0.02 * counted["pairs"]


def test_several_systems_and_a_transformed_array():
    """Two systems from embeddings (one refined in a pass the other is not) and a system whose
    array was transformed on the way (its ids in another order: read exact)."""
    e, t, key = _data("random", 90, 80, 16)
    rev = t.isel(id=slice(None, None, -1))

    def run():
        a = scores_from_embeddings(e, t, chunks=(30, 40))
        b = scores_from_embeddings(e, t, backend="dot", chunks=(30, 40))
        c = scores_from_embeddings(e, rev, chunks=(30, 40))  # aligned to the key: another name
        return metrics.evaluate([a, b, c], key, sweep=np.linspace(-2, 2, 21))

    on, off, counted = _both(run)
    xr.testing.assert_identical(on, off)
    assert counted["blocks"] > 0


def test_conditions_are_the_same_with_and_without_the_screen():
    e, t, key = _data("duplicated", 100, 120, 16)
    models = condition_table("model", e.id.values.tolist(),
                             {"g": [f"g{i % 3}" for i in range(100)]})  # fmt: skip
    segments = condition_table("segment", t.id.values.tolist(),
                               {"l": [f"l{i % 2}" for i in range(120)]})  # fmt: skip

    def run():
        s = scores_from_embeddings(e, t, chunks=(40, 60))
        return metrics.evaluate(s, key, conditions=[models, segments], by=["model.g", "segment.l"],
                                fmr=[0.05])  # fmt: skip

    on, off, counted = _both(run)
    xr.testing.assert_identical(on, off)
    assert counted["blocks"] > 0


@pytest.mark.parametrize("kind", ["random", "duplicated", "integer"])
def test_a_riding_exact_auc_reads_screened_scores(kind):
    """The exact AUC's count of its mixed bins' pairs rides the first refinement pass, which
    screens the blocks for the candidates' and the mixed bins' score ranges together."""
    e, t, key = _data(kind, 80, 90, 8 if kind == "integer" else 16)
    conditions = [condition_table("model", e.id.values.tolist(),
                                  {"g": [f"g{i % 2}" for i in range(80)]})]  # fmt: skip

    def run():
        s = scores_from_embeddings(e, t, chunks=(40, 45))
        by_g = {"conditions": conditions, "by": ["model.g"]}
        return metrics.evaluate(s, key, exact_auc=True), metrics.evaluate(s, key, exact_auc=True,
                                                                          **by_g)  # fmt: skip

    (plain_on, cond_on), (plain_off, cond_off), counted = _both(run)
    xr.testing.assert_identical(plain_on, plain_off)
    xr.testing.assert_identical(cond_on, cond_off)
    assert counted["blocks"] > 0 and counted["recomputed"] < counted["pairs"]
    assert "auc_notes" not in plain_on.attrs  # the AUC rode along: no pass of its own
    # the brute-force AUC of every (target, non-target) pair of the materialized scores
    x = scores_from_embeddings(e, t).score.values.astype(np.float64)
    labels = key.trial_mask.values
    g1 = (np.arange(80) % 2 == 1)[:, None]
    for part, got in (
        (True, plain_on.auc),
        (g1, cond_on.condition_auc.sel(condition="model.g=g1")),
    ):
        tar, non = x[part & (labels == 1)], x[part & (labels == -1)]
        above = int((tar[:, None] > non[None, :]).sum())
        tied = int((tar[:, None] == non[None, :]).sum())
        exact = Fraction(2 * above + tied, 2 * tar.size * non.size)
        assert float(got.values.reshape(-1)[0]) == float(exact)


@pytest.mark.slow
def test_worker_processes_give_the_same_bits_with_the_screen():
    e, t, key = _data("integer", 60, 70, 8)

    def run():
        return metrics.evaluate(scores_from_embeddings(e, t, backend="dot", chunks=(20, 35)), key)

    threads = run()
    with dask.config.set(scheduler="processes", num_workers=2):
        procs = run()
    xr.testing.assert_identical(procs, threads)


def test_rows_too_large_for_float32_are_scored_exactly():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(5, 6)) * 2.0**60, rng.normal(size=(7, 6)) * 2.0**60
    got, recomputed = screen.screen_block(a, b, np.array([0.0]), np.array([1.0]))
    assert recomputed == 35 and (order_keys(got) == order_keys(score_block(a, b))).all()
