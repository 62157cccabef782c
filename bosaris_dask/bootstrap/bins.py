"""The coarse score bins of the bootstrap: chosen from an exact prefix histogram of each system.

The bootstrap accumulates, per resample, a weighted histogram over a few hundred *coarse* score
bins (:mod:`bosaris_dask.bootstrap.histograms`). Their edges are chosen here, per system, from
exact counts of targets and non-targets per key prefix (the top :func:`prefix_bits` bits of the
order-preserving key, :mod:`bosaris_dask.passes.keys`): those of the evaluation's own summaries
(:func:`summary_prefix_counts`), or, where the evaluation does not hand them over (with
conditions), of one extra pass (:func:`prefix_histograms`):

- the candidate edges are the lower ends of the non-empty prefixes (exact ROC points);
- ``n_bins - 1 - J`` of them are taken at equal steps of arc length along the system's DET curve
  (probit Pfa against probit Pmiss, rates clipped to ``[1/(2N), 1 - 1/(2N)]`` and
  ``[1/(2T), 1 - 1/(2T)]``): equal resolution at every operating point of a DET plot;
- the ``J`` Bayes thresholds ``-logit(p)`` of the reported operating points are edges too
  (exactly, as keys), so the resampled actDCF counts are exact.

A trial's bin is the number of edges at or below its score (accept iff ``score >= edge``). On
the workers a look-up table over the key prefix gives the bin of every prefix that holds no
edge inside it; the few trials of prefixes that do (those holding a Bayes threshold) are placed
by binary search.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.passes.keys import order_keys
>>> b = Binning.from_edges(np.array([0.0, 1.5]), np.float64)
>>> b.bins(order_keys(np.array([-1.0, 0.0, 1.0, 1.5, 2.0]))).tolist()
[0, 1, 1, 2, 2]
>>> b.n_bins, b.edge_index(np.array([1.5])).tolist()
(3, [1])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import dask.array as da
import numpy as np
from scipy.special import ndtri

from bosaris_dask.passes.keys import key_bits, order_keys, threshold_keys
from bosaris_dask.passes.runner import Aggregation, run_pass

__all__ = ["Binning", "prefix_bits", "prefix_histograms", "summary_prefix_counts", "choose_edges"]


def prefix_bits(dtype: np.dtype) -> int:
    """Key-prefix bits of the look-up table: 16 for float32 (sign, exponent and 7 mantissa
    bits: bins 0.8% wide relative to the score), 20 for float64 (8 mantissa bits)."""
    return 16 if np.dtype(dtype) == np.float32 else 20


@dataclass(frozen=True)
class Binning:
    """Coarse score bins of one system.

    Attributes
    ----------
    edges
        Ascending, distinct keys (uint64) of the bin edges; bin ``i`` holds the keys ``k`` with
        ``edges[i-1] <= k < edges[i]``, so there are ``len(edges) + 1`` bins.
    dtype
        The score dtype the keys belong to.
    shift
        Keys are looked up by ``key >> shift``.
    lut
        Bin of every key prefix, or -1 where an edge lies strictly inside the prefix.
    """

    edges: np.ndarray
    dtype: np.dtype
    shift: int
    lut: np.ndarray

    @classmethod
    def from_keys(cls, edges: np.ndarray, dtype: np.dtype) -> Binning:
        """The binning with these edge keys."""
        dtype = np.dtype(dtype)
        edges = np.unique(np.asarray(edges, dtype=np.uint64))
        shift = key_bits(dtype) - prefix_bits(dtype)
        lo = np.arange(1 << prefix_bits(dtype), dtype=np.uint64) << np.uint64(shift)
        below = np.searchsorted(edges, lo, side="right")  # edges <= the prefix's first key
        upto = np.append(np.searchsorted(edges, lo[1:], side="left"), len(edges))
        lut = np.where(upto > below, -1, below).astype(np.int32)
        return cls(edges, dtype, shift, lut)

    @classmethod
    def from_edges(cls, edges: Sequence[float] | np.ndarray, dtype: np.dtype) -> Binning:
        """The binning whose edges are these score values (each is a threshold, ``s >= edge``)."""
        return cls.from_keys(threshold_keys(np.asarray(edges, dtype=np.float64), dtype), dtype)

    @property
    def n_bins(self) -> int:
        """The number of bins."""
        return len(self.edges) + 1

    def bins(self, keys: np.ndarray) -> np.ndarray:
        """The bin (intp) of each key."""
        out = self.lut[(keys >> keys.dtype.type(self.shift)).astype(np.intp)].astype(np.intp)
        inside = np.flatnonzero(out < 0)
        if len(inside):
            out[inside] = np.searchsorted(self.edges, keys[inside].astype(np.uint64), "right")
        return out

    def edge_index(self, thresholds: np.ndarray) -> np.ndarray:
        """For each threshold (an edge), the number of bins it rejects minus one: the misses at
        it are the targets of bins ``0..i``."""
        kappa = threshold_keys(np.asarray(thresholds, dtype=np.float64), self.dtype)
        idx = np.searchsorted(self.edges, kappa.astype(np.uint64))
        if np.any(idx >= len(self.edges)) or np.any(
            self.edges[np.minimum(idx, len(self.edges) - 1)] != kappa
        ):
            raise ValueError("a threshold is not a bin edge")  # pragma: no cover - by design
        return idx


def _prefix_kernel(classes, *blocks, system: int, shift: int, nbins: int) -> np.ndarray:
    s, m = blocks[2 * system], blocks[2 * system + 1]
    valid = m & (classes != 0)
    keys = order_keys(s[valid])
    idx = (keys >> keys.dtype.type(shift)).astype(np.intp) + nbins * (classes[valid] == 1)
    return np.bincount(idx, minlength=2 * nbins)


def prefix_histograms(
    inputs: Sequence[da.Array], dtype: np.dtype, *, split_every: int, progress: bool | None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """One pass: per system, exact ``(targets, non-targets)`` counts per key prefix."""
    bits = prefix_bits(dtype)
    shift, nbins = key_bits(dtype) - bits, 1 << bits
    n_sys = (len(inputs) - 1) // 2
    aggs = [
        Aggregation(
            f"bootstrap bins of system {k + 1}",
            partial(_prefix_kernel, system=k, shift=shift, nbins=nbins),
            2 * nbins,
            finalize=lambda v, n=nbins: (v[n:].astype(np.int64), v[:n].astype(np.int64)),
        )  # fmt: skip
        for k in range(n_sys)
    ]
    return run_pass("bootstrap bin edges", aggs, inputs, split_every=split_every,
                    progress=progress)  # fmt: skip


def summary_prefix_counts(summary: Any, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """``(targets, non-targets)`` per key prefix from an exact
    :class:`~bosaris_dask.passes.score_summary.ScoreSummary` (each bin counted in the prefix of
    its lowest key: a bin wider than a prefix offers only its own lower end as an edge)."""
    bits = prefix_bits(dtype)
    shift = np.uint64(key_bits(dtype) - bits)
    prefix = (np.asarray(summary.lo, dtype=np.uint64) >> shift).astype(np.intp)
    out = [np.bincount(prefix, weights=np.asarray(c, dtype=np.float64), minlength=1 << bits)
           for c in (summary.n_tar, summary.n_non)]  # fmt: skip
    return out[0].astype(np.int64), out[1].astype(np.int64)


def _probit(p: np.ndarray, n: int) -> np.ndarray:
    return ndtri(np.clip(p, 0.5 / n, 1 - 0.5 / n))


def choose_edges(
    n_tar: np.ndarray, n_non: np.ndarray, dtype: np.dtype, n_bins: int,
    thresholds: np.ndarray,
) -> Binning:  # fmt: skip
    """The :class:`Binning` of one system from its prefix histogram (see the module docstring).

    ``n_bins`` bounds the number of bins; the Bayes ``thresholds`` are always edges.
    """
    dtype = np.dtype(dtype)
    shift = key_bits(dtype) - prefix_bits(dtype)
    forced = np.unique(threshold_keys(np.asarray(thresholds, dtype=np.float64), dtype))
    n_data = max(0, n_bins - 1 - len(forced))
    nonempty = np.flatnonzero(n_tar + n_non)
    cand = nonempty[1:]
    if len(cand) <= n_data:
        chosen = cand
    else:
        T, N = int(n_tar.sum()), int(n_non.sum())
        cum_tar, cum_non = np.cumsum(n_tar), np.cumsum(n_non)
        x = _probit(np.concatenate([[1.0], (N - cum_non[cand - 1]) / N, [0.0]]), N)
        y = _probit(np.concatenate([[0.0], cum_tar[cand - 1] / T, [1.0]]), T)
        arc = np.concatenate([[0.0], np.cumsum(np.hypot(np.diff(x), np.diff(y)))])
        goals = arc[-1] * np.arange(1, n_data + 1) / (n_data + 1)
        pick = np.clip(np.searchsorted(arc[1:-1], goals), 0, len(cand) - 1)
        chosen = cand[np.unique(pick)]
    keys = np.concatenate([chosen.astype(np.uint64) << np.uint64(shift), forced.astype(np.uint64)])
    return Binning.from_keys(keys, dtype)
