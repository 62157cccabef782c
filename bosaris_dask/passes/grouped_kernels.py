"""Per-chunk kernels of grouped passes: each trial keyed once, counted per (group, key bin).

A grouped pass evaluates several *parts* of one system at once: the pooled trials and, e.g.,
each condition's trials (:class:`Part`). Where the plain kernels
(:mod:`bosaris_dask.passes.kernels`) key and count every trial once per summary, these key a
system's trials once and

- pass 1 (:func:`grouped_pass1_kernel`): count them into one ``(group, bin, class)`` histogram
  and add their exact Cllr terms per ``(group, class)``; a part's counts and sums are then sums
  over its groups, made on the client (the pooled summary is the sum over all groups);
- the ECE's cross-entropy sums per group (:mod:`bosaris_dask.passes.grouped_cross_entropy`);
- refinement (:mod:`bosaris_dask.passes.grouped_refine_kernels`): pick the trials inside the union
  of the parts' candidate bins once, then hand each part its own trials.

The Cllr terms are those of :func:`bosaris_dask.passes.softplus.softplus_sums`, rounded the same way
(:mod:`bosaris_dask.passes.exact_sum`) and added exactly per ``(group, class)`` with a weighted
``bincount``: its partial sums of a block's integer-valued parts stay below ``2**53``, so they
are exact, and every part's total is the same integer as a plain evaluation of its trials.

Examples
--------
>>> import numpy as np
>>> classes = np.array([[1, -1, -1, 1]], dtype=np.int8)
>>> groups = np.array([[0, 0, 1, 1]], dtype=np.int16)
>>> scores, mask = np.array([[2.0, 0.5, -1.0, 3.0]]), np.ones((1, 4), bool)
>>> out = grouped_pass1_kernel(np.arange(1), np.arange(4), classes, groups, scores, mask,
...                            system=0, shift=60, nbins=16, n_groups=2, block=2, slice_size=4)
>>> counts = out[: 2 * 16 * 2].reshape(2, 16, 2)  # (group, bin, non-target/target)
>>> counts.sum(axis=1).tolist()
[[1.0, 1.0], [1.0, 1.0]]
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from bosaris_dask.errors import OptionError
from bosaris_dask.passes import compact, exact_sum, fast_grouped
from bosaris_dask.passes.binmap import BinMap
from bosaris_dask.passes.kernels import SPARSE_BINS, pack_bins
from bosaris_dask.passes.softplus import softplus_terms
from bosaris_dask.passes.workspace import blocked_bincount, classes_of, keys_into, slices, workspace

__all__ = [
    "Part", "pass1_length", "grouped_pass1_kernel", "split_pass1", "check_group_codes",
    "grouped_bins_note",
]  # fmt: skip

#: Flush the per-block int64 sums of integer parts (each below 2**53) to Python ints this often.
_FLUSH = 256


@dataclass(frozen=True)
class Part:
    """The trials of system ``system`` that one summary counts.

    ``tar``: the groups whose targets it counts; ``non``: the groups whose non-targets it
    counts (``None``: every group). ``Part(k, None, None)`` is system ``k`` pooled,
    ``Part(k, (g,), (g,))`` its condition ``g``.
    """

    system: int
    tar: tuple[int, ...] | None = None
    non: tuple[int, ...] | None = None

    @property
    def pooled(self) -> bool:
        """Does it count every trial of its system?"""
        return self.tar is None and self.non is None

    def groups(self, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
        """Boolean ``(n_groups,)`` masks: the groups whose targets / non-targets it counts."""
        out = []
        for which in (self.tar, self.non):
            mask = np.ones(n_groups, dtype=bool)
            if which is not None:
                mask[:] = False
                mask[list(which)] = True
            out.append(mask)
        return out[0], out[1]


def check_group_codes(groups: np.ndarray, n_groups: int) -> None:
    """Raise OptionError unless every group code is in ``[0, n_groups)`` (an out-of-range code
    would count its trials in another group's histogram rows).

    >>> check_group_codes(np.array([[0, 2], [1, 1]]), 3)
    >>> check_group_codes(np.array([[0, 3]]), 3)
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.OptionError: group code 3 outside [0, 3): groups must be 0 .. n_groups - 1
    """
    if groups.size and (int(groups.min()) < 0 or int(groups.max()) >= n_groups):
        bad = int(groups.min()) if int(groups.min()) < 0 else int(groups.max())
        raise OptionError(
            f"group code {bad} outside [0, {n_groups}): groups must be 0 .. n_groups - 1"
        )


def pass1_length(n_groups: int, nbins: int) -> int:
    """The length of one system's grouped pass-1 result (see :func:`grouped_pass1_kernel`)."""
    return 2 * n_groups * nbins + 2 * n_groups * exact_sum.LIMBS + 2 * n_groups + 1


class _GroupUnits:
    """Exact sums, per slot, of non-negative terms rounded as :func:`exact_sum.block_units`."""

    def __init__(self, n_slots: int):
        self.n_slots = n_slots
        self.hi = np.zeros(n_slots, dtype=np.int64)
        self.lo = np.zeros(n_slots, dtype=np.int64)
        self.blocks = 0
        self.units = [0] * n_slots
        self._acc: tuple[np.ndarray, np.ndarray] | None = None

    def add_groups(self, terms: np.ndarray, groups: np.ndarray, c: np.ndarray, kernel: Any) -> None:
        """:meth:`add` of ``terms`` to the slots ``2 * groups + (c > 0)``, with the compiled
        loop of :func:`bosaris_dask.passes.fast_grouped.units_into` (the same sums)."""
        if terms.size == 0:
            return
        if np.maximum.reduce(terms) >= exact_sum._BIG:  # rare: the exact path
            big = np.flatnonzero(terms >= exact_sum._BIG)
            slot = 2 * groups[big].astype(np.intp) + (c[big] > 0)
            for k in np.unique(slot).tolist():
                self.units[k] += exact_sum._exact_units(terms[big[slot == k]])
            terms[big] = 0.0
        if self._acc is None:
            self._acc = (np.empty(self.n_slots), np.empty(self.n_slots))
        acc_hi, acc_lo = self._acc
        fast_grouped.units_into(kernel, terms, groups, c, acc_hi, acc_lo)
        self.hi += acc_hi.astype(np.int64)
        self.lo += acc_lo.astype(np.int64)
        self.blocks += 1
        if self.blocks % _FLUSH == 0:
            self._flush()

    def add_units(self, hi: np.ndarray, lo: np.ndarray) -> None:
        """Add the per-slot sums of a block's whole and fine units (``int64``, each below
        ``2**53``: at most ``MAX_BLOCK`` terms), as
        :func:`bosaris_dask.passes.fast_grouped.sums_into` makes them."""
        self.hi += hi
        self.lo += lo
        self.blocks += 1
        if self.blocks % _FLUSH == 0:
            self._flush()

    def add(self, terms: np.ndarray, slot: np.ndarray, hi: np.ndarray) -> None:
        """Add ``terms`` (overwritten; at most ``MAX_BLOCK``) to their ``slot``; ``hi`` is a
        float64 buffer as long."""
        if terms.size == 0:
            return
        if np.maximum.reduce(terms) >= exact_sum._BIG:  # rare: the exact path
            big = np.flatnonzero(terms >= exact_sum._BIG)
            for k in np.unique(slot[big]).tolist():
                self.units[k] += exact_sum._exact_units(terms[big[slot[big] == k]])
            terms[big] = 0.0
        exact_sum.split_units(terms, hi)
        # sums of at most 2**16 integers below 2**37: below 2**53, exact in any order
        self.hi += np.bincount(slot, weights=hi, minlength=self.n_slots).astype(np.int64)
        self.lo += np.bincount(slot, weights=terms, minlength=self.n_slots).astype(np.int64)
        self.blocks += 1
        if self.blocks % _FLUSH == 0:
            self._flush()

    def _flush(self) -> None:
        for k, (h, lo) in enumerate(zip(self.hi.tolist(), self.lo.tolist(), strict=True)):
            self.units[k] += (h << exact_sum._LO_BITS) + lo
        self.hi[:] = 0
        self.lo[:] = 0

    def total(self) -> list[int]:
        """The exact sum of each slot, in units of ``2**-GRID_BITS``."""
        self._flush()
        return self.units


def grouped_pass1_kernel(
    rows: np.ndarray,
    cols: np.ndarray,
    classes: np.ndarray,
    groups: np.ndarray,
    *pairs: np.ndarray,
    system: int,
    shift: int,
    nbins: int,
    n_groups: int,
    block: int,
    slice_size: int,
    pooled_shift: int | None = None,
    pooled_nbins: int = 0,
    binmap: BinMap | None = None,
    pooled_binmap: BinMap | None = None,
    compiled: bool = False,
    encoded: bool = False,
) -> np.ndarray | compact.Encoded:
    """Pass 1 of one system on one chunk, per group: its scores are ``pairs[2 * system]``.

    ``groups`` holds each cell's group (``0 <= group < n_groups``). The bins are ``key >>
    shift`` or, if given, ``binmap``'s (``nbins`` of them); the pooled bins apart ``key >>
    pooled_shift`` or ``pooled_binmap``'s (``pooled_nbins``). Returns
    :func:`pass1_length` float64 values: the ``(n_groups, nbins, 2)`` counts (non-targets,
    targets), then per group the targets' and the non-targets' softplus sums as
    :mod:`~bosaris_dask.passes.exact_sum` limbs, then per group the key non-target and target trials
    without a score, then the trials with non-finite scores. All merge by adding. With
    ``pooled_shift``, then the pooled counts by ``key >> pooled_shift`` (``pooled_nbins``
    non-target counts, then as many target counts: the layout of
    :func:`bosaris_dask.passes.kernels.system_kernel`'s), from the same keys. ``compiled``: count
    the trials and add the Cllr units per group with the loops of
    :mod:`~bosaris_dask.passes.fast_grouped` where numba is installed (the same result).
    ``encoded``: return the result as :func:`bosaris_dask.passes.compact.encode` encodes it (the
    compiled loops' integer counts encoded as they are,
    :func:`~bosaris_dask.passes.compact.encode_counts`: no float64 vector of millions of counts made
    and checked).
    """
    check_group_codes(groups, n_groups)
    counter = fast_grouped.count_kernel() if compiled else None
    adder = fast_grouped.units_kernel() if counter is not None else None
    if counter is not None and adder is not None:
        return _compiled_pass1(
            counter, adder, classes.reshape(-1), groups.reshape(-1),
            pairs[2 * system].reshape(-1), pairs[2 * system + 1].reshape(-1), shift=shift,
            nbins=nbins, n_groups=n_groups, block=block, slice_size=slice_size,
            pooled_shift=pooled_shift, pooled_nbins=pooled_nbins, binmap=binmap,
            pooled_binmap=pooled_binmap, encoded=encoded,
        )  # fmt: skip
    s_all, m_all = pairs[2 * system].reshape(-1), pairs[2 * system + 1].reshape(-1)
    cls_all, grp_all = classes.reshape(-1), groups.reshape(-1)
    ws = workspace(np.dtype(s_all.dtype), block, slice_size)
    sums = _GroupUnits(2 * n_groups)
    counts = {"bad": 0}
    missing = np.zeros(2 * n_groups, dtype=np.int64)  # slot 2g: group g's non-targets, 2g + 1
    outside = 2 * n_groups * nbins
    signed = np.dtype(ws.key.dtype.str.replace("u", "i"))

    def fill(b: slice, idx: np.ndarray) -> None:
        s, key_cls, scored, g = s_all[b], cls_all[b], m_all[b], grp_all[b]
        n = s.size
        c = key_cls if scored.all() else classes_of(key_cls, scored)
        if c is not key_cls:
            gone = np.flatnonzero((key_cls != 0) & ~scored)
            if gone.size:
                slots = 2 * g[gone].astype(np.intp) + (key_cls[gone] > 0)
                missing[:] += np.bincount(slots, minlength=2 * n_groups)
        finite = np.isfinite(s, out=ws.flag[:n])
        if not finite.all():
            counts["bad"] += int(np.count_nonzero(~finite & (c != 0)))
            s = np.where(finite, s, s.dtype.type(0))
        key = keys_into(s, ws)
        is_tar = np.greater(c, 0, out=ws.flag[:n])
        if pooled_shift is not None:
            pidx = pooled[b.start - pooled_start[0] : b.stop - pooled_start[0]]
            if pooled_binmap is None:
                np.right_shift(key, pooled_shift, out=pidx, casting="unsafe")
            else:
                pooled_binmap.bins_into(key, pidx, ws.pos[:n], ws.signs[:n])
            np.left_shift(pidx, 1, out=pidx)
            np.add(pidx, is_tar, out=pidx, casting="unsafe")
            if np.count_nonzero(c) != n:
                pidx[c == 0] = 2 * pooled_nbins
        if binmap is None:
            np.right_shift(key, shift, out=key)
            np.copyto(idx, g, casting="unsafe")
            np.multiply(idx, nbins, out=idx)
            np.add(idx, key.view(signed), out=idx, casting="unsafe")
        else:
            binmap.bins_into(key, idx, ws.pos[:n], ws.signs[:n])
            row = ws.pos[:n]
            np.copyto(row, g, casting="unsafe")
            np.multiply(row, nbins, out=row)
            np.add(idx, row, out=idx)
        np.left_shift(idx, 1, out=idx)
        np.add(idx, is_tar, out=idx, casting="unsafe")
        slot = ws.pos[:n]
        np.copyto(slot, g, casting="unsafe")
        np.left_shift(slot, 1, out=slot)
        np.add(slot, is_tar, out=slot, casting="unsafe")
        all_trials = np.count_nonzero(c) == n
        if not all_trials:
            idx[c == 0] = outside  # the last bin collects non-trials
        terms = softplus_terms(c, s, ws, all_trials)
        sums.add(terms, slot, ws.e[:n])

    sparse = encoded and s_all.size * SPARSE_BINS <= nbins  # few trials: np.unique counts
    pooled_hist = np.zeros(2 * pooled_nbins + 1 if not sparse else 0, dtype=np.int64)
    along = s_all.size if sparse else min(s_all.size, ws.slice_size)
    pooled = _pooled_buffer(along if pooled_shift is not None else 0)
    pooled_start = [0]
    if sparse:
        return _sparse_pass1(fill, pooled, s_all.size, ws.block, sums, missing, counts, n_groups,
                             nbins, pooled_nbins if pooled_shift is not None else 0)  # fmt: skip

    def fill_both(b: slice, idx: np.ndarray) -> None:
        if pooled_shift is not None and b.start % ws.slice_size == 0:  # a new slice
            if b.start:
                pooled_hist[:] += np.bincount(pooled, minlength=2 * pooled_nbins + 1)
            pooled_start[0] = b.start
            pooled[:] = 2 * pooled_nbins  # past the end: the slice may be shorter
        fill(b, idx)

    h = blocked_bincount(s_all.size, outside + 1, ws, fill_both)[:-1]
    units = sums.total()  # slot 2g: group g's non-targets, 2g + 1: its targets
    limbs = [exact_sum.to_limbs(units[2 * g + t]) for g in range(n_groups) for t in (1, 0)]
    tail = []
    if pooled_shift is not None:
        pooled_hist += np.bincount(pooled, minlength=2 * pooled_nbins + 1)
        ph = pooled_hist[:-1].reshape(pooled_nbins, 2)
        tail = [ph[:, 0], ph[:, 1]]
    row = np.concatenate([h, *limbs, missing, [counts["bad"]], *tail])
    return compact.encode(row) if encoded else row


def _sparse_pass1(
    fill: Callable[[slice, np.ndarray], None],
    pooled: np.ndarray,
    n: int,
    block: int,
    sums: _GroupUnits,
    missing: np.ndarray,
    counts: dict[str, int],
    n_groups: int,
    nbins: int,
    pooled_nbins: int,
) -> compact.Encoded:
    """:func:`grouped_pass1_kernel`'s encoded result for a chunk of ``n`` trials, few for its
    bins: ``fill`` writes every trial's index (and its pooled one into ``pooled``), whose
    distinct values ``np.unique`` counts, without histograms of millions of bins."""
    outside = 2 * n_groups * nbins
    idx = np.empty(n, dtype=np.intp)
    pooled[:] = 2 * pooled_nbins
    for b in slices(n, block):
        fill(b, idx[b])
    at, values = np.unique(idx, return_counts=True)
    at, values = at[at < outside], values[at < outside]  # trials only, at their bins
    units = sums.total()  # slot 2g: group g's non-targets, 2g + 1: its targets
    limbs = [exact_sum.to_limbs(units[2 * g + t]) for g in range(n_groups) for t in (1, 0)]
    tail = np.concatenate([*limbs, missing, [counts["bad"]]])
    parts_at = [at, outside + np.arange(tail.size)]
    parts_values = [values.astype(np.float64), tail]
    if pooled_nbins:  # after the tail: non-target counts, then target counts
        p_at, p_values = np.unique(pooled, return_counts=True)
        p_at, p_values = p_at[p_at < 2 * pooled_nbins], p_values[p_at < 2 * pooled_nbins]
        parts_at.append(outside + tail.size + (p_at >> 1) + (p_at & 1) * pooled_nbins)
        parts_values.append(p_values.astype(np.float64))
    length = outside + tail.size + 2 * pooled_nbins
    return compact.encode_sparse(length, np.concatenate(parts_at), np.concatenate(parts_values))


def _compiled_pass1(
    counter: Any,
    adder: Any,
    cls_all: np.ndarray,
    grp_all: np.ndarray,
    s_all: np.ndarray,
    m_all: np.ndarray,
    *,
    shift: int,
    nbins: int,
    n_groups: int,
    block: int,
    slice_size: int,
    pooled_shift: int | None,
    pooled_nbins: int,
    binmap: BinMap | None,
    pooled_binmap: BinMap | None,
    encoded: bool = False,
) -> np.ndarray | compact.Encoded:
    """:func:`grouped_pass1_kernel` (the same result) with the compiled loops of
    :mod:`~bosaris_dask.passes.fast_grouped`: they count, and add the Cllr units per group from
    the plain pass 1's terms (numpy's ``exp`` and ``log1p``); a block with a term of
    ``2**17`` or more takes :func:`~bosaris_dask.passes.softplus.softplus_terms` and the exact
    path."""
    ws = workspace(np.dtype(s_all.dtype), block, slice_size)
    width = ws.key.dtype.itemsize * 8
    # uint32 counts below 2**32 trials per chunk; the targets in the upper half of each
    dt = np.uint32 if s_all.size < 2**32 else np.int64
    hist = np.zeros(2 * n_groups * nbins + 1, dtype=dt)
    bm = binmap if binmap is not None else BinMap.uniform(width, width - shift)
    pooled = pbm = None
    if pooled_shift is not None:
        pooled = np.zeros(2 * pooled_nbins + 1, dtype=dt)
        pbm = pooled_binmap or BinMap.uniform(width, width - pooled_shift)
    missing = np.zeros(2 * n_groups, dtype=np.int64)
    bad, unscored, nonfinite = fast_grouped.counts_into(
        counter, cls_all, s_all, m_all, grp_all, bm, hist, missing, pbm, pooled
    )
    sums = _GroupUnits(2 * n_groups)
    summer = fast_grouped.sums_kernel()
    acc = np.zeros((2, 2 * n_groups), dtype=np.int64)
    bufs = (np.empty(fast_grouped.SUMS_RUN, np.int64), np.empty(fast_grouped.SUMS_RUN, np.int64))
    for b in slices(s_all.size, ws.block):
        s, key_cls = s_all[b], cls_all[b]
        c = key_cls if not unscored or m_all[b].all() else classes_of(key_cls, m_all[b])
        acc[:] = 0
        if summer is not None and not fast_grouped.sums_into(
            summer, c, s, grp_all[b], ws.e[: s.size], acc, bufs
        ):
            sums.add_units(acc[0], acc[1])
            continue
        # numba missing, or a term of 2**17 or more in this block (rare): numpy's terms
        if nonfinite and not np.isfinite(s, out=ws.flag[: s.size]).all():
            s = np.where(ws.flag[: s.size], s, s.dtype.type(0))
        terms = softplus_terms(c, s, ws, np.count_nonzero(c) == s.size)
        sums.add_groups(terms, grp_all[b], c, adder)
    units = sums.total()  # slot 2g: group g's non-targets, 2g + 1: its targets
    limbs = [exact_sum.to_limbs(units[2 * g + t]) for g in range(n_groups) for t in (1, 0)]
    tail = [] if pooled is None else [pooled[:pooled_nbins], pooled[pooled_nbins:-1]]
    if encoded:  # all non-negative integers: limbs below 2**32, missing and bad trials below
        # the chunk's cells (so below 2**32 where the counts are uint32)
        small = np.concatenate([*limbs, missing, [bad]]).astype(dt)
        row = np.empty(hist.size - 1 + small.size + sum(x.size for x in tail), dtype=dt)
        half = (hist.size - 1) // 2  # (group, bin, class) written in place: one copy
        counts = row[: 2 * half].reshape(half, 2)
        counts[:, 0], counts[:, 1] = hist[:half], hist[half:-1]
        np.concatenate([small, *tail], out=row[2 * half :])
        return compact.encode_counts(row)
    h = hist[:-1].reshape(2, -1).T.reshape(-1)  # (group, bin, class), as the numpy path
    return np.concatenate([h, *limbs, missing, [bad], *tail])


_buffers = threading.local()


def _pooled_buffer(n: int) -> np.ndarray:
    """This thread's index buffer of ``n`` elements for a pooled histogram (kept between
    calls: a fresh one per chunk costs page faults that serialize threads)."""
    buf = getattr(_buffers, "pooled", None)
    if buf is None or buf.size < n:
        buf = _buffers.pooled = np.empty(n, dtype=np.intp)
    return buf[:n]


def grouped_bins_note(
    contribution: np.ndarray | compact.Encoded,
    rows: np.ndarray,
    cols: np.ndarray,
    *blocks: Any,
    n_groups: int,
    nbins: int,
    coarse: int,
    pooled_nbins: int = 0,
    pooled_coarse: int = 0,
) -> tuple[tuple[int, int, np.ndarray], tuple[int, int, np.ndarray] | None]:
    """Which key bins a chunk's trials of one system fall in (any group), from its
    :func:`grouped_pass1_kernel` ``contribution``, as :func:`bosaris_dask.passes.kernels.bins_note`
    notes them; and the same for the pooled histogram apart (``None`` without one)."""
    first = (int(rows[0]) if len(rows) else 0), (int(cols[0]) if len(cols) else 0)
    if isinstance(contribution, compact.Encoded):  # sparse: the bins of its counts
        at = contribution.positions
        held = np.zeros(nbins, dtype=bool)
        held[(at[at < 2 * n_groups * nbins] >> 1) % nbins] = True
        note = (*first, pack_bins(held, coarse))
        if not pooled_nbins:
            return note, None
        start = contribution.length - 2 * pooled_nbins
        pooled = np.zeros(pooled_nbins, dtype=bool)
        pooled[(at[at >= start] - start) % pooled_nbins] = True
        return note, (*first, pack_bins(pooled, pooled_coarse))
    # a bin is held if any group's count of either class is non-zero (counts are never
    # negative): any() over rows, 16x faster than a sum over two axes at 24 x 2**16 bins
    counts = contribution[: 2 * n_groups * nbins].reshape(n_groups, -1)
    note = (*first, pack_bins(counts.any(axis=0).reshape(nbins, 2).any(axis=1), coarse))
    if not pooled_nbins:
        return note, None
    pooled = contribution[len(contribution) - 2 * pooled_nbins :].reshape(2, -1).any(axis=0)
    return note, (*first, pack_bins(pooled, pooled_coarse))


def split_pass1(
    row: np.ndarray, n_groups: int, nbins: int
) -> tuple[np.ndarray, list[list[int]], np.ndarray, int]:
    """A merged :func:`grouped_pass1_kernel` result: ``(n_groups, nbins, 2)`` int64 counts,
    per group ``[target, non-target]`` softplus units, the ``(n_groups, 2)`` missing trials
    (non-targets, targets) and the non-finite trials."""
    ncounts = 2 * n_groups * nbins
    nlimbs = ncounts + 2 * n_groups * exact_sum.LIMBS
    counts = np.rint(row[:ncounts]).astype(np.int64).reshape(n_groups, nbins, 2)
    limbs = row[ncounts:nlimbs].reshape(n_groups, 2, exact_sum.LIMBS)
    units = exact_sum.from_limbs_array(limbs).tolist()
    missing = np.rint(row[nlimbs:-1]).astype(np.int64).reshape(n_groups, 2)
    return counts, units, missing, int(row[-1])
