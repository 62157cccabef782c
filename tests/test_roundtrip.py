"""Text -> zarr -> HDF5 -> text keeps every id, mask and score exactly."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from bosaris_dask import io
from bosaris_dask.trials import make_key, make_ndx, make_scores

MODELS = ["m1", "m10", "m1a", "ünïcødé", "话者", "m"]  # prefixes of each other, unicode
SEGMENTS = ["s", "s1", "s10", "seg-β", "s1.wav", "x/y"]


def _objects():
    rng = np.random.default_rng(0)
    mask = rng.choice(np.array([-1, 0, 1], dtype=np.int8), size=(6, 6))
    scored = rng.random((6, 6)) > 0.3
    values = rng.normal(size=(6, 6)) * 10.0 ** rng.integers(-300, 300, size=(6, 6))
    values[0, 0], values[1, 1] = 5e-324, -1.7976931348623157e308
    scored[0, 0] = scored[1, 1] = True
    values = np.where(scored, values, 0.0)
    return {
        "key": make_key(MODELS, SEGMENTS, mask),
        "ndx": make_ndx(MODELS, SEGMENTS, mask != 0),
        "scores": make_scores(MODELS, SEGMENTS, values, scored),
    }


@pytest.mark.parametrize("kind", ["key", "ndx", "scores"])
def test_text_zarr_hdf5_text(kind, tmp_path):
    original = _objects()[kind]
    io.write(original, tmp_path / "a.txt")
    first_lines = sorted((tmp_path / "a.txt").read_text().splitlines())
    from_text = io.read(tmp_path / "a.txt", kind)
    io.write(from_text, tmp_path / "b.zarr")
    io.write(io.read(tmp_path / "b.zarr"), tmp_path / "c.h5")
    back = io.read(tmp_path / "c.h5", kind)
    io.write(back, tmp_path / "d.txt")
    # ids come back in order of first appearance, so lines may be ordered differently
    assert sorted((tmp_path / "d.txt").read_text().splitlines()) == first_lines
    # text lists only trials, so ids without any trial are not in it; compare on its ids
    expected = original.sel(model=from_text.model.values, segment=from_text.segment.values)
    for name in expected.data_vars:
        np.testing.assert_array_equal(back[name].values, expected[name].values)
    assert back.model.values.tolist() == from_text.model.values.tolist()
    xr.testing.assert_equal(back.compute(), from_text.compute())
