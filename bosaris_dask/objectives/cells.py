"""Quality measures of trials laid out off their ids' grid: each cell's own quality vectors.

A quality fusion forms each trial's quality term from its model's and its segment's quality
vectors (:func:`~bosaris_dask.objectives.quality_sides`). On a models x segments grid those are
the row's and the column's. A sparse text list packed 4,096 trials to a row
(:mod:`bosaris_dask.io.text.packed`) has rows and columns that only number the trials, so each
cell carries its own trial's two vectors instead (as
:class:`~bosaris_dask.conditions.cells.CellConditions` carries each trial's condition).
:class:`TrialQuality` is the Quality object of the list's ids plus, per cell, the positions of
the trial's model and segment among those ids; it stands wherever a fit or an application of a
quality fusion takes a Quality object, with packed Key and Scores objects.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import xarray as xr

from bosaris_dask.errors import TrialError
from bosaris_dask.trials.listed import ListedTrials

__all__ = ["TrialQuality", "quality_terms", "trial_quality"]


@dataclass(frozen=True)
class TrialQuality:
    """The quality measures of trials whose matrix is not the grid of their ids.

    Attributes
    ----------
    quality
        The Quality object of the ids (:func:`bosaris_dask.trials.make_quality`).
    models, segments
        The trials' ids (model ids, segment ids).
    model_cells, segment_cells
        ``(rows, columns)`` integer arrays in the layout of the packed trial objects: each
        cell's trial's model position in ``models`` and segment position in ``segments``
        (padding cells hold no trial; what they point at is never read).
    """

    quality: xr.Dataset
    models: np.ndarray
    segments: np.ndarray
    model_cells: np.ndarray
    segment_cells: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        """The packed matrix's ``(rows, columns)``."""
        return self.model_cells.shape  # type: ignore[return-value]

    def mapped(self, fn: Callable[[xr.Dataset], xr.Dataset]) -> TrialQuality:
        """The same trials with the ids' Quality object mapped by ``fn`` (e.g. a ``Qtrans``)."""
        return replace(self, quality=fn(self.quality))

    def sides(self) -> tuple[np.ndarray, np.ndarray]:
        """Each model's and each segment's quality vector, a constant 1 appended (zero rows
        without quality), with the checks and errors of
        :func:`~bosaris_dask.objectives.quality_sides` on a grid of these ids."""
        from bosaris_dask.objectives.data import quality_sides

        return quality_sides(self.quality, self.models, self.segments)

    def cells(
        self, sides: tuple[np.ndarray, np.ndarray] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each cell's model-side and segment-side quality vectors: two ``(rows, columns,
        Q)`` arrays (``sides``: those of :meth:`sides`, when already computed)."""
        qm, qs = self.sides() if sides is None else sides
        return qm[self.model_cells], qs[self.segment_cells]

    def check_layout(self, shape: tuple[int, ...]) -> None:
        """A TrialError unless the trials are laid out in a matrix of ``shape``.

        Raises
        ------
        TrialError
            Naming both shapes.
        """
        if tuple(shape) != self.shape:
            raise TrialError(
                f"the trials' quality is laid out {self.shape[0]} x {self.shape[1]}, the trials "
                f"{shape[0]} x {shape[1]}: give the quality of the same packed trials"
            )


def trial_quality(quality: xr.Dataset, trials: ListedTrials) -> TrialQuality:
    """The quality of listed trials, each trial's model and segment positions placed in its
    cell.

    Examples
    --------
    >>> from bosaris_dask.trials import make_quality, quality_table
    >>> from bosaris_dask.trials.listed import ListedTrials
    >>> q = make_quality(quality_table(["m1", "m2"], [[0.5], [1.5]]),
    ...                  quality_table(["s1"], [[2.0]]))
    >>> trials = ListedTrials(np.array(["m1", "m2"]), np.array(["s1", "s9"]),
    ...                       np.array([1, 0, 0]), np.array([0, 1, 0]), lambda v: v[None])
    >>> qm, qs = trial_quality(q, trials).cells()
    >>> qm[0].tolist(), qs[0].tolist()  # s9 has no quality: a zero row
    ([[1.5, 1.0], [0.5, 1.0], [0.5, 1.0]], [[2.0, 1.0], [0.0, 0.0], [2.0, 1.0]])
    """
    cells = [trials.cells(np.asarray(of, dtype=np.int64))
             for of in (trials.model_of, trials.segment_of)]  # fmt: skip
    return TrialQuality(quality, np.asarray(trials.models), np.asarray(trials.segments), *cells)


def quality_terms(qm: np.ndarray, W: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """Each trial's quality term ``q~_m' W q~_s``: on a grid (``qm``: the rows' vectors,
    ``(rows, Q)``; ``qs``: the columns', ``(columns, Q)``) or for cells that carry their own
    (``(rows, columns, Q)`` each, as :meth:`TrialQuality.cells` gives them).

    The sums are written out as elementwise products and sums in one fixed order (``a = q~_m'
    W`` by rows of ``W``, then ``a . q~_s``), not left to a BLAS: a matrix product's rounding
    depends on the CPU's kernel and on the block's shape (the grid's ``qm @ W @ qs.T`` and a
    stacked product per cell differed in the last bit on AVX2 OpenBLAS), these give a trial
    the same bits in any layout, block size or machine.

    Examples
    --------
    >>> qm = np.array([[[1.0, 1.0], [2.0, 1.0]]])  # one row of two cells
    >>> qs = np.array([[[3.0, 1.0], [0.5, 1.0]]])
    >>> W = np.array([[1.0, 0.5], [0.5, 0.0]])
    >>> quality_terms(qm, W, qs).tolist()  # 1*3 + 0.5*(1 + 3), 2*0.5 + 0.5*(2 + 0.5)
    [[5.0, 2.25]]
    >>> grid = quality_terms(qm[0], W, qs[0])  # the grid of these ids: its diagonal is the cells'
    >>> np.diagonal(grid).tolist()
    [5.0, 2.25]
    """
    n = W.shape[0]
    if qm.ndim == 3:  # cells with their own vectors: one contiguous plane per measure
        return _cell_terms(np.moveaxis(qm, -1, 0).copy(), W, np.moveaxis(qs, -1, 0).copy())
    a = qm[..., 0:1] * W[0]
    for i in range(1, n):
        a += qm[..., i : i + 1] * W[i]
    # the grid, a band of rows at a time so that its sums stay in the cache (as fast as BLAS)
    columns = np.ascontiguousarray(qs.T)
    out = np.empty((len(qm), len(qs)))
    band = max(1, _TERM_BAND_BYTES // (8 * max(len(qs), 1)))
    product = np.empty((min(band, len(qm)), len(qs)))
    for start in range(0, len(qm), band):
        rows, part = a[start : start + band], out[start : start + band]
        np.multiply(rows[:, 0, None], columns[0], out=part)
        for j in range(1, n):
            part += np.multiply(rows[:, j, None], columns[j], out=product[: len(part)])
    return out


def _cell_terms(qm: np.ndarray, W: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """:func:`quality_terms` of cells from planes ``(Q, rows, columns)``, in the grid's order:
    ``a_j = q_0 W_0j + q_1 W_1j + ...``, then ``a_0 s_0 + a_1 s_1 + ...``."""
    n = W.shape[0]
    product = np.empty(qm.shape[1:])
    out = None
    for j in range(n):
        a = qm[0] * W[0, j]
        for i in range(1, n):
            a += np.multiply(qm[i], W[i, j], out=product)
        if out is None:
            out = a * qs[0]
        else:
            out += np.multiply(a, qs[j], out=product)
    return out


#: Bytes of the grid's quality terms summed at once by :func:`quality_terms`.
_TERM_BAND_BYTES = 2**19
