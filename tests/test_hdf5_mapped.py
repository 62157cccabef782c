"""Chunked HDF5 datasets read through memory maps of their chunks: bit for bit what h5py reads.

The reference is h5py's own read of the same slab (``dset[rows, columns]``), compared as raw
bytes (floats are drawn from random bits, NaN payloads included); nothing here shares code with
:mod:`bosaris_dask.io.hdf5.mapped`.
"""

from __future__ import annotations

import os
from pathlib import Path

import dask
import h5py
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask import io
from bosaris_dask.errors import StoreError
from bosaris_dask.io.hdf5.mapped import ChunkOffsets, chunk_offsets, read_mapped

DTYPES = ["<i1", "<u1", "<i2", "<u4", "<i8", "<f4", "<f8"]


def _random_values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Random bits of ``dtype`` (every float pattern: NaNs, infinities, subnormals)."""
    dtype = np.dtype(dtype)
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.uint8)


def _cuts(draw, n: int) -> list[int]:
    """Random block boundaries 0 < ... < n."""
    inner = draw(st.lists(st.integers(1, max(1, n - 1)), max_size=4, unique=True))
    return sorted({0, n, *(c for c in inner if 0 < c < n)})


@st.composite
def layouts(draw):
    rows, cols = draw(st.integers(1, 40)), draw(st.integers(1, 40))
    chunks = (draw(st.integers(1, rows)), draw(st.integers(1, cols)))
    return {
        "shape": (rows, cols),
        "chunks": chunks,
        "dtype": draw(st.sampled_from(DTYPES)),
        "libver": draw(st.sampled_from(["earliest", "latest"])),
        # the chunk index HDF5 picks: fixed array, extensible array, v2 B-tree (or v1 B-tree)
        "maxshape": draw(st.sampled_from([None, (None, cols), (None, None)])),
        "early": draw(st.booleans()),  # allocate every chunk (implicit index with "latest")
        "written": draw(st.sampled_from(["all", "some", "none"])),
        "row_cuts": _cuts(draw, rows),
        "col_cuts": _cuts(draw, cols),
        "seed": draw(st.integers(0, 2**32 - 1)),
    }


def _write(path: Path, spec: dict) -> np.ndarray:
    """A chunked dataset ``x`` as the spec says; returns what was written (or None)."""
    rng = np.random.default_rng(spec["seed"])
    values = _random_values(rng, spec["shape"], spec["dtype"])
    with h5py.File(path, "w", libver=spec["libver"]) as f:
        kwargs = {}
        if spec["early"]:
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
            kwargs["dcpl"] = dcpl
        dset = f.create_dataset(
            "x", shape=spec["shape"], dtype=spec["dtype"], chunks=spec["chunks"],
            maxshape=spec["maxshape"], fillvalue=values.flat[0], **kwargs,
        )  # fmt: skip
        if spec["written"] == "all":
            dset[...] = values
        elif spec["written"] == "some":  # every other chunk row: the rest are not stored
            step = spec["chunks"][0]
            for start in range(0, spec["shape"][0], 2 * step):
                dset[start : start + step] = values[start : start + step]
    return values


@settings(max_examples=60, deadline=None)
@given(spec=layouts())
def test_every_block_of_a_chunked_dataset_is_what_h5py_reads(tmp_path_factory, spec):
    path = tmp_path_factory.mktemp("mapped") / "x.h5"
    _write(path, spec)
    rows, cols = spec["row_cuts"], spec["col_cuts"]
    with h5py.File(path) as f:
        dset = f["x"]
        layout = chunk_offsets(dset, spec["shape"], os.path.getsize(path))
        stored = {info.chunk_offset for info in _chunk_infos(dset)}
        blocks = {
            (r0, r1, c0, c1): dset[r0:r1, c0:c1]
            for r0, r1 in zip(rows, rows[1:], strict=False)
            for c0, c1 in zip(cols, cols[1:], strict=False)
        }
    if not stored:
        assert layout is None  # nothing stored: h5py gives the fill value
        return
    assert layout is not None
    assert (layout.offsets >= 0).sum() == len(stored)
    ch = spec["chunks"]
    for (r0, r1, c0, c1), want in blocks.items():
        got = read_mapped(os.fspath(path), np.dtype(spec["dtype"]), layout,
                          (slice(r0, r1), slice(c0, c1)))  # fmt: skip
        needed = {
            (i * ch[0], j * ch[1])
            for i in range(r0 // ch[0], (r1 - 1) // ch[0] + 1)
            for j in range(c0 // ch[1], (c1 - 1) // ch[1] + 1)
        }
        if needed <= stored:
            assert got is not None, "every chunk of the block is stored: it is mapped"
            assert got.dtype == np.dtype(spec["dtype"]) and got.shape == want.shape
            np.testing.assert_array_equal(_bits(got), _bits(want))
        else:
            assert got is None  # a chunk holds the fill value: h5py reads the block


def _chunk_infos(dset: h5py.Dataset) -> list:
    return [dset.id.get_chunk_info(i) for i in range(dset.id.get_num_chunks())]


@settings(max_examples=25, deadline=None)
@given(spec=layouts())
def test_read_hdf5_of_a_chunked_scores_file_is_what_h5py_reads(tmp_path_factory, spec):
    """End to end: a BOSARIS scores file with chunked matrices, read in random dask chunks."""
    rows, cols = spec["shape"]
    rng = np.random.default_rng(spec["seed"])
    path = tmp_path_factory.mktemp("mapped") / "s.h5"
    scores = rng.normal(size=(rows, cols)).astype(spec["dtype"] if "f" in spec["dtype"] else "<f8")
    mask = (rng.random((rows, cols)) < 0.7).astype(np.uint8)
    with h5py.File(path, "w", libver=spec["libver"]) as f:
        f.create_dataset("scores", data=scores, chunks=spec["chunks"], maxshape=spec["maxshape"])
        f.create_dataset("score_mask", data=mask, chunks=spec["chunks"])
        f["ID/row_ids"] = np.array([f"m{i}".encode() for i in range(rows)])
        f["ID/column_ids"] = np.array([f"s{j}".encode() for j in range(cols)])
    row_chunks = tuple(np.diff(spec["row_cuts"]))
    col_chunks = tuple(np.diff(spec["col_cuts"]))
    back = io.read_hdf5(path, chunks=(row_chunks, col_chunks))
    score, got_mask = dask.compute(back.score.data, back.score_mask.data, scheduler="threads")
    np.testing.assert_array_equal(_bits(score), _bits(np.where(mask != 0, scores, 0)))
    np.testing.assert_array_equal(got_mask, mask != 0)


def _row_chunked(tmp_path: Path, **kwargs) -> tuple[Path, np.ndarray]:
    values = np.arange(10 * 6, dtype="<f8").reshape(10, 6)
    path = tmp_path / "rows.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=values, chunks=(3, 6), **kwargs)
    return path, values


def test_blocks_in_one_run_of_bytes_are_views_others_are_assembled(tmp_path):
    path, values = _row_chunked(tmp_path)
    with h5py.File(path) as f:
        layout = chunk_offsets(f["x"], (10, 6), os.path.getsize(path))
    assert layout.offsets.shape == (4, 1)
    assert (np.diff(layout.offsets.ravel()) == 3 * 6 * 8).all()  # h5py writes them in order
    read = lambda key: read_mapped(os.fspath(path), np.dtype("<f8"), layout, key)  # noqa: E731
    for key in [
        (slice(0, 3), slice(0, 6)),  # one chunk
        (slice(1, 2), slice(2, 5)),  # inside one chunk
        (slice(2, 10), slice(0, 6)),  # across chunks one after another, edge chunk included
        (slice(9, 10), slice(5, 6)),  # in the edge chunk
    ]:
        got = read(key)
        np.testing.assert_array_equal(got, values[key])
        assert not got.flags.writeable and not got.flags.owndata  # a view of the map
    # chunks not in file order: each block across them is assembled (a new array)
    with h5py.File(path, "r+") as f:
        del f["x"]
        dset = f.create_dataset("x", shape=(10, 6), dtype="<f8", chunks=(3, 6))
        for start in (9, 6, 3, 0):  # the last rows first
            dset[start : start + 3] = values[start : start + 3]
        layout = chunk_offsets(dset, (10, 6), os.path.getsize(path))
    assert (np.diff(layout.offsets.ravel()) < 0).all()
    got = read((slice(2, 10), slice(1, 6)))
    np.testing.assert_array_equal(got, values[2:10, 1:6])
    assert got.flags.owndata


@pytest.mark.parametrize(
    "kwargs",
    [
        {"compression": "gzip"},
        {"compression": "lzf"},
        {"shuffle": True},
        {"fletcher32": True},
        {"scaleoffset": 2},
    ],
    ids=["gzip", "lzf", "shuffle", "fletcher32", "scaleoffset"],
)
def test_filtered_datasets_are_read_by_h5py(tmp_path, kwargs):
    path, values = _row_chunked(tmp_path, **kwargs)
    with h5py.File(path) as f:
        assert chunk_offsets(f["x"], (10, 6), os.path.getsize(path)) is None
    _bosaris(path)
    back = io.read_hdf5(path, chunks=(4, 5))
    np.testing.assert_array_equal(back.score.values, np.round(values, 2))


def _bosaris(path: Path) -> None:
    """Make the file a BOSARIS scores file: ``/x`` as ``/scores``, all trials, ids."""
    with h5py.File(path, "r+") as f:
        f.move("x", "scores")
        rows, cols = f["scores"].shape
        f["score_mask"] = np.ones((rows, cols), np.uint8)
        f["ID/row_ids"] = np.array([f"m{i}".encode() for i in range(rows)])
        f["ID/column_ids"] = np.array([f"s{j}".encode() for j in range(cols)])


def test_big_endian_and_too_many_chunks_are_read_by_h5py(tmp_path):
    path = tmp_path / "be.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(12, dtype=">f8").reshape(3, 4), chunks=(1, 4))
        f.create_dataset("y", data=np.arange(12, dtype="<f8").reshape(3, 4), chunks=(1, 1))
        size = os.path.getsize(path)
        assert chunk_offsets(f["x"], (3, 4), size) is None
        assert chunk_offsets(f["y"], (3, 4), size, max_chunks=11) is None
        assert chunk_offsets(f["y"], (3, 4), size, max_chunks=12) is not None


def test_a_chunked_file_cut_short_is_an_error_naming_it(tmp_path):
    path, _ = _row_chunked(tmp_path)
    _bosaris(path)
    back = io.read_hdf5(path, chunks=(3, 6))
    with h5py.File(path) as f:
        last = max(info.byte_offset for info in _chunk_infos(f["scores"]))
        layout = chunk_offsets(f["scores"], (10, 6), os.path.getsize(path))
    with open(path, "r+b") as fh:  # the file shrinks after it was opened
        fh.truncate(last + 8)
    with pytest.raises(ValueError, match=f"ends at byte {last + 8}, before its chunk ending"):
        read_mapped(os.fspath(path), np.dtype("<f8"), layout, (slice(9, 10), slice(0, 6)))
    with pytest.raises(StoreError, match=r"rows\.h5: the file was replaced or changed after"):
        back.score.values  # noqa: B018 (its stamp tells, before the map would)
    # opened when already cut: the chunks past the end are not mapped
    with h5py.File(path) as f:
        layout = chunk_offsets(f["scores"], (10, 6), os.path.getsize(path))
    assert layout is not None and layout.offsets[-1, 0] == -1 and (layout.offsets[:-1] >= 0).all()


def test_chunk_maps_pickle_with_the_lazy_array(tmp_path):
    """A worker process gets the chunk table with the task and maps the chunks itself."""
    import pickle

    path, values = _row_chunked(tmp_path)
    _bosaris(path)
    back = io.read_hdf5(path, chunks=(4, 5))
    clone = pickle.loads(pickle.dumps(back.score.data))
    np.testing.assert_array_equal(clone.compute(scheduler="sync"), values)
    layouts = [v._mapped for v in clone.dask.values() if hasattr(v, "_mapped")]
    chunked = [lay for lay in layouts if isinstance(lay, ChunkOffsets)]  # the mask: contiguous
    assert len(chunked) == 1 and chunked[0].chunks == (3, 6)
