"""Sparse text trial lists packed into small dense matrices, for an evaluation.

A text list with many ids and few trials per id fills a sliver of its models x segments grid
(VoxCeleb1-E: 579,818 trials over 145,160 x 145,160 ids, 2.1e10 cells). An evaluation needs
each trial's label and scores, not the grid: :func:`pack` joins the key's trials with each
system's scores by ``(model, segment)`` and lays them out ``width`` to a row, in the key's
order, so every metric of the packed objects is the metric of the lists; their ids only number
the rows and columns (``"trials 0-4095"``, ``"+17"``). Conditions
(:func:`~bosaris_dask.conditions.cells.trial_conditions`) and the bootstrap's groups
(:class:`~bosaris_dask.bootstrap.cells.TrialResample`) come from each trial's own ids, in the
layout of :func:`packed_cells`.

A key trial without a score in a system is an error naming its ids (or left out of that system
with ``allow_missing``); scores of trials the key does not hold are ignored; a trial given twice
in a file is an error naming both lines, as when the lists are read whole.

Examples
--------
>>> import pathlib, tempfile
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "trials").write_text("a x target\\nb y nontarget\\nc z nontarget\\n")
>>> _ = (d / "scores").write_text("c z -1.5\\nb y 0.25\\na x 2.0\\nq r 9.0\\n")
>>> key, (scores,) = pack(TrialList.read(d / "trials", "key"),
...                       [TrialList.read(d / "scores", "scores")], width=2)
>>> key.trial_mask.values.tolist(), scores.score.values.tolist()
([[1, -1], [-1, 0]], [[2.0, 0.25], [-1.5, 0.0]])
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from bosaris_dask.errors import MissingTrialsError, ParseError, have
from bosaris_dask.io.text.collect import (
    _Collector,
    first_repeat,
    labels_field,
    stable_order,
    trial_twice,
)
from bosaris_dask.trials import make_key, make_scores
from bosaris_dask.trials.id_twins import warn_id_twins
from bosaris_dask.trials.listed import ListedTrials

__all__ = [
    "TrialList", "pack", "joined", "as_packed", "packed_cells", "unpacked", "on_grid",
    "is_sparse", "read_trials", "read_key_and_scores", "WIDTH",
]  # fmt: skip

#: Trials per row of a packed matrix.
WIDTH = 4096
#: A list is packed when its grid has more than this many cells per trial ...
SPARSE_CELLS_PER_TRIAL = 64
#: ... and more than this many cells (below, the grid is small whatever its fill).
SPARSE_MIN_CELLS = 1 << 26
#: A score list whose grid is larger than its key's is put on the key's grid
#: (:func:`on_grid`, in memory) when that grid has at most this many cells.
ON_GRID_MAX_CELLS = 1 << 26


@dataclass(frozen=True)
class TrialList:
    """The records of a text trial file: ids by first appearance, per-record id codes, the
    records' values (labels +1/-1 of a key, scores; 1 for an ndx's trials) and their lines."""

    path: str
    models: np.ndarray
    segments: np.ndarray
    model_codes: np.ndarray
    segment_codes: np.ndarray
    values: np.ndarray
    line_of: Callable[[int], int]
    kind: str = "scores"  # the file's: "scores", "key" or "ndx"

    @classmethod
    def read(
        cls, path: str | os.PathLike[str], kind: str, *, format: str | None = None
    ) -> TrialList:
        """Read a key (``kind="key"``), scores (``"scores"``) or ndx (``"ndx"``) text file as a
        list."""
        from bosaris_dask.io.text.read import collect_text, refuse_binary

        refuse_binary(path)
        collector = collect_text(path, kind, format=format)
        try:
            return cls._of(collector, path)
        finally:
            collector.close()

    @classmethod
    def _of(
        cls, collector: _Collector, path: str | os.PathLike[str], kind: str | None = None
    ) -> TrialList:
        """The collected records as the list of ``kind`` (default: the file's; ``"key"`` of a
        scores file read with its labels)."""
        if collector.n == 0:
            raise ParseError("no trials in the file", path=path, line=max(collector.last_line, 1))
        records = np.concatenate(list(collector.spill))
        kind = kind or collector.kind
        field = labels_field(collector, kind)
        return cls(
            os.fspath(path),
            np.array(collector.models.ids(), dtype=object),
            np.array(collector.segments.ids(), dtype=object),
            records["m"].astype(np.int64),
            records["s"].astype(np.int64),
            records[field] if field in records.dtype.names else np.ones(len(records), np.int8),
            collector.line_of,
            kind,
        )

    def listed(self, width: int | None = None) -> ListedTrials:
        """The records as listed trials, packed ``width`` to a row (:func:`packed_cells`)."""
        layout = functools.partial(packed_cells, self, width=width)
        return ListedTrials(self.models, self.segments, self.model_codes, self.segment_codes,
                            layout)  # fmt: skip

    def positions_in(self, models: Any, segments: Any) -> tuple[np.ndarray, np.ndarray]:
        """Each record's model and segment positions among other ids (-1: not there)."""
        return (_positions(self.models, models)[self.model_codes],
                _positions(self.segments, segments)[self.segment_codes])  # fmt: skip

    def refuse_duplicates(self) -> None:
        """A ParseError at the second line of the first trial given twice."""
        if self._repeat is not None:
            a, b = self._repeat
            m, s = self.models[self.model_codes[a]], self.segments[self.segment_codes[a]]
            raise trial_twice(self.path, m, s, self.line_of(a), self.line_of(b))

    @functools.cached_property
    def _repeat(self) -> tuple[int, int] | None:
        """The records of the earliest repeat of a trial (its first and second), found once."""
        return first_repeat(self.model_codes * len(self.segments) + self.segment_codes)


def _positions(ids: np.ndarray, among: Any) -> np.ndarray:
    """Each of ``ids``' position among ``among`` (-1: not there); at once where they are the
    same ids in the same order (two files listing the same trials in the same order)."""
    if len(ids) == len(among) and np.array_equal(ids, among):
        return np.arange(len(ids))
    return pd.Index(among).get_indexer(ids)


def is_sparse(n_models: int, n_segments: int, n_trials: int) -> bool:
    """Whether a list's models x segments grid is large and mostly empty (worth packing).

    Examples
    --------
    >>> is_sparse(145_160, 145_160, 579_818), is_sparse(4_708, 4_708, 37_611)
    (True, False)
    """
    cells = n_models * n_segments
    return cells > SPARSE_MIN_CELLS and cells > SPARSE_CELLS_PER_TRIAL * n_trials


def read_trials(
    path: str | os.PathLike[str],
    kind: str,
    *,
    format: str | None = None,
    like: xr.Dataset | None = None,
) -> TrialList | xr.Dataset:
    """A text file's trials in one parse: a :class:`TrialList` when its grid is sparse
    (:func:`is_sparse`) or, given a trial object ``like`` whose grid is small, larger than
    that grid (the file holds trials beyond its ids: :func:`on_grid` takes the rest); else
    the dense trial object :func:`~bosaris_dask.io.read` gives."""
    from bosaris_dask.io.text.read import collect_text, refuse_binary

    refuse_binary(path)
    collector = collect_text(path, kind, format=format)
    try:
        return _trials_of(collector, path, (None,), like, as_lists=False)[0]
    finally:
        collector.close()


def read_key_and_scores(
    path: str | os.PathLike[str],
    *,
    format: str | None = None,
    like: xr.Dataset | None = None,
    as_lists: bool = False,
) -> tuple[TrialList, TrialList] | tuple[xr.Dataset, xr.Dataset]:
    """The key and the scores of a text file that is its own key (a score and a label column:
    :func:`~bosaris_dask.io.text.text_has_labels`) in one parse: two :class:`TrialList` when
    its grid is sparse (as :func:`read_trials` chooses, given ``like``) or ``as_lists``, else
    the dense Key and Scores; the first bad line of either column is the error.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "vox1_O.score"
    >>> _ = path.write_text("a x 0.5 target\\nb x -1.5 nontarget\\n")
    >>> key, scores = read_key_and_scores(path, format="wespeaker")
    >>> key.trial_mask.values.tolist(), scores.score.values.tolist()
    ([[1], [-1]], [[0.5], [-1.5]])
    """
    from bosaris_dask.io.text.read import collect_text, refuse_binary

    refuse_binary(path)
    collector = collect_text(path, "scores", format=format, with_labels=True)
    try:
        return _trials_of(collector, path, ("key", None), like, as_lists)  # type: ignore[return-value]
    finally:
        collector.close()


def _trials_of(
    collector: _Collector,
    path: str | os.PathLike[str],
    kinds: tuple[str | None, ...],
    like: xr.Dataset | None,
    as_lists: bool,
) -> tuple[Any, ...]:
    """The collected records as the trial objects of ``kinds`` (``None``: the file's), as
    lists where ``as_lists``, the grid is sparse or larger than ``like``'s, else dense."""
    from bosaris_dask.io.text.collect import MEMMAP_THRESHOLD, _assemble

    m, s = len(collector.models), len(collector.segments)
    beyond = like is not None and (
        like.sizes["model"] * like.sizes["segment"] <= ON_GRID_MAX_CELLS
        and m * s > 2 * like.sizes["model"] * like.sizes["segment"]
    )
    if as_lists or beyond or is_sparse(m, s, collector.n):
        return tuple(TrialList._of(collector, path, kind) for kind in kinds)
    return tuple(_assemble(collector, path, None, None, MEMMAP_THRESHOLD, kind) for kind in kinds)


def on_grid(scores: TrialList, key: xr.Dataset) -> xr.Dataset:
    """The scores of a list on the models x segments grid of ``key`` (the trials of other ids
    left out, as an evaluation ignores them; a trial given twice is still an error).

    Examples
    --------
    >>> from bosaris_dask.trials import make_key
    >>> key = make_key(["a"], ["x", "y"], [[1, -1]])
    >>> trials = TrialList("s", np.array(["b", "a"], dtype=object),
    ...                    np.array(["y", "x", "z"], dtype=object), np.array([0, 1, 1]),
    ...                    np.array([0, 1, 0]), np.array([5.0, 2.0, 3.0]), lambda r: r + 1)
    >>> s = on_grid(trials, key)
    >>> s.score.values.tolist(), s.score_mask.values.tolist()
    ([[2.0, 3.0]], [[True, True]])
    """
    scores.refuse_duplicates()
    models, segments = key.model.values, key.segment.values
    _warn_look_alikes(models, segments, scores, "key")
    m, s = scores.positions_in(models, segments)
    on = (m >= 0) & (s >= 0)
    score = np.zeros((len(models), len(segments)), dtype=np.float64)
    given = np.zeros(score.shape, dtype=bool)
    score[m[on], s[on]] = scores.values[on]
    given[m[on], s[on]] = True
    return make_scores(models, segments, score, given)


def pack(
    key: TrialList,
    systems: Sequence[TrialList],
    *,
    names: Sequence[str] | None = None,
    allow_missing: bool = False,
    width: int | None = None,
) -> tuple[xr.Dataset, list[xr.Dataset]]:
    """The key's trials and each system's scores of them as packed Key and Scores objects.

    Raises
    ------
    ParseError
        A trial given twice in a file (naming both lines).
    MissingTrialsError
        Key trials without a score in a system (naming the first few), unless
        ``allow_missing``: then they are left out of that system's scores.
    """
    names = list(names) if names is not None else [Path(s.path).name for s in systems]
    key.refuse_duplicates()
    for system in systems:  # every file's duplicates before any missing trial
        system.refuse_duplicates()
    n = len(key.values)
    mask = np.where(key.values > 0, 1, -1).astype(np.int8)
    packed_key = as_packed(key, mask, kind="key", width=width)
    packed = []
    for name, system in zip(names, systems, strict=True):
        score, given = joined(key, system)
        missing = n - int(np.count_nonzero(given))
        if missing and not allow_missing:
            lacking = np.flatnonzero(~given)[:3]
            where = ", ".join(
                f"({key.models[key.model_codes[i]]}, {key.segments[key.segment_codes[i]]})"
                for i in lacking
            )
            raise MissingTrialsError(
                f"{name}: {have(missing, 'key trial')} no score, e.g. {where} (allow_missing "
                "drops them)"
            )
        packed.append(as_packed(key, score, given, width=width))
    return packed_key, packed


def joined(order: TrialList, system: TrialList) -> tuple[np.ndarray, np.ndarray]:
    """The score ``system`` gives each record of ``order``, and whether it gives one (the
    trials are matched by ``(model, segment)``; ``system``'s other trials are ignored).

    Examples
    --------
    >>> ids = np.array(["a", "b"], dtype=object)
    >>> order = TrialList("o", ids, ids, np.array([1, 0]), np.array([1, 0]), np.ones(2), int)
    >>> system = TrialList("s", ids[:1], ids[:1], np.array([0]), np.array([0]),
    ...                    np.array([0.5]), int)
    >>> joined(order, system)
    (array([0. , 0.5]), array([False,  True]))
    """
    n_seg = len(order.segments)
    flat = order.model_codes * n_seg + order.segment_codes
    m, s = system.positions_in(order.models, order.segments)
    inside = (m >= 0) & (s >= 0)
    theirs = m[inside] * n_seg + s[inside]
    values = system.values[inside]
    if np.array_equal(theirs, flat):  # the same trials in the same order: nothing to search
        return values.astype(np.float64), np.ones(len(flat), dtype=bool)
    # both sides sorted: the searches then walk the cells in order (6x faster than searching
    # in the lines' order at 6e6 trials, whose every search is a cache miss)
    by_cell, by_theirs = stable_order(flat), stable_order(theirs)
    sorted_flat, wanted = flat[by_cell], theirs[by_theirs]
    at = np.minimum(np.searchsorted(sorted_flat, wanted), len(flat) - 1)
    hit = sorted_flat[at] == wanted
    score = np.zeros(len(flat), dtype=np.float64)
    given = np.zeros(len(flat), dtype=bool)
    score[by_cell[at[hit]]] = values[by_theirs[hit]]
    given[by_cell[at[hit]]] = True
    if not given.all():
        _warn_look_alikes(order.models, order.segments, system, order.kind)
    return score, given


def _warn_look_alikes(models: Any, segments: Any, system: TrialList, kind: str) -> None:
    """The warning :func:`~bosaris_dask.trials.align` gives a grid (look-alike ids:
    :mod:`bosaris_dask.trials.id_twins`), for ids matched here instead."""
    for side, wanted, there in (("model", models, system.models),
                                ("segment", segments, system.segments)):  # fmt: skip
        warn_id_twins(wanted, there, side, (kind, system.kind))


def as_packed(
    order: TrialList,
    values: np.ndarray,
    given: np.ndarray | None = None,
    *,
    kind: str = "scores",
    width: int | None = None,
) -> xr.Dataset:
    """Per-record ``values`` of ``order`` laid out ``width`` to a row, in the records' order: a
    Key (``kind="key"``, values +1/-1) or Scores (``given``: which records have a score).
    ``unpacked`` reads them back."""
    n = len(order.values)
    cells = packed_cells(order, values, width)
    rows, columns = cells.shape
    model_ids = [f"trials {r * columns}-{min(n, (r + 1) * columns) - 1}" for r in range(rows)]
    segment_ids = [f"+{c}" for c in range(columns)]
    if kind == "key":
        return make_key(model_ids, segment_ids, cells)
    mask = packed_cells(order, np.ones(n, dtype=bool) if given is None else given, width)
    return make_scores(model_ids, segment_ids, cells, mask)


def packed_cells(order: TrialList, values: np.ndarray, width: int | None = None) -> np.ndarray:
    """Per-record ``values`` of ``order`` in the packed matrix: record ``i`` at row
    ``i // width``, column ``i % width`` (one row of all records where they fit in one), zeros
    after the last; ``width`` :data:`WIDTH` (read when called) unless given.

    Examples
    --------
    >>> order = TrialList("o", None, None, None, None, np.zeros(5), int)
    >>> packed_cells(order, np.arange(1, 6), width=2).tolist()
    [[1, 2], [3, 4], [5, 0]]
    """
    n = len(order.values)
    width = WIDTH if width is None else width
    rows = -(-n // width)
    shape = (rows, width) if rows > 1 else (1, n)
    cells = np.zeros(shape[0] * shape[1], dtype=values.dtype)
    cells[:n] = values
    return cells.reshape(shape)


def unpacked(scores: xr.Dataset, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``n`` records' scores and masks of a packed Scores object (computed)."""
    from bosaris_dask.progress import compute

    score, mask = compute([scores.score.data.ravel()[:n], scores.score_mask.data.ravel()[:n]])
    return np.asarray(score), np.asarray(mask)
