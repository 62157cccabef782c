"""The conditions of trials one by one: each cell's condition held, not computed from its row
and column. For packed text lists (a row holding trials of many models: each trial's condition
from its own ids, :func:`trial_conditions`) and for ``trial.COL`` specs, whose values belong to
the trial itself (a table of trials; on a grid, :func:`grid_trial_conditions`).

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.trials import make_key
>>> from bosaris_dask.conditions.tables import condition_table
>>> key = make_key(["m1", "m2"], ["s1", "s2"], [[1, -1], [0, 1]])
>>> trials = condition_table("trial", ["m1", "m1", "m2"], {"phone": ["Y", "N", "N"]},
...                          segments=["s1", "s2", "s2"])
>>> cond = grid_trial_conditions(key, [trials], ["trial.phone"])
>>> cond.values, cond.cells.tolist()  # the cell that is no trial gets 0
((('N', 'Y'),), [[1, 0], [0, 0]])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
import pandas as pd
import xarray as xr

from bosaris_dask import config
from bosaris_dask.conditions.codes import (
    BySpec,
    Conditions,
    parse_specs,
    side_conditions,
)
from bosaris_dask.conditions.tables import TRIAL, ConditionTable
from bosaris_dask.errors import OptionError, TrialError, option
from bosaris_dask.progress import compute
from bosaris_dask.trials.listed import ListedTrials

__all__ = ["CellConditions", "trial_conditions", "grid_trial_conditions"]


@dataclass(frozen=True)
class CellConditions(Conditions):
    """Conditions held cell by cell: of trials whose matrix is not the grid of their ids (the
    packed text lists of :mod:`bosaris_dask.io.text.packed`, a row holding trials of many
    models), or with a ``trial.COL`` spec. Each cell's condition is given (``cells``, in the
    layout of the key; 0 in padding cells and cells that are no trial) and
    ``model_codes``/``segment_codes`` are those of the ids. Made by :func:`trial_conditions`."""

    cells: np.ndarray

    def possible_groups(self, limit: int = 1 << 22) -> np.ndarray:
        """The conditions of the cells, ascending (padding cells' 0 too: a superset)."""
        return np.flatnonzero(np.bincount(self.cells.ravel(), minlength=self.n_conditions))

    def group_index(self, chunks: Any) -> da.Array:
        """The condition of every cell, a ``(rows, columns)`` array in ``chunks``."""
        chunks = da.core.normalize_chunks(chunks, self.cells.shape, dtype=self.dtype)
        return da.from_array(self.cells.astype(self.dtype, copy=False), chunks=chunks)


def trial_conditions(
    trials: ListedTrials, tables: Iterable[ConditionTable], by: Iterable[str | BySpec]
) -> CellConditions:
    """The conditions of listed trials, each trial's condition placed in its cell. As
    :func:`~bosaris_dask.conditions.codes.condition_codes` for a grid: the same specs, values,
    checks and messages; a ``trial.COL`` spec's values are those its column takes on these
    trials.

    Examples
    --------
    >>> from bosaris_dask.conditions.tables import condition_table
    >>> from bosaris_dask.trials.listed import ListedTrials
    >>> trials = ListedTrials(np.array(["m1", "m2"]), np.array(["s1", "s2"]),
    ...                       np.array([0, 1, 1]), np.array([0, 0, 1]), lambda g: g[None])
    >>> models = condition_table("model", ["m1", "m2"], {"g": ["f", "m"]})
    >>> segments = condition_table("segment", ["s1", "s2"], {"g": ["m", "f"]})
    >>> cond = trial_conditions(trials, [models, segments], ["model.g", "same.g"])
    >>> cond.labels[cond.cells[0, 2]], cond.cells.tolist()
    ({'model.g': 'm', 'same.g': 'different'}, [[1, 2, 3]])
    >>> phones = condition_table("trial", ["m1", "m2", "m2"], {"phone": ["Y", "N", "Y"]},
    ...                          segments=["s1", "s1", "s2"])
    >>> cond = trial_conditions(trials, [models, phones], ["model.g", "trial.phone"])
    >>> [cond.labels[g]["trial.phone"] for g in cond.cells[0]]
    ['Y', 'N', 'Y']
    """
    tables = list(tables)
    specs = parse_specs(by)
    return _of_trials(side_conditions(trials.ids, tables, specs), trials, tables)


def _of_trials(
    base: Conditions, trials: ListedTrials, tables: Sequence[ConditionTable]
) -> CellConditions:
    """The trials' conditions from the side codes of ``base`` (:func:`side_conditions` of the
    trials' ids) and the tables of trials for its ``trial.COL`` specs."""
    ids, model_of, segment_of = trials.ids, trials.model_of, trials.segment_of
    own: dict[int, tuple[tuple[str, ...], np.ndarray]] = {}  # trial specs: values, codes
    rows: dict[int, np.ndarray] = {}  # each table of trials' row of every trial, found once
    for k, spec in enumerate(base.by):
        if spec.kind == TRIAL:
            table = _trial_table(tables, spec)
            if id(table) not in rows:
                rows[id(table)] = _rows_of(ids, model_of, segment_of, table)
            codes, vocab = pd.factorize(table.columns[spec.column][rows[id(table)]], sort=True)
            own[k] = (tuple(str(v) for v in vocab), codes)
    rows.clear()
    values = tuple(own[k][0] if k in own else v for k, v in enumerate(base.values))
    base = Conditions(base.by, values, base.model_codes, base.segment_codes)
    group = np.zeros(len(model_of), dtype=base.dtype)  # every digit fits: n_conditions does
    for k, (spec, stride) in enumerate(zip(base.by, base.strides.tolist(), strict=True)):
        if spec.kind == TRIAL:
            digit = own.pop(k)[1]
        elif spec.kind == "model":
            digit = base.model_codes[model_of, k]
        elif spec.kind == "segment":
            digit = base.segment_codes[segment_of, k]
        else:  # same.COL: 0 "same", 1 "different"
            digit = base.model_codes[model_of, k] != base.segment_codes[segment_of, k]
        group += (digit * stride).astype(base.dtype)
    return CellConditions(base.by, base.values, base.model_codes, base.segment_codes,
                          trials.cells(group))  # fmt: skip


def _trial_table(tables: Sequence[ConditionTable], spec: BySpec) -> ConditionTable:
    """The table of trials that has a ``trial.COL`` spec's column."""
    found = [t for t in tables if t.side == TRIAL and spec.column in t.columns]
    if not found:
        have = sorted({c for t in tables if t.side == TRIAL for c in t.columns})
        files = ", ".join(t.source for t in tables if t.side == TRIAL)
        where = (f"trial columns: {', '.join(have) or 'none'}; in {files}" if files else
                 "no table of trials: a header starting 'model<TAB>segment'")  # fmt: skip
        raise OptionError(f"{option('by')} {spec}: no trial column {spec.column!r} ({where})")
    if len(found) > 1:
        raise TrialError(f"{found[1].source}: trial column {spec.column!r} is also in "
                         f"{found[0].source}")  # fmt: skip
    return found[0]


def _rows_of(
    ids: xr.Dataset, model_of: np.ndarray, segment_of: np.ndarray, table: ConditionTable
) -> np.ndarray:
    """The table's row of every trial; every trial must be one (rows of other trials are
    ignored)."""
    n_seg = ids.sizes["segment"]
    rows_m = pd.Index(ids["model"].values).get_indexer(table.ids)
    rows_s = pd.Index(ids["segment"].values).get_indexer(table.segments)
    inside = np.flatnonzero((rows_m >= 0) & (rows_s >= 0))
    flat = rows_m[inside].astype(np.int64) * n_seg + rows_s[inside]
    order = np.argsort(flat, kind="stable")
    flat, inside = flat[order], inside[order]
    want = np.asarray(model_of, dtype=np.int64) * n_seg + np.asarray(segment_of, np.int64)
    at = np.minimum(np.searchsorted(flat, want), max(len(flat) - 1, 0))
    missing = np.flatnonzero(flat[at] != want) if len(flat) else np.arange(len(want))
    if len(missing):
        first = int(missing[0])
        pair = (str(ids["model"].values[model_of[first]]),
                str(ids["segment"].values[segment_of[first]]))  # fmt: skip
        n = len(missing)
        many = n > 1
        raise TrialError(f"{table.source}: {n:,} trial{'s' * many} of the key "
                         f"{'are' if many else 'is'} not in the table of trials, "
                         f"e.g. {pair}")  # fmt: skip
    return inside[at]


def grid_trial_conditions(
    key: xr.Dataset, tables: Iterable[ConditionTable], by: Iterable[str | BySpec]
) -> CellConditions:
    """The conditions of a grid's trials with a ``trial.COL`` spec: every cell's code held
    (at most ``bosaris_dask.trial-cells`` cells; cells that are not trials get 0). The key's
    trial mask is computed for it."""
    tables, specs = list(tables), parse_specs(by)
    base = side_conditions(key, tables, specs)  # every spec checked before the mask is read
    for spec in (s for s in specs if s.kind == TRIAL):
        _trial_table(tables, spec)
    n_m, n_s = key.sizes["model"], key.sizes["segment"]
    limit = config.get("trial-cells")
    if n_m * n_s > limit:
        spec = next(s for s in specs if s.kind == TRIAL)
        raise OptionError(
            f"{option('by')} {spec}: a grid of {n_m} x {n_s} cells has more than {limit:,} "
            f"(bosaris_dask.trial-cells) to hold each cell's condition (2 bytes a cell, 3 while "
            f"made); where memory allows, raise the limit (e.g. DASK_BOSARIS_DASK__TRIAL_CELLS="
            f"{n_m * n_s} in the environment)"
        )
    if "trial_mask" not in key:
        raise OptionError(f"{option('by')} {specs[0]}: trial conditions need a key (its trials)")
    mask = key["trial_mask"].data != 0
    positions = np.nonzero(compute(mask) if isinstance(mask, da.Array) else mask)
    del mask
    model_of, segment_of = (p.astype(np.int32 if len(p) and p.max() < 2**31 else np.int64)
                            for p in positions)  # fmt: skip
    del positions

    def in_grid(group: np.ndarray) -> np.ndarray:
        cells = np.zeros((n_m, n_s), dtype=group.dtype)
        cells[model_of, segment_of] = group
        return cells

    trials = ListedTrials(key["model"].values, key["segment"].values, model_of, segment_of,
                          in_grid)  # fmt: skip
    return _of_trials(base, trials, tables)
