"""Numbering a file's ids across blocks (:mod:`bosaris_dask.io.text.id_codes`): the compiled
byte coder and the dict give the numbers of a first-appearance dictionary written here, for
blocks handed over as bytes or as strings; the bytes' well-formedness check agrees with the
check of each id as text."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bosaris_dask.io.text import id_codes, parse
from bosaris_dask.io.text.id_codes import IdCodes, Utf8Ids, bytes_coder
from bosaris_dask.passes.jit import DISABLE_ENV

# a small alphabet (ids repeat within and across blocks), multi-byte characters included; and
# ids about as long as a row's inline bytes, whose differences may lie past them
SHORT = st.text(alphabet="ab\u00e9\u4e2d\U0001f600/.", min_size=0, max_size=4)
IDS = st.one_of(SHORT, st.tuples(st.integers(36, 46), SHORT).map(lambda t: "p" * t[0] + t[1]))
BLOCKS = st.lists(st.lists(IDS, min_size=0, max_size=30), min_size=1, max_size=6)


def _first_appearance(blocks: list[list[str]]) -> tuple[list[list[int]], list[str]]:
    """Each record's number and the ids, by a plain dict: the reference."""
    numbers: dict[str, int] = {}
    out = [[numbers.setdefault(t, len(numbers)) for t in block] for block in blocks]
    return out, list(numbers)


def _coded(blocks: list[list[str]], as_bytes: list[bool]) -> tuple[list[list[int]], list[str]]:
    codes = IdCodes()
    out = []
    for block, utf8 in zip(blocks, as_bytes, strict=True):
        local, uniques = {}, []
        for t in block:
            if t not in local:
                local[t] = len(uniques)
                uniques.append(t)
        c = np.array([local[t] for t in block], dtype=np.intp)
        u = Utf8Ids.of(uniques) if utf8 else np.array(uniques, dtype=object)
        out.append(codes.add(c, u).tolist())
    assert len(codes) == len(codes.ids())
    return out, codes.ids()


@pytest.fixture(params=["compiled", "dict"])
def coder(request, monkeypatch):
    if request.param == "compiled":
        pytest.importorskip("numba")
        if bytes_coder() is None:
            pytest.skip(f"{DISABLE_ENV} is set")
    else:
        monkeypatch.setenv(DISABLE_ENV, "1")
        assert bytes_coder() is None
    return request.param


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(blocks=BLOCKS, data=st.data())
def test_numbers_are_first_appearance(coder, blocks, data):
    as_bytes = data.draw(st.lists(st.booleans(), min_size=len(blocks), max_size=len(blocks)))
    assert _coded(blocks, as_bytes) == _first_appearance(blocks)


def test_the_table_grows_past_its_first_size(coder):
    # 2,048 rows at first: 5,000 distinct ids over blocks that repeat half of the ids before
    rng = np.random.default_rng(0)
    pool = [f"id{k:05d}/\u00e9{k % 7}" for k in range(5000)]
    blocks = [[pool[k] for k in rng.integers(0, 1000 * (b + 1), 700)] for b in range(5)]
    got = _coded(blocks, [True, False, True, True, False])
    assert got == _first_appearance(blocks)
    assert len(got[1]) > 2048


def test_the_table_stays_at_most_three_quarters_full(coder):
    # blocks with more new ids than the table has room for are numbered in pieces
    pool = [f"speaker{k:06d}" for k in range(30000)]
    blocks = [pool[:3000], pool[1000:24000], pool[20000:] + pool[:10]]
    codes = IdCodes()
    for block in blocks:
        uniques = Utf8Ids.of(block) if coder == "compiled" else np.array(block, dtype=object)
        got = codes.add(np.arange(len(block)), uniques)
        assert [pool[k] for k in got] == block
    assert codes.ids() == pool
    if coder == "compiled":
        assert 3 * len(codes._table) / 8 < len(pool) <= 3 * len(codes._table) / 4


def test_a_row_matches_only_the_same_bytes():
    # an id whose hash and length match a row but whose bytes differ (a hash collision, made
    # here by changing the stored id's bytes, in its row or past them) is a new id
    if bytes_coder() is None:
        pytest.skip("numba is not installed or is disabled")
    for text, where in (("a" * 30, "row"), ("b" * 45 + "x", "tail")):
        codes = IdCodes()
        (first,) = codes.add(np.array([0]), Utf8Ids.of([text] + [f"{k}" for k in range(2)]))[:1]
        row = codes._table[codes._table[:, 1] == first][0]
        if where == "row":  # its first bytes, kept in the row
            codes._table[codes._table[:, 1] == first, 3] = row[3] ^ 1
        else:  # a byte past the row's, kept with the stored ids
            codes._data[codes._offsets[first] + 44] ^= 1
        assert codes.add(np.array([0]), Utf8Ids.of([text])).tolist() == [3]
        assert codes.add(np.array([0]), Utf8Ids.of([text])).tolist() == [3]  # now stored twice


def test_ids_of_any_byte_offsets():
    # pyarrow's dictionaries may start at any offset into their data
    u = Utf8Ids.of(["x", "\u00e9t\u00e9", "", "y"])
    assert Utf8Ids(u.offsets[1:], u.data).texts() == ["\u00e9t\u00e9", "", "y"]
    assert Utf8Ids(u.offsets[:1], u.data).texts() == []


WELL = st.text(alphabet=" \t\r\x0b\x0c#a\u00e9\ufeff\x1c\u00a0", min_size=0, max_size=4)


@given(ids=st.lists(WELL, min_size=0, max_size=5))
def test_well_formed_bytes_are_good_ids(ids):
    assert Utf8Ids.of(ids).well_formed() == all(map(parse._good_id, ids))


def _parsed_segments(block: bytes):
    from bosaris_dask.io.text.layout import _Layout

    layout = _Layout("scores", None, 3, (("model", 0), ("segment", 1), ("score", 2)), 0, 1)
    return parse._parse_fast(block, 1, block.count(b"\n"), layout).ids["segment"]


def test_a_block_of_many_ids_hands_them_over_as_bytes(monkeypatch):
    # the path this module speeds up: check that it is taken
    pytest.importorskip("numba")
    pytest.importorskip("pyarrow")
    if bytes_coder() is None:
        pytest.skip(f"{DISABLE_ENV} is set")
    block = "m1 s\u00e9 1.5\nm2 s\u00e9 -2\nm2 t 0\n".encode()
    codes, uniques = _parsed_segments(block)
    assert isinstance(uniques, np.ndarray) and uniques.tolist() == ["s\u00e9", "t"]  # few
    monkeypatch.setattr(id_codes, "BYTES_MIN_IDS", 2)
    codes, uniques = _parsed_segments(block)
    assert isinstance(uniques, Utf8Ids)
    assert codes.tolist() == [0, 0, 1] and uniques.texts() == ["s\u00e9", "t"]
