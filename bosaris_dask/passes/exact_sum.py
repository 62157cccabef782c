"""Sums of non-negative float64 terms that do not depend on how the terms are grouped.

A float sum depends on the order of its additions, so a sum merged over chunks changes its last
bits with the chunking, the merge tree and the scheduler. Here each term is first rounded, on
its own, to a multiple of ``2**-GRID_BITS`` (an absolute error below ``2**-58``, about 3.5e-18,
per term), and the rounded terms are added exactly, as integers. Any grouping of the same terms
then gives the same integer, and the reported float is that integer's one correctly rounded
conversion.

Inside a block of at most :data:`MAX_BLOCK` terms, a term ``t < 2**17`` is split into two
integer-valued float64 parts, ``hi = floor(t * 2**20)`` and ``lo = rint(frac * 2**37)``, each
below ``2**37``: numpy's masked float sums of a block's parts stay below ``2**53`` and so are
exact whatever order numpy adds them in. Terms of ``2**17`` or more (softplus of a score beyond
±131072) are rare and take an exact path through their mantissas and exponents. Totals travel
between tasks as :data:`LIMBS` base-``2**32`` limbs stored in float64, which dask's ``sum`` adds
exactly (up to ``2**21`` chunk results).

Examples
--------
>>> import numpy as np
>>> x = np.random.default_rng(0).exponential(size=1000) ** 3
>>> whole = total([x])
>>> parts = total([x[:7]]) + total([x[7:500]]) + total([x[500:]])
>>> whole == parts and to_float(from_limbs(to_limbs(whole))) == to_float(whole)
True
>>> float(abs(to_float(whole) - math.fsum(x))) < 1000 * 2.0**-58
True
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

__all__ = [
    "GRID_BITS", "HI_BITS", "LO_BITS", "BIG", "MAX_BLOCK", "LIMBS", "exact_units", "block_units",
    "block_units_subset", "total", "to_limbs", "from_limbs", "from_limbs_array",
    "to_float", "mean",
]  # fmt: skip

#: Terms are rounded to multiples of ``2**-GRID_BITS``; sums are integers in these units.
GRID_BITS = 57
#: A term ``t < BIG`` splits into ``hi = floor(t * 2**HI_BITS) < 2**37`` whole units ...
HI_BITS = 20
#: ... and ``lo = rint(frac * 2**LO_BITS) <= 2**37`` fine ones: ``t = hi * 2**-20 + lo * 2**-57``.
LO_BITS = GRID_BITS - HI_BITS
#: Terms from here on (``2**17``) take the exact path of :func:`exact_units`.
BIG = 2.0 ** (37 - HI_BITS)
#: The most terms :func:`block_units` sums at once (its float sums stay exact below ``2**53``).
MAX_BLOCK = 1 << 16
#: Base-2**32 limbs of a total: any float64 terms, up to 2**40 of them (2**1081 * 2**40 units).
LIMBS = 36
_LIMB = 1 << 32


def exact_units(values: np.ndarray) -> int:
    """The exact sum of finite floats ``>= 2**17`` (:data:`BIG`) in units of ``2**-GRID_BITS``;
    non-finite values are left out.

    Examples
    --------
    >>> exact_units(np.array([2.0**17, 2.0**40, np.inf])) == (2**17 + 2**40) << GRID_BITS
    True
    """
    values = values[np.isfinite(values)]
    if not len(values):
        return 0
    frac, exp = np.frexp(values)  # values = frac * 2**exp, 0.5 <= frac < 1, exp >= 18
    mantissa = (frac * 2.0**53).astype(np.int64)  # exact: 53 bits
    shifts = exp.astype(np.int64) - 53 + GRID_BITS  # >= 22: every such float is on the grid
    out = 0
    for shift in np.unique(shifts).tolist():
        m = mantissa[shifts == shift]  # at most MAX_BLOCK values: the halves' sums fit int64
        out += ((int((m >> 26).sum()) << 26) + int((m & ((1 << 26) - 1)).sum())) << shift
    return out


_HI_BITS, _LO_BITS, _BIG, _exact_units = HI_BITS, LO_BITS, BIG, exact_units  # older names


def split_units(terms: np.ndarray, hi: np.ndarray) -> None:
    """Split non-negative ``terms`` below ``2**17`` into whole and fractional grid units, in
    place: ``hi = floor(t * 2**20)`` and ``terms = rint(frac * 2**37)``, so that
    ``t = (hi * 2**37 + terms) * 2**-GRID_BITS`` with ``t`` rounded to the grid, and sums of up
    to :data:`MAX_BLOCK` of each are exact in any order (integers below ``2**53``).

    Examples
    --------
    >>> t, hi = np.array([1.5, 2.0**-57, 3.0 * 2.0**-58]), np.empty(3)
    >>> split_units(t, hi)
    >>> hi.tolist(), t.tolist()  # 1.5 = 1.5 * 2**20 whole units; 2**-57 is one fine unit
    ([1572864.0, 0.0, 0.0], [0.0, 1.0, 2.0])
    """
    np.multiply(terms, 2.0**HI_BITS, out=terms)
    np.floor(terms, out=hi)
    np.subtract(terms, hi, out=terms)
    np.multiply(terms, 2.0**LO_BITS, out=terms)
    np.rint(terms, out=terms)


def block_units(
    terms: np.ndarray, weights: Iterable[np.ndarray], scratch: np.ndarray, product: np.ndarray
) -> list[int]:
    """Exact sums, in units of ``2**-GRID_BITS``, of non-negative ``terms``: of all of them, then
    of those whose weight is 1 in each of ``weights`` (float64 arrays of 0 and 1).

    ``terms`` (float64, at most :data:`MAX_BLOCK` of them) is overwritten; ``scratch`` and
    ``product`` are float64 buffers at least as long. Plain sums of products, not masked sums:
    numpy's ``where=`` reductions cost ten times more.
    """
    n = terms.size
    if n > MAX_BLOCK:
        raise ValueError(f"block_units sums at most {MAX_BLOCK} terms at once, got {n}")
    weights = list(weights)
    out = [0] * (1 + len(weights))
    if n == 0:
        return out
    if np.maximum.reduce(terms) >= BIG:  # rare: the exact path, then zero those terms
        big = np.flatnonzero(terms >= BIG)
        out[0] += exact_units(terms[big])
        for k, w in enumerate(weights):
            out[k + 1] += exact_units(terms[big[w[big] != 0]])
        terms[big] = 0.0
    hi, prod = scratch[:n], product[:n]
    split_units(terms, hi)
    # every partial sum is an integer below 2**53: exact in any order numpy adds them
    out[0] += (int(np.add.reduce(hi)) << LO_BITS) + int(np.add.reduce(terms))
    for k, w in enumerate(weights):
        h = np.add.reduce(np.multiply(hi, w, out=prod))
        lo = np.add.reduce(np.multiply(terms, w, out=prod))
        out[k + 1] += (int(h) << LO_BITS) + int(lo)
    return out


def block_units_subset(
    terms: np.ndarray,
    subset: np.ndarray,
    scratch: np.ndarray,
    product: np.ndarray,
    weight: np.ndarray,
) -> list[int]:
    """:func:`block_units` of ``terms`` with one weight, given as a bool mask ``subset``: the
    exact sums of all the terms and of those where ``subset`` is true, the same integers.

    The terms are rounded as :func:`block_units` rounds them; the subset's rounded terms are
    then gathered and added when it (or its complement) holds at most a quarter of the block,
    which is cheaper than a sum of products over the whole block (the targets of a speaker
    verification key are a few percent of its trials). ``weight`` is a third float64 buffer.

    Examples
    --------
    >>> t = np.array([0.5, 0.25, 2.0**-57, 3.0])
    >>> mask = np.array([0, 0, 1, 0], bool)
    >>> block_units_subset(t.copy(), mask, np.empty(4), np.empty(4), np.empty(4))
    [540431955284459521, 1]
    """
    n = terms.size
    if n > MAX_BLOCK:
        raise ValueError(f"block_units sums at most {MAX_BLOCK} terms at once, got {n}")
    k = int(np.count_nonzero(subset))
    if n == 0 or (4 * k > n and 4 * (n - k) > n):
        np.copyto(weight[:n], subset, casting="unsafe")
        return block_units(terms, [weight[:n]], scratch, product)
    out = [0, 0]
    if np.maximum.reduce(terms) >= BIG:  # rare: the exact path, then zero those terms
        big = np.flatnonzero(terms >= BIG)
        out[0] += exact_units(terms[big])
        out[1] += exact_units(terms[big[subset[big]]])
        terms[big] = 0.0
    hi = scratch[:n]
    split_units(terms, hi)
    # every partial sum is an integer below 2**53: exact in any order numpy adds them
    whole = (int(np.add.reduce(hi)) << LO_BITS) + int(np.add.reduce(terms))
    out[0] += whole
    at = np.flatnonzero(subset if 4 * k <= n else ~subset)
    part = (int(np.add.reduce(hi.take(at))) << LO_BITS) + int(np.add.reduce(terms.take(at)))
    out[1] += part if 4 * k <= n else whole - part
    return out


def total(arrays: Iterable[np.ndarray]) -> int:
    """The exact sum, in units of ``2**-GRID_BITS``, of the non-negative terms of ``arrays``."""
    out = 0
    scratch, product = np.empty(MAX_BLOCK), np.empty(MAX_BLOCK)
    for arr in arrays:
        flat = np.asarray(arr, dtype=np.float64).reshape(-1)
        for lo in range(0, flat.size, MAX_BLOCK):
            (units,) = block_units(flat[lo : lo + MAX_BLOCK].copy(), [], scratch, product)
            out += units
    return out


def to_limbs(units: int) -> np.ndarray:
    """A non-negative total as :data:`LIMBS` base-``2**32`` limbs (float64, least first)."""
    if units < 0 or units >= _LIMB**LIMBS:
        raise OverflowError(f"a total of {units} units does not fit {LIMBS} limbs")
    return np.array([(units >> (32 * k)) & (_LIMB - 1) for k in range(LIMBS)], dtype=np.float64)


def from_limbs(limbs: np.ndarray) -> int:
    """The total that (sums of) :func:`to_limbs` vectors hold: exact integer arithmetic."""
    return from_limbs_array(limbs).item()


def from_limbs_array(limbs: np.ndarray) -> np.ndarray:
    """:func:`from_limbs` along the last axis: an object array of the exact totals (Python
    ints), for thousands of totals at once (one call per total took seconds with thousands of
    conditions).

    Each limb holds a sum of 32-bit limbs (an integer below ``2**53``, exact in int64); only
    the limbs up to the highest non-zero one anywhere are shifted and added.

    >>> limbs = np.stack([to_limbs(u) for u in (0, 5, 2**100 + 7)])
    >>> from_limbs_array(limbs + limbs).tolist() == [0, 10, 2**101 + 14]
    True
    """
    ints = np.asarray(limbs, dtype=np.float64).astype(np.int64)
    used = np.flatnonzero(ints.reshape(-1, ints.shape[-1]).any(axis=0))
    out = np.zeros(ints.shape[:-1], dtype=object)
    for k in used.tolist():
        out = out + (ints[..., k].astype(object) << (32 * k))
    return np.asarray(out, dtype=object)  # (one total: numpy made it a Python int)


def to_float(units: int) -> float:
    """``units * 2**-GRID_BITS`` correctly rounded to float64 (``inf`` beyond its range)."""
    try:
        return units / (1 << GRID_BITS)
    except OverflowError:
        return math.inf


def mean(units: int, n: int) -> float:
    """``units * 2**-GRID_BITS / n`` correctly rounded to float64: finite wherever the mean is,
    even when the sum itself is beyond float64 (``inf`` only if the mean is).

    Examples
    --------
    >>> units = 3 * (int(1e308) << GRID_BITS)  # three terms of 1e308: the sum is not a float
    >>> to_float(units), mean(units, 3)
    (inf, 1e+308)
    """
    try:
        return units / (n << GRID_BITS)
    except OverflowError:
        return math.inf
