"""How the bootstrap pass cuts a chunk into blocks, and runs them.

A block holds whole group pairs (every trial of a (model group, segment group) pair of the
chunk is in one block), so its pair histograms are complete and its products exact
(:mod:`~bosaris_dask.bootstrap.histograms`). Its memory is bounded three ways:

- its trials (per-trial temporaries) by ``_TRIALS``;
- its (group pair, condition) indices (the per-class counts and remaps) by ``_INDEX``;
- its occupied (condition, pair) cells (their count tables, ``width`` float32 words a row) by
  :func:`cell_limit`, at most ``BLOCK_BYTES`` of tables. Without conditions a plan
  (:func:`block_fits`) bounds them; with conditions a pair's trials can fall in several, so
  the block counts them before making a table and is cut where it runs
  (:func:`cut_runs`) when they are too many.

Examples
--------
>>> import numpy as np
>>> mcode, scode = np.array([0, 1, 0, 1]), np.array([2, 2, 0])  # ids in any order
>>> [(r.tolist(), c.tolist()) for r, c in grid_blocks(mcode, scode, width=40, n_conditions=1)]
[([0, 2, 1, 3], [2, 0, 1])]
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import dask.system
import numpy as np

from bosaris_dask.passes.blas import pinned_blas

__all__ = ["BLOCK_BYTES", "block_fits", "cell_limit", "cut_runs", "grid_blocks", "plan_runs",
           "run_blocks"]  # fmt: skip

#: The count tables a block may hold (bytes); blocks are cut beyond.
BLOCK_BYTES = 1 << 26
#: The most cells of one block (its per-trial temporaries).
_TRIALS = 1 << 22
#: The most (group pair, condition) indices of a block: its per-class counts and remaps are
#: four int64 arrays of them.
_INDEX = BLOCK_BYTES // 32


def cell_limit(width: int) -> int:
    """The most occupied (condition, group pair) cells of a block's two classes whose count
    tables (float32 rows of ``width``: bins, then the Cllr sums' limbs) fit ``BLOCK_BYTES``.

    >>> cell_limit(288)
    58254
    """
    return 2 * max(1, BLOCK_BYTES // (width * 8))


def block_fits(pairs: int, trials: int, width: int, n_conditions: int) -> bool:
    """Whether a planned block of ``pairs`` group pairs over ``trials`` cells keeps within the
    bounds: its trials within ``_TRIALS``, its ``pairs * G`` (pair, condition) indices within
    ``_INDEX``, and, without conditions, its occupied cells (at most ``min(pairs, trials)`` a
    class) within :func:`cell_limit`. Conditions can split a pair's trials into more cells: a
    block that then occupies too many is cut where it runs.

    >>> block_fits(1000, 100_000, 288, 1), block_fits(1000, 100_000, 288, 3000)
    (True, False)
    >>> block_fits(100_000, 10_000, 288, 1)  # at most 10,000 occupied cells a class
    True
    """
    indices = pairs * max(1, n_conditions)
    return trials <= _TRIALS and indices <= _INDEX and min(pairs, trials) <= cell_limit(width) // 2


def plan_runs(bounds: np.ndarray, fits: Callable[[int, int], bool]) -> list[tuple[int, int, int]]:
    """Consecutive runs of groups, at least one each, for which ``fits(groups, ids)`` holds:
    ``(first id, end id, groups)`` of each (``bounds``: the groups' id bounds).

    >>> plan_runs(np.array([0, 2, 3, 7, 8]), lambda groups, ids: ids <= 4)
    [(0, 3, 2), (3, 7, 1), (7, 8, 1)]
    """
    out, lo = [], 0
    for g in range(1, len(bounds)):
        if g - 1 > lo and not fits(g - lo, int(bounds[g] - bounds[lo])):
            out.append((int(bounds[lo]), int(bounds[g - 1]), g - 1 - lo))
            lo = g - 1
    out.append((int(bounds[lo]), int(bounds[-1]), len(bounds) - 1 - lo))
    return out


def cut_runs(ids: slice | np.ndarray, group: np.ndarray, parts: int) -> list[slice | np.ndarray]:
    """``ids`` (ordered by their ``group``, local codes) cut into up to ``parts`` runs of whole
    groups, each of about as many groups.

    >>> cut_runs(slice(10, 15), np.array([0, 0, 1, 2, 2]), 2)
    [slice(10, 12, None), slice(12, 15, None)]
    >>> [c.tolist() for c in cut_runs(np.array([4, 2, 9]), np.array([0, 1, 1]), 5)]
    [[4], [2, 9]]
    """
    n_groups = int(group[-1]) + 1
    starts = np.searchsorted(group, np.unique(np.linspace(0, n_groups, min(parts, n_groups) + 1)
                                              .astype(np.int64)))  # fmt: skip
    runs = zip(starts[:-1].tolist(), starts[1:].tolist(), strict=True)
    if isinstance(ids, slice):
        return [slice(ids.start + a, ids.start + b) for a, b in runs]
    return [ids[a:b] for a, b in runs]


def _runs(codes: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """The ids ordered by group (``None``: already in order) and each group's run bounds."""
    order = np.argsort(codes, kind="stable")
    ordered = codes[order]
    bounds = np.r_[np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]), len(codes)]
    return (None if np.array_equal(order, np.arange(len(codes))) else order), bounds


def _pick(order: np.ndarray | None, lo: int, hi: int) -> slice | np.ndarray:
    return slice(lo, hi) if order is None else order[lo:hi]


def grid_blocks(
    mcode: np.ndarray, scode: np.ndarray, *, width: int, n_conditions: int
) -> list[tuple[slice | np.ndarray, slice | np.ndarray]]:
    """A grid chunk's blocks of whole groups (rows, columns: slices, or indices where the ids
    of a group are not together), each within :func:`block_fits`: sets of segment groups
    sized for the tallest model group, then sets of model groups."""
    rows, rbounds = _runs(np.asarray(mcode))
    cols, cbounds = _runs(np.asarray(scode))
    tallest = int(np.diff(rbounds).max(initial=1))
    out = []
    for c0, c1, n_gs in plan_runs(cbounds, lambda g, ids: block_fits(g, ids * tallest, width,
                                                                     n_conditions)):  # fmt: skip
        fits = partial(_fits_rows, n_gs=n_gs, columns=c1 - c0, width=width,
                       n_conditions=n_conditions)  # fmt: skip
        out += [(_pick(rows, r0, r1), _pick(cols, c0, c1))
                for r0, r1, _ in plan_runs(rbounds, fits)]  # fmt: skip
    return out


def _fits_rows(groups: int, ids: int, *, n_gs: int, columns: int, width: int,
               n_conditions: int) -> bool:  # fmt: skip
    return block_fits(groups * n_gs, ids * columns, width, n_conditions)


def run_blocks(
    cuts: list[Any], block: Callable[[Any, np.ndarray, np.ndarray], None],
    shape: tuple[int, ...], pin_blas: bool,
) -> np.ndarray:  # fmt: skip
    """``block(cut, out, guard)`` for every cut of a chunk, summed: ``[out, guard]`` flattened.

    Tasks in parallel (``pin_blas``): one BLAS thread each, the blocks in turn; fewer tasks than
    cores: the blocks in threads of this task, each with one BLAS thread and its own sums
    (integers below 2**53, :func:`~bosaris_dask.bootstrap.histograms.check_exact`: the same sums
    in any order), or one block with a threaded BLAS.
    """
    threads = 1 if pin_blas else min(len(cuts), dask.system.CPU_COUNT)
    parts = [(np.zeros(shape), np.zeros(1)) for _ in range(threads)]

    def run(k: int) -> None:
        out, guard = parts[k]
        for cut in cuts[k::threads]:
            block(cut, out, guard)

    with pinned_blas() if pin_blas or threads > 1 else contextlib.nullcontext():
        if threads == 1:
            run(0)
        else:
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(run, range(threads)))
    out, guard = (sum(p[i] for p in parts[1:]) + parts[0][i] for i in (0, 1))
    return np.concatenate([out.reshape(-1), guard])
