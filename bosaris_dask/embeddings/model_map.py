"""Multi-session enrolment: a model map (``model segment`` lines) and the model embeddings.

A model map lists, one pair per line, the enrolment segments of each model (speaker
"enrolment sessions", IJB "templates"). Blank lines and lines starting with ``#`` are skipped.

Examples
--------
>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "models.txt"
>>> _ = p.write_text("spk1 a\\nspk1 b\\nspk2 c\\n")
>>> read_model_map(p).groupby("model", sort=False).segment.apply(list).to_dict()
{'spk1': ['a', 'b'], 'spk2': ['c']}
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bosaris_dask.errors import ParseError, TrialError

__all__ = ["read_model_map", "as_model_map", "model_rows"]


def read_model_map(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a ``model segment`` text file into a table with columns model, segment, line.

    Raises
    ------
    ParseError
        A line without exactly two fields, or the same (model, segment) pair twice (naming the
        file and line); a map without any pair.
    """
    models, segments, lines = [], [], []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            fields = text.split()
            if len(fields) != 2:
                raise ParseError(f"expected 'model segment', got {text!r}", path=path, line=n)
            models.append(fields[0])
            segments.append(fields[1])
            lines.append(n)
    if not models:  # no model would be scored
        raise ParseError("no 'model segment' lines in the model map", path=path)
    table = pd.DataFrame({"model": models, "segment": segments, "line": lines})
    table.attrs["source"] = os.fspath(path)
    _no_repeats(table)
    return table


def _no_repeats(table: pd.DataFrame) -> None:
    dup = table.duplicated(["model", "segment"])
    if dup.any():
        row = table[dup].iloc[0]
        raise ParseError(f"segment {row.segment!r} listed twice for model {row.model!r}",
                         path=table.attrs.get("source"), line=int(row.line))  # fmt: skip


def as_model_map(models: Any) -> pd.DataFrame:
    """A model-map table from a path, a ``{model: [segments]}`` mapping or a table."""
    if isinstance(models, pd.DataFrame):
        return models
    if isinstance(models, str | os.PathLike | Path):
        return read_model_map(models)
    if isinstance(models, Mapping):
        pairs = [(str(m), str(s)) for m, segs in models.items() for s in _segments(segs, m)]
        table = pd.DataFrame(pairs, columns=["model", "segment"])
        table["line"] = np.arange(1, len(table) + 1)
        table.attrs["source"] = "<model map>"
        _no_repeats(table)
        return table
    raise TrialError(f"a model map is a path, a mapping or a table, got {type(models).__name__}")


def _segments(segs: Any, model: Any) -> Sequence[Any]:
    if isinstance(segs, str) or not isinstance(segs, Sequence | np.ndarray):
        raise TrialError(f"model map: the segments of {model!r} must be a list")
    if len(segs) == 0:  # it vanished from the scores, or a key naming it blamed the map
        raise TrialError(f"model map: model {model!r} has no segments")
    return list(segs)


def model_rows(
    table: pd.DataFrame, segment_ids: pd.Index, source: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The models (first-appearance order), the rows of their segments grouped by model, and
    where each model's rows start.

    Raises
    ------
    TrialError
        A segment of the map that has no embedding, naming the map's line and the embedding file.
    """
    rows = segment_ids.get_indexer(table.segment.to_numpy())
    if (rows < 0).any():
        bad = table[rows < 0].iloc[0]
        where = table.attrs.get("source", "<model map>")
        raise TrialError(
            f"{where}:{int(bad.line)}: segment {bad.segment!r} of model {bad.model!r} has no "
            f"embedding in {source}"
        )
    codes, models = pd.factorize(table.model.to_numpy())
    order = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[order], np.arange(len(models)))
    return np.asarray(models, dtype=object), rows[order], starts
