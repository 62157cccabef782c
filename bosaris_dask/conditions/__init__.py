"""Per-condition evaluation: condition tables, ``--by`` specs and exact per-condition summaries.

- :mod:`~bosaris_dask.conditions.tables`: reading condition tables of models, segments or
  trials (text, zarr, HDF5);
- :mod:`~bosaris_dask.conditions.codes`: ``--by`` specs and the condition of every trial;
- :mod:`~bosaris_dask.conditions.summaries`: the exact summaries of every system in every
  condition (:func:`condition_summaries`, through the grouped kernels of
  :mod:`bosaris_dask.passes.grouped`: each trial keyed once per pass for all conditions);
- :mod:`~bosaris_dask.conditions.equalized`: NIST partition-equalized metrics over the
  conditions (``equalize=True``), resolved exactly in the same refinement rounds;
- :mod:`~bosaris_dask.conditions.evaluation`: the labelled Dataset
  (:func:`~bosaris_dask.metrics.evaluate` with ``conditions=`` and ``by=``) and Cprimary.
"""

from bosaris_dask._deprecation import renamed_getattr
from bosaris_dask.conditions.codes import (
    BySpec,
    Conditions,
    ConditionWarning,
    condition_codes,
    parse_by,
)
from bosaris_dask.conditions.evaluation import (
    condition_result,
    conditions_as_systems,
    evaluate_conditions,
    summary_cprimary,
)
from bosaris_dask.conditions.summaries import ConditionSummaries, condition_summaries
from bosaris_dask.conditions.table_files import read_condition_table
from bosaris_dask.conditions.tables import ConditionTable, condition_table, table_from_frame

__all__ = [
    "BySpec",
    "Conditions",
    "ConditionWarning",
    "ConditionSummaries",
    "ConditionTable",
    "condition_codes",
    "condition_result",
    "condition_summaries",
    "condition_table",
    "conditions_as_systems",
    "evaluate_conditions",
    "parse_by",
    "read_condition_table",
    "summary_cprimary",
    "table_from_frame",
]

__getattr__ = renamed_getattr(__name__, {"cprimary": ("summary_cprimary", summary_cprimary)})
