"""bosaris_dask: exact BOSARIS-style evaluation, calibration and fusion of binary classifier
scores over billions of trials, out of core with dask."""

from bosaris_dask.errors import BosarisError
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

__version__ = "0.1.0"

__all__ = [
    "BosarisError",
    "align",
    "filter_trials",
    "key_from_labels",
    "key_from_masks",
    "make_key",
    "make_ndx",
    "make_quality",
    "make_scores",
    "merge",
]
