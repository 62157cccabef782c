"""Text trial, score and quality files: exact round trips, line-numbered errors, NIST headers,
streaming (blocks, spill, memmap) and the fast parser agreeing with the oracle parser
(``tests/text_oracle.py``, once the reader's reference parser)."""

from __future__ import annotations

import gc
import os
import pickle
import threading
import warnings

import dask
import dask.array as da
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bosaris_dask.errors import ParseError, ScoreError, StoreError, TrialError
from bosaris_dask.io import text
from bosaris_dask.io.text import (
    id_codes,
    read_quality_text,
    read_text,
    sniff_text_kind,
    write_quality_text,
    write_text,
)
from bosaris_dask.io.text.id_codes import Utf8Ids
from bosaris_dask.trials import (
    key_from_labels,
    make_key,
    make_ndx,
    make_scores,
    quality_table,
    reindex_ids,
    trial_classes,
)
from tests.text_oracle import parse_reference


def _use_engine(engine: str, monkeypatch) -> None:
    """Parse canonical blocks with pyarrow (a test dependency) or with pandas' C parser."""
    if engine == "arrow":
        assert text.typed._ARROW is not None, "pyarrow is a test dependency"
    else:
        monkeypatch.setattr(text.typed, "_ARROW", None)


@pytest.fixture(params=["arrow", "pandas", "reference"])
def parser(request, monkeypatch):
    """Run a test with pyarrow's, then pandas' typed parser where it applies, then with the
    checked path only."""
    if request.param == "reference":
        monkeypatch.setattr(text.parse, "_parse_fast", lambda *args: None)
    else:
        _use_engine(request.param, monkeypatch)
    return request.param


def _write(tmp_path, content, name="f.txt"):
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def _rewrite(tmp_path, ds, **kw):
    out = tmp_path / "out.txt"
    write_text(ds, out, **kw)
    return out.read_bytes()


# --------------------------------------------------------------------------------------------
# exact round trips: text -> Dataset -> text
# --------------------------------------------------------------------------------------------

EXTREMES = [
    0.1,
    -2.5,
    5e-324,  # smallest subnormal
    2.2250738585072014e-308,  # smallest normal
    1.7976931348623157e308,  # largest finite
    -0.0,
    1e16,
    123456789.12345679,
    -1.0000000000000002,
    0.30000000000000004,
    3.0,
]


def test_scores_round_trip_exact_bytes(tmp_path, parser):
    models = ["m", "m1", "m10", "mödel", "話者"]  # prefixes of each other, unicode
    segments = ["s", "s1", "seg\u00a0nbsp", "🎤"]
    lines = []
    k = 0
    for m in models:
        for s in segments:
            lines.append(f"{m} {s} {EXTREMES[k % len(EXTREMES)]!r}\n")
            k += 1
    content = "".join(lines)
    ds = read_text(_write(tmp_path, content))
    assert ds.attrs["bosaris_kind"] == "scores"
    assert ds.model.values.tolist() == models
    assert ds.segment.values.tolist() == segments
    assert ds.score.dtype == np.float64
    expected = np.array([EXTREMES[k % len(EXTREMES)] for k in range(20)]).reshape(5, 4)
    assert ds.score.values.view(np.uint64).tolist() == expected.view(np.uint64).tolist()
    assert _rewrite(tmp_path, ds) == content.encode()


def test_sparse_key_and_ndx_round_trip(tmp_path, parser):
    content = "m2 s3 target\nm2 s1 nontarget\nm1 s3 nontarget\nm1 s2 target\n"
    # segments in order of first appearance; written back row-major in that order
    key = read_text(_write(tmp_path, content))
    assert key.model.values.tolist() == ["m2", "m1"]
    assert key.segment.values.tolist() == ["s3", "s1", "s2"]
    assert key.trial_mask.values.tolist() == [[1, -1, 0], [-1, 0, 1]]
    assert key.trial_mask.dtype == np.int8
    assert _rewrite(tmp_path, key) == content.encode()
    ndx = read_text(_write(tmp_path, "a x\nb y\nb x\n"))
    assert ndx.attrs["bosaris_kind"] == "ndx" and ndx.trial_mask.dtype == bool
    assert ndx.trial_mask.values.tolist() == [[True, False], [True, True]]
    assert _rewrite(tmp_path, ndx) == b"a x\nb x\nb y\n"


HARD_DECIMALS = [
    "9007199254740993",  # 2**53 + 1: a tie, rounds to even
    "1.00000000000000011102230246251565404236316680908203125",  # exactly halfway above 1
    "1.00000000000000011102230246251565404236316680908203126",
    "2.2250738585072011e-308",
    "2.4703282292062328e-324",
    "1.7976931348623158e308",
    "18446744073709551617",
    "-9223372036854775809",
    "123456789012345678901234567890e-30",
    "0.1000000000000000055511151231257827021181583404541015625",
    "0." + "0" * 300 + "1",
]


def test_hard_decimals_are_correctly_rounded(tmp_path, monkeypatch):
    path = _write(tmp_path, "".join(f"m s{i} {d}\n" for i, d in enumerate(HARD_DECIMALS)))
    expected = [float(d) for d in HARD_DECIMALS]
    assert read_text(path).score.values[0].tolist() == expected  # pandas' parser
    monkeypatch.setattr(text.parse, "_parse_fast", lambda *args: None)
    assert read_text(path).score.values[0].tolist() == expected  # the checked path (float())


def test_labels_any_case_written_lowercase(tmp_path, parser):
    key = read_text(_write(tmp_path, "m s TARGET\nm t NonTarget\n"))
    assert key.trial_mask.values.tolist() == [[1, -1]]
    assert _rewrite(tmp_path, key) == b"m s target\nm t nontarget\n"


def test_float32_scores_read_back_as_their_exact_float64_values(tmp_path, parser):
    # text reads into float64: float32 written with 9 digits (its own round trip) read back
    # 1e-9 off the stored value (0.100000001 for 0.10000000149011612)
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 2**32, size=(40, 50), dtype=np.uint64).astype(np.uint32)
    values = bits.view(np.float32)
    values[~np.isfinite(values)] = 1.5
    values[0, :4] = [np.float32(1e-45), np.float32(3.4028235e38), np.float32(0.1), -0.0]
    scores = make_scores([f"m{i}" for i in range(40)], [f"s{j}" for j in range(50)], values)
    path = tmp_path / "f32.txt"
    write_text(scores, path)
    third = [line.split()[2] for line in path.read_text().splitlines()]
    assert third[2] == "0.10000000149011612"
    back = read_text(path)
    assert back.score.dtype == np.float64
    exact = values.astype(np.float64)
    assert back.score.values.view(np.uint64).tolist() == exact.view(np.uint64).tolist()


def test_header_round_trip_all_kinds(tmp_path, parser):
    mask = np.array([[1, 0, -1], [-1, 1, 0]])
    objs = {
        "key": make_key(["a b", "c"], ["x", "y", "z"], mask),  # a space inside a tab-separated id
        "ndx": make_ndx(["a b", "c"], ["x", "y", "z"], mask != 0),
        "scores": make_scores(["a b", "c"], ["x", "y", "z"], mask * 0.25, mask != 0),
    }
    for kind, obj in objs.items():
        path = tmp_path / f"{kind}.tsv"
        write_text(obj, path, header=True)
        head = path.read_text().splitlines()[0].split("\t")
        assert head[:2] == ["modelid", "segmentid"]
        assert sniff_text_kind(path) == kind
        back = read_text(path)
        assert back.attrs["bosaris_kind"] == kind
        same = reindex_ids(back, obj.model.values, obj.segment.values)
        for name in obj.data_vars:
            assert np.array_equal(same[name].values, obj[name].values)
        assert _rewrite(tmp_path, back, header=True) == path.read_bytes()


def test_label_key_writes_its_mask(tmp_path):
    key = key_from_labels(["m1", "m2", "m3"], ["a", "b", "a"], ["s1", "s2"], ["b", "a"], chunks=1)
    path = tmp_path / "key.txt"
    write_text(key, path)
    back = read_text(path)
    assert np.array_equal(back.trial_mask.values, trial_classes(key).compute())


def test_write_bands_and_batches(tmp_path, monkeypatch):
    """Tiny bands and line batches (and odd chunks) give the same bytes."""
    rng = np.random.default_rng(0)
    mask = rng.random((23, 17)) < 0.6
    scores = make_scores(
        [f"m{i}" for i in range(23)], [f"s{j}" for j in range(17)], rng.normal(size=(23, 17)), mask
    )
    reference = _rewrite(tmp_path, scores)
    monkeypatch.setattr(text.write, "_WRITE_BAND_BYTES", 5 * 17 * 9)
    monkeypatch.setattr(text.write, "_WRITE_LINES", 7)
    rechunked = scores.chunk({"model": 4, "segment": 5})
    assert _rewrite(tmp_path, rechunked) == reference
    assert _rewrite(tmp_path, scores.load()) == reference  # numpy-backed
    expected = "".join(
        f"m{i} s{j} {float(scores.score.values[i, j])!r}\n"
        for i in range(23)
        for j in range(17)
        if mask[i, j]
    )
    assert reference == expected.encode()


def test_row_bands_cover_rows_once():
    for chunks in [(5,), (3, 3, 3), (1, 7, 2), (10, 1)]:
        for max_rows in (1, 2, 4, 100):
            bands = list(text.write._row_bands(chunks, max_rows))
            rows = [r for a, b in bands for r in range(a, b)]
            assert rows == list(range(sum(chunks)))
            assert all(0 < b - a <= max_rows for a, b in bands)


# --------------------------------------------------------------------------------------------
# errors, with the right line number
# --------------------------------------------------------------------------------------------

BAD = [
    ("a b 1\nc d\n", 2, "expected 3 fields"),
    ("a b 1\nc d 2 3\n", 2, "expected 3 fields"),
    ("a b 1\nc  d 2 3\ne f 4\n", 2, "expected 3 fields"),  # runs of spaces: pandas' \s+ split
    ("a b 1\nc d x1\n", 2, "cannot parse score"),
    ("a b 1\nc d 1_0\n", 2, "cannot parse score"),
    ("a b 1\nc d 0x10\n", 2, "cannot parse score"),
    ("a b 1\nc d nan\n", 2, "not finite"),
    ("a b 1\nc d -inf\n", 2, "not finite"),
    ("a b 1\nc d 1e999\n", 2, "not finite"),
    ("a b 0\nc d TRUE\n", 2, "cannot parse score"),
    ("a b target\nc d nontgt\n", 2, "label 'nontgt' is not one of target/nontarget, 1/0,"),
    ("a b 1\nc d 2\na b 3\n", 3, "given twice, first on line 1"),
    ("a b target\nc d nontarget\nc d nontarget\n", 3, "given twice, first on line 2"),
    ("a b\nc d\na b\n", 3, "given twice, first on line 1"),
    ("a b 1\nc\x00 d 2\n", 2, "NUL byte"),
    ("", 1, "empty file"),
    ("\n  \n\t\n", 3, "no data"),
    ("\n\na b 1\n\n c  d \n", 5, "expected 3 fields"),
    ("a b 1\r\nc d 2\r\ne f\r\n", 3, "expected 3 fields"),
    ("a b 1\nc d 2\ne f 3 x\ng h y\n", 3, "expected 3 fields"),  # first of two errors
    ("a b 1\nc d 2\ne f zz\ng h\n", 3, "cannot parse score"),  # first of two errors
    ("a b 1\nc d 2\ne f 3\ng h 4", None, None),  # no final newline is fine
    ("modelid\tsegmentid\tLLR\n", 1, "no trials"),
    ("modelid\tsegmentid\tLLR\nm1\t\t1.5\n", 2, "empty segment id"),
    ("modelid\tsegmentid\tLLR\nm1\ts \t1.5\n", 2, "surrounding whitespace"),
    ("modelid\tsegmentid\tLLR\nm1\ts1\t1 .5\n", 2, "cannot parse score"),
    ("modelid\tsegmentid\tlabel\nm1\ts1\t target\nm1\ts2\tt arget\n", 3, "is not one of"),
    ("modelid\tsegmentid\tside\tLLR\nm1\ts1\ta\t1.5\nm1\ts2\t1.5\n", 3, "expected 4 tab"),
    ("x y z w\n", 1, "cannot tell the kind"),
    ("\nmodel\tsegment\tscore\tLLR\nm\ts\t1\t2\n", 2, "two score columns"),
    ("x y maybe\n", 1, "cannot tell the kind"),
]


@pytest.mark.parametrize("block_bytes", [text.BLOCK_BYTES, 4])
@pytest.mark.parametrize(("content", "line", "message"), BAD)
def test_bad_input_names_file_and_line(tmp_path, content, line, message, block_bytes, parser):
    path = _write(tmp_path, content)
    if line is None:
        assert read_text(path, block_bytes=block_bytes).score.shape == (4, 4)
        return
    with pytest.raises(ParseError) as info:
        read_text(path, block_bytes=block_bytes)
    assert info.value.line == line
    assert info.value.path == os.fspath(path)
    assert message in info.value.message
    assert str(info.value).startswith(f"{path}:{line}: ")


def test_bad_utf8_id(tmp_path):
    path = _write(tmp_path, b"a b 1\nc\xff d 2\n")
    with pytest.raises(ParseError, match="not valid UTF-8") as info:
        read_text(path)
    assert info.value.line == 2


def test_duplicate_across_blocks(tmp_path):
    content = "".join(f"m{i % 7} s{i // 7} {i}\n" for i in range(200)) + "m3 s5 0.5\n"
    path = _write(tmp_path, content)
    with pytest.raises(ParseError, match=r"\('m3', 's5'\) is given twice, first on line 39") as e:
        read_text(path, block_bytes=64)
    assert e.value.line == 201


def test_long_lines_are_errors_not_hangs(tmp_path):
    long = "x" * (text.MAX_LINE_BYTES + 10)
    with pytest.raises(ParseError, match="longer than") as info:
        read_text(_write(tmp_path, f"a b 1\nc d 2\n{long} d 3\ne f 4\n"), block_bytes=2**16)
    assert info.value.line == 3
    with pytest.raises(ParseError, match="longer than") as info:
        read_text(_write(tmp_path, f"a b 1\n{long} d 3\n"))  # inside one big block
    assert info.value.line == 2
    with pytest.raises(ParseError, match="longer than") as info:
        read_text(_write(tmp_path, "y" * (3 * text.MAX_LINE_BYTES)))  # no newline at all
    assert info.value.line == 1


def test_missing_file(tmp_path):
    with pytest.raises(StoreError, match="cannot read"):
        read_text(tmp_path / "nope.txt")


def test_kind_argument_checks(tmp_path):
    path = _write(tmp_path, "a b 1.5\n")
    with pytest.raises(ParseError, match="expected 3 fields") as info:
        read_text(_write(tmp_path, "a b\n", "ndx.txt"), kind="scores")
    assert info.value.line == 1
    with pytest.raises(ParseError, match="label '1.5' is not one of") as info:
        read_text(path, kind="key")
    with pytest.raises(TrialError, match="kind must be"):
        read_text(path, kind="quality")
    ndx = read_text(path, kind="ndx")  # the third field is ignored
    assert ndx.trial_mask.values.tolist() == [[True]]


# --------------------------------------------------------------------------------------------
# NIST tables and sniffing
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "rows", "kind"),
    [
        ("modelid\tsegmentid\tside", ["m1\ts1\ta", "m2\ts1\tb"], "ndx"),
        (
            "ModelID\tSegmentID\tSide\tTargetType",
            ["m1\ts1\ta\ttarget", "m2\ts1\tb\tnontarget"],
            "key",
        ),
        ("enrollment\ttest\tlabel", ["m1\ts1\ttarget", "m2\ts1\tnontarget"], "key"),
        ("side\ttest_id\tEnroll\ttarget_type", ["a\ts1\tm1\ttarget", "\ts1\tm2\tnontarget"], "key"),
        ("model_id\tsegment_id\tLLR", ["m1\ts1\t 1.5", "m2\ts1\t-2 "], "scores"),
        ("model segment score", ["m1 s1 1.5", "m2  s1\t-2"], "scores"),  # whitespace header
        (
            "modelid\tsegmentid\ttargettype\tllr",
            ["m1\ts1\ttarget\t1.5", "m2\ts1\tnontarget\t-2"],
            "scores",
        ),
    ],
)
def test_nist_headers(tmp_path, header, rows, kind, parser):
    path = _write(tmp_path, "\ufeff" + "\r\n".join([header, *rows]) + "\r\n")  # BOM and CRLF
    assert sniff_text_kind(path) == kind
    ds = read_text(path)
    assert ds.attrs["bosaris_kind"] == kind
    assert ds.model.values.tolist() == ["m1", "m2"]
    assert ds.segment.values.tolist() == ["s1"]
    if kind == "key":
        assert ds.trial_mask.values.tolist() == [[1], [-1]]
    elif kind == "scores":
        assert ds.score.values.tolist() == [[1.5], [-2.0]]
    else:
        assert ds.trial_mask.values.tolist() == [[True], [True]]


def test_nist_both_columns_reads_as_key_on_request(tmp_path):
    path = _write(tmp_path, "modelid\tsegmentid\ttargettype\tllr\nm1\ts1\ttarget\t1.5\n")
    assert read_text(path, kind="key").trial_mask.values.tolist() == [[1]]
    with pytest.raises(ParseError, match="needs a score column") as info:
        read_text(_write(tmp_path, "modelid\tsegmentid\nm\ts\n", "n.tsv"), kind="scores")
    assert info.value.line == 1


def test_header_flag(tmp_path):
    path = _write(tmp_path, "model segment\nm1 s1\n")  # a header, or two trials?
    assert read_text(path).model.values.tolist() == ["m1"]
    assert read_text(path, header=False).model.values.tolist() == ["model", "m1"]
    for data in ("model segment 1.5\n", "test enroll TARGET\n"):  # these look like trials
        ds = read_text(_write(tmp_path, data + "m1 s1 1.5\n".replace("1.5", data.split()[2])))
        assert ds.model.values.tolist() == [data.split()[0], "m1"]
    with pytest.raises(ParseError, match="header=True") as info:
        read_text(_write(tmp_path, "\nm1 s1\n", "h.txt"), header=True)
    assert info.value.line == 2


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        ("m s 1.5\n", "scores"),
        ("m s -1e-3\n", "scores"),
        ("m s Target\n", "key"),
        ("m s nontarget\n", "key"),
        ("\n\nm s\n", "ndx"),
        ("modelid\tsegmentid\tside\nm\ts\ta\n", "ndx"),
    ],
)
def test_sniff(tmp_path, content, kind):
    assert sniff_text_kind(_write(tmp_path, content)) == kind


def test_sniff_errors(tmp_path):
    for content, line in [("\n\nm s nan\n", 3), ("m\n", 1), ("", 1), ("2\n", 1)]:
        with pytest.raises(ParseError, match="cannot tell|empty") as info:
            sniff_text_kind(_write(tmp_path, content))
        assert info.value.line == line


# --------------------------------------------------------------------------------------------
# streaming: blocks, spill, memmap
# --------------------------------------------------------------------------------------------


def _dense_scores_text(nm, ns, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(nm, ns))
    lines = [f"m{i} s{j} {float(values[i, j])!r}\n" for i in range(nm) for j in range(ns)]
    return "".join(lines), values


def test_memmap_path_spill_and_cleanup(tmp_path, monkeypatch):
    content, values = _dense_scores_text(30, 40)
    path = _write(tmp_path, content)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(text.collect, "_SPILL_BYTES", 100)  # spill the parsed records to a file too
    ds = read_text(path, memmap_threshold=0, scratch_dir=scratch, chunks=(7, 9), block_bytes=500)
    assert isinstance(ds.score.data, da.Array)
    assert ds.score.data.chunks[0] == (7, 7, 7, 7, 2) and ds.score.data.chunks[1][0] == 9
    files = sorted(p.name for p in scratch.iterdir())
    assert len(files) == 2 and all(f.startswith("bosaris-text-") for f in files)  # spill is gone
    assert ds.score.values.tolist() == values.tolist()
    assert bool(ds.score_mask.all())
    # the lazily read chunks are pickled by path (a distributed worker reopens the file)
    source = next(
        v for v in ds.score.data.dask.values() if isinstance(v, text.scratch._ScratchArray)
    )
    clone = pickle.loads(pickle.dumps(source))
    assert clone[3:5, 2:4].tolist() == values[3:5, 2:4].tolist()
    del ds, source, clone
    gc.collect()
    assert list(scratch.iterdir()) == []


def test_memmap_key_and_ndx(tmp_path):
    content = "a x target\nb y nontarget\nb x target\n"
    key = read_text(_write(tmp_path, content), memmap_threshold=0, scratch_dir=tmp_path)
    assert key.trial_mask.dtype == np.int8
    assert key.trial_mask.values.tolist() == [[1, 0], [1, -1]]
    ndx = read_text(_write(tmp_path, content, "n.txt"), kind="ndx", memmap_threshold=0)
    assert ndx.trial_mask.values.tolist() == [[True, False], [True, True]]


def test_duplicate_found_in_memmap_mode(tmp_path):
    content, _ = _dense_scores_text(5, 6)
    path = _write(tmp_path, content + "m4 s0 1.0\n")
    with pytest.raises(ParseError, match="first on line 25") as info:
        read_text(path, memmap_threshold=0, scratch_dir=tmp_path, block_bytes=50)
    assert info.value.line == 31
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]  # no scratch file left behind


def test_block_size_does_not_matter(tmp_path):
    content, values = _dense_scores_text(9, 11)
    content = content.replace("m3 s4 ", "m3\ts4  ", 1) + "\n\n"  # a non-canonical line
    path = _write(tmp_path, content)
    reference = read_text(path)
    for block_bytes in (1, 7, 64, 1000):
        ds = read_text(path, block_bytes=block_bytes)
        assert ds.score.values.tolist() == values.tolist()
        assert ds.model.values.tolist() == reference.model.values.tolist()
        assert ds.segment.values.tolist() == reference.segment.values.tolist()


# --------------------------------------------------------------------------------------------
# the fast parser agrees with the oracle parser
# --------------------------------------------------------------------------------------------

TOKENS = [
    "a", "b", "ab", "001", "1.0", "True", "nan", "NA", "", "é", "target", "Target", "nontarget",
    "tgt", "1", "-0", "1e5", "1_0", ".5", "5.", "inf", "1e999", "TRUE", "false", "0x1", "+.5e-3",
    "1,5", "\"q\"", "#", "x\ty", " ", "  ", "\r", "\\", "1d3", "\u00a0", "0", "\x0c", "\x1c",
    "1.5 ", " -2", "3\x0b", " target", *HARD_DECIMALS, "1.7976931348623159e308",
    "null", "N/A", "Infinity", "-nan", "1e+", '"1.5"', "\ufeffm",  # nulls and quotes to pyarrow
]  # fmt: skip


def _compare_parsers(block: bytes, layout) -> None:
    n = block.count(b"\n")
    fast = text.parse._parse_fast(block, 1, n, layout)
    try:
        ref = parse_reference(block, 1, layout, "x")  # the oracle (the old reference parser)
    except ParseError:
        assert fast is None
        return
    if fast is None:
        return
    assert fast.n == ref.n
    for role in ref.ids:
        (fc, fu), (rc, ru) = fast.ids[role], ref.ids[role]
        if isinstance(fu, Utf8Ids):  # a model's or segment's ids as bytes (numba installed)
            fu = np.array(fu.texts(), dtype=object)
        assert fu[fc].tolist() == ru[rc].tolist()
    if ref.values is None:
        assert fast.values is None
    else:
        assert fast.values.dtype == ref.values.dtype
        assert fast.values.tobytes() == ref.values.tobytes()


@pytest.mark.parametrize("engine", ["arrow", "arrow-bytes", "pandas"])
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(
        st.lists(st.sampled_from(TOKENS), min_size=1, max_size=4), min_size=1, max_size=6
    ),
    kind=st.sampled_from(["scores", "key", "ndx"]),
    tabs=st.booleans(),
)
def test_fast_parser_agrees_with_reference(rows, kind, tabs, engine, monkeypatch):
    if engine == "arrow-bytes":  # every block's ids handed over as bytes (a sparse list's)
        monkeypatch.setattr(id_codes, "BYTES_MIN_IDS", 1)
        engine = "arrow"
    _use_engine(engine, monkeypatch)
    sep = "\t" if tabs else " "
    block = "".join(sep.join(r) + "\n" for r in rows).encode()
    roles = (("model", 0), ("segment", 1)) + {
        "scores": (("score", 2),),
        "key": (("label", 2),),
    }.get(kind, ())
    nfields = 3 if kind != "ndx" else 2
    layout = text.layout._Layout(kind, b"\t" if tabs else None, nfields, roles, 0, 1, header=tabs)
    _compare_parsers(block, layout)


@pytest.mark.parametrize("engine", ["arrow", "pandas"])
def test_fast_parser_is_used_for_canonical_blocks(engine, monkeypatch):
    _use_engine(engine, monkeypatch)
    layout = text.layout._Layout(
        "scores", None, 3, (("model", 0), ("segment", 1), ("score", 2)), 0, 1
    )
    block = b"m1 s1 1.5\nm1 s2 -2\n"
    assert text.parse._parse_fast(block, 1, 2, layout) is not None
    assert text.parse._parse_fast(b"m1\ts1\t1.5\nm1\ts2\t-2\n", 1, 2, layout) is not None
    for odd in (b"m1 s1 1.5\n\n", b"m1  s1 1.5\n", b" m1 s1 1.5\n", b"m1 s1 1.5 \n", b"m\ts 1\n"):
        assert text.parse._parse_fast(odd, 1, odd.count(b"\n"), layout) is None


# --------------------------------------------------------------------------------------------
# property: random trial objects written then read are the same objects
# --------------------------------------------------------------------------------------------

# every character but ASCII whitespace, NUL and a byte-order mark (an id starts with no '#'
# either: text has no comment lines, and the reader refuses such an id)
ID_CHARS = st.characters(
    blacklist_categories=("Cs",), blacklist_characters=" \t\n\r\x0b\x0c\x00\ufeff"
)
FLOATS = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(EXTREMES)


@st.composite
def trial_objects(draw):
    nm = draw(st.integers(1, 5))
    ns = draw(st.integers(1, 5))
    ids = draw(
        st.lists(
            st.text(ID_CHARS, min_size=1, max_size=4).filter(lambda u: not u.startswith("#")),
            min_size=nm + ns,
            max_size=nm + ns,
            unique=True,
        )
    )
    models, segments = ids[:nm], ids[nm:]
    mask = np.array(draw(st.lists(st.booleans(), min_size=nm * ns, max_size=nm * ns))).reshape(
        nm, ns
    )
    mask[draw(st.integers(0, nm - 1)), draw(st.integers(0, ns - 1))] = True
    kind = draw(st.sampled_from(["scores", "scores32", "key", "ndx"]))
    if kind.startswith("scores"):
        values = np.array(draw(st.lists(FLOATS, min_size=nm * ns, max_size=nm * ns))).reshape(
            nm, ns
        )
        if kind == "scores32":
            with np.errstate(over="ignore"):
                values = values.astype(np.float32)
            values[~np.isfinite(values)] = 0.5
        return make_scores(models, segments, values, mask)
    if kind == "key":
        signs = np.array(
            draw(st.lists(st.sampled_from([1, -1]), min_size=nm * ns, max_size=nm * ns))
        )
        return make_key(models, segments, signs.reshape(nm, ns) * mask)
    return make_ndx(models, segments, mask)


def _first_appearance(obj, mask):
    models = obj.model.values[mask.any(axis=1)]
    rows, cols = np.nonzero(mask)
    _, first = np.unique(cols, return_index=True)
    segments = obj.segment.values[cols[np.sort(first)]]
    return models.tolist(), segments.tolist()


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(obj=trial_objects(), header=st.booleans(), block_bytes=st.sampled_from([3, 50, 2**20]))
def test_random_objects_round_trip(tmp_path, obj, header, block_bytes):
    path = tmp_path / "rt.txt"
    write_text(obj, path, header=header)
    back = read_text(path, block_bytes=block_bytes)
    kind = obj.attrs["bosaris_kind"]
    assert back.attrs["bosaris_kind"] == kind
    mask = (obj.score_mask if kind == "scores" else obj.trial_mask).values != 0
    models, segments = _first_appearance(obj, mask)
    assert back.model.values.tolist() == models
    assert back.segment.values.tolist() == segments
    same = reindex_ids(back, obj.model.values, obj.segment.values)
    if kind == "scores":
        assert np.array_equal(same.score_mask.values, mask)
        got = same.score.values[mask]
        want = obj.score.values[mask]
        if want.dtype == np.float32:
            got = got.astype(np.float32)
        assert got.tobytes() == want.tobytes()
    else:
        assert np.array_equal(same.trial_mask.values, obj.trial_mask.values)
    # text -> Dataset -> text is exact once the ids are in order of first appearance (and the
    # scores float64); a file written from what was read always is such a fixpoint
    again = tmp_path / "again.txt"
    write_text(back, again, header=header)
    in_order = models == obj.model.values.tolist() and segments == obj.segment.values.tolist()
    if in_order and not (kind == "scores" and obj.score.dtype == np.float32):
        assert again.read_bytes() == path.read_bytes()
    assert _rewrite(tmp_path, read_text(again), header=header) == again.read_bytes()


# --------------------------------------------------------------------------------------------
# writer errors and atomicity
# --------------------------------------------------------------------------------------------


def test_unwritable_ids_and_scores(tmp_path):
    path = tmp_path / "x.txt"
    with pytest.raises(TrialError, match=f"^{path}: model id 'a b' cannot be written"):
        write_text(make_ndx(["a b"], ["s"]), path)  # the output named (it was not)
    with pytest.raises(TrialError, match="cannot be written"):
        write_text(make_ndx(["a\tb"], ["s"]), path, header=True)
    with pytest.raises(TrialError, match="cannot be written"):
        write_text(make_ndx(["a"], [""]), path, header=True)
    with pytest.raises(ScoreError, match=f"{path}: the score of trial \\('m', 't'\\) is nan"):
        write_text(make_scores(["m"], ["s", "t"], [[1.0, np.nan]]), path)
    assert not path.exists()
    # masked-out non-finite scores are not written, so they are fine
    write_text(make_scores(["m"], ["s", "t"], [[1.0, np.nan]], [[True, False]]), path)
    assert path.read_text() == "m s 1.0\n"


def test_failed_write_keeps_previous_file(tmp_path):
    path = tmp_path / "x.txt"
    path.write_text("previous\n")
    with pytest.raises(ScoreError):
        write_text(make_scores(["m"], ["s"], [[np.inf]]), path)
    assert path.read_text() == "previous\n"
    assert [p.name for p in tmp_path.iterdir()] == ["x.txt"]


# --------------------------------------------------------------------------------------------
# quality tables
# --------------------------------------------------------------------------------------------


def test_quality_round_trip(tmp_path, parser):
    values = np.array([[0.1, 5e-324, -3.0], [np.nan, np.nan, np.nan], [1e300, -0.0, 2.5]])
    table = quality_table(["s1", "s10", "話"], values)
    path = tmp_path / "q.txt"
    write_quality_text(table, path)
    assert path.read_text().splitlines()[:2] == ["3", "s1 0.1 5e-324 -3.0"]
    back = read_quality_text(path, block_bytes=8)
    assert back.dims == ("id", "measure")
    assert back.id.values.tolist() == ["s1", "s10", "話"]
    assert back.values.tobytes() == values.tobytes()
    again = tmp_path / "q2.txt"
    write_quality_text(back, again)
    assert again.read_bytes() == path.read_bytes()


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        ("", 1, "empty file"),
        ("two\na 1 2\n", 1, "number of measures"),
        ("0\n", 1, "number of measures"),
        ("2\na 1 2\nb 1\n", 3, "expected 3 fields"),
        ("\n2\n\na 1 2\nb 1 x\n", 5, "cannot parse quality value"),
        ("1\na 1\nb inf\n", 3, "not finite"),
        ("1\na 1\nb 2\na 3\n", 4, "given twice, first on line 2"),
        ("1\n", 1, "no ids"),
    ],
)
def test_quality_errors(tmp_path, content, line, message):
    path = _write(tmp_path, content)
    for block_bytes in (text.BLOCK_BYTES, 3):
        with pytest.raises(ParseError) as info:
            read_quality_text(path, block_bytes=block_bytes)
        assert info.value.line == line
        assert message in info.value.message


def test_quality_writer_errors(tmp_path):
    with pytest.raises(TrialError, match="finite values, or NaN"):
        write_quality_text(quality_table(["a"], [[np.inf]]), tmp_path / "q.txt")
    with pytest.raises(TrialError, match="cannot be written"):
        write_quality_text(quality_table(["a b"], [[1.0]]), tmp_path / "q.txt")
    empty = quality_table([], np.zeros((0, 2)))  # the reader refuses a file without ids
    with pytest.raises(TrialError, match="a quality table without ids cannot be written as text"):
        write_quality_text(empty, tmp_path / "q.txt")
    assert not (tmp_path / "q.txt").exists()


def test_benchmark_body_runs():
    """The benchmark cannot rot: run its body once on a small file."""
    import importlib.util
    from pathlib import Path

    where = Path(__file__).parents[1] / "benchmarks" / "bench_text_convert.py"
    spec = importlib.util.spec_from_file_location("bench_text_convert", where)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    case = bench.TextConvert()
    case.setup(400)
    try:
        case.time_write(400)
        case.time_read(400)
        back = read_text(case.path)
        assert back.score.values.tolist() == case.scores.score.values.tolist()
    finally:
        case.teardown(400)


def test_a_pipe_is_read_like_a_file_and_errors_name_it(tmp_path):
    """``<(cmd)`` and /dev/stdin can be read once only; the reader copies them first."""
    import threading

    fifo = tmp_path / "scores.fifo"

    def feed(text: str) -> threading.Thread:
        os.mkfifo(fifo)
        thread = threading.Thread(target=lambda: fifo.write_text(text))
        thread.start()
        return thread

    writer = feed("m1 s1 2.0\nm1 s2 -1.5\nm2 s1 0.25\n")
    scores = read_text(fifo, scratch_dir=tmp_path)
    writer.join()
    assert scores.model.values.tolist() == ["m1", "m2"]
    np.testing.assert_array_equal(scores.score.values, [[2.0, -1.5], [0.25, 0.0]])
    np.testing.assert_array_equal(scores.score_mask.values, [[True, True], [True, False]])
    fifo.unlink()
    writer = feed("m1 s1 2.0\nm1 s2 x\n")
    with pytest.raises(ParseError) as info:
        read_text(fifo, scratch_dir=tmp_path)
    writer.join()
    assert (info.value.path, info.value.line) == (str(fifo), 2)
    assert not list(tmp_path.glob("bosaris-text-*"))  # the copies are gone


def test_a_pipe_read_by_the_format_dispatch_loses_no_line(tmp_path, monkeypatch, caplog):
    # io.read looked for a binary signature by reading the pipe's first bytes before the text
    # reader copied it: the first 4 KiB of trials were gone without an error (or it hung)
    import logging
    import threading

    from bosaris_dask.io import read
    from bosaris_dask.io.text import heartbeat

    monkeypatch.setattr(heartbeat, "PROGRESS_S", 0.0)  # progress lines: they name the pipe

    fifo = tmp_path / "scores.fifo"
    os.mkfifo(fifo)
    lines = "".join(f"m{i // 200:03d} s{i % 200:03d} {i}.5\n" for i in range(20_000))  # 340 kB
    thread = threading.Thread(target=lambda: fifo.write_text(lines), daemon=True)
    thread.start()
    with caplog.at_level(logging.INFO, logger="bosaris_dask.io"):
        scores = read(fifo, scratch=tmp_path)
    thread.join(timeout=60)
    said = [r.getMessage() for r in caplog.records]
    assert said and all(line.startswith(f"{fifo}: ") for line in said), said  # not the copy
    assert not thread.is_alive()
    assert scores.sizes == {"model": 100, "segment": 200}
    assert scores.model.values[0] == "m000" and int(scores.score_mask.sum()) == 20_000
    np.testing.assert_array_equal(scores.score.values.ravel(), np.arange(20_000) + 0.5)


def test_a_binary_file_through_a_pipe_is_named_for_what_it_is(tmp_path):
    # pipes skipped the signature check (its look took their first bytes): 'expected 2 fields'
    import threading

    from bosaris_dask.io import read

    fifo = tmp_path / "scores.fifo"
    os.mkfifo(fifo)
    thread = threading.Thread(target=lambda: fifo.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(64)),
                              daemon=True)  # fmt: skip
    thread.start()
    with pytest.raises(StoreError, match=f"^{fifo}: an HDF5 file, not a text trial list"):
        read(fifo, scratch=tmp_path)
    thread.join(timeout=60)
    assert not list(tmp_path.glob("bosaris-text-*"))  # the copy is gone


def test_an_object_without_trials_is_not_written_as_an_empty_file(tmp_path):
    # apply to two systems with disjoint trials wrote a 0-byte file that no reader takes back
    scores = make_scores(["m"], ["a", "b"], [[1.0, 2.0]], [[False, False]])
    for header in (False, True):
        with pytest.raises(TrialError, match=r"out\.txt: no trial to write"):
            write_text(scores, tmp_path / "out.txt", header=header)
        assert list(tmp_path.iterdir()) == []


def test_a_long_read_and_write_say_how_far_they_are_and_when_done(tmp_path, monkeypatch, caplog):
    import logging

    from bosaris_dask.io.text import heartbeat

    monkeypatch.setattr(heartbeat, "PROGRESS_S", 0.0)  # a line after every block
    path = tmp_path / "s.txt"
    path.write_text("".join(f"m{i % 7} s{i} {i * 0.5!r}\n" for i in range(3000)))
    with caplog.at_level(logging.INFO, logger="bosaris_dask.io"):
        scores = read_text(path, block_bytes=8192)
    lines = [r.getMessage() for r in caplog.records if "read" in r.getMessage()]
    assert len(lines) > 3 and lines[-2].startswith(f"{path}: 100% read, 3,000 trials, ")
    assert lines[-1].startswith(f"{path}: read, 3,000 trials in ")  # (then the matrices)
    caplog.clear()
    monkeypatch.setattr("bosaris_dask.io.text.write._WRITE_BAND_BYTES", 1)  # a band per model
    with caplog.at_level(logging.INFO, logger="bosaris_dask.io"):
        write_text(scores, tmp_path / "out.txt")
    lines = [r.getMessage() for r in caplog.records if "written" in r.getMessage()]
    assert len(lines) == 8 and lines[1].startswith(f"{tmp_path / 'out.txt'}: 14% written, ")
    assert lines[-1].startswith(f"{tmp_path / 'out.txt'}: written, 3,000 lines in ")
    # the writers in line order (apply's text outputs, convert of a sparse list) too
    from bosaris_dask.io.text.packed import TrialList
    from bosaris_dask.io.text.write import write_score_lines, write_trial_lines

    monkeypatch.setattr("bosaris_dask.io.text.write._WRITE_LINES", 1000)
    trials = TrialList.read(path, "scores")
    for out, write in ((tmp_path / "lines.txt", lambda p: write_trial_lines(trials, p)),
                       (tmp_path / "kept.txt", lambda p: write_score_lines(
                           trials, trials.values, trials.values >= 0, p))):  # fmt: skip
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="bosaris_dask.io"):
            assert write(out) == 3000
        lines = [r.getMessage() for r in caplog.records if "written" in r.getMessage()]
        assert lines[:3] == [f"{out}: 0% written, 0 lines, 0 s", f"{out}: 33% written, 1,000 "
                             "lines, 0 s", f"{out}: 67% written, 2,000 lines, 0 s"]  # fmt: skip
        assert lines[-1].startswith(f"{out}: written, 3,000 lines in ")


@pytest.mark.parametrize(
    "content, line, message",
    [("# ndx\nm1 s1\nm2 s2\n", 1, "a line starting with '#' \\(a comment\\?\\): trial lists "
                                   "have no comment lines; remove them, e.g. grep -v '\\^#' FILE"),
     ("# comment\nm1 s1 target\n", 1, "a line starting"),  # was line 2: 'expected 2 fields'
     ("# comment here\nm1 s1 0.5\n", 1, "a line starting"),  # was 'expected 3 fields'
     ("m1 s1\n#m2 s2\n", 2, "a line starting with '#'"),
     ("m1 s1 0.5\n# a comment\nm2 s2 0.5\n", 2, "a line starting"),  # was "score 'comment'"
     ("m1 s1\nm2 #s2\n", 2, "segment id '#s2' starts with '#'"),
     ("m1 s1 0.5\n\ufeffm2 s3 0.5\n", 2, "model id '\\\\ufeffm2' holds a byte-order mark")],
)  # fmt: skip
def test_comment_lines_and_joined_files_byte_order_marks_are_refused_at_their_line(
    tmp_path, parser, content, line, message
):
    # a '#' line of an ndx was a trial of model '#'; a BOM after `cat a b` stayed in an id,
    # whose trials then missed the key's
    with pytest.raises(ParseError, match=f"f.txt:{line}: {message}"):
        read_text(_write(tmp_path, content))


def test_an_ndx_whose_first_trial_reads_as_a_header_is_not_written_bare(tmp_path):
    # it was written as "enroll test" first, which the reader took for a header: 2 trials of 3
    ndx = make_ndx(["enroll", "m2"], ["test", "s2"], [[1, 1], [0, 1]])
    with pytest.raises(TrialError, match="the first trial \\('enroll', 'test'\\) would read "
                       "back as a header line"):  # fmt: skip
        write_text(ndx, tmp_path / "bare.ndx")
    assert not list(tmp_path.iterdir())  # nothing left behind
    write_text(ndx, tmp_path / "nist.tsv", header=True)
    np.testing.assert_array_equal(read_text(tmp_path / "nist.tsv").trial_mask.values,
                                  [[True, True], [False, True]])  # fmt: skip


@pytest.mark.parametrize("threads", [1, 3])
def test_blocks_parsed_in_threads_give_the_file_order_and_its_first_error(
    tmp_path, monkeypatch, threads, parser
):
    # many blocks in flight: a later block's error, found first, must not win over an earlier
    parse, where = text.parse._parse_block, set()

    def recorded(*args):
        where.add(threading.current_thread().name.startswith("bosaris-parse"))
        return parse(*args)

    monkeypatch.setattr(text.parse, "_parse_block", recorded)
    rows = [f"m{i % 7} s{i} {i / 8}" for i in range(400)]
    path = _write(tmp_path, "\n".join(rows) + "\n")
    rows[380], rows[250] = "m0 s380 x", "m0 s250 nan"  # a later error may be found first
    bad = _write(tmp_path, "\n".join(rows) + "\n", "bad.txt")
    filters = list(warnings.filters)  # not thread-safe: the parse must leave them alone
    with dask.config.set({"bosaris_dask.parse-threads": threads}):
        ds = read_text(path, block_bytes=64)
        with pytest.raises(ParseError, match=r"bad.txt:251: score 'nan' is not finite"):
            read_text(bad, block_bytes=64)
    assert where == {threads > 1} and warnings.filters == filters
    rows[16] = "m0 s16\0 1"  # found while the block of line 11 is still being parsed
    rows[10] = "m0 s10 x"
    bad = _write(tmp_path, "\n".join(rows) + "\n", "nul.txt")
    with dask.config.set({"bosaris_dask.parse-threads": threads}):
        with pytest.raises(ParseError, match=r"nul.txt:11: cannot parse score 'x'"):
            read_text(bad, block_bytes=64)
    assert ds.model.values.tolist() == [f"m{i}" for i in range(7)]
    assert ds.segment.values.tolist() == [f"s{i}" for i in range(400)]
    assert ds.score.values[3, 3] == 3 / 8 and int(ds.score_mask.sum()) == 400
