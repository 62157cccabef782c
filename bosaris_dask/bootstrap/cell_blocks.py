"""The bootstrap pass's chunk task where every trial has groups of its own (packed lists).

:func:`bosaris_dask.bootstrap.histograms.chunk_histograms` takes each row's model-side group
and each column's segment-side group: the layout of a models x segments grid. A packed text
list (:mod:`bosaris_dask.io.text.packed`) lays trials of many ids out in a row, so its cells
carry their groups (:class:`~bosaris_dask.bootstrap.cells.CellGroups`) as two more inputs of
the pass, and the chunk is cut by the trials' group pairs instead: its trials sorted by
``(model group, segment group)``, in blocks of whole pairs (each within
:func:`~bosaris_dask.bootstrap.blocks.block_fits`, cut further where conditions crowd it). A
block's trials go through the same per-trial loops (compiled or numpy: one row whose cells are
the block's pairs) and the same products
(:func:`~bosaris_dask.bootstrap.histograms._products`) as a block of the grid, so the
histograms are the same exact integer sums whichever layout the trials came in.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.bootstrap.bins import Binning
>>> binning = Binning.from_edges(np.array([0.0]), np.float64)
>>> m, s = np.array([[1, 1], [2, 0]]), np.array([[1], [1]])
>>> classes = np.array([[1, -1, -1, 1]], dtype=np.int8)  # the grid's 2 x 2 trials in one row
>>> scores = np.array([[1.0, -1.0, 0.5, 2.0]])
>>> model_cells, segment_cells = np.array([[0, 0, 1, 1]]), np.zeros((1, 4), int)
>>> out = cell_chunk_histograms(m, s, classes, scores, np.ones((1, 4), bool), model_cells,
...                        segment_cells, system=0, binning=binning)
>>> cells = out[:-1].reshape(2, 2, -1)  # (non-target/target, data/resample 1, bins + limbs)
>>> cells[0, :, :2].tolist(), cells[1, :, :2].tolist()
([[1.0, 1.0], [2.0, 0.0]], [[0.0, 2.0], [0.0, 2.0]])
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from bosaris_dask.bootstrap import fast_block, histograms
from bosaris_dask.bootstrap.bins import Binning
from bosaris_dask.bootstrap.blocks import block_fits, cell_limit, cut_runs, plan_runs, run_blocks

__all__ = ["cell_chunk_histograms"]


def cell_chunk_histograms(
    m: np.ndarray, s: np.ndarray, classes: np.ndarray, *blocks: np.ndarray, system: int,
    binning: Binning, pin_blas: bool = True, n_conditions: int = 0,
) -> np.ndarray:  # fmt: skip
    """One chunk's contribution, laid out as
    :func:`~bosaris_dask.bootstrap.histograms.chunk_histograms`'s, for system ``system`` of
    the ``blocks`` (scores, mask, scores, mask, ...; then each cell's condition with
    ``n_conditions``; then each cell's model-side and segment-side group).

    Without ``pin_blas`` (fewer tasks than cores), the blocks run in as many threads as cores,
    each with its own sums (integers: the same sums in any order).
    """
    score, mask = blocks[2 * system], blocks[2 * system + 1]
    cond = blocks[-3] if n_conditions else None
    model_cells, segment_cells = blocks[-2], blocks[-1]
    nb = binning.n_bins
    # checked on the client before the pass (check_multiplicities): only an internal guard here
    assert float(m.max()) * float(s.max()) < histograms._F32, "multiplicities not checked"
    m, s = m.T.astype(np.float32), s.T.astype(np.float32)  # rows: groups
    shape = (max(1, n_conditions), 2, m.shape[1], nb + histograms.LIMBS)
    rows, cols = np.nonzero((classes != 0) & mask)
    pair = model_cells[rows, cols].astype(np.int64) * len(s) + segment_cells[rows, cols]
    order = np.argsort(pair, kind="stable")
    rows, cols, pair = rows[order], cols[order], pair[order]
    width = nb + histograms.LIMBS
    cuts = _cuts(pair, partial(block_fits, width=width, n_conditions=n_conditions))

    def block(cut: tuple[int, int], out: np.ndarray, guard: np.ndarray) -> None:
        a, e = cut
        trials = (rows[a:e], cols[a:e])
        _block(m, s, pair[a:e], classes[trials], score[trials],
               None if cond is None else cond[trials], binning, nb, out, guard)  # fmt: skip

    return run_blocks(cuts, block, shape, pin_blas)


def _cuts(pair: np.ndarray, fits: Callable[[int, int], bool]) -> list[tuple[int, int]]:
    """Ranges of the sorted trials, cut where a pair begins, for which ``fits(pairs, trials)``
    holds (or one pair, whatever its trials):
    :func:`~bosaris_dask.bootstrap.blocks.block_fits`.

    >>> _cuts(np.array([0, 0, 1, 2, 2, 2, 5]), lambda pairs, trials: pairs <= 2)
    [(0, 3), (3, 7)]
    """
    if not len(pair):
        return []
    starts = np.r_[np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]]), len(pair)]
    return [(a, b) for a, b, _ in plan_runs(starts, fits)]


def _block(m, s, pair, classes, score, cond, binning, nb, out, guard) -> None:
    """Add the weighted histograms of a block's trials (``pair``: their group pairs, model group
    times the segment groups plus segment group, sorted) to ``out``."""
    first = np.r_[True, pair[1:] != pair[:-1]]
    local = np.cumsum(first) - 1  # each trial's cell: its pair among the block's
    pairs = pair[first]
    n_cells = len(pairs)
    gs_u, cell_segment = np.unique(pairs % len(s), return_inverse=True)
    one, every = np.zeros(1, dtype=np.intp), np.arange(len(pair), dtype=np.intp)
    classes, score, mask = classes[None], score[None], np.ones((1, len(pair)), dtype=bool)
    cond = None if cond is None else cond[None]
    limit = cell_limit(nb + histograms.LIMBS) if cond is not None and n_cells > 1 else None
    try:  # one row whose cells are the block's pairs: cell = 0 * n_cells + local
        per_class = fast_block.per_trial(classes, score, mask, cond, one, every, one, local,
                                         n_cells, n_cells, n_cells * out.shape[0], binning,
                                         limit)  # fmt: skip
        if per_class is None:
            per_class = histograms._per_trial(classes, score, mask, cond, one, local, n_cells,
                                              n_cells, binning, nb, limit)  # fmt: skip
    except fast_block.CrowdedBlock as crowded:  # conditions split its pairs: fewer pairs each
        for part in cut_runs(slice(0, len(pair)), local, -(-crowded.cells // limit)):
            _block(m, s, pair[part], classes[0, part], score[0, part], cond[0, part], binning,
                   nb, out, guard)  # fmt: skip
        return
    if per_class[0][3] >= histograms._BIG:
        histograms._refuse(per_class[0][3])
    histograms._products(m, s, per_class, pairs // len(s), cell_segment.reshape(-1), gs_u,
                         n_cells, nb, out, guard)  # fmt: skip
