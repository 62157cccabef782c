"""The optimal (PAV) LLRs of a supervised set, raw and with Laplace's rule of succession.

PAV on the trials sorted by score (ties pooled) cuts them into blocks of strictly increasing
target posterior; block ``k`` with ``t_k`` targets and ``n_k`` non-targets gives every one of its
trials the LLR ``log(t_k / n_k) − log(T / N)`` (posterior minus prior log-odds, natural log).

* **raw** (``laplace=False``): exactly that. A block of only targets gets ``+inf``, one of only
  non-targets ``−inf``. The Cllr of these LLRs is minCllr (:func:`bosaris_dask.metrics.min_cllr`
  stays this raw one, as the BOSARIS paper defines it).
* **Laplace** (``laplace=True``): one dummy target and one dummy non-target are added below every
  score and one of each above every score before PAV; the dummies are dropped from the output,
  and ``T``, ``N`` stay the real trials' counts (the dummies smooth the posteriors, not the
  prior), as in the BOSARIS toolkit's ``opt_loglr``: on the reference set the toolkit's LLRs
  are within about 1e-6 of these (it adds a tiny increasing ramp). The lowest block then holds a
  target and the highest a non-target, and block posteriors increase strictly, so every block
  has both classes and every LLR is finite.

Adding points at the two ends only merges end blocks (the convex minorant of the augmented
cumulative counts has a subset of the original vertices), so both variants are exact from the
engine's summary: its hull vertices never lie inside an unrefined bin.

Examples
--------
>>> tar, non = np.array([2.0, 3.0]), np.array([0.0, 1.0, 2.5])
>>> raw_t, raw_n = optimal_llrs_arrays(tar, non)
>>> raw_t.tolist(), raw_n.tolist()  # blocks {0, 1}: 0/2, {2, 2.5}: 1/1, {3}: 1/0; T/N = 2/3
([0.4054651081081645, inf], [-inf, -inf, 0.4054651081081645])
>>> lap_t, lap_n = optimal_llrs_arrays(tar, non, laplace=True)
>>> bool(np.isfinite(np.concatenate([lap_t, lap_n])).all())
True
"""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask.engine import DEFAULT_SPLIT_EVERY, summarize
from bosaris_dask.passes.keys import order_keys
from bosaris_dask.roc import pav_blocks

__all__ = ["optimal_llr_table", "optimal_llrs_arrays", "optimal_llrs"]


def optimal_llr_table(n_tar: Any, n_non: Any, *, laplace: bool = False) -> np.ndarray:
    """The optimal LLR of each bin of per-bin counts (bins in ascending score order).

    Parameters
    ----------
    n_tar, n_non
        Target and non-target counts per bin (a bin holds one score value, or a range of scores
        that lie in one PAV block).
    laplace
        Add the dummy targets and non-targets at both ends (finite LLRs); see the module text.

    Returns
    -------
    numpy.ndarray
        float64 LLR per bin (natural log).

    Examples
    --------
    >>> optimal_llr_table([0, 1, 1], [2, 1, 0]).tolist()  # blocks 0/2, 1/1, 1/0; T/N = 2/3
    [-inf, 0.4054651081081645, inf]

    With the dummies, the counts are 1/1, 0/2, 1/1, 1/0, 1/1 and PAV pools them into
    1/3, 1/1, 2/1; the real trials' ``T/N = 2/3``: ``log(1/3) - log(2/3)``, ``log(3/2)``,
    ``log(2 * 3/2)``.

    >>> np.round(optimal_llr_table([0, 1, 1], [2, 1, 0], laplace=True), 6).tolist()
    [-0.693147, 0.405465, 1.098612]
    """
    n_tar = np.asarray(n_tar, dtype=np.int64)
    n_non = np.asarray(n_non, dtype=np.int64)
    total_tar, total_non = n_tar.sum(), n_non.sum()  # the real trials' (not the dummies')
    first = 0
    if laplace:
        n_tar = np.concatenate([[1], n_tar, [1]])
        n_non = np.concatenate([[1], n_non, [1]])
        first = 1
    starts, block_tar, block_non = pav_blocks(n_tar, n_non)
    bins = np.arange(first, len(n_tar) - first)
    block = np.searchsorted(starts, bins, side="right") - 1
    with np.errstate(divide="ignore"):
        llr = np.log(block_tar.astype(np.float64)) - np.log(block_non.astype(np.float64))
    return llr[block] - (np.log(total_tar) - np.log(total_non))


def optimal_llrs_arrays(tar: Any, non: Any, *, laplace: bool = False):
    """The optimal LLRs of in-memory target and non-target scores, in the input order.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        LLRs of the targets and of the non-targets.
    """
    tar, non = np.asarray(tar, dtype=np.float64).ravel(), np.asarray(non, dtype=np.float64).ravel()
    values, inverse = np.unique(np.concatenate([tar, non]), return_inverse=True)
    n_tar = np.bincount(inverse[: tar.size], minlength=len(values))
    n_non = np.bincount(inverse[tar.size :], minlength=len(values))
    llr = optimal_llr_table(n_tar, n_non, laplace=laplace)[inverse]
    return llr[: tar.size], llr[tar.size :]


def optimal_llrs(
    scores: xr.Dataset,
    key: xr.Dataset,
    *,
    laplace: bool = False,
    allow_missing: bool = False,
    split_every: int = DEFAULT_SPLIT_EVERY,
    progress: bool = False,
) -> xr.Dataset:
    """The optimal (PAV) LLR of every scored key trial, as Scores on the key's ids (lazy).

    The summary is computed (the evaluation's passes over the data); the LLRs themselves are a
    lazy per-chunk lookup of each score's bin.

    Parameters
    ----------
    scores, key
        One system's Scores and the Key (Python argument order: scores, key).
    laplace
        ``False``: raw PAV LLRs (``±inf`` in pure end blocks); ``True``: Laplace's variant,
        finite everywhere.
    allow_missing, split_every, progress
        As in :func:`bosaris_dask.metrics.evaluate`.

    Returns
    -------
    xarray.Dataset
        Scores with the key's model and segment ids; ``score_mask`` marks the key trials that
        have a score (the others hold 0).
    """
    from bosaris_dask.trials import make_scores, reindex_ids, trial_classes

    (summary,) = summarize(
        [scores], key, allow_missing=allow_missing, split_every=split_every, progress=progress,
    )  # fmt: skip
    table = optimal_llr_table(summary.n_tar, summary.n_non, laplace=laplace)
    lo = summary.lo
    aligned = reindex_ids(scores, key.model.values, key.segment.values)
    score = aligned.score.data
    classes = trial_classes(key, chunks=score.chunks)
    mask = aligned.score_mask.data.rechunk(score.chunks) & (classes != 0)

    def lookup(block: np.ndarray, keep: np.ndarray) -> np.ndarray:
        safe = np.where(keep, block, 0).astype(summary.dtype)
        idx = np.searchsorted(lo, order_keys(safe).astype(np.uint64), side="right") - 1
        return np.where(keep, table[np.clip(idx, 0, None)], 0.0)

    llr = da.map_blocks(lookup, score, mask, dtype=np.float64)
    return make_scores(key.model.values, key.segment.values, llr, mask)
