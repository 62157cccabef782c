"""Tests of the binary stores (zarr, BOSARIS HDF5), atomic writes and the I/O dispatcher."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import dask
import dask.array as da
import h5py
import numpy as np
import pandas as pd
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask import io
from bosaris_dask.errors import OptionError, StoreError, StoreNotFoundError, TrialError
from bosaris_dask.io import atomic, compute, hdf5
from bosaris_dask.progress import current_client
from bosaris_dask.trials import (
    is_label_key,
    key_from_labels,
    kind_of,
    make_key,
    make_ndx,
    make_quality,
    make_scores,
    quality_table,
)

MODELS = ["a", "ab", "a b", "é", "日本語", "m\tx", "A"]  # prefixes, space, unicode, tab, case
SEGMENTS = ["s", "s1", "s10", "s1 ", "ß", "segment-with-a-rather-long-name"]


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _key_matrix(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    return rng.integers(-1, 2, size=shape).astype(np.int8)


def _objects(rng: np.random.Generator) -> dict[str, tuple]:
    """name -> (object, expected arrays by variable) for every kind and score dtype."""
    shape = (len(MODELS), len(SEGMENTS))
    mask = rng.random(shape) < 0.7
    key = _key_matrix(rng, shape)
    s64 = rng.normal(size=shape) * 10.0 ** rng.integers(-30, 30, size=shape)
    s32 = rng.normal(size=shape).astype(np.float32)
    return {
        "ndx": (make_ndx(MODELS, SEGMENTS, mask, chunks=(3, 4)), {"trial_mask": mask}),
        "key": (make_key(MODELS, SEGMENTS, key, chunks=(2, 5)), {"trial_mask": key}),
        "scores64": (
            make_scores(MODELS, SEGMENTS, s64, mask, chunks=(4, 3)),
            {"score": s64, "score_mask": mask},
        ),
        "scores32": (make_scores(MODELS, SEGMENTS, s32, mask), {"score": s32, "score_mask": mask}),
    }


def _assert_ids(obj, models=MODELS, segments=SEGMENTS) -> None:
    assert obj.model.values.dtype == object and obj.segment.values.dtype == object
    assert obj.model.values.tolist() == list(models)
    assert obj.segment.values.tolist() == list(segments)
    assert all(type(i) is str for i in obj.model.values)


def _chunk_files(store: Path, name: str) -> list[Path]:
    return sorted(p for p in (store / name).rglob("*") if p.is_file() and p.name != "zarr.json")


# --------------------------------------------------------------------------------------------
# zarr
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ndx", "key", "scores64", "scores32"])
def test_zarr_round_trip_is_exact_lazy_and_warning_free(tmp_path, name):
    obj, expected = _objects(_rng())[name]
    path = tmp_path / "out.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # zarr's fixed-length unicode warning among others
        io.write_zarr(obj, path, chunk_mb=1e-4)
        back = io.read_zarr(path)
        for var, values in expected.items():
            assert isinstance(back[var].data, da.Array)
            got = back[var].values
            assert got.dtype == values.dtype
            np.testing.assert_array_equal(got, values)
    _assert_ids(back)
    assert back.attrs == {"bosaris_kind": obj.attrs["bosaris_kind"]}
    meta = json.loads((path / "model" / "zarr.json").read_text())
    assert meta["data_type"] == "string"  # variable-length, not the fixed-length extension
    # any zarr reader sees the ids as plain strings
    assert zarr.open_array(path / "segment", mode="r")[:].tolist() == SEGMENTS


def test_zarr_scores_uncompressed_nan_fill_and_big_row_chunks(tmp_path):
    rng = _rng(1)
    score = da.from_array(rng.normal(size=(300, 200)), chunks=(7, 13))  # irregular for zarr
    mask = da.from_array(rng.random((300, 200)) < 0.5, chunks=(50, 50))
    obj = make_scores(range(300), range(200), score, mask)
    path = io.write_zarr(obj, tmp_path / "s.zarr", chunk_mb=200 * 8 * 64 / 2**20)
    meta = json.loads((path / "score" / "zarr.json").read_text())
    assert [c["name"] for c in meta["codecs"]] == ["bytes"]  # no compressor
    assert meta["fill_value"] == "NaN"
    assert meta["chunk_grid"]["configuration"]["chunk_shape"] == [64, 200]  # full rows
    mask_meta = json.loads((path / "score_mask" / "zarr.json").read_text())
    assert mask_meta["chunk_grid"]["configuration"]["chunk_shape"] == [64, 200]
    back = io.read_zarr(path)
    assert back.score.data.chunks == ((64, 64, 64, 64, 44), (200,))
    np.testing.assert_array_equal(back.score.values, score.compute())
    np.testing.assert_array_equal(back.score_mask.values, mask.compute())
    rechunked = io.read_zarr(path, chunks=(100, 100))
    assert rechunked.score.data.chunks == ((100, 100, 100), (100, 100))


def test_zarr_keeps_regular_dask_chunks_of_a_good_size(tmp_path):
    obj = make_scores(range(40), range(30), np.ones((40, 30)), chunks=(10, 30))
    path = io.write_zarr(obj, tmp_path / "s.zarr", chunk_mb=10 * 30 * 8 / 2**20)
    assert io.read_zarr(path).score.data.chunks == ((10,) * 4, (30,))


def test_plan_chunks_sizes():
    assert compute.plan_chunks((1000, 1000), 8, chunk_mb=1) == (131, 1000)
    r, c = compute.plan_chunks((10**5, 10**7), 8, chunk_mb=1)
    assert c < 10**7 and r * c * 8 <= 2**20 and r * c * 8 > 0.9 * 2**20
    assert compute.plan_chunks((3, 4), 1) == (3, 4)


def test_zarr_label_key_is_stored_as_labels_only(tmp_path):
    ml = np.array(["spk1", "spk2", None, "spk1"], dtype=object)
    sl = np.array(["spk2", "spk1", "spk3"], dtype=object)
    key = key_from_labels(["m1", "m2", "m3", "m4"], ml, ["s1", "s2", "s3"], sl, chunks=(2, 2))
    path = io.write_zarr(key, tmp_path / "k.zarr")
    assert sorted(p.name for p in path.iterdir()) == [
        "model",
        "model_label",
        "model_label_missing",
        "segment",
        "segment_label",
        "zarr.json",
    ]
    back = io.read_zarr(path)
    assert is_label_key(back)
    expected = np.array([[-1, 1, -1], [1, -1, -1], [0, 0, 0], [-1, 1, -1]], dtype=np.int8)
    np.testing.assert_array_equal(back.trial_mask.values, expected)
    assert back.model_label.values[[0, 1, 3]].tolist() == ["spk1", "spk2", "spk1"]
    assert pd.isna(back.model_label.values[2])
    assert back.segment_label.values.tolist() == sl.tolist()
    # the generated mask follows the chunks asked for
    assert io.read_zarr(path, chunks=(3, 1)).trial_mask.data.chunks == ((3, 1), (1, 1, 1))


@pytest.mark.parametrize(
    "ml, sl",
    [
        ([1, 2, 3], [3, 2]),  # integers
        ([1.5, np.nan, 2.0], [2.0, 1.5]),  # floats with a missing label
        (["x", 3, None], [3, "x"]),  # mixed types: stored as strings, still the same classes
    ],
)
def test_zarr_label_types_keep_the_same_trial_classes(tmp_path, ml, sl):
    key = key_from_labels(["m1", "m2", "m3"], ml, ["s1", "s2"], sl)
    back = io.read_zarr(io.write_zarr(key, tmp_path / "k.zarr"))
    assert is_label_key(back)
    np.testing.assert_array_equal(back.trial_mask.values, key.trial_mask.values)


def test_zarr_mixed_labels_that_collide_as_strings_are_refused(tmp_path):
    key = key_from_labels(["m1", "m2"], [1, "1"], ["s1"], ["1"])
    with pytest.raises(StoreError, match="collide"):
        io.write_zarr(key, tmp_path / "k.zarr")
    assert not (tmp_path / "k.zarr").exists()


def test_a_zarr_store_that_leaves_out_a_mask_it_holds_is_refused(tmp_path):
    # its mask was ignored: the cells without a score became scores of 0.0
    path = io.write_zarr(make_scores(["m"], ["a", "b"], [[1.0, 2.0]], [[True, False]]),
                         tmp_path / "s.zarr")  # fmt: skip
    zarr.open_group(path, mode="r+").attrs["bosaris_all_true"] = ["score_mask"]
    with pytest.raises(StoreError, match=r"bosaris_all_true says score_mask is all true and "
                       r"left out, but the store has a score_mask array"):  # fmt: skip
        io.read_zarr(path)


def test_zarr_all_true_masks_are_not_stored(tmp_path):
    dense = make_ndx(["m1", "m2"], ["s1", "s2", "s3"])  # a da.ones graph: known without a pass
    scores_true = make_scores(["m"], ["a", "b"], np.array([[1.0, 2.0]]), np.ones((1, 2), bool))
    scores_some = make_scores(["m"], ["a", "b"], np.array([[1.0, 2.0]]), [[True, False]])
    for obj, name, omitted in [
        (dense, "n.zarr", "trial_mask"),
        (scores_true, "t.zarr", "score_mask"),  # checked after writing
        (scores_some, "f.zarr", None),
    ]:
        path = io.write_zarr(obj, tmp_path / name)
        stored = {p.name for p in path.iterdir()}
        attrs = zarr.open_group(path, mode="r").attrs["bosaris_all_true"]
        assert (omitted not in stored) if omitted else ("score_mask" in stored)
        assert attrs == ([omitted] if omitted else [])
        back = io.read_zarr(path)
        for var in obj.data_vars:
            np.testing.assert_array_equal(back[var].values, obj[var].values)
    back = io.read_zarr(tmp_path / "t.zarr")
    assert back.score_mask.data.chunks == back.score.data.chunks
    kept = io.write_zarr(scores_true, tmp_path / "kept.zarr", omit_true_masks=False)
    assert (kept / "score_mask").is_dir()
    # a mask known all true without a pass (da.ones) was left out whatever the option said
    for obj, mask in ((dense, "trial_mask"), (make_scores(["m"], ["a"], [[1.0]]), "score_mask")):
        kept = io.write_zarr(obj, tmp_path / f"kept-{mask}.zarr", omit_true_masks=False)
        assert (kept / mask).is_dir()
        assert zarr.open_group(kept, mode="r").attrs["bosaris_all_true"] == []


def test_zarr_quality_round_trip(tmp_path):
    q = make_quality(
        model_quality=quality_table(["m1", "m2"], [[0.5, 1.0], [0.25, 2.0]]),
        segment_quality=quality_table(["é", "s"], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),
    )
    back = io.read_zarr(io.write_zarr(q, tmp_path / "q.zarr"))
    assert back.attrs["bosaris_kind"] == "quality"
    np.testing.assert_array_equal(back.model_quality.values, q.model_quality.values)
    np.testing.assert_array_equal(back.segment_quality.values, q.segment_quality.values)
    assert back.segment.values.tolist() == ["é", "s"]


def test_zarr_quality_with_named_measures_has_no_unspecified_string_type(tmp_path):
    # numpy's fixed-width strings have no zarr v3 specification: zarr warned four times that
    # the store "may be unreadable by other Zarr libraries"
    q = make_quality(
        model_quality=quality_table(["m1"], [[0.5, 1.0]], measures=["snr", "duration"]),
        segment_quality=quality_table(["s1"], [[2.0, 3.0]], measures=["snr", "duration"]),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = io.read_zarr(io.write_zarr(q, tmp_path / "q.zarr"))
    for side in ("model", "segment"):
        assert back[f"{side}_measure"].values.tolist() == ["snr", "duration"]
        assert back[f"{side}_quality"].values.tolist() == q[f"{side}_quality"].values.tolist()


def _written_scores(directory: Path, name: str = "s.zarr") -> Path:
    """A 20 x 10 scores store in four chunks of 5 full rows."""
    rng = _rng(2)
    obj = make_scores(range(20), range(10), rng.normal(size=(20, 10)), rng.random((20, 10)) < 0.5)
    return io.write_zarr(obj, directory / name, chunk_mb=5 * 10 * 8 / 2**20)


def test_zarr_missing_chunk_is_a_store_error(tmp_path):
    path = _written_scores(tmp_path)
    chunks = _chunk_files(path, "score")
    assert len(chunks) == 4
    chunks[2].unlink()
    with pytest.raises(StoreError, match=r"'score' is missing chunk \(2, 0\)"):
        io.read_zarr(path)


def test_zarr_missing_mask_chunk_and_truncated_chunk(tmp_path):
    path = _written_scores(tmp_path)
    _chunk_files(path, "score_mask")[0].unlink()
    with pytest.raises(StoreError, match="'score_mask' is missing chunk"):
        io.read_zarr(path)
    path2 = _written_scores(tmp_path, "b.zarr")
    victim = _chunk_files(path2, "score")[1]
    victim.write_bytes(victim.read_bytes()[:-8])
    with pytest.raises(StoreError, match="has 392 bytes, expected 400"):
        io.read_zarr(path2)


def test_zarr_corrupt_metadata_and_layout_errors(tmp_path):
    path = _written_scores(tmp_path)
    (path / "zarr.json").write_text("{not json")
    with pytest.raises(StoreError, match=str(path)):
        io.read_zarr(path)

    path = _written_scores(tmp_path, "x.zarr")
    group = zarr.open_group(path, mode="r+")
    del group.attrs["bosaris_kind"]
    with pytest.raises(StoreError, match="not a bosaris_dask store"):
        io.read_zarr(path)

    path = _written_scores(tmp_path, "y.zarr")
    group = zarr.open_group(path, mode="r+")
    del group["model"]
    ids = group.create_array("model", shape=(19,), dtype=str, dimension_names=("model",))
    ids[:] = np.array([f"m{i}" for i in range(19)])
    with pytest.raises(StoreError, match="shape .20, 10. but there are 19 model ids"):
        io.read_zarr(path)

    path = _written_scores(tmp_path, "z.zarr")
    group = zarr.open_group(path, mode="r+")
    del group["score_mask"]
    with pytest.raises(StoreError, match="'score_mask' is missing"):
        io.read_zarr(path)

    path = _written_scores(tmp_path, "w.zarr")
    group = zarr.open_group(path, mode="r+")
    del group["score"]
    dims = ("model", "segment")
    bad = group.create_array("score", shape=(20, 10), dtype=np.int32, dimension_names=dims)
    bad[:] = 0
    with pytest.raises(StoreError, match="'score' has dtype int32"):
        io.read_zarr(path)


def test_zarr_corrupt_array_metadata_names_the_store(tmp_path):
    path = _written_scores(tmp_path)
    (path / "score_mask" / "zarr.json").write_text('{"zarr_format": 3, "node_type": "array"}')
    with pytest.raises(StoreError, match=str(path)):
        io.read_zarr(path)


def test_zarr_duplicate_ids_are_a_store_error(tmp_path):
    path = _written_scores(tmp_path)
    group = zarr.open_group(path, mode="r+")
    group["segment"][:] = np.array(["s"] * 10)
    with pytest.raises(StoreError, match="duplicate segment id 's'"):
        io.read_zarr(path)


# --------------------------------------------------------------------------------------------
# HDF5
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ndx", "key", "scores64", "scores32"])
def test_hdf5_round_trip(tmp_path, name):
    obj, expected = _objects(_rng(3))[name]
    path = io.write_hdf5(obj, tmp_path / "out.h5")
    back = io.read_hdf5(path)
    assert back.attrs["bosaris_kind"] == obj.attrs["bosaris_kind"]
    _assert_ids(back)
    for var, values in expected.items():
        assert isinstance(back[var].data, da.Array)
        got = back[var].values
        if var == "score":  # the BOSARIS layout stores double; masked-out scores become 0
            assert got.dtype == np.float64
            want = np.where(expected["score_mask"], values, 0).astype(np.float64)
            np.testing.assert_array_equal(got, want)
        else:
            assert got.dtype == values.dtype
            np.testing.assert_array_equal(got, values)


def test_hdf5_layout_written(tmp_path):
    objs = _objects(_rng(4))
    io.write_hdf5(objs["key"][0], tmp_path / "k.h5")
    io.write_hdf5(objs["ndx"][0], tmp_path / "n.h5")
    io.write_hdf5(objs["scores32"][0], tmp_path / "s.h5")
    with h5py.File(tmp_path / "k.h5") as f:
        assert sorted(f) == ["ID", "file_format", "trial_mask"]
        assert f["trial_mask"].dtype == np.int8 and f["trial_mask"].shape == (7, 6)
        assert f["trial_mask"].compression is None and f["trial_mask"].chunks is None
        assert f["file_format"].asstr()[()] == "2.0"
        ids = f["ID/row_ids"]
        info = h5py.check_string_dtype(ids.dtype)
        assert info.length is not None and info.encoding == "utf-8"  # fixed length
        assert ids.id.get_type().get_strpad() == h5py.h5t.STR_NULLTERM
        assert ids.asstr()[()].tolist() == MODELS
        np.testing.assert_array_equal(f["trial_mask"][()], objs["key"][1]["trial_mask"])
    with h5py.File(tmp_path / "n.h5") as f:
        assert sorted(f) == ["ID", "trial_mask"] and f["trial_mask"].dtype == np.uint8
    with h5py.File(tmp_path / "s.h5") as f:
        assert sorted(f) == ["ID", "score_mask", "scores"]
        assert f["scores"].dtype == np.float64 and f["score_mask"].dtype == np.uint8
        mask = objs["scores32"][1]["score_mask"]
        assert (f["scores"][()][~mask] == 0).all()
        np.testing.assert_array_equal(f["score_mask"][()], mask.astype(np.uint8))


def test_hdf5_label_key_is_written_as_a_full_mask(tmp_path):
    key = key_from_labels(["m1", "m2"], ["x", "y"], ["s1", "s2", "s3"], ["y", "x", "z"])
    path = io.write_hdf5(key, tmp_path / "k.h5")
    with h5py.File(path) as f:
        np.testing.assert_array_equal(f["trial_mask"][()], [[-1, 1, -1], [1, -1, -1]])
    back = io.read_hdf5(path)
    assert not is_label_key(back)
    np.testing.assert_array_equal(back.trial_mask.values, key.trial_mask.values)


def test_hdf5_streams_many_blocks(tmp_path):
    rng = _rng(5)
    score = rng.normal(size=(50, 40))
    mask = rng.random((50, 40)) < 0.8
    obj = make_scores(range(50), range(40), score, mask)
    path = io.write_hdf5(obj, tmp_path / "s.h5", chunk_mb=3 * 40 * 8 / 2**20)
    back = io.read_hdf5(path, chunks=(7, 40))
    np.testing.assert_array_equal(back.score.values, np.where(mask, score, 0))
    np.testing.assert_array_equal(back.score_mask.values, mask)
    assert back.score.data.chunks[0][:2] == (7, 7)


def _write_hand(path: Path, datasets: dict) -> Path:
    with h5py.File(path, "w") as f:
        for name, value in datasets.items():
            f[name] = value
    return path


def test_hdf5_reads_fixed_nul_padded_2d_ids(tmp_path):
    rows = np.array([[b"m1\x00\x00"], [b"m\xc3\xa9"]], dtype="S4")  # (n, 1), NUL padded
    cols = np.array([[b"s1", b"s2", b"s3"]], dtype="S3")  # (1, n)
    mask = np.array([[1, 0, 1], [0, 1, 1]], dtype=np.uint8)
    path = _write_hand(
        tmp_path / "n.h5", {"trial_mask": mask, "ID/row_ids": rows, "ID/column_ids": cols}
    )
    ndx = io.read_hdf5(path)
    assert ndx.attrs["bosaris_kind"] == "ndx"
    _assert_ids(ndx, ["m1", "mé"], ["s1", "s2", "s3"])
    np.testing.assert_array_equal(ndx.trial_mask.values, mask.astype(bool))


def test_hdf5_reads_variable_length_ids_and_sidekit_scores(tmp_path):
    vlen = h5py.string_dtype()
    score = np.array([[0.5, np.inf], [-1.0, 2.0]])
    path = _write_hand(
        tmp_path / "s.h5",
        {
            "scores": score,
            "score_mask": np.array([[1, 0], [1, 1]], dtype=np.int8),  # as SIDEKIT wrote it
            "ID/row_ids": np.array(["mé", "m2"], dtype=vlen),
            "ID/column_ids": np.array([b"s1", b"s2"], dtype=h5py.string_dtype("ascii")),
        },
    )
    scores = io.read_hdf5(path)
    _assert_ids(scores, ["mé", "m2"], ["s1", "s2"])
    np.testing.assert_array_equal(scores.score.values, [[0.5, 0.0], [-1.0, 2.0]])
    np.testing.assert_array_equal(scores.score_mask.values, [[True, False], [True, True]])


def test_hdf5_reads_sidekit_files_with_their_id_sets(tmp_path):
    # SIDEKIT's Key/Ndx/Scores.write: /modelset and /segset (bytes, gzip + fletcher32), int8 masks
    sets = {"modelset": np.array([b"m1", b"m2"]), "segset": np.array([b"a", b"b", b"c"])}
    signs = np.array([[1, -1, 0], [0, 1, -1]], dtype=np.int8)
    key = io.read_hdf5(_write_hand(tmp_path / "k.h5", {"trial_mask": signs, **sets}))
    assert key.attrs["bosaris_kind"] == "key"
    _assert_ids(key, ["m1", "m2"], ["a", "b", "c"])
    np.testing.assert_array_equal(key.trial_mask.values, signs)

    trials = np.array([[1, 0, 1], [0, 1, 1]], dtype=np.int8)
    ndx = io.read_hdf5(_write_hand(tmp_path / "n.h5", {"trial_mask": trials, **sets}), "ndx")
    np.testing.assert_array_equal(ndx.trial_mask.values, trials.astype(bool))

    score = np.array([[0.5, 7.0, -1.0], [2.0, 3.0, 4.0]])
    mask = np.array([[1, 0, 1], [1, 1, 0]], dtype=np.int8)
    typo = {"modelset": sets["modelset"], "segest": sets["segset"]}  # as one release wrote it
    for name, ids in (("s.h5", sets), ("typo.h5", typo)):
        scores = io.read_hdf5(
            _write_hand(tmp_path / name, {"scores": score, "score_mask": mask, **ids})
        )
        _assert_ids(scores, ["m1", "m2"], ["a", "b", "c"])
        np.testing.assert_array_equal(scores.score.values, np.where(mask, score, 0.0))
    with pytest.raises(StoreError, match=r"dataset /ID/row_ids is missing"):
        io.read_hdf5(_write_hand(tmp_path / "no.h5", {"trial_mask": signs}))


def test_hdf5_reads_the_old_key_format_and_float_masks(tmp_path):
    tar = np.array([[1, 0, 0], [0, 0, 1]], dtype=np.uint8)
    non = np.array([[0, 1, 0], [1, 0, 0]], dtype=np.uint8)
    ids = {"ID/row_ids": np.array([b"m1", b"m2"]), "ID/column_ids": np.array([b"a", b"b", b"c"])}
    old = _write_hand(tmp_path / "old.h5", {"target_mask": tar, "nontarget_mask": non, **ids})
    key = io.read_hdf5(old)
    assert key.attrs["bosaris_kind"] == "key"
    np.testing.assert_array_equal(key.trial_mask.values, [[1, -1, 0], [-1, 0, 1]])

    both = _write_hand(tmp_path / "both.h5", {"target_mask": tar, "nontarget_mask": tar, **ids})
    with pytest.raises(StoreError, match="both /target_mask and /nontarget_mask"):
        io.read_hdf5(both).trial_mask.values  # noqa: B018

    floats = np.array([[0.9, -0.8, 0.1], [-1.0, 0.0, 1.0]])
    fl = _write_hand(tmp_path / "f.h5", {"trial_mask": floats, "file_format": b"2.0", **ids})
    np.testing.assert_array_equal(io.read_hdf5(fl).trial_mask.values, [[1, -1, 0], [-1, 0, 1]])
    ambiguous = _write_hand(tmp_path / "a.h5", {"trial_mask": floats, **ids})
    with pytest.raises(StoreError, match=r"holds float64, neither a key.s int8 nor an ndx.s "
                       r"uint8: say which it is \(--kind key\|ndx"):  # fmt: skip
        io.read_hdf5(ambiguous)
    assert io.read_hdf5(ambiguous, "ndx").trial_mask.values.sum() == 5  # logical(): nonzero


def test_hdf5_one_by_one_matrix_as_a_scalar(tmp_path):
    path = _write_hand(
        tmp_path / "k.h5",
        {
            "trial_mask": np.int8(-1),
            "ID/row_ids": np.bytes_(b"m"),
            "ID/column_ids": np.array([b"s"]),
        },
    )
    key = io.read_hdf5(path)
    assert key.trial_mask.values.tolist() == [[-1]]


def test_hdf5_errors(tmp_path):
    ids = {"ID/row_ids": np.array([b"m1", b"m2"]), "ID/column_ids": np.array([b"a", b"b"])}
    mask = np.ones((2, 2), np.uint8)
    good = _write_hand(tmp_path / "good.h5", {"trial_mask": mask, **ids})

    numeric = _write_hand(
        tmp_path / "num.h5",
        {"trial_mask": mask, "ID/row_ids": np.array([1, 2]), "ID/column_ids": ids["ID/column_ids"]},
    )
    with pytest.raises(StoreError, match="/ID/row_ids holds int64, not strings"):
        io.read_hdf5(numeric)

    wrong = _write_hand(tmp_path / "shape.h5", {"trial_mask": np.ones((2, 3), np.uint8), **ids})
    with pytest.raises(StoreError, match=r"/trial_mask has shape \(2, 3\) but there are 2 row"):
        io.read_hdf5(wrong)

    dup = {"ID/row_ids": np.array([b"m", b"m"]), "ID/column_ids": ids["ID/column_ids"]}
    dups = _write_hand(tmp_path / "dup.h5", {"trial_mask": mask, **dup})
    with pytest.raises(StoreError, match="duplicate id 'm' in /ID/row_ids"):
        io.read_hdf5(dups)

    missing = _write_hand(tmp_path / "noids.h5", {"trial_mask": mask})
    with pytest.raises(StoreError, match="/ID/row_ids is missing"):
        io.read_hdf5(missing)

    truncated = tmp_path / "trunc.h5"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(StoreError, match=str(truncated)):
        io.read_hdf5(truncated)

    garbage = tmp_path / "garbage.h5"
    garbage.write_bytes(b"not an hdf5 file at all")
    with pytest.raises(StoreError, match="not a readable HDF5 file"):
        io.read_hdf5(garbage)

    with pytest.raises(StoreNotFoundError, match="nope.h5"):
        io.read_hdf5(tmp_path / "nope.h5")


def test_hdf5_lazy_arrays_pickle_and_reopen(tmp_path):
    obj, expected = _objects(_rng(6))["scores64"]
    path = io.write_hdf5(obj, tmp_path / "s.h5")
    back = io.read_hdf5(path, chunks=(2, 3))
    clone = pickle.loads(pickle.dumps(back.score.data))  # the open h5py.File is not pickled
    want = np.where(expected["score_mask"], expected["score"], 0)
    np.testing.assert_array_equal(clone.compute(scheduler="threads"), want)
    # deterministic graph names: reading twice gives the same keys
    assert io.read_hdf5(path, chunks=(2, 3)).score.data.name == back.score.data.name


@pytest.mark.slow
def test_hdf5_reads_and_writes_under_distributed(tmp_path, monkeypatch):
    from distributed import Client, LocalCluster

    rng = _rng(7)
    score = rng.normal(size=(60, 50))
    mask = rng.random((60, 50)) < 0.6
    path = io.write_hdf5(make_scores(range(60), range(50), score, mask), tmp_path / "s.h5")
    with (
        LocalCluster(
            n_workers=2,
            processes=True,
            threads_per_worker=1,
            dashboard_address=":0",
            host="127.0.0.1",
        ) as cluster,
        Client(cluster) as client,
    ):
        assert current_client() is client
        back = io.read_hdf5(path, chunks=(10, 50))
        total, count = dask.compute(back.score.sum(), back.score_mask.sum())
        pids = set(client.run(lambda: __import__("os").getpid()).values())
        monkeypatch.setattr(hdf5.write, "_BATCH_BYTES", 1)  # pull one block at a time from workers
        copy = io.write_hdf5(back, tmp_path / "copy.h5", chunk_mb=0.01)
    assert len(pids) == 2
    assert float(total) == pytest.approx(np.where(mask, score, 0).sum(), rel=1e-12)
    assert int(count) == mask.sum()
    np.testing.assert_array_equal(io.read_hdf5(copy).score.values, np.where(mask, score, 0))


def test_hdf5_quality_round_trip_and_variants(tmp_path):
    t = quality_table(["s1", "é"], [[0.1, 2.0, 3.0], [0.2, 5.0, 6.0]])
    path = io.write_quality_hdf5(t, tmp_path / "q.h5")
    with h5py.File(path) as f:
        assert f["values"].shape == (3, 2) and f["values"].dtype == np.float64
    back = io.read_quality_hdf5(path)
    assert back.dims == ("id", "measure")
    assert back.id.values.tolist() == ["s1", "é"]
    np.testing.assert_array_equal(back.values, t.values)
    assert io.read_quality(path).equals(back)

    one = _write_hand(tmp_path / "one.h5", {"values": np.array([1.0, 2.0]), "ids": [b"a", b"b"]})
    assert io.read_quality_hdf5(one).values.tolist() == [[1.0], [2.0]]
    bad = _write_hand(tmp_path / "bad.h5", {"values": np.ones((3, 4)), "ids": [b"a", b"b"]})
    with pytest.raises(StoreError, match=r"/values has shape \(3, 4\) for 2 ids"):
        io.read_quality_hdf5(bad)
    with pytest.raises(StoreError, match="read_quality"):
        io.read_hdf5(path)


@settings(max_examples=10, deadline=None)
@given(
    rows=st.integers(1, 9),
    cols=st.integers(1, 9),
    seed=st.integers(0, 2**16),
    chunk=st.integers(1, 5),
)
def test_random_matrices_round_trip_through_both_stores(rows, cols, seed, chunk):
    rng = _rng(seed)
    score = rng.normal(size=(rows, cols)).astype(rng.choice([np.float32, np.float64]))
    mask = rng.random((rows, cols)) < 0.5
    key = _key_matrix(rng, (rows, cols))
    models = [f"m{i}" for i in rng.permutation(rows)]
    segments = [f"é{i}" for i in rng.permutation(cols)]
    scores = make_scores(models, segments, score, mask, chunks=chunk)
    keyobj = make_key(models, segments, key, chunks=(chunk, chunk + 1))
    with tempfile.TemporaryDirectory() as d:
        for ext in ("zarr", "h5"):
            s = io.read(io.write(scores, f"{d}/s.{ext}", chunk_mb=chunk * 1e-4))
            k = io.read(io.write(keyobj, f"{d}/k.{ext}", chunk_mb=chunk * 1e-4))
            want = score if ext == "zarr" else np.where(mask, score, 0)
            np.testing.assert_array_equal(s.score.values, want)
            np.testing.assert_array_equal(s.score_mask.values, mask)
            np.testing.assert_array_equal(k.trial_mask.values, key)
            assert s.model.values.tolist() == models and k.segment.values.tolist() == segments


# --------------------------------------------------------------------------------------------
# atomic writes
# --------------------------------------------------------------------------------------------


def _boom(block: np.ndarray, block_info=None) -> np.ndarray:
    if block_info[0]["chunk-location"] == (1, 0):
        raise RuntimeError("disk full")
    return block


def _failing_scores() -> object:
    score = da.from_array(np.arange(40.0).reshape(8, 5), chunks=(4, 5)).map_blocks(
        _boom, dtype=np.float64
    )
    return make_scores(range(8), range(5), score)


@pytest.mark.parametrize("ext", ["zarr", "h5"])
def test_failed_write_leaves_nothing(tmp_path, ext):
    final = tmp_path / f"s.{ext}"
    with pytest.raises(RuntimeError, match="disk full"):
        io.write(_failing_scores(), final, chunk_mb=4 * 5 * 8 / 2**20)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("ext", ["zarr", "h5"])
def test_failed_replacement_keeps_the_previous_store(tmp_path, ext):
    final = tmp_path / f"s.{ext}"
    previous = make_scores(["x"], ["y", "z"], np.array([[1.0, 2.0]]))
    io.write(previous, final)
    with pytest.raises(RuntimeError, match="disk full"):
        io.write(_failing_scores(), final, chunk_mb=4 * 5 * 8 / 2**20)
    assert [p.name for p in tmp_path.iterdir()] == [final.name]
    back = io.read(final)
    assert back.score.values.tolist() == [[1.0, 2.0]] and back.model.values.tolist() == ["x"]
    # and a successful write replaces it completely
    io.write(make_scores(["n"], ["y"], np.array([[3.0]])), final)
    assert io.read(final).score.values.tolist() == [[3.0]]
    assert [p.name for p in tmp_path.iterdir()] == [final.name]


_SLOW_WRITER = """
import sys, time
import dask.array as da, numpy as np
from bosaris_dask import io
from bosaris_dask.trials import make_scores

def slow(block):
    time.sleep(0.1)
    return block

score = da.from_array(np.zeros((100, 5)), chunks=(1, 5)).map_blocks(slow, dtype=np.float64)
io.write_zarr(make_scores(range(100), range(5), score), sys.argv[1], chunk_mb=40 / 2**20)
"""


def test_killed_writer_leaves_only_a_hidden_temporary(tmp_path):
    final = tmp_path / "s.zarr"
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_WRITER, str(final)])
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(".s.zarr.tmp-*/score/c/*")):  # some chunks are written
            assert proc.poll() is None and time.monotonic() < deadline, "writer did not start"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert not final.exists()
    (tmp,) = tmp_path.iterdir()
    assert tmp.name.startswith(".s.zarr.tmp-")
    assert atomic.remove_stale(final, min_age_s=0) == [tmp]
    assert list(tmp_path.iterdir()) == []


def test_atomic_path_files_and_directories(tmp_path):
    final = tmp_path / "out"
    with atomic.atomic_path(final) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".out.tmp-")
        tmp.write_text("file")
    assert final.read_text() == "file"
    with atomic.atomic_path(final) as tmp:  # a directory replaces a file
        tmp.mkdir()
        (tmp / "zarr.json").write_text("{}")
    assert (final / "zarr.json").read_text() == "{}"
    with atomic.atomic_path(final) as tmp:  # a store replaces a store
        tmp.mkdir()
        (tmp / "other").write_text("dir2")
    assert [p.name for p in final.iterdir()] == ["other"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    with pytest.raises(StoreError, match="not a zarr store"), atomic.atomic_path(final):
        pass  # a directory that is no store is never replaced (refused before any work)
    assert [p.name for p in final.iterdir()] == ["other"]


def test_atomic_path_without_exchange_falls_back(tmp_path, monkeypatch):
    monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)
    final = tmp_path / "d.zarr"
    final.mkdir()
    (final / "zarr.json").write_text("old")
    with atomic.atomic_path(final) as tmp:
        tmp.mkdir()
        (tmp / "new").write_text("new")
    assert [p.name for p in final.iterdir()] == ["new"]
    assert [p.name for p in tmp_path.iterdir()] == ["d.zarr"]


def test_atomic_path_errors(tmp_path):
    with (
        pytest.raises(StoreError, match="does not exist"),
        atomic.atomic_path(tmp_path / "no" / "x"),
    ):
        pass
    with pytest.raises(StoreError, match="nothing was written"), atomic.atomic_path(tmp_path / "x"):
        pass
    assert list(tmp_path.iterdir()) == []


def test_remove_stale_restores_and_deletes(tmp_path):
    final = tmp_path / "s.zarr"
    aside = tmp_path / ".s.zarr.old-0123456789ab"  # killed between the two fallback renames
    aside.mkdir()
    (aside / "zarr.json").write_text("{}")
    tmp = tmp_path / ".s.zarr.tmp-0123456789ab"
    tmp.mkdir()
    other = tmp_path / ".t.zarr.tmp-0123456789ab"  # another store's temporary: not ours
    other.mkdir()
    assert atomic.remove_stale(final, min_age_s=3600) == []  # young entries are left alone
    assert not final.exists() and tmp.exists() and aside.exists()
    assert atomic.remove_stale(final, min_age_s=0) == [tmp]
    assert (final / "zarr.json").exists()  # the previous output is back
    assert sorted(p.name for p in tmp_path.iterdir()) == [".t.zarr.tmp-0123456789ab", "s.zarr"]


# --------------------------------------------------------------------------------------------
# dispatcher
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ext", ["zarr", "h5"])
def test_rewriting_a_store_from_itself(tmp_path, ext):
    rng = _rng(8)
    score, mask = rng.normal(size=(30, 20)), rng.random((30, 20)) < 0.5
    path = io.write(make_scores(range(30), range(20), score, mask), tmp_path / f"s.{ext}")
    io.write(io.read(path, chunks=(7, 20)), path, chunk_mb=0.002)  # read lazily while replaced
    want = score if ext == "zarr" else np.where(mask, score, 0)  # HDF5 writes 0 where masked
    np.testing.assert_array_equal(io.read(path).score.values, want)
    np.testing.assert_array_equal(io.read(path).score_mask.values, mask)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


@pytest.mark.parametrize(
    ("ext", "how"),
    [("zarr", "rewritten"), ("zarr", "deleted"), ("h5", "rewritten"), ("h5", "deleted"),
     ("h5", "edited")],
)  # fmt: skip
def test_a_lazy_object_whose_store_is_rewritten_is_an_error_not_other_values(tmp_path, ext, how):
    score = np.arange(6.0).reshape(2, 3)
    path = io.write(make_scores(["a", "b"], ["x", "y", "z"], score), tmp_path / f"s.{ext}")
    lazy = io.read(path)
    np.testing.assert_array_equal(lazy.score.values, score)  # unchanged: read again and again
    if how == "rewritten":  # onto its own input: the write reads the old store, then replaces it
        io.write(lazy.assign(score=lazy.score * 2), path)
        np.testing.assert_array_equal(io.read(path).score.values, score * 2)
    elif how == "deleted":
        atomic.remove_path(path) if ext == "zarr" else path.unlink()
    else:  # edited in place, as its new modification time says (the open file is locked)
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    with pytest.raises(StoreError, match=f"s.{ext}: the (store|file) (was replaced|is gone)"):
        lazy.score.load()
    with pytest.raises(StoreError, match="ids would be paired with other values"):
        lazy.compute()


@pytest.mark.parametrize("ext", ["zarr", "h5"])
def test_progress_bar_on_stderr(tmp_path, capsys, ext):
    io.write(make_scores(["m"], ["s"], np.array([[1.0]])), tmp_path / f"s.{ext}", progress=True)
    assert "100%" in capsys.readouterr().err


def test_detect_format(tmp_path):
    assert io.detect_format("a.zarr") == "zarr"
    assert io.detect_format("a.ZARR") == "zarr"
    assert io.detect_format(Path("x/k.h5")) == "hdf5"
    assert io.detect_format("k.hdf5") == "hdf5"
    assert io.detect_format("scores.txt") == "text"
    assert io.detect_format("trials") == "text"
    store = io.write_zarr(make_ndx(["m"], ["s"]), tmp_path / "a.zarr")
    renamed = store.rename(tmp_path / "plain_dir")
    assert io.detect_format(renamed) == "zarr"
    assert io.read(renamed).attrs["bosaris_kind"] == "ndx"


def test_dispatcher_errors(tmp_path):
    for name in ("missing.zarr", "missing.h5", "missing.txt"):
        with pytest.raises(StoreNotFoundError, match=name) as info:
            io.read(tmp_path / name)
        assert isinstance(info.value, FileNotFoundError)
    with pytest.raises(StoreNotFoundError):
        io.read_quality(tmp_path / "q.h5")
    path = io.write(make_ndx(["m"], ["s"]), tmp_path / "n.zarr")
    with pytest.raises(StoreError, match="holds an ndx, expected a key"):
        io.read(path, "key")
    with pytest.raises(StoreError, match="a zarr store holding ndx, not quality; quality tables "
                       "of one side are read from HDF5, MAT or text files"):  # fmt: skip
        io.read_quality(path)
    with pytest.raises(StoreError, match=r"a Quality object of both sides \(make_quality\) goes "
                       "to zarr with bd.write"):  # fmt: skip
        io.write_quality(quality_table(["a"], [[1.0]]), tmp_path / "q.zarr")
    (tmp_path / "plain").mkdir()
    with pytest.raises(StoreError, match="not a zarr store"):
        io.read(tmp_path / "plain")
    assert io.read(path, "ndx").trial_mask.values.tolist() == [[True]]
    assert io.read(tmp_path / "n.zarr", chunks=1).trial_mask.data.chunks == ((1,), (1,))


# --------------------------------------------------------------------------------------------
# key codes outside {-1, 0, +1} (issue 11, item 1)
# --------------------------------------------------------------------------------------------


def _key_store_with(tmp_path: Path, value: int, cell: tuple[int, int]) -> tuple[Path, list, list]:
    models, segments = [f"m{i}" for i in range(6)], [f"s{j}" for j in range(5)]
    codes = _key_matrix(_rng(5), (6, 5))
    path = io.write_zarr(make_key(models, segments, codes), tmp_path / "key.zarr", chunk_mb=1e-5)
    stored = zarr.open_array(path / "trial_mask", mode="r+")
    assert stored.nchunks > 1
    stored[cell] = value
    return path, models, segments


@pytest.mark.parametrize("value", [7, -2, 127, -128])
def test_zarr_key_codes_outside_the_allowed_set_are_a_trial_error(tmp_path, value):
    import bosaris_dask as bd
    from bosaris_dask.errors import TrialError

    path, models, segments = _key_store_with(tmp_path, value, (4, 3))
    key = io.read(path)  # lazy: nothing is read yet
    message = rf"{path}: .*found {value} at \(m4, s3\)$"
    with pytest.raises(TrialError, match=message):
        key.trial_mask.compute()
    rng = _rng(6)
    scores = make_scores(models, segments, rng.normal(size=(6, 5)))
    with pytest.raises(TrialError, match=message):
        bd.evaluate(scores, key)


def test_zarr_key_check_is_fused_into_the_read(tmp_path):
    """The check adds no pass: after optimization the mask graph has one task per chunk more
    only for the id slices, and no task reads a chunk twice."""
    path, _, _ = _key_store_with(tmp_path, 1, (0, 0))
    mask = io.read(path).trial_mask.data
    (optimized,) = dask.optimize(mask)
    graph = dict(optimized.__dask_graph__())
    array_tasks = [k for k in graph if isinstance(k, tuple) and k[0] == optimized.name]
    assert len(array_tasks) == mask.npartitions
    assert io.read(path).trial_mask.values[0, 0] == 1


def test_dask_key_codes_are_checked_before_the_int8_cast():
    """An int16 256 or a uint8 255 would become 0 or -1 when cast to int8, a float 0.5 would
    become 0: each must be refused, naming the trial."""
    import bosaris_dask as bd
    from bosaris_dask.errors import TrialError

    models, segments = ["a", "b", "c"], list("wxyz")
    scores = make_scores(models, segments, _rng(7).normal(size=(3, 4)))
    for dtype, value in ((np.int16, 256), (np.uint8, 255), (np.float64, 0.5)):
        low = 0 if np.dtype(dtype).kind == "u" else -1
        codes = np.where(np.arange(12).reshape(3, 4) % 2, 1, low).astype(dtype)
        codes[2, 1] = value
        key = make_key(models, segments, da.from_array(codes, chunks=2))
        with pytest.raises(TrialError, match=rf"found {value} at \(c, x\)"):
            bd.evaluate(scores, key)


@pytest.mark.parametrize("suffix", [".zarr", ".h5", ".mat"])
def test_objects_without_models_or_segments_round_trip(tmp_path, suffix):
    # zarr wrote the empty id array as float64, then refused to read its own store
    for obj in (make_scores([], ["s1"], np.zeros((0, 1)), np.zeros((0, 1), bool)),
                make_key(["m"], [], np.zeros((1, 0)))):  # fmt: skip
        back = io.read(io.write(obj, tmp_path / f"{kind_of(obj)}{suffix}"))
        assert back.model.values.tolist() == obj.model.values.tolist()
        assert back.segment.values.tolist() == obj.segment.values.tolist()
        assert dict(back.sizes) == dict(obj.sizes)


def test_a_failed_write_names_the_output_and_the_reason(tmp_path, monkeypatch, capsys):
    import errno

    from bosaris_dask.cli import main
    from bosaris_dask.io import text

    obj = make_scores(["m"], ["s", "t"], [[1.0, -1.0]])
    io.write(obj, tmp_path / "in.h5")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(text, "write_text", full)
    with pytest.raises(StoreError, match=r"cannot write .*out\.txt: No space left on device"):
        io.write(obj, tmp_path / "out.txt")
    assert main(["convert", str(tmp_path / "in.h5"), str(tmp_path / "out.txt"), "-q"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("bosaris-dask: error: cannot write") and "Traceback" not in err
    assert "No space left on device" in err


def test_file_urls_are_written_where_they_are_read(tmp_path):
    obj = make_scores(["m"], ["s"], [[0.5]])
    url = f"file://{tmp_path}/u.zarr"
    io.write(obj, url)
    assert (tmp_path / "u.zarr").is_dir()
    assert io.read(url).score.values.tolist() == [[0.5]]


def test_a_text_key_of_1_0_labels_converted_as_scores_says_so(tmp_path):
    # 'm s 1' lines read as scores unless told: once converted, --key names the way out
    text = tmp_path / "k10"
    text.write_text("m1 s1 1\nm1 s2 0\nm2 s1 0\nm2 s2 1\n")
    io.write(io.read(text), tmp_path / "k10.h5")
    with pytest.raises(StoreError, match=r"holds scores, expected a key; if it was converted "
                       r"from a text key whose labels are 1/0 .*again with --kind "
                       r"key$"):  # fmt: skip
        io.read(tmp_path / "k10.h5", "key")
    assert io.read(text, "key").trial_mask.values.tolist() == [[1, -1], [-1, 1]]


@pytest.mark.parametrize("name", ["scores.txt", "scores.h5"])  # (.mat: refused as a folder)
def test_a_zarr_store_where_the_suffix_names_a_file_format_is_not_overwritten_as_a_store(
    tmp_path, name
):
    # an existing store named scores.txt was replaced by a zarr store: the suffix said text
    from bosaris_dask.cli import main
    from bosaris_dask.trials import make_scores

    scores = make_scores(["m"], ["s1", "s2"], [[1.0, 2.0]])
    io.write(scores, tmp_path / "store.zarr")
    (tmp_path / "store.zarr").rename(tmp_path / name)
    with pytest.raises(StoreError, match=rf"{name}: a zarr store, where the suffix "
                       rf"\.{name.split('.')[1]} names a (text|HDF5|MAT) output"):  # fmt: skip
        io.write(scores, tmp_path / name)
    assert main(["convert", str(tmp_path / name), str(tmp_path / name)]) == 1
    assert io.read(tmp_path / name).score.values.tolist() == [[1.0, 2.0]]  # read as what it is
    io.write(scores, tmp_path / "bare.zarr")
    (tmp_path / "bare.zarr").rename(tmp_path / "bare")
    io.write(scores, tmp_path / "bare")  # a store without a suffix is replaced by a store
    assert io.read(tmp_path / "bare").score.values.tolist() == [[1.0, 2.0]]


@pytest.mark.parametrize("inside", ["x.txt", "x.h5", "new.zarr", "score/x.txt"])
def test_an_output_inside_a_zarr_store_is_refused(tmp_path, inside, capsys):
    # convert STORE STORE/x.txt succeeded and left the store unreadable by zarr (a writers' audit)
    from bosaris_dask.cli import main
    from bosaris_dask.trials import make_key, make_scores

    scores = make_scores(["m"], ["s1", "s2"], [[1.0, 2.0]])
    store = io.write(scores, tmp_path / "s.zarr")
    with pytest.raises(StoreError, match=rf"s\.zarr/{inside}: it is inside the zarr store "):
        io.write(scores, store / inside)
    assert main(["convert", str(store), str(store / inside)]) == 1
    assert "write it beside the store" in capsys.readouterr().err
    key = io.write(make_key(["m"], ["s1", "s2"], [[1, -1]]), tmp_path / "k.zarr")
    assert main(["evaluate", "--key", str(key), "--scores", str(store), "-q",
                 "--json", str(store / "r.json")]) == 1  # fmt: skip
    assert "it is inside the zarr store" in capsys.readouterr().err
    assert io.read(store).score.values.tolist() == [[1.0, 2.0]]


def test_folders_and_plots_inside_a_zarr_store_are_refused_before_anything_is_made(
    tmp_path, monkeypatch, capsys
):
    """A review: writers that make a folder made it inside the store before refusing the write
    (an empty folder is enough for zarr to refuse the store); spoof --out-dir was not
    checked, plot --out only after the evaluation, and a relative output written from inside a
    store's folder was not seen."""
    from bosaris_dask.cli import main
    from bosaris_dask.plots.standard import save_standard_plots
    from bosaris_dask.spoofing.simulate import write_asvspoof5_sample
    from bosaris_dask.spoofing.stores import write_set
    from bosaris_dask.trials import make_key, make_scores

    scores = make_scores(["m"], ["s1", "s2"], [[1.0, 2.0]])
    key = make_key(["m"], ["s1", "s2"], [[1, -1]])
    store = io.write(scores, tmp_path / "s.zarr")
    keyed = io.write(key, tmp_path / "k.zarr")
    with pytest.raises(StoreError, match="inside the zarr store"):
        write_set(store / "set", key, {"asv": scores})
    with pytest.raises(StoreError, match="inside the zarr store"):
        write_asvspoof5_sample(store / "sample")
    with pytest.raises(StoreError, match="inside the zarr store"):
        save_standard_plots(_evaluated(scores, key), store / "plots")
    sample = write_asvspoof5_sample(tmp_path / "sample")
    runs = [
        ["spoof", "cm", "--key", str(sample[0]), "--scores", str(sample[1]),
         "--out-dir", str(store / "cm")],
        ["simulate", "--n-models", "3", "--n-segments", "4", "--out-dir", str(store / "sim")],
        ["plot", "det", "--key", str(keyed), "--scores", str(store), "--out",
         str(store / "det.png")],
    ]  # fmt: skip
    for argv in runs:
        assert main([*argv, "-q"]) == 1, argv
        assert "zarr store" in capsys.readouterr().err, argv
    monkeypatch.chdir(store / "score")  # a relative output, from inside the store
    with pytest.raises(StoreError, match="inside the zarr store"):
        io.write(scores, "x.txt")
    assert sorted(p.name for p in store.iterdir()) == ["model", "score", "segment", "zarr.json"]
    assert io.read(store).score.values.tolist() == [[1.0, 2.0]]


def _evaluated(scores, key):
    from bosaris_dask.metrics import evaluate

    return evaluate(scores, key, priors=[0.5])


@pytest.mark.parametrize("suffix", ["zarr", "h5", "mat", "txt"])
def test_read_takes_chunks_by_dimension_name_or_axis_in_every_format(tmp_path, suffix):
    # {"model": 4}: zarr raised TypeError, HDF5 and text ignored it; {0: 4}: MAT raised
    scores = make_scores([f"m{i}" for i in range(10)], ["a", "b", "c"],
                         np.arange(30.0).reshape(10, 3))  # fmt: skip
    path = io.write(scores, tmp_path / f"s.{suffix}")
    for chunks in ({"model": 4}, {0: 4}, (4, 3)):
        assert io.read(path, chunks=chunks).score.data.chunks == ((4, 4, 2), (3,))
    with pytest.raises(OptionError, match="chunks are given per dimension, 'model' and "):
        io.read(path, chunks={"rows": 4})


def test_writers_refuse_ids_their_readers_would_refuse(tmp_path):
    # both were written, then refused when read back ("holds an empty id", "line longer than")
    with pytest.raises(StoreError, match="an empty id cannot be stored in a MAT file's modelset"):
        io.write(make_scores([""], ["s"], [[1.0]]), tmp_path / "e.mat")
    with pytest.raises(TrialError, match=r"of 1,048,576 bytes cannot be written to a text file"):
        io.write(make_scores(["x" * (1 << 20)], ["s"], [[1.0]]), tmp_path / "long.txt")
    assert not list(tmp_path.iterdir())


def test_write_errors_name_the_file_and_the_id_and_a_way_that_exists(tmp_path):
    """A writers' audit: HDF5 refused a NUL id naming neither (and after writing the matrices);
    a quality text file refused an infinity naming neither; a quality id unfit for text was
    pointed to zarr (refused for a quality table) and to a NIST header (no such option)."""
    from bosaris_dask.trials import quality_table

    with pytest.raises(StoreError, match=r"n\.h5: a NUL in id 'a\\x00b' \(HDF5 /row_ids"):
        io.write(make_scores(["a\x00b"], ["s"], [[1.0]]), tmp_path / "n.h5")
    with pytest.raises(StoreError, match=r"q\.h5: a NUL in id 'a\\x00b' \(HDF5 /ids"):
        io.write_quality(quality_table(["a\x00b"], [[1.0]]), tmp_path / "q.h5")
    with pytest.raises(TrialError, match=r"q\.txt: quality measure 2 of id 'b' is inf: "):
        io.write_quality(quality_table(["a", "b"], [[1.0, 2.0], [3.0, np.inf]]), tmp_path / "q.txt")
    with pytest.raises(TrialError) as spaced:
        io.write_quality(quality_table(["a b"], [[1.0]]), tmp_path / "q.txt")
    assert str(spaced.value).endswith("; use an HDF5 or MAT file"), str(spaced.value)
    assert not list(tmp_path.iterdir())


def test_a_square_quality_matrix_is_read_as_measures_by_ids_with_a_warning(tmp_path):
    """One row per id is read as such where the shape tells (3 ids, 2 measures), but a square
    matrix cannot tell: it was read as measures x ids without a word (audit: a quality fusion
    of 2 models and 2 measures used swapped values)."""
    import h5py

    from bosaris_dask.io.hdf5 import QualityLayoutWarning

    for name, ids in (("tall.h5", [b"s1", b"s2", b"s3"]), ("square.h5", [b"s1", b"s2"])):
        with h5py.File(tmp_path / name, "w") as f:
            f["values"] = np.array([[0.1, 5.0], [0.2, 6.0], [0.3, 7.0]])[: len(ids)]
            f["ids"] = np.array(ids)
    assert io.read_quality(tmp_path / "tall.h5").sel(id="s1").values.tolist() == [0.1, 5.0]
    with pytest.warns(QualityLayoutWarning, match=r"square.h5: /values is 2 x 2, as many "
                      "measures as ids: read as measures x ids"):  # fmt: skip
        square = io.read_quality(tmp_path / "square.h5")
    assert square.sel(id="s1").values.tolist() == [0.1, 0.2]  # the layout: one column per id
    # the package's own files say their layout: a square table reads back without a warning
    from bosaris_dask.trials import quality_table

    table = quality_table(["s1", "s2"], [[0.1, 5.0], [0.2, 6.0]])
    io.write_quality(table, tmp_path / "own.h5")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert io.read_quality(tmp_path / "own.h5").equals(table)
    with h5py.File(tmp_path / "own.h5", "r+") as f:
        f["values"].attrs["layout"] = "ids x measures"
    with pytest.raises(StoreError, match="own.h5: /values says its layout is 'ids x measures'"):
        io.read_quality(tmp_path / "own.h5")
