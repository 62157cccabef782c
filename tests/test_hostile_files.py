"""Corrupt and hostile input files (issue 7): each is refused with the exact BosarisError
subclass, a message naming the file (and the line, for text), quickly and in bounded memory.

Nothing read from a file is unpickled, evaluated or executed, and no path found in a file (an
HDF5 external link, external storage or virtual dataset source; a symbolic link or consolidated
metadata inside a zarr store) is followed outside what the user named. Cases already covered
in ``test_io_text.py`` and ``test_io_stores.py`` (a missing or truncated score chunk, a NUL in a
middle line, integer ids) are not repeated here.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import time
import tracemalloc
from pathlib import Path

import h5py
import numcodecs
import numpy as np
import pytest
import xarray as xr
import zarr

from bosaris_dask import io
from bosaris_dask.cli import main
from bosaris_dask.errors import ParseError, StoreError
from bosaris_dask.io import text
from bosaris_dask.trials import make_key, make_ndx, make_scores

MODELS, SEGMENTS = ["m1", "m2"], ["s1", "s2", "s3"]
SCORES = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -3.0]])
IDS = {"ID/row_ids": np.array([b"m1", b"m2"]), "ID/column_ids": np.array([b"s1", b"s2", b"s3"])}
NDX_MASK = np.array([[1, 0, 1], [1, 1, 0]], dtype=np.uint8)


def _parse_error(path: Path, **kw) -> ParseError:
    with pytest.raises(ParseError) as info:
        io.read(path, **kw)
    assert info.value.path == os.fspath(path)
    assert str(info.value).startswith(f"{path}:{info.value.line}: ")
    return info.value


def _store_error(path: Path, match: str, *, compute: bool = False, **kw) -> StoreError:
    """The StoreError that reading (and, with ``compute``, computing) ``path`` raises."""
    with pytest.raises(StoreError, match=match) as info:
        obj = io.read(path, **kw)
        if compute:
            obj.compute()
    assert type(info.value) is StoreError
    assert str(path) in str(info.value), f"the message does not name the file: {info.value}"
    return info.value


# --------------------------------------------------------------------------------------------
# text
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "line"),
    [
        (b"m1\x00 s1 1.5\nm2 s1 2\n", 1),  # found while telling the kind of file
        (
            b"\n\n" + b"".join(b"m%d s1 2\n" % i for i in range(100)) + b"m s\x001 3\n",
            103,
        ),  # a later block
        ("m1 s1 target\n".encode("utf-16-le"), 1),  # UTF-16: a NUL after every ASCII letter
    ],
)
def test_text_with_a_nul_byte_names_file_and_line(tmp_path, content, line, monkeypatch):
    # io.read looks read_text up at each call: blocks of 64 bytes put the NUL in a later block
    monkeypatch.setattr(text, "read_text", functools.partial(text.read_text, block_bytes=64))
    path = tmp_path / "trials.txt"
    path.write_bytes(content)
    error = _parse_error(path)
    assert error.line == line
    assert error.message == "NUL byte in a text file (is it binary?)"


_TEN_MB = 10 * 2**20


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("content", "line"),
    [
        (b"m" * _TEN_MB, 1),  # one 10 MB line, no newline at all
        (b"m1 s1 1.5\nm2 s1 2\n" + b"x" * _TEN_MB + b" s1 3\nm3 s1 4\n", 3),  # a 10 MB id
        (b"m1 s1 1.5\n" + b" \t" * (_TEN_MB // 2) + b"\nm2 s1 2\n", 2),  # 10 MB of blanks
    ],
    ids=["no-newline", "ten-mb-id", "ten-mb-blank-line"],
)
def test_ten_megabyte_line_is_an_error_found_fast_in_bounded_memory(tmp_path, content, line):
    """Decision: a line over 1 MiB is an error (no id, score or label is that long), found
    after reading at most one block past the line's start: no hang, no memory in its size."""
    path = tmp_path / "scores.txt"
    path.write_bytes(content)
    tracemalloc.start()
    start = time.perf_counter()
    try:
        error = _parse_error(path)
        elapsed = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert error.line == line
    assert error.message == f"line longer than {text.MAX_LINE_BYTES} bytes"
    assert peak < text.BLOCK_BYTES + 4 * text.MAX_LINE_BYTES, f"peak {peak / 2**20:.1f} MiB"
    assert elapsed < 10, f"{elapsed:.1f} s"


def test_text_fields_are_data_never_code_or_paths(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("not to be read")
    sentinel = tmp_path / "pwned"
    path = tmp_path / "scores.txt"
    path.write_text(
        f"{secret} ../../etc/passwd 1.5\nm2 s2 __import__('builtins').open('{sentinel}','w')\n"
    )
    error = _parse_error(path)
    assert error.line == 2 and error.message.startswith('cannot parse score "__import__(')
    path.write_text(f"{secret} ../../etc/passwd 1.5\n")
    scores = io.read(path)
    assert scores.model.values.tolist() == [str(secret)]
    assert scores.segment.values.tolist() == ["../../etc/passwd"]
    assert not sentinel.exists()


# --------------------------------------------------------------------------------------------
# HDF5
# --------------------------------------------------------------------------------------------


def _hand(path: Path, datasets: dict, **file_options) -> Path:
    with h5py.File(path, "w", **file_options) as f:
        for name, value in datasets.items():
            f[name] = value
    return path


@pytest.fixture
def written_scores(tmp_path) -> Path:
    return io.write(make_scores(MODELS, SEGMENTS, SCORES), tmp_path / "scores.h5")


@pytest.mark.parametrize("writer", ["bosaris-dask", "h5py-earliest-format"])
@pytest.mark.parametrize("where", [0, 7, 8, 96, 512, "half", "last-data-byte", "last-byte"])
def test_truncated_hdf5_at_several_offsets(tmp_path, writer, where):
    if writer == "bosaris-dask":
        good = io.write(make_scores(MODELS, SEGMENTS, SCORES), tmp_path / "good.h5")
    else:  # the HDF5 1.6 format, as MATLAB and h5py write by default
        good = _hand(tmp_path / "good.h5", {"scores": SCORES, "score_mask": NDX_MASK, **IDS})
    data = good.read_bytes()
    with h5py.File(good) as f:
        end_of_data = max(d.id.get_offset() + d.id.get_storage_size() for d in _datasets(f))
    cut = {"half": len(data) // 2, "last-data-byte": end_of_data - 1, "last-byte": len(data) - 1}
    cut = cut.get(where, where)
    path = tmp_path / f"cut-at-{cut}.h5"
    path.write_bytes(data[:cut])
    _store_error(path, r": (not a readable HDF5 file|cannot read /\w+) \(", compute=True)


def _datasets(f: h5py.File) -> list[h5py.Dataset]:
    found = []
    f.visititems(lambda _, obj: found.append(obj) if isinstance(obj, h5py.Dataset) else None)
    return found


def _ids_of(kind: str, f: h5py.File):
    if kind == "ints":
        return np.array([1, 2])
    if kind == "floats":
        return np.array([1.5, 2.5])
    if kind == "compound":
        return np.array([(1, b"m1"), (2, b"m2")], dtype=[("n", "<i4"), ("id", "S2")])
    if kind == "references":
        return np.array([f["scores"].ref, f["scores"].ref], dtype=h5py.ref_dtype)
    if kind == "enum":
        return np.array([0, 1], dtype=h5py.enum_dtype({"m1": 0, "m2": 1}, basetype="i1"))
    if kind == "vlen-ints":
        out = np.empty(2, dtype=h5py.vlen_dtype(np.int32))
        out[:] = [np.array([1, 2], np.int32), np.array([3], np.int32)]
        return out
    return np.array([b"m1", b"m2"]).view("V2")  # opaque


@pytest.mark.parametrize(
    ("kind", "holds"),
    [
        ("ints", "int64"),
        ("floats", "float64"),
        ("compound", r"\[\('n', '<i4'\), \('id', 'S2'\)\]"),
        ("references", "object"),
        ("enum", "int8"),
        ("vlen-ints", "object"),
        ("opaque", "V2"),
    ],
)
@pytest.mark.parametrize("side", ["row_ids", "column_ids"])
def test_hdf5_ids_that_are_not_strings(tmp_path, kind, holds, side):
    path = tmp_path / "scores.h5"
    with h5py.File(path, "w") as f:
        ids = {"row_ids": IDS["ID/row_ids"], "column_ids": np.array([b"s1", b"s2"])}
        f["scores"], f["score_mask"] = SCORES[:, :2], np.ones((2, 2), np.uint8)
        ids[side] = _ids_of(kind, f)
        for name, value in ids.items():
            f.create_dataset(f"ID/{name}", data=value, dtype=getattr(value, "dtype", None))
    _store_error(path, rf"dataset /ID/{side} holds \|?{holds}, not strings$")


@pytest.fixture
def other_file(tmp_path) -> Path:
    """A valid file that links point into: following a link would read it without error."""
    return _hand(
        tmp_path / "other.h5",
        {"mask": NDX_MASK, "ids": IDS["ID/row_ids"], "ID/row_ids": IDS["ID/row_ids"],
         "ID/column_ids": IDS["ID/column_ids"]},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "target", "link"),
    [
        ("trial_mask", "/mask", "/trial_mask"),
        ("ID/row_ids", "/ids", "/ID/row_ids"),
        ("ID", "/ID", "/ID"),
    ],
)
@pytest.mark.parametrize("relative", [True, False])
def test_hdf5_external_links_are_not_followed(tmp_path, other_file, name, target, link, relative):
    path = tmp_path / "ndx.h5"
    file = other_file.name if relative else os.fspath(other_file)
    with h5py.File(path, "w") as f:
        for k, v in {"trial_mask": NDX_MASK, **IDS}.items():
            if not k.startswith(name):
                f[k] = v
        f[name] = h5py.ExternalLink(file, target)
    error = _store_error(path, "links to other files are not followed")
    assert f"{link} is an external link to {file!r}:{target};" in str(error)


def test_hdf5_external_storage_and_virtual_datasets_are_refused(tmp_path, other_file):
    raw = tmp_path / "raw.bin"
    NDX_MASK.tofile(raw)
    external = tmp_path / "external.h5"
    with h5py.File(external, "w") as f:
        f.create_dataset("trial_mask", shape=(2, 3), dtype=np.uint8, external=[(raw, 0, 6)])
        for k, v in IDS.items():
            f[k] = v
    _store_error(external, f"/trial_mask keeps its data in the external file '{raw}'; it is not")

    virtual = tmp_path / "virtual.h5"
    with h5py.File(virtual, "w") as f:
        layout = h5py.VirtualLayout(shape=(2, 3), dtype=np.uint8)
        layout[:] = h5py.VirtualSource(os.fspath(other_file), "mask", shape=(2, 3))
        f.create_virtual_dataset("trial_mask", layout)
        for k, v in IDS.items():
            f[k] = v
    _store_error(virtual, "/trial_mask is a virtual dataset .mapped from other datasets or files")


def test_hdf5_soft_links_resolve_inside_the_file_only(tmp_path, other_file):
    inside = tmp_path / "inside.h5"
    with h5py.File(inside, "w") as f:
        f["data/mask"] = NDX_MASK
        f["trial_mask"] = h5py.SoftLink("/data/mask")
        for k, v in IDS.items():
            f[k] = v
    assert io.read(inside).trial_mask.values.tolist() == NDX_MASK.astype(bool).tolist()

    cycle = tmp_path / "cycle.h5"
    with h5py.File(cycle, "w") as f:
        f["trial_mask"] = h5py.SoftLink("/loop")
        f["loop"] = h5py.SoftLink("/trial_mask")
        for k, v in IDS.items():
            f[k] = v
    _store_error(cycle, "more than 16 soft links at /")

    through = tmp_path / "through.h5"  # a soft link whose path crosses an external link
    with h5py.File(through, "w") as f:
        f["elsewhere"] = h5py.ExternalLink(os.fspath(other_file), "/")
        f["trial_mask"] = h5py.SoftLink("/elsewhere/mask")
        for k, v in IDS.items():
            f[k] = v
    _store_error(through, "/elsewhere is an external link to .*; links to other files are not")


def test_hdf5_objects_and_references_are_refused_never_unpickled(tmp_path):
    refs = tmp_path / "refs.h5"
    with h5py.File(refs, "w") as f:
        f["x"] = np.arange(3)
        f.create_dataset("trial_mask", data=[[f["x"].ref] * 3] * 2, dtype=h5py.ref_dtype)
        for k, v in IDS.items():
            f[k] = v
    _store_error(refs, r"/trial_mask holds object, neither a key.s int8 nor an ndx.s uint8")
    _store_error(refs, r"/trial_mask holds object, expected numbers", kind="ndx")

    strings = _hand(
        tmp_path / "s.h5",
        {"scores": np.array([["1.5"] * 3] * 2, dtype=h5py.string_dtype()), "score_mask": NDX_MASK,
         **IDS},
    )  # fmt: skip
    _store_error(strings, r"/scores holds object, expected numbers")


def test_hdf5_non_standard_number_types_are_refused(tmp_path):
    # big-endian IEEE floats are standard (written on big-endian machines, or asked for): read
    # into native arrays, contiguous (memory-mapped) or chunked, float32 kept float32
    for dtype in (">f8", ">f4"):
        for chunks in (None, (1, 2)):
            path = tmp_path / f"be{dtype[-1]}{chunks is None}.h5"
            with h5py.File(path, "w") as f:
                f.create_dataset("scores", data=SCORES.astype(dtype), chunks=chunks)
                f["score_mask"] = NDX_MASK
                for k, v in IDS.items():
                    f[k] = v
            score = io.read(path).score
            assert score.dtype == np.dtype(f"=f{dtype[-1]}") and score.dtype.isnative
            want = np.where(NDX_MASK, SCORES.astype(dtype), 0)
            np.testing.assert_array_equal(score.values, want)

    odd = tmp_path / "odd.h5"  # an IEEE layout with another exponent bias: values scaled by 2^k
    with h5py.File(odd, "w") as f:
        tid = h5py.h5t.IEEE_F64LE.copy()
        tid.set_ebias(1000)
        space = h5py.h5s.create_simple((2, 3))
        h5py.h5d.create(f.id, b"scores", tid, space).write(
            h5py.h5s.ALL, h5py.h5s.ALL, SCORES, mtype=h5py.h5t.NATIVE_DOUBLE
        )
        f["score_mask"] = NDX_MASK
        for k, v in IDS.items():
            f[k] = v
    _store_error(odd, r"/scores holds a non-standard number type \(float\d+\)")


@pytest.mark.parametrize(
    ("name", "value", "kind", "message"),
    [
        ("trial_mask", 2, "ndx", r"/trial_mask holds 2 at trial \(m2, s3\), expected 0, 1"),
        ("trial_mask", 7, "key", r"/trial_mask holds 7 at trial \(m2, s3\), expected -1, 0, 1"),
        ("score_mask", 255, "scores", r"/score_mask holds 255 at trial \(m2, s3\), expected 0, 1"),
    ],
)
def test_hdf5_integer_masks_with_other_values_are_corrupt(tmp_path, name, value, kind, message):
    # the first bad value's trial is named (the error named only the file)
    mask = NDX_MASK.astype(np.int8 if kind == "key" else np.uint8)
    mask[1, 2] = value
    extra = {"scores": SCORES} if kind == "scores" else {}
    path = _hand(tmp_path / f"{kind}.h5", {name: mask, **extra, **IDS})
    _store_error(path, message, compute=True, kind=kind)
    _store_error(path, message, compute=True, kind=kind, chunks=(1, 2))  # in the last chunk


@pytest.mark.parametrize(
    ("name", "value", "kind", "message"),
    [
        ("trial_mask", np.nan, "ndx", r"/trial_mask holds nan at trial \(m2, s3\), expected 0, 1"),
        ("trial_mask", np.nan, "key", r"/trial_mask holds nan at trial \(m2, s3\), expected -1,"),
        ("score_mask", np.nan, "scores", r"/score_mask holds nan at trial \(m2, s3\), expected"),
    ],
)
def test_hdf5_float_masks_hold_no_nan(tmp_path, name, value, kind, message):
    # a float mask's NaN (as MATLAB's logical(NaN), an error) was a trial (!= 0) or, in a key,
    # no trial, without a word; its other values keep MATLAB's meaning (test_io_stores)
    mask = NDX_MASK.astype(np.float64)
    mask[1, 2] = value
    extra = {"scores": SCORES} if kind == "scores" else {}
    path = _hand(tmp_path / f"{kind}.h5", {name: mask, **extra, **IDS})
    _store_error(path, message, compute=True, kind=kind)
    mask[1, 2] = 0.5  # nonzero: a trial (an ndx's or a score's); a key's: no trial
    path = _hand(tmp_path / f"good_{kind}.h5", {name: mask, **extra, **IDS})
    back = io.read(path, kind=kind).compute()
    assert back[name].values[1, 2] == (0 if kind == "key" else 1)


def test_hdf5_corrupt_metadata_of_a_written_file_is_an_error(written_scores):
    """The writer uses the HDF5 1.8 format: its metadata carry checksums. Here the address of
    /scores' data moves by 8 bytes; in the unchecked 1.6 format that reads other bytes as
    scores without a word."""
    data = bytearray(written_scores.read_bytes())
    with h5py.File(written_scores) as f:
        address = f["scores"].id.get_offset()
    at = data.find(address.to_bytes(8, "little"))
    assert at > 0 and data.find(address.to_bytes(8, "little"), at + 1) < 0
    data[at] ^= 8
    written_scores.write_bytes(bytes(data))
    _store_error(
        written_scores, r"cannot open /scores \(.*incorrect metadata checksum", compute=True
    )


# --------------------------------------------------------------------------------------------
# zarr
# --------------------------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path) -> Path:
    obj = make_scores(MODELS, SEGMENTS, SCORES, [[True, False, True], [True, True, False]])
    return io.write(obj, tmp_path / "scores.zarr", omit_true_masks=False)


def _edit(path: Path, change) -> None:
    meta = json.loads(path.read_text())
    change(meta)
    path.write_text(json.dumps(meta))


def test_zarr_missing_ids_chunk(store):
    (store / "model" / "c" / "0").unlink()
    _store_error(store, r"array 'model' is missing chunk \(0,\) \(file c/0\)$")


@pytest.mark.parametrize(
    ("array", "shape", "message"),
    [
        ("score", [3, 3], r"array 'score' has shape \(3, 3\) but there are 2 model ids and 3 "),
        ("score_mask", [2, 4], r"'score_mask' has shape \(2, 4\) but there are 2 model ids and 3"),
        ("model", [3], r"array 'score' has shape \(2, 3\) but there are 3 model ids and 3 "),
        ("segment", [1], r"array 'score' has shape \(2, 3\) but there are 2 model ids and 1 "),
    ],
)
def test_zarr_metadata_shape_disagreeing_with_ids(store, array, shape, message):
    _edit(store / array / "zarr.json", lambda meta: meta.update(shape=shape))
    _store_error(store, message)


def test_zarr_ids_metadata_claiming_more_ids_than_stored(store):
    def grow(meta):
        meta.update(shape=[3])
        meta["chunk_grid"]["configuration"]["chunk_shape"] = [3]

    for name, n in (("model", 3), ("score", None), ("score_mask", None)):
        if n is None:
            _edit(store / name / "zarr.json", lambda meta: meta.update(shape=[3, 3]))
        else:
            _edit(store / name / "zarr.json", grow)
    # score's chunks no longer cover the rows: its chunk grid wants a second chunk row
    _store_error(store, r"array 'score(_mask)?' is missing chunk \(1, 0\)")


@pytest.mark.parametrize(
    "victim", ["score", "score/c/0/0", "score/zarr.json", "model/c"], ids=lambda v: v
)
def test_zarr_symbolic_links_out_of_the_store_are_not_followed(tmp_path, store, victim):
    outside = tmp_path / "outside.zarr"
    shutil.copytree(store, outside)
    target = store / victim
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    os.symlink(outside / victim, target)
    error = _store_error(store, "outside the store; it is not followed")
    assert f"{victim} is a symbolic link to {outside / victim}," in str(error)


def test_zarr_links_inside_the_store_and_to_the_store_are_fine(tmp_path, store):
    os.symlink(store, tmp_path / "alias.zarr")
    assert io.read(tmp_path / "alias.zarr").score.values.tolist() == SCORES.tolist()
    chunk = store / "model" / "c" / "0"
    (store / "model" / "spare").write_bytes(chunk.read_bytes())
    chunk.unlink()
    os.symlink(store / "model" / "spare", chunk)
    assert io.read(store).model.values.tolist() == MODELS


@pytest.mark.timeout(60)
def test_zarr_fifo_in_place_of_a_chunk_is_refused_not_read(store):
    chunk = store / "score_mask" / "c" / "0" / "0"
    chunk.unlink()
    os.mkfifo(chunk)  # reading it would block forever
    _store_error(store, r"score_mask/c/0/0 is not a regular file")


class _Payload:
    """Unpickling this creates the file ``path``."""

    def __init__(self, path: Path):
        self.path = os.fspath(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_zarr_v2_pickle_codec_is_refused_and_never_run(tmp_path):
    store, sentinel = tmp_path / "v2.zarr", tmp_path / "unpickled"
    group = zarr.open_group(store, mode="w", zarr_format=2)
    group.attrs.update(bosaris_kind="ndx", bosaris_store_version=1, bosaris_all_true=["trial_mask"])
    for name, values in (("model", MODELS), ("segment", SEGMENTS)):
        ids = group.create_array(name, shape=(len(values),), dtype=str, chunks=(len(values),))
        ids[:] = np.array(values)
        ids.attrs["_ARRAY_DIMENSIONS"] = [name]
    meta = store / "model" / ".zarray"
    _edit(meta, lambda m: m.update(dtype="|O", compressor=None, filters=[{"id": "pickle"}]))
    payload = numcodecs.Pickle().encode(np.array([_Payload(sentinel), "m2"], dtype=object))
    (store / "model" / "0").write_bytes(payload)
    _store_error(store, r"model/.zarray asks for the codec 'pickle'; stores whose data would be")
    assert not sentinel.exists()


def test_zarr_v3_pickle_codec_and_object_dtype_are_refused(store):
    _edit(store / "model" / "zarr.json", lambda m: m.update(data_type="object"))
    _store_error(store, r"not a readable zarr store")
    pickled = {"name": "numcodecs.pickle", "configuration": {}}
    _edit(store / "model" / "zarr.json", lambda m: m["codecs"].insert(0, pickled))
    _store_error(store, r"model/zarr.json asks for the codec 'numcodecs.pickle'")


def test_zarr_consolidated_metadata_is_ignored(tmp_path, store):
    """Consolidated metadata is a second copy of the arrays' metadata; a copy that names paths
    outside the store (or disagrees) decides nothing: the arrays' own metadata are read."""
    with pytest.warns(UserWarning, match="Consolidated metadata"):
        zarr.consolidate_metadata(os.fspath(store))
    consolidated = lambda m: m["consolidated_metadata"]["metadata"]  # noqa: E731
    _edit(store / "zarr.json", lambda m: consolidated(m).update(
        {"../outside/score": consolidated(m)["score"]}))  # fmt: skip
    _edit(store / "zarr.json", lambda m: consolidated(m)["score"].update(shape=[9, 9]))
    assert io.read(store).score.values.tolist() == SCORES.tolist()


def test_zarr_store_that_is_a_plain_file(tmp_path):
    path = tmp_path / "scores.zarr"
    path.write_bytes(b"\x89HDF\r\n\x1a\n")
    _store_error(path, r"scores.zarr: not a readable zarr store \(\[Errno 20\] Not a directory")


def test_zarr_deeply_nested_metadata_is_a_store_error(store):
    (store / "score" / "zarr.json").write_text("[" * 100_000 + "]" * 100_000)
    _store_error(store, r"cannot parse score/zarr.json \(maximum recursion depth")


# --------------------------------------------------------------------------------------------
# the command line: one line, exit status 1
# --------------------------------------------------------------------------------------------


def test_cli_reports_a_hostile_file_in_one_line(tmp_path, other_file, capsys):
    key = tmp_path / "key.h5"
    with h5py.File(key, "w") as f:
        f["trial_mask"] = h5py.ExternalLink(os.fspath(other_file), "/mask")
        f["file_format"] = b"2.0"
        for k, v in IDS.items():
            f[k] = v
    scores = io.write(make_scores(MODELS, SEGMENTS, SCORES), tmp_path / "scores.h5")
    status = main(["evaluate", "--key", str(key), "--scores", str(scores), "-q",
                   "--cluster", "threads"])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 1
    assert err == (
        f"bosaris-dask: error: {key}: /trial_mask is an external link to "
        f"'{other_file}':/mask; links to other files are not followed\n"
    )


def test_written_files_still_read(tmp_path):
    """The checks refuse nothing that bosaris-dask itself writes."""
    key = make_key(MODELS, SEGMENTS, np.array([[1, -1, 0], [0, 1, -1]], np.int8))
    for obj in (make_scores(MODELS, SEGMENTS, SCORES), key, make_ndx(MODELS, SEGMENTS)):
        for ext in ("h5", "zarr"):
            back = io.read(io.write(obj, tmp_path / f"{obj.attrs['bosaris_kind']}.{ext}"))
            xr.testing.assert_equal(back.compute(), obj.compute())


def test_an_hdf5_file_of_another_kind_is_refused_by_name(tmp_path):
    # an Ndx read as a key made every trial a target; a key read as scores was said to lack
    # /score_mask, and one read as an Ndx to be corrupt
    ndx = make_ndx(["m1", "m2"], ["s1", "s2", "s3"], [[1, 0, 1], [0, 1, 1]])
    key = make_key(["m1", "m2"], ["s1", "s2", "s3"], [[1, 0, -1], [0, -1, 1]])
    io.write(ndx, tmp_path / "ndx.h5")
    io.write(key, tmp_path / "key.h5")
    with pytest.raises(StoreError, match="ndx.h5: holds an ndx, expected a key"):
        io.read(tmp_path / "ndx.h5", "key")
    with pytest.raises(StoreError, match="key.h5: holds a key, expected scores"):
        io.read(tmp_path / "key.h5", "scores")
    with pytest.raises(StoreError, match="key.h5: holds a key, expected an ndx"):
        io.read(tmp_path / "key.h5", "ndx")
    assert io.read(tmp_path / "key.h5", "key").trial_mask.values.tolist() == [
        [1, 0, -1],
        [0, -1, 1],
    ]


@pytest.mark.parametrize("fmt", ["h5", "mat"])
def test_an_ndx_stored_with_a_signed_mask_reads_as_an_ndx_when_asked(tmp_path, fmt, capsys):
    # SIDEKIT's Ndx.write stores an int8 0/1 mask: the kind from the dtype says key, every
    # trial a target; kind="ndx" reads it as what it is (values 0/1, checked)
    import scipy.io

    mask = np.array([[1, 0, 1], [0, 1, 1]], dtype=np.int8)
    ids = {"row_ids": ["m1", "m2"], "column_ids": ["s1", "s2", "s3"]}
    paths = []
    for name, values in (("ndx", mask), ("bad", -mask)):
        path = tmp_path / f"{name}.{fmt}"
        if fmt == "h5":
            with h5py.File(path, "w") as f:
                f["trial_mask"] = values
                f["ID/row_ids"] = np.array([b"m1", b"m2"])
                f["ID/column_ids"] = np.array([b"s1", b"s2", b"s3"])
        else:
            scipy.io.savemat(path, {"idx": {**ids, "trial_mask": values}})
        paths.append(path)
    assert io.read(paths[0]).attrs["bosaris_kind"] == "key"  # what the file says
    ndx = io.read(paths[0], "ndx")
    assert ndx.attrs["bosaris_kind"] == "ndx"
    assert ndx.trial_mask.values.tolist() == (mask == 1).tolist()
    with pytest.raises(StoreError):  # a real key's -1 is not an ndx's 0/1
        io.read(paths[1], "ndx").trial_mask.compute()
    # info says what the file may be, and reads it so when told
    assert main(["info", str(paths[0]), "--cluster", "threads", "-q"]) == 0
    assert "read it with --kind ndx" in capsys.readouterr().out
    assert main(["info", str(paths[0]), "--kind", "ndx", "--cluster", "threads", "-q"]) == 0
    out = capsys.readouterr().out
    assert "kind:        ndx" in out and "trials:      4\n" in out
    # convert writes what it read, and says the same
    out_path = str(tmp_path / f"out-{fmt}.zarr")
    assert main(["convert", str(paths[0]), out_path, "--cluster", "threads", "-q"]) == 0
    assert "read it with --kind ndx" in capsys.readouterr().err
    assert main(["convert", str(paths[0]), out_path, "--kind", "ndx", "--cluster", "threads",
                 "-q"]) == 0  # fmt: skip
    assert capsys.readouterr().err == "" and io.read(out_path).attrs["bosaris_kind"] == "ndx"


def test_a_flattened_or_transposed_hdf5_matrix_is_refused_with_a_hint(tmp_path):
    # a 3 x 4 /scores flattened to 12 values was reshaped row-major: a MATLAB (column-major)
    # file gave 10 of 12 cells another trial's score
    ids = {"ID/row_ids": np.array([b"m0", b"m1", b"m2"]),
           "ID/column_ids": np.array([b"s0", b"s1", b"s2", b"s3"])}  # fmt: skip
    scores = np.arange(12, dtype=np.float64).reshape(3, 4)
    for name, layout, hint in (("flat", lambda x: x.T.ravel(), "flattened to 1-D"),
                               ("transposed", lambda x: x.T, "transposed")):  # fmt: skip
        path = tmp_path / f"{name}.h5"
        with h5py.File(path, "w") as f:
            for k, v in ids.items():
                f[k] = v
            f["scores"] = layout(scores)
            f["score_mask"] = layout(np.ones((3, 4), dtype=np.uint8))
        with pytest.raises(StoreError, match=rf"{name}.h5: /score\w* has shape .*{hint}"):
            io.read(path)
    with h5py.File(tmp_path / "one.h5", "w") as f:  # 1 x 4 stored squeezed: unambiguous
        f["ID/row_ids"], f["ID/column_ids"] = np.array([b"m0"]), ids["ID/column_ids"]
        f["scores"], f["score_mask"] = np.arange(4.0), np.ones(4, dtype=np.uint8)
    assert io.read(tmp_path / "one.h5").score.values.tolist() == [[0.0, 1.0, 2.0, 3.0]]


@pytest.mark.parametrize(
    ("name", "content", "kind", "error", "message"),
    [
        # lines ended by CR alone: one line of nine fields, and nothing said of the CRs
        ("cr.txt", b"m1 s1 1\rm1 s2 2\rm1 s3 3\r", None, ParseError,
         "cr.txt:1: carriage returns (CR) inside the line: lines ended by CR alone"),
        ("crlf.txt", b"m1 s1 1\r\nm1 s2 2\r\n", None, None, None),  # CRLF stays fine
        # a CSV table with a quoted id holding a comma was told of tab-separated fields
        ("c.txt", b'modelid,segmentid,LLR\n"m,1",s1,1.5\n', None, ParseError,
         "c.txt:2: expected 3 comma-separated fields (one per header column), found 4 "
         "(quoted fields are not read: no commas inside ids)"),
        # a text file named .mat: scipy's message alone said nothing of it
        ("t.mat", b"m1 s1 1.5\nm1 s2 2\n", None, StoreError,
         "t.mat: not a readable MAT file ("),
        # with the kind given, the layout is what cannot be told
        ("k.txt", b"m1 s1 x 1\n", "scores", ParseError,
         "k.txt:1: cannot tell the layout of the file: 4 fields, and field 3 'x' is not a"),
    ],
)  # fmt: skip
def test_text_files_that_look_like_something_else_are_named(
    tmp_path, name, content, kind, error, message
):
    path = tmp_path / name
    path.write_bytes(content)
    if error is None:
        assert int(io.read(path).score_mask.sum()) == 2
        return
    with pytest.raises(error) as info:
        io.read(path, kind)
    assert str(info.value).startswith(str(tmp_path / message))
    if name.endswith(".mat"):
        assert str(info.value).endswith(": it holds text lines, not a MAT file; name it .txt")


def test_a_spaced_id_s_error_names_the_table_that_takes_it(tmp_path):
    from bosaris_dask.errors import TrialError
    from bosaris_dask.trials import make_scores

    scores = make_scores(["spk 0"], ["seg0"], [[1.5]])
    with pytest.raises(TrialError, match=r"or a tab-separated NIST table \(header=True; "):
        io.write(scores, tmp_path / "s.txt")
    io.write(scores, tmp_path / "s.tsv", header=True)
    assert io.read(tmp_path / "s.tsv").model.values.tolist() == ["spk 0"]
