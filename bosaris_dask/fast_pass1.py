"""Pass 1's integer work on a chunk as one compiled (numba) loop, when numba is installed
(``pip install bosaris-dask[fast]``).

The numpy path of :func:`bosaris_dask.kernels.system_kernel` makes a trial's histogram index in
a dozen array operations per block (order key, bucket, table look-up, shift, target flag) and
counts a slice of indices with ``bincount``, which first scans them for their minimum and
maximum and streams them, 8 bytes each, through memory. The loop here reads each trial's class,
mask and score bits once and adds one to its bin (the bins of 2,048 trials at a time, so that
the counts' cache misses overlap), and it counts the missing and non-finite scores on the way.
Only integers are computed, so both paths give the same counts; the softplus sums stay in numpy
(numba's ``exp`` and ``log1p`` differ from numpy's in the last bits). The tests check the two
paths against each other, bit for bit.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.binmap import BinMap
>>> c = np.array([1, -1, -1, 0, 1], dtype=np.int8)
>>> s = np.array([2.0, 0.5, -np.inf, 1.0, -0.0], dtype=np.float32)
>>> hist = np.zeros(2 * 16 + 1, dtype=np.uint32)
>>> counts = count_kernel()
>>> if counts is not None:
...     missing, bad, unscored, nonfinite = counts_into(counts, c, s, np.ones(5, bool),
...                                                     BinMap.uniform(32, 4), hist)
... else:
...     missing, bad, unscored, nonfinite = 0, 1, 0, 1
...     hist[[16 + 12, 11, 8, 16 + 8, 32]] = 1
>>> (missing, bad, unscored, nonfinite), np.flatnonzero(hist).tolist()
((0, 1, 0, 1), [8, 11, 24, 28, 32])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from bosaris_dask.binmap import BinMap
from bosaris_dask.jit import DISABLE_ENV, compiled

__all__ = ["count_kernel", "counts_into", "DISABLE_ENV"]


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
    exponent,
    ones,
    targets,
    hist,
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
            b = zero if (nf or b == sign) else b  # non-finite counts as 0.0; -0.0 as +0.0
            key = b ^ (((zero - (b >> sign_bit)) & ones) | sign)  # order key, no branch
            if adaptive:
                t = table[np.intp(key >> bucket_shift)]
                k = (t >> 8) + np.int64(key >> np.uint64(t & 255))
            else:
                k = np.int64(key >> shift)
            c = cls[i]
            at[i - lo] = k + (targets if c > 0 else 0) if (c != 0 and m) else dump
        for j in range(hi - lo):
            hist[at[j]] += 1
        if odd:  # rare: count them
            for i in range(lo, hi):
                nf = (np.uint64(bits[i]) & exponent) == exponent
                trial = cls[i] != 0
                nonfinite += nf
                unscored += not scored[i]
                missing += trial and not scored[i]
                bad += trial and scored[i] and nf
    return missing, bad, unscored, nonfinite


def count_kernel() -> Callable[..., Any] | None:
    """The compiled trial counter for :func:`counts_into`, or ``None`` when numba is missing or
    :data:`DISABLE_ENV` is set. Compiled on first use (cached on disk by numba where it can
    write); it releases the GIL, so dask's threads run it in parallel."""
    return compiled(_count_trials)


def counts_into(
    kernel: Callable[..., Any],
    cls: np.ndarray,
    s: np.ndarray,
    scored: np.ndarray,
    binmap: BinMap,
    hist: np.ndarray,
) -> tuple[int, int, int, int]:
    """Add each trial of flat ``cls`` (int8 codes), ``s`` (float32 or float64 scores) and
    ``scored`` (bool) to ``hist`` (an integer dtype, ``2 * binmap.nbins + 1``: the non-targets
    of bin ``b`` at ``b``, its targets at ``binmap.nbins + b``; the last entry collects the cells
    that are no trial or have no score); a non-finite score counts as 0.0.

    Returns the trials without a score (not counted), the trials with a non-finite score, the
    cells without a score and the non-finite scores (trials or not).
    """
    kbits = s.dtype.itemsize * 8
    ku = np.uint32 if kbits == 32 else np.uint64
    exponent = np.uint64(0x7F800000 if kbits == 32 else 0x7FF0000000000000)
    if binmap.adaptive:
        table, bucket_shift, shift = binmap.table, binmap.key_bits - binmap.top, 0
    else:
        table, bucket_shift, shift = np.zeros(1, np.int64), 0, binmap.shift
    codes = cls if cls.dtype == np.int8 else cls.astype(np.int8)  # codes are clipped to -2..2
    out = kernel(
        codes, s.view(ku), np.asarray(scored, dtype=np.bool_), table, np.uint64(bucket_shift),
        np.uint64(shift), binmap.adaptive, np.uint64(kbits - 1), np.uint64(1 << (kbits - 1)),
        exponent, np.uint64((1 << kbits) - 1), np.int64(binmap.nbins), hist,
    )  # fmt: skip
    return int(out[0]), int(out[1]), int(out[2]), int(out[3])
