"""The exact AUC's counting kernels: the mixed bins of a summary and the exact count of their
pairs, per chunk and merged (pure numpy; the same on a chunk and on the client).

Both ways of counting use them: riding along the evaluation's passes
(:mod:`bosaris_dask.passes.riding_auc`) and the passes after it
(:mod:`bosaris_dask.passes.exact_auc`, where the method is described).

The examples are in :func:`mixed_bins` and :func:`mixed_twice_u`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import dask.array as da
import numpy as np

from bosaris_dask.errors import InconsistentPassesError
from bosaris_dask.passes import memory
from bosaris_dask.passes.keys import key_bits, key_dtype, keys_to_values, order_keys
from bosaris_dask.passes.score_summary import ScoreSummary

__all__ = [
    "BLOCK",
    "TABLE_BITS",
    "MixedBins",
    "mixed_bins",
    "mixed_twice_u",
    "in_bins",
    "AucPart",
    "Wanted",
    "part_keys",
    "collect_kernel",
    "merge_collected",
    "pair_count_kernel",
    "add_counts",
    "check_found",
    "auc_task_memory",
]

#: Bits of the prefix table that finds a chunk's trials of the mixed bins (1 MB per system).
TABLE_BITS = 20
#: Trials a kernel keys at a time (bounds its temporaries).
BLOCK = 1 << 20


@dataclass(frozen=True)
class MixedBins:
    """The mixed coarse bins of one system and how a chunk finds their trials.

    Attributes
    ----------
    lo, hi
        The lowest and highest key of each mixed bin (ascending, disjoint), in the key dtype.
    n_small, n_other
        Per mixed bin, the trials of the smaller class ``S`` and of the other class ``O``.
    small_is_target
        Whether ``S`` are the targets.
    table
        Bit ``key >> shift`` of ``table`` (``numpy.packbits`` order: 128 kB, as thousands of
        conditions each hold one) is set where a key's prefix overlaps a mixed bin
        (:meth:`overlaps`).
    shift
        The prefix shift of ``table``.
    """

    lo: np.ndarray
    hi: np.ndarray
    n_small: np.ndarray
    n_other: np.ndarray
    small_is_target: bool
    table: np.ndarray
    shift: int

    def overlaps(self, keys: np.ndarray) -> np.ndarray:
        """Whether each key's prefix overlaps a mixed bin (a superset of the keys inside).

        >>> s = ScoreSummary(np.dtype(np.float64), lo=np.array([0, 1 << 62], dtype=np.uint64),
        ...                  bits=np.array([62, 0], np.int8), n_tar=np.array([1, 1]),
        ...                  n_non=np.array([1, 0]), softplus_units=(0, 0))
        >>> mixed_bins(s).overlaps(np.array([5, 1 << 62], dtype=np.uint64)).tolist()
        [True, False]
        """
        return _bits_at(self.table, keys >> self.shift)

    @property
    def small_code(self) -> int:
        """The key code (+1 target, -1 non-target) of ``S``."""
        return 1 if self.small_is_target else -1

    def value_range(self, dtype: np.dtype) -> tuple[float, float]:
        """The lowest and highest score the mixed bins can hold (``-inf``/``inf`` where a bin
        reaches into the keys of NaNs): every trial of a mixed bin lies between them."""
        low, high = keys_to_values(np.array([self.lo[0], self.hi[-1]]), dtype)
        return (-np.inf if np.isnan(low) else low), (np.inf if np.isnan(high) else high)

    @property
    def n_s(self) -> int:
        return int(self.n_small.sum())

    @property
    def n_o(self) -> int:
        return int(self.n_other.sum())


def _bits_at(packed: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Bits ``at`` of a ``numpy.packbits`` array, as booleans."""
    at = at.astype(np.int64, copy=False)
    return ((packed[at >> 3] >> (7 - (at & 7)).astype(np.uint8)) & 1).astype(bool)


def mixed_bins(summary: ScoreSummary, small_is_target: bool | None = None) -> MixedBins | None:
    """The mixed coarse bins of ``summary`` (``None`` when there is none: the AUC is exact);
    ``S`` is the class with fewer trials in them unless ``small_is_target`` says.

    Examples
    --------
    >>> from bosaris_dask.measures import summary_from_arrays
    >>> s = summary_from_arrays([1.0, 2.0], [0.0, 2.0])  # exact bins only
    >>> mixed_bins(s) is None
    True
    """
    mixed = (summary.n_tar > 0) & (summary.n_non > 0) & (summary.bits > 0)
    if not mixed.any():
        return None
    kdt = key_dtype(summary.dtype)
    lo = summary.lo[mixed].astype(np.uint64)
    hi = lo + ((np.uint64(1) << summary.bits[mixed].astype(np.uint64)) - np.uint64(1))
    n_tar = summary.n_tar[mixed].astype(np.int64)
    n_non = summary.n_non[mixed].astype(np.int64)
    if small_is_target is None:
        small_is_target = int(n_tar.sum()) <= int(n_non.sum())
    shift = key_bits(summary.dtype) - TABLE_BITS
    p_lo, p_hi = (
        (lo >> np.uint64(shift)).astype(np.int64),
        (hi >> np.uint64(shift)).astype(np.int64),
    )
    diff = np.zeros((1 << TABLE_BITS) + 1, dtype=np.int32)
    np.add.at(diff, p_lo, 1)
    np.add.at(diff, p_hi + 1, -1)
    table = np.packbits(np.cumsum(diff[:-1]) > 0)
    return MixedBins(
        lo=lo.astype(kdt), hi=hi.astype(kdt),
        n_small=n_tar if small_is_target else n_non, n_other=n_non if small_is_target else n_tar,
        small_is_target=small_is_target, table=table, shift=shift,
    )  # fmt: skip


def mixed_twice_u(bins: MixedBins, small: np.ndarray, other: np.ndarray) -> tuple[int, int]:
    """Twice the U statistic of the pairs inside the mixed bins that ``other`` takes part in.

    ``small`` are the sorted keys of **every** ``S`` trial of the mixed bins; ``other`` the
    sorted keys of some ``O`` trials (any keys: those outside the mixed bins count for nothing).
    Each ``S`` key ``a`` and bin edge is looked up in ``other``; with ``l_a = #{x < a}``,
    ``r_a = #{x <= a}`` and, per bin ``b``, ``L_b = #{x < lo_b}``, ``H_b = #{x <= hi_b}``::

        S targets:  sum_a 2·#{x in b(a): x < a} + #{x = a} = sum_a (l_a + r_a) - 2·sum_b n_Sb·L_b
        S non-tar:  sum_a 2·#{x in b(a): x > a} + #{x = a} = 2·sum_b n_Sb·H_b - sum_a (l_a + r_a)

    Returns that exact integer and the number of ``O`` trials found in the mixed bins.

    Examples
    --------
    >>> from bosaris_dask.measures import summary_from_arrays
    >>> s = summary_from_arrays([1.0, 3.0], [2.0, 3.0, 9.0])
    >>> from dataclasses import replace
    >>> coarse = replace(s, lo=np.array([1 << 63], np.uint64), bits=np.array([63], np.int8),
    ...                  n_tar=np.array([2]), n_non=np.array([3]))
    >>> b = mixed_bins(coarse)
    >>> keys = lambda v: np.sort(order_keys(np.array(v)))
    >>> mixed_twice_u(b, keys([1.0, 3.0]), keys([2.0, 3.0, 9.0]))  # 3 > 2, a tie at 3: 2 + 1
    (3, 3)
    """
    small = np.asarray(small, dtype=bins.lo.dtype)
    other = np.asarray(other, dtype=bins.lo.dtype)
    left = np.searchsorted(other, small, side="left").astype(np.int64)
    right = np.searchsorted(other, small, side="right").astype(np.int64)
    below_lo = np.searchsorted(other, bins.lo, side="left").astype(np.int64)
    upto_hi = np.searchsorted(other, bins.hi, side="right").astype(np.int64)
    ranks = int(left.sum()) + int(right.sum())
    if bins.small_is_target:
        twice_u = ranks - 2 * int(np.dot(bins.n_small, below_lo))
    else:
        twice_u = 2 * int(np.dot(bins.n_small, upto_hi)) - ranks
    return twice_u, int((upto_hi - below_lo).sum())


def in_bins(keys: np.ndarray, bins: MixedBins) -> np.ndarray:
    at = np.searchsorted(bins.lo, keys, side="right") - 1
    return (at >= 0) & (keys <= bins.hi[np.maximum(at, 0)])


@dataclass(frozen=True)
class AucPart:
    """Whose trials a summary counts: system ``system``'s in condition ``condition`` (an index
    of the ``groups`` array given to :func:`exact_aucs`), or all of them (``None``)."""

    system: int
    condition: int | None = None


#: One system's parts in a pass: per part, its condition, its mixed bins and the key codes
#: (+1, -1) whose keys the pass wants.
Wanted = tuple[tuple[int | None, MixedBins, tuple[int, ...]], ...]


def part_keys(blocks: Sequence[np.ndarray], system: int, group_at: int | None,
               wanted: Wanted, inside: bool = True) -> list[list[np.ndarray]]:  # fmt: skip
    """Per part and wanted code, the sorted order keys of a chunk's trials of that class (and
    condition) whose prefix overlaps the part's mixed bins; ``inside``: only those inside the
    bins. Each trial is keyed once, whatever the parts: the pooled system and every condition
    share the keying."""
    classes, s, m = blocks[0], blocks[1 + 2 * system], blocks[2 + 2 * system]
    c, s, m = classes.reshape(-1), s.reshape(-1), m.reshape(-1)
    g = blocks[group_at].reshape(-1) if group_at is not None else None
    ranges = [bins.value_range(s.dtype) for _, bins, _ in wanted]
    low, high = min(r[0] for r in ranges), max(r[1] for r in ranges)
    kdt = wanted[0][1].lo.dtype
    # one table for every part (same key width: one system), so each key is looked up once
    # before the parts sort it out; a condition's part then sees its own trials only
    shift = wanted[0][1].shift
    table = wanted[0][1].table.copy()
    for _, bins, _ in wanted[1:]:
        table |= bins.table  # (packed bits: OR bytewise)
    table = np.unpackbits(table).view(bool)
    classes_wanted = {code for _, _, per in wanted for code in per}
    only = classes_wanted.pop() if len(classes_wanted) == 1 else 0  # key that class only
    found: list[list[list[np.ndarray]]] = [[[] for _ in codes] for _, _, codes in wanted]
    for lo in range(0, c.size, BLOCK):
        b = slice(lo, lo + BLOCK)
        sb, cb = s[b], c[b]
        picked = ((cb == only) if only else (cb != 0)) & m[b] & (sb >= low) & (sb <= high)
        if not picked.any():
            continue
        keys = order_keys(sb[picked])
        near = table[keys >> shift]
        keys, kc = keys[near], cb[picked][near]
        if not keys.size:
            continue
        by_group: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if g is not None:
            kg = g[b][picked][near]
            order = np.argsort(kg, kind="stable")
            values, starts = np.unique(kg[order], return_index=True)
            ends = [*starts[1:], len(order)]
            for v, a, e in zip(values.tolist(), starts.tolist(), ends, strict=True):
                by_group[v] = keys[order[a:e]], kc[order[a:e]]
        for i, (cond, bins, codes) in enumerate(wanted):
            if cond is None:
                own, own_c = keys, kc
            elif cond in by_group:
                own, own_c = by_group[cond]
            else:
                continue
            if len(wanted) > 1:  # (one part: the union table was its own)
                keep = bins.overlaps(own)
                own, own_c = own[keep], own_c[keep]
            for j, code in enumerate(codes):
                found[i][j].append(own if only else own[own_c == code])
    out = []
    for (_, bins, _), per_code in zip(wanted, found, strict=True):
        row = []
        for parts in per_code:
            keys = np.concatenate([np.empty(0, dtype=kdt), *parts])
            keys.sort()
            row.append(keys[in_bins(keys, bins)] if inside else keys)
        out.append(row)
    return out


def collect_kernel(
    *blocks: np.ndarray, system: int, group_at: int | None, wanted: Wanted
) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """Pass A, one system: per part, the sorted ``S`` keys of its mixed bins (and the ``O``
    ones when the pass wants them)."""
    found = part_keys(blocks, system, group_at, wanted)
    return [(row[0], row[1] if len(row) > 1 else None) for row in found]


def merge_collected(parts: list[list[tuple[np.ndarray, np.ndarray | None]]]) -> list:
    """Sorted runs merged, part by part (a stable sort of their concatenation merges runs)."""
    merged = []
    for i in range(len(parts[0])):
        small = np.sort(np.concatenate([p[i][0] for p in parts]), kind="stable")
        if parts[0][i][1] is None:
            merged.append((small, None))
        else:
            merged.append((small, np.sort(np.concatenate([p[i][1] for p in parts]),
                                          kind="stable")))  # fmt: skip
    return merged


def pair_count_kernel(
    small_all: np.ndarray,
    *blocks: np.ndarray,
    system: int,
    group_at: int | None,
    wanted: Wanted,
    at: tuple[slice, ...],
) -> list[int]:
    """Pass B, one system: per part, ``twice U, O trials`` of the chunk's ``O`` trials in its
    mixed bins (a flat list)."""
    found = part_keys(blocks, system, group_at, wanted, inside=False)  # counted in bins only
    counts: list[int] = []
    for (_, bins, _), (other,), where in zip(wanted, found, at, strict=True):
        counts.extend(mixed_twice_u(bins, small_all[where].astype(bins.lo.dtype), other))
    return counts


def add_counts(parts: list[list[int]]) -> list[int]:
    return [sum(column) for column in zip(*parts, strict=True)]


def auc_task_memory(
    inputs: Sequence[da.Array], n_small: int, n_other: int, both: bool, split_every: int
) -> memory.TaskMemory:
    """The peak memory of a task of the exact AUC's passes (checked before them).

    A chunk task holds its inputs, a block's temporaries (:data:`BLOCK` trials) and the keys
    it picks (at most the chunk's trials, sorted: twice); pass A's merge tasks hold up to
    ``split_every`` parts and their merge of the ``S`` keys (and of the ``O`` keys when
    ``both``); pass B's chunk tasks hold all ``S`` keys and their look-ups (four 8-byte words
    per key).
    """
    cells = int(np.prod([max(c) for c in inputs[0].chunks]))
    itemsize = inputs[1].dtype.itemsize  # the key's size
    pulled = (n_small + n_other) if both else n_small
    picked = 2 * min(cells, pulled if both else cells) * itemsize
    return memory.TaskMemory(
        inputs=cells * sum(a.dtype.itemsize for a in inputs),
        buffers=min(cells, BLOCK) * (2 * itemsize + 8),
        results=picked + (0 if both else 4 * 8 * n_small),
        merge=3 * pulled * itemsize,
        held=min(split_every, inputs[0].npartitions) * min(cells, pulled) * itemsize,
    )


def check_found(name: str, what: str, found: int, expected: int) -> None:
    if found != expected:
        raise InconsistentPassesError(
            f"{name}: the exact-AUC pass found {found:,} {what} trials in the mixed bins, "
            f"pass 1 counted {expected:,}: the scores changed between passes"
        )
