"""Trials listed one by one: each trial's positions among the ids, and where its values go.

A trial list (a VoxCeleb or SRE key) names each trial's model and segment. Packed
(:mod:`bosaris_dask.io.text.packed`), its trials fill a matrix row by row, so a row is not a
model and a column not a segment; a grid's trials (:func:`numpy.nonzero` of its mask) sit in
their model's row and segment's column. What needs each trial's own values (its ``--by``
condition, :func:`~bosaris_dask.conditions.cells.trial_conditions`; its resampled groups,
:class:`~bosaris_dask.bootstrap.cells.TrialResample`; its quality vectors,
:func:`~bosaris_dask.objectives.cells.trial_quality`) takes a :class:`ListedTrials`.

Examples
--------
>>> import numpy as np
>>> trials = ListedTrials(np.array(["m1", "m2"]), np.array(["s1"]), np.array([1, 0]),
...                       np.array([0, 0]), lambda values: values[None])
>>> trials.ids.sizes["model"], trials.cells(np.array([7, 8])).tolist()
(2, [[7, 8]])
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import xarray as xr

__all__ = ["ListedTrials"]


@dataclass(frozen=True)
class ListedTrials:
    """Trials as (model, segment) positions among ids, with the layout of their matrix.

    Attributes
    ----------
    models, segments
        The ids.
    model_of, segment_of
        Each trial's position in ``models`` and in ``segments``.
    layout
        Per-trial values -> the matrix that holds the trials (each value in its trial's cell;
        e.g. ``functools.partial(packed_cells, key_list)``).
    """

    models: np.ndarray
    segments: np.ndarray
    model_of: np.ndarray
    segment_of: np.ndarray
    layout: Callable[[np.ndarray], np.ndarray]

    @functools.cached_property
    def ids(self) -> xr.Dataset:
        """The ids as a Dataset's ``model`` and ``segment`` coordinates."""
        return xr.Dataset(coords={"model": self.models, "segment": self.segments})

    def cells(self, values: np.ndarray) -> np.ndarray:
        """Per-trial ``values`` in the trials' matrix."""
        return self.layout(values)
