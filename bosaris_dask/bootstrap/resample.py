"""What a two-way bootstrap resamples: ``--resample`` specs, side groups and their multiplicities.

A spec is ``model.COL`` or ``segment.COL``: the groups of that side are the values of COL in the
condition tables (e.g. enrolment speakers and test speakers). At most one spec per side; a side
without one is not resampled (every multiplicity 1).

The groups of a side are those of its ids with a trial in the key: an id without one (a row of
a filtered key left empty) is in no trial evaluated, so its group is not drawn unless another id
of it has a trial (drawing it would change every interval and no point estimate). Each resample
draws, with replacement, as many groups of a side as that side has (multinomial
multiplicities: group ``g``'s multiplicity is how often it was drawn), independently for the
model side and the segment side; a trial's multiplicity is the product of its model's group's
and its segment's group's multiplicities. Draws use :func:`numpy.random.default_rng` with the
seed: for each resample in turn, ``rng.integers(0, G_model, G_model)`` and then
``rng.integers(0, G_segment, G_segment)`` (a side that is not resampled draws nothing), groups
numbered in the sorted order of their values as text (``str``: ``"10"`` before ``"2"``, as
they read from a table file).

The ``"poisson"`` method draws instead every group's multiplicity from Poisson(1), independently
(``rng.poisson(1.0, G_model)``, then ``rng.poisson(1.0, G_segment)``, per resample): the
streaming-friendly variant of the two-way bootstrap (a resample's size then varies; one whose
side draws no target or no non-target has NaN metrics and is left out of the intervals).

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.trials import make_key
>>> from bosaris_dask.conditions import condition_table
>>> key = make_key(["m1", "m2", "m3"], ["s1", "s2"], [[1, -1], [-1, 1], [-1, -1]])
>>> spk = condition_table("model", ["m1", "m2", "m3"], {"spk": ["a", "b", "b"]})
>>> groups = resample_groups(key, [spk], ["model.spk"])
>>> groups.model_codes.tolist(), groups.n_model, groups.n_segment
([0, 1, 1], 2, 1)
>>> m, s = multiplicities(groups, 3, seed=0)
>>> m.sum(axis=1).tolist(), s.tolist()
([2, 2, 2, 2], [[1], [1], [1], [1]])
>>> m[0].tolist()  # row 0 is the data itself
[1, 1]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

from bosaris_dask.conditions.codes import refuse_joined_specs
from bosaris_dask.conditions.tables import SIDES, ConditionTable, ids_missing
from bosaris_dask.errors import OptionError, TrialError, option
from bosaris_dask.progress import compute
from bosaris_dask.trials.construction import is_label_key, trial_classes

__all__ = ["ResampleSpec", "parse_resample", "SideGroups", "resample_groups", "ids_with_trials",
           "multiplicities", "METHODS"]  # fmt: skip

#: The ways to draw a side's group multiplicities.
METHODS = ("multinomial", "poisson")
#: The error of a bootstrap without resampled groups.
NO_RESAMPLE = (f"{option('bootstrap')} needs {option('resample')}: model.COL and/or segment.COL "
               "(the groups resampled on each side)")  # fmt: skip


@dataclass(frozen=True)
class ResampleSpec:
    """One ``--resample`` spec: ``side`` is ``"model"`` or ``"segment"``."""

    side: str
    column: str

    def __str__(self) -> str:
        return f"{self.side}.{self.column}"


def parse_resample(spec: str | ResampleSpec) -> ResampleSpec:
    """Parse ``model.COL`` or ``segment.COL``.

    Examples
    --------
    >>> parse_resample("segment.speaker")
    ResampleSpec(side='segment', column='speaker')
    >>> parse_resample("same.language")
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.OptionError: ... 'same.language': expected model.COL or segment.COL
    """
    if isinstance(spec, ResampleSpec):
        return spec
    side, dot, column = str(spec).partition(".")
    if not dot or side not in SIDES or not column:
        raise OptionError(f"{option('resample')} {spec!r}: expected model.COL or segment.COL")
    refuse_joined_specs("resample", str(spec), SIDES)
    return ResampleSpec(side, column)


@dataclass(frozen=True)
class SideGroups:
    """The resampled groups of both sides of a key.

    Attributes
    ----------
    specs
        The specs (one or two).
    model_codes, segment_codes
        The group of every model and every segment, in the key's id order (all 0 on a side
        that is not resampled).
    n_model, n_segment
        The number of groups of each side (1 on a side that is not resampled).
    resampled
        ``(model side resampled, segment side resampled)``.
    """

    specs: tuple[ResampleSpec, ...]
    model_codes: np.ndarray
    segment_codes: np.ndarray
    n_model: int
    n_segment: int
    resampled: tuple[bool, bool]


def ids_with_trials(key: xr.Dataset, sides: Sequence[str] = SIDES) -> dict[str, np.ndarray | None]:
    """Per side of ``sides``, which of its ids have a trial in ``key``: one read of a stored
    trial mask for both sides (none of a mask in memory; ``None``: all of them, with no read: a
    label-derived key, or ids without a trial mask, such as a listed trials' grid, whose ids
    come from its trials).

    >>> from bosaris_dask.trials import make_key
    >>> key = make_key(["m1", "m2"], ["s1", "s2"], [[1, 0], [0, 0]])
    >>> {side: has.tolist() for side, has in ids_with_trials(key).items()}
    {'model': [True, False], 'segment': [True, False]}
    """
    if not sides or "trial_mask" not in key or is_label_key(key):
        return dict.fromkeys(sides)
    axis = {"model": 1, "segment": 0}  # a model's trials lie along its row
    held = isinstance(key.trial_mask.data, np.ndarray)
    trials = (key.trial_mask.data if held else trial_classes(key)) != 0
    found = tuple(trials.any(axis=axis[side]) for side in sides)
    found = found if held else compute(found)
    return {side: np.asarray(has, dtype=bool) for side, has in zip(sides, found, strict=True)}


def _side_values(
    key: xr.Dataset, tables: Sequence[ConditionTable], spec: ResampleSpec
) -> np.ndarray:
    """The group (a ``str``) of every id of the spec's side, in the key's order."""
    have = {side: [(t, c) for t in tables if t.side == side for c in t.columns] for side in SIDES}
    found = [t for t, c in have[spec.side] if c == spec.column]
    if not found:
        other = "segment" if spec.side == "model" else "model"
        cols = ", ".join(sorted({c for _, c in have[spec.side]})) or "none"
        hint = (f"; {spec.column!r} is a {other} column" if any(c == spec.column
                for _, c in have[other]) else "")  # fmt: skip
        raise OptionError(
            f"--resample {spec}: no {spec.side} column {spec.column!r} in the condition tables "
            f"({spec.side} columns: {cols}{hint})"
        )
    if len(found) > 1:  # as --by refuses it: which table's column would be ambiguous
        raise TrialError(f"{found[1].source}: {spec.side} column {spec.column!r} is also in "
                         f"{found[0].source}")  # fmt: skip
    table = found[0]
    ids = key[spec.side].values
    where = pd.Index(table.ids).get_indexer(ids)
    absent = np.flatnonzero(where < 0)
    if len(absent):
        other = "segment" if spec.side == "model" else "model"
        raise ids_missing(table, spec.side, ids, absent, key[other].values)
    return table.columns[spec.column][where].astype(str)


def _side_codes(
    values: np.ndarray, spec: ResampleSpec, has_trials: np.ndarray | None
) -> tuple[np.ndarray, int]:
    """Every id's group code among the groups drawn (those of ids with a trial), and how many
    groups are drawn."""
    drawn = values if has_trials is None or not has_trials.any() else values[has_trials]
    vocab = np.unique(drawn)
    # an id without a trial whose group no id with a trial shares gets group 0: it weighs no
    # trial, so any multiplicity serves
    codes = np.minimum(np.searchsorted(vocab, values), max(len(vocab) - 1, 0))
    codes[vocab[codes] != values] = 0
    if len(vocab) == 1 and len(values) > 0:
        raise OptionError(
            f"--resample {spec}: every {spec.side} of the key with a trial has the same "
            f"{spec.column} ({str(vocab[0])!r}): a side of one group is not resampled (each "
            "resample would be the data again, and each interval the data's own value): "
            f"resample a column with several groups, or leave the {spec.side} side out"
        )
    return codes.astype(np.int64).reshape(-1), len(vocab)


def resample_groups(
    key: xr.Dataset,
    tables: Sequence[ConditionTable],
    specs: Sequence[str | ResampleSpec],
    has_trials: Mapping[str, np.ndarray | None] | None = None,
) -> SideGroups:
    """The groups the ``specs`` resample, from condition tables; with ``has_trials``
    (:func:`ids_with_trials`), only those of ids with a trial are drawn (else every id's).

    Raises
    ------
    OptionError
        No spec, a malformed spec, two specs for one side, a column that no table of its side
        has (saying when it is a column of the other side).
    TrialError
        A key id missing from the table that holds the column, or the column in two tables of
        its side.
    """
    parsed = tuple(parse_resample(s) for s in specs)
    if not parsed:
        raise OptionError(NO_RESAMPLE)
    sides = [s.side for s in parsed]
    for side in SIDES:
        if sides.count(side) > 1:
            raise OptionError(f"{option('resample')}: one spec per side, got "
                              f"{sides.count(side)} {side} specs")  # fmt: skip
    has_trials = has_trials or {}
    out = {spec.side: _side_codes(_side_values(key, tables, spec), spec,
                                  has_trials.get(spec.side)) for spec in parsed}  # fmt: skip
    n_m, n_s = key.sizes["model"], key.sizes["segment"]
    mcodes, gm = out.get("model", (np.zeros(n_m, dtype=np.int64), 1))
    scodes, gs = out.get("segment", (np.zeros(n_s, dtype=np.int64), 1))
    return SideGroups(parsed, mcodes, scodes, gm, gs, ("model" in out, "segment" in out))


def _dtype(n: int) -> np.dtype:
    return np.dtype(np.uint16 if n < (1 << 16) else np.uint32)


def multiplicities(
    groups: SideGroups, resamples: int, seed: int | None, method: str = "multinomial"
) -> tuple[np.ndarray, np.ndarray]:
    """Group multiplicities of every resample: ``(1 + B, G_model)`` and ``(1 + B, G_segment)``.

    Row 0 is the data itself (all ones); rows ``1..B`` are the resamples, drawn as the module
    docstring says (the same seed gives the same draws on any machine and scheduler), by
    ``method`` (:data:`METHODS`).

    Examples
    --------
    >>> from bosaris_dask.trials import make_key
    >>> from bosaris_dask.conditions import condition_table
    >>> key = make_key(["m1", "m2"], ["s1"], [[1], [-1]])
    >>> spk = condition_table("model", ["m1", "m2"], {"spk": ["a", "b"]})
    >>> m, _ = multiplicities(resample_groups(key, [spk], ["model.spk"]), 2, 0, "poisson")
    >>> m.tolist()
    [[1, 1], [1, 0], [0, 3]]
    """
    if method not in METHODS:
        raise OptionError(f"{option('bootstrap_method')} must be one of {', '.join(METHODS)}, got "
                          f"{method!r}")  # fmt: skip
    rng = np.random.default_rng(seed)
    gm, gs = groups.n_model, groups.n_segment
    m = np.ones((resamples + 1, gm), dtype=_dtype(gm))
    s = np.ones((resamples + 1, gs), dtype=_dtype(gs))
    for b in range(1, resamples + 1):
        for side, (out, n) in enumerate(((m, gm), (s, gs))):
            if not groups.resampled[side]:
                continue
            if method == "poisson":
                out[b] = rng.poisson(1.0, n)
            else:
                out[b] = np.bincount(rng.integers(0, n, n), minlength=n)
    return m, s
