"""The small steps the compiled (numba) loops of the passes share: a score's order key, its
pass-1 bin, and a count kept in bytes.

Each is a plain function on scalars (numpy integers), which a loop calls by name and which
:func:`bosaris_dask.passes.jit.compiled` compiles into that loop (``calls=``); LLVM inlines them, so
a loop runs as if they were written out in it. They are written once here so that the pass-1
counts, the refinement selections and the bootstrap's block counts cannot drift apart: the key
is :func:`bosaris_dask.passes.keys.order_keys`' and the bin
:class:`~bosaris_dask.passes.binmap.BinMap`'s, which the numpy paths use and the tests compare the
loops with, bit for bit.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.passes.binmap import BinMap
>>> from bosaris_dask.passes.keys import order_keys
>>> s = np.array([-1.5, -0.0, 0.0, 2.0], dtype=np.float32)
>>> with np.errstate(over="ignore"):  # modular arithmetic, as compiled
...     keys = [order_key(np.uint64(b), *key_args(32)) for b in s.view(np.uint32)]
>>> keys == order_keys(np.array([-1.5, 0.0, 0.0, 2.0], dtype=np.float32)).tolist()
True
>>> sample = np.random.default_rng(0).normal(size=999).astype(np.float32)
>>> m = BinMap.from_sample(order_keys(sample), 32, 10)
>>> [int(bin_of(k, *map_args(m))) for k in keys] == m.bin_of(np.array(keys, np.uint32)).tolist()
True
>>> low, hist = np.full(2, 255, dtype=np.uint8), np.zeros(2, dtype=np.uint32)
>>> with np.errstate(over="ignore"):
...     add_one(low, hist, 1)  # the byte wraps: 256 more in hist
>>> (hist + low).tolist()
[255, 256]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from bosaris_dask.passes.binmap import BinMap

__all__ = ["order_key", "key_args", "exponent_bits", "bin_of", "map_args", "add_one", "LOOP_PARTS"]


def order_key(b, sign_bit, sign, ones):
    """The order-preserving key of a score's bits ``b`` (``uint64``) for ``k``-bit scores
    (``sign_bit = k - 1``, ``sign = 1 << (k - 1)``, ``ones = 2**k - 1``), -0.0 keyed as +0.0;
    no branch: a negative score's bits flipped, a positive one's sign bit set."""
    zero = np.uint64(0)
    b = zero if b == sign else b
    return b ^ (((zero - (b >> sign_bit)) & ones) | sign)


def key_args(bits: int) -> tuple[np.uint64, np.uint64, np.uint64]:
    """:func:`order_key`'s ``sign_bit, sign, ones`` for ``bits``-bit scores (32: float32, 64:
    float64), in that order: the loops take them so.

    >>> [int(x) for x in key_args(32)]
    [31, 2147483648, 4294967295]
    """
    return np.uint64(bits - 1), np.uint64(1 << (bits - 1)), np.uint64((1 << bits) - 1)


def exponent_bits(bits: int) -> np.uint64:
    """The exponent field of ``bits``-bit floats: a score whose bits hold all of it is not
    finite (``b & e == e``)."""
    return np.uint64(0x7F800000 if bits == 32 else 0x7FF0000000000000)


def bin_of(key, table, bucket_shift, shift, adaptive):
    """The pass-1 bin (``int64``) of ``key``: an adaptive map's one look-up in its ``table``
    (:attr:`bosaris_dask.passes.binmap.BinMap.table`: offset and shift of the key's bucket
    ``key >> bucket_shift``), else ``key >> shift``."""
    if adaptive:
        t = table[np.intp(key >> bucket_shift)]
        return (t >> 8) + np.int64(key >> np.uint64(t & 255))
    return np.int64(key >> shift)


def map_args(
    binmap: BinMap | None, shift: int = 0
) -> tuple[np.ndarray, np.uint64, np.uint64, bool]:
    """:func:`bin_of`'s ``table, bucket_shift, shift, adaptive`` for a
    :class:`~bosaris_dask.passes.binmap.BinMap` (``None``: the bins ``key >> shift``)."""
    if binmap is not None and binmap.adaptive:
        bucket_shift = np.uint64(binmap.key_bits - binmap.top)
        return binmap.table, bucket_shift, np.uint64(0), True
    shift = shift if binmap is None else binmap.shift
    return np.zeros(1, np.int64), np.uint64(0), np.uint64(shift), False


def add_one(low, hist, a):
    """Count one at ``a``: in the byte ``low[a]`` (``uint8``), 256 more in ``hist[a]`` when it
    wraps (the caller adds ``low`` to ``hist`` at the end). Bytes take a quarter of the cache
    that ``uint32`` counts take, where every trial's count is a cache miss."""
    v = np.uint8(low[a] + np.uint8(1))  # numba would widen the sum
    low[a] = v
    if v == 0:
        hist[a] += 256


#: All of them, for :func:`bosaris_dask.passes.jit.compiled`'s ``calls``.
LOOP_PARTS = (order_key, bin_of, add_one)
