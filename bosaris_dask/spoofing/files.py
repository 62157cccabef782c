"""Readers of the ASVspoof 5 protocol (key) and score files, in the evaluation package's formats.

Track 1 (countermeasure, CM):

- key: ``filename  cm-label`` with ``cm-label`` ``bonafide`` or ``spoof``;
- scores: ``filename  cm-score``.

Track 2 (spoofing-aware speaker verification, SASV):

- key: ``spk  filename  cm-label  asv-label`` with ``asv-label`` ``target``, ``nontarget`` or
  ``spoof`` (a spoof's ``cm-label`` is ``spoof``, a target's or non-target's ``bonafide``);
- scores: ``spk  filename  cm-score  asv-score  sasv-score``.

Fields are separated by tabs or spaces; a first line that names the columns (``filename ...``,
``spk ...``) is skipped; ``.gz`` files are read through gzip. Labels are case-insensitive. The
text rules are the BOSARIS readers' (:mod:`bosaris_dask.io.text`): UTF-8 with an optional
byte-order mark, LF or CRLF line ends, ASCII blanks between fields, scores as ASCII numbers
without ``_`` separators.

These readers are **in memory** (numpy arrays): an ASVspoof set is about 1e6 rows, a few tens of
MB, so nothing here is lazy or chunked like the BOSARIS readers of :mod:`bosaris_dask.io`.
Every problem is a one-line :class:`~bosaris_dask.errors.ParseError` naming the file and line
(a bad label or score, a wrong number of fields, a duplicate filename) or a
:class:`~bosaris_dask.errors.TrialError` naming the files and a few filenames (a key filename
without a score).

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> d = Path(tempfile.mkdtemp())
>>> _ = (d / "key.tsv").write_text("filename\\tcm-label\\nE1\\tbonafide\\nE2\\tspoof\\n")
>>> _ = (d / "cm.tsv").write_text("E2\\t-1.5\\nE1\\t2.0\\n")
>>> key = read_cm_key(d / "key.tsv")
>>> key.bonafide.tolist()
[True, False]
>>> cm_arrays(key, read_cm_scores(d / "cm.tsv"))  # (bona fide, spoof) scores
(array([2.]), array([-1.5]))
"""

from __future__ import annotations

import codecs
import gzip
import io
import math
import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import xarray as xr

from bosaris_dask.errors import ParseError, TrialError
from bosaris_dask.io.text.layout import number_of_token

__all__ = [
    "CMKey",
    "CMScores",
    "SASVKey",
    "SASVScores",
    "TARGET",
    "NONTARGET",
    "SPOOF",
    "read_cm_key",
    "read_cm_scores",
    "read_sasv_key",
    "read_sasv_scores",
    "cm_arrays",
    "sasv_arrays",
    "cm_key_and_scores",
    "sasv_key_and_scores",
]

#: Codes of the ASV classes in :attr:`SASVKey.asv_class`.
TARGET, NONTARGET, SPOOF = 1, 0, -1
_CM_LABELS = {"bonafide": True, "spoof": False}
_ASV_LABELS = {"target": TARGET, "nontarget": NONTARGET, "non-target": NONTARGET, "spoof": SPOOF}


@dataclass(frozen=True)
class CMKey:
    """A track-1 key: ``filename`` (str array) and ``bonafide`` (bool array), in file order."""

    path: str
    filename: np.ndarray
    bonafide: np.ndarray


@dataclass(frozen=True)
class CMScores:
    """Track-1 scores: ``filename`` and ``score`` (float64), in file order."""

    path: str
    filename: np.ndarray
    score: np.ndarray


@dataclass(frozen=True)
class SASVKey:
    """A track-2 key: ``speaker``, ``filename``, ``asv_class`` (:data:`TARGET` ...), in order."""

    path: str
    speaker: np.ndarray
    filename: np.ndarray
    asv_class: np.ndarray


@dataclass(frozen=True)
class SASVScores:
    """Track-2 scores: ``speaker``, ``filename``, ``cm``, ``asv``, ``sasv`` (float64 arrays)."""

    path: str
    speaker: np.ndarray
    filename: np.ndarray
    cm: np.ndarray
    asv: np.ndarray
    sasv: np.ndarray


def _open(path: str) -> io.BufferedIOBase:
    if str(path).endswith(".gz"):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


#: Field separators: runs of ASCII blanks, as the BOSARIS text readers split (a non-breaking
#: space or another Unicode space is part of a field).
_BLANKS = re.compile(r"[ \t\x0b\x0c]+")


def _rows(path: str, header: str, nfields: int) -> Iterator[tuple[int, list[str]]]:
    """``(line number, fields)`` of each non-blank line: UTF-8 (a byte-order mark skipped),
    lines ending in LF or CRLF, a first non-blank line naming the columns skipped."""
    first = True
    with _open(path) as f:
        try:
            for number, raw in enumerate(f, 1):
                if number == 1 and raw.startswith(codecs.BOM_UTF8):
                    raw = raw[len(codecs.BOM_UTF8) :]
                body = raw.removesuffix(b"\n").removesuffix(b"\r")
                if b"\r" in body:
                    raise ParseError("carriage return inside a line (a file with CR line "
                                     "endings? convert them to LF)", path, number)  # fmt: skip
                try:
                    line = body.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise ParseError(f"not UTF-8 text ({error.reason} at byte {error.start + 1} "
                                     "of the line)", path, number) from None  # fmt: skip
                fields = _BLANKS.split(line.strip(" \t\x0b\x0c"))
                if fields == [""]:
                    continue
                if first and fields[0].lower() == header:
                    first = False
                    continue
                first = False
                if len(fields) != nfields:
                    raise ParseError(
                        f"expected {nfields} fields, found {len(fields)}", path, number
                    )
                yield number, fields
        except (gzip.BadGzipFile, EOFError, zlib.error) as error:
            raise ParseError(f"not a readable gzip file ({error})", path) from None


def _score(text: str, what: str, path: str, number: int) -> float:
    """A score as the BOSARIS text readers take one (ASCII, no ``_`` separators), finite."""
    value = number_of_token(text.encode())
    if value is None:
        raise ParseError(f"bad {what} {text!r}: not a number", path, number)
    if not math.isfinite(value):
        raise ParseError(f"bad {what} {text!r}: not finite", path, number)
    return value


def _label(text: str, words: dict, what: str, path: str, number: int):
    try:
        return words[text.lower()]
    except KeyError:
        accepted = "/".join(w for w in words if w != "non-target")
        raise ParseError(f"bad {what} {text!r}: expected {accepted}", path, number) from None


def _unique(names: list[str], lines: list[int], path: str) -> np.ndarray:
    seen: dict[str, int] = {}
    for name, number in zip(names, lines, strict=True):
        first = seen.setdefault(name, number)
        if first != number:
            raise ParseError(f"duplicate filename {name!r} (first on line {first})", path, number)
    return np.array(names, dtype=object)


def read_cm_key(path: str | os.PathLike[str]) -> CMKey:
    """Read a track-1 key, ``filename cm-label`` (``bonafide``/``spoof``)."""
    path = os.fspath(path)
    names, lines, labels = [], [], []
    for number, (name, label) in _rows(path, "filename", 2):
        names.append(name)
        lines.append(number)
        labels.append(_label(label, _CM_LABELS, "cm-label", path, number))
    if not names:
        raise ParseError("no trial in the key", path)
    return CMKey(path, _unique(names, lines, path), np.array(labels, dtype=bool))


def read_cm_scores(path: str | os.PathLike[str]) -> CMScores:
    """Read track-1 scores, ``filename cm-score``."""
    path = os.fspath(path)
    names, lines, scores = [], [], []
    for number, (name, score) in _rows(path, "filename", 2):
        names.append(name)
        lines.append(number)
        scores.append(_score(score, "cm-score", path, number))
    return CMScores(path, _unique(names, lines, path), np.array(scores, dtype=np.float64))


def read_sasv_key(path: str | os.PathLike[str]) -> SASVKey:
    """Read a track-2 key, ``spk filename cm-label asv-label``; the two labels must agree."""
    path = os.fspath(path)
    speakers, names, lines, classes = [], [], [], []
    for number, (spk, name, cm, asv) in _rows(path, "spk", 4):
        bonafide = _label(cm, _CM_LABELS, "cm-label", path, number)
        cls = _label(asv, _ASV_LABELS, "asv-label", path, number)
        if bonafide == (cls == SPOOF):
            raise ParseError(f"cm-label {cm!r} contradicts asv-label {asv!r}", path, number)
        speakers.append(spk)
        names.append(name)
        lines.append(number)
        classes.append(cls)
    if not names:
        raise ParseError("no trial in the key", path)
    return SASVKey(path, np.array(speakers, dtype=object), _unique(names, lines, path),
                   np.array(classes, dtype=np.int8))  # fmt: skip


def read_sasv_scores(path: str | os.PathLike[str]) -> SASVScores:
    """Read track-2 scores, ``spk filename cm-score asv-score sasv-score``."""
    path = os.fspath(path)
    speakers, names, lines, cols = [], [], [], ([], [], [])
    for number, (spk, name, *values) in _rows(path, "spk", 5):
        speakers.append(spk)
        names.append(name)
        lines.append(number)
        for col, text, what in zip(
            cols, values, ("cm-score", "asv-score", "sasv-score"), strict=True
        ):
            col.append(_score(text, what, path, number))
    cm, asv, sasv = (np.array(c, dtype=np.float64) for c in cols)
    return SASVScores(path, np.array(speakers, dtype=object), _unique(names, lines, path),
                      cm, asv, sasv)  # fmt: skip


def _positions(key_names: np.ndarray, key_path: str, names: np.ndarray, path: str) -> np.ndarray:
    """Row of each key filename in the score file; a key filename without a score is an error."""
    where = {name: i for i, name in enumerate(names.tolist())}
    rows = np.array([where.get(name, -1) for name in key_names.tolist()], dtype=np.int64)
    missing = np.flatnonzero(rows < 0)
    if missing.size:
        few = ", ".join(repr(n) for n in key_names[missing[:3]])
        raise TrialError(f"{missing.size} filename(s) of {key_path} have no score in {path}: "
                         f"{few}{' ...' if missing.size > 3 else ''}")  # fmt: skip
    return rows


def cm_arrays(key: CMKey, scores: CMScores) -> tuple[np.ndarray, np.ndarray]:
    """``(bona fide scores, spoof scores)``; scores of filenames not in the key are ignored."""
    score = scores.score[_positions(key.filename, key.path, scores.filename, scores.path)]
    bona, spoof = score[key.bonafide], score[~key.bonafide]
    if not bona.size or not spoof.size:
        raise TrialError(f"{key.path}: need bona fide and spoof trials, found "
                         f"{bona.size} bona fide and {spoof.size} spoof")  # fmt: skip
    return bona, spoof


def _sasv_rows(key: SASVKey, scores: SASVScores) -> np.ndarray:
    """Row of each key filename in the score file; speakers and classes checked."""
    rows = _positions(key.filename, key.path, scores.filename, scores.path)
    bad = np.flatnonzero(scores.speaker[rows] != key.speaker)
    if bad.size:
        i = bad[0]
        raise TrialError(
            f"filename {key.filename[i]!r}: speaker {key.speaker[i]!r} in "
            f"{key.path} but {scores.speaker[rows[i]]!r} in {scores.path}"
        )
    classes = {"target": TARGET, "nontarget": NONTARGET, "spoof": SPOOF}
    for name, code in classes.items():
        if not np.any(key.asv_class == code):
            raise TrialError(f"{key.path}: no {name} trial")
    return rows


def sasv_arrays(key: SASVKey, scores: SASVScores) -> dict[str, dict[str, np.ndarray]]:
    """Scores by column and class: ``out[column][cls]``, column ``cm``/``asv``/``sasv``, class
    ``target``/``nontarget``/``spoof``. Speakers must match between key and scores."""
    rows = _sasv_rows(key, scores)
    classes = {"target": TARGET, "nontarget": NONTARGET, "spoof": SPOOF}
    return {
        column: {name: values[rows][key.asv_class == code] for name, code in classes.items()}
        for column, values in (("cm", scores.cm), ("asv", scores.asv), ("sasv", scores.sasv))
    }


def cm_key_and_scores(key: CMKey, scores: CMScores) -> tuple[xr.Dataset, xr.Dataset]:
    """A BOSARIS Key and Scores of a track-1 set, for :func:`bosaris_dask.metrics.evaluate`.

    One model, ``"cm"``; one segment per key filename; bona fide trials are targets, spoofs
    non-targets (the challenge's convention: a CM accepts bona fide speech).

    Examples
    --------
    >>> key = CMKey("k", np.array(["a", "b"], dtype=object), np.array([True, False]))
    >>> kd, sd = cm_key_and_scores(key, CMScores("s", key.filename, np.array([1.0, -1.0])))
    >>> kd.trial_mask.values.tolist(), sd.score.values.tolist()
    ([[1, -1]], [[1.0, -1.0]])
    """
    from bosaris_dask.trials.construction import make_key, make_scores

    score = scores.score[_positions(key.filename, key.path, scores.filename, scores.path)]
    segments = key.filename.astype(str)
    mask = np.where(key.bonafide, 1, -1).astype(np.int8)[None, :]
    return make_key(["cm"], segments, mask), make_scores(["cm"], segments, score[None, :])


def sasv_key_and_scores(
    key: SASVKey, scores: SASVScores
) -> tuple[xr.Dataset, dict[str, xr.Dataset]]:
    """An SASV key and the three score columns of a track-2 set, for
    :func:`bosaris_dask.spoofing.scale.evaluate_sasv`.

    One model, ``"sasv"``; one segment per key filename. The key is a BOSARIS Key (targets
    +1, non-targets and spoofs -1) with the coordinate ``segment_spoof``
    (:func:`bosaris_dask.spoofing.scale.sasv_key`); the scores are ``{"cm", "asv", "sasv"}``.

    Examples
    --------
    >>> names = np.array(["a", "b", "c"], dtype=object)
    >>> key = SASVKey("k", np.array(["s"] * 3, dtype=object), names,
    ...               np.array([TARGET, NONTARGET, SPOOF], dtype=np.int8))
    >>> one = np.array([1.0, 0.0, -1.0])
    >>> kd, sd = sasv_key_and_scores(key, SASVScores("s", key.speaker, names, one, one, one))
    >>> kd.trial_mask.values.tolist(), kd.segment_spoof.values.tolist(), sorted(sd)
    ([[1, -1, -1]], [False, False, True], ['asv', 'cm', 'sasv'])
    """
    from bosaris_dask.spoofing.scale import sasv_key
    from bosaris_dask.trials.construction import make_key, make_scores

    rows = _sasv_rows(key, scores)
    segments = key.filename.astype(str)
    mask = np.where(key.asv_class == TARGET, 1, -1).astype(np.int8)[None, :]
    out = sasv_key(make_key(["sasv"], segments, mask), key.asv_class == SPOOF)
    columns = {name: make_scores(["sasv"], segments, getattr(scores, name)[rows][None, :])
               for name in ("cm", "asv", "sasv")}  # fmt: skip
    return out, columns
