"""Readers of the ASVspoof 5 protocol (key) and score files: the evaluation package's formats
and the protocol files the database ships.

Track 1 (countermeasure, CM):

- key: ``filename  cm-label`` with ``cm-label`` ``bonafide`` or ``spoof`` (the package's), or
  the database's ``ASVspoof5.*.track_1.tsv`` (ten columns: speaker, filename, gender, codec,
  codec quality, codec seed, attack tag, attack label, key, reserved), or an ASVspoof 2019
  LA/PA CM protocol (five columns: speaker, filename, ``-`` or environment, attack or ``-``,
  key);
- scores: ``filename  cm-score``, or the ASVspoof 2019 evaluation package's
  ``filename  attack  key  cm-score`` (the score is the fourth field; its key, checked against
  its attack, must agree with the key file's).

Track 2 (spoofing-aware speaker verification, SASV): a trial is a (claimed speaker, filename)
pair, and one file is trialled against several speakers.

- key: ``spk  filename  cm-label  asv-label`` with ``asv-label`` ``target``, ``nontarget`` or
  ``spoof`` (a spoof's ``cm-label`` is ``spoof``, a target's or non-target's ``bonafide``), or
  the database's ``ASVspoof5.*.track_2.trial.tsv`` (five columns: target speaker, filename,
  target gender, attack label or ``bonafide``, asv key);
- scores: ``spk  filename  cm-score  asv-score  sasv-score``; a column of ``-`` is a score not
  given (a single SASV system writes ``-`` for the CM and ASV scores), and what needs it is not
  reported.

Fields are separated by tabs or spaces; a first line that names the columns (``filename ...``,
``spk ...``, or the package's ``trial_anon``/``tar_spk_anon``) is skipped; ``.gz`` files are
read through gzip. Labels are case-insensitive. The text rules are the BOSARIS readers'
(:mod:`bosaris_dask.io.text`): UTF-8 with an optional byte-order mark, LF or CRLF line ends,
ASCII blanks between fields, scores as ASCII numbers without ``_`` separators.

These readers are **in memory** (numpy arrays): an ASVspoof set is about 1e6 rows, a few tens of
MB, so nothing here is lazy or chunked like the BOSARIS readers of :mod:`bosaris_dask.io`.
Every problem is a one-line :class:`~bosaris_dask.errors.ParseError` naming the file and line
(a bad label or score, a wrong number of fields, a duplicate trial); a key trial without a
score is :mod:`~bosaris_dask.spoofing.matching`'s to find.

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> d = Path(tempfile.mkdtemp())
>>> _ = (d / "key.tsv").write_text("filename\\tcm-label\\nE1\\tbonafide\\nE2\\tspoof\\n")
>>> _ = (d / "cm.tsv").write_text("E2\\t-1.5\\nE1\\t2.0\\n")
>>> key = read_cm_key(d / "key.tsv")
>>> key.filename.tolist(), key.bonafide.tolist()
(['E1', 'E2'], [True, False])
>>> scores = read_cm_scores(d / "cm.tsv")
>>> scores.filename.tolist(), scores.score.tolist()
(['E2', 'E1'], [-1.5, 2.0])
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

from bosaris_dask.errors import ParseError
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
    """Track-1 scores: ``filename`` and ``score`` (float64), in file order; an ASVspoof 2019
    score file's own key column as ``bonafide`` (bool), with each row's ``line`` (``None``
    for a file without one)."""

    path: str
    filename: np.ndarray
    score: np.ndarray
    bonafide: np.ndarray | None = None
    line: np.ndarray | None = None


@dataclass(frozen=True)
class SASVKey:
    """A track-2 key: ``speaker``, ``filename``, ``asv_class`` (:data:`TARGET` ...), in order."""

    path: str
    speaker: np.ndarray
    filename: np.ndarray
    asv_class: np.ndarray


@dataclass(frozen=True)
class SASVScores:
    """Track-2 scores: ``speaker``, ``filename``, ``cm``, ``asv``, ``sasv`` (float64 arrays;
    ``None`` for a column the file gives as ``-``)."""

    path: str
    speaker: np.ndarray
    filename: np.ndarray
    cm: np.ndarray | None
    asv: np.ndarray | None
    sasv: np.ndarray | None

    def columns(self) -> dict[str, np.ndarray]:
        """The columns given, by name (``cm``, ``asv``, ``sasv``)."""
        named = {"cm": self.cm, "asv": self.asv, "sasv": self.sasv}
        return {name: values for name, values in named.items() if values is not None}


def _open(path: str) -> io.BufferedIOBase:
    if str(path).endswith(".gz"):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


#: Field separators: runs of ASCII blanks, as the BOSARIS text readers split (a non-breaking
#: space or another Unicode space is part of a field).
_BLANKS = re.compile(r"[ \t\x0b\x0c]+")


def _rows(path: str, headers: tuple[str, ...], widths: tuple[int, ...],
          hint: tuple[tuple[int, ...], str] = ((), "")
          ) -> Iterator[tuple[int, list[str]]]:  # fmt: skip
    """``(line number, fields)`` of each non-blank line: UTF-8 (a byte-order mark skipped),
    lines ending in LF or CRLF, a first non-blank line whose first field is one of ``headers``
    skipped. The first data line has one of ``widths`` fields, and every line as many; a line
    with one of ``hint``'s widths says its text (what such a file may be)."""
    first = True
    width = None
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
                if first and fields[0].lower() in headers:
                    first = False
                    continue
                first = False
                if width is None and len(fields) in widths:
                    width = len(fields)
                if len(fields) != (width or widths[0]):
                    *most, last = [str(w) for w in widths]
                    expected = width or (f"{', '.join(most)} or {last}" if most else last)
                    said = f" ({hint[1]})" if len(fields) in hint[0] else ""
                    raise ParseError(f"expected {expected} fields, found {len(fields)}{said}",
                                     path, number)  # fmt: skip
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


def _unique(names: list[str], lines: list[int], path: str, speakers: list[str] | None = None
            ) -> np.ndarray:  # fmt: skip
    """The filenames as an array; a trial (filename, or speaker and filename) twice is an
    error naming both lines."""
    trials = names if speakers is None else list(zip(speakers, names, strict=True))
    seen: dict = {}
    for trial, number in zip(trials, lines, strict=True):
        first = seen.setdefault(trial, number)
        if first != number:
            what = (f"filename {trial!r}" if speakers is None
                    else f"trial (speaker {trial[0]!r}, filename {trial[1]!r})")  # fmt: skip
            raise ParseError(f"duplicate {what} (first on line {first})", path, number)
    return np.array(names, dtype=object)


#: A track-1 key's columns: the package's (filename, cm-label), ASVspoof 2019's CM protocol
#: (speaker, filename, environment or -, attack or -, key) or the database's protocol.
_CM_KEY_WIDTHS = (2, 5, 10)
#: Track-1 scores' columns: (filename, cm-score), or ASVspoof 2019's (filename, attack, key,
#: cm-score).
_CM_SCORE_WIDTHS = (2, 4)
#: A track-2 key's columns: the package's (spk, filename, cm-label, asv-label) or the
#: database's trial protocol (spk, filename, gender, attack label, asv key).
_SASV_KEY_WIDTHS = (4, 5)
_CM_HEADERS = ("filename", "trial_anon")
#: What a track-1 reader says of a file with a track-2 layout.
_SASV_HINT = "a track-2 (SASV) file? use 'spoof sasv'"
_SASV_HEADERS = ("spk", "tar_spk_anon")
#: What a track-2 reader says of a file with a track-1 layout (the package's key or scores, the
#: database's ten-column protocol, ASVspoof 2019's four-column scores).
_CM_HINT = "a track-1 (CM) file? use 'spoof cm'"
#: A score not given (a single SASV system's CM and ASV columns).
NOT_GIVEN = "-"


def read_cm_key(path: str | os.PathLike[str]) -> CMKey:
    """Read a track-1 key: ``filename cm-label`` (``bonafide``/``spoof``), the database's
    ten-column ``ASVspoof5.*.track_1.tsv`` (filename in column 2, key in column 9, whose
    attack label, column 8, must say ``bonafide`` exactly for the bona fide files), or an
    ASVspoof 2019 CM protocol (filename in column 2, key in column 5, the attack in column 4
    ``-`` exactly for the bona fide files)."""
    path = os.fspath(path)
    names, lines, labels = [], [], []
    for number, fields in _rows(path, _CM_HEADERS, _CM_KEY_WIDTHS, ((4,), _SASV_HINT)):
        if len(fields) == 2:
            name, label = fields
            bonafide = _label(label, _CM_LABELS, "cm-label", path, number)
        elif len(fields) == 5:  # ASVspoof 2019: the attack is '-' for bona fide speech
            name, attack, label = fields[1], fields[3], fields[4]
            if label.lower() in _ASV_LABELS and label.lower() != "spoof":
                raise ParseError(f"key {label!r} is an ASV label: {_SASV_HINT}", path, number)
            bonafide = _label(label, _CM_LABELS, "key", path, number)
            if bonafide != (attack == "-"):
                raise ParseError(f"key {label!r} contradicts attack {attack!r} (ASVspoof 2019: "
                                 "'-' for bona fide speech)", path, number)  # fmt: skip
        else:
            name, attack, label = fields[1], fields[7], fields[8]
            bonafide = _label(label, _CM_LABELS, "key", path, number)
            if bonafide != (attack.lower() == "bonafide"):
                raise ParseError(f"key {label!r} contradicts attack label {attack!r}",
                                 path, number)  # fmt: skip
        names.append(name)
        lines.append(number)
        labels.append(bonafide)
    if not names:
        raise ParseError("no trial in the key", path)
    return CMKey(path, _unique(names, lines, path), np.array(labels, dtype=bool))


def read_cm_scores(path: str | os.PathLike[str]) -> CMScores:
    """Read track-1 scores, ``filename cm-score`` (or ASVspoof 2019's ``filename attack key
    cm-score``, whose key, ``-`` attack for bona fide speech, is kept to be checked against
    the key file's)."""
    path = os.fspath(path)
    names, lines, scores, labels = [], [], [], []
    for number, fields in _rows(path, _CM_HEADERS, _CM_SCORE_WIDTHS, ((5,), _SASV_HINT)):
        name, score = fields[0], fields[-1]
        if len(fields) == 4:
            attack, label = fields[1], fields[2]
            bonafide = _label(label, _CM_LABELS, "key", path, number)
            if bonafide != (attack == "-"):
                raise ParseError(f"key {label!r} contradicts attack {attack!r} (ASVspoof 2019: "
                                 "'-' for bona fide speech)", path, number)  # fmt: skip
            labels.append(bonafide)
        names.append(name)
        lines.append(number)
        scores.append(_score(score, "cm-score", path, number))
    return CMScores(
        path, _unique(names, lines, path), np.array(scores, dtype=np.float64),
        np.array(labels, dtype=bool) if labels else None, np.array(lines) if labels else None,
    )  # fmt: skip


def read_sasv_key(path: str | os.PathLike[str]) -> SASVKey:
    """Read a track-2 key: ``spk filename cm-label asv-label`` (the two labels must agree), or
    the database's five-column ``ASVspoof5.*.track_2.trial.tsv`` (``spk filename gender
    attack-label asv-key``: a trial is bona fide where the attack label is ``bonafide``)."""
    path = os.fspath(path)
    speakers, names, lines, classes = [], [], [], []
    for number, fields in _rows(path, _SASV_HEADERS, _SASV_KEY_WIDTHS, ((2, 10), _CM_HINT)):
        if len(fields) == 4:
            spk, name, cm, asv = fields
            bonafide = _label(cm, _CM_LABELS, "cm-label", path, number)
            said = f"cm-label {cm!r}"
        else:
            spk, name, _gender, attack, asv = fields
            bonafide = attack.lower() == "bonafide"
            said = f"attack label {attack!r}"
        cls = _label(asv, _ASV_LABELS, "asv-label", path, number)
        if bonafide == (cls == SPOOF):
            raise ParseError(f"{said} contradicts asv-label {asv!r}", path, number)
        speakers.append(spk)
        names.append(name)
        lines.append(number)
        classes.append(cls)
    if not names:
        raise ParseError("no trial in the key", path)
    return SASVKey(path, np.array(speakers, dtype=object), _unique(names, lines, path, speakers),
                   np.array(classes, dtype=np.int8))  # fmt: skip


def read_sasv_scores(path: str | os.PathLike[str]) -> SASVScores:
    """Read track-2 scores, ``spk filename cm-score asv-score sasv-score``; a column of ``-``
    (every line) is a score not given, ``None`` in the result."""
    path = os.fspath(path)
    whats = ("cm-score", "asv-score", "sasv-score")
    speakers, names, lines, cols = [], [], [], ([], [], [])
    given: list[tuple[bool, int]] = []  # per column: given as numbers?, on which line first
    for number, (spk, name, *values) in _rows(path, _SASV_HEADERS, (5,), ((2, 4), _CM_HINT)):
        speakers.append(spk)
        names.append(name)
        lines.append(number)
        if not given:
            given = [(text != NOT_GIVEN, number) for text in values]
        for col, text, what, (numbers, first) in zip(cols, values, whats, given, strict=True):
            if (text != NOT_GIVEN) != numbers:
                was = "numbers" if numbers else f"'{NOT_GIVEN}' (not given)"
                raise ParseError(f"{what} {text!r} where line {first} gave {was}: a score "
                                 f"column is all numbers or all '{NOT_GIVEN}'", path,
                                 number)  # fmt: skip
            if numbers:
                col.append(_score(text, what, path, number))
    if given and not any(numbers for numbers, _ in given):
        raise ParseError(f"every score column is '{NOT_GIVEN}': no score given", path)
    cm, asv, sasv = (
        np.array(c, dtype=np.float64) if not given or given[i][0] else None
        for i, c in enumerate(cols)
    )
    return SASVScores(path, np.array(speakers, dtype=object),
                      _unique(names, lines, path, speakers), cm, asv, sasv)  # fmt: skip
