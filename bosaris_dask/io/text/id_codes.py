"""Numbering a file's ids by first appearance, block after block.

A text reader meets each block's distinct ids (its ``uniques``, in first-appearance order) and
each record's position among them (its ``codes``); :class:`IdCodes` gives each id one number for
the whole file. With numba (``pip install bosaris-dask[fast]``) the ids stay bytes: the blocks
that pyarrow parsed hand their distinct ids over as UTF-8 (:class:`Utf8Ids`, its buffers, no
Python object per id) and a compiled open-addressing hash table over the bytes numbers them;
Python strings are made once per distinct id, at the end (:meth:`IdCodes.ids`). Without numba
a dict does it. A sparse list (as many distinct ids as lines: each block's ids are new) reads
3x faster this way at 6e6 lines (benchmarks/README.md, "Numbering a sparse list's ids"); the
tests compare both ways on the same blocks.

Examples
--------
>>> import numpy as np
>>> codes = IdCodes()
>>> codes.add(np.array([0, 1, 0]), Utf8Ids.of(["spk1", "spk2"])).tolist()
[0, 1, 0]
>>> codes.add(np.array([0, 1]), np.array(["spk3", "spk1"], dtype=object)).tolist()
[2, 0]
>>> len(codes), codes.ids()
(3, ['spk1', 'spk2', 'spk3'])
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat
from typing import Any

import numpy as np

from bosaris_dask.passes.jit import compiled

__all__ = ["BYTES_MIN_IDS", "IdCodes", "Utf8Ids", "bytes_coder"]

#: A block's ids go to :class:`IdCodes` as bytes when it holds at least this many distinct ones
#: (a sparse list's blocks: as many as their lines); fewer are faster as Python strings, and a
#: small file's reader then never imports numba.
BYTES_MIN_IDS = 1 << 14

_BOM = "\ufeff".encode()
#: The bytes ``str.strip`` removes by default among ASCII (an id may not start or end with one).
_WS_BYTES = np.frombuffer(b" \t\n\r\x0b\x0c", dtype=np.uint8)


@dataclass(frozen=True)
class Utf8Ids:
    """Distinct ids as UTF-8 bytes: id ``k`` is ``data[offsets[k]:offsets[k + 1]]``."""

    offsets: np.ndarray  # integers, len(ids) + 1, offsets[0] == 0
    data: np.ndarray  # uint8

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @classmethod
    def of(cls, texts: Any) -> Utf8Ids:
        """The UTF-8 bytes of Python strings."""
        encoded = [t.encode() for t in texts]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        return cls(offsets, np.frombuffer(b"".join(encoded), dtype=np.uint8))

    def texts(self) -> list[str]:
        """The ids as Python strings."""
        from bosaris_dask.io.text.typed import _ARROW  # (it makes these)

        if _ARROW is not None:  # 2-3x faster than slicing and decoding in Python
            offsets = np.ascontiguousarray(self.offsets, dtype=np.int64)
            array = _ARROW.LargeStringArray.from_buffers(
                len(self), _ARROW.py_buffer(offsets), _ARROW.py_buffer(self.data)
            )
            return array.to_pylist()
        raw = self.data.tobytes()
        bounds = self.offsets.tolist()
        return [raw[a:b].decode() for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

    def well_formed(self) -> bool:
        """Whether every id is one a trial list may hold: not empty, no ASCII whitespace at
        either end, not starting with ``#``, no byte-order mark (as
        :func:`bosaris_dask.io.text.parse._good_id` of each id as text)."""
        starts, ends = self.offsets[:-1], self.offsets[1:]
        if not len(starts):
            return True
        if np.any(ends <= starts):
            return False
        first, last = self.data[starts], self.data[ends - 1]
        return not (np.isin(first, _WS_BYTES).any() or np.isin(last, _WS_BYTES).any()
                    or (first == ord("#")).any() or _BOM in self.data.tobytes())  # fmt: skip


#: Columns of a row of the table (64 bytes, one cache line): the id's hash, its number (-1:
#: the row is empty), its length, then its first :data:`INLINE_BYTES` bytes as 5 words.
ROW = 8
INLINE_BYTES = 8 * (ROW - 3)


def _code_bytes(offsets, data, table, ids_offsets, ids_data, n, out):  # type: ignore[no-untyped-def]
    """Number the byte strings ``data[offsets[k]:offsets[k + 1]]`` into ``out``: a string met
    before keeps its number, a new one gets the next (``n``) and is appended to the stored ids
    (``ids_data`` from ``ids_offsets[n]``). ``table``: a power-of-two number of rows of
    :data:`ROW` int64 (the string's FNV-1a hash, its number or -1 where empty, its length, its
    first :data:`INLINE_BYTES` bytes packed little-endian, zero-padded), probed linearly from
    the hash. A string that long or shorter is compared in its row, in the cache line the probe
    read (rows of 32 bytes compared with the stored bytes, a second cache miss per id, took
    1.75 s against 0.93 s for 4.9e6 look-ups: benchmarks/README.md); a longer one with its
    stored bytes past those. The caller keeps the table at most 3/4 full and the
    stored arrays large enough. Returns the new ``n``."""
    mask = np.uint64(len(table) - 1)
    m = len(offsets) - 1
    # first the strings' hashes and inline words, then the probes: a loop that only probes
    # keeps more cache misses in flight (1.3x faster than hashing between them)
    hashes = np.empty(m, dtype=np.int64)
    words = np.zeros((m, ROW - 3), dtype=np.int64)
    for k in range(m):
        h = np.uint64(14695981039346656037)
        for i in range(offsets[k], offsets[k + 1]):
            byte = np.uint64(data[i])
            h = (h ^ byte) * np.uint64(1099511628211)
            j = i - offsets[k]
            if j < INLINE_BYTES:
                words[k, j >> 3] |= np.int64(byte << np.uint64(8 * (j & 7)))
        hashes[k] = np.int64(h)
    for k in range(m):
        a, b = offsets[k], offsets[k + 1]
        key, length = hashes[k], b - a
        slot = np.int64(np.uint64(key) & mask)
        while True:
            row = table[slot]
            if row[1] < 0:
                start = ids_offsets[n]
                row[0], row[1], row[2] = key, n, length
                row[3:] = words[k]
                ids_data[start : start + length] = data[a:b]
                ids_offsets[n + 1] = start + length
                out[k] = n
                n += 1
                break
            if row[0] == key and row[2] == length:
                same = True
                for w in range(ROW - 3):
                    if row[3 + w] != words[k, w]:
                        same = False
                        break
                if same and length > INLINE_BYTES:
                    start = ids_offsets[row[1]]
                    for i in range(INLINE_BYTES, length):
                        if ids_data[start + i] != data[a + i]:
                            same = False
                            break
                if same:
                    out[k] = row[1]
                    break
            slot = (slot + 1) & np.int64(mask)
    return n


def _rehash(old, table):  # type: ignore[no-untyped-def]
    """Move the filled rows of ``old`` into the empty (numbers -1) ``table``, by their hashes."""
    mask = np.uint64(len(table) - 1)
    for r in range(len(old)):
        if old[r, 1] >= 0:
            slot = np.int64(np.uint64(old[r, 0]) & mask)
            while table[slot, 1] >= 0:
                slot = (slot + 1) & np.int64(mask)
            table[slot] = old[r]


def _empty_table(rows: int) -> np.ndarray:
    """A table of ``rows`` empty rows, each in one 64-byte cache line."""
    flat = np.empty(rows * ROW + ROW, dtype=np.int64)
    skip = (-flat.ctypes.data % 64) // 8
    table = flat[skip : skip + rows * ROW].reshape(rows, ROW)
    table[:, 1] = -1
    return table


def bytes_coder() -> tuple[Any, Any] | None:
    """The compiled ``(_code_bytes, _rehash)``, or None without numba."""
    code, rehash = compiled(_code_bytes), compiled(_rehash)
    return None if code is None or rehash is None else (code, rehash)


def _grown(a: np.ndarray, size: int) -> np.ndarray:
    """``a`` in an array of at least ``size`` elements (doubling), its values kept."""
    if len(a) >= size:
        return a
    out = np.empty(max(size, 2 * len(a)), dtype=a.dtype)
    out[: len(a)] = a
    return out


class IdCodes:
    """The ids of a file numbered by first appearance: :meth:`add` each block's ``(codes,
    uniques)`` in file order (uniques: :class:`Utf8Ids`, or Python strings) and get each
    record's number. Strings go to a dict until a block hands its ids over as bytes (its
    parser found at least :data:`BYTES_MIN_IDS` of them, and numba is there): from then on the
    compiled table numbers them all, the dict's first."""

    def __init__(self) -> None:
        self._coder: tuple[Any, Any] | None = None
        self._dict: dict[str, int] = {}
        self._n = 0

    def __len__(self) -> int:
        return self._n if self._coder is not None else len(self._dict)

    def add(self, codes: np.ndarray, uniques: Utf8Ids | np.ndarray) -> np.ndarray:
        """The numbers of a block's records (``uniques[codes]``), new ids numbered next."""
        if self._coder is None and isinstance(uniques, Utf8Ids):
            self._to_bytes()
        if self._coder is None:
            texts = uniques.texts() if isinstance(uniques, Utf8Ids) else uniques
            return self._add_texts(codes, np.asarray(texts, dtype=object))
        if not isinstance(uniques, Utf8Ids):
            uniques = Utf8Ids.of(uniques)
        return self._add_bytes(uniques)[codes]

    def _to_bytes(self) -> None:
        """Number with the compiled table from now on (where numba is), the dict's ids first."""
        self._coder = bytes_coder()
        if self._coder is None:
            return
        self._offsets = np.zeros(1024 + 1, dtype=np.int64)
        self._data = np.empty(16 * 1024, dtype=np.uint8)
        self._table = _empty_table(2048)
        if self._dict:
            self._add_bytes(Utf8Ids.of(list(self._dict)))
            self._dict = {}

    def _add_bytes(self, uniques: Utf8Ids) -> np.ndarray:
        m = len(uniques)
        self._offsets = _grown(self._offsets, self._n + m + 1)
        self._data = _grown(self._data, self._offsets[self._n] + len(uniques.data))
        numbers = np.empty(m, dtype=np.int64)
        code, rehash = self._coder
        done = 0
        while done < m:  # in pieces that may all be new and keep the table at most 3/4 full
            room = 3 * len(self._table) // 4 - self._n
            if room < min(m - done, 4096):
                old, self._table = self._table, _empty_table(2 * len(self._table))
                rehash(old, self._table)
                continue
            end = done + min(m - done, room)
            piece = uniques.offsets[done : end + 1]
            self._n = code(piece, uniques.data, self._table, self._offsets, self._data, self._n,
                           numbers[done:end])  # fmt: skip
            done = end
        return numbers

    def _add_texts(self, codes: np.ndarray, uniques: np.ndarray) -> np.ndarray:
        table = self._dict
        g = np.fromiter(map(table.get, uniques, repeat(-1)), dtype=np.int64, count=len(uniques))
        new = np.flatnonzero(g < 0)
        if new.size:
            start = len(table)
            g[new] = np.arange(start, start + new.size)
            table.update(zip(uniques[new].tolist(), range(start, start + new.size), strict=True))
        return g[codes]

    def ids(self) -> list[str]:
        """The ids, in the order of their numbers."""
        if self._coder is None:
            return list(self._dict)
        return Utf8Ids(self._offsets[: self._n + 1], self._data).texts()
