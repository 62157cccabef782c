"""Per-chunk kernels of the refinement passes: the trials of a chunk inside candidate bins.

After pass 1 (:mod:`bosaris_dask.passes.kernels`) the client chooses candidate bins
(:mod:`bosaris_dask.passes.refinement`) and describes them to the chunks in a :class:`RefineSpec`. A
refinement pass then sub-histograms the candidate bins on the next key bits, or pulls the exact
keys in them (:func:`refine_system_kernel`); or it selects those trials once
(:func:`select_kernel`) so that later rounds run on the kept trials alone
(:func:`refine_kept_kernel`). The building blocks (:func:`select_trials`,
:func:`within_candidates`, :func:`count_selected`, :func:`sub_histogram`) serve the grouped
kernels of :mod:`bosaris_dask.passes.grouped_kernels` too.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from bosaris_dask.passes import fast_select
from bosaris_dask.passes.binmap import BinMap
from bosaris_dask.passes.kernels import object_block
from bosaris_dask.passes.keys import key_dtype
from bosaris_dask.passes.workspace import (
    Workspace,
    blocked_bincount,
    classes_of,
    keys_into,
    slices,
    workspace,
)

__all__ = [
    "RefineSpec",
    "select_trials",
    "select_block",
    "within_candidates",
    "count_selected",
    "sub_histogram",
    "refine_system_kernel",
    "select_kernel",
    "refine_kept_kernel",
    "narrow_counts",
    "merge_system_refinements",
    "merge_refinements",
]


@dataclass(frozen=True)
class RefineSpec:
    """What one refinement pass does for one system.

    Only the candidates travel in the task graph; the lookup tables by key prefix (megabytes at
    20 prefix bits) are built where the kernel runs. Pass 1's bins are ``key >> shift`` (into
    ``2**prefix_bits`` bins), or ``binmap``'s when given (:mod:`bosaris_dask.passes.binmap`).
    """

    shift: int  # pass 1 binned keys by ``key >> shift``
    prefix_bits: int  # ... into ``2**prefix_bits`` bins
    cand_lo: np.ndarray  # uint64, ascending
    cand_bits: np.ndarray  # width bits of each candidate
    sub_bits: np.ndarray  # sub-bins per candidate = 2**sub_bits (dense mode)
    raw: bool  # pull exact keys instead of a dense sub-histogram
    binmap: BinMap | None = None  # pass 1's bins, when not ``key >> shift``

    @cached_property
    def nbins(self) -> int:
        """The number of pass-1 bins."""
        return 1 << self.prefix_bits if self.binmap is None else self.binmap.nbins

    def bin_of(self, keys: np.ndarray) -> np.ndarray:
        """The pass-1 bin (``intp``) of each key."""
        if self.binmap is None:
            return (keys >> keys.dtype.type(self.shift)).astype(np.intp)
        return self.binmap.bin_of(keys)

    @cached_property
    def prefixes(self) -> np.ndarray:
        """The pass-1 bin of each candidate."""
        return self.bin_of(self.cand_lo)

    @cached_property
    def lut(self) -> np.ndarray:
        """bool per pass-1 bin: does it hold a candidate?"""
        lut = np.zeros(self.nbins, dtype=bool)
        lut[self.prefixes] = True
        return lut

    @cached_property
    def packed_lut(self) -> np.ndarray:
        """:attr:`lut` as the compiled selection reads it
        (:func:`bosaris_dask.passes.fast_select.bin_tables`: bits, an eighth of the cache lines)."""
        (packed,) = fast_select.bin_tables(self.lut)
        return packed

    @cached_property
    def bucket_lut(self) -> np.ndarray:
        """bool per bucket of an adaptive ``binmap``: does it hold a candidate?"""
        assert self.binmap is not None
        lut = np.zeros(1 << self.binmap.top, dtype=bool)
        lut[(self.cand_lo >> np.uint64(self.binmap.key_bits - self.binmap.top)).astype(np.intp)] = 1
        return lut

    @cached_property
    def rank(self) -> np.ndarray | None:
        """The candidate index per pass-1 bin, when every candidate is a whole pass-1 bin."""
        if self.binmap is None:
            whole = np.all(self.cand_bits == self.shift)
        else:
            whole = np.all(self.cand_bits == self.binmap.bits_of_bins(self.prefixes))
        if not whole:
            return None
        rank = np.full(self.nbins, -1, dtype=np.intp)
        rank[self.prefixes] = np.arange(len(self.cand_lo), dtype=np.intp)
        return rank

    @cached_property
    def whole_bins_split_evenly(self) -> bool:
        """Dense, every candidate a whole pass-1 bin, all split into as many sub-bins."""
        return (
            not self.raw
            and self.rank is not None
            and bool(np.all(self.sub_bits == self.sub_bits[0]))
        )

    @cached_property
    def offsets(self) -> np.ndarray:
        """Where each candidate's sub-bins start in a dense result."""
        return np.concatenate([[0], np.cumsum(np.left_shift(1, self.sub_bits.astype(np.int64)))])


def select_trials(
    cls_flat: np.ndarray,
    s_flat: np.ndarray,
    m_flat: np.ndarray,
    spec: RefineSpec,
    ws: Workspace,
    compiled: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The keys (native key dtype) and target flags of a chunk's trials inside the candidates.

    ``compiled``: select with :mod:`~bosaris_dask.passes.fast_select` where numba is installed (the
    same trials, in the same order)."""
    loop = fast_select.select_loop() if compiled else None
    picked_keys, picked_tar = [], []
    for b in slices(s_flat.size, ws.block):
        if loop is not None:
            n = b.stop - b.start
            keys, is_tar = ws.key[:n], ws.flag[:n]
            got = fast_select.select_into(loop, cls_flat[b], s_flat[b], m_flat[b], spec, keys,
                                          is_tar)  # fmt: skip
            if not got:
                continue
            keys, is_tar = keys[:got].copy(), is_tar[:got].copy()
        else:
            picked = select_block(cls_flat[b], s_flat[b], m_flat[b], spec, ws)
            if picked is None:
                continue
            keys, is_tar = picked
        if spec.rank is None:  # candidates narrower than a pass-1 bin: test each one
            keys, is_tar = within_candidates(keys, is_tar, spec)
        picked_keys.append(keys)
        picked_tar.append(is_tar)
    if not picked_keys:
        return np.empty(0, dtype=key_dtype(s_flat.dtype)), np.empty(0, dtype=bool)
    return np.concatenate(picked_keys), np.concatenate(picked_tar)


def select_block(
    key_cls: np.ndarray, s: np.ndarray, scored: np.ndarray, spec: RefineSpec, ws: Workspace
) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`select_trials` of one block in numpy: the keys and target flags of its trials in
    candidate pass-1 bins, or ``None`` if there are none."""
    # pass 1 rejected non-finite trial scores; non-trials are dropped by the class test
    c = key_cls if scored.all() else classes_of(key_cls, scored)
    n = c.size
    keys = keys_into(s, ws)
    binmap = spec.binmap
    if binmap is None:
        prefix = np.right_shift(keys, spec.shift, out=ws.idx[:n], casting="unsafe")
    else:  # first the buckets holding a candidate: the full look-up for their keys only
        top = keys.dtype.type(binmap.key_bits - binmap.top)
        prefix = np.right_shift(keys, top, out=ws.idx[:n], casting="unsafe")
    sel = np.take(spec.lut if binmap is None else spec.bucket_lut, prefix, out=ws.flag[:n])
    np.logical_and(sel, np.not_equal(c, 0, out=ws.flag2[:n]), out=sel)
    at = np.flatnonzero(sel)  # then take: 6x faster than two boolean-mask indexings
    if binmap is not None and len(at):
        at = at[spec.lut.take(binmap.bin_of(keys.take(at)))]
    if not len(at):
        return None
    return keys.take(at), c.take(at) == 1


def within_candidates(
    keys: np.ndarray, is_tar: np.ndarray, spec: RefineSpec
) -> tuple[np.ndarray, np.ndarray]:
    """The trials of a selection that lie inside ``spec``'s candidate bins."""
    near = np.flatnonzero(spec.lut.take(spec.bin_of(keys)))
    keys, is_tar = keys.take(near), is_tar.take(near)
    if spec.rank is not None:  # whole pass-1 bins: the prefix decides
        return keys, is_tar
    k = keys.astype(np.uint64)
    ci = np.maximum(np.searchsorted(spec.cand_lo, k, side="right") - 1, 0)
    inside = (k >= spec.cand_lo[ci]) & (
        ((k - spec.cand_lo[ci]) >> spec.cand_bits[ci].astype(np.uint64)) == 0
    )
    at = np.flatnonzero(inside)
    return keys.take(at), is_tar.take(at)


def count_selected(keys: np.ndarray, is_tar: np.ndarray, spec: RefineSpec) -> Any:
    """A refinement result: exact ``(keys, counts)`` if ``spec.raw``, else sub-bin counts."""
    keys = keys.astype(np.uint64)
    if spec.raw:
        uniq, inverse = np.unique(keys, return_inverse=True)
        counts = np.bincount(inverse * 2 + is_tar, minlength=2 * len(uniq)).reshape(-1, 2)
        return uniq, counts
    if spec.rank is not None:
        ci = spec.rank[spec.bin_of(keys)]
    else:
        ci = np.searchsorted(spec.cand_lo, keys, side="right") - 1
    drop = (spec.cand_bits[ci] - spec.sub_bits[ci]).astype(np.uint64)
    idx = spec.offsets[ci] + ((keys - spec.cand_lo[ci]) >> drop).astype(np.int64)
    return np.bincount(idx * 2 + is_tar, minlength=2 * spec.offsets[-1])


def sub_histogram(
    cls_flat: np.ndarray, s_flat: np.ndarray, m_flat: np.ndarray, spec: RefineSpec, ws: Workspace
) -> np.ndarray:
    """:func:`count_selected` of :func:`select_trials` for whole pass-1 bins split evenly, in
    one sweep.

    The sub-bin of a key is ``rank[bin] * 2**sub + (key >> drop) % 2**sub`` (``drop``: the
    bin's width in bits less ``sub``; ``bin = key >> shift`` for a uniform map): a few
    cheap operations on cache-sized blocks and one ``bincount`` per slice, with no selected
    keys gathered in between (at 1e9 trials over half of them fall in candidate bins).
    """
    rank = spec.rank
    if rank is None or not spec.whole_bins_split_evenly:
        raise ValueError("sub_histogram needs whole pass-1 bins split evenly")
    kdt = ws.key.dtype.type
    sub = int(spec.sub_bits[0])
    binmap = spec.binmap
    drop = kdt(spec.shift - sub) if binmap is None else None
    mask = kdt((1 << sub) - 1)
    outside = 2 * int(spec.offsets[-1])  # one extra bin for trials outside every candidate

    def fill(b: slice, idx: np.ndarray) -> None:
        c = cls_flat[b] if m_flat[b].all() else classes_of(cls_flat[b], m_flat[b])
        n = c.size
        keys = keys_into(s_flat[b], ws)
        if binmap is None:
            prefix = np.right_shift(keys, spec.shift, out=ws.pos[:n], casting="unsafe")
            shift = drop
        else:  # each key's own bin width, less the sub-bits (wraps outside candidates)
            shift = ws.signs[:n]
            prefix = binmap.bins_into(keys, ws.pos[:n], ws.z.view(np.intp)[:n], shift)
            np.subtract(shift, kdt(sub), out=shift)
        np.take(rank, prefix, out=idx)  # the candidate, or -1
        drop_it = np.less(idx, 0, out=ws.flag[:n])
        np.logical_or(drop_it, np.equal(c, 0, out=ws.flag2[:n]), out=drop_it)
        np.left_shift(idx, sub + 1, out=idx)
        np.right_shift(keys, shift, out=keys)
        np.bitwise_and(keys, mask, out=keys)
        np.left_shift(keys, 1, out=keys)
        np.add(idx, keys, out=idx, casting="unsafe")
        np.add(idx, np.greater(c, 0, out=ws.flag2[:n]), out=idx, casting="unsafe")
        np.copyto(idx, outside, where=drop_it)

    return blocked_bincount(s_flat.size, outside + 1, ws, fill)[:-1]


def refine_system_kernel(
    classes: np.ndarray,
    *pairs: np.ndarray,
    system: int,
    spec: RefineSpec,
    block: int,
    slice_size: int,
    compiled: bool = False,
) -> Any:
    """A refinement pass on one chunk for one system: a dense sub-histogram of its candidate
    bins, or the exact keys in them with their counts (``spec.raw``). ``compiled``: select the
    trials with :mod:`~bosaris_dask.passes.fast_select` where numba is installed (the same
    result)."""
    s, m = pairs[2 * system].reshape(-1), pairs[2 * system + 1].reshape(-1)
    ws = workspace(np.dtype(s.dtype), block, slice_size)
    cls_flat = classes.reshape(-1)
    if spec.whole_bins_split_evenly:
        return narrow_counts(sub_histogram(cls_flat, s, m, spec, ws), s.size)
    picked = select_trials(cls_flat, s, m, spec, ws, compiled)
    return narrow_counts(count_selected(*picked, spec), s.size)


def select_kernel(
    classes: np.ndarray,
    *pairs: np.ndarray,
    specs: tuple[RefineSpec | None, ...],
    block: int,
    slice_size: int,
    compiled: bool = False,
) -> np.ndarray:
    """Keep a chunk's candidate trials: per system, their keys and target flags (or None).

    The later refinement passes then run on these (:func:`refine_kept_kernel`) instead of
    reading and keying every trial again. ``compiled``: select them with
    :mod:`~bosaris_dask.passes.fast_select` where numba is installed (the same trials, in order).
    """
    cls_flat = classes.reshape(-1)
    kept = [
        None
        if spec is None
        else select_trials(
            cls_flat,
            s.reshape(-1),
            m.reshape(-1),
            spec,
            workspace(s.dtype, block, slice_size),
            compiled,
        )  # fmt: skip
        for spec, s, m in zip(specs, pairs[::2], pairs[1::2], strict=True)
    ]
    return object_block(kept)


def refine_kept_kernel(
    selection: np.ndarray, *, system: int, spec: RefineSpec, kept_spec: RefineSpec | None
) -> Any:
    """:func:`refine_system_kernel` on the trials :func:`select_kernel` kept of one chunk.

    ``kept_spec`` is the spec the system's trials were selected with: refining with the same
    spec needs no filtering.
    """
    keys, is_tar = selection[0, 0][system]
    if spec is not kept_spec:
        keys, is_tar = within_candidates(keys, is_tar, spec)
    return narrow_counts(count_selected(keys, is_tar, spec), len(keys))


def narrow_counts(result: Any, trials: int) -> Any:
    """A chunk's dense refinement counts as ``uint32`` when the chunk has fewer than ``2**32``
    trials (half the bytes to send to a merge task, which widens them back to int64).

    >>> narrow_counts(np.array([3, 0, 5]), 8).dtype
    dtype('uint32')
    """
    if isinstance(result, np.ndarray) and trials < 2**32:
        return result.astype(np.uint32)
    return result


def merge_system_refinements(results: list[Any]) -> Any:
    """Combine one system's refinement results of several chunks (:func:`merge_refinements`)."""
    return merge_refinements([[r] for r in results])[0]


def merge_refinements(parts: list[list[Any]]) -> list[Any]:
    """Combine per-chunk refinement results: add dense histograms, merge exact key counts."""
    merged: list[Any] = []
    for per_system in zip(*parts, strict=True):
        first = per_system[0]
        if first is None:
            merged.append(None)
        elif isinstance(first, tuple):
            keys = np.concatenate([p[0] for p in per_system])
            counts = np.concatenate([p[1] for p in per_system])
            uniq, inverse = np.unique(keys, return_inverse=True)
            total = np.zeros((len(uniq), 2), dtype=np.int64)
            np.add.at(total, inverse, counts)
            merged.append((uniq, total))
        else:  # add in place: stacking the parts would double a merge task's memory
            total = first.astype(np.int64)  # a copy; chunks send uint32 (narrow_counts)
            for part in per_system[1:]:
                total += part
            merged.append(total)
    return merged
