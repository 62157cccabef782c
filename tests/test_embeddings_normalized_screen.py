"""The float32 screen of normalized scores (``bosaris_dask.embeddings.normalized_screen``): a
screened block is exact wherever a normalized score can lie in a range and outside every range
elsewhere (against a numpy normalization of the exact block, under ties, integer and duplicated
rows, tiny and mixed spreads, means at raw scores), the compiled loop and the numpy path give
the same block, and evaluations of Z-, T-, S- and AS-normalized scores give the same bits with
the screen on and off while recomputing few pairs."""

from __future__ import annotations

import dask
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask import engine, metrics
from bosaris_dask.embeddings import from_arrays, scores_from_embeddings
from bosaris_dask.embeddings.kernel import score_block
from bosaris_dask.embeddings.normalized_screen import screen_normalized_block
from bosaris_dask.passes import screening
from bosaris_dask.trials import key_from_labels

from .test_embeddings_screen import assert_screened, same_with_and_without_the_screen


def _reference(a, b, mu_e, sd_e, mu_t, sd_t, norm):
    """The normalized block written out from the formulas (float64 on the exact scores)."""
    s = score_block(a, b).astype(np.float64)
    z = (s - mu_e[:, None]) / sd_e[:, None]
    t = (s - mu_t[None, :]) / sd_t[None, :]
    return {"z": z, "t": t}.get(norm, 0.5 * (z + t)).astype(np.float32)


@st.composite
def normalized_blocks(draw):
    n, m, d = draw(st.integers(1, 30)), draw(st.integers(1, 30)), draw(st.integers(1, 24))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["normal", "integer", "duplicated"]))
    if kind == "integer":
        a, b = rng.integers(-2, 3, size=(n, d)) * 1.0, rng.integers(-2, 3, size=(m, d)) * 1.0
    else:
        a, b = rng.normal(size=(n, d)), rng.normal(size=(m, d))
        a /= np.linalg.norm(a, axis=1, keepdims=True)
        b /= np.linalg.norm(b, axis=1, keepdims=True)
    if kind == "duplicated":
        k = min(n, m)
        b[: k // 2] = a[: k // 2]
        a[n // 2 :] = a[0]
    spread = draw(st.sampled_from(["usual", "tiny", "mixed"]))
    low = {"usual": 0.05, "tiny": 1e-6, "mixed": 1e-4}[spread]
    sd_e, sd_t = rng.uniform(low, 0.5, size=n), rng.uniform(low, 0.5, size=m)
    mu_e, mu_t = rng.normal(0, 0.2, size=n), rng.normal(0, 0.2, size=m)
    if draw(st.booleans()):  # means at raw scores: normalized scores near 0, where the screen
        raw = score_block(a, b).astype(np.float64)  # values fall in other float32 buckets
        mu_e = raw[:, 0] + rng.normal(0, 1e-7, size=n)
        mu_t = raw[0, :] + rng.normal(0, 1e-7, size=m)
    norm = draw(st.sampled_from(["z", "t", "s", "as"]))
    exact = _reference(a, b, mu_e, sd_e, mu_t, sd_t, norm).reshape(-1)
    ends = rng.choice(exact, size=2 * draw(st.integers(0, 4)))  # ranges ending on scores
    lo, hi = screening.merge_ranges(
        np.minimum(ends[::2], ends[1::2]).astype(np.float64),
        np.maximum(ends[::2], ends[1::2]).astype(np.float64),
    )
    return a, b, (mu_e, sd_e, mu_t, sd_t), norm, lo, hi


@settings(max_examples=80, deadline=None)
@given(normalized_blocks())
def test_a_screened_normalized_block_is_exact_near_the_ranges_and_outside_them_elsewhere(problem):
    a, b, stats, norm, lo, hi = problem
    exact = _reference(a, b, *stats, norm)
    got, recomputed = screen_normalized_block(a, b, *stats, norm, lo, hi, compiled_loop=False)
    fast, fast_recomputed = screen_normalized_block(a, b, *stats, norm, lo, hi)
    assert_screened(got, recomputed, exact, lo, hi)
    assert got.tobytes() == fast.tobytes()  # the compiled loop recomputes the same pairs
    assert fast_recomputed == recomputed or not len(lo)


def test_a_tie_below_float64_is_settled_as_in_the_exact_block():
    # a raw score whose float64 product sits on a float32 tie: the exact rounding decides
    a = np.array([[0.5, 2.0**-25, 2.0**-60], [1.0, 0.0, 0.0]])
    b = np.array([[1.0, 1.0, 1.0], [0.0, 1.0, 0.0]])
    stats = (np.array([0.0, 0.1]), np.array([1.0, 0.5]), np.array([0.0, 0.2]), np.ones(2))
    exact = _reference(a, b, *stats, "z")
    for fast in (True, False):
        lo = hi = np.array([float(exact[0, 0])])
        got, _ = screen_normalized_block(a, b, *stats, "z", lo, hi, compiled_loop=fast)
        assert got[0, 0] == exact[0, 0] == np.float32(0.5 + 2.0**-24)


def _data(n_e: int, n_t: int, n_c: int, d: int):
    rng = np.random.default_rng(3)
    speakers = 8
    centres = rng.normal(size=(speakers, d))
    lab_e, lab_t = np.arange(n_e) % speakers, rng.integers(0, speakers, size=n_t)
    e = centres[lab_e] + rng.normal(size=(n_e, d))
    t = centres[lab_t] + rng.normal(size=(n_t, d))
    t[::7] = t[0]  # equal test embeddings: equal normalized scores under the z-norm
    c = rng.normal(size=(n_c, d))
    e_ids, t_ids = [f"e{i}" for i in range(n_e)], [f"t{i}" for i in range(n_t)]
    key = key_from_labels(e_ids, lab_e, t_ids, lab_t)
    embeddings = [from_arrays(ids, x) for ids, x in ((e_ids, e), (t_ids, t))]
    return *embeddings, from_arrays([f"c{i}" for i in range(n_c)], c), key


@pytest.mark.parametrize(
    ("norm", "chunks", "knobs"),
    [
        ("z", (40, 50), {}),
        ("t", (97, 64), {"bosaris_dask.keep-limit": 0}),
        ("s", (33, 120), {"bosaris_dask.raw-limit": 0}),
        ("as", (60, 75), {"bosaris_dask.keep-limit": 0, "bosaris_dask.skip-chunks": 0}),
    ],
)
def test_normalized_evaluations_are_the_same_with_and_without_the_screen(norm, chunks, knobs):
    e, t, c, key = _data(120, 150, 90, 16)
    top_n = 30 if norm == "as" else None

    def run():
        s = scores_from_embeddings(e, t, norm=norm, cohort=c, top_n=top_n, chunks=chunks)
        with dask.config.set(knobs):
            ds = metrics.evaluate(s, key, sweep=np.linspace(-3, 3, 61), fmr=[0.01], fnmr=[0.1])
            summary = engine.summarize(s, key, thresholds=[0.0, 1.0, 2.0], pav_bounds=True)
        return ds, summary

    counted = same_with_and_without_the_screen(run)
    assert counted["blocks"] > 0  # the refinement passes were screened
    assert counted["recomputed"] < counted["pairs"] / 4
