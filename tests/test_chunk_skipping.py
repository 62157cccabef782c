"""Refinement passes read only the chunks holding candidate trials (``bosaris_dask.skip-chunks``).

Pass 1 notes, per chunk, which of its bins hold trials; a refinement pass then reads (for scores
from embeddings: computes the block product of) only the chunks holding a trial of a candidate
bin. The summaries and metrics are the same, bit for bit, as when every chunk is read, and equal
brute-force references; fewer chunks are read when the candidates are concentrated.
"""

from __future__ import annotations

import threading

import dask
import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bosaris_dask import engine, metrics
from bosaris_dask.conditions import condition_table
from bosaris_dask.embeddings import from_arrays, scores_from_embeddings
from bosaris_dask.embeddings import scoring as embedding_scoring
from bosaris_dask.passes import refinement
from bosaris_dask.trials import key_from_labels, make_key, make_scores, trial_classes

from . import reference as ref

PLO = np.array([-6.9, -2.2, 0.0, 1.3, 3.0])
SKIP_OFF = {"bosaris_dask.skip-chunks": 0}


def _chunks(draw, n: int) -> tuple[int, ...]:
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=min(4, n - 1))))
    edges = [0, *cuts, n]
    return tuple(b - a for a, b in zip(edges[:-1], edges[1:], strict=True))


def _concentrated(rng, shape, chunks, at, *, ties=None, dtype=np.float64):
    """Classes and scores whose targets and non-targets overlap only in chunk ``at``: elsewhere
    targets score about +20 and non-targets about -20 (far from every Bayes threshold)."""
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=shape, p=[0.7, 0.3])
    values = np.where(mask == 1, 20.0, -20.0) + rng.normal(size=shape)
    rows = np.cumsum((0, *chunks[0]))
    cols = np.cumsum((0, *chunks[1]))
    i, j = at
    block = (slice(rows[i], rows[i + 1]), slice(cols[j], cols[j + 1]))
    values[block] = rng.normal(size=values[block].shape) + 0.8 * mask[block]
    if ties:
        values = np.round(values * ties) / ties
    return mask, values.astype(dtype)


def _summaries(systems, mask, chunks, **kwargs):
    ids_m, ids_s = range(mask.shape[0]), range(mask.shape[1])
    key = make_key(ids_m, ids_s, mask, chunks=chunks)
    scores = [make_scores(ids_m, ids_s, v, chunks=chunks) for v in systems]
    return engine.summarize(scores, key, thresholds=-PLO, split_every=2, **kwargs)


def _assert_same(a, b):
    for name in ("lo", "bits", "n_tar", "n_non"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert (a.softplus_tar, a.softplus_non, a.passes) == (b.softplus_tar, b.softplus_non, b.passes)


def _assert_exact(summary, tar, non):
    """The hull, EER, PRBEP and the threshold counts equal the brute-force references."""
    misses, fas = ref.roc_points(tar, non)
    ref.check_hull(misses, fas, summary.hull.misses, summary.hull.false_alarms)
    got_m, got_f = summary.error_counts(-PLO)
    for p, m, f in zip(PLO, got_m, got_f, strict=True):
        assert m == (tar < -p).sum() and f == (non >= -p).sum()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_m=st.integers(4, 18), n_s=st.integers(4, 18), seed=st.integers(0, 2**32 - 1),
    data=st.data(), n_sys=st.sampled_from([1, 2]), coarse=st.sampled_from([6, 12, 20]),
    dtype=st.sampled_from([np.float32, np.float64]), ties=st.sampled_from([None, 4]),
    knobs=st.sampled_from([{}, {"bosaris_dask.keep-limit": 0},
                           {"bosaris_dask.raw-limit": 4, "bosaris_dask.dense-budget": 16},
                           {"bosaris_dask.keep-limit": 0, "bosaris_dask.raw-limit": 0,
                            "bosaris_dask.dense-budget": 4}]),
)  # fmt: skip
def test_skipping_gives_the_same_exact_summaries_under_any_chunking(
    n_m, n_s, seed, data, n_sys, coarse, dtype, ties, knobs
):
    rng = np.random.default_rng(seed)
    chunks = (_chunks(data.draw, n_m), _chunks(data.draw, n_s))
    systems, masks = [], []
    mask = None
    for _ in range(n_sys):
        at = (int(rng.integers(len(chunks[0]))), int(rng.integers(len(chunks[1]))))
        m, v = _concentrated(rng, (n_m, n_s), chunks, at, ties=ties, dtype=dtype)
        mask = m if mask is None else mask
        masks.append(mask)
        systems.append(v)
    with dask.config.set({"scheduler": "sync", **knobs}):
        skipped = _summaries(systems, mask, chunks, coarse_bits=coarse)
        with dask.config.set(SKIP_OFF):
            full = _summaries(systems, mask, chunks, coarse_bits=coarse)
    for s, f, v in zip(skipped, full, systems, strict=True):
        _assert_same(s, f)
        _assert_exact(s, v[mask == 1], v[mask == -1])


def _reads_per_chunk(scores, key, **kwargs):
    """Evaluate, counting the reads of each score chunk."""
    reads: dict[tuple[int, ...], int] = {}
    lock = threading.Lock()

    def count(block, block_id=None):
        if isinstance(block_id, tuple):  # not dask's calls to infer the output's meta
            with lock:
                reads[block_id] = reads.get(block_id, 0) + 1
        return block

    data = scores.score.data.map_blocks(count, dtype=scores.score.dtype)
    counted = scores.copy(data={"score": data, "score_mask": scores.score_mask.data})
    return reads, metrics.evaluate(counted, key, **kwargs)


@pytest.mark.parametrize("budget", [None, 1 << 14])
def test_refinement_reads_only_the_chunks_holding_candidates(budget, monkeypatch):
    if budget is not None:  # notes of groups of bins (a bit per 2**coarse bins)
        monkeypatch.setattr(refinement.ChunkBins, "BUDGET", budget)
        assert refinement.ChunkBins.coarseness(20, 1 << 20) == 8
    rng = np.random.default_rng(5)
    chunks = ((10,) * 4, (10,) * 5)
    mask, values = _concentrated(rng, (40, 50), chunks, (1, 2), ties=4, dtype=np.float32)
    key = make_key(range(40), range(50), mask, chunks=chunks)
    scores = make_scores(range(40), range(50), values, chunks=chunks)
    reads, ds = _reads_per_chunk(scores, key, priors=1 / (1 + np.exp(-PLO)))
    with dask.config.set(SKIP_OFF):
        full_reads, full = _reads_per_chunk(scores, key, priors=1 / (1 + np.exp(-PLO)))
    assert ds.attrs["passes"] == full.attrs["passes"] == 2
    assert set(full_reads.values()) == {2} and len(full_reads) == 20
    # pass 1 reads every chunk; the refinement pass only the one where the classes overlap
    assert reads.pop((1, 2)) == 2 and set(reads.values()) == {1} and len(reads) == 19
    xr.testing.assert_identical(ds, full)
    tar, non = values[mask == 1], values[mask == -1]
    np.testing.assert_allclose(ds.eer.item(), ref.eer(tar, non), rtol=1e-12, atol=0)


def _embeddings(rng):
    """Enrolment and test embeddings, 60 x 40 (chunks of 20): only the first row and column
    chunks are of the same speakers (dims 0-3); the other rows live in dims 4-5 and the other
    columns in dims 6-7, so every other block scores exactly 0 (non-targets)."""
    dim, speakers = 8, 4
    centres = np.zeros((speakers, dim))
    centres[:, :4] = rng.normal(size=(speakers, 4))
    e_lab, t_lab = np.arange(60) % speakers, np.arange(40) % speakers
    e = centres[e_lab] + 0.9 * np.pad(rng.normal(size=(60, 4)), ((0, 0), (0, 4)))
    t = centres[t_lab] + 0.9 * np.pad(rng.normal(size=(40, 4)), ((0, 0), (0, 4)))
    e[20:] = np.pad(rng.normal(size=(40, 2)), ((0, 0), (4, 2)))
    t[20:] = np.pad(rng.normal(size=(20, 2)), ((0, 0), (6, 0)))
    e_lab[20:], t_lab[20:] = 100 + np.arange(40), 200 + np.arange(20)  # no targets there
    e_ids, t_ids = [f"e{i}" for i in range(60)], [f"t{j}" for j in range(40)]
    key = key_from_labels(e_ids, e_lab, t_ids, t_lab, chunks=(20, 20))
    return from_arrays(e_ids, e), from_arrays(t_ids, t), key


def test_embedding_blocks_without_candidates_are_not_recomputed(monkeypatch):
    enrol, test, key = _embeddings(np.random.default_rng(2))
    calls = []
    lock = threading.Lock()
    original = embedding_scoring.score_block

    def counting(a, b):
        with lock:
            calls.append(a.shape[0] * b.shape[0])
        return original(a, b)

    screened = embedding_scoring.screened_scores

    def counting_screened(a, b, **ranges):
        with lock:
            calls.append(a.shape[0] * b.shape[0])
        return screened(a, b, **ranges)

    monkeypatch.setattr(embedding_scoring, "score_block", counting)
    # a refinement pass computes each block it reads as a float32 screen
    monkeypatch.setattr(embedding_scoring, "screened_scores", counting_screened)
    scores = scores_from_embeddings(enrol, test, chunks=(20, 20))
    assert scores.score.data.npartitions == 6
    ds = metrics.evaluate(scores, key)
    skipped, calls[:] = list(calls), []
    with dask.config.set(SKIP_OFF):
        full = metrics.evaluate(scores, key)
    assert ds.attrs["passes"] == full.attrs["passes"] == 2
    assert len(calls) == 2 * 6  # every block in both passes
    assert 6 < len(skipped) < len(calls)  # pass 1 every block, the refinement pass fewer
    xr.testing.assert_identical(ds, full)
    values, classes = scores.score.values, trial_classes(key, chunks=20).compute()
    tar, non = values[classes == 1], values[classes == -1]
    np.testing.assert_allclose(ds.eer.item(), ref.eer(tar, non), rtol=1e-12, atol=0)


def test_conditions_refinement_reads_only_the_chunks_holding_candidates():
    """The grouped passes of conditions (:mod:`bosaris_dask.passes.grouped`) skip chunks too."""
    rng = np.random.default_rng(7)
    chunks = ((10,) * 4, (10,) * 5)
    mask, values = _concentrated(rng, (40, 50), chunks, (2, 1), ties=4, dtype=np.float32)
    key = make_key(range(40), range(50), mask, chunks=chunks)
    scores = make_scores(range(40), range(50), values, chunks=chunks)
    models = condition_table("model", list(range(40)), {"g": np.arange(40) % 3})
    options = {"conditions": [models], "by": ["model.g"], "priors": 1 / (1 + np.exp(-PLO))}
    reads, ds = _reads_per_chunk(scores, key, **options)
    with dask.config.set(SKIP_OFF):
        full_reads, full = _reads_per_chunk(scores, key, **options)
    assert set(full_reads.values()) == {full.attrs["passes"]} and full.attrs["passes"] >= 2
    assert reads.pop((2, 1)) == full.attrs["passes"] and set(reads.values()) == {1}
    xr.testing.assert_identical(ds, full)
    for g in range(3):
        member = (np.arange(40) % 3 == g)[:, None]
        tar, non = values[(mask == 1) & member], values[(mask == -1) & member]
        np.testing.assert_allclose(ds.condition_eer[0, g].item(), ref.eer(tar, non), rtol=1e-12)
