"""Scores straight from embeddings: read embedding sets, score them by blocked matrix products.

Python API: :func:`read` (an embedding file as a lazy labelled set, see
:mod:`bosaris_dask.embeddings.store` for the layout), :func:`info`, and
:func:`scores_from_embeddings`, a lazy Scores object that every evaluation, calibration and
fusion consumes like a stored score matrix.

Modules: ``formats`` (one reader per file format), ``store`` (the labelled set), ``model_map``
(multi-session enrolment), ``prepare`` (selection, checks, centering, normalization),
``kernel`` (the deterministic block product), ``scoring`` (the lazy Scores), ``cohort`` and
``normalization`` (Z/T/S/AS-norm).
"""

from __future__ import annotations

from bosaris_dask.embeddings.cohort import cohort_quality, cohort_stats
from bosaris_dask.embeddings.model_map import read_model_map
from bosaris_dask.embeddings.prepare import estimate_center
from bosaris_dask.embeddings.scoring import scores_from_embeddings
from bosaris_dask.embeddings.store import EMBEDDING_DIMS, from_arrays, info, read

__all__ = [
    "read",
    "from_arrays",
    "info",
    "read_model_map",
    "estimate_center",
    "scores_from_embeddings",
    "cohort_stats",
    "cohort_quality",
    "EMBEDDING_DIMS",
]
