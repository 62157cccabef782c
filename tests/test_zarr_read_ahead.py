"""Reading ahead the next chunk files of an uncompressed zarr store (``bosaris_dask.read-ahead``).

The hint changes no value read; it asks the kernel (``posix_fadvise(WILLNEED)``, recorded here
by a stand-in) for the files of the chunks after the one read, in C order, in pieces covering
each file, and only for files not already in the page cache.
"""

from __future__ import annotations

import os
from pathlib import Path

import dask
import numpy as np
import pytest

from bosaris_dask import io
from bosaris_dask.errors import OptionError
from bosaris_dask.io import zarr_store
from bosaris_dask.trials import make_scores

ROWS, COLS = 23, 7


@pytest.fixture
def store(tmp_path) -> tuple[Path, np.ndarray]:
    rng = np.random.default_rng(3)
    score = rng.normal(size=(ROWS, COLS)).astype(np.float32)
    obj = make_scores([f"m{i}" for i in range(ROWS)], [f"s{j}" for j in range(COLS)], score)
    path = io.write_zarr(obj, tmp_path / "s.zarr", chunk_mb=4 * COLS * 4 / 2**20)  # 4-row chunks
    return path, score


@pytest.fixture
def advised(monkeypatch) -> list[tuple[str, int, int]]:
    """``(file, offset, length)`` of every WILLNEED hint, none given to the kernel; no file
    counts as cached."""
    calls: list[tuple[str, int, int]] = []

    def fadvise(fd: int, offset: int, length: int, advice: int) -> None:
        assert advice == os.POSIX_FADV_WILLNEED
        calls.append((os.readlink(f"/proc/self/fd/{fd}"), offset, length))

    monkeypatch.setattr(os, "posix_fadvise", fadvise)
    monkeypatch.setattr(zarr_store, "_cached", lambda fd, offset: False)
    monkeypatch.setattr(zarr_store, "_AHEAD_PIECE", 40)  # several pieces per 112-byte file
    return calls


def _chunk_file(path: Path, i: int) -> str:
    return os.fspath((path / "score" / "c" / str(i) / "0").resolve())


@pytest.mark.parametrize("ahead", [0, 1, 2, 5])
def test_each_chunk_read_asks_for_the_next_files_in_pieces(store, advised, ahead):
    path, score = store
    with dask.config.set({"bosaris_dask.read-ahead": ahead}):
        back = io.read_zarr(path)
    assert back.score.data.chunks[0] == (4, 4, 4, 4, 4, 3)
    block = back.score.data.blocks[1, 0].compute(scheduler="sync")
    np.testing.assert_array_equal(block, score[4:8])
    size = 4 * COLS * 4
    want = [(_chunk_file(path, i), start, 40) for i in range(2, min(2 + ahead, 6))
            for start in range(0, size, 40)]  # fmt: skip
    assert advised == want
    advised.clear()
    back.score.data.blocks[5, 0].compute(scheduler="sync")  # the last chunk: nothing after it
    assert advised == []


def test_files_in_the_page_cache_or_absent_are_not_asked_for(store, advised, monkeypatch):
    path, _ = store
    monkeypatch.setattr(zarr_store, "_cached", lambda fd, offset: True)
    io.read_zarr(path).score.data.blocks[0, 0].compute(scheduler="sync")
    assert advised == []
    monkeypatch.setattr(zarr_store, "_cached", lambda fd, offset: False)
    with dask.config.set({"bosaris_dask.read-ahead": 2}):
        back = io.read_zarr(path)
    os.remove(_chunk_file(path, 1))  # after opening: the hint skips it, its own task fails
    back.score.data.blocks[0, 0].compute(scheduler="sync")
    assert {f for f, _, _ in advised} == {_chunk_file(path, 2)}


def test_values_are_the_same_with_and_without_read_ahead(store):
    path, score = store
    for ahead in (0, 2, 64):
        with dask.config.set({"bosaris_dask.read-ahead": ahead}):
            got = io.read_zarr(path).score.values
        np.testing.assert_array_equal(got.view(np.uint32), score.view(np.uint32))


def test_cached_sees_a_file_just_written(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10_000)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert zarr_store._cached(fd, 9_999) in (True, False)  # never raises
        os.read(fd, 10_000)
        if hasattr(os, "RWF_NOWAIT"):
            assert zarr_store._cached(fd, 9_999)
    finally:
        os.close(fd)


def test_the_knob_is_checked():
    with (
        dask.config.set({"bosaris_dask.read-ahead": -1}),
        pytest.raises(OptionError, match="read-ahead must be an integer from 0 to 64"),
    ):
        from bosaris_dask import config

        config.get("read-ahead")
