"""bosaris_dask: exact BOSARIS-style evaluation, calibration and fusion of binary classifier
scores over billions of trials, out of core with dask.

The short API::

    import bosaris_dask as bd
    key, scores = bd.read("key.zarr"), bd.read("scores.h5")
    result = bd.evaluate(scores, key, priors=[0.01])      # an xarray.Dataset
    scores.bosaris.evaluate(key)                          # the same, through the accessor

Reading and writing (:func:`read`, :func:`write`), the trial constructors (:func:`make_key`,
:func:`make_ndx`, :func:`make_scores`, :func:`make_quality`, :func:`key_from_labels`, ...),
evaluation (:func:`evaluate`, :func:`summarize`; :func:`operating_points` of a result), and the
calibration and fusion models. The ``.bosaris`` accessor on every Dataset forwards to these
(:mod:`bosaris_dask.accessor`).
Submodules hold the rest: :mod:`~bosaris_dask.metrics` (single metrics on arrays),
:mod:`~bosaris_dask.plots`, :mod:`~bosaris_dask.cluster`, :mod:`~bosaris_dask.io`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from bosaris_dask import accessor as _accessor  # noqa: F401  (registers ``.bosaris``)

# The public names are imported on first use (PEP 562): a dask worker that unpickles a kernel
# of bosaris_dask.kernels imports numpy and that module, not scipy, h5py, zarr and the models
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
        for name in ("align", "align_with", "filter_trials", "key_from_labels",
                     "key_from_masks", "make_key", "make_ndx", "make_quality", "make_scores",
                     "merge")
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
        align_with,
        filter_trials,
        key_from_labels,
        key_from_masks,
        make_key,
        make_ndx,
        make_quality,
        make_scores,
        merge,
    )


_SUBMODULES = (
    "accessor", "calibration", "cli", "cluster", "compact", "conditions", "config", "embeddings",
    "engine", "errors", "exact_sum", "fusion", "io", "kernels", "keys", "llr_base", "memory",
    "metrics", "objectives", "operating_points", "optimize", "plots", "profiles", "progress",
    "refinement", "report", "roc", "runner", "simulate", "spoofing", "trials",
)  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:  # ``bosaris_dask.metrics`` after a bare ``import bosaris_dask``
        return importlib.import_module(f"bosaris_dask.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'bosaris_dask' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))


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
    "align_with",
    "filter_trials",
    "merge",
    "LinearCalibrator",
    "PAVCalibrator",
    "LinearFuser",
    "QualityFuser",
]
