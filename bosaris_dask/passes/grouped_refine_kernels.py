"""Per-chunk kernels of grouped refinement passes: the trials of several parts, picked once.

A grouped refinement pass (:func:`grouped_refine_kernel`, :func:`grouped_select_kernel`) picks
the trials of a system inside the union of its parts' candidate bins once, then hands each part
(:class:`~bosaris_dask.passes.grouped_kernels.Part`: the pooled trials or a condition's) its own
trials, so a part's result is exactly what
:func:`~bosaris_dask.passes.refine_kernels.refine_system_kernel` (or
:func:`~bosaris_dask.passes.refine_kernels.select_kernel`) gives for that part's trials alone. Pass
1's grouped kernels are in :mod:`bosaris_dask.passes.grouped_kernels`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bosaris_dask.passes import fast_select
from bosaris_dask.passes.grouped_kernels import Part
from bosaris_dask.passes.kernels import object_block
from bosaris_dask.passes.keys import key_dtype
from bosaris_dask.passes.refine_kernels import (
    RefineSpec,
    count_selected,
    sub_histogram,
    within_candidates,
)
from bosaris_dask.passes.workspace import Workspace, classes_of, keys_into, slices, workspace

__all__ = [
    "grouped_refine_kernel", "grouped_select_kernel", "count_part", "refine_kept_part",
    "merge_parts", "merge_part_refinements",
]  # fmt: skip


def _part_trials(
    part: Part,
    n_groups: int,
    keys: np.ndarray,
    is_tar: np.ndarray,
    starts: np.ndarray | None,
    order: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The trials of ``part`` among selected trials (sorted by group: ``order``, ``starts``)."""
    if part.pooled:
        return keys, is_tar
    assert order is not None and starts is not None
    tar, non = part.groups(n_groups)
    pieces_k, pieces_t = [], []
    for g in np.flatnonzero(tar | non).tolist():
        at = order[starts[g] : starts[g + 1]]
        if not len(at):
            continue
        k, t = keys.take(at), is_tar.take(at)
        if not (tar[g] and non[g]):
            keep = np.flatnonzero(t if tar[g] else ~t)
            k, t = k.take(keep), t.take(keep)
        pieces_k.append(k)
        pieces_t.append(t)
    if not pieces_k:
        return keys[:0], is_tar[:0]
    return np.concatenate(pieces_k), np.concatenate(pieces_t)


def _gather(
    got: list[list[np.ndarray]],
    at: np.ndarray,
    keys: np.ndarray,
    c: np.ndarray,
    g: np.ndarray | None,
) -> None:
    """Append the keys, target flags (and groups) of the trials at positions ``at`` (take:
    6x faster than boolean-mask indexing)."""
    if not len(at):
        return
    got[0].append(keys.take(at))
    got[1].append(c.take(at) == 1)
    if g is not None:
        got[2].append(g.take(at))


def _pass1_bins(keys: np.ndarray, spec: RefineSpec, ws: Workspace) -> np.ndarray:
    """The pass-1 bin of each key (``keys`` in ``ws.key``), into ``ws.idx``."""
    n = keys.size
    if spec.binmap is None:
        return np.right_shift(keys, spec.shift, out=ws.idx[:n], casting="unsafe")
    return spec.binmap.bins_into(keys, ws.idx[:n], ws.z.view(np.intp)[:n], ws.signs[:n])


#: The key bits of the buckets that prefilter the trials of a refinement pass (adaptive maps).
_PREFILTER_BITS = 16


def _prefilter_buckets(cand_lo: np.ndarray, cand_bits: np.ndarray, width: int) -> np.ndarray:
    """The top-:data:`_PREFILTER_BITS`-bit buckets of ``width``-bit keys that overlap a
    candidate (``[lo, lo + 2**bits)``; a candidate wider than a bucket covers several): a
    trial outside them is in no candidate.

    >>> lo, bits = np.array([0, 1 << 20], np.uint64), np.array([17, 4])
    >>> _prefilter_buckets(lo, bits, 32).tolist()  # 2**17 keys from 0 (two buckets), 16 more
    [0, 1, 16]
    """
    first = (cand_lo >> np.uint64(width - _PREFILTER_BITS)).astype(np.int64)
    n = np.int64(1) << np.maximum(cand_bits.astype(np.int64) - (width - _PREFILTER_BITS), 0)
    start = np.repeat(first - np.concatenate([[0], np.cumsum(n)[:-1]]), n)
    return np.unique(start + np.arange(int(n.sum()), dtype=np.int64)).astype(np.intp)


def _select_parts(
    classes: np.ndarray,
    groups: np.ndarray,
    s: np.ndarray,
    m: np.ndarray,
    specs: Sequence[RefineSpec | None],
    parts: Sequence[Part],
    n_groups: int,
    ws: Workspace,
    compiled: bool = False,
) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """Per part, the keys (native key dtype) and target flags of its chunk trials inside its
    spec's candidate bins (what :func:`~bosaris_dask.passes.refine_kernels.select_trials` gives for
    the part's trials alone), or None where its spec is None.

    Each trial is keyed once. The pooled parts' trials are picked by their candidates' pass-1
    bins; the other parts' by a ``(group, pass-1 bin)`` table of their candidates, so only
    trials of a condition inside that condition's candidates are gathered, then sorted by
    group and handed to each part. ``compiled``: pick them with the loop of
    :func:`bosaris_dask.passes.fast_select.grouped_select_into` where numba is installed (the same
    trials, in the same order).
    """
    active = [j for j, spec in enumerate(specs) if spec is not None]
    out: list[Any] = [None] * len(specs)
    if not active:
        return out
    loop = fast_select.grouped_select_loop() if compiled else None
    pooled = [j for j in active if parts[j].pooled]
    split = [j for j in active if not parts[j].pooled]
    width = s.dtype.itemsize * 8  # the keys' bits
    plut = glut = None
    pspec = gspec = None
    nb = 0
    pbucket = gbucket = None  # adaptive maps: first the buckets that hold a candidate
    if pooled:  # the pooled parts may have pass-1 bins of their own (one map for all)
        pspec = specs[pooled[0]]
        plut = np.zeros(pspec.nbins, dtype=bool)  # type: ignore[union-attr]
        for j in pooled:
            plut |= specs[j].lut  # type: ignore[union-attr]
        if pspec.binmap is not None and loop is None:  # type: ignore[union-attr]
            pbucket = np.zeros(1 << _PREFILTER_BITS, dtype=bool)
            for j in pooled:
                spec = specs[j]
                pbucket[_prefilter_buckets(spec.cand_lo, spec.cand_bits,  # type: ignore[union-attr]
                                           width)] = True  # fmt: skip
    if split:
        gspec = specs[split[0]]
        nb = gspec.nbins  # type: ignore[union-attr]
        glut = np.zeros(n_groups * nb, dtype=bool)
        bm = gspec.binmap  # type: ignore[union-attr]
        if bm is not None and loop is None:
            gbucket = np.zeros(n_groups << _PREFILTER_BITS, dtype=bool)
        for j in split:
            tar, non = parts[j].groups(n_groups)
            at = specs[j].prefixes  # type: ignore[union-attr]
            if gbucket is not None:
                spec = specs[j]
                buckets = _prefilter_buckets(spec.cand_lo, spec.cand_bits,  # type: ignore[union-attr]
                                             width)  # fmt: skip
            for g in np.flatnonzero(tar | non).tolist():
                glut[g * nb + at] = True
                if gbucket is not None:
                    gbucket[(g << _PREFILTER_BITS) + buckets] = True
    found: dict[int, tuple[list[np.ndarray], list[np.ndarray]]] = {j: ([], []) for j in active}
    cls_flat, grp_flat, s_flat, m_flat = (a.reshape(-1) for a in (classes, groups, s, m))
    if loop is not None:
        room, kdt = min(ws.block, s_flat.size), key_dtype(s.dtype)
        todo = np.empty(room, np.int32)
        out_p = (np.empty(room, kdt), np.empty(room, bool))
        out_g = (np.empty(room, kdt), np.empty(room, bool), np.empty(room, grp_flat.dtype))
        first = pspec if pspec is not None else gspec  # the map the loop looks up first
        over = None if gspec is None else fast_select.overlap_table(
            first, [specs[j] for j in split])  # type: ignore[arg-type, misc]  # fmt: skip
        plut8, glut8, over8 = fast_select.bin_tables(plut, glut, over)
        pooled_lut = (pspec, plut8) if plut is not None else None
        split_lut = (gspec, glut8, over8) if glut is not None else None
    for sl in slices(s_flat.size, ws.slice_size):
        got_p: list[list[np.ndarray]] = [[], []]
        got_g: list[list[np.ndarray]] = [[], [], []]
        for b in slices(sl.stop, ws.block, sl.start):
            if loop is not None:
                n_p, n_g = fast_select.grouped_select_into(
                    loop, cls_flat[b], s_flat[b], m_flat[b], grp_flat[b], pooled_lut,  # type: ignore[arg-type]
                    split_lut, todo, out_p, out_g,  # type: ignore[arg-type]
                )  # fmt: skip
                for got, bufs, n in ((got_p, out_p, n_p), (got_g, out_g, n_g)):
                    if n:
                        for into, buf in zip(got, bufs, strict=True):
                            into.append(buf[:n].copy())
                continue
            c = cls_flat[b] if m_flat[b].all() else classes_of(cls_flat[b], m_flat[b])
            n = c.size
            keys = keys_into(s_flat[b], ws)
            trial = np.not_equal(c, 0, out=ws.flag2[:n])
            if plut is not None and pbucket is not None:
                bm = pspec.binmap  # type: ignore[union-attr]
                top = keys.dtype.type(bm.key_bits - _PREFILTER_BITS)
                prefix = np.right_shift(keys, top, out=ws.idx[:n], casting="unsafe")
                sel = np.take(pbucket, prefix, out=ws.flag[:n])
                at = np.flatnonzero(np.logical_and(sel, trial, out=sel))
                if len(at):  # then the full look-up for the keys in those buckets only
                    at = at[plut.take(bm.bin_of(keys.take(at)))]
                _gather(got_p, at, keys, c, None)
            elif plut is not None:
                prefix = _pass1_bins(keys, pspec, ws)  # type: ignore[arg-type]
                sel = np.take(plut, prefix, out=ws.flag[:n])
                _gather(got_p, np.flatnonzero(np.logical_and(sel, trial, out=sel)), keys, c,
                        None)  # fmt: skip
            if glut is not None:
                g = grp_flat[b]
                cell = ws.pos[:n]
                np.copyto(cell, g, casting="unsafe")
                if gbucket is not None:
                    bm = gspec.binmap  # type: ignore[union-attr]
                    np.left_shift(cell, _PREFILTER_BITS, out=cell)
                    top = keys.dtype.type(bm.key_bits - _PREFILTER_BITS)
                    prefix = np.right_shift(keys, top, out=ws.idx[:n], casting="unsafe")
                    np.add(cell, prefix, out=cell)
                    sel = np.take(gbucket, cell, out=ws.flag[:n])
                    at = np.flatnonzero(np.logical_and(sel, trial, out=sel))
                    if len(at):  # then each key's (group, bin) for the keys in those buckets
                        full = g.take(at).astype(np.intp) * nb + bm.bin_of(keys.take(at))
                        at = at[glut.take(full)]
                else:
                    np.multiply(cell, nb, out=cell)
                    np.add(cell, _pass1_bins(keys, gspec, ws), out=cell)  # type: ignore[arg-type]
                    sel = np.take(glut, cell, out=ws.flag[:n])
                    at = np.flatnonzero(np.logical_and(sel, trial, out=sel))
                _gather(got_g, at, keys, c, g)
        if got_p[0]:
            keys, is_tar = np.concatenate(got_p[0]), np.concatenate(got_p[1])
            for j in pooled:
                spec = specs[j]
                assert spec is not None
                if len(pooled) > 1 or spec.rank is None:  # else the bins decided already
                    k, t = within_candidates(keys, is_tar, spec)
                else:
                    k, t = keys, is_tar
                found[j][0].append(k)
                found[j][1].append(t)
        if got_g[0]:
            keys, is_tar = np.concatenate(got_g[0]), np.concatenate(got_g[1])
            grp = np.concatenate(got_g[2])
            order = np.argsort(grp, kind="stable")
            starts = np.concatenate([[0], np.cumsum(np.bincount(grp, minlength=n_groups))])
            for j in split:
                spec = specs[j]
                assert spec is not None
                k, t = _part_trials(parts[j], n_groups, keys, is_tar, starts, order)
                k, t = within_candidates(k, t, spec)
                found[j][0].append(k)
                found[j][1].append(t)
    kdt = key_dtype(s.dtype)
    for j in active:
        ks, ts = found[j]
        out[j] = ((np.concatenate(ks) if len(ks) > 1 else ks[0], np.concatenate(ts)) if ks
                  else (np.empty(0, dtype=kdt), np.empty(0, dtype=bool)))  # fmt: skip
    return out


def grouped_refine_kernel(
    classes: np.ndarray,
    groups: np.ndarray,
    *pairs: np.ndarray,
    system: int,
    specs: tuple[RefineSpec | None, ...],
    parts: tuple[Part, ...],
    n_groups: int,
    block: int,
    slice_size: int,
    compiled: bool = False,
) -> list[Any]:
    """A refinement pass on one chunk for the parts of one system: per part (``specs`` and
    ``parts`` in the same order), what
    :func:`~bosaris_dask.passes.refine_kernels.refine_system_kernel` gives for its trials alone, or
    None where its spec is None. ``compiled``: as :func:`_select_parts`."""
    s, m = pairs[2 * system], pairs[2 * system + 1]
    ws = workspace(np.dtype(s.dtype), block, slice_size)
    # a pooled part's whole pass-1 bins split evenly: a sub-histogram of every trial, as the
    # plain kernel makes it, beats gathering the (often most) trials inside them
    dense = [j for j, (p, spec) in enumerate(zip(parts, specs, strict=True))
             if p.pooled and spec is not None and spec.whole_bins_split_evenly]  # fmt: skip
    rest = tuple(None if j in dense else spec for j, spec in enumerate(specs))
    picked = _select_parts(classes, groups, s, m, rest, parts, n_groups, ws, compiled)
    out: list[Any] = []
    for j, (p, spec) in enumerate(zip(picked, specs, strict=True)):
        if j in dense:
            flat = (a.reshape(-1) for a in (classes, s, m))
            out.append(sub_histogram(*flat, spec, ws))  # type: ignore[arg-type]
        else:
            out.append(None if p is None else count_part(p[0], p[1], spec))  # type: ignore[arg-type]
    return out


def grouped_select_kernel(
    classes: np.ndarray,
    groups: np.ndarray,
    *pairs: np.ndarray,
    specs: tuple[RefineSpec | None, ...],
    parts: tuple[Part, ...],
    n_groups: int,
    block: int,
    slice_size: int,
    compiled: bool = False,
) -> np.ndarray:
    """:func:`bosaris_dask.passes.refine_kernels.select_kernel` for parts (one entry per part, in
    order): each system's trials keyed once for all its parts. ``compiled``: as
    :func:`_select_parts`."""
    kept: list[Any] = [None] * len(parts)
    for k in range(len(pairs) // 2):
        mine = [j for j, p in enumerate(parts) if p.system == k and specs[j] is not None]
        if not mine:
            continue
        s, m = pairs[2 * k], pairs[2 * k + 1]
        ws = workspace(np.dtype(s.dtype), block, slice_size)
        picked = _select_parts(classes, groups, s, m, [specs[j] for j in mine],
                               [parts[j] for j in mine], n_groups, ws, compiled)  # fmt: skip
        for j, p in zip(mine, picked, strict=True):
            kept[j] = p
    return object_block(kept)


def _dense_count(keys: np.ndarray, is_tar: np.ndarray, spec: RefineSpec) -> np.ndarray:
    """:func:`~bosaris_dask.passes.refine_kernels.count_selected` for whole pass-1 bins split
    evenly, of keys that all lie inside them: the same sub-bin counts, with a few in-place
    operations in the keys' own dtype instead of per-trial lookups of every candidate's offsets and
    widths."""
    rank = spec.rank
    assert rank is not None and spec.whole_bins_split_evenly
    kdt = keys.dtype.type
    sub = int(spec.sub_bits[0])
    idx = rank.take(np.right_shift(keys, kdt(spec.shift)).astype(np.intp))
    np.left_shift(idx, sub + 1, out=idx)
    low = np.right_shift(keys, kdt(spec.shift - sub))
    np.bitwise_and(low, kdt((1 << sub) - 1), out=low)
    np.left_shift(low, 1, out=low)
    np.add(idx, low.view(low.dtype.str.replace("u", "i")), out=idx, casting="unsafe")
    np.add(idx, is_tar, out=idx, casting="unsafe")
    return np.bincount(idx, minlength=2 * int(spec.offsets[-1]))


def _raw_count(keys: np.ndarray, is_tar: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bosaris_dask.passes.refine_kernels.count_selected` of a raw spec: the distinct keys
    (uint64, ascending) and their ``(non-target, target)`` counts, from one sort of ``key * 2 +
    is_target`` (keys are below ``2**63`` only for float32 scores: float64 keys sort apart)."""
    keys = keys.astype(np.uint64)
    if keys.size and keys.max() >= np.uint64(1 << 63):
        uniq, inverse = np.unique(keys, return_inverse=True)
        counts = np.bincount(inverse * 2 + is_tar, minlength=2 * len(uniq)).reshape(-1, 2)
        return uniq, counts
    packed = np.left_shift(keys, np.uint64(1))
    np.add(packed, is_tar, out=packed, casting="unsafe")
    values, n = np.unique(packed, return_counts=True)
    uniq, first = np.unique(values >> np.uint64(1), return_index=True)
    counts = np.zeros((len(uniq), 2), dtype=np.int64)
    owner = np.repeat(np.arange(len(uniq)), np.diff(np.append(first, len(values))))
    counts[owner, (values & np.uint64(1)).astype(np.intp)] = n
    return uniq, counts


def count_part(keys: np.ndarray, is_tar: np.ndarray, spec: RefineSpec) -> Any:
    """:func:`~bosaris_dask.passes.refine_kernels.count_selected` (the same result), faster for the
    two common cases: raw keys, and keys inside whole pass-1 bins (of one width: ``key >> shift``)
    split evenly."""
    if spec.raw:
        return _raw_count(keys, is_tar)
    if spec.whole_bins_split_evenly and spec.binmap is None:
        return _dense_count(keys, is_tar, spec)
    return count_selected(keys, is_tar, spec)


def refine_kept_part(
    selection: np.ndarray, *, part: int, spec: RefineSpec, kept_spec: RefineSpec | None
) -> Any:
    """:func:`bosaris_dask.passes.refine_kernels.refine_kept_kernel` with :func:`count_part`."""
    keys, is_tar = selection[0, 0][part]
    if spec is not kept_spec:
        keys, is_tar = within_candidates(keys, is_tar, spec)
    return count_part(keys, is_tar, spec)


def merge_part_refinements(results: list[Any]) -> Any:
    """Combine one part's refinement results of several chunks: add dense histograms; merge
    exact keys, adding their counts (as
    :func:`bosaris_dask.passes.refine_kernels.merge_refinements`)."""
    first = results[0]
    if first is None:
        return None
    if not isinstance(first, tuple):
        total = first.copy()
        for part in results[1:]:
            total += part
        return total
    if len(results) == 1:
        return first
    keys = np.concatenate([r[0] for r in results])
    counts = np.concatenate([r[1] for r in results])
    uniq, inverse = np.unique(keys, return_inverse=True)
    total = np.empty((len(uniq), 2), dtype=np.int64)
    for c in range(2):  # float sums of integer counts: exact below 2**53
        total[:, c] = np.bincount(inverse, weights=counts[:, c], minlength=len(uniq))
    return uniq, total


def merge_parts(results: list[list[Any]]) -> list[Any]:
    """:func:`merge_part_refinements` of every part (one list of parts per chunk)."""
    return [merge_part_refinements(list(per)) for per in zip(*results, strict=True)]
