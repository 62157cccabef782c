"""Scores straight from embeddings: read embedding sets, score them by blocked matrix products.

Python API: :func:`read` (an embedding file as a lazy labelled set, see
:mod:`bosaris_dask.embeddings.store` for the layout), :func:`write`, :func:`info`, and
:func:`scores_from_embeddings`, a lazy Scores object that every evaluation, calibration and
fusion consumes like a stored score matrix.

Modules: ``formats`` (one reader per file format), ``store`` (the labelled set), ``write``
(atomic writers), ``model_map`` (multi-session enrolment), ``classes`` (a key from two
``id class`` tables), ``prepare`` (selection, checks, centering, normalization), ``kernel``
(the deterministic block product), ``rounding`` (its certified rounding), ``screen`` (the
float32 screen of the refinement passes), ``scoring`` (the lazy Scores), ``cohort`` and
``normalization`` (Z/T/S/AS-norm).

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.metrics import evaluate
>>> from bosaris_dask.trials import key_from_labels
>>> rng = np.random.default_rng(0)
>>> speakers = rng.normal(size=(10, 16))
>>> e = from_arrays([f"e{i}" for i in range(10)], speakers + 0.3 * rng.normal(size=(10, 16)))
>>> t = from_arrays([f"t{i}" for i in range(40)],
...                 speakers[np.arange(40) % 10] + 0.3 * rng.normal(size=(40, 16)))
>>> key = key_from_labels(e.id.values, np.arange(10), t.id.values, np.arange(40) % 10)
>>> results = evaluate(scores_from_embeddings(e, t, trials=key), key)
>>> int(results.n_target.item()), int(results.n_nontarget.item()), float(results.eer.item())
(40, 360, 0.0)
"""

from __future__ import annotations

from bosaris_dask.embeddings.classes import key_from_class_tables, read_class_table
from bosaris_dask.embeddings.cohort import CohortWarning, cohort_quality, cohort_stats
from bosaris_dask.embeddings.model_map import read_model_map
from bosaris_dask.embeddings.prepare import estimate_center
from bosaris_dask.embeddings.scoring import (
    scores_from_embeddings,
    scores_with_cohort_quality,
    trial_scores,
)
from bosaris_dask.embeddings.store import EMBEDDING_DIMS, from_arrays, info, read
from bosaris_dask.embeddings.writer import write

__all__ = [
    "read",
    "write",
    "from_arrays",
    "info",
    "read_model_map",
    "read_class_table",
    "key_from_class_tables",
    "estimate_center",
    "scores_from_embeddings",
    "trial_scores",
    "scores_with_cohort_quality",
    "cohort_stats",
    "cohort_quality",
    "CohortWarning",
    "EMBEDDING_DIMS",
]
