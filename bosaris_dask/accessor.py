"""The ``.bosaris`` accessor on trial Datasets: thin wrappers around the package's functions.

Registered when :mod:`bosaris_dask` is imported. Every method forwards to a plain function
(named in its docstring) with the Dataset as its first argument, as xarray's own accessors do:
no logic lives here.

Examples
--------
>>> import numpy as np
>>> import bosaris_dask as bd
>>> key = bd.make_key(["m1", "m2"], ["s1", "s2"], np.array([[1, -1], [-1, 1]]))
>>> scores = bd.make_scores(["m1", "m2"], ["s1", "s2"], np.array([[2.0, 0.5], [-1.0, 1.5]]))
>>> scores.bosaris.kind, key.bosaris.kind
('scores', 'key')
>>> key.bosaris.targets().values.tolist()
[[True, False], [False, True]]
>>> scores.bosaris.target_scores(key).tolist()
[2.0, 1.5]
>>> round(float(scores.bosaris.evaluate(key, priors=[0.5]).eer.item()), 6)
0.0
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["BosarisAccessor"]


@xr.register_dataset_accessor("bosaris")
class BosarisAccessor:
    """``ds.bosaris``: the trial-object functions of :mod:`bosaris_dask` as methods."""

    def __init__(self, obj: xr.Dataset):
        self._obj = obj

    @property
    def kind(self) -> str:
        """The kind of trial object: ``"ndx"``, ``"key"``, ``"scores"`` or ``"quality"``."""
        from bosaris_dask.trials import kind_of

        return kind_of(self._obj)

    def validate(self) -> xr.Dataset:
        """:func:`bosaris_dask.trials.validate`."""
        from bosaris_dask.trials import validate

        return validate(self._obj)

    def align(self, like: xr.Dataset) -> xr.Dataset:
        """Align to the ids of ``like`` (:func:`bosaris_dask.trials.align_with`)."""
        from bosaris_dask.trials import align_with

        return align_with(self._obj, like)

    def reindex_ids(self, models: Iterable[Any], segments: Iterable[Any]) -> xr.Dataset:
        """Reorder and resize to the given ids (:func:`bosaris_dask.trials.align`)."""
        from bosaris_dask.trials import align

        return align(self._obj, models, segments)

    def filter(
        self, models: Iterable[Any] | None = None, segments: Iterable[Any] | None = None,
        **kwargs: Any,
    ) -> xr.Dataset:  # fmt: skip
        """:func:`bosaris_dask.trials.filter_trials`."""
        from bosaris_dask.trials import filter_trials

        return filter_trials(self._obj, models, segments, **kwargs)

    def classes(self) -> xr.DataArray:
        """The signed trial classes of a Key (+1/-1/0) or an Ndx (+1/0), lazily."""
        from bosaris_dask.trials import trial_classes

        obj = self._obj
        return xr.DataArray(
            trial_classes(obj), dims=("model", "segment"),
            coords={"model": obj.model, "segment": obj.segment}, name="trial_class",
        )  # fmt: skip

    def targets(self) -> xr.DataArray:
        """Boolean mask of a Key's target trials (lazy)."""
        return (self.classes() == 1).rename("target")

    def nontargets(self) -> xr.DataArray:
        """Boolean mask of a Key's non-target trials (lazy)."""
        return (self.classes() == -1).rename("nontarget")

    def target_scores(self, key: xr.Dataset, **kwargs: Any) -> np.ndarray:
        """:func:`bosaris_dask.trials.target_scores` (small data only)."""
        from bosaris_dask.trials import target_scores

        return target_scores(self._obj, key, **kwargs)

    def nontarget_scores(self, key: xr.Dataset, **kwargs: Any) -> np.ndarray:
        """:func:`bosaris_dask.trials.nontarget_scores` (small data only)."""
        from bosaris_dask.trials import nontarget_scores

        return nontarget_scores(self._obj, key, **kwargs)

    def evaluate(self, key: xr.Dataset, **kwargs: Any) -> xr.Dataset:
        """Evaluate these scores against ``key`` (:func:`bosaris_dask.metrics.evaluate`)."""
        from bosaris_dask.metrics import evaluate

        return evaluate(self._obj, key, **kwargs)

    def summarize(self, key: xr.Dataset, **kwargs: Any) -> Any:
        """The exact score summary against ``key`` (:func:`bosaris_dask.engine.summarize`)."""
        from bosaris_dask.engine import summarize

        (summary,) = summarize([self._obj], key, **kwargs)
        return summary

    def to_store(self, path: str | os.PathLike[str], **kwargs: Any) -> Path:
        """Write to a store chosen from the path (:func:`bosaris_dask.io.write`)."""
        from bosaris_dask.io import write

        return write(self._obj, path, **kwargs)
