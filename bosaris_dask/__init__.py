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

from bosaris_dask import accessor as _accessor  # noqa: F401  (registers ``.bosaris``)
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
