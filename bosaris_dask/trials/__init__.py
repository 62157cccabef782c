"""Trial objects: Ndx, Key, Scores and Quality as labelled xarray objects.

Every trial object is an :class:`xarray.Dataset` with dimensions ``("model", "segment")``, the
model and segment ids as coordinates of those dimensions, and ``attrs["bosaris_kind"]`` naming
what it is. The data are dask arrays, so a billion-trial object costs nothing until a pass runs.

==========  ======================================================================================
kind        data variables
==========  ======================================================================================
``ndx``     ``trial_mask`` (bool): which (model, segment) pairs are trials
``key``     ``trial_mask`` (int8): +1 target, -1 non-target, 0 no trial. A key *derived from
            labels* also has the coordinates ``model_label`` and ``segment_label``; its mask is
            computed lazily (target iff the labels are equal), so it costs no storage
``scores``  ``score`` (float32 or float64) and ``score_mask`` (bool): which entries are scores
``quality`` ``model_quality`` (``model`` x ``model_measure``) and/or ``segment_quality``
            (``segment`` x ``segment_measure``), float64; NaN rows mean "no quality"
==========  ======================================================================================

Examples
--------
>>> import numpy as np
>>> key = make_key(["m1", "m2"], ["s1", "s2", "s3"], np.array([[1, -1, 0], [-1, 1, -1]]))
>>> key.attrs["bosaris_kind"], dict(key.sizes)
('key', {'model': 2, 'segment': 3})
>>> scores = make_scores(["m2", "m1"], ["s3", "s1", "s2"], np.arange(6.0).reshape(2, 3))
>>> target_scores(scores, key), nontarget_scores(scores, key)
(array([4., 2.]), array([5., 1., 0.]))
"""

from __future__ import annotations

from bosaris_dask.trials.construction import DIMS as DIMS  # not in __all__; io.zarr_store uses it
from bosaris_dask.trials.construction import (
    KINDS,
    is_label_key,
    key_from_masks,
    kind_of,
    make_key,
    make_ndx,
    make_quality,
    make_scores,
    quality_table,
    trial_classes,
    validate,
)
from bosaris_dask.trials.idmap import (
    IdMap,
    map_model_names,
    map_segment_names,
    merge_quality_tables,
    read_id_map,
    read_list,
    write_id_map,
    write_list,
)
from bosaris_dask.trials.key_codes import locate as locate  # not in __all__; engine uses it
from bosaris_dask.trials.labels import key_from_labels
from bosaris_dask.trials.missing import AlignmentReport, alignment_report, set_missing_to_value
from bosaris_dask.trials.operations import (
    align,
    coverage,
    filter_trials,
    key_to_ndx,
    merge,
    nontarget_scores,
    reindex_ids,
    target_scores,
)
from bosaris_dask.trials.operations import align_with as align_with  # deprecated; not in __all__

__all__ = [
    "KINDS",
    "make_ndx",
    "make_key",
    "key_from_masks",
    "key_from_labels",
    "make_scores",
    "make_quality",
    "quality_table",
    "kind_of",
    "validate",
    "is_label_key",
    "trial_classes",
    "align",
    "reindex_ids",
    "filter_trials",
    "merge",
    "key_to_ndx",
    "coverage",
    "AlignmentReport",
    "alignment_report",
    "set_missing_to_value",
    "IdMap",
    "read_id_map",
    "write_id_map",
    "map_model_names",
    "map_segment_names",
    "read_list",
    "write_list",
    "merge_quality_tables",
    "target_scores",
    "nontarget_scores",
]
