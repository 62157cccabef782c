"""Id maps, id lists and quality-table merges: the small utilities of a BOSARIS workflow.

- An **id map** pairs ids, one ``left right`` pair per line of a text file: typically a model
  id and the enrolment segment it was trained on. :func:`map_model_names` renames the models
  of a trial object through it (the toolkit's ``map_mod_names``), :func:`map_segment_names`
  the segments.
- A **list file** holds one id per line (:func:`read_list`, :func:`write_list`).
- :func:`merge_quality_tables` joins quality tables of disjoint ids (e.g. the segment quality
  of the enrolment and of the test segments).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from bosaris_dask.errors import ParseError, TrialError
from bosaris_dask.trials.construction import _ids, kind_of


@dataclass(frozen=True)
class IdMap:
    """Pairs of ids: ``left[i]`` maps to ``right[i]``; each left id appears once.

    Examples
    --------
    >>> m = IdMap.from_pairs([("spk1", "seg9"), ("spk2", "seg4")])
    >>> m.mapping()["spk2"]
    'seg4'
    """

    left: np.ndarray
    right: np.ndarray

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[Any, Any]]) -> IdMap:
        """An id map from ``(left, right)`` pairs (a left id twice is a :class:`TrialError`)."""
        rows = [(str(a), str(b)) for a, b in pairs]
        left = np.array([a for a, _ in rows], dtype=object)
        right = np.array([b for _, b in rows], dtype=object)
        _ids(left, "left")  # unique
        return cls(left, right)

    def mapping(self) -> dict[str, str]:
        """``{left: right}``."""
        return dict(zip(self.left.tolist(), self.right.tolist(), strict=True))

    def inverse(self) -> IdMap:
        """The map from right to left ids (the right ids must be unique)."""
        return IdMap.from_pairs(zip(self.right, self.left, strict=True))


def _lines(path: str | os.PathLike[str]) -> list[tuple[int, list[str]]]:
    """Non-blank lines of a text file, split on whitespace, with their 1-based numbers."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as exc:
        raise ParseError(f"not UTF-8 text ({exc.reason})", path=path) from None
    return [(n, line.split()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def read_id_map(path: str | os.PathLike[str]) -> IdMap:
    """Read an id map: one ``left right`` pair per line, separated by whitespace.

    Raises
    ------
    ParseError
        Naming the file and line of a line without exactly two fields, or of a left id seen
        before.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "map.txt"
    >>> _ = p.write_text("spk1 seg9\\nspk2 seg4\\n")
    >>> read_id_map(p).right.tolist()
    ['seg9', 'seg4']
    """
    pairs: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    for n, fields in _lines(path):
        if len(fields) != 2:
            raise ParseError(f"expected 2 fields (left right), found {len(fields)}", path, n)
        if fields[0] in seen:
            raise ParseError(
                f"left id {fields[0]!r} is mapped twice (first on line {seen[fields[0]]})", path, n
            )
        seen[fields[0]] = n
        pairs.append((fields[0], fields[1]))
    return IdMap.from_pairs(pairs)


def write_id_map(idmap: IdMap, path: str | os.PathLike[str]) -> None:
    """Write an id map as ``left right`` lines (atomically)."""
    _check_plain(idmap.left, "id map")
    _check_plain(idmap.right, "id map")
    _write_lines([f"{a} {b}" for a, b in zip(idmap.left, idmap.right, strict=True)], path)


def read_list(path: str | os.PathLike[str]) -> list[str]:
    """Read a list file: one id per line (blank lines are skipped).

    Raises
    ------
    ParseError
        Naming the file and line of a line with more than one field.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "models.lst"
    >>> write_list(["m1", "m2"], p)
    >>> read_list(p)
    ['m1', 'm2']
    """
    out = []
    for n, fields in _lines(path):
        if len(fields) != 1:
            raise ParseError(f"expected one id per line, found {len(fields)} fields", path, n)
        out.append(fields[0])
    return out


def write_list(ids: Iterable[Any], path: str | os.PathLike[str]) -> None:
    """Write ids one per line (atomically); an id with whitespace is a :class:`TrialError`."""
    values = [str(i) for i in ids]
    _check_plain(values, "list")
    _write_lines(values, path)


def _check_plain(ids: Iterable[Any], what: str) -> None:
    for i in ids:
        text = str(i)
        if not text or any(c.isspace() for c in text):
            raise TrialError(f"{what} id {text!r} is empty or has whitespace: it cannot be written")


def _write_lines(lines: list[str], path: str | os.PathLike[str]) -> None:
    from bosaris_dask.io.atomic import atomic_path

    text = "".join(f"{line}\n" for line in lines)
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def _rename(obj: xr.Dataset, idmap: IdMap, dim: str, drop_unmapped: bool) -> xr.Dataset:
    kind = kind_of(obj)
    if kind == "quality":
        raise TrialError("rename the ids of a quality table with its own id list")
    mapping = idmap.mapping()
    ids = obj.indexes[dim]
    mapped = ids.isin(list(mapping))
    if not mapped.all():
        if not drop_unmapped:
            absent = ids[~mapped]
            shown = ", ".join(repr(a) for a in absent[:3]) + (", ..." if len(absent) > 3 else "")
            raise TrialError(
                f"{len(absent)} {dim} ids are not in the id map ({shown}); "
                "drop_unmapped=True drops them"
            )
        obj = obj.isel({dim: np.flatnonzero(mapped)})
    new = pd.Index([mapping[str(i)] for i in obj.indexes[dim]], dtype=object)
    if not new.is_unique:
        dup = new[new.duplicated()][0]
        raise TrialError(f"two {dim} ids map to {dup!r}: renamed ids must stay unique")
    return obj.assign_coords({dim: new.to_numpy()})


def map_model_names(obj: xr.Dataset, idmap: IdMap, *, drop_unmapped: bool = False) -> xr.Dataset:
    """Rename the models of an Ndx, Key or Scores through an id map (toolkit: ``map_mod_names``).

    Each model id is looked up among the map's *left* ids and replaced by its *right* id (e.g.
    model names to their enrolment segments; use :meth:`IdMap.inverse` for the other way).
    Lazy: only the coordinates change.

    Raises
    ------
    TrialError
        If a model is not in the map (unless ``drop_unmapped``, which drops it), or two models
        map to the same id.

    Examples
    --------
    >>> from bosaris_dask.trials import make_key
    >>> key = make_key(["spk1", "spk2"], ["t1"], [[1], [-1]])
    >>> m = IdMap.from_pairs([("spk1", "enrol7"), ("spk2", "enrol3")])
    >>> map_model_names(key, m).model.values.tolist()
    ['enrol7', 'enrol3']
    """
    return _rename(obj, idmap, "model", drop_unmapped)


def map_segment_names(obj: xr.Dataset, idmap: IdMap, *, drop_unmapped: bool = False) -> xr.Dataset:
    """Rename the segments of an Ndx, Key or Scores through an id map (left -> right).

    See :func:`map_model_names`.
    """
    return _rename(obj, idmap, "segment", drop_unmapped)


def merge_quality_tables(*tables: xr.DataArray) -> xr.DataArray:
    """One quality table from tables of disjoint ids and the same measures, in order.

    Raises
    ------
    TrialError
        If an id is in two tables, or the tables' measures differ.

    Examples
    --------
    >>> from bosaris_dask.trials import quality_table
    >>> a = quality_table(["s1"], [[1.0, 2.0]])
    >>> b = quality_table(["s2", "s3"], [[3.0, 4.0], [5.0, 6.0]])
    >>> merged = merge_quality_tables(a, b)
    >>> merged.id.values.tolist(), merged.sel(id="s3").values.tolist()
    (['s1', 's2', 's3'], [5.0, 6.0])
    """
    if not tables:
        raise TrialError("no quality tables to merge")
    for t in tables:
        if not isinstance(t, xr.DataArray) or t.dims != ("id", "measure"):
            raise TrialError("quality tables are DataArrays with dims ('id', 'measure')")
    measures = tables[0].measure.values
    for n, t in enumerate(tables[1:], 2):
        if not np.array_equal(t.measure.values, measures):
            raise TrialError(
                f"quality table {n} has measures {t.measure.values.tolist()}, "
                f"table 1 has {measures.tolist()}"
            )
    ids = pd.Index(np.concatenate([t.id.values for t in tables]).astype(object))
    if not ids.is_unique:
        dup = ids[ids.duplicated()].unique()
        shown = ", ".join(repr(d) for d in dup[:3]) + (", ..." if len(dup) > 3 else "")
        raise TrialError(f"{len(dup)} ids are in more than one quality table ({shown})")
    return xr.concat(tables, dim="id")
