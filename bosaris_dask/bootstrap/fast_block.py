"""The bootstrap pass's per-trial work on a block as compiled (numba) loops, when numba is
installed (``pip install bosaris-dask[fast]``).

:func:`bosaris_dask.bootstrap.histograms._block`'s numpy path builds each trial's cell index
(group pair, condition), key, bin and Cllr term in some twenty array operations over the
block (boolean selections, ``where``, ``unique``-like remaps, ``bincount`` calls that hold the
GIL). Here a first loop reads each cell's class, mask, groups and score bits once, counts the
trials of every (class, cell) and writes the trials' cell, bin, class and score compactly; numpy
computes the trials' ``log1p(exp(-|s|))`` (numba's ``exp`` and ``log1p`` differ from numpy's
in the last bits, and the terms are rounded to a grid finer than their last bit); a second loop
adds each trial to its ``(occupied cell, bin)`` count and the high and low grid units of its
term to its cell's exact sums. Both compute only integers (counts, and units whose sums are
exact), so both paths give the same result, bit for bit; ``tests/test_bootstrap.py`` checks
them against each other.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.bootstrap.bins import Binning
>>> binning = Binning.from_edges(np.array([0.0]), np.float32)
>>> classes = np.array([[1, -1], [-1, 1]], dtype=np.int8)
>>> scores = np.array([[1.0, -1.0], [0.5, 2.0]], dtype=np.float32)
>>> both = np.arange(2)
>>> cells = per_trial(classes, scores, np.ones((2, 2), bool), None, both, both, both,
...                   np.array([0, 0]), 1, 2, 2, binning)
>>> if cells is None:  # numba missing or disabled: what the loops give
...     cells = [([0, 1], [[1, 0], [0, 1]]), ([0, 1], [[0, 1], [0, 1]])]
... else:
...     cells = [(c[0].tolist(), c[1][:, :2].astype(int).tolist()) for c in cells]
>>> cells  # per class (non-target, target): the occupied cells and their bin counts
[([0, 1], [[1, 0], [0, 1]]), ([0, 1], [[0, 1], [0, 1]])]
"""

from __future__ import annotations

import numpy as np

from bosaris_dask.bootstrap.bins import Binning
from bosaris_dask.passes.jit import compiled
from bosaris_dask.passes.loop_parts import LOOP_PARTS, key_args, order_key

__all__ = ["per_trial", "CrowdedBlock"]


class CrowdedBlock(Exception):
    """A block whose trials occupy more (condition, group pair) cells than its histograms may
    hold (``cells`` of them): the caller cuts it into smaller blocks."""

    def __init__(self, cells: int):
        super().__init__(cells)
        self.cells = cells


def _collect(
    classes, bits, mask, cond, has_cond, rows, cols, gm_l, gs_l, n_gs, n_cells, lut, shift,
    edges, sign_bit, sign, ones, counts, cell, bins, tar, score,
):  # fmt: skip  # pragma: no cover
    # compiled by numba (coverage does not see inside); tested against the numpy path
    n = 0
    for ii in range(rows.size):
        i = rows[ii]
        row = np.int64(gm_l[ii]) * n_gs
        for jj in range(cols.size):
            j = cols[jj]
            c = classes[i, j]
            if c == 0 or not mask[i, j]:
                continue
            p = row + np.int64(gs_l[jj])
            if has_cond:
                p += np.int64(cond[i, j]) * n_cells
            key = order_key(np.uint64(bits[i, j]), sign_bit, sign, ones)  # -0.0 as +0.0
            k = np.int64(lut[np.intp(key >> shift)])
            if k < 0:  # an edge inside the prefix: the edges <= key
                lo, hi = 0, edges.size
                while lo < hi:
                    mid = (lo + hi) // 2
                    if edges[mid] <= key:
                        lo = mid + 1
                    else:
                        hi = mid
                k = lo
            t = c == 1
            counts[1 if t else 0, p] += 1
            cell[n] = p
            bins[n] = k
            tar[n] = t
            score[n] = bits[i, j]
            n += 1
    return n


def _scatter(
    cell, bins, tar, score, f, remap, width, hist0, hist1, sums0, sums1, hi_scale, lo_scale
):  # pragma: no cover
    # compiled by numba; the operations of histograms._terms and _pair_sums, in the same order
    big = 0.0
    for n in range(cell.size):
        t = tar[n]
        slot = remap[1 if t else 0, cell[n]]
        z = np.float64(score[n])
        if t:
            z = -z
        if z < 0.0:
            z = 0.0
        term = z + f[n]
        if term > big:
            big = term
        scaled = term * hi_scale
        h = np.floor(scaled)
        lo = np.rint((scaled - h) * lo_scale)
        if t:
            hist1[slot * width + bins[n]] += 1
            sums1[0, slot] += np.int64(h)
            sums1[1, slot] += np.int64(lo)
        else:
            hist0[slot * width + bins[n]] += 1
            sums0[0, slot] += np.int64(h)
            sums0[1, slot] += np.int64(lo)
    return big


def per_trial(
    classes: np.ndarray, score: np.ndarray, mask: np.ndarray, cond: np.ndarray | None,
    rows: np.ndarray, cols: np.ndarray, gm_l: np.ndarray, gs_l: np.ndarray, n_gs: int,
    n_cells: int, n_total: int, binning: Binning, max_cells: int | None = None,
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, float]] | None:  # fmt: skip
    """Per class (non-target, target): the occupied cells (ascending), their ``(cells, bins +
    LIMBS)`` table (the counts of each bin, then zeros for the limbs; float32, float64 from
    ``2**24`` trials), their ``(2, cells)`` exact sums of the terms' high and low units (int64)
    and the largest term; ``None`` when numba is missing or disabled (the caller's numpy path).

    The block is rows ``rows`` and columns ``cols`` (int64 indices) of the chunk's arrays, read
    in place; its cell ``(rows[a], cols[b])`` is a trial of cell ``gm_l[a] * n_gs + gs_l[b]``
    (plus ``cond`` times the ``n_cells`` pairs) when its class is non-zero and its mask true;
    ``n_total`` bounds the cells. :class:`CrowdedBlock` when the two classes occupy more than
    ``max_cells`` cells in all (checked after counting, before any table is made).
    """
    collect, scatter = compiled(_collect, calls=LOOP_PARTS), compiled(_scatter)
    if collect is None or scatter is None:
        return None
    from bosaris_dask.bootstrap.histograms import _F32, _HI, _LO, LIMBS  # noqa: PLC0415

    kbits = score.dtype.itemsize * 8
    ku = np.uint32 if kbits == 32 else np.uint64
    size = rows.size * cols.size
    counts = np.zeros((2, n_total), dtype=np.int64)
    cell = np.empty(size, dtype=np.int64)
    bins = np.empty(size, dtype=np.int32)
    tar = np.empty(size, dtype=np.bool_)
    sbits = np.empty(size, dtype=score.dtype)
    n = collect(
        classes, score.view(ku), mask, cond if cond is not None else np.zeros((1, 1), np.int8),
        cond is not None, rows, cols, gm_l, gs_l, np.int64(n_gs), np.int64(n_cells), binning.lut,
        np.uint64(binning.shift), binning.edges.astype(np.uint64), *key_args(kbits),
        counts, cell, bins, tar,
        sbits.view(ku),
    )  # fmt: skip
    occupied = [np.flatnonzero(counts[c]) for c in (0, 1)]
    crowd = len(occupied[0]) + len(occupied[1])
    if max_cells is not None and crowd > max_cells:
        raise CrowdedBlock(crowd)
    cell, bins, tar, sbits = cell[:n], bins[:n], tar[:n], sbits[:n]
    # log1p(exp(-|s|)) by numpy (the numpy path's values, bit for bit)
    f = sbits.astype(np.float64)
    np.abs(f, out=f)
    np.negative(f, out=f)
    np.exp(f, out=f)
    np.log1p(f, out=f)
    remap = np.zeros((2, n_total), dtype=np.int64)
    for c, occ in enumerate(occupied):
        remap[c, occ] = np.arange(len(occ))
    width = binning.n_bins + LIMBS  # the counts, then room for the Cllr sums' limbs
    exact = np.float32 if n < _F32 else np.float64  # float32 counts are exact below 2**24
    hists = [np.zeros(len(occ) * width, dtype=exact) for occ in occupied]
    sums = [np.zeros((2, len(occ)), dtype=np.int64) for occ in occupied]
    big = scatter(cell, bins, tar, sbits, f, remap, np.int64(width), hists[0], hists[1], sums[0],
                  sums[1], 2.0**_HI, 2.0**_LO)  # fmt: skip
    return [(occupied[c], hists[c].reshape(-1, width), sums[c], big) for c in (0, 1)]
