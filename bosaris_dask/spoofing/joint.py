"""Curves over several engine summaries, and the bins they need exact (at any scale).

The ASVspoof 5 metrics count classes that no single two-class summary holds: the a-DCF needs
targets, non-targets and spoofs of one score. :mod:`bosaris_dask.spoofing.scale` therefore runs
one :func:`~bosaris_dask.engine.summarize` call with several *member* summaries of the same
scores (each with its own score mask), and each class is a :class:`Part`: the target
(``n_tar``) or non-target (``n_non``) counts of one member.

All members' bins are nested dyadic key ranges, so their coarsest common cover is a grid
(:func:`grid`) on which every part's cumulative count is exact at every edge. Edge ``e``
rejects the grid bins before ``e``: it is the threshold "the lowest observed score of bin
``e``" (edge 0 accepts all, the last edge is ``+inf``), exactly the thresholds the in-memory
functions of :mod:`bosaris_dask.spoofing.metrics` try, minus those inside coarse bins.

The candidate rules below tell the engine (its ``extra_candidates`` hook) which grid bins to
refine so that the in-memory answer — same float formulas, same first-minimum tie rule, same
threshold — comes out of the edges. They rest on monotonicity: misses never decrease and false
alarms never increase with the threshold, and correctly rounded float operations are monotone,
so a cost that is nondecreasing in every error count is bounded below, inside a bin, by its
value at (misses of the lower edge, false alarms of the upper edge).

Examples
--------
>>> from bosaris_dask.metrics import summary_from_arrays
>>> s = summary_from_arrays([1.0, 2.0, 3.0], [-1.0, 0.0, 1.5, -2.0])
>>> g = grid([s], [Part(0, "n_tar"), Part(0, "n_non")])
>>> g.below(Part(0, "n_tar")).tolist(), g.above(Part(0, "n_non")).tolist()
([0, 0, 0, 0, 1, 1, 2, 3], [4, 3, 2, 1, 1, 0, 0, 0])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bosaris_dask.passes.keys import keys_to_values

__all__ = ["Part", "Grid", "grid", "first_minimum", "min_cost_bins", "eer_index", "eer_bins",
           "member_bins", "straddling_bins"]  # fmt: skip


@dataclass(frozen=True)
class Part:
    """One class of trials: the ``counts`` (``"n_tar"`` or ``"n_non"``) of summary ``index``."""

    index: int
    counts: str


@dataclass(frozen=True)
class Grid:
    """The common grid of some parts: bins ``(lo, bits)`` ascending, and the summaries."""

    lo: np.ndarray
    bits: np.ndarray
    summaries: Sequence[Any]

    def _cum(self, part: Part) -> tuple[np.ndarray, int]:
        s = self.summaries[part.index]
        counts = np.asarray(getattr(s, part.counts), dtype=np.int64)
        cum = np.concatenate([[0], np.cumsum(counts)])
        # every bin of the part lies inside one grid bin: those below edge e start below lo[e]
        at = np.searchsorted(s.lo, self.lo, side="left")
        return np.append(cum[at], cum[-1]), int(cum[-1])

    def below(self, part: Part) -> np.ndarray:
        """The part's trials rejected at each edge (score below it): ``len(lo) + 1`` counts."""
        return self._cum(part)[0]

    def above(self, part: Part) -> np.ndarray:
        """The part's trials accepted at each edge (score at or above it)."""
        cum, total = self._cum(part)
        return total - cum

    def total(self, part: Part) -> int:
        """The part's number of trials."""
        return self._cum(part)[1]

    def thresholds(self, dtype: Any) -> np.ndarray:
        """Each edge's threshold as float64: the lowest value of grid bin ``e``, exact where
        that bin is one value (``bits == 0``); the last edge is ``+inf``."""
        return np.append(keys_to_values(self.lo, dtype).astype(np.float64), np.inf)


def _counted(s: Any, counts: str) -> np.ndarray:
    return np.asarray(getattr(s, counts)) > 0


def grid(summaries: Sequence[Any], parts: Sequence[Part]) -> Grid:
    """The coarsest common cover of the bins holding a trial of any of ``parts``.

    Its bins hold observed scores of those classes only, so its edges are among the thresholds
    an in-memory count over those classes tries.
    """
    los, bits = [], []
    for p in parts:
        s = summaries[p.index]
        keep = _counted(s, p.counts)
        los.append(s.lo[keep])
        bits.append(s.bits[keep].astype(np.int64))
    lo, b = np.concatenate(los), np.concatenate(bits)
    order = np.lexsort((-b, lo))  # by lo, the widest first
    lo, b = lo[order], b[order]
    hi = lo + ((np.uint64(1) << b.astype(np.uint64)) - np.uint64(1))
    inside = np.zeros(len(lo), dtype=bool)
    inside[1:] = lo[1:] <= np.maximum.accumulate(hi)[:-1]
    return Grid(lo[~inside], b[~inside], summaries)


def first_minimum(values: np.ndarray) -> int:
    """The first index of the least value (``numpy.argmin``'s tie rule, as in memory)."""
    return int(np.argmin(values))


def min_cost_bins(
    g: Grid, cost: Callable[[np.ndarray, np.ndarray], np.ndarray], *, threshold: bool = True
) -> np.ndarray:
    """Grid bins to refine so that the first minimum of ``cost`` over thresholds is an edge.

    ``cost(i_miss, i_fa)`` is the cost at the thresholds whose misses are those of edges
    ``i_miss`` and whose false alarms are those of edges ``i_fa`` (index arrays into the
    edges); it must not decrease when misses or false alarms grow. A bin whose bound (misses
    of its lower edge, false alarms of its upper edge) is below the least edge value may hold
    a lower minimum; one before the first minimizing edge ``g`` whose bound equals it may hold
    an earlier one; with ``threshold``, bin ``g`` too, whose lowest observed score is the
    threshold.
    """
    n = len(g.lo)
    edges = np.arange(n + 1)
    values = cost(edges, edges)
    best = first_minimum(values)
    bound = cost(edges[:-1], edges[1:])
    earlier = np.arange(n) < best
    lower = (bound < values[best]) | ((bound == values[best]) & earlier)
    out = np.flatnonzero(lower & (g.bits > 0))
    if threshold and best < n and g.bits[best] > 0:
        out = np.append(out, best)
    return out


def eer_index(pmiss: np.ndarray, pfa: np.ndarray) -> int:
    """The first edge where ``|pmiss - pfa|`` is least (the package's EER rule)."""
    return first_minimum(np.abs(pmiss - pfa))


def eer_bins(pmiss: np.ndarray, pfa: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """Grid bins to refine for the package's EER rule over edge rates ``pmiss``/``pfa``.

    ``d = pmiss - pfa`` (in float, as in memory) never decreases along the edges. The bin
    before the first edge with ``d >= 0`` may hold a threshold with a smaller ``|d|``; the bin
    before the first minimizing edge ``i`` may hold an earlier threshold with the same ``|d|``
    (only there: elsewhere before ``i``, ``|d|`` is larger).
    """
    d = pmiss - pfa
    first_up = int(np.searchsorted(d, 0.0, side="left"))  # d nondecreasing: first d >= 0
    i = eer_index(pmiss, pfa)
    out = np.unique([j for j in (first_up - 1, i - 1) if 0 <= j < len(bits)]).astype(np.int64)
    return out[bits[out] > 0]


def member_bins(g: Grid, cands: np.ndarray, parts: Sequence[Part]) -> dict[int, np.ndarray]:
    """Per member summary, its coarse bins inside the grid bins ``cands`` (for the engine)."""
    if len(cands) == 0:
        return {}
    cands = np.unique(cands)
    c_lo = g.lo[cands]
    c_hi = c_lo + ((np.uint64(1) << g.bits[cands].astype(np.uint64)) - np.uint64(1))
    out: dict[int, np.ndarray] = {}
    for p in parts:
        s = g.summaries[p.index]
        i = np.searchsorted(c_lo, s.lo, side="right") - 1
        ok = i >= 0
        inside = np.zeros(len(s.lo), dtype=bool)
        inside[ok] = s.lo[ok] <= c_hi[i[ok]]
        found = np.flatnonzero(inside & (s.bits > 0) & _counted(s, p.counts))
        if len(found):
            out[p.index] = np.union1d(out.get(p.index, np.empty(0, np.int64)), found)
    return out


def straddling_bins(s: Any, counts: str, lo: np.uint64, bits: int) -> np.ndarray:
    """Coarse bins of ``s`` (holding ``counts``) that may hold scores on both sides of a
    threshold known to lie in the key range ``[lo, lo + 2**bits)`` (exactly ``lo`` when
    ``bits == 0``): they must be refined for an exact count at or above it."""
    hi = lo + ((np.uint64(1) << np.uint64(bits)) - np.uint64(1))
    s_hi = s.lo + ((np.uint64(1) << s.bits.astype(np.uint64)) - np.uint64(1))
    overlap = (s.lo <= hi) & (s_hi >= lo)
    if bits == 0:
        overlap &= s.lo < lo  # a bin starting at the threshold is all at or above it
    return np.flatnonzero(overlap & (s.bits > 0) & _counted(s, counts))
