"""A refinement pass's selection of the trials in candidate bins as one compiled (numba) loop,
when numba is installed (``pip install bosaris-dask[fast]``).

The numpy path of :func:`bosaris_dask.passes.refine_kernels.select_kernel` keys a block of scores,
looks up each key's bucket and bin in two tables, and gathers the keys and classes of the trials in
candidate bins, in a dozen array operations per block. The loop here does it trial by trial,
in one read of each trial's class, mask and score and no branch on them. It computes the same
keys and flags (integer work only), so both paths select the same trials in the same order; the
tests compare them.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.passes.binmap import BinMap
>>> from bosaris_dask.passes.refine_kernels import RefineSpec
>>> from bosaris_dask.passes.keys import order_keys
>>> s = np.array([0.5, -1.0, 2.0, 0.75, -0.0], dtype=np.float32)
>>> c = np.array([1, -1, 1, 0, -1], dtype=np.int8)
>>> lo = order_keys(np.array([0.5, -0.0], np.float32)).astype(np.uint64) >> 24 << 24
>>> spec = RefineSpec(24, 8, np.sort(lo), np.array([24, 24]), np.array([0, 0]), raw=True)
>>> keys, tar = np.empty(5, np.uint32), np.empty(5, bool)
>>> loop = select_loop()
>>> n = 2 if loop is None else select_into(loop, c, s, np.ones(5, bool), spec, keys, tar)
>>> if loop is None:
...     keys[:2], tar[:2] = order_keys(s[[0, 4]] + np.float32(0)), [True, False]
>>> n, (keys[:n] >> 24).tolist(), tar[:n].tolist()  # 0.75 shares 0.5's bin but is no trial
(2, [191, 128], [True, False])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from bosaris_dask.passes.jit import DISABLE_ENV, compiled
from bosaris_dask.passes.loop_parts import LOOP_PARTS, bin_of, key_args, map_args, order_key

if TYPE_CHECKING:
    from bosaris_dask.passes.refine_kernels import RefineSpec

__all__ = [
    "select_loop",
    "select_into",
    "grouped_select_loop",
    "grouped_select_into",
    "bin_tables",
    "overlap_table",
    "DISABLE_ENV",
]

#: The compiled loops read their bin tables as bits, eight bins to a byte, least significant
#: bit first (``np.packbits(lut, bitorder="little")``): at 2**20 bins the bytes fill a core's
#: L2 cache and the bits take an eighth of it, and at 2**17 bins the bits are no slower
#: (benchmarks/README.md, "Selection loops with bit tables").


def _select_trials(
    cls,
    bits,
    scored,
    table,
    bucket_shift,
    shift,
    adaptive,
    sign_bit,
    sign,
    ones,
    lut,
    last,
    out_keys,
    out_tar,
):  # pragma: no cover
    # compiled by numba (coverage does not see inside); tested against the numpy path.
    # No branch on the data: every trial's key and flag are written at the next free place,
    # which moves on only for a selected trial (at 1e9 trials half of them can be selected)
    n = 0
    for i in range(bits.size):
        c = cls[i]
        key = order_key(np.uint64(bits[i]), sign_bit, sign, ones)  # -0.0 as +0.0
        k = min(max(bin_of(key, table, bucket_shift, shift, adaptive), 0), last)
        out_keys[n] = key
        out_tar[n] = c == 1
        n += (c != 0) & scored[i] & ((lut[k >> 3] >> (k & 7)) & 1)
    return n


def select_loop() -> Callable[..., Any] | None:
    """The compiled selection for :func:`select_into`, or ``None`` when numba is missing or
    :data:`DISABLE_ENV` is set (compiled on first use; it releases the GIL)."""
    return compiled(_select_trials, calls=LOOP_PARTS)


def select_into(
    loop: Callable[..., Any],
    cls: np.ndarray,
    s: np.ndarray,
    scored: np.ndarray,
    spec: RefineSpec,
    keys: np.ndarray,
    is_tar: np.ndarray,
) -> int:
    """Write the order keys (into ``keys``, the key dtype) and target flags (``is_tar``) of the
    trials of flat ``cls``, ``s`` and ``scored`` whose pass-1 bin holds a candidate of ``spec``,
    in order; return how many. ``keys`` and ``is_tar`` are at least as long as ``s``.

    Finite scores only: pass 1 has refused non-finite trial scores.
    """
    kbits = s.dtype.itemsize * 8
    table, bucket_shift, shift, adaptive = map_args(spec.binmap, spec.shift)
    # contiguous arrays (a key's mask is often a broadcast): numba's loops over strided arrays
    # are several times slower
    s = np.ascontiguousarray(s)
    return int(loop(
        np.ascontiguousarray(cls, dtype=np.int8),
        s.view(np.uint32 if kbits == 32 else np.uint64),
        np.ascontiguousarray(scored, dtype=np.bool_),
        table, bucket_shift, shift, adaptive, *key_args(kbits),
        spec.packed_lut, np.int64(spec.nbins - 1), keys, is_tar,
    ))  # fmt: skip


def _select_grouped(
    cls,
    bits,
    scored,
    groups,
    ptable,
    pbucket_shift,
    pshift,
    padaptive,
    plut,
    pooled,
    gtable,
    gbucket_shift,
    gshift,
    gadaptive,
    glut,
    ulut,
    nb,
    split,
    sign_bit,
    sign,
    ones,
    todo,
    pkeys,
    ptar,
    gkeys,
    gtar,
    ggrp,
):  # pragma: no cover
    # compiled by numba; tested against the numpy path. As _select_trials, for the pooled
    # parts (a bin of the pooled map in plut) and the parts of groups (a (group, bin) of the
    # groups' map in glut) at once, in two loops, each writing every trial at the next free
    # place of its output, which moves on only for a selected trial (no branch on the data):
    # first each trial's bin of the first map (the pooled one, else the groups'), its pooled
    # selection and, listed the same way, whether the bin meets a group's candidate (ulut);
    # then the groups' look-ups for the listed trials only (a twelfth of the trials at 1e9
    # trials and 24 conditions; a branch on ulut in the first loop mispredicted more than it
    # saved). Measured 0.96x the time of three loops with a flag per trial. The bin tables
    # are bits (bin_tables); the padding bits of their last byte are zero
    plast = plut.size * 8 - 1
    glast = glut.size * 8 - 1
    n_p, n_todo = 0, 0
    for i in range(bits.size):
        key = order_key(np.uint64(bits[i]), sign_bit, sign, ones)  # -0.0 as +0.0
        k = min(max(bin_of(key, ptable, pbucket_shift, pshift, padaptive), 0), plast)
        c = cls[i]
        pkeys[n_p] = key
        ptar[n_p] = c == 1
        n_p += pooled & (c != 0) & scored[i] & ((plut[k >> 3] >> (k & 7)) & 1)
        todo[n_todo] = i
        n_todo += (ulut[k >> 3] >> (k & 7)) & 1
    n_g = 0
    if split:
        for j in range(n_todo):
            i = todo[j]
            key = order_key(np.uint64(bits[i]), sign_bit, sign, ones)
            k = bin_of(key, gtable, gbucket_shift, gshift, gadaptive)
            at = min(max(np.int64(groups[i]) * nb + k, 0), glast)
            c = cls[i]
            gkeys[n_g] = key
            gtar[n_g] = c == 1
            ggrp[n_g] = groups[i]
            n_g += (c != 0) & scored[i] & ((glut[at >> 3] >> (at & 7)) & 1)
    return n_p, n_g


def grouped_select_loop() -> Callable[..., Any] | None:
    """The compiled selection for :func:`grouped_select_into`, or ``None`` (numba missing, or
    :data:`DISABLE_ENV` set)."""
    return compiled(_select_grouped, calls=LOOP_PARTS)


def bin_tables(*luts: np.ndarray | None) -> list[np.ndarray | None]:
    """Boolean bin tables as :func:`grouped_select_into` reads them: bits, eight bins to a
    byte, least significant first (``None`` stays ``None``). Made once per chunk.

    >>> [t.tolist() for t in bin_tables(np.array([1, 0, 0, 1, 0, 0, 0, 0, 1], bool))]
    [[9, 1]]
    """
    return [None if x is None else np.packbits(x, bitorder="little") for x in luts]


def overlap_table(first: RefineSpec, specs: Sequence[RefineSpec]) -> np.ndarray:
    """bool per pass-1 bin of ``first``: does the bin share a key with a candidate of one of
    ``specs`` (candidates ``[lo, lo + 2**bits)`` of keys binned by another map)? A key in no
    such bin is in none of their candidates: :func:`grouped_select_into` looks up the groups'
    table only for keys in these bins.

    >>> from bosaris_dask.passes.refine_kernels import RefineSpec
    >>> first = RefineSpec(4, 4, np.array([0], np.uint64), np.array([4]), np.array([0]), True)
    >>> other = RefineSpec(2, 6, np.array([20, 40], np.uint64), np.array([2, 5]),
    ...                    np.array([0, 0]), True)
    >>> np.flatnonzero(overlap_table(first, [other])).tolist()  # keys 20-23, then 40-71
    [1, 2, 3, 4]
    """
    nb = first.nbins
    if not specs:
        return np.zeros(nb, dtype=bool)
    lo = np.concatenate([s.cand_lo for s in specs]).astype(np.uint64)
    # a candidate is narrower than the key (every map has two bins at least)
    last = lo + ((np.uint64(1) << np.concatenate([s.cand_bits for s in specs]).astype(np.uint64))
                 - np.uint64(1))  # fmt: skip
    start = np.clip(first.bin_of(lo), 0, nb - 1)
    stop = np.clip(first.bin_of(last), 0, nb - 1) + 1
    edges = np.bincount(start, minlength=nb + 1) - np.bincount(stop, minlength=nb + 1)
    return np.cumsum(edges[:nb]) > 0


def grouped_select_into(
    loop: Callable[..., Any],
    cls: np.ndarray,
    s: np.ndarray,
    scored: np.ndarray,
    groups: np.ndarray,
    pooled: tuple[RefineSpec, np.ndarray] | None,
    split: tuple[RefineSpec, np.ndarray, np.ndarray] | None,
    todo: np.ndarray,
    out_pooled: tuple[np.ndarray, np.ndarray],
    out_split: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[int, int]:
    """:func:`select_into` for the parts of a grouped refinement pass
    (:func:`bosaris_dask.passes.grouped_refine_kernels.grouped_select_kernel`), each trial keyed
    once.

    ``pooled``: a spec whose pass-1 bins (``spec.binmap`` or ``spec.shift``) the pooled parts'
    candidates are in and their union as a table over those bins; ``split``: the same for the
    parts of groups, the table over ``(group, bin)`` (``group * spec.nbins + bin``), and third
    the :func:`overlap_table` of the groups' candidates over the *first* map's bins (the pooled
    spec's where ``pooled`` is given, else the groups' own); either ``None``. The tables are
    those of :func:`bin_tables`. ``todo``: ``int32`` scratch at least as long as ``s``. Writes
    the keys and target flags of the trials of flat ``cls``, ``s``, ``scored`` in a selected
    pooled bin into ``out_pooled``, and the keys, target flags and groups of those in a
    selected ``(group, bin)`` into ``out_split`` (each as long as ``s``), in order; returns how
    many of each. Finite scores only (pass 1 refused the
    others); group codes in ``[0, n_groups)`` (pass 1 checked them).
    """
    kbits = s.dtype.itemsize * 8
    pspec, plut = pooled if pooled is not None else (None, None)
    gspec, glut, ulut = split if split is not None else (None, np.zeros(1, np.uint8), None)
    # both tables over the first map's bins as long (the loop clamps a bin to plut's length)
    plut = np.zeros_like(ulut) if plut is None else plut
    ulut = np.zeros_like(plut) if ulut is None else ulut
    if plut.size != ulut.size:
        raise ValueError(f"bin tables of {plut.size} and {ulut.size} bytes over one map")
    first = pspec if pspec is not None else gspec
    pargs = map_args(first.binmap, first.shift)  # type: ignore[union-attr]
    gargs = map_args(gspec.binmap, gspec.shift) if gspec is not None else pargs
    s = np.ascontiguousarray(s)
    n = s.size
    out = loop(
        np.ascontiguousarray(cls, dtype=np.int8),
        s.view(np.uint32 if kbits == 32 else np.uint64),
        np.ascontiguousarray(scored, dtype=np.bool_), np.ascontiguousarray(groups),
        *pargs, plut, pspec is not None, *gargs, glut, ulut,
        np.int64(gspec.nbins if gspec is not None else 0), gspec is not None,
        *key_args(kbits), todo[:n],
        *out_pooled, *out_split,
    )  # fmt: skip
    return int(out[0]), int(out[1])
