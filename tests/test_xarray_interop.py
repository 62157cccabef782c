"""Trial objects treated as the xarray Datasets they are: what ordinary xarray operations do
to them, and the traps where a number came out silently wrong."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import bosaris_dask as bd
from bosaris_dask.errors import StoreError, TrialError
from bosaris_dask.trials import make_key, make_scores

KEY = make_key(["m1", "m2"], ["s1", "s2"], [[1, -1], [-1, 1]])
SCORES = make_scores(["m1", "m2"], ["s1", "s2"], [[3.0, -2.0], [5.0, 4.0]])
KEY_OTHER_ORDER = make_key(["m2", "m1"], ["s1", "s2"], [[-1, 1], [1, -1]])


@pytest.mark.parametrize(
    "call",
    [
        lambda s, k: bd.align(s.transpose("segment", "model"), KEY_OTHER_ORDER),
        lambda s, k: bd.align(s, k.transpose("segment", "model")),
        lambda s, k: bd.trials.reindex_ids(s.transpose("segment", "model"), ["m2"], ["s1"]),
        lambda s, k: k.transpose("segment", "model").bosaris.classes(),
        lambda s, k: bd.trials.nontarget_scores(s.transpose("segment", "model"), k),
        lambda s, k: bd.trials.coverage(s, k.transpose("segment", "model")),
    ],
)
def test_a_transposed_square_object_is_refused_not_read_swapped(call):
    # a 2 x 2 matrix transposed has the same shape: align read it by position, so the score
    # of (m1, s2) became 5.0, and an evaluation through it gave EER 0.479 for 0.138
    says = r"has dims \('segment', 'model'\), expected \('model', 'segment'\): transpose it"
    with pytest.raises(TrialError, match=says + r" \((scores|key)\.transpose"):
        call(SCORES, KEY)


def test_aligned_in_model_segment_order_the_scores_stay_with_their_trials():
    aligned = bd.align(SCORES.transpose("segment", "model").transpose(), KEY_OTHER_ORDER)
    assert float(aligned.score.sel(model="m1", segment="s2")) == -2.0
    assert float(aligned.score.sel(model="m2", segment="s1")) == 5.0


def test_a_whole_dataset_operation_that_makes_the_mask_numbers_says_so():
    says = r"scores.score_mask has dtype int64 \(an operation on the whole Dataset, e.g. "
    with pytest.raises(TrialError, match=says + r"scores \* 2, applies to score_mask too"):
        bd.evaluate(SCORES * 2, KEY)
    doubled = SCORES.assign(score=SCORES.score * 2)  # what the message says to do
    assert float(bd.evaluate(doubled, KEY).eer[0]) == float(bd.evaluate(SCORES, KEY).eer[0])


@pytest.mark.parametrize("dtype", ["float64", "int16"])
def test_a_zarr_store_written_with_cf_packing_is_refused(tmp_path, dtype):
    # read with the packing ignored, (s - 5) / 2 were evaluated: Cllr 1.281 for 0.703
    path = tmp_path / "packed.zarr"
    encoding = {"score": {"add_offset": 5.0, "scale_factor": 2.0, "dtype": dtype}}
    with pytest.warns(UserWarning):  # (xarray's, about the encoding of a float as float)
        SCORES.to_zarr(path, mode="w", encoding=encoding)
    with pytest.raises(StoreError, match=r"array 'score' is stored with CF packing or masking "
                       r"\(scale_factor; add_offset.*\): xarray reads other values than "
                       r"those stored"):  # fmt: skip
        bd.read(path)
    plain = tmp_path / "plain.zarr"
    SCORES.to_zarr(plain, mode="w")  # xarray's own store, unpacked: read as it is
    np.testing.assert_array_equal(bd.read(plain).score.values, SCORES.score.values)
    for obj, name in ((SCORES, "score"), (KEY, "trial_mask")):  # zarr v2, xarray's defaults
        obj.to_zarr(plain, mode="w", zarr_format=2)
        np.testing.assert_array_equal(bd.read(plain)[name].values, obj[name].values)


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("attr", ["_FillValue", "missing_value"])
def test_a_zarr_store_written_with_cf_masking_is_refused(tmp_path, attr, zarr_format):
    # xarray reads the cells equal to the fill value as NaN; they were read as scores of -2
    # (zarr v2 keeps xarray's _FillValue as the array's fill_value, not as an attribute)
    path = tmp_path / "masked.zarr"
    score = float(SCORES.score.values[0, 1])
    SCORES.to_zarr(path, mode="w", encoding={"score": {attr: score}}, zarr_format=zarr_format)
    assert np.isnan(xr.open_zarr(path).score.values[0, 1])
    with pytest.raises(StoreError, match=rf"array 'score' is stored with CF packing or masking "
                       rf"\({attr} {score!r}"):  # fmt: skip
        bd.read(path)


@pytest.mark.parametrize("dtype", ["float16", "int32", "uint8"])
def test_scores_of_any_real_dtype_written_to_zarr_read_back(tmp_path, dtype):
    # float16 was written and then refused by the reader; int32 failed inside xarray's write
    values = np.array([[3, 2], [5, 4]], dtype=dtype)
    scores = SCORES.assign(score=SCORES.score.copy(data=values))
    path = bd.write(scores, tmp_path / "s.zarr")
    back = bd.read(path)
    assert back.score.dtype.kind == "f"
    np.testing.assert_array_equal(back.score.values, values.astype(np.float64))
    assert float(bd.evaluate(back, KEY).cllr[0]) == float(bd.evaluate(scores, KEY).cllr[0])


def test_what_xarray_operations_did_is_said():
    lost = KEY.copy()
    lost.attrs = {}  # (most xarray operations drop attrs unless keep_attrs)
    with pytest.raises(TrialError, match=r"got a Dataset, not a trial object \(attrs\['bosaris_"
                       r"kind'\] is not set: .*xr.set_options\(keep_attrs=True\)"):  # fmt: skip
        bd.evaluate(SCORES, lost)
    wrong = KEY.copy()
    wrong.attrs["bosaris_kind"] = "Key"  # set, but not a kind: not "dropped"
    with pytest.raises(TrialError, match=r"not a trial object \(attrs\['bosaris_kind'\] is "
                       r"'Key': one of 'key', 'ndx', 'scores', 'quality'\)$"):  # fmt: skip
        bd.evaluate(SCORES, wrong)
    # a selection of one id drops the dimension: a bare KeyError 'model' before
    with pytest.raises(TrialError, match=r"scores has one model and no 'model' dimension .*"
                       r"select a list, scores.sel\(model=\['x'\]\)"):  # fmt: skip
        bd.evaluate(SCORES.sel(model="m1"), KEY)


@pytest.mark.parametrize(
    "head, what, instead",
    [(b"\x89HDF\r\n\x1a\n", "an HDF5 file", r"needs the suffix \.h5; .*\(xr.open_dataset\)"),
     (b"CDF\x01", "a netCDF-3 file", r": a Dataset that xarray saved is opened with xarray"),
     (b"PK\x03\x04", r"a zip archive \(npz\?\)", r": embeddings in an \.npz are scored with "
      r"--enrol and --test \(bosaris_dask.embeddings in Python\)$"),
     # other compressions than gzip (read as it is): 'NUL byte' or a field count before
     (b"BZh91AY&SY", "bzip2-compressed", r"--scores <\(bzip2 -dc FILE\)\), or recompress it"),
     (b"\xfd7zXZ\x00\x00", "xz-compressed", r"--scores <\(xz -dc FILE\)"),
     (b"\x28\xb5\x2f\xfd", "zstd-compressed", r"--scores <\(zstd -dc FILE\)")],
)  # fmt: skip
def test_a_binary_file_read_as_text_is_named_for_what_it_is(tmp_path, head, what, instead):
    # xarray's to_netcdf output read by its suffix as text: 'NUL byte in a text file'
    path = tmp_path / "scores.nc"
    path.write_bytes(head + bytes(64))
    with pytest.raises(StoreError, match=f"scores.nc: {what}, not a text trial list .*{instead}"):
        bd.read(path)


def test_an_id_that_starts_like_a_signature_is_read_as_text(tmp_path):
    # "BZh" alone is bzip2's first bytes, and a surname's: the block magic after it tells them
    path = tmp_path / "scores.txt"
    path.write_text("BZhang s1 0.5\nBZhang s2 -1.5\n")
    assert bd.read(path).model.values.tolist() == ["BZhang"]


def test_a_result_with_one_system_selected_says_to_select_a_list():
    # result.sel(system="a") then format_table raised "iteration over a 0-d array"
    result = bd.evaluate(SCORES, KEY)
    name = str(result.system.values[0])
    with pytest.raises(TrialError, match=r"format_table works on a result with a 'system' "
                       r"dimension: select a list, e.g. result.sel\(system=\['a'\]\)"):  # fmt: skip
        result.sel(system=name).bosaris.format_table()
    assert result.sel(system=[name]).bosaris.format_table() == result.bosaris.format_table()
