"""The grouped pass 1's integer work on a chunk as compiled (numba) loops, when numba is
installed (``pip install bosaris-dask[fast]``): :mod:`bosaris_dask.passes.fast_pass1` with a group
index.

:func:`bosaris_dask.passes.grouped_kernels.grouped_pass1_kernel`'s numpy path keys each trial, looks
its bin up twice (the conditions' map and the pooled map apart), builds two histogram indices
in a dozen array operations per block and counts them with two ``bincount`` calls (which hold
the GIL), and adds the exact Cllr terms per ``(group, class)`` with two weighted ``bincount``
calls per block. Here one loop reads each trial's class, mask, group and score bits once and
adds one to its ``(group, bin)`` count and one to its pooled bin (the bins of 2,048 trials at a
time, so the counts' cache misses overlap; counted in bytes, each wrap adding 256 to the
total: a quarter of the cache); missing trials per group and non-finite scores are counted
apart, by a loop that runs only where a vector loop finds a non-finite score or the mask a
cell without one. The exact Cllr sums take the plain pass 1's terms
(:mod:`bosaris_dask.passes.fast_pass1`: numpy's ``exp`` and ``log1p`` of ``-|s|``, as numba's differ
from numpy's in the last bits): a vector loop makes each trial's whole and fine grid units,
a second adds them per ``(group, class)`` (:func:`sums_into`; numpy's dozen array operations
per block for the terms and a scalar loop splitting them cost 13 ns per trial, these 8 on a
1e9 chunk). All compute only integers (the units are integers below ``2**53``, whose sums are
exact in any order), so both paths give the same result, bit for bit; the tests check them
against each other.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.passes.binmap import BinMap
>>> cls = np.array([1, -1, -1, 0, 1], dtype=np.int8)
>>> s = np.array([2.0, 0.5, -1.0, 1.0, -0.0], dtype=np.float32)
>>> groups = np.array([0, 1, 1, 0, 1], dtype=np.int16)
>>> hist = np.zeros(2 * 2 * 16 + 1, dtype=np.uint32)
>>> pooled = np.zeros(2 * 16 + 1, dtype=np.uint32)
>>> missing = np.zeros(4, dtype=np.int64)
>>> kernel = count_kernel()
>>> if kernel is not None:
...     bad, unscored, nonfinite = counts_into(kernel, cls, s, np.ones(5, bool), groups,
...                                            BinMap.uniform(32, 4), hist, missing,
...                                            BinMap.uniform(32, 4), pooled)
... else:
...     bad, unscored, nonfinite = 0, 0, 0
...     hist[[32 + 12, 16 + 11, 16 + 4, 32 + 16 + 8, 64]] = 1
>>> (bad, unscored, nonfinite), np.flatnonzero(hist).tolist()  # (class, group, bin) halves
((0, 0, 0), [20, 27, 44, 56, 64])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from bosaris_dask.passes import exact_sum, fast_pass1
from bosaris_dask.passes.binmap import BinMap
from bosaris_dask.passes.jit import compiled
from bosaris_dask.passes.loop_parts import (
    LOOP_PARTS,
    add_one,
    bin_of,
    exponent_bits,
    key_args,
    map_args,
    order_key,
)

__all__ = ["count_kernel", "counts_into", "units_kernel", "units_into", "sums_kernel", "sums_into",
           "SUMS_RUN"]  # fmt: skip


def _count_grouped(
    cls,
    bits,
    scored,
    groups,
    table,
    bucket_shift,
    shift,
    adaptive,
    ptable,
    pbucket_shift,
    pshift,
    padaptive,
    pooled,
    sign_bit,
    sign,
    ones,
    exponent,
    nbins,
    pnbins,
    hist,
    phist,
    low,
    plow,
):  # pragma: no cover
    # compiled by numba (coverage does not see inside); tested against the numpy path
    block = 2048  # first the bins of a block (no branches), then their counts
    at = np.empty(block, dtype=np.int32)  # int32: 16 kB for both, half a core's L1 cache
    pat = np.empty(block, dtype=np.int32)
    dump = hist.size - 1  # non-trials and trials without a score
    pdump = phist.size - 1
    half = (hist.size - 1) // 2  # targets in the upper half
    zero = np.uint64(0)
    for lo in range(0, bits.size, block):
        hi = min(lo + block, bits.size)
        for i in range(lo, hi):
            b = np.uint64(bits[i])
            nf = (b & exponent) == exponent
            key = order_key(zero if nf else b, sign_bit, sign, ones)  # non-finite as 0.0
            k = bin_of(key, table, bucket_shift, shift, adaptive)
            c = cls[i]
            trial = c != 0 and scored[i]
            at[i - lo] = (
                (np.int64(groups[i]) * nbins + k + (half if c > 0 else 0)) if trial else dump
            )
            if pooled:
                k = bin_of(key, ptable, pbucket_shift, pshift, padaptive)
                pat[i - lo] = (k + (pnbins if c > 0 else 0)) if trial else pdump
        if pooled:  # both counts in one loop: measured faster than one loop for each
            for j in range(hi - lo):
                add_one(low, hist, at[j])
                add_one(plow, phist, pat[j])
        else:
            for j in range(hi - lo):
                add_one(low, hist, at[j])


def _count_nonfinite(bits, exponent):  # pragma: no cover
    # compiled by numba: a vector loop
    n = 0
    for i in range(bits.size):
        n += (np.uint64(bits[i]) & exponent) == exponent
    return n


def _count_odd(cls, bits, scored, groups, exponent, missing):  # pragma: no cover
    # compiled by numba; run only on a chunk with a cell without a score or a non-finite score
    bad, unscored, nonfinite = 0, 0, 0
    for i in range(bits.size):
        nf = (np.uint64(bits[i]) & exponent) == exponent
        c = cls[i]
        nonfinite += nf
        unscored += not scored[i]
        if c != 0 and not scored[i]:
            missing[2 * np.int64(groups[i]) + (1 if c > 0 else 0)] += 1
        bad += c != 0 and scored[i] and nf
    return bad, unscored, nonfinite


def count_kernel() -> tuple[Callable[..., Any], ...] | None:
    """The compiled loops for :func:`counts_into`, or ``None`` (numba missing, or
    :data:`bosaris_dask.passes.jit.DISABLE_ENV` set)."""
    loops = (
        compiled(_count_grouped, calls=LOOP_PARTS),
        compiled(_count_nonfinite),
        compiled(_count_odd),
    )
    return None if any(fn is None for fn in loops) else loops


def counts_into(
    kernel: Callable[..., Any],
    cls: np.ndarray,
    s: np.ndarray,
    scored: np.ndarray,
    groups: np.ndarray,
    binmap: BinMap,
    hist: np.ndarray,
    missing: np.ndarray,
    pooled_binmap: BinMap | None = None,
    pooled: np.ndarray | None = None,
) -> tuple[int, int, int]:
    """Add each trial of flat ``cls`` (int8 codes), ``s`` (float32 or float64 scores),
    ``scored`` (bool) and ``groups`` (integer codes, checked by the caller) to ``hist``
    (integers, ``2 * n_groups * binmap.nbins + 1``: the non-targets of group ``g`` and bin
    ``b`` at ``g * nbins + b``, its targets half the histogram further; the last entry collects
    the cells that are no trial or have no score) and, given, to ``pooled`` (``2 *
    pooled_binmap.nbins + 1``: as :func:`bosaris_dask.passes.fast_pass1.counts_into`). Adds the
    trials without a score to ``missing`` (int64, slot ``2 * g`` for non-targets, ``2 * g +
    1`` for targets). A non-finite score counts as 0.0.

    Returns the trials with a non-finite score, the cells without a score and the non-finite
    scores (trials or not).
    """
    kbits = s.dtype.itemsize * 8
    ku = np.uint32 if kbits == 32 else np.uint64
    exponent = exponent_bits(kbits)
    table, bucket_shift, shift, adaptive = map_args(binmap)
    ptable, pbucket_shift, pshift, padaptive = map_args(pooled_binmap)
    phist = pooled if pooled is not None else np.zeros(1, dtype=hist.dtype)
    pnbins = pooled_binmap.nbins if pooled_binmap is not None else 0
    codes = cls if cls.dtype == np.int8 else cls.astype(np.int8)  # codes are clipped to -2..2
    # the counts modulo 256 in bytes, each wrap adding 256 to hist: a quarter of the cache
    # the uint32 counts take (1e9 trials, 24 conditions: 24 x 2**16 and 2**20 bins), where
    # every trial's two counts would miss a core's L2 (measured on 2**24 trials, those bins:
    # 4.3 ns per trial with uint32 counts, 1.9 with bytes)
    low, plow = np.zeros(hist.size, np.uint8), np.zeros(phist.size, np.uint8)
    count, count_nonfinite, count_odd = kernel
    bits, scored = s.view(ku), np.asarray(scored, dtype=np.bool_)
    count(
        codes, bits, scored, groups, table, bucket_shift, shift, adaptive, ptable, pbucket_shift,
        pshift, padaptive, pooled is not None, *key_args(kbits), exponent,
        np.int64(binmap.nbins), np.int64(pnbins), hist,
        phist, low, plow,
    )  # fmt: skip
    hist += low
    phist += plow
    # cells without a score and non-finite scores, counted apart (tracking them in the loop
    # above cost 1.5-2 ns of its 15 per trial on a 1e9 chunk): rare, so first only looked for
    if count_nonfinite(bits, exponent) == 0 and np.count_nonzero(scored) == scored.size:
        return 0, 0, 0
    out = count_odd(codes, bits, scored, groups, exponent, missing)
    return int(out[0]), int(out[1]), int(out[2])


def _group_sums(
    cls, s, bits, e, exponent, groups, acc, h_buf, f_buf, whole, fine, big_at
):  # pragma: no cover
    # compiled by numba; the terms of fast_pass1._sum_terms, added per slot
    big = False
    sub = h_buf.size
    for lo in range(0, s.size, sub):
        hi = min(lo + sub, s.size)
        c_, s_, b_, e_, g_ = cls[lo:hi], s[lo:hi], bits[lo:hi], e[lo:hi], groups[lo:hi]
        for i in range(hi - lo):  # no store depends on another: a vector loop
            c = c_[i]
            nf = (np.uint64(b_[i]) & exponent) == exponent
            x = 0.0 if nf else np.float64(s_[i])  # a non-finite score counts as 0.0
            term = max(-x if c > 0 else x, 0.0) + e_[i]
            term = term if c != 0 else 0.0
            big |= term >= big_at
            w = min(term, big_at) * whole
            h = np.int64(w)  # truncation: floor, as w >= 0
            h_buf[i] = h
            f_buf[i] = np.int64(np.rint((w - h) * fine))
        for i in range(hi - lo):  # then each trial's units to its slot
            slot = 2 * np.int64(g_[i]) + (1 if c_[i] > 0 else 0)
            acc[0, slot] += h_buf[i]
            acc[1, slot] += f_buf[i]
    return big


def sums_kernel() -> tuple[Callable[..., Any], Callable[..., Any]] | None:
    """The compiled loops for :func:`sums_into` (``-|s|`` of
    :mod:`~bosaris_dask.passes.fast_pass1`, and the per-slot sums), or ``None``."""
    loops = compiled(fast_pass1.neg_abs), compiled(_group_sums)
    return None if loops[0] is None or loops[1] is None else loops  # type: ignore[return-value]


#: Trials per run of the per-slot sums: their units are written, then added to their slots
#: (32 kB of units, in a core's L1 cache).
SUMS_RUN = 2048


def sums_into(
    kernel: tuple[Callable[..., Any], Callable[..., Any]],
    cls: np.ndarray,
    s: np.ndarray,
    groups: np.ndarray,
    e: np.ndarray,
    acc: np.ndarray,
    bufs: tuple[np.ndarray, np.ndarray],
) -> bool:
    """Per slot ``2 * g + (cls > 0)``, the sums of the whole and the fine grid units
    (:func:`bosaris_dask.passes.exact_sum.split_units`) of the trials' softplus terms added to the
    ``int64`` rows of ``acc`` (``(2, slots)``): what
    :func:`~bosaris_dask.passes.softplus.softplus_terms` and :func:`units_into` give, bit for
    bit, for trials whose codes ``cls`` (int8; ``0`` for no trial, so a trial without a score
    must be 0 here) are not 0; a non-finite score counts as 0.0. The terms are those of
    :mod:`bosaris_dask.passes.fast_pass1`: numpy's ``exp`` and ``log1p`` of ``-|s|`` into ``e``
    (float64 scratch as long as ``s``, at most :data:`~bosaris_dask.passes.exact_sum.MAX_BLOCK`),
    then one compiled loop computing each trial's units (a vector loop) and one adding them
    per slot, in runs of :data:`SUMS_RUN` trials (``bufs``: two ``int64`` buffers that long).

    Returns whether a term reached :data:`~bosaris_dask.passes.exact_sum.BIG` (rare: a score beyond
    +-131072); then ``acc`` holds nothing usable and the caller sums the block exactly.
    """
    neg_abs, group_sums = kernel
    kbits = s.dtype.itemsize * 8
    exponent = exponent_bits(kbits)
    neg_abs(s, e)
    np.exp(e, out=e)  # numpy's exp and log1p: the numpy path's bits
    np.log1p(e, out=e)
    bits = s.view(np.uint32 if kbits == 32 else np.uint64)
    return bool(group_sums(
        cls, s, bits, e, exponent, groups, acc, bufs[0], bufs[1], 2.0**exact_sum.HI_BITS,
        2.0**exact_sum.LO_BITS, exact_sum.BIG,
    ))  # fmt: skip


def _group_units(terms, groups, cls, acc_hi, acc_lo, hi_scale, lo_scale):  # pragma: no cover
    # compiled by numba; the operations of exact_sum.split_units, in the same order
    acc_hi[:] = 0.0
    acc_lo[:] = 0.0
    for i in range(terms.size):
        t = terms[i] * hi_scale
        h = np.floor(t)
        slot = 2 * np.int64(groups[i]) + (1 if cls[i] > 0 else 0)
        acc_hi[slot] += h
        acc_lo[slot] += np.rint((t - h) * lo_scale)


def units_kernel() -> Callable[..., Any] | None:
    """The compiled per-group unit sums for :func:`units_into`, or ``None``."""
    return compiled(_group_units)


def units_into(
    kernel: Callable[..., Any],
    terms: np.ndarray,
    groups: np.ndarray,
    cls: np.ndarray,
    acc_hi: np.ndarray,
    acc_lo: np.ndarray,
) -> None:
    """Per slot ``2 * g + (cls > 0)``, the sums of ``terms``' whole and fractional grid units
    (:func:`bosaris_dask.passes.exact_sum.split_units`; terms below ``2**17``, at most
    :data:`~bosaris_dask.passes.exact_sum.MAX_BLOCK` of them) into the float64 ``acc_hi`` and
    ``acc_lo`` (overwritten): the sums a weighted ``bincount`` of the split units gives, as
    every partial sum is an integer below ``2**53``."""
    kernel(terms, groups, cls, acc_hi, acc_lo, 2.0**exact_sum._HI_BITS, 2.0**exact_sum._LO_BITS)
