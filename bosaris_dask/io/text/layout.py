"""What a text file is: its kind, header roles and separator, and where its data lines start."""

from __future__ import annotations

import gzip
import math
import os
import re
import zlib
from dataclasses import dataclass
from typing import Any

from bosaris_dask.errors import ParseError, QualityTableError, StoreError, TrialError
from bosaris_dask.io.text.labels import ACCEPTED_LABELS, is_label_word

#: Lines longer than this many bytes (without the newline) are an error.
MAX_LINE_BYTES = 2**20
#: A line starting with ``#``: never data (its first id would be ``#...``).
COMMENT_LINE = ("a line starting with '#' (a comment?): trial lists have no comment lines; "
                "remove them, e.g. grep -v '^#' FILE")  # fmt: skip
_SYNONYMS = {  # the column names of a header, by role
    "model": ("modelid", "model", "model_id", "enrollment", "enroll", "enroll_id",
              "enrollment_id", "enrol", "enrol_id"),
    "segment": ("segmentid", "segment", "segment_id", "test", "test_id", "testid"),
    "label": ("targettype", "target_type", "label"),
    "score": ("llr", "score"),
}  # fmt: skip
_ROLE_OF_NAME = {name: role for role, names in _SYNONYMS.items() for name in names}
_KINDS = ("scores", "key", "ndx")
_BOM = b"\xef\xbb\xbf"
_GZIP = b"\x1f\x8b"  # the magic bytes a gzip stream starts with
_NOT_FLOAT = re.compile(rb"[\s_]")


@dataclass(frozen=True)
class _Layout:
    """How to parse the data lines of a file."""

    kind: str  # "scores" | "key" | "ndx" | "quality"
    sep: bytes | None  # None: runs of whitespace; b"\t": single tabs
    nfields: int
    roles: tuple[tuple[str, int], ...]  # (role, field index); role "value" may repeat
    start: int  # byte offset of the first data line
    first_line: int  # its 1-based line number
    header: bool = False  # whether the columns were named by a header line
    form: str = ""  # a headerless layout's fields, as error messages show them


def _open(path: str | os.PathLike[str]):
    """The file's bytes; a gzip-compressed one (by its magic bytes, whatever its name) is
    decompressed as it is read."""
    try:
        f = open(path, "rb")  # noqa: SIM115 (closed by the callers' with blocks)
    except OSError as e:
        raise StoreError(f"cannot read {os.fspath(path)}: {e.strerror or e}") from e
    gzipped = f.read(2) == _GZIP
    f.seek(0)
    return _Gunzip(path, f) if gzipped else f


class _Gunzip(gzip.GzipFile):
    """A gzip stream whose cut-short or corrupt data is a ParseError naming the file."""

    def __init__(self, path: str | os.PathLike[str], f: Any):
        super().__init__(fileobj=f, mode="rb")
        self._path, self._raw = path, f

    def read(self, size: int = -1) -> bytes:
        try:
            return super().read(size)
        except (gzip.BadGzipFile, EOFError, zlib.error) as error:
            why = str(error) or "cut short"
            raise ParseError(f"not a readable gzip file ({why})", path=self._path) from None

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


def _first_nonblank_line(path: str | os.PathLike[str]) -> tuple[bytes, int, int, int]:
    """The first non-blank line: (bytes, 1-based number, offset of line 1 after a BOM, offset after
    it); reads at most ``MAX_LINE_BYTES`` past any line start.
    """
    with _open(path) as f:
        magic = f.read(3)
        origin = len(_BOM) if magic == _BOM else 0
        offset = origin
        f.seek(origin)
        lineno, buf = 1, b""
        while True:
            chunk = f.read(2**16)
            buf += chunk
            while True:
                cut = buf.find(b"\n")
                if cut < 0:
                    break
                line, buf = buf[:cut], buf[cut + 1 :]
                _check_line(line, path, lineno)
                if line.strip():
                    return line.rstrip(b"\r"), lineno, origin, offset + cut + 1
                offset += cut + 1
                lineno += 1
            _check_line(buf, path, lineno)
            if not chunk:
                if buf.strip():
                    return buf.rstrip(b"\r"), lineno, origin, offset + len(buf)
                what = "empty file" if offset + len(buf) == 0 else "no data (only blank lines)"
                raise ParseError(what, path=path, line=lineno if buf else max(1, lineno - 1))


def _check_line(line: bytes, path: Any, lineno: int) -> None:
    if len(line) > MAX_LINE_BYTES:
        raise _cr_lines(path, lineno) if b"\r" in line.rstrip(b"\r") else _too_long(path, lineno)
    if b"\0" in line:
        raise _nul_byte(path, lineno)


def _cr_lines(path: Any, line: int) -> ParseError:
    """A line holding carriage returns that, as separators, give no layout (or no line)."""
    return ParseError("carriage returns (CR) inside the line: lines ended by CR alone, as "
                      "classic Mac OS wrote them? end them with LF: tr '\\r' '\\n' < FILE > NEW",
                      path, line)  # fmt: skip


def _too_long(path: Any, line: int) -> ParseError:
    return ParseError(f"line longer than {MAX_LINE_BYTES} bytes", path, line)


def _nul_byte(path: Any, line: int) -> ParseError:
    return ParseError("NUL byte in a text file (is it binary?)", path, line)


def number_of_token(token: bytes) -> float | None:
    """The value of a number field as the text readers take one (ASCII, Python's ``float``
    syntax without blanks or ``_`` separators), or None.

    >>> number_of_token(b"-1.5e3"), number_of_token(b"1_000"), number_of_token("０".encode())
    (-1500.0, None, None)
    """
    if not token.isascii() or _NOT_FLOAT.search(token):
        return None
    try:
        return float(token)
    except ValueError:
        return None


def _is_number(token: bytes) -> bool:
    value = number_of_token(token)
    return value is not None and math.isfinite(value)


def _header_roles(names: list[str], path: Any, lineno: int) -> dict[str, int] | None:
    """Role -> column of a header line, or None if the line does not look like a header."""
    data_like = [_is_number(n.encode()) or is_label_word(n.encode()) for n in names]
    if any(data_like):  # e.g. the trial "model segment 1.5" of a headerless file
        return None
    roles: dict[str, int] = {}
    twice: tuple[str, int, int] | None = None  # (role, first column, second column)
    for j, name in enumerate(names):
        role = _ROLE_OF_NAME.get(name.strip().lower())
        if role is not None and role in roles:
            twice = twice or (role, roles[role], j)
        elif role is not None:
            roles[role] = j
    if "model" not in roles or "segment" not in roles:
        return None  # e.g. the trial "modelid modelid" of a headerless file
    if twice is not None:
        role, a, b = twice
        raise ParseError(
            f"two {role} columns in the header: {names[a]!r} and {names[b]!r}",
            path=path,
            line=lineno,
        )
    return roles


#: Text layouts ``format=`` accepts; ``None`` detects one from the first lines.
TEXT_FORMATS = ("bosaris", "nist", "voxceleb", "wespeaker", "3dspeaker")
# headerless layouts: the role of each field, and how an error message shows the line
_HEADERLESS = {
    "voxceleb": ((("label", 0), ("model", 1), ("segment", 2)), "label enrol test"),
    "wespeaker": ((("model", 0), ("segment", 1), ("score", 2), ("label", 3)),
                  "enrol test score label"),
    "3dspeaker": ((("model", 0), ("segment", 1), ("label", 2), ("score", 3)),
                  "enrol test label score"),
}  # fmt: skip
_SNIFF_LINES = 100  # how many first lines tell a 4-field file's label column


def _detect_layout(
    path: str | os.PathLike[str],
    kind: str | None = None,
    header: bool | None = None,
    fmt: str | None = None,
) -> _Layout:
    if kind is not None and kind not in _KINDS:
        raise TrialError(f"kind must be one of {_KINDS} or None, not {kind!r}")
    if fmt is not None and fmt not in TEXT_FORMATS:
        raise TrialError(f"text format must be one of {TEXT_FORMATS} or None, not {fmt!r}")
    if fmt == "nist":
        header = True if header is None else header
    elif fmt is not None:
        header = False
    line, lineno, origin, after = _first_nonblank_line(path)
    if header is not False:
        sep = b"\t" if b"\t" in line else None
        if sep is None and b"," in line and len(line.split()) == 1:
            sep = b","  # a CSV table (hyperion's TrialScores.save_table, pandas' to_csv)
        tokens = line.split(sep) if sep else line.split()
        names = [t.decode("utf-8", "replace") for t in tokens]
        roles = _header_roles(names, path, lineno)
        if roles is None and header:
            raise ParseError(
                "header=True but this line names no model and segment columns "
                f"(model: {', '.join(_SYNONYMS['model'])}; "
                f"segment: {', '.join(_SYNONYMS['segment'])})",
                path=path,
                line=lineno,
            )
        if roles is not None:
            if kind is None:
                kind = "scores" if "score" in roles else "key" if "label" in roles else "ndx"
            columns = _used(kind, roles, path, lineno, lambda want: (
                f"a {kind} table needs a {want} column ({', '.join(_SYNONYMS[want])}); "
                f"the header has {names}"
            ))  # fmt: skip
            return _Layout(kind, sep, len(tokens), columns, after, lineno + 1, header=True)
    tokens = line.split()
    if len(tokens) > 4 and line.count(b"\r") > 1:  # (a CR alone separates fields too)
        raise _cr_lines(path, lineno)
    _refuse_foreign(tokens, path, lineno, origin, kind)
    if fmt is None:
        fmt = _format_of_tokens(tokens, path, lineno, origin, kind)
    if fmt in _HEADERLESS:
        return _headerless(fmt, kind, tokens, path, lineno, origin)
    if kind is None:
        kind = _kind_of_tokens(tokens, path, lineno)
    expected = {"scores": (3,), "key": (3,), "ndx": (2, 3)}[kind]
    if len(tokens) not in expected:
        extra = tokens[3:]
        hint = ""
        if len(tokens) > 3 and extra and all(t in (b"Y", b"N") for t in extra):
            hint = (" (a NIST SRE08 trial key with Y/N condition columns, as Kaldi's sre08 "
                    "recipe keeps it? keep the first three: cut -d' ' -f1-3; for per-condition "
                    "metrics, make the columns a --conditions table of trials, tab-separated "
                    "with the header 'model<TAB>segment<TAB>COL...', and give --by "
                    "trial.COL)")  # fmt: skip
        raise ParseError(f"expected {expected[0]} fields for {kind}, found {len(tokens)}{hint}",
                         path=path, line=lineno)  # fmt: skip
    fields: tuple[tuple[str, int], ...] = (("model", 0), ("segment", 1))
    if kind != "ndx":
        fields += (("score" if kind == "scores" else "label", 2),)
    # the data start at line 1: blank lines before the first trial are skipped by the parser
    return _Layout(kind, None, len(tokens), fields, origin, 1)


def _refuse_foreign(
    tokens: list[bytes], path: Any, lineno: int, origin: int, kind: str | None = None
) -> None:
    """A one-line error for the headerless layouts of other tools that would otherwise be read
    as something else (an ESPnet trial id as a model, its score as a segment; an ASVspoof CM
    key or score file as a trial list whose segments are labels or scores) or fail with a bare
    field count (a quality table) or a bare bad score (VoxSRC's 'score enrol test' order, read
    without a kind or as scores). Two fields read as an ndx (``kind="ndx"``) are its trials,
    whatever their segment ids look like."""
    if len(tokens) == 2 and kind != "ndx":
        lines = _first_lines(path, origin)
        data_like = is_label_word(tokens[1], numeric=False) or _is_number(tokens[1])
        body = lines if data_like else lines[1:]  # the first line may be a header
        second = [t[1] for t in body] if body and all(len(t) == 2 for t in body) else []
        if second and all(is_label_word(t, numeric=False) for t in second) \
                and all(_is_number(t[0]) for t in body):  # fmt: skip
            raise ParseError(
                f"two fields, a score and a label ({_shown(body[0][0])} {_shown(second[0])}): "
                "Kaldi's compute-eer input? it has no trial ids; evaluate reads trials "
                "('model segment score' lines, with a key)",
                path=path, line=lineno,
            )  # fmt: skip
        if second and all(is_label_word(t, numeric=False) for t in second):
            raise ParseError(
                f"two fields, the second a label word ({_shown(second[0])}): an id-label list "
                "such as an ASVspoof CM key (filename cm-label)? a trial list has model and "
                "segment ids; for ASVspoof use 'bosaris-dask spoof cm' (an ndx of such segment "
                "ids: give the kind, --kind ndx)",
                path=path, line=lineno,
            )  # fmt: skip
        if second and all(_is_number(t) and not t.lstrip(b"+-").isdigit() for t in second):
            raise ParseError(
                f"two fields, the second a score ({_shown(second[0])}): an id-score file such "
                "as ASVspoof CM scores (filename cm-score)? a trial list has model and segment "
                "ids; for ASVspoof use 'bosaris-dask spoof cm' (an ndx of such segment ids: give "
                "the kind, --kind ndx)",
                path=path, line=lineno,
            )  # fmt: skip
    # (a pretty-printed document's first line is '{' alone: a trial of model '{' has more)
    if tokens and ((len(tokens) == 1 and tokens[0] in (b"{", b"[")) or tokens[0].startswith(b'{"')):
        raise ParseError("a JSON document (a model that calibrate or fuse saved?), not a "
                         "trial list; 'bosaris-dask apply' applies a model",
                         path=path, line=lineno)  # fmt: skip
    if tokens and tokens[0].startswith(b"#"):
        raise ParseError(COMMENT_LINE, path=path, line=lineno)
    if len(tokens) >= 3 and tokens[1] == b"[":
        raise ParseError(
            "'id [ v1 v2 ... ]': a Kaldi text archive of vectors (copy-vector ... ark,t:)? "
            "embedding commands read it named .ark; trial files have one trial per line",
            path=path, line=lineno,
        )  # fmt: skip
    if len(tokens) == 1 and tokens[0].isdigit() and int(tokens[0]) > 0:
        body = _first_lines(path, origin)[1:]  # a quality file: q, then lines 'id v1 ... vq'
        if body and all(len(t) == int(tokens[0]) + 1 for t in body):
            raise QualityTableError.of(path)
    if len(tokens) == 1 and tokens[0].count(b",") >= 1:
        raise ParseError(
            f"one field, {_shown(tokens[0])}: comma-separated values? without a header line "
            "naming the columns (e.g. modelid,segmentid,LLR) the fields are separated by tabs "
            "or spaces: add the header, or convert with tr ',' '\\t'",
            path=path, line=lineno,
        )  # fmt: skip
    if len(tokens) == 3 and kind in (None, "scores") and _is_number(tokens[0]) \
            and not tokens[0].isdigit() \
            and not (_is_number(tokens[2]) or is_label_word(tokens[2], numeric=False)):  # fmt: skip
        raise ParseError(
            f"the first field is a score ({_shown(tokens[0])}) and the third no score or label: "
            "VoxSRC's 'score enrol test' order? reorder the columns to 'enrol test score', "
            "e.g. awk '{print $2, $3, $1}'",
            path=path, line=lineno,
        )  # fmt: skip
    if len(tokens) == 3 and b"*" in tokens[0] and _is_number(tokens[1]):
        raise ParseError(
            f"an ESPnet trial score file (enrol*test score label)? {_shown(tokens[0])} would be "
            "read as a model and the score as a segment: split the trial id, e.g. "
            "awk '{split($1, t, \"*\"); print t[1], t[2], $2}' for the scores",
            path=path, line=lineno,
        )  # fmt: skip


def _headerless(
    fmt: str, kind: str | None, tokens: list[bytes], path: Any, lineno: int, origin: int
) -> _Layout:
    """The layout of a VoxCeleb, wespeaker or 3D-Speaker file (no header, fixed columns)."""
    columns, form = _HEADERLESS[fmt]
    roles = dict(columns)
    if kind is None:
        kind = "scores" if "score" in roles else "key"
    fields = _used(kind, roles, path, lineno, lambda want: (
        f"a {fmt} file ({form}) has no {want} column, so it cannot be read as {kind}"
    ))  # fmt: skip
    if len(tokens) != len(columns):
        raise ParseError(
            f"expected {len(columns)} fields for a {fmt} file ({form}), found {len(tokens)}",
            path=path,
            line=lineno,
        )
    return _Layout(kind, None, len(columns), fields, origin, 1, form=form)


def _used(kind: str, roles: dict[str, int], path: Any, lineno: int, missing: Any) -> tuple:
    """The ``(role, column)`` pairs a ``kind`` reads; ``missing(role)``: the error if absent."""
    want = {"scores": "score", "key": "label"}.get(kind)
    if want is not None and want not in roles:
        raise ParseError(missing(want), path=path, line=lineno)
    return tuple((r, roles[r]) for r in ("model", "segment", want) if r)


def _format_of_tokens(
    tokens: list[bytes], path: Any, lineno: int, origin: int, kind: str | None = None
) -> str:
    """The headerless layout a first line shows (the first lines, if need be)."""
    if len(tokens) == 3 and is_label_word(tokens[0]) and not is_label_word(tokens[2]):
        if not _is_number(tokens[2]) or (kind == "key" and tokens[2].isdigit()):
            return "voxceleb"  # (a BOSARIS key's field 3 is a label, not a numeric test id)
        if kind is None and all(is_label_word(t[0]) and t[2].isdigit()
                                for t in _first_lines(path, origin) if len(t) == 3):  # fmt: skip
            raise ParseError(
                "cannot tell the kind of file: field 1 holds only label words and field 3 only "
                "digits: a VoxCeleb trial list with numeric test ids (label enrol test), or "
                "BOSARIS scores of models named like labels (model segment score)? give the "
                "format (voxceleb or bosaris) or the kind (key or scores)",
                path=path,
                line=lineno,
            )
    if len(tokens) == 4:
        lines = _first_lines(path, origin)
        fmt = _label_column(lines) or _label_column(lines[:1])
        if fmt is None:
            raise ParseError(
                f"cannot tell the {'layout of the file' if kind else 'kind of file'}: 4 "
                f"fields, and {_four_fields_unclear(lines[:1])}; "
                "give the format (wespeaker: enrol test score label; 3dspeaker: enrol test "
                "label score) or a header naming the model and segment columns (model: "
                f"{', '.join(_SYNONYMS['model'])}; segment: {', '.join(_SYNONYMS['segment'])})",
                path=path,
                line=lineno,
            )
        return fmt
    return "bosaris"


def _first_lines(path: Any, origin: int) -> list[list[bytes]]:
    """The fields of the first (up to ``_SNIFF_LINES``) non-blank lines."""
    limit = _SNIFF_LINES * 256
    with _open(path) as f:
        f.seek(origin)
        head = f.read(limit)
    pieces = head.split(b"\n")
    # the last piece is a whole line where the file ends in it; else one long line is enough
    complete = pieces if len(head) < limit else (pieces[:-1] or [head])
    return [t for t in map(bytes.split, complete) if t][:_SNIFF_LINES]


def _label_column(lines: list[list[bytes]]) -> str | None:
    """``wespeaker`` if field 4 is the label, ``3dspeaker`` if field 3 is, None if unclear."""
    num = [all(len(t) == 4 and _is_number(t[j]) for t in lines) for j in (2, 3)]
    if num[0] != num[1]:  # the other field must then be the label
        label = 3 if num[0] else 2
        if not all(len(t) == 4 and is_label_word(t[label]) for t in lines):
            return None
        return "wespeaker" if num[0] else "3dspeaker"
    lab = [all(len(t) == 4 and is_label_word(t[j]) for t in lines) for j in (2, 3)]
    if num[0] and lab[0] != lab[1]:
        return "wespeaker" if lab[1] else "3dspeaker"
    return None


def _four_fields_unclear(lines: list[list[bytes]]) -> str:
    """Why the first line's fields 3 and 4 tell no layout apart (:func:`_label_column`).

    >>> _four_fields_unclear([[b"enrol", b"test", b"score", b"label"]])
    'neither field 3 nor field 4 is a number (a score)'
    >>> _four_fields_unclear([[b"a", b"b", b"1", b"0"]])[:50]
    'fields 3 and 4 are both numbers that are label wor'
    >>> _four_fields_unclear([[b"a", b"b", b"0.5", b"0.7"]])
    'fields 3 and 4 are both numbers, and neither is a label word'
    >>> _four_fields_unclear([[b"a", b"b", b"1e400", b"target"]])
    "field 3 '1e400' is not a finite score"
    """
    third, fourth = lines[0][2], lines[0][3]
    if is_label_word(lines[0][0]) and _is_number(fourth) and not _is_number(third):
        return ("field 1 is a label and field 4 a score: a VoxCeleb trial list with the scores "
                "pasted on ('label enrol test score')? give the list as the key and the scores "
                "as 'enrol test score' lines")  # fmt: skip
    for j, token in ((3, third), (4, fourth)):
        if number_of_token(token) is not None and not _is_number(token):
            return f"field {j} {token.decode(errors='replace')!r} is not a finite score"
    if not (_is_number(third) or _is_number(fourth)):
        return "neither field 3 nor field 4 is a number (a score)"
    if _is_number(third) != _is_number(fourth):  # the other one is no label word
        j, token = (4, fourth) if _is_number(third) else (3, third)
        return f"field {j} {_shown(token, 40)} is not a label word ({ACCEPTED_LABELS})"
    if is_label_word(third) and is_label_word(fourth):
        return f"fields 3 and 4 are both numbers that are label words ({ACCEPTED_LABELS})"
    return "fields 3 and 4 are both numbers, and neither is a label word"


def _kind_of_tokens(tokens: list[bytes], path: Any, lineno: int) -> str:
    if len(tokens) == 2:
        return "ndx"
    if len(tokens) == 3:
        if is_label_word(tokens[2], numeric=False):
            return "key"
        if _is_number(tokens[2]):
            return "scores"
        raise ParseError(
            f"cannot tell the kind of file: third field {_shown(tokens[2], 40)} is neither a "
            f"finite score nor a label ({ACCEPTED_LABELS})",
            path=path,
            line=lineno,
        )
    raise ParseError(
        f"cannot tell the kind of file: expected 2 fields (ndx), 3 (key or scores), 4 "
        f"(wespeaker or 3D-Speaker scores with labels) or a NIST header, found {len(tokens)} "
        "fields",
        path=path,
        line=lineno,
    )


def _shown(token: bytes, limit: int = 60) -> str:
    """A field as an error message quotes it: the text, cut at ``limit``."""
    return repr(token[:limit].decode("utf-8", "backslashreplace"))
