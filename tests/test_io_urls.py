"""Zarr stores read through fsspec URLs (here fsspec's in-memory file system)."""

from __future__ import annotations

import fsspec
import numpy as np
import pytest
import xarray as xr

from bosaris_dask import io, metrics
from bosaris_dask.errors import StoreError, StoreNotFoundError
from bosaris_dask.simulate import simulate


@pytest.fixture
def stores(tmp_path):
    """A key and scores written locally, then copied under memory://<unique>/."""
    key, (scores,) = simulate(60, 80, systems=1, target_rate=0.05, seed=1, chunks=(20, 80))
    io.write(key, tmp_path / "key.zarr")
    io.write(scores, tmp_path / "s.zarr", chunk_mb=0.005)
    fs = fsspec.filesystem("memory")
    root = f"/{tmp_path.name}"
    for name in ("key.zarr", "s.zarr"):
        fs.put(str(tmp_path / name), f"{root}/{name}", recursive=True)
    yield tmp_path, f"memory://{tmp_path.name}", fs, root
    fs.rm(root, recursive=True)


def test_url_store_reads_and_evaluates_like_the_local_one(stores):
    local, url, _, _ = stores
    remote = io.read(f"{url}/s.zarr", "scores")
    np.testing.assert_array_equal(remote.score.values, io.read(local / "s.zarr").score.values)
    assert remote.score.data.npartitions == 3
    got = metrics.evaluate(remote, io.read(f"{url}/key.zarr"))
    expected = metrics.evaluate(io.read(local / "s.zarr"), io.read(local / "key.zarr"))
    xr.testing.assert_identical(got, expected)


def test_missing_chunk_behind_a_url_is_an_error(stores):
    _, url, fs, root = stores
    chunk = next(p for p in fs.find(f"{root}/s.zarr/score") if "/c/" in p)
    fs.rm(chunk)
    with pytest.raises(StoreError, match="array 'score' has 1 of its 3 chunks missing"):
        io.read(f"{url}/s.zarr")


def test_url_errors_are_clear(stores):
    _, url, _, _ = stores
    with pytest.raises(StoreNotFoundError, match="no such zarr store"):
        io.read(f"{url}/nope.zarr")
    with pytest.raises(StoreError, match="only zarr stores can be read from a URL"):
        io.read(f"{url}/scores.txt")
    with pytest.raises(StoreError, match="writing to a URL is not supported"):
        io.write(io.read(f"{url}/s.zarr"), f"{url}/copy.zarr")


def test_file_urls_are_local_paths(stores):
    local, _, _, _ = stores
    via_url = io.read(f"file://{local / 's.zarr'}")
    np.testing.assert_array_equal(via_url.score.values, io.read(local / "s.zarr").score.values)


def test_absent_chunks_of_a_foreign_store_behind_a_url_read_as_fill(tmp_path):
    """A store written by xarray (no bosaris_store_version) skips chunks of zeros: behind a
    URL too they read as no trials, while our own stores' missing chunks stay errors."""
    import warnings

    from bosaris_dask.trials import make_key

    codes = np.zeros((6, 4), dtype=np.int8)
    codes[0, 0], codes[1, 3] = 1, -1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # xarray's note on consolidated metadata
        make_key([f"m{i}" for i in range(6)], list("abcd"), codes, chunks=(2, 4)).to_zarr(
            tmp_path / "key.zarr"
        )
    fs = fsspec.filesystem("memory")
    root = f"/{tmp_path.name}-foreign"
    fs.put(str(tmp_path / "key.zarr"), f"{root}/key.zarr", recursive=True)
    try:
        stored = [p for p in fs.find(f"{root}/key.zarr/trial_mask") if "/c/" in p]
        assert len(stored) == 1
        key = io.read(f"memory://{root.lstrip('/')}/key.zarr")
        assert key.trial_mask.values.tolist() == codes.tolist()
    finally:
        fs.rm(root, recursive=True)
