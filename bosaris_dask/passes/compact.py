"""Compact, exact encodings of the float64 vectors that pass tasks send to their merge tasks.

A pass-1 result is mostly counts: a float64 vector of two million integer values (16 MB per
system and chunk at 20 key bits), of which a few percent are non-zero. On worker processes
every such vector is pickled and sent to a merge task, and the merge tasks' totals again, so
the merge tree moved hundreds of megabytes at 1e8 trials. :func:`encode` stores a vector as

* ``"sparse"``: the positions (``int32``) and values of its non-zero elements, when at most
  a third of them are non-zero and all are integers;
* ``"dense"``: all elements in the narrowest of ``uint8``, ``uint16``, ``uint32``, ``int64``
  that holds each exactly;
* ``"narrow"``: non-negative integers whose few large elements (an
  :mod:`~bosaris_dask.passes.exact_sum` limb, a crowded bin) would widen every element: all in
  ``uint8`` or ``uint16`` with the large ones zeroed, and those apart (positions and values);
  a pass-1 row of two million small counts and 72 limbs is 2 MB instead of 8 (a merged
  total: instead of 16 in ``int64``);
* ``"float64"``: the vector itself, when it holds anything else (fractions, ``inf``, ``nan``,
  ``-0.0``).

:func:`decode` gives back the same float64 vector, bit for bit, and :func:`sum_encoded` adds encoded
vectors to the same totals, bit for bit, as numpy's ``rows.sum(axis=0)`` of the float64 rows:
integer vectors (all a count or an :mod:`~bosaris_dask.passes.exact_sum` limb can be; exact below
``2**53`` in any order) one by one into a single float64 vector, anything else through numpy.

Examples
--------
>>> import numpy as np
>>> v = np.zeros(1000)
>>> v[[3, 500]] = [7.0, 2.0**40]
>>> enc = encode(v)
>>> enc.kind, enc.nbytes
('sparse', 24)
>>> decode(enc).tobytes() == v.tobytes()
True
>>> sum_encoded([encode(np.ones(1000)), enc])[[0, 3, 500]].tolist()
[1.0, 8.0, 1099511627777.0]
>>> encode(np.array([0.5, 1.0])).kind
'float64'
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "Encoded", "encode", "encode_counts", "encode_sparse", "decode", "integers",
    "sum_encoded", "add_encoded", "max_nbytes",
]  # fmt: skip

_U32_END = float(1 << 32)
_I64_END = float(1 << 53)  # beyond, float64 sums of int64 rows could differ from numpy's
_NEGATIVE_ZERO = np.int64(-(2**63))  # the bits of -0.0
#: Sparse when at most this fraction of the elements are non-zero (positions cost 4 bytes).
SPARSE_FRACTION = 1 / 3
#: The longest vector whose positions travel as ``int32`` (sparse and narrow kinds); a longer
#: one is encoded dense.
POSITION_LIMIT = 2**31


@dataclass(frozen=True)
class Encoded:
    """A float64 vector of ``length`` elements in compact form (see :func:`encode`).

    Attributes
    ----------
    kind : {"sparse", "dense", "narrow", "float64"}
    length
        Elements of the vector.
    values
        The non-zero values (sparse) or all of them (dense, float64; narrow: the large ones
        zeroed).
    positions
        Where the non-zero values go (sparse), where the large ones go (narrow).
    large
        The large values (narrow only).
    """

    kind: str
    length: int
    values: np.ndarray
    positions: np.ndarray | None = None
    large: np.ndarray | None = None

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays (what a merge task receives, less pickling's few bytes)."""
        return sum(a.nbytes for a in (self.values, self.positions, self.large) if a is not None)


def _as_integers(w: np.ndarray) -> np.ndarray | None:
    """float64 ``w`` as ``uint32`` or ``int64`` if that holds every value exactly and below
    ``2**53`` in magnitude (where adding them is exact in any order), else None.

    ``-0.0`` (sign bit set, equal to 0) is not an integer here: it would come back as ``+0.0``.
    """
    if not w.size:
        return w.astype(np.uint32)
    lo, hi = np.minimum.reduce(w), np.maximum.reduce(w)
    if not (np.isfinite(lo) and np.isfinite(hi)):  # nan propagates through min and max
        return None
    if lo >= 0 and hi < _U32_END:
        dtype = np.dtype(np.uint32)
    elif lo >= -_I64_END and hi < _I64_END:
        dtype = np.dtype(np.int64)
    else:
        return None
    cast = w.astype(dtype)
    if not np.array_equal(cast, w):  # fractions: the comparison is exact in float64
        return None
    if not lo > 0 and np.any(w.view(np.int64) == _NEGATIVE_ZERO):
        return None
    return cast


def encode(vector: np.ndarray) -> Encoded:
    """The compact form of a float64 vector (see the module's docstring).

    Parameters
    ----------
    vector
        One-dimensional float64 array.

    Returns
    -------
    Encoded
        Decoded by :func:`decode` to ``vector``, bit for bit.
    """
    v = np.ascontiguousarray(vector, dtype=np.float64).reshape(-1)
    n = v.size
    bits = v.view(np.int64)  # by bits: -0.0 counts as non-zero
    # counted first: the positions only where they are few (a dense pass-1 row of millions of
    # values spent most of its encoding time on them)
    if np.count_nonzero(bits) <= n * SPARSE_FRACTION and n <= POSITION_LIMIT:
        nonzero = np.flatnonzero(bits)
        values = _as_integers(v[nonzero])
        if values is not None:
            return Encoded("sparse", n, values, nonzero.astype(np.int32))
    values = _as_integers(v)  # cast once, kept
    if values is None:
        return Encoded("float64", n, v.copy())
    if values.dtype.kind == "u" or int(np.minimum.reduce(values)) >= 0:  # (n > 0: not sparse)
        return _dense_counts(values, int(np.maximum.reduce(values)))
    return Encoded("dense", n, values)


def encode_counts(values: np.ndarray) -> Encoded:
    """:func:`encode` of ``values.astype(float64)`` for a vector of non-negative integers
    (any integer dtype), without making that float64 vector: the same kind, dtype and
    values, so the same decoded vector, bit for bit (e.g. a pass-1 row of counts that a
    kernel holds as ``uint32``: at 1e9 trials with conditions, 5.2M of them per chunk). A
    dense result may share ``values``' memory: hand over a vector no one changes after.

    >>> enc = encode_counts(np.array([0, 3, 0, 0, 0, 0], dtype=np.uint32))
    >>> enc.kind, enc.values.tolist(), enc.positions.tolist()
    ('sparse', [3], [1])
    >>> encode_counts(np.array([1, 2], dtype=np.int64)).values.dtype
    dtype('uint8')
    """
    v = np.ascontiguousarray(values).reshape(-1)
    if v.dtype.kind not in "iu":
        raise TypeError(f"encode_counts needs integers, got {v.dtype}")
    n = v.size
    hi = int(np.maximum.reduce(v)) if n else 0
    signed = v.dtype.kind == "i"  # (no unsigned value is negative: no minimum to find)
    if (n and signed and int(np.minimum.reduce(v)) < 0) or hi >= _I64_END:
        return encode(v.astype(np.float64))  # not counts: the general path
    dtype = np.uint32 if hi < _U32_END else np.int64
    if np.count_nonzero(v) <= n * SPARSE_FRACTION and n <= POSITION_LIMIT:
        nonzero = np.flatnonzero(v)
        return Encoded("sparse", n, v[nonzero].astype(dtype), nonzero.astype(np.int32))
    return _dense_counts(v, hi)


def _count_dtype(hi: int) -> np.dtype:
    """The narrowest of ``uint8``, ``uint16``, ``uint32``, ``int64`` holding ``0 .. hi``."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if hi <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.int64)


def _dense_counts(v: np.ndarray, hi: int) -> Encoded:
    """The dense or narrow form of non-negative integers ``v`` (any integer dtype, largest
    ``hi``): whichever is smaller, a narrow one only where a few large values would otherwise
    widen every element."""
    n, wide = v.size, _count_dtype(hi)
    narrowed = (np.dtype(np.uint8), np.dtype(np.uint16)) if n <= POSITION_LIMIT else ()
    for narrow in narrowed:
        if narrow.itemsize >= wide.itemsize:
            break
        large = np.flatnonzero(v > np.iinfo(narrow).max)
        if narrow.itemsize * n + large.size * (4 + wide.itemsize) < wide.itemsize * n:
            values = v.astype(narrow)  # the large ones wrap, then are zeroed
            values[large] = 0
            big = v[large]
            return Encoded("narrow", n, values, large.astype(np.int32),
                           big.astype(_count_dtype(int(big.max()))))  # fmt: skip
    return Encoded("dense", n, v.astype(wide, copy=False))


def encode_sparse(length: int, positions: np.ndarray, values: np.ndarray) -> Encoded:
    """:func:`encode` of the float64 vector of ``length`` elements holding ``values`` at
    ``positions`` (distinct) and zeros elsewhere, without making that vector where it is
    sparse: the same kind, dtype and values (e.g. the counts of a chunk of a few thousand
    trials in two million pass-1 bins).

    >>> enc = encode_sparse(8, np.array([5, 1]), np.array([2.0, 3.0]))
    >>> enc.kind, enc.values.tolist(), enc.positions.tolist()
    ('sparse', [3, 2], [1, 5])
    >>> encode_sparse(8, np.array([5, 1]), np.array([2.0, 0.5])).kind  # as encode() makes it
    'float64'
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    p = np.asarray(positions, dtype=np.int64).reshape(-1)
    nonzero = v.view(np.int64) != 0  # by bits, as encode: -0.0 is not zero
    p, v = p[nonzero], v[nonzero]
    if p.size <= length * SPARSE_FRACTION and length <= POSITION_LIMIT:
        order = np.argsort(p, kind="stable")
        ints = _as_integers(v[order])
        if ints is not None:
            return Encoded("sparse", length, ints, p[order].astype(np.int32))
    dense = np.zeros(length)
    dense[p] = v
    return encode(dense)


def decode(enc: Encoded) -> np.ndarray:
    """The float64 vector that :func:`encode` encoded."""
    if enc.kind == "sparse":
        out = np.zeros(enc.length)
        out[enc.positions] = enc.values
        return out
    out = enc.values.astype(np.float64)
    if enc.kind == "narrow":
        out[enc.positions] = enc.large
    return out


def integers(enc: Encoded) -> np.ndarray:
    """The integers of a dense or narrow vector of counts, in one array (a narrow one's
    widened to hold its large values).

    >>> v = np.zeros(1000, dtype=np.int64); v[:] = 3; v[7] = 2**40
    >>> enc = encode_counts(v)
    >>> enc.kind, integers(enc).dtype, integers(enc)[[0, 7]].tolist()
    ('narrow', dtype('int64'), [3, 1099511627776])
    """
    if enc.kind == "dense":
        return enc.values
    if enc.kind != "narrow":
        raise ValueError(f"a {enc.kind} vector holds no array of integers")
    out = enc.values.astype(enc.large.dtype if enc.large.size else enc.values.dtype)
    out[enc.positions] = enc.large
    return out


def sum_encoded(parts: list[Encoded]) -> np.ndarray:
    """The float64 sum of encoded vectors, bit for bit ``np.sum(rows, axis=0)`` of their
    float64 stack.

    Integer vectors (counts, limbs: every partial sum below ``2**53`` is exact, so the order of
    the additions cannot show) are added one after the other into one float64 vector, a sparse
    one by its non-zero elements only. When a vector holds other values, the order shows (numpy
    adds 8 or more rows pairwise when they are the only axis), so the rows are stacked and
    summed by numpy itself, as before they were compact.
    """
    if not parts:
        raise ValueError("no vectors to add")
    for enc in parts[1:]:
        if enc.length != parts[0].length:
            raise ValueError(
                f"cannot add a vector of {enc.length} values to one of {parts[0].length}"
            )
    if any(enc.kind == "float64" for enc in parts):
        return np.stack([decode(enc) for enc in parts]).sum(axis=0)
    out = np.zeros(parts[0].length)
    for enc in parts:
        if enc.kind == "sparse":
            out[enc.positions] += enc.values  # positions are distinct: no lost updates
        else:
            out += enc.values
            if enc.kind == "narrow":  # where the values hold zeros
                out[enc.positions] += enc.large
    return out


def _count_bound(enc: Encoded) -> int | None:
    """The largest value of an encoded vector of non-negative integers, or None if it may hold
    anything else (a float64 vector, a negative value)."""
    v = enc.values
    if enc.kind == "float64" or v.dtype.kind not in "iu":
        return None
    if not v.size:
        return 0
    if v.dtype.kind == "i" and int(np.minimum.reduce(v)) < 0:
        return None
    hi = int(np.maximum.reduce(v))
    if enc.kind == "narrow" and enc.large.size:
        hi = max(hi, int(np.maximum.reduce(enc.large)))
    return hi


def add_encoded(parts: list[Encoded]) -> Encoded:
    """``encode(sum_encoded(parts))``, bit for bit, without the float64 total where every part
    holds non-negative integers whose maxima add up to less than ``2**53`` (counts and limbs:
    a merge task's inputs): they are added in integers, ``uint32`` where the maxima add up to
    less than ``2**32``, and the total is encoded by :func:`encode_counts`, which gives the
    kind, dtype and values :func:`encode` gives its float64 vector (every partial sum of the
    float64 path is then an exact integer, so both totals hold the same values). Anything else
    goes the float64 way.

    >>> a, b = encode(np.array([0.0, 3.0, 0.0, 2.0])), encode(np.array([1.0, 0.0, 0.0, 5.0]))
    >>> total = add_encoded([a, b])
    >>> total.kind, total.values.dtype, decode(total).tolist()
    ('dense', dtype('uint8'), [1.0, 3.0, 0.0, 7.0])
    """
    if not parts:
        raise ValueError("no vectors to add")
    bounds = [_count_bound(enc) for enc in parts]
    n = parts[0].length
    if any(b is None for b in bounds) or any(enc.length != n for enc in parts):
        return encode(sum_encoded(parts))  # (which refuses vectors of other lengths)
    bound = sum(bounds)  # type: ignore[arg-type]
    if bound >= 1 << 53:
        return encode(sum_encoded(parts))
    if all(enc.kind == "sparse" for enc in parts):
        held = sum(enc.positions.size for enc in parts)  # type: ignore[union-attr]
        if held <= n * SPARSE_FRACTION:  # few counts (small chunks): no vector of n made
            return _add_sparse(parts, n)
    out = np.zeros(n, dtype=np.uint32 if bound < 1 << 32 else np.int64)
    for enc in parts:  # no sum exceeds the bound: no wrap in uint32
        if enc.kind == "sparse":
            out[enc.positions] += enc.values.astype(out.dtype, copy=False)  # distinct positions
        else:
            np.add(out, enc.values, out=out, casting="unsafe")
            if enc.kind == "narrow":  # where the values hold zeros
                out[enc.positions] += enc.large.astype(out.dtype, copy=False)
    return encode_counts(out)


def _add_sparse(parts: list[Encoded], n: int) -> Encoded:
    """:func:`add_encoded` of sparse parts of non-negative integers that hold at most
    ``n * SPARSE_FRACTION`` values together: summed by position (their sums are non-zero),
    in the kind and dtype :func:`encode_counts` gives their total."""
    positions = np.concatenate([enc.positions for enc in parts])  # type: ignore[misc]
    values = np.concatenate([enc.values.astype(np.int64) for enc in parts])
    order = np.argsort(positions, kind="stable")
    positions, values = positions[order], values[order]
    if not values.size:
        return Encoded("sparse", n, values.astype(np.uint32), positions.astype(np.int32))
    starts = np.flatnonzero(np.r_[True, positions[1:] != positions[:-1]])
    totals = np.add.reduceat(values, starts)
    hi = int(totals.max())
    dtype = np.uint32 if hi < _U32_END else np.int64
    return Encoded("sparse", n, totals.astype(dtype), positions[starts].astype(np.int32))


def max_nbytes(length: int) -> int:
    """The most bytes an encoded vector of ``length`` elements holds (float64: no saving)."""
    return 8 * length
