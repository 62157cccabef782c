"""Fuzzing of the text and HDF5 readers (issue 7): random or mutated files either read as the
right trials or raise a :class:`~bosaris_dask.errors.BosarisError`; no other exception, no hang.

Text files are checked against :func:`reference_parse`, a small independent parser of the
headerless BOSARIS/Kaldi format written from the rules of :mod:`bosaris_dask.io.text`: when it
accepts a file the reader must return exactly its trials; when it rejects one the reader must
raise a :class:`~bosaris_dask.errors.ParseError` naming the file and the same line. NIST files
with a header are outside its subset: for those only "trials or a clean error" is checked.

HDF5 files are valid BOSARIS files with bytes flipped, zeroed or cut off. The format has no
checksums on raw data, so a mutated byte inside a dataset's data reads as a different value;
the property is: the file reads as the original objects, or raises a BosarisError, or differs
from the original only where a mutated byte lies in the raw data of a dataset. Truncation
must always be an error. Parsed results are also evaluated (scores against a key).

``BOSARIS_FUZZ_EXAMPLES`` sets the examples per property (150 by default, a few seconds each);
``benchmarks/fuzz_readers.py`` runs a bigger campaign and tabulates :data:`OUTCOMES`.
"""

from __future__ import annotations

import gzip
import itertools
import math
import os
import re
import zlib
from collections import Counter
from datetime import timedelta
from pathlib import Path

import dask
import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bosaris_dask import io
from bosaris_dask.errors import BosarisError, ParseError
from bosaris_dask.io.text import read_quality_text, read_text
from bosaris_dask.metrics import evaluate
from bosaris_dask.trials import make_key, make_ndx, make_scores

EXAMPLES = int(os.environ.get("BOSARIS_FUZZ_EXAMPLES", "150"))
#: (property, outcome) -> count, over this process (tabulated by benchmarks/fuzz_readers.py).
OUTCOMES: Counter[tuple[str, str]] = Counter()

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=timedelta(seconds=20),  # per example; a hang is stopped by the timeout mark
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_NAMES = itertools.count()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def _fresh(directory: Path, suffix: str) -> Path:
    return directory / f"f{next(_NAMES)}{suffix}"


# --------------------------------------------------------------------------------------------
# the reference parser (headerless BOSARIS / Kaldi text)
# --------------------------------------------------------------------------------------------

_BOM = b"\xef\xbb\xbf"
_NUMBER = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_LABEL_PAIRS = [(b"target", b"nontarget"), (b"1", b"0"), (b"true", b"false"), (b"tgt", b"imp"),
                (b"genuine", b"impostor"), (b"mated", b"nonmated"), (b"same", b"different"),
                (b"bonafide", b"spoof")]  # fmt: skip
_LABELS = {w: sign for pair in _LABEL_PAIRS for w, sign in zip(pair, (1, -1), strict=True)}
_MODEL_NAMES = {"modelid", "model", "model_id", "enrollment", "enroll", "enroll_id"}
_MODEL_NAMES |= {"enrollment_id", "enrol", "enrol_id"}
_SEGMENT_NAMES = {"segmentid", "segment", "segment_id", "test", "test_id", "testid"}


class OutsideSubset(Exception):
    """The file may be a NIST table with a header: the reference parser does not judge it."""


class Rejected(Exception):
    """The file is not a valid trial file; ``line`` is where the first problem is (if known)."""

    def __init__(self, line: int | None, why: str):
        super().__init__(f"line {line}: {why}")
        self.line = line


def _number(token: bytes) -> float | None:
    if not _NUMBER.fullmatch(token):
        return None
    value = float(token)
    return value if math.isfinite(value) else None


def _text(token: bytes) -> str | None:
    try:
        return token.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _id(token: bytes) -> str | None:
    """An id: UTF-8, not a comment's ``#...``, no byte-order mark (files joined with cat)."""
    text = _text(token)
    return None if text is None or text.startswith("#") or "\ufeff" in text else text


def _numeric_test_id(tokens: list[bytes]) -> bool:
    """``label enrol 1001``: a VoxCeleb line whose test id is all digits (or BOSARIS scores)."""
    return (
        len(tokens) == 3 and tokens[0].lower() in _LABELS and tokens[2].isdigit()
        and tokens[2].lower() not in _LABELS
    )  # fmt: skip


def _voxceleb(first: list[bytes], kind: str | None = None) -> bool:
    """``label enrol test`` (a VoxCeleb list): the third field is no number and no label, or
    digits where the file is read as a key (a BOSARIS key's third field is a label)."""
    third = first[2].lower() if len(first) == 3 else b""
    return (
        len(first) == 3 and first[0].lower() in _LABELS
        and _number(third) is None and third not in _LABELS
    ) or (kind == "key" and _numeric_test_id(first))  # fmt: skip


def _kind_of(first: list[bytes], kind: str | None, line: int, head: list[list[bytes]]) -> str:
    if kind is None and _numeric_test_id(first):
        if all(t[0].lower() in _LABELS and t[2].isdigit() for t in head if len(t) == 3):
            raise Rejected(line, "a VoxCeleb list with numeric test ids, or BOSARIS scores?")
    if _voxceleb(first, kind):
        if kind == "scores":
            raise Rejected(line, "a VoxCeleb list has no scores")
        return kind or "key"
    if kind is None:
        if len(first) == 2:
            return "ndx"
        if len(first) == 3 and first[2].lower() in _LABELS and _number(first[2]) is None:
            return "key"
        if len(first) == 3 and _number(first[2]) is not None:
            return "scores"
        raise Rejected(line, "cannot tell the kind")
    if len(first) not in ((2, 3) if kind == "ndx" else (3,)):
        raise Rejected(line, "wrong number of fields on the first line")
    return kind


def _foreign(first: list[bytes], line: int, head: list[list[bytes]], kind: str | None) -> None:
    """Other tools' layouts the reader names instead of misreading (docs/formats.md): one field
    with a comma, ESPnet's ``enrol*test score label``, two fields whose second is a label word
    (not 1/0) or a non-integer number on every line (a first line that is neither may be a
    header), unless the kind is given as ``ndx`` (its segment ids may look like anything)."""
    if first[0] in (b"{", b"[") or first[0].startswith(b'{"'):
        raise Rejected(line, "a JSON document")
    if len(first) >= 3 and first[1] == b"[":
        raise Rejected(line, "a Kaldi text archive of vectors")
    if len(first) == 1 and b"," in first[0]:
        raise Rejected(line, "comma-separated")
    if len(first) == 3 and b"*" in first[0] and _number(first[1]) is not None:
        raise Rejected(line, "an ESPnet score file")
    if len(first) == 2 and kind != "ndx":

        def label(t: bytes) -> bool:
            return t.lower() in _LABELS and t.lower() not in (b"1", b"0")

        def score(t: bytes) -> bool:
            return _number(t) is not None and not t.lstrip(b"+-").isdigit()

        body = head if label(first[1]) or _number(first[1]) is not None else head[1:]
        if body and all(len(t) == 2 for t in body):
            if all(label(t[1]) for t in body) or all(score(t[1]) for t in body):
                raise Rejected(line, "an id-label or id-score file")


def _value(kind: str, tokens: list[bytes], voxceleb: bool) -> float | int | bool | None:
    if kind == "scores":
        return _number(tokens[2])
    if kind == "key":
        return _LABELS.get(tokens[0 if voxceleb else 2].lower())
    return True


def reference_parse(data: bytes, kind: str | None = None) -> tuple[str, list, list, dict]:
    """``(kind, models, segments, {(model, segment): value})`` of a headerless trial file.

    Raises
    ------
    Rejected
        Where the reader must raise a ParseError (at ``line``, when not None).
    OutsideSubset
        When the first line could be a NIST header.
    """
    if data.startswith(b"\x1f\x8b"):  # gzip, told by its magic bytes
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error):
            raise Rejected(None, "not a readable gzip file") from None
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    if b"\0" in data:
        raise Rejected(None, "NUL byte")
    records = [(n, line.split()) for n, line in enumerate(data.split(b"\n"), 1) if line.split()]
    if not records:
        raise Rejected(None, "no trials")
    first_line, first = records[0]
    names = {t.decode("utf-8", "replace").strip().lower() for t in first}
    if names & _MODEL_NAMES and names & _SEGMENT_NAMES or len(first) == 4:
        raise OutsideSubset  # a NIST header, or wespeaker/3D-Speaker (tests/test_io_field_formats)
    _foreign(first, first_line, [tokens for _, tokens in records[:100]], kind)
    vox = _voxceleb(first, kind)
    kind = _kind_of(first, kind, first_line, [tokens for _, tokens in records[:100]])
    trials: dict[tuple[str, str], object] = {}
    duplicate = None
    pair = None  # a file's label words come from one pair
    for n, tokens in records:
        if len(tokens) != len(first):
            raise Rejected(n, "wrong number of fields")
        ids = tokens[1:3] if vox else tokens[:2]
        model, segment, value = _id(ids[0]), _id(ids[1]), _value(kind, tokens, vox)
        if model is None or segment is None or value is None:
            raise Rejected(n, "bad id, score or label")
        if kind == "key":
            word = tokens[0 if vox else 2].lower()
            this = next(k for k, p in enumerate(_LABEL_PAIRS) if word in p)
            if pair is not None and this != pair:
                raise Rejected(n, "label words of two pairs")
            pair = this
        if (model, segment) in trials and duplicate is None:
            duplicate = n
        trials.setdefault((model, segment), value)
    if duplicate is not None:
        raise Rejected(duplicate, "trial given twice")
    models = list(dict.fromkeys(m for m, _ in trials))
    segments = list(dict.fromkeys(s for _, s in trials))
    return kind, models, segments, trials


def _trials_of(obj) -> tuple[str, list, list, dict]:
    """The same form as :func:`reference_parse`, from a trial object (computed)."""
    kind = obj.attrs["bosaris_kind"]
    obj = obj.compute()
    models, segments = obj.model.values.tolist(), obj.segment.values.tolist()
    if kind == "scores":
        mask, values = obj.score_mask.values, obj.score.values
    else:
        mask = obj.trial_mask.values != 0
        values = obj.trial_mask.values.astype(int) if kind == "key" else mask
    rows, cols = np.nonzero(mask)
    trials = {
        (models[r], segments[c]): values[r, c].item() for r, c in zip(rows, cols, strict=True)
    }
    return kind, models, segments, trials


def _same_trials(a: tuple, b: tuple) -> bool:
    def exact(t):  # float.hex tells -0.0 from 0.0
        return {k: v.hex() if isinstance(v, float) else v for k, v in t[3].items()}

    return a[:3] == b[:3] and exact(a) == exact(b)


# --------------------------------------------------------------------------------------------
# the text property
# --------------------------------------------------------------------------------------------


def check_text(name: str, data: bytes, kind: str | None, block_bytes: int, directory: Path):
    """Read ``data`` as a text trial file and check it against the reference parser."""
    path = _fresh(directory, ".txt")
    path.write_bytes(data)
    try:
        try:
            expected = reference_parse(data, kind)
        except (Rejected, OutsideSubset) as verdict:
            expected = verdict
        try:
            got = _trials_of(read_text(path, kind, block_bytes=block_bytes))
        except BosarisError as exc:
            got = exc
        except Exception as exc:  # noqa: BLE001 (the property: nothing else may escape)
            pytest.fail(f"read_text leaked {exc!r} for {data!r} (kind={kind})")
    finally:
        path.unlink()
    if isinstance(expected, OutsideSubset):
        OUTCOMES[name, "header: " + ("error" if isinstance(got, Exception) else "parsed")] += 1
        return
    if isinstance(expected, Rejected):
        assert isinstance(got, ParseError), f"accepted {data!r} (reference: {expected}): {got}"
        assert got.path == os.fspath(path) and str(got).startswith(f"{path}:")
        if expected.line is not None:
            assert got.line == expected.line, f"{data!r}: {got} but reference says {expected}"
        OUTCOMES[name, "clean error (ParseError)"] += 1
        return
    assert not isinstance(got, Exception), f"rejected valid {data!r}: {got!r}"
    assert _same_trials(got, expected), f"{data!r}: read {got}, reference {expected}"
    OUTCOMES[name, "parsed, equal to the reference"] += 1


_IDS = [b"m1", b"m2", b"s1", b"s2", b"\xc3\xa9", b"\xe6\x97\xa5", b"a\xc2\xa0b", b"x\x1cy"]
_ODD = [
    b"\xff", b"\xef\xbb\xbf", b"\x00", b"", b"-", b".", b"e5", b"1e400", b"1e-400", b"nan",
    b"inf", b"-Infinity", b"1_0", b"0x10", b"1.", b"1d5", b"TRUE", b"false", b"1,5", b"tgt",
    b"modelid", b"segmentid", b"LLR", b"targettype", b"__import__('os').system('true')",
    b"../../etc/passwd", b"\xd9\xa1",
]  # fmt: skip
_VALUES = [b"1", b"-0.5", b"+.5e3", b"-0", b"0", b"1.0", b"7E-3", b"123456789012345678901"]
_LABEL_WORDS = [b"target", b"nontarget", b"TARGET", b"NonTarget"]
_SEPS = [b" ", b"\t", b"  ", b" \t", b"\x0b", b"\x0c", b"\r", b"\t\t"]
_ENDS = [b"\n", b"\r\n", b"\n\n", b"\r", b"\n \n"]


def _soup_token(pool: list[bytes]) -> st.SearchStrategy[bytes]:
    return st.one_of(st.sampled_from(pool), st.sampled_from(pool), st.sampled_from(_ODD))


@st.composite
def soup_files(draw) -> bytes:
    """Trial-like lines of ids, values and odd tokens with assorted separators and ends."""
    third = draw(st.sampled_from([_VALUES, _LABEL_WORDS, None]))
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        tokens = [draw(_soup_token(_IDS)), draw(_soup_token(_IDS))]
        if third is not None or draw(st.booleans()):
            tokens.append(draw(_soup_token(third or _VALUES)))
        if draw(st.integers(0, 9)) == 0:
            tokens.append(draw(_soup_token(_IDS)))
        if draw(st.integers(0, 9)) == 0:
            tokens.pop()
        seps = [draw(st.sampled_from(_SEPS)) for _ in tokens]
        lead = draw(st.sampled_from([b"", b"", b"", b" ", b"\t"]))
        line = lead + b"".join(t + s for t, s in zip(tokens, seps, strict=True))[: -len(seps[-1])]
        lines.append(line + draw(st.sampled_from(_ENDS)))
    bom = draw(st.sampled_from([b"", b"", b"", _BOM]))
    return bom + b"".join(lines)


_KINDS = st.sampled_from([None, None, None, "scores", "key", "ndx"])
_BLOCKS = st.sampled_from([4, 17, 64, 2**16])


@pytest.mark.timeout(120)
@FUZZ
@given(data=st.binary(max_size=300), kind=_KINDS, block_bytes=_BLOCKS)
@example(data=b"\x01 .0", kind="ndx", block_bytes=4)  # an ndx given as such: any segment id
def test_random_bytes_as_text(scratch, data, kind, block_bytes):
    check_text("text: random bytes", data, kind, block_bytes, scratch)


@pytest.mark.timeout(120)
@FUZZ
@given(data=soup_files(), kind=_KINDS, block_bytes=_BLOCKS)
# found by this test: a lone "modelid" twice was taken for a bad header (it is an ndx trial)
@example(data=b"modelid modelid\n", kind=None, block_bytes=4)
# found by this test: the first bad score is on line 1 (not finite); line 2 was reported
@example(data=b"m1 m1 1e400\nm1 m1\nm1 m1 \xff\n", kind="scores", block_bytes=64)
# found by this test: a byte-order mark starting a block (not the file) was dropped by pandas,
# so the line read as 2 fields with small blocks and as 3 with large ones
@example(data=b"m1 m1\n\xef\xbb\xbf m1 1\n", kind=None, block_bytes=4)
# found by this test: a label of a second pair after a blank line was said to be on the line
# before (the block made canonical drops blank lines; the first use's line was counted in it)
@example(data=b"m1 m1 TRUE\n\nm1 m1 1\n", kind=None, block_bytes=64)
# found by this test: a bad field count on line 3 was reported before line 2's label of
# another pair, in the same block
@example(data=b"m1 m1 1\nm1 m1 TRUE\nm1 m1 1 m1\n", kind="key", block_bytes=17)
def test_trial_like_token_soup_as_text(scratch, data, kind, block_bytes):
    check_text("text: token soup", data, kind, block_bytes, scratch)


@st.composite
def valid_files(draw) -> tuple[bytes, str]:
    """A small valid headerless key, scores or ndx file."""
    kind = draw(st.sampled_from(["scores", "key", "ndx"]))
    models = draw(st.lists(st.sampled_from(_IDS[:6] + [b"m3", b"m10"]), min_size=1, unique=True))
    segments = draw(st.lists(st.sampled_from(_IDS[:6] + [b"t", b"s10"]), min_size=1, unique=True))
    cells = draw(
        st.lists(
            st.tuples(st.sampled_from(models), st.sampled_from(segments)),
            min_size=1,
            max_size=8,
            unique=True,
        )
    )
    lines = []
    for m, s in cells:
        if kind == "scores":
            x = draw(st.floats(allow_nan=False, allow_infinity=False))
            third = [repr(x).encode()]
        elif kind == "key":
            third = [draw(st.sampled_from(_LABEL_WORDS))]
        else:
            third = []
        lines.append(b" ".join([m, s, *third]) + b"\n")
    return b"".join(lines), kind


_FILLER = st.binary(min_size=1, max_size=4) | st.sampled_from(
    [b"\n", b" ", b"\t", b"\r\n", b"0", b"e", b"-", b"\x00", b"\xff", b"target", b"m1 s1 1\n"]
)


@st.composite
def mutations(draw, data: bytes) -> bytes:
    """``data`` after 1 to 4 byte flips, insertions, deletions, truncations or line copies."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "dup", "swap"]))
        at = draw(st.integers(0, max(0, len(buf) - 1)))
        if op == "flip" and buf:
            buf[at] ^= draw(st.integers(1, 255))
        elif op == "insert":
            buf[at:at] = draw(_FILLER)
        elif op == "delete":
            del buf[at : at + draw(st.integers(1, 8))]
        elif op == "truncate":
            del buf[at:]
        else:
            lines = bytes(buf).splitlines(keepends=True)
            if lines:
                i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
                if op == "dup":
                    lines.insert(j, lines[i])
                else:
                    lines[i], lines[j] = lines[j], lines[i]
                buf = bytearray(b"".join(lines))
    return bytes(buf)


@pytest.mark.timeout(120)
@FUZZ
@given(base=valid_files(), data=st.data(), pass_kind=st.booleans(), block_bytes=_BLOCKS)
def test_mutated_valid_text(scratch, base, data, pass_kind, block_bytes):
    text, kind = base
    check_text("text: valid file, unmutated", text, kind, block_bytes, scratch)
    mutated = data.draw(mutations(text))
    check_text("text: mutated valid file", mutated, kind if pass_kind else None, 64, scratch)


@pytest.mark.timeout(120)
@FUZZ
@st.composite
def quality_files(draw) -> bytes:
    """``2`` then lines ``id v1 v2`` of ids, values (NaN allowed) and odd tokens."""
    lines = [draw(st.sampled_from([b"2", b"2", b"0", b"x", b" 2 "]))]
    for _ in range(draw(st.integers(0, 5))):
        tokens = [draw(_soup_token(_IDS))]
        tokens += [draw(_soup_token([*_VALUES, b"nan", b"NaN"])) for _ in range(2)]
        lines.append(draw(st.sampled_from(_SEPS[:3])).join(tokens[: draw(st.integers(1, 3))]))
    return b"\n".join(lines) + draw(st.sampled_from([b"", b"\n"]))


@pytest.mark.timeout(120)
@FUZZ
@given(data=st.binary(max_size=200) | quality_files())
@example(data=b"2\nm1 1 2\ns1 -0.5 3\n")  # (the soup above rarely draws a whole valid file)
def test_random_bytes_as_quality_text(scratch, data):
    path = _fresh(scratch, ".qual")
    path.write_bytes(data)
    try:
        table = read_quality_text(path, block_bytes=32)
        assert table.dims == ("id", "measure") and table.shape[1] == 2
        assert table.indexes["id"].is_unique and not np.isinf(table.values).any()
        OUTCOMES["text: quality file", "parsed"] += 1
    except BosarisError:
        OUTCOMES["text: quality file", "clean error"] += 1
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"read_quality_text leaked {exc!r} for {data!r}")
    finally:
        path.unlink()


_PLAIN_IDS = [b"m1", b"m2", b"s1", b"s2", b"\xc3\xa9", b"\xe6\x97\xa5"]


@st.composite
def well_formed_quality_files(draw) -> tuple[bytes, list[str], np.ndarray]:
    """A valid quality file (``2``, then ``id v1 v2`` lines of distinct ids, values or NaN,
    one of three separators) and the ids and values it holds, decoded by hand."""
    ids = draw(st.lists(st.sampled_from(_PLAIN_IDS), min_size=1, max_size=6, unique=True))
    rows = [[draw(st.sampled_from([*_VALUES, b"nan", b"NaN"])) for _ in range(2)] for _ in ids]
    sep = draw(st.sampled_from(_SEPS[:3]))
    lines = [b"2", *(sep.join([i, *row]) for i, row in zip(ids, rows, strict=True))]
    data = b"\n".join(lines) + draw(st.sampled_from([b"", b"\n"]))
    values = np.array([[float(v) for v in row] for row in rows])
    return data, [i.decode() for i in ids], values


@pytest.mark.timeout(120)
@FUZZ
@given(case=well_formed_quality_files())
def test_well_formed_quality_text_reads_as_written(scratch, case):
    # the soup of test_random_bytes_as_quality_text parses a file in few examples (none in
    # some runs), so what a parsed file holds is checked here, value for value
    data, ids, values = case
    path = _fresh(scratch, ".qual")
    path.write_bytes(data)
    try:
        table = read_quality_text(path, block_bytes=32)
    finally:
        path.unlink()
    assert table.dims == ("id", "measure") and table["id"].values.tolist() == ids
    np.testing.assert_array_equal(table.values, values)  # NaN where NaN


# --------------------------------------------------------------------------------------------
# HDF5
# --------------------------------------------------------------------------------------------

_MODELS, _SEGMENTS = ["m1", "m2", "mé"], ["s1", "s2", "s3", "s4"]


class Original:
    """A valid BOSARIS HDF5 file: its bytes, trials, and the raw data regions of its datasets.

    ``legacy``: in the HDF5 1.6 format (MATLAB's and h5py's default), whose metadata have no
    checksums, so that a mutation there can change what is read without any error.
    """

    def __init__(self, path: Path, legacy: bool = False):
        self.path, self.data, self.legacy = path, path.read_bytes(), legacy
        self.trials = _trials_of(io.read(path))
        with h5py.File(path, "r") as f:
            self.regions = [_region(d) for d in _datasets(f)]  # [start, end) byte ranges

    def __repr__(self) -> str:  # keeps hypothesis' failure reports short
        return f"Original({self.path.name}, {len(self.data)} bytes)"


def hdf5_originals(directory: Path, legacy: bool = False) -> dict[str, Original]:
    """A scores file and a key file of the same trials (every trial scored), and an ndx, as
    written by bosaris-dask, or (``legacy``) copied into the HDF5 1.6 format."""
    rng = np.random.default_rng(7)
    shape = (len(_MODELS), len(_SEGMENTS))
    objects = {
        "scores": make_scores(_MODELS, _SEGMENTS, rng.normal(size=shape)),
        "key": make_key(_MODELS, _SEGMENTS, rng.integers(-1, 2, size=shape).astype(np.int8)),
        "ndx": make_ndx(_MODELS, _SEGMENTS, rng.random(shape) < 0.5),
    }
    out = {}
    for kind, obj in objects.items():
        path = io.write(obj, directory / f"original-{kind}.h5")
        if legacy:
            path = _legacy_copy(path, directory / f"original-{kind}-1.6.h5")
        out[kind] = Original(path, legacy)
    return out


def _legacy_copy(source: Path, target: Path) -> Path:
    """``source``'s datasets written anew in the 1.6 format (a copy would keep their headers)."""
    with h5py.File(source) as a, h5py.File(target, "w", libver="earliest") as b:
        for dset in _datasets(a):
            b.create_dataset(dset.name, data=dset[()], dtype=dset.dtype)
    return target


def _datasets(f: h5py.File) -> list[h5py.Dataset]:
    found: list[h5py.Dataset] = []
    f.visititems(lambda _, obj: found.append(obj) if isinstance(obj, h5py.Dataset) else None)
    return found


@pytest.fixture(scope="module")
def h5_originals(scratch) -> dict[str, Original]:
    return hdf5_originals(scratch)


@pytest.fixture(scope="module")
def h5_legacy(scratch) -> dict[str, Original]:
    return hdf5_originals(scratch, legacy=True)


def _region(dset: h5py.Dataset) -> tuple[int, int]:
    start = dset.id.get_offset()
    return start, start + dset.id.get_storage_size()


@st.composite
def h5_mutations(draw, size: int) -> tuple[list[tuple[str, int, int]], int | None]:
    """``([(op, position, argument)], truncate_at)``: flips (xor) and zeroed runs, maybe a cut."""
    ops = []
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["flip", "flip", "zero"]))
        at = draw(st.integers(0, size - 1))
        ops.append((op, at, draw(st.integers(1, 255) if op == "flip" else st.integers(1, 64))))
    cut = draw(st.sampled_from([None, None, None, "cut"]))
    cut = draw(st.integers(0, size - 1)) if cut else None
    return ops, cut


def _apply(data: bytes, ops: list, cut: int | None) -> tuple[bytes, set[int]]:
    buf, touched = bytearray(data), set()
    for op, at, arg in ops:
        if op == "flip":
            buf[at] ^= arg
            touched.add(at)
        else:
            end = min(len(buf), at + arg)
            touched.update(i for i in range(at, end) if buf[i])
            buf[at:end] = bytes(end - at)
    return bytes(buf if cut is None else buf[:cut]), touched


def _read_trials(path: Path) -> tuple | BosarisError:
    """The trials of a trial file (read and computed), or the BosarisError raised doing so."""
    try:
        with dask.config.set(scheduler="sync"):
            return _trials_of(io.read(path))
    except BosarisError as exc:
        return exc
    except Exception as exc:  # noqa: BLE001 (the property: nothing else may escape)
        pytest.fail(f"reading {path} leaked {exc!r}")


def _evaluation(scores: Path, key: Path) -> str:
    """How evaluating ``scores`` against ``key`` ends: "ok" or the BosarisError's name."""
    try:
        with dask.config.set(scheduler="sync"):
            evaluate(io.read(scores), io.read(key))
        return "ok"
    except BosarisError as exc:
        return type(exc).__name__
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"evaluating {scores} against {key} leaked {exc!r}")


def check_hdf5(kind: str, originals: dict[str, Original], ops: list, cut, directory: Path) -> str:
    """Read (and evaluate) the original ``kind`` file mutated by ``ops`` and ``cut``; check it.

    Returns the outcome; fails the test for a leaked exception, a truncated file that reads, or
    (unless the file is in the legacy format) trials changed by mutations that all lie outside
    the raw data of the datasets.
    """
    original = originals[kind]
    mutated, touched = _apply(original.data, ops, cut)
    # a new name per input: HDF5 shares one open file per inode in a process (an unlinked file
    # keeps its inode while open, so no later input can be taken for it)
    path = _fresh(directory, ".h5")
    path.write_bytes(mutated)
    got = _read_trials(path)
    if isinstance(got, BosarisError):
        assert str(path) in str(got), f"the error does not name the file: {got}"
        path.unlink()
        return "clean error (StoreError)" if cut is None else "truncated: clean error"
    if cut is not None:
        pytest.fail(f"a file cut at byte {cut} of {len(original.data)} was read: {got}")
    if _same_trials(got, original.trials):
        path.unlink()
        return "read as the original (mutated bytes unused)"
    in_data = [i for i in touched if any(a <= i < b for a, b in original.regions)]
    if in_data:
        outcome = "different values: mutated bytes in raw data (no checksums in the format)"
    else:
        assert original.legacy, f"metadata mutations {ops} silently changed the trials: {got}"
        outcome = "different values: mutated metadata (no checksums in the 1.6 format)"
    if kind != "ndx":
        pair = {"scores": originals["scores"].path, "key": originals["key"].path}
        evaluated = _evaluation(**{**pair, kind: path})
        if evaluated != "ok":
            outcome += f"; evaluation: clean {evaluated}"
    path.unlink()
    return outcome


@pytest.mark.timeout(300)
@FUZZ
@given(kind=st.sampled_from(["scores", "key", "ndx"]), data=st.data())
def test_mutated_hdf5(scratch, h5_originals, kind, data):
    ops, cut = data.draw(h5_mutations(len(h5_originals[kind].data)))
    outcome = check_hdf5(kind, h5_originals, ops, cut, scratch)
    OUTCOMES[f"hdf5 {kind}: byte flips, zeroed runs, truncation", outcome] += 1


@pytest.mark.timeout(300)
@FUZZ
@given(kind=st.sampled_from(["scores", "key", "ndx"]), data=st.data())
def test_mutated_legacy_hdf5(scratch, h5_legacy, kind, data):
    """Files in the HDF5 1.6 format (as MATLAB writes them): no leak, no hang, and truncation
    is an error; changed values cannot always be told from valid ones."""
    ops, cut = data.draw(h5_mutations(len(h5_legacy[kind].data)))
    outcome = check_hdf5(kind, h5_legacy, ops, cut, scratch)
    OUTCOMES[f"hdf5 {kind}, 1.6 format: byte flips, zeroed runs, truncation", outcome] += 1


def test_hdf5_originals_evaluate(h5_originals):
    assert _evaluation(h5_originals["scores"].path, h5_originals["key"].path) == "ok"
