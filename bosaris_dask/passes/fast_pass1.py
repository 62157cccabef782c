"""Pass 1's work on a block of trials as compiled (numba) loops, when numba is installed
(``pip install bosaris-dask[fast]``).

The numpy path of :func:`bosaris_dask.passes.kernels.system_kernel` makes a trial's histogram index
in a dozen array operations per block (order key, bucket, table look-up, shift, target flag),
counts a slice of indices with ``bincount``, and sums the Cllr terms ``softplus(-c * s)`` in
another dozen (classes, sign, maximum, the split of each term into integer grid units of
:mod:`bosaris_dask.passes.exact_sum`, gathers of the targets). The loop here reads each trial's
class, mask and score once: it adds one to its bin (the bins of 2,048 trials at a time, so that the
counts' cache misses overlap), adds its term's grid units to the target or non-target sums, and
counts the missing and non-finite scores on the way.

Only ``exp`` and ``log1p`` stay in numpy (numba's differ from numpy's SIMD ones in the last
bits): :func:`block_into` has numpy compute ``log1p(exp(-|s|))`` of the block, the one part of
a term that is not exact arithmetic, and the loop does the rest with exact operations (a sign,
a maximum, one addition, power-of-two scalings, ``floor`` and ``rint``) and integer sums, which
do not depend on their order. So both paths give the same counts and the same sums, bit for
bit; the tests check them against each other. A block with a term of ``2**17`` or more (a
score beyond ±131072) has its sums made by :func:`bosaris_dask.passes.exact_sum.block_units_subset`.

Examples
--------
>>> import math
>>> import numpy as np
>>> from bosaris_dask.passes import exact_sum
>>> from bosaris_dask.passes.binmap import BinMap
>>> c = np.array([1, -1, -1, 0, 1], dtype=np.int8)
>>> s = np.array([2.0, 0.5, -np.inf, 1.0, -0.0], dtype=np.float32)
>>> hist, e = np.zeros(2 * 16 + 1, dtype=np.uint32), np.empty(5)
>>> kernel = block_kernel()
>>> if kernel is not None:
...     out = block_into(kernel, c, s, np.ones(5, bool), block_args(BinMap.uniform(32, 4)),
...                      hist, e)
... else:
...     hist[[16 + 12, 11, 8, 16 + 8, 32]] = 1
...     out = (0, 1, 0, 1, 240272324066124304, 118185290474198036)
>>> out[:4], np.flatnonzero(hist).tolist()
((0, 1, 0, 1), [8, 11, 24, 28, 32])
>>> [round(exact_sum.to_float(u), 11) for u in out[4:]]  # non-targets, targets
[1.66722416474, 0.8200751916]
>>> softplus = lambda z: math.log1p(math.exp(z))  # s = 0.5 and -inf (as 0.0); 2.0 and -0.0
>>> round(softplus(0.5) + softplus(0.0), 11), round(softplus(-2.0) + softplus(0.0), 11)
(1.66722416474, 0.8200751916)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from bosaris_dask.passes import exact_sum
from bosaris_dask.passes.binmap import BinMap
from bosaris_dask.passes.jit import DISABLE_ENV, compiled
from bosaris_dask.passes.loop_parts import (
    LOOP_PARTS,
    add_one,
    bin_of,
    exponent_bits,
    key_args,
    map_args,
    order_key,
)

__all__ = ["block_kernel", "block_args", "block_into", "neg_abs", "DISABLE_ENV"]

_WHOLE = 2.0**exact_sum.HI_BITS  # a term's whole grid units: floor(t * 2**20)
_FINE = 2.0**exact_sum.LO_BITS  # its fine units: rint(frac * 2**37)
_BIG = exact_sum.BIG  # terms from here on: the exact path (_big_block)


def neg_abs(s, e):  # pragma: no cover - compiled by numba
    """Write ``-|s|`` in float64 into ``e``, ``-0.0`` for a non-finite score (the numpy path
    scores it as 0.0): the argument of numpy's ``exp`` for the softplus terms (the grouped pass
    1 compiles it too)."""
    for i in range(s.size):
        x = np.float64(s[i])
        e[i] = -abs(x) if math.isfinite(x) else -0.0


def _count_trials(
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
    exponent,
    targets,
    hist,
    low,
):  # pragma: no cover
    # compiled by numba (coverage does not see inside); tested against the numpy path
    block = 2048  # first the bins of a block (no branches), then their counts: the counts'
    at = np.empty(block, dtype=np.int64)  # cache misses then overlap
    dump = hist.size - 1  # non-trials and trials without a score
    zero = np.uint64(0)
    missing, bad, unscored, nonfinite = 0, 0, 0, 0
    for lo in range(0, bits.size, block):
        hi = min(lo + block, bits.size)
        odd = False  # a cell without a score, or a non-finite score, in this block
        for i in range(lo, hi):
            b = np.uint64(bits[i])
            nf = (b & exponent) == exponent
            m = scored[i]
            odd |= nf | (not m)
            key = order_key(zero if nf else b, sign_bit, sign, ones)  # non-finite as 0.0
            k = bin_of(key, table, bucket_shift, shift, adaptive)
            c = cls[i]
            at[i - lo] = k + (targets if c > 0 else 0) if (c != 0 and m) else dump
        for j in range(hi - lo):  # counts modulo 256 in bytes, each wrap 256 more in hist
            add_one(low, hist, at[j])
        if odd:  # rare: count them
            for i in range(lo, hi):
                nf = (np.uint64(bits[i]) & exponent) == exponent
                trial = cls[i] != 0
                nonfinite += nf
                unscored += not scored[i]
                missing += trial and not scored[i]
                bad += trial and scored[i] and nf
    return missing, bad, unscored, nonfinite


def _sum_terms(cls, s, bits, scored, e, exponent):  # pragma: no cover
    # compiled by numba: the Cllr terms softplus(-c * x) = max(-c * x, 0) + log1p(exp(-|x|))
    # of the trials (x = 0.0 if not finite; e holds numpy's log1p(exp(-|x|))), each as its grid
    # units floor(t * 2**20) and rint(frac * 2**37), summed over all trials and over targets.
    # Selects, no branches: the loop runs on vectors (a loop of its own, not inside the counts)
    all_hi, all_lo, tar_hi, tar_lo = 0, 0, 0, 0
    big = False
    for i in range(s.size):
        c = cls[i]
        nf = (np.uint64(bits[i]) & exponent) == exponent
        x = 0.0 if nf else np.float64(s[i])
        term = max(-x if c > 0 else x, 0.0) + e[i]
        term = term if (c != 0) & scored[i] else 0.0
        big |= term >= _BIG
        whole = min(term, _BIG) * _WHOLE
        h = np.int64(whole)  # truncation: floor, as whole >= 0
        f = np.int64(np.rint((whole - h) * _FINE))
        all_hi += h
        all_lo += f
        tar_hi += h if c > 0 else 0
        tar_lo += f if c > 0 else 0
    return all_hi, all_lo, tar_hi, tar_lo, big


def _big_block(
    cls: np.ndarray, s: np.ndarray, scored: np.ndarray, e: np.ndarray
) -> tuple[int, int]:
    """The exact non-target and target sums of a block holding a term of ``2**17`` or more: the
    compiled loop's terms, in numpy, summed by
    :func:`~bosaris_dask.passes.exact_sum.block_units_subset` (rare: a score beyond ±131072)."""
    x = np.where(np.isfinite(s), s, 0).astype(np.float64)
    terms = np.maximum(np.where(cls > 0, -x, x), 0.0) + e
    trial = (cls != 0) & scored
    terms[~trial] = 0.0
    n = terms.size
    every, tar = exact_sum.block_units_subset(
        terms, trial & (cls > 0), np.empty(n), np.empty(n), np.empty(n)
    )
    return every - tar, tar


def block_kernel() -> tuple[Callable[..., Any], ...] | None:
    """The compiled loops for :func:`block_into`, or ``None`` when numba is missing or
    :data:`DISABLE_ENV` is set. Compiled on first use (cached on disk by numba where it can
    write); they release the GIL, so dask's threads run them in parallel."""
    loops = compiled(neg_abs), compiled(_count_trials, calls=LOOP_PARTS), compiled(_sum_terms)
    return None if any(fn is None for fn in loops) else loops


def block_args(binmap: BinMap) -> tuple[Any, ...]:
    """The bin map's part of :func:`block_into`'s arguments, made once per chunk."""
    kbits = binmap.key_bits
    return (*map_args(binmap), *key_args(kbits), exponent_bits(kbits), np.int64(binmap.nbins))


def block_into(
    kernel: tuple[Callable[..., Any], ...],
    cls: np.ndarray,
    s: np.ndarray,
    scored: np.ndarray,
    args: tuple[Any, ...],
    hist: np.ndarray,
    e: np.ndarray,
    low: np.ndarray | None = None,
) -> tuple[int, int, int, int, int, int]:
    """Add each trial of a block of flat ``cls`` (int8 codes -1, 0, 1), ``s`` (float32 or
    float64 scores of the map's key width) and ``scored`` (bool) to ``hist`` (an integer dtype,
    ``2 * nbins + 1``: the non-targets of bin ``b`` at ``b``, its targets at ``nbins + b``; the
    last entry collects the cells that are no trial or have no score); a non-finite score
    counts as 0.0. ``args``: :func:`block_args` of the bin map; ``e``: float64 scratch of the
    block's length (at most :data:`~bosaris_dask.passes.exact_sum.MAX_BLOCK`). ``low``: ``uint8``
    counts as long as ``hist``, for a caller that counts a chunk block by block: the counts
    modulo 256 go there, each wrap adds 256 to ``hist``, and the caller adds ``low`` to
    ``hist`` after the chunk's last block (the byte counts take a quarter of the cache that
    uint32 counts take: at 1e9 trials, 2**20 bins, the non-targets' 1 MB against 4 MB, and
    the count loop 18 against 24 ns per trial on this project's VM). Without it, the block's
    counts are added to ``hist`` before returning.

    Returns the trials without a score (not counted), the trials with a non-finite score, the
    cells without a score, the non-finite scores (trials or not), and the exact sums of
    ``softplus(-c * s)`` over the non-targets and over the targets, in units of
    ``2**-GRID_BITS`` (:mod:`bosaris_dask.passes.exact_sum`), as the numpy path computes them.
    """
    neg_abs, count_trials, sum_terms = kernel
    # contiguous arrays: a key's mask is often a broadcast (stride 0), and numba's loops over
    # strided arrays do not run on vectors (measured: 13 ns per trial instead of 0.4 to sum)
    s, scored = np.ascontiguousarray(s), np.ascontiguousarray(scored, dtype=np.bool_)
    codes = np.ascontiguousarray(cls, dtype=np.int8)
    bits = s.view(np.uint32 if s.dtype.itemsize == 4 else np.uint64)
    neg_abs(s, e)
    np.exp(e, out=e)  # numpy's exp and log1p: the numpy path's bits
    np.log1p(e, out=e)
    own = low is None
    if own:
        low = np.zeros(hist.size, dtype=np.uint8)
    missing, bad, unscored, nonfinite = count_trials(codes, bits, scored, *args, hist, low)
    if own:
        hist += low
    all_hi, all_lo, tar_hi, tar_lo, big = sum_terms(codes, s, bits, scored, e, args[7])
    if big:  # rare: terms of 2**17 or more
        non, tar = _big_block(codes, s, scored, e)
    else:
        tar = (int(tar_hi) << exact_sum.LO_BITS) + int(tar_lo)
        non = (int(all_hi) << exact_sum.LO_BITS) + int(all_lo) - tar
    return int(missing), int(bad), int(unscored), int(nonfinite), non, tar
