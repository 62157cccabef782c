"""Per-condition evaluation: condition tables, ``--by`` specs and exact per-condition summaries.

See :mod:`bosaris_dask.conditions.tables` (reading tables), :mod:`~.codes` (the condition of
every trial), :mod:`~.summaries` (the exact summaries of every system in every condition) and
:mod:`~.evaluation` (the labelled Dataset).
"""

from bosaris_dask.conditions.codes import BySpec, Conditions, condition_codes, parse_by
from bosaris_dask.conditions.tables import ConditionTable, condition_table, read_condition_table

__all__ = [
    "BySpec",
    "Conditions",
    "ConditionTable",
    "condition_codes",
    "condition_table",
    "parse_by",
    "read_condition_table",
]
