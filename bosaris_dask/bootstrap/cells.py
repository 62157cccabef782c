"""The resampled groups of trials whose matrix is not the grid of their ids (packed lists).

A packed text list (:mod:`bosaris_dask.io.text.packed`) lays trials of many models and segments
out ``width`` to a row, so a row is not a model and a column not a segment: each trial's
model-side and segment-side groups come from its own ids, as its ``--by`` condition does
(:class:`~bosaris_dask.conditions.cells.CellConditions`). :class:`TrialResample` is the recipe
(``--resample`` specs, condition tables and the listed trials), made into
:class:`CellGroups` by the bootstrap where it makes the grid's
(:func:`~bosaris_dask.bootstrap.resample.resample_groups`, from the same ids: the same groups,
numbers, checks and messages, in the same order among the bootstrap's other checks). The
groups, and so the resamples' multiplicities for a seed, are the grid's; only where each trial
finds its groups differs.

Examples
--------
>>> from bosaris_dask.conditions import condition_table
>>> from bosaris_dask.trials.listed import ListedTrials
>>> trials = ListedTrials(np.array(["m1", "m2"]), np.array(["s1", "s2"]), np.array([0, 1, 1]),
...                       np.array([0, 0, 1]), lambda v: v[None])
>>> spk = condition_table("segment", ["s1", "s2"], {"spk": ["b", "a"]})
>>> recipe = TrialResample(("segment.spk",), (spk,), trials)
>>> groups = recipe.groups()
>>> groups.segment_codes.tolist(), groups.segment_cells.tolist(), groups.model_cells.tolist()
([1, 0], [[1, 1, 0]], [[0, 0, 0]])
>>> groups.pair_factor(((1,), (2, 1)))  # the segment groups of both chunks: 1 + 1 of 2
1.0
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask.bootstrap.resample import SideGroups, resample_groups
from bosaris_dask.conditions.tables import ConditionTable, as_condition_table
from bosaris_dask.errors import OptionError
from bosaris_dask.trials.listed import ListedTrials

__all__ = ["CellGroups", "TrialResample"]


@dataclass(frozen=True)
class CellGroups(SideGroups):
    """:class:`~bosaris_dask.bootstrap.resample.SideGroups` of the lists' ids, plus each
    cell's model-side and segment-side group (``model_cells``, ``segment_cells``, in the layout
    of the packed key; 0 in the padding after the ``n_trials`` trials)."""

    model_cells: np.ndarray
    segment_cells: np.ndarray
    n_trials: int

    def check_layout(self, key: xr.Dataset) -> None:
        """OptionError unless the cells are laid out as ``key``'s."""
        shape = (key.sizes["model"], key.sizes["segment"])
        if self.model_cells.shape != shape:
            raise OptionError(f"the resampled groups given are laid out {self.model_cells.shape}"
                              f", the key {shape}")  # fmt: skip

    def arrays(self, chunks: Any) -> tuple[da.Array, da.Array]:
        """The cells' model-side and segment-side groups as arrays in ``chunks``."""
        return tuple(da.from_array(c, chunks=chunks) for c in (self.model_cells,
                                                               self.segment_cells))  # fmt: skip

    def pair_factor(self, chunks: tuple[tuple[int, ...], ...]) -> float:
        """Over the chunks, the model groups times the segment groups each holds, summed, over
        ``n_model * n_segment`` (as the grid's: 1 when no group's trials are split)."""
        width = self.model_cells.shape[1]
        rows, cols = (np.cumsum([0, *c]) for c in chunks)
        total = 0
        for r0, r1 in zip(rows[:-1], rows[1:], strict=True):
            flat = np.arange(r0, r1)[:, None] * width
            for c0, c1 in zip(cols[:-1], cols[1:], strict=True):
                trial = (flat + np.arange(c0, c1)[None, :]) < self.n_trials
                total += len(np.unique(self.model_cells[r0:r1, c0:c1][trial])) * len(
                    np.unique(self.segment_cells[r0:r1, c0:c1][trial]))  # fmt: skip
        return float(total / (self.n_model * self.n_segment))


@dataclass(frozen=True)
class TrialResample:
    """``--resample`` specs of listed trials; ``tables``: condition tables or paths to
    read."""

    specs: tuple[str, ...]
    tables: Sequence[ConditionTable | str]
    trials: ListedTrials

    def groups(self) -> CellGroups:
        """The groups, as :func:`~bosaris_dask.bootstrap.resample.resample_groups` makes them
        for the ids' grid (its errors), and every trial's in its cell."""
        tables = [as_condition_table(t) for t in self.tables]
        trials = self.trials
        base = resample_groups(trials.ids, tables, self.specs)
        sides = ((base.model_codes, trials.model_of), (base.segment_codes, trials.segment_of))
        cells = [trials.cells(codes[of].astype(np.int32)) for codes, of in sides]
        return CellGroups(base.specs, base.model_codes, base.segment_codes, base.n_model,
                          base.n_segment, base.resampled, *cells, len(trials.model_of))  # fmt: skip
