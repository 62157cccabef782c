"""The ``.bosaris`` accessor on Datasets: thin wrappers around the package's functions.

Registered when :mod:`bosaris_dask` is imported. Every method forwards to the plain function of
the same name (named in its docstring), with the Dataset as its first argument and the same
other arguments, as xarray's own accessors do: ``ds.bosaris.f(*args, **kw)`` is
``f(ds, *args, **kw)`` and no logic lives here.

On trial objects (Ndx, Key, Scores, Quality):

==============================  =============================================================
``kind``                        :func:`bosaris_dask.trials.kind_of`
``validate()``                  :func:`bosaris_dask.trials.validate`
``align(like)``                 :func:`bosaris_dask.align` (to ``like``'s ids and trials)
``reindex_ids(models, segs)``   :func:`bosaris_dask.trials.reindex_ids`
``filter(models, segments)``    :func:`bosaris_dask.filter_trials`
``merge(second)``               :func:`bosaris_dask.merge`
``coverage(trials)``            :func:`bosaris_dask.trials.coverage`
``classes()``                   :func:`bosaris_dask.trials.trial_classes`, labelled
``targets()``, ``nontargets()`` the Key's target / non-target masks (lazy)
``target_scores(key)``          :func:`bosaris_dask.trials.target_scores`
``nontarget_scores(key)``       :func:`bosaris_dask.trials.nontarget_scores`
``evaluate(key, ...)``          :func:`bosaris_dask.evaluate`
``summarize(key, ...)``         :func:`bosaris_dask.summarize` (a list of one summary)
``write(path, ...)``            :func:`bosaris_dask.write`
==============================  =============================================================

On the result of an evaluation (:func:`bosaris_dask.evaluate`):

==============================  =============================================================
``operating_points()``          :func:`bosaris_dask.operating_points`
``sweep_points()``              :func:`bosaris_dask.metrics.sweep_points`
``curve(system, kind)``         :func:`bosaris_dask.metrics.curve`
``to_json_dict()``              :func:`bosaris_dask.report.to_json_dict`
``format_table()``              :func:`bosaris_dask.report.format_table`
``det_plot(...)``               :func:`bosaris_dask.plots.det_plot`
``nbe_plot(...)``               :func:`bosaris_dask.plots.nbe_plot`
==============================  =============================================================

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
>>> result = scores.bosaris.evaluate(key, priors=[0.5])
>>> result.bosaris.kind, float(result.eer.item())
('evaluation', 0.0)
>>> result.bosaris.operating_points().min_dcf.values.tolist()
[[0.0]]
>>> [v.tolist() for v in result.bosaris.curve()]
[[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from bosaris_dask._deprecation import warn_renamed
from bosaris_dask.errors import TrialError

__all__ = ["BosarisAccessor"]


@xr.register_dataset_accessor("bosaris")
class BosarisAccessor:
    """``ds.bosaris``: the functions of :mod:`bosaris_dask` that take ``ds`` first, as methods."""

    def __init__(self, obj: xr.Dataset):
        self._obj = obj

    def _evaluation(self, what: str) -> xr.Dataset:
        from bosaris_dask.result_layout import check_evaluation

        return check_evaluation(self._obj, f".bosaris.{what}()")

    # ----------------------------------------------------------------------------------------
    # any bosaris Dataset
    # ----------------------------------------------------------------------------------------

    @property
    def kind(self) -> str:
        """``"ndx"``, ``"key"``, ``"scores"``, ``"quality"`` (:func:`bosaris_dask.trials.kind_of`),
        ``"evaluation"`` (the result of :func:`bosaris_dask.evaluate`) or ``"embeddings"`` (an
        embedding set, :func:`bosaris_dask.embeddings.read`)."""
        from bosaris_dask.result_layout import is_evaluation
        from bosaris_dask.trials import kind_of

        if is_evaluation(self._obj):
            return "evaluation"
        if "embedding" in self._obj and "id" in self._obj.coords:
            return "embeddings"

        return kind_of(self._obj)

    # ----------------------------------------------------------------------------------------
    # trial objects
    # ----------------------------------------------------------------------------------------

    def validate(self) -> xr.Dataset:
        """:func:`bosaris_dask.trials.validate`."""
        from bosaris_dask.trials import validate

        return validate(self._obj)

    def align(self, like: xr.Dataset, **kwargs: Any) -> xr.Dataset:
        """Align to the ids of ``like`` and restrict to its trials (:func:`bosaris_dask.align`)."""
        from bosaris_dask.trials import align

        return align(self._trials("align"), like, **kwargs)

    def reindex_ids(
        self, models: Iterable[Any], segments: Iterable[Any], **kwargs: Any
    ) -> xr.Dataset:
        """Reorder and resize to the given ids (:func:`bosaris_dask.trials.reindex_ids`)."""
        from bosaris_dask.trials import reindex_ids

        return reindex_ids(self._trials("reindex_ids"), models, segments, **kwargs)

    def filter(
        self, models: Iterable[Any] | None = None, segments: Iterable[Any] | None = None,
        **kwargs: Any,
    ) -> xr.Dataset:  # fmt: skip
        """:func:`bosaris_dask.filter_trials`."""
        from bosaris_dask.trials import filter_trials

        return filter_trials(self._trials("filter"), models, segments, **kwargs)

    def merge(self, second: xr.Dataset) -> xr.Dataset:
        """:func:`bosaris_dask.merge` (a key trial in both must have one label; a trial scored
        in both is an error)."""
        from bosaris_dask.trials import merge

        return merge(self._obj, second)

    def coverage(self, trials: xr.Dataset) -> dict[str, int]:
        """:func:`bosaris_dask.trials.coverage` of these scores over ``trials`` (one pass)."""
        from bosaris_dask.trials import coverage

        return coverage(self._obj, trials)

    def classes(self) -> xr.DataArray:
        """The signed trial classes of a Key (+1/-1/0) or an Ndx (+1/0), lazily
        (:func:`bosaris_dask.trials.trial_classes`, labelled)."""
        from bosaris_dask.trials import trial_classes

        obj = self._trials("classes", ("key", "ndx"))
        return xr.DataArray(
            trial_classes(obj), dims=("model", "segment"),
            coords={"model": obj.model, "segment": obj.segment}, name="trial_class",
        )  # fmt: skip

    def targets(self) -> xr.DataArray:
        """Boolean mask of a Key's target trials (lazy)."""
        return (self._key_classes("targets") == 1).rename("target")

    def nontargets(self) -> xr.DataArray:
        """Boolean mask of a Key's non-target trials (lazy)."""
        return (self._key_classes("nontargets") == -1).rename("nontarget")

    def _trials(self, what: str, kinds: tuple[str, ...] = ("key", "ndx", "scores")) -> xr.Dataset:
        """The object, if it is one of ``kinds``; else a TrialError naming the method (a Quality
        object or a result raised KeyError 'model')."""
        from bosaris_dask.trials import kind_of

        kind = kind_of(self._obj)
        if kind not in kinds:
            raise TrialError(f"{what}() takes {', '.join(kinds[:-1])} or {kinds[-1]}, not {kind}")
        return self._obj

    def _key_classes(self, what: str) -> xr.DataArray:
        """:meth:`classes` of a Key; an Ndx's trials have no class (its +1 is "a trial")."""
        from bosaris_dask.trials import kind_of

        if kind_of(self._obj) != "key":
            raise TrialError(f"{what}() needs a Key (targets and non-targets), not "
                             f"{kind_of(self._obj)}")  # fmt: skip
        return self.classes()

    def target_scores(self, key: xr.Dataset, **kwargs: Any) -> np.ndarray:
        """:func:`bosaris_dask.trials.target_scores` (small data only)."""
        from bosaris_dask.trials import target_scores

        return target_scores(self._obj, key, **kwargs)

    def nontarget_scores(self, key: xr.Dataset, **kwargs: Any) -> np.ndarray:
        """:func:`bosaris_dask.trials.nontarget_scores` (small data only)."""
        from bosaris_dask.trials import nontarget_scores

        return nontarget_scores(self._obj, key, **kwargs)

    def evaluate(self, key: xr.Dataset, **kwargs: Any) -> xr.Dataset:
        """Evaluate these scores against ``key`` (:func:`bosaris_dask.evaluate`)."""
        from bosaris_dask.metrics import evaluate

        return evaluate(self._obj, key, **kwargs)

    def summarize(self, key: xr.Dataset, **kwargs: Any) -> list[Any]:
        """The exact score summary against ``key``, as a list of one, as
        :func:`bosaris_dask.summarize` returns it."""
        from bosaris_dask.engine import summarize

        return summarize(self._obj, key, **kwargs)

    def write(self, path: str | os.PathLike[str], **kwargs: Any) -> Path:
        """Write to a store chosen from the path (:func:`bosaris_dask.write`)."""
        from bosaris_dask.io import write

        return write(self._obj, path, **kwargs)

    def to_store(self, path: str | os.PathLike[str], **kwargs: Any) -> Path:
        """Deprecated name of :meth:`write` (removed in the next release)."""
        warn_renamed(".bosaris.to_store(path)", ".bosaris.write(path)")
        return self.write(path, **kwargs)

    # ----------------------------------------------------------------------------------------
    # results of evaluate
    # ----------------------------------------------------------------------------------------

    def operating_points(self) -> xr.Dataset:
        """The reported operating points, indexed by ``prior``
        (:func:`bosaris_dask.operating_points`)."""
        from bosaris_dask.metrics import operating_points

        return operating_points(self._evaluation("operating_points"))

    def sweep_points(self) -> xr.Dataset:
        """The NBE sweep's points (:func:`bosaris_dask.metrics.sweep_points`)."""
        from bosaris_dask.metrics import sweep_points

        return sweep_points(self._evaluation("sweep_points"))

    def curve(self, system: Any = None, kind: str = "rocch") -> tuple[np.ndarray, np.ndarray]:
        """One system's ROC curve ``(pmiss, pfa)`` without padding
        (:func:`bosaris_dask.metrics.curve`)."""
        from bosaris_dask.metrics import curve

        return curve(self._evaluation("curve"), system, kind)

    def to_json_dict(self) -> dict[str, Any]:
        """The result as ``evaluate --json`` writes it
        (:func:`bosaris_dask.report.to_json_dict`)."""
        from bosaris_dask.report import to_json_dict

        return to_json_dict(self._evaluation("to_json_dict"))

    def format_table(self) -> str:
        """The result as ``evaluate`` prints it (:func:`bosaris_dask.report.format_table`)."""
        from bosaris_dask.report import format_table

        return format_table(self._evaluation("format_table"))

    def det_plot(self, **kwargs: Any) -> Any:
        """DET curves on a matplotlib Axes (:func:`bosaris_dask.plots.det_plot`)."""
        from bosaris_dask.plots import det_plot

        return det_plot(self._evaluation("det_plot"), **kwargs)

    def nbe_plot(self, **kwargs: Any) -> Any:
        """Normalized Bayes error-rate curves (:func:`bosaris_dask.plots.nbe_plot`)."""
        from bosaris_dask.plots import nbe_plot

        return nbe_plot(self._evaluation("nbe_plot"), **kwargs)
