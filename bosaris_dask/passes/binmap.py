"""The pass-1 bins of the engine: key prefixes of one length, or of lengths fitted to the scores.

Pass 1 (:mod:`bosaris_dask.engine`) counts trials per *bin*, a range of order-preserving keys
(:mod:`bosaris_dask.passes.keys`) that is a key prefix. A :class:`BinMap` says which prefix each key
falls in:

- :meth:`BinMap.uniform`: the top ``bits`` of the key (``key >> (key_bits - bits)``);
- :meth:`BinMap.from_sample` (adaptive): the top 16 bits of the key pick a *bucket* ``c``, and
  bucket ``c`` is split on its next ``e_c`` bits, where ``e_c`` grows with the share of a sample
  of the scores that falls in the bucket: where scores are dense the prefixes are longer, so
  every bin holds about as many trials and the total stays within ``2**budget_bits`` bins.
  ``bin = (key >> shift[c]) + offset[c]``: one look-up in a table of 65,536 entries.

Every bin is still a key prefix (of its own length), so a refinement pass splits a bin on the
key bits below it, and the engine's results do not depend on the map: only how many trials the
candidate bins hold after pass 1 (and so the number of passes) does.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.passes.keys import order_keys
>>> sample = order_keys(np.random.default_rng(0).normal(size=10_000).astype(np.float32))
>>> m = BinMap.from_sample(sample, 32, 18)
>>> m.nbins <= 2**18, int(m.extra.min()), int(m.extra.max())  # finer where scores are dense
(True, 0, 11)
>>> keys = order_keys(np.array([-1.0, 0.0, 0.5, 0.50001, 3.0], dtype=np.float32))
>>> bins = m.bin_of(keys)
>>> bool(np.all(np.diff(bins) >= 0))  # bins keep the order of the keys
True
>>> lo, bits = m.bin_lo_bits(bins)
>>> bool(np.all((keys.astype(np.uint64) - lo) >> bits.astype(np.uint64) == 0))
True
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from bosaris_dask.passes.unique import unique

__all__ = ["BinMap", "TOP_BITS", "MIN_ADAPTIVE_BITS"]

#: Key bits that pick an adaptive map's bucket (65,536 buckets: float32 sign, exponent and 7
#: mantissa bits; float64 sign, exponent and 4 mantissa bits), fewer for budgets under 2**20.
TOP_BITS = 16
#: The smallest budget (in bits) shared out adaptively: 2 bits of buckets, 16 bins each.
MIN_ADAPTIVE_BITS = 6


@dataclass(frozen=True, eq=False)
class BinMap:
    """Which pass-1 bin each order-preserving key falls in.

    Attributes
    ----------
    key_bits
        32 (float32 scores) or 64 (float64).
    top
        Key bits that pick a bucket.
    extra
        ``None`` for a uniform map (every bucket is one bin); else, per bucket, the extra key
        bits it is split on (``uint8``, ``2**top`` entries).
    """

    key_bits: int
    top: int
    extra: np.ndarray | None = None

    # ----------------------------------------------------------------------------------------
    # construction
    # ----------------------------------------------------------------------------------------

    @classmethod
    def uniform(cls, key_bits: int, bits: int) -> BinMap:
        """Bins of the top ``bits`` key bits."""
        return cls(key_bits, bits)

    @classmethod
    def from_sample(
        cls,
        keys: np.ndarray,
        key_bits: int,
        budget_bits: int,
        is_target: np.ndarray | None = None,
    ) -> BinMap:
        """A map fitted to ``keys`` (a sample of the trials' keys), at most ``2**budget_bits``
        bins; uniform (``budget_bits`` bits) for an empty sample or a budget under
        :data:`MIN_ADAPTIVE_BITS` bits.

        The buckets are the top ``min(TOP_BITS, budget_bits - 4)`` key bits (a sixteenth of the
        budget at most goes to buckets the sample leaves empty, one bin each). Bucket ``c`` gets
        ``2**e_c`` bins, about in proportion to its weight ``w_c``: the number of sample keys
        in it, or, given the sample's classes ``is_target``, ``sqrt((t_c + 1) * (n_c + 1))``
        for ``t_c`` targets and ``n_c`` non-targets (measured: 6x fewer trials in the candidate
        bins after pass 1 than equal shares of trials, as a bin can hide an ROC hull vertex only
        if it holds both classes). First ``e_c = floor(log2(w_c / share))``, then, while the
        budget allows, one more for the buckets with the most weight per bin; never more than
        16 bins per distinct sample key of the bucket (ties need no finer bins), nor prefixes
        longer than ``min(key_bits, 55)`` bits (so that :attr:`table` packs each bucket's
        offset and shift into one ``int64``).

        Examples
        --------
        >>> keys = np.array([7, 7, 7, 8, 9, 1 << 31], dtype=np.uint64)
        >>> m = BinMap.from_sample(keys, 32, 20)
        >>> int(m.extra[0]), int(m.extra[1 << 15]), int(m.extra[5])  # 3 distinct keys; 1; none
        (6, 4, 0)
        """
        keys = np.asarray(keys).astype(np.uint64, copy=False)
        if keys.size == 0 or budget_bits < MIN_ADAPTIVE_BITS:
            return cls.uniform(key_bits, budget_bits)
        top = min(TOP_BITS, budget_bits - 4)
        nb = 1 << top
        bucket = (keys >> np.uint64(key_bits - top)).astype(np.intp)
        h = np.bincount(bucket, minlength=nb)
        if is_target is None:
            w = h.astype(np.float64)
        else:
            t = np.bincount(bucket, weights=np.asarray(is_target, dtype=np.float64), minlength=nb)
            w = np.sqrt((t + 1.0) * (h - t + 1.0)) * (h > 0)
        distinct = np.bincount((unique(keys) >> np.uint64(key_bits - top)).astype(np.intp),
                               minlength=nb)  # fmt: skip
        room = np.zeros(nb, dtype=np.int64)
        full = h > 0
        room[full] = np.minimum(np.ceil(np.log2(distinct[full])) + 4, min(key_bits, 55) - top)
        budget = 1 << budget_bits
        share = w.sum() / (budget - nb)
        extra = np.zeros(nb, dtype=np.int64)
        extra[full] = np.floor(np.log2(np.maximum(w[full] / share, 1.0)))
        np.minimum(extra, room, out=extra)
        while int((np.int64(1) << extra).sum()) > budget:  # rounding: coarser everywhere
            extra = np.maximum(extra - 1, 0)
        # then split again the buckets with the most weight per bin, heaviest first
        left = budget - int((np.int64(1) << extra).sum())
        per_bin = np.where(extra < room, w / (np.int64(1) << extra), 0.0)
        order = np.argsort(-per_bin, kind="stable")
        order = order[per_bin[order] > 0]
        take = order[np.cumsum(np.int64(1) << extra[order]) <= left]
        extra[take] += 1
        return cls(key_bits, top, extra.astype(np.uint8))

    def __getstate__(self) -> dict:
        """Only the fields travel (to workers, in task graphs): the tables are rebuilt there."""
        return {"key_bits": self.key_bits, "top": self.top, "extra": self.extra}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    # ----------------------------------------------------------------------------------------
    # tables
    # ----------------------------------------------------------------------------------------

    @property
    def adaptive(self) -> bool:
        """Whether bins have prefixes of different lengths (else ``key >> shift``)."""
        return self.extra is not None

    @property
    def shift(self) -> int:
        """A uniform map's shift: ``bin = key >> shift``."""
        if self.extra is not None:
            raise ValueError("an adaptive bin map has no single shift")
        return self.key_bits - self.top

    @cached_property
    def _extra64(self) -> np.ndarray:
        assert self.extra is not None
        return self.extra.astype(np.int64)

    @cached_property
    def base(self) -> np.ndarray:
        """The first bin of each bucket (``int64``, ``2**top + 1`` entries: the last is
        :attr:`nbins`)."""
        if self.extra is None:
            return np.arange((1 << self.top) + 1, dtype=np.int64)
        return np.concatenate([[0], np.cumsum(np.int64(1) << self._extra64)])

    @property
    def nbins(self) -> int:
        """The number of bins."""
        return 1 << self.top if self.extra is None else int(self.base[-1])

    @cached_property
    def shifts(self) -> np.ndarray:
        """Per bucket, the key bits below its bins' prefix (the bins' ``bits``), in the key
        dtype."""
        assert self.extra is not None
        dt = np.uint32 if self.key_bits == 32 else np.uint64
        return (self.key_bits - self.top - self._extra64).astype(dt)

    @cached_property
    def offsets(self) -> np.ndarray:
        """Per bucket, ``base[c] - (c << e_c)`` (``int64``; ``|offset| < 2**55``): a key's bin
        is ``(key >> shifts[c]) + offsets[c]``."""
        c = np.arange(1 << self.top, dtype=np.int64)
        return self.base[:-1] - (c << self._extra64)

    @cached_property
    def table(self) -> np.ndarray:
        """Per bucket, ``offsets[c] * 256 + shifts[c]`` (``int64``): both in one look-up."""
        return (self.offsets << 8) | self.shifts.astype(np.int64)

    # ----------------------------------------------------------------------------------------
    # look-ups
    # ----------------------------------------------------------------------------------------

    def bins_into(
        self, keys: np.ndarray, out: np.ndarray, bucket: np.ndarray, shifts: np.ndarray
    ) -> np.ndarray:
        """The bin of each key into ``out`` (``intp``), with no allocation.

        ``bucket`` (``intp``) and ``shifts`` (the keys' dtype) are scratch of the keys' length;
        on return ``shifts`` holds each key's bin width in bits (adaptive maps only).
        """
        kdt = keys.dtype.type
        if self.extra is None:
            return np.right_shift(keys, kdt(self.key_bits - self.top), out=out, casting="unsafe")
        np.right_shift(keys, kdt(self.key_bits - self.top), out=bucket, casting="unsafe")
        np.take(self.table, bucket, out=out)
        np.bitwise_and(out, 255, out=shifts, casting="unsafe")
        np.right_shift(keys, shifts, out=bucket, casting="unsafe")  # below 2**55
        np.right_shift(out, 8, out=out)
        return np.add(out, bucket, out=out)

    def bin_of(self, keys: np.ndarray) -> np.ndarray:
        """The bin of each key (``intp``); ``keys`` in any unsigned dtype."""
        keys = np.asarray(keys)
        kdt = np.uint32 if self.key_bits == 32 else np.uint64
        k = keys.astype(kdt)
        out = np.empty(k.shape, dtype=np.intp)
        bucket = np.empty(k.shape, dtype=np.intp)
        return self.bins_into(k, out, bucket, np.empty_like(k))

    def bits_of_bins(self, bins: np.ndarray) -> np.ndarray:
        """The width in key bits of each bin (``int64``)."""
        bins = np.asarray(bins, dtype=np.int64)
        if self.extra is None:
            return np.full(bins.shape, self.key_bits - self.top, dtype=np.int64)
        c = np.searchsorted(self.base, bins, side="right") - 1
        return self.key_bits - self.top - self._extra64[c]

    def bin_lo_bits(self, bins: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The lowest key (``uint64``) and width in bits (``int8``) of each bin."""
        bins = np.asarray(bins, dtype=np.int64)
        if self.extra is None:
            shift = self.key_bits - self.top
            return (bins.astype(np.uint64) << np.uint64(shift),
                    np.full(bins.shape, shift, dtype=np.int8))  # fmt: skip
        c = np.searchsorted(self.base, bins, side="right") - 1
        bits = self.key_bits - self.top - self._extra64[c]
        lo = (c.astype(np.uint64) << np.uint64(self.key_bits - self.top)) + (
            (bins - self.base[c]).astype(np.uint64) << bits.astype(np.uint64)
        )
        return lo, bits.astype(np.int8)
