"""``--by`` specs and the condition of every trial, as a lazy group index chunked like the key.

A spec is ``model.COL`` (the model's value of COL), ``segment.COL`` (the segment's),
``same.COL`` (``"same"`` when the trial's model and segment have the same value of COL,
``"different"`` otherwise; COL must be a column on both sides) or ``trial.COL`` (the trial's
own value, from a table of trials). Several specs give the Cartesian product of their values:
condition ``g`` is a mixed-radix number whose digits are the specs' value codes, first spec
most significant (the order of :func:`itertools.product`).

Per-model and per-segment codes are small numpy arrays; the per-cell group index is computed
chunk by chunk from them (never stored). A ``trial.COL`` spec needs each trial's own code
(:mod:`bosaris_dask.conditions.cells`: on a grid of at most ``bosaris_dask.trial-cells``
cells, every cell's held in memory; a packed trial list's, in its own cell anyway).

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.trials import make_key
>>> from bosaris_dask.conditions.tables import condition_table
>>> key = make_key(["m1", "m2"], ["s1", "s2"], np.array([[1, -1], [-1, 1]]))
>>> models = condition_table("model", ["m1", "m2"], {"gender": ["f", "m"], "lang": ["a", "b"]})
>>> segments = condition_table("segment", ["s1", "s2"], {"lang": ["a", "a"]})
>>> cond = condition_codes(key, [models, segments], ["model.gender", "same.lang"])
>>> [c["model.gender"] + "/" + c["same.lang"] for c in cond.labels]
['f/same', 'f/different', 'm/same', 'm/different']
>>> cond.group_index(chunks=1).compute().tolist()
[[0, 0], [3, 3]]
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import dask.array as da
import numpy as np
import pandas as pd
import xarray as xr

from bosaris_dask.conditions.tables import SIDES, TRIAL, ConditionTable, ids_missing
from bosaris_dask.errors import OptionError, TrialError, option
from bosaris_dask.passes.inline_blocks import blockwise, per_block

__all__ = [
    "BySpec", "parse_by", "Conditions", "condition_codes", "ConditionWarning",
]  # fmt: skip


class ConditionWarning(UserWarning):
    """A condition spec that can only give one answer: ``same.COL`` where no model's value of
    COL equals any segment's (often a value written ``1`` on one side and ``1.0`` on the
    other), so every trial is ``different``."""


_KINDS = ("model", "segment", "same", TRIAL)
_EXPECTED = "expected model.COL, segment.COL, same.COL or trial.COL"
#: The values of a ``same.COL`` spec, in code order.
SAME_VALUES = ("same", "different")


@dataclass(frozen=True)
class BySpec:
    """One ``--by`` spec: ``kind`` is ``"model"``, ``"segment"``, ``"same"`` or ``"trial"``."""

    kind: str
    column: str

    def __str__(self) -> str:
        return f"{self.kind}.{self.column}"


def parse_by(spec: str | BySpec) -> BySpec:
    """Parse ``model.COL``, ``segment.COL``, ``same.COL`` or ``trial.COL``.

    Examples
    --------
    >>> parse_by("same.language")
    BySpec(kind='same', column='language')
    >>> parse_by("language")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.OptionError: by (--by) 'language': expected model.COL, segment.COL, ...
    """
    if isinstance(spec, BySpec):
        return spec
    kind, dot, column = str(spec).partition(".")
    if not dot or kind not in _KINDS or not column:
        raise OptionError(f"{option('by')} {spec!r}: {_EXPECTED}")
    refuse_joined_specs("by", str(spec), _KINDS)
    return BySpec(kind, column)


def refuse_joined_specs(name: str, spec: str, kinds: Sequence[str]) -> None:
    """An OptionError for several specs joined by commas in one value of option ``name``
    (``model.a,segment.b``: it read a column ``'a,segment.b'``): one spec per value, as a list
    in Python and the flag repeated on the command line.

    >>> refuse_joined_specs("by", "model.a,segment.b", ("model", "segment"))
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.OptionError: by (--by) 'model.a,segment.b': one spec per value: \
by=['model.a', 'segment.b'] (--by model.a --by segment.b)
    """
    parts = [p.strip() for p in spec.split(",")]
    if len(parts) > 1 and all(p.partition(".")[0] in kinds for p in parts[1:]):
        flag = "--" + name.replace("_", "-")
        repeated = " ".join(f"{flag} {p}" for p in parts)
        raise OptionError(
            f"{option(name)} {spec!r}: one spec per value: {name}={parts} ({repeated})"
        )


@dataclass(frozen=True)
class Conditions:
    """The conditions of a key's trials under some ``--by`` specs.

    Attributes
    ----------
    by
        The specs, in order.
    values
        Each spec's values (sorted strings; ``("same", "different")`` for ``same.COL``).
    labels
        One dict per condition, ``{spec: value}``, in group-index order.
    model_codes, segment_codes
        ``(n_models, n_specs)`` and ``(n_segments, n_specs)`` value codes in the key's id order
        (0 for a spec of the other side or of the trial; for ``same.COL`` both sides' codes of
        COL in one shared vocabulary).
    """

    by: tuple[BySpec, ...]
    values: tuple[tuple[str, ...], ...]
    model_codes: np.ndarray
    segment_codes: np.ndarray

    @property
    def n_conditions(self) -> int:
        """The number of conditions (the product of the specs' numbers of values)."""
        return int(np.prod([len(v) for v in self.values], dtype=np.int64))

    @property
    def labels(self) -> list[dict[str, str]]:
        """``{spec: value}`` per condition, in group-index order."""
        names = [str(b) for b in self.by]
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*self.values)]

    @property
    def strides(self) -> np.ndarray:
        """The place value of each spec's digit in the group index."""
        sizes = [len(v) for v in self.values]
        return np.array([int(np.prod(sizes[k + 1 :], dtype=np.int64)) for k in range(len(sizes))],
                        dtype=np.int64)  # fmt: skip

    @property
    def dtype(self) -> np.dtype:
        """int16 for fewer than 32,768 conditions, int32 beyond."""
        return np.dtype(np.int16 if self.n_conditions < (1 << 15) else np.int32)

    def possible_groups(self, limit: int = 1 << 22) -> np.ndarray:
        """The conditions some (model, segment) pair of the key's ids falls in, ascending
        (from the ids' codes alone: no pass over the trials). A superset of the conditions with
        trials: a Cartesian product of ``--by`` values holds combinations no pair has (e.g.
        two columns of one side that go together). All conditions when the distinct model
        and segment rows would give more than ``limit`` pairs to look at.

        Examples
        --------
        >>> from bosaris_dask.trials import make_key
        >>> from bosaris_dask.conditions.tables import condition_table
        >>> key = make_key(["m1", "m2"], ["s1"], [[1], [-1]])
        >>> models = condition_table("model", ["m1", "m2"], {"g": ["f", "m"], "l": ["a", "b"]})
        >>> cond = condition_codes(key, [models], ["model.g", "model.l"])
        >>> cond.n_conditions, cond.possible_groups().tolist()  # f/a and m/b only
        (4, [0, 3])
        """
        strides = self.strides
        side = np.array([b.kind for b in self.by])
        same = np.flatnonzero(side == "same")
        mpart = (self.model_codes * np.where(side == "model", strides, 0)).sum(axis=1)
        spart = (self.segment_codes * np.where(side == "segment", strides, 0)).sum(axis=1)
        mrows = np.unique(np.column_stack([mpart, self.model_codes[:, same]]), axis=0)
        srows = np.unique(np.column_stack([spart, self.segment_codes[:, same]]), axis=0)
        if len(mrows) * len(srows) > limit:
            return np.arange(self.n_conditions)
        g = mrows[:, :1] + srows[:, 0][None, :]
        for j, k in enumerate(same.tolist()):
            g = g + (mrows[:, 1 + j][:, None] != srows[:, 1 + j][None, :]) * int(strides[k])
        return np.unique(g)

    def group_index(self, chunks: Any) -> da.Array:
        """The condition of every cell, a lazy ``(n_models, n_segments)`` array in ``chunks``.

        Cells that are not trials get the condition of their model and segment all the same
        (callers look at trials only).
        """
        strides = self.strides
        side = np.array([b.kind for b in self.by])
        mpart = (self.model_codes * np.where(side == "model", strides, 0)).sum(axis=1)
        spart = (self.segment_codes * np.where(side == "segment", strides, 0)).sum(axis=1)
        shape = (len(mpart), len(spart))
        chunks = da.core.normalize_chunks(chunks, shape, dtype=self.dtype)
        rows, cols = partial(per_block, chunks=chunks[0]), partial(per_block, chunks=chunks[1])
        args: list[Any] = [rows(mpart), "i", cols(spart), "j"]  # inside the tasks: inline_blocks
        same = np.flatnonzero(side == "same")
        for k in same:
            args += [rows(self.model_codes[:, k]), "i", cols(self.segment_codes[:, k]), "j"]
        return blockwise(
            _group_block, "ij", *args, strides=tuple(int(strides[k]) for k in same),
            out_dtype=self.dtype, dtype=self.dtype,
        )  # fmt: skip


def _group_block(mpart, spart, *pairs, strides: tuple[int, ...], out_dtype: np.dtype):
    # one row of groups per distinct model-side code (a handful), then one gather of rows:
    # no chunk-sized temporaries
    rowkey = np.stack([mpart, *pairs[::2]], axis=1)
    uniq, inverse = np.unique(rowkey, axis=0, return_inverse=True)
    table = np.empty((len(uniq), len(spart)), dtype=out_dtype)
    for u, row in enumerate(uniq.tolist()):
        t = spart + row[0]
        for k, stride in enumerate(strides):
            t = t + (pairs[2 * k + 1] != row[1 + k]) * stride
        table[u] = t
    return table.take(inverse.reshape(-1), axis=0)


def _side_columns(
    tables: Sequence[ConditionTable], key: xr.Dataset
) -> dict[str, dict[str, tuple[np.ndarray, ConditionTable]]]:
    """Per side, column -> (values in the key's id order, its table); checks id coverage."""
    out: dict[str, dict[str, tuple[np.ndarray, ConditionTable]]] = {s: {} for s in SIDES}
    for table in (t for t in tables if t.side in SIDES):
        ids = key[table.side].values
        where = pd.Index(table.ids).get_indexer(ids)
        absent = np.flatnonzero(where < 0)
        if len(absent):
            other = "segment" if table.side == "model" else "model"
            raise ids_missing(table, table.side, ids, absent, key[other].values)
        for name, values in table.columns.items():
            if name in out[table.side]:
                other = out[table.side][name][1].source
                raise TrialError(f"{table.source}: {table.side} column {name!r} is also in {other}")
            out[table.side][name] = (values[where], table)
    return out


def _column(cols: dict, side: str, spec: BySpec, tables: Sequence[ConditionTable]) -> np.ndarray:
    if spec.column not in cols[side]:
        have = ", ".join(sorted(cols[side])) or "none"
        files = ", ".join(t.source for t in tables if t.side == side) or "no table"
        trial = [t.source for t in tables if t.side == TRIAL and spec.column in t.columns]
        other = "segment" if side == "model" else "model"
        hint = (f"; {spec.column!r} is a column of the table of trials {trial[0]} (header "
                f"'model<TAB>segment'): --by trial.{spec.column}" if trial
                else f"; {spec.column!r} is a {other} column: --by {other}.{spec.column}"
                if spec.kind == side and spec.column in cols[other] else "")  # fmt: skip
        raise OptionError(
            f"{option('by')} {spec}: no {side} column {spec.column!r} ({side} columns: {have}; in "
            f"{files}{hint})"
        )
    return cols[side][spec.column][0]


def _warn_if_never_same(spec: BySpec, model_values: np.ndarray, segment_values: np.ndarray) -> None:
    """A :class:`ConditionWarning` where the two sides of ``same.COL`` share no value."""
    mv, sv = np.unique(model_values), np.unique(segment_values)
    if len(mv) and len(sv) and not len(np.intersect1d(mv, sv)):
        shown = [", ".join(repr(str(v)) for v in vals[:3]) + (", ..." if len(vals) > 3 else "")
                 for vals in (mv, sv)]  # fmt: skip
        warnings.warn(
            f"{spec}: no model's value equals a segment's (models {shown[0]}; segments "
            f"{shown[1]}): every trial is 'different'",
            ConditionWarning,
            stacklevel=3,
        )


def condition_codes(
    key: xr.Dataset, tables: Iterable[ConditionTable], by: Iterable[str | BySpec]
) -> Conditions:
    """The conditions of ``key``'s trials under the ``by`` specs, from condition tables.

    Every id of the key's side must be in each table of that side, and every trial of the key
    in a table of trials that a ``trial.COL`` spec reads; table ids (and trials) the key lacks
    are ignored. A spec's values are those its column takes on the key's ids (sorted; a
    ``trial.COL`` spec's, on the key's trials), so every combination of them is a condition,
    with trials or not. With a ``trial.COL`` spec, a
    :class:`~bosaris_dask.conditions.cells.CellConditions` holding every cell's condition (the
    key's trial mask is read once for it).

    Raises
    ------
    TrialError
        A key id missing from a table of its side, a trial missing from a table of trials
        (naming the table and an id or trial), a column given by two tables of one side.
    OptionError
        No spec, a malformed spec, the same spec twice, a column missing from the side(s) it
        needs (naming the spec, the columns there are and the tables), a ``trial.COL`` spec on
        a grid of more than ``bosaris_dask.trial-cells`` cells.
    """
    tables = list(tables)
    specs = parse_specs(by)
    if any(s.kind == TRIAL for s in specs):
        from bosaris_dask.conditions.cells import grid_trial_conditions

        return grid_trial_conditions(key, tables, specs)
    return side_conditions(key, tables, specs)


def parse_specs(by: Iterable[str | BySpec]) -> tuple[BySpec, ...]:
    """The ``--by`` specs parsed: at least one, none twice."""
    specs = tuple(parse_by(b) for b in by)
    if not specs:
        raise OptionError(f"no {option('by')} spec: name at least one condition column")
    if len(set(specs)) < len(specs):
        twice = next(str(s) for s in specs if specs.count(s) > 1)
        raise OptionError(f"{option('by')} {twice} given twice")
    return specs


def side_conditions(
    key: xr.Dataset, tables: Sequence[ConditionTable], specs: tuple[BySpec, ...]
) -> Conditions:
    """The side specs' codes and values (a ``trial.COL`` spec's: no values, codes 0)."""
    cols = _side_columns(tables, key)
    n_m, n_s = key.sizes["model"], key.sizes["segment"]
    mcodes = np.zeros((n_m, len(specs)), dtype=np.int64)
    scodes = np.zeros((n_s, len(specs)), dtype=np.int64)
    values: list[tuple[str, ...]] = []
    for k, spec in enumerate(specs):
        if spec.kind == TRIAL:
            values.append(())
            continue
        if spec.kind == "same":
            mv, sv = (_column(cols, side, spec, tables) for side in SIDES)
            _warn_if_never_same(spec, mv.astype(str), sv.astype(str))
            vocab, inverse = np.unique(np.concatenate([mv, sv]).astype(str), return_inverse=True)
            mcodes[:, k], scodes[:, k] = inverse[:n_m], inverse[n_m:]
            values.append(SAME_VALUES)
            continue
        v = _column(cols, spec.kind, spec, tables)
        vocab, inverse = np.unique(v.astype(str), return_inverse=True)
        (mcodes if spec.kind == "model" else scodes)[:, k] = inverse
        values.append(tuple(str(x) for x in vocab))
    return Conditions(specs, tuple(values), mcodes, scodes)
