"""bosaris_dask: exact BOSARIS-style evaluation, calibration and fusion of binary classifier
scores over billions of trials, out of core with dask.

The short API::

    import bosaris_dask as bd
    key, scores = bd.read("key.zarr"), bd.read("scores.h5")   # lazy trial objects
    result = bd.evaluate(scores, key, priors=[0.01])          # an xarray.Dataset
    bd.operating_points(result).min_dcf                       # the reported points, by prior
    scores.bosaris.evaluate(key, priors=[0.01])               # the same, through the accessor

- reading and writing: :func:`read`, :func:`write` (zarr, HDF5, MAT, text, by the path),
  :func:`read_quality`, :func:`write_quality`;
- trial objects (:class:`xarray.Dataset` with dimensions ``model`` and ``segment``):
  :func:`make_ndx`, :func:`make_key`, :func:`make_scores`, :func:`make_quality`,
  :func:`key_from_labels`, :func:`key_from_masks`; :func:`align`, :func:`filter_trials`,
  :func:`merge`;
- evaluation: :func:`evaluate` (every metric, exact, at any scale), :func:`operating_points`
  of its result, :func:`summarize` (the exact score summaries it rests on);
- models (``fit(scores, key)``, ``transform(scores)``, ``save``/``load``):
  :class:`LinearCalibrator`, :class:`PAVCalibrator`, :class:`LinearFuser`,
  :class:`QualityFuser`;
- errors: :class:`BosarisError` (the base of every error raised here), :class:`NotFittedError`.

Every Dataset has the ``.bosaris`` accessor (:mod:`bosaris_dask.accessor`): the functions that
take a trial object or a result first, as methods. Submodules hold the rest:
:mod:`~bosaris_dask.metrics` (single metrics on score arrays), :mod:`~bosaris_dask.trials`,
:mod:`~bosaris_dask.plots`, :mod:`~bosaris_dask.calibration`, :mod:`~bosaris_dask.fusion`,
:mod:`~bosaris_dask.cluster`, :mod:`~bosaris_dask.io`.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

from bosaris_dask import accessor, config  # noqa: F401  (``.bosaris``; the ``bosaris_dask.*`` keys)

# The public names are imported on first use (PEP 562): a dask worker that unpickles a kernel
# of bosaris_dask.passes.kernels imports numpy and that module, not scipy, h5py, zarr and the models
# (3 s of CPU per fresh worker process on this project's 2-core machine; issue 16).
_LAZY = {
    "LinearCalibrator": "bosaris_dask.calibration",
    "PAVCalibrator": "bosaris_dask.calibration",
    "summarize": "bosaris_dask.engine",
    "BosarisError": "bosaris_dask.errors",
    "NotFittedError": "bosaris_dask.errors",
    "LinearFuser": "bosaris_dask.fusion",
    "QualityFuser": "bosaris_dask.fusion",
    "read": "bosaris_dask.io",
    "read_quality": "bosaris_dask.io",
    "write": "bosaris_dask.io",
    "write_quality": "bosaris_dask.io",
    "evaluate": "bosaris_dask.metrics",
    "operating_points": "bosaris_dask.metrics",
    **{
        name: "bosaris_dask.trials"
        for name in (
            "align",
            "align_with",
            "filter_trials",
            "key_from_labels",
            "key_from_masks",
            "make_key",
            "make_ndx",
            "make_quality",
            "make_scores",
            "merge",
        )
    },  # fmt: skip
}

if TYPE_CHECKING:
    from bosaris_dask.calibration import LinearCalibrator, PAVCalibrator
    from bosaris_dask.engine import summarize
    from bosaris_dask.errors import BosarisError, NotFittedError
    from bosaris_dask.fusion import LinearFuser, QualityFuser
    from bosaris_dask.io import read, read_quality, write, write_quality
    from bosaris_dask.metrics import evaluate, operating_points
    from bosaris_dask.trials import (
        align,
        filter_trials,
        key_from_labels,
        key_from_masks,
        make_key,
        make_ndx,
        make_quality,
        make_scores,
        merge,
    )
    from bosaris_dask.trials import align_with as align_with  # deprecated: not in __all__


def __getattr__(name: str) -> Any:
    """The public names and submodules, imported on first use (PEP 562): ``import
    bosaris_dask`` stays light for the dask workers that unpickle a kernel."""
    module = _LAZY.get(name)  # first: ``operating_points`` is a function, not the old module
    if module is None:
        if importlib.util.find_spec(f"bosaris_dask.{name}") is None:
            raise AttributeError(f"module 'bosaris_dask' has no attribute {name!r}")
        # ``bosaris_dask.metrics`` after a bare ``import bosaris_dask``
        return importlib.import_module(f"bosaris_dask.{name}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The names of the package, the lazily imported public ones included."""
    return sorted(set(globals()) | set(__all__))


__version__ = "0.1.0"

__all__ = [
    "BosarisError",
    "NotFittedError",
    "read",
    "write",
    "read_quality",
    "write_quality",
    "evaluate",
    "operating_points",
    "summarize",
    "make_key",
    "make_ndx",
    "make_scores",
    "make_quality",
    "key_from_labels",
    "key_from_masks",
    "align",
    "filter_trials",
    "merge",
    "LinearCalibrator",
    "PAVCalibrator",
    "LinearFuser",
    "QualityFuser",
]
