"""Choosing, on the client, what each refinement pass of the engine refines, and applying
what it found.

After pass 1 (:mod:`bosaris_dask.engine`), a bin of a
:class:`~bosaris_dask.passes.score_summary.ScoreSummary` needs refining only if it could hide an ROC
convex hull vertex, contains a Bayes threshold, or (for PAV calibration) borders a hull vertex.
:func:`plan` turns those candidate bins into a
:class:`~bosaris_dask.passes.refine_kernels.RefineSpec` within the budgets (dask config keys
``bosaris_dask.dense-budget`` and ``bosaris_dask.raw-limit``, see :mod:`bosaris_dask.config`);
:class:`Selection` is the candidate trials kept in memory between rounds; :func:`apply_refinement`
replaces the candidate bins by what a pass found inside them.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.passes.score_summary import ScoreSummary
>>> s = ScoreSummary(np.dtype(np.float64), lo=np.array([0, 16, 32], dtype=np.uint64),
...                  bits=np.array([4, 4, 4], dtype=np.int8), n_tar=np.array([0, 3, 5]),
...                  n_non=np.array([4, 2, 0]), softplus_units=(0, 0))
>>> hull_candidates(s).tolist()  # the only mixed bin: it may hide a hull vertex
[1]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import dask.array as da
import numpy as np

from bosaris_dask.fixed_rates import fixed_rate_candidates
from bosaris_dask.passes.binmap import BinMap
from bosaris_dask.passes.keys import key_bits
from bosaris_dask.passes.refine_kernels import RefineSpec
from bosaris_dask.passes.unique import unique

if TYPE_CHECKING:
    from bosaris_dask.passes.score_summary import ScoreSummary

__all__ = [
    "candidates", "hull_candidates",
    "threshold_candidates", "pav_bound_candidates", "fixed_rate_candidates", "plan", "volume",
    "Selection", "ChunkBins", "chunk_subset", "chunks_to_read",
    "apply_refinement",
]  # fmt: skip


def hull_candidates(s: ScoreSummary) -> np.ndarray:
    """Mixed, unrefined bins whose optimistic corner lies below the hull of the bin edges."""
    cum_tar = np.concatenate([[0], np.cumsum(s.n_tar)])
    cum_non = np.concatenate([[0], np.cumsum(s.n_non)])
    # the summary's own hull (the same convex minorant), cached in it: the metrics read it
    # after the last round, whose candidates come from the same counts
    vertices = s.hull.positions
    corner_x, corner_y = cum_non[1:], cum_tar[:-1]
    hull_y = np.interp(corner_x, cum_non[vertices], cum_tar[vertices])
    below = corner_y < hull_y * (1 + 1e-12) + 1e-9  # errs on the side of refining
    mixed = (s.n_tar > 0) & (s.n_non > 0) & (s.bits > 0)
    return np.flatnonzero(below & mixed)


def threshold_candidates(s: ScoreSummary, kappa: np.ndarray) -> np.ndarray:
    """Unrefined bins that contain a threshold key strictly inside."""
    if len(kappa) == 0:
        return np.empty(0, dtype=np.int64)
    k = kappa.astype(np.uint64)
    i = np.searchsorted(s.lo, k, side="right") - 1
    ok = i >= 0
    i, k = i[ok], k[ok]
    inside = (k > s.lo[i]) & (((k - s.lo[i]) >> s.bits[i].astype(np.uint64)) == 0)
    return unique(i[inside & (s.bits[i] > 0)])


def pav_bound_candidates(s: ScoreSummary) -> np.ndarray:
    """Unrefined bins next to a hull vertex, and the extreme bins: PAV needs their exact values."""
    pos = s.hull.positions
    nb = len(s.lo)
    idx = np.concatenate([pos - 1, pos, [0, nb - 1]])
    idx = unique(idx[(idx >= 0) & (idx < nb)])
    return idx[s.bits[idx] > 0]


def plan(
    s: ScoreSummary,
    cands: np.ndarray,
    shift: int,
    *,
    dense_budget: int,
    raw_limit: int,
    binmap: BinMap | None = None,
) -> RefineSpec:
    """How to refine the candidate bins ``cands`` of ``s``, whose pass 1 binned keys by
    ``key >> shift`` or, if given, by ``binmap`` (:mod:`bosaris_dask.passes.binmap`).

    Pull their exact keys if they hold at most ``raw_limit`` trials; otherwise split each into
    the same number of sub-bins, ``dense_budget`` sub-bins in all at most.
    """
    cand_bits = s.bits[cands].astype(np.int64)
    volume = int(s.n_tar[cands].sum() + s.n_non[cands].sum())
    raw = volume <= raw_limit
    sub = cand_bits.copy()
    if not raw:  # the same number of sub-bits for every candidate, within the budget
        per = max(1, int(math.floor(math.log2(max(1, dense_budget // len(cands))))))
        sub = np.minimum(cand_bits, per)
    prefix_bits = key_bits(s.dtype) - shift
    if binmap is not None and not binmap.adaptive:
        binmap = None  # the same bins as ``key >> shift``
    return RefineSpec(shift, prefix_bits, s.lo[cands], cand_bits, sub, raw, binmap)


def volume(summaries: list[ScoreSummary], plans: list) -> int:
    """Trials in the candidate bins of all systems."""
    return sum(
        int(s.n_tar[p[0]].sum() + s.n_non[p[0]].sum())
        for s, p in zip(summaries, plans, strict=True)
        if p is not None
    )


@dataclass
class Selection:
    """The candidate trials of every chunk, kept (persisted) after one pass over the data.

    Refinement passes over these touch a few percent of the trials instead of reading, keying
    and filtering all of them again.
    """

    specs: tuple[RefineSpec | None, ...]  # what was kept, per system
    trials: da.Array  # one object per chunk: per system, (keys, is_target) or None

    def holds(self, specs: tuple[RefineSpec | None, ...]) -> bool:
        """Does every candidate bin of ``specs`` lie inside a kept candidate bin?"""
        for old, new in zip(self.specs, specs, strict=True):
            if new is None:
                continue
            if old is None:
                return False
            i = np.searchsorted(old.cand_lo, new.cand_lo, side="right") - 1
            if np.any(i < 0):
                return False
            rel = new.cand_lo - old.cand_lo[i]
            width = old.cand_bits[i].astype(np.uint64)
            if np.any((rel >> width) != 0) or np.any(new.cand_bits > old.cand_bits[i]):
                return False
        return True


@dataclass(frozen=True)
class ChunkBins:
    """Which pass-1 bins of one system hold trials, chunk by chunk (from the notes of
    :func:`bosaris_dask.passes.kernels.bins_note`).

    A refinement pass needs only the trials inside candidate bins, and every candidate lies
    inside one pass-1 bin: a chunk holding no trial of those pass-1 bins contributes nothing
    and is not read (for scores computed from embeddings: its block product is not computed).

    Examples
    --------
    >>> import numpy as np
    >>> notes = [(0, 0, np.packbits([0, 1, 0, 0])), (0, 2, np.packbits([1, 0, 0, 1]))]
    >>> bins = ChunkBins.from_notes(notes, ((3,), (2, 2)), nbins=4)
    >>> bins.holding(np.array([3])).tolist(), bins.holding(np.array([1, 0])).tolist()
    ([False, True], [True, True])
    """

    held: np.ndarray  # (chunks, ceil(groups / 8)) uint8, np.packbits rows, chunks row-major
    coarse: int = 0  # a bit per group of 2**coarse bins

    #: At most about this many bytes of notes on the client (per system): beyond, a note's bit
    #: stands for 2, 4, ... neighbouring bins (a chunk is read if it holds any of them).
    BUDGET = 1 << 24

    @staticmethod
    def coarseness(n_chunks: int, nbins: int) -> int:
        """The ``coarse`` of :func:`~bosaris_dask.passes.kernels.bins_note` within :attr:`BUDGET`.

        >>> ChunkBins.coarseness(64, 1 << 20), ChunkBins.coarseness(625, 1 << 20)
        (0, 3)
        """
        coarse = 0
        while n_chunks * -(-nbins // (8 << coarse)) > ChunkBins.BUDGET:
            coarse += 1
        return coarse

    @classmethod
    def from_notes(cls, notes: list, chunks: tuple, nbins: int, coarse: int = 0) -> ChunkBins:
        """From the notes of a pass over an array chunked ``chunks`` (2-D)."""
        row_starts = np.cumsum((0, *chunks[0]))[:-1]
        col_starts = np.cumsum((0, *chunks[1]))[:-1]
        groups = -(-nbins // (1 << coarse))
        held = np.zeros((len(row_starts) * len(col_starts), (groups + 7) // 8), dtype=np.uint8)
        for row, col, bits in notes:
            i = int(np.searchsorted(row_starts, row, side="right")) - 1
            j = int(np.searchsorted(col_starts, col, side="right")) - 1
            held[i * len(col_starts) + j] |= bits  # or: a zero-width chunk adds nothing
        return cls(held, coarse)

    def holding(self, bins: np.ndarray) -> np.ndarray:
        """Per chunk, whether it holds a trial of any of the pass-1 ``bins``."""
        bins = np.unique(np.asarray(bins, dtype=np.int64) >> self.coarse)
        bits = (self.held[:, bins >> 3] >> (7 - (bins & 7)).astype(np.uint8)) & 1
        return bits.any(axis=1)


def chunk_subset(inputs: Sequence[da.Array], picks: np.ndarray) -> list[da.Array]:
    """The chunks ``picks`` (flat, row-major) of each of ``inputs`` (all chunked alike), each
    flattened into one chunk of a ``(1, n)`` array: what the refinement kernels read (they
    flatten their chunks anyway); the other chunks drop out of the graph and are not computed.

    >>> import dask.array as da
    >>> x = da.arange(12, chunks=2).reshape(3, 4).rechunk((2, 2))
    >>> (sub,) = chunk_subset([x], np.array([1, 2]))
    >>> sub.chunks, sub.compute().tolist()
    (((1,), (4, 2)), [[2, 3, 6, 7, 8, 9]])
    """
    nbj = inputs[0].numblocks[1]
    where = [divmod(int(f), nbj) for f in picks]
    return [da.concatenate([a.blocks[i, j].reshape(1, -1) for i, j in where], axis=1)
            for a in inputs]  # fmt: skip


def chunks_to_read(
    inputs: list[da.Array], held: list[tuple[ChunkBins, RefineSpec]]
) -> tuple[list[da.Array], str]:
    """The inputs a refinement pass reads: only the chunks holding a trial of a candidate's
    pass-1 bin (``held``: per refined system, its :class:`ChunkBins`
    and plan), the others skipped; and what to add to the pass's name (how many it reads)."""
    needed = np.zeros(inputs[0].npartitions, dtype=bool)
    for bins, spec in held:
        needed |= bins.holding(spec.prefixes)
    if needed.all():
        return inputs, ""
    picks = np.flatnonzero(needed)
    if not len(picks):  # candidates always hold trials; read one chunk rather than none
        picks = np.array([0])
    return chunk_subset(inputs, picks), f" ({len(picks)} of {len(needed)} chunks)"


def apply_refinement(s: ScoreSummary, cands: np.ndarray, spec: RefineSpec, result) -> ScoreSummary:
    """A new summary: ``s`` with its candidate bins replaced by what a refinement pass found
    inside them (``s`` itself is left as it was)."""
    if spec.raw:
        lo, counts = result
        lo = lo.astype(np.uint64)
        counts = np.asarray(counts, dtype=np.int64).reshape(-1, 2)
        bits = np.zeros(len(lo), dtype=np.int8)
        owner = np.searchsorted(spec.cand_lo, lo, side="right") - 1
        outside = (owner < 0) | (
            (lo - spec.cand_lo[np.maximum(owner, 0)]) >> spec.cand_bits[np.maximum(owner, 0)]
            .astype(np.uint64) != 0
        )  # fmt: skip
        owner[outside] = -1
    else:
        counts = np.asarray(result, dtype=np.int64).reshape(-1, 2)
        owner = np.repeat(np.arange(len(cands)), np.diff(spec.offsets))
        rank = np.arange(len(owner)) - spec.offsets[owner]
        new_bits = (spec.cand_bits - spec.sub_bits)[owner]
        lo = spec.cand_lo[owner] + (rank.astype(np.uint64) << new_bits.astype(np.uint64))
        bits = new_bits.astype(np.int8)
    _check_counts(s, cands, owner, counts)
    found = counts.sum(axis=1) > 0
    keep = np.ones(len(s.lo), dtype=bool)
    keep[cands] = False
    new_lo = np.concatenate([s.lo[keep], lo[found]])
    order = np.argsort(new_lo, kind="stable")
    return replace(
        s,
        lo=new_lo[order],
        bits=np.concatenate([s.bits[keep], bits[found]])[order],
        n_non=np.concatenate([s.n_non[keep], counts[found, 0]])[order],
        n_tar=np.concatenate([s.n_tar[keep], counts[found, 1]])[order],
        _hull=None,
    )


def _check_counts(s: ScoreSummary, cands: np.ndarray, owner: np.ndarray, counts: np.ndarray):
    """Fail unless the refined sub-bins of each candidate bin (``owner``: the candidate of each
    row of ``counts``, -1 for none) hold exactly the trials pass 1 counted in it."""
    from bosaris_dask.errors import InconsistentPassesError

    n = len(cands)
    # row n: trials outside every candidate bin (float sums of integer counts: exact below
    # 2**53, and bincount is 10x faster than np.add.at)
    rows = np.where(owner < 0, n, owner)
    got = np.stack([np.bincount(rows, weights=counts[:, c], minlength=n + 1) for c in (0, 1)],
                   axis=1).astype(np.int64)  # fmt: skip
    expected = np.stack([s.n_non[cands], s.n_tar[cands]], axis=1).astype(np.int64)
    bad = np.flatnonzero(np.any(got[:n] != expected, axis=1))
    if len(bad) == 0 and not got[n].any():
        return
    if len(bad) == 0:
        what = f"{got[n].sum():,} trials outside every bin it refined"
    else:
        i = bad[0]
        what = (f"{got[i, 1]:,} targets and {got[i, 0]:,} non-targets in a score bin where pass "
                f"1 counted {expected[i, 1]:,} and {expected[i, 0]:,}"
                f"{f' ({len(bad) - 1:,} more bins differ)' if len(bad) > 1 else ''}")  # fmt: skip
    raise InconsistentPassesError(
        f"a refinement pass over the scores counted {what}: the scores changed between passes "
        "over the data (a file rewritten meanwhile, or a non-deterministic score source); no "
        "result is reported"
    )


def candidates(
    s: ScoreSummary,
    kappa: np.ndarray,
    pav_bounds: bool,
    *,
    fmr: np.ndarray | Sequence[float] = (),
    fnmr: np.ndarray | Sequence[float] = (),
) -> np.ndarray:
    """Every bin of ``s`` to refine next: hull and threshold candidates (and PAV bounds, and
    the bins the fixed-FMR/FNMR operating points need: :func:`fixed_rate_candidates`)."""
    parts = [hull_candidates(s), threshold_candidates(s, kappa)]
    if pav_bounds:
        parts.append(pav_bound_candidates(s))
    if len(fmr) or len(fnmr):
        parts.append(fixed_rate_candidates(s, fmr, fnmr))
    return unique(np.concatenate(parts).astype(np.int64))
