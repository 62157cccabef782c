"""The text reader against its oracle (``tests/text_oracle.py``), block by block.

Random blocks of lines (canonical or not: runs of spaces and tabs, leading and trailing
whitespace, blank lines, lone CRs, vertical tabs; valid fields and bad ones) are parsed by the
reader's :func:`~bosaris_dask.io.text.parse._parse_block` and by the oracle, under every layout
the detection can produce. Either both give exactly the same records (ids, values bit for bit,
the line of each record), or both raise a ParseError on the same line with the same message.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from bosaris_dask.errors import ParseError
from bosaris_dask.io.text.layout import _Layout
from bosaris_dask.io.text.parse import _parse_block
from tests.text_oracle import parse_reference

_M, _S = ("model", 0), ("segment", 1)
LAYOUTS = {
    "scores": _Layout("scores", None, 3, (_M, _S, ("score", 2)), 0, 1),
    "key": _Layout("key", None, 3, (_M, _S, ("label", 2)), 0, 1),
    "ndx": _Layout("ndx", None, 2, (_M, _S), 0, 1),
    "ndx3": _Layout("ndx", None, 3, (_M, _S), 0, 1),
    "voxceleb": _Layout(
        "key", None, 3, (("model", 1), ("segment", 2), ("label", 0)), 0, 1, form="label enrol test"
    ),
    "wespeaker": _Layout(
        "scores", None, 4, (_M, _S, ("score", 2)), 0, 1, form="enrol test score label"
    ),
    "3dspeaker-key": _Layout(
        "key", None, 4, (_M, _S, ("label", 2)), 0, 1, form="enrol test label score"
    ),
    "nist-scores": _Layout("scores", b"\t", 4, (_M, _S, ("score", 3)), 0, 2, header=True),
    "nist-key": _Layout(
        "key", b"\t", 4, (("model", 2), ("segment", 0), ("label", 3)), 0, 2, header=True
    ),
    "nist-ndx": _Layout("ndx", b"\t", 3, (_M, _S), 0, 2, header=True),
    "nist-spaces": _Layout("scores", None, 3, (_M, _S, ("score", 2)), 0, 2, header=True),
    "quality": _Layout("quality", None, 3, (("id", 0), ("value", 1), ("value", 2)), 0, 2),
}

IDS = ["m1", "s1", "a", "é", "話者", "a b", "true", "False", "nan", "NA", "1", "0", "#", '"q"']
NUMBERS = [
    "1.5", "-2", "0", "1", "1e5", "+.5e-3", ".5", "5.", "-0", "1.7976931348623159e308",
    "9007199254740993", "0." + "0" * 300 + "1", "2.4703282292062328e-324",
]  # fmt: skip
LABELS = ["target", "NonTarget", "1", "0", "tgt", "imp", "Genuine", "spoof", "true", "FALSE"]
BAD = [
    "x1", "1_0", "0x10", "nan", "NaN", "inf", "-inf", "1e999", "TRUE", "1,5", "1d3", "nontgt",
    "", " ", "\xa0", "\x1c", "\\", "1 .5", " 1.5", "2 ", " target", "s ", "\r", "\x0b",
]  # fmt: skip
TOKENS = IDS + NUMBERS + LABELS + BAD
RAW = [b"\xff", b"c\xff", b"\xe9t"]  # not UTF-8
SEPARATORS = [" ", " ", " ", "\t", "  ", " \t", "\t\t", "\x0b", "\r", "\x0c"]
EDGES = ["", "", "", " ", "\t", "  ", "\r", " \x0c"]


@st.composite
def lines(draw, layout: _Layout) -> bytes:
    """One line: mostly the layout's fields with good tokens, sometimes anything."""
    if draw(st.integers(0, 9)) == 0:  # a blank line
        return draw(st.sampled_from(EDGES)).encode() + b"\n"
    n = layout.nfields if draw(st.integers(0, 29)) else draw(st.integers(0, layout.nfields + 2))
    roles = dict((j, r) for r, j in layout.roles)
    fields: list[bytes] = []
    for j in range(n):
        role = roles.get(j, "model")
        good = {"score": NUMBERS, "value": NUMBERS + ["nan"], "label": LABELS}.get(role, IDS)
        k = draw(st.integers(0, 79))
        if k == 0:
            fields.append(draw(st.sampled_from(RAW)))
        elif k <= 4:
            fields.append(draw(st.sampled_from(TOKENS)).encode())
        else:
            fields.append(draw(st.sampled_from(good)).encode())
    if layout.sep is not None and draw(st.booleans()):
        seps = [layout.sep] * max(0, n - 1)
    else:
        seps = [draw(st.sampled_from(SEPARATORS)).encode() for _ in range(max(0, n - 1))]
    line = b"".join(f + s for f, s in zip(fields, seps + [b""], strict=False))
    edges = EDGES if draw(st.integers(0, 3)) == 0 else [""]
    left, right = (draw(st.sampled_from(edges)).encode() for _ in range(2))
    return left + line + right + b"\n"


@st.composite
def blocks(draw) -> tuple[str, bytes]:
    name = draw(st.sampled_from(sorted(LAYOUTS)))
    body = b"".join(draw(st.lists(lines(LAYOUTS[name]), min_size=1, max_size=8)))
    return name, body.replace(b"\r\n", b"\n")  # as the block cutter gives it


def _records(chunk, first_line: int) -> tuple:
    ids = {role: u[c].tolist() for role, (c, u) in chunk.ids.items()}
    lines = chunk.first_line + np.arange(chunk.n) if chunk.lines is None else chunk.lines
    values = None if chunk.values is None else (chunk.values.dtype.str, chunk.values.tobytes())
    return chunk.n, ids, values, np.asarray(lines).tolist()


def _compare(name: str, block: bytes, first_line: int = 7) -> str:
    layout = LAYOUTS[name]
    try:
        expected = _records(parse_reference(block, first_line, layout, "f.txt"), first_line)
    except ParseError as error:
        with pytest.raises(ParseError) as info:
            _parse_block(block, first_line, block.count(b"\n"), layout, "f.txt")
        assert (info.value.line, info.value.message) == (error.line, error.message)
        return "error"
    got = _parse_block(block, first_line, block.count(b"\n"), layout, "f.txt")
    assert _records(got, first_line) == expected
    return "records"


@settings(
    max_examples=int(os.environ.get("ORACLE_EXAMPLES", "400")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(blocks())
@example(("scores", b"m1  s1 1.5\n\n m2\ts1 -2 \r\n"))
@example(("scores", b"true s1 1\nm2 s1 0\n"))  # pandas reads true/false as 1/0
@example(("scores", b"m1 s1 1.5\nm2 s1 x\nm3 s1\n"))
@example(("nist-key", b"s1\t\tm1\t target\n  \t\n\ts2\tm2\tnontarget\r\n"))
@example(("nist-scores", b"m\x0dx\ts1\tq\t1.5\n"))
@example(("quality", b"a 1 nan\n\nb inf 2\n"))
@example(("key", b"m1 s  NonTarget\n\xe9 s target\n"))
def test_reader_agrees_with_oracle(case):
    event(_compare(*case))


def test_first_error_of_a_line_is_the_oracles():
    """Two problems on the first bad line: the message the oracle sorts first."""
    _compare("scores", b"a b 1\n c\xff  d x \n")
    _compare("nist-scores", b"m\t\ts1\tx\n")


def test_non_canonical_blocks_take_the_fast_path(monkeypatch):
    """Odd whitespace and blank lines are made canonical, then parsed by pandas' typed parse."""
    from bosaris_dask.io.text import parse

    def refuse(*args):
        raise AssertionError("the checked path was used")

    monkeypatch.setattr(parse, "_parse_checked", refuse)
    block = b"\n m1  s1\t1.5 \r\n\n\x0bm2 \t s1  -2\n  \n"
    chunk = _parse_block(block, 10, block.count(b"\n"), LAYOUTS["scores"], "f.txt")
    assert chunk.values.tolist() == [1.5, -2.0] and chunk.lines.tolist() == [11, 13]
    block = b"s1\t\tm1\ttarget\n \t \ns2\t\tm2\tnontarget\n"
    chunk = _parse_block(block, 2, 3, LAYOUTS["nist-key"], "f.txt")
    assert chunk.values.tolist() == [1, -1] and chunk.lines.tolist() == [2, 4]


@pytest.mark.parametrize("block_bytes", [5, 23, 2**20])
def test_lines_of_a_non_canonical_file(tmp_path, block_bytes):
    """Duplicates and bad lines are named by their line in the file, whatever the blocks."""
    from bosaris_dask.io.text import read_text

    path = tmp_path / "s.txt"
    path.write_bytes(b"a b 1\n\n\n  c  d\t2 \r\n\n e\tf 3\na  b 4\n")
    with pytest.raises(ParseError, match=r"\('a', 'b'\) is given twice, first on line 1") as info:
        read_text(path, block_bytes=block_bytes)
    assert info.value.line == 7
    path.write_bytes(b"a b 1\n\n\n  c  d\t2 \r\n\n e\tf x\na  b\n")
    with pytest.raises(ParseError, match="cannot parse score 'x'") as info:
        read_text(path, block_bytes=block_bytes)
    assert info.value.line == 6
