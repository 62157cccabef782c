"""Tests of the MATLAB .mat format of the BOSARIS Toolkit (issue 17, item 1)."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
import scipy.io

from bosaris_dask import io
from bosaris_dask.errors import StoreError, TrialError
from bosaris_dask.io import mat
from bosaris_dask.trials import make_key, make_ndx, make_scores, quality_table

MODELS = ["a", "ab", "a b", "é", "日本語", "A"]
SEGMENTS = ["s", "s1", "s10", "ß", "segment-with-a-rather-long-name"]
VERSIONS = ["5", "7.3"]


def _objects():
    rng = np.random.default_rng(3)
    shape = (len(MODELS), len(SEGMENTS))
    codes = rng.integers(-1, 2, size=shape).astype(np.int8)
    mask = rng.random(shape) < 0.6
    s64 = rng.normal(size=shape) * 10.0 ** rng.integers(-30, 30, size=shape)
    s32 = rng.normal(size=shape).astype(np.float32)
    return {
        "key": (make_key(MODELS, SEGMENTS, codes, chunks=(4, 2)), {"trial_mask": codes}),
        "ndx": (make_ndx(MODELS, SEGMENTS, mask), {"trial_mask": mask}),
        "scores64": (
            make_scores(MODELS, SEGMENTS, s64, mask, chunks=(4, 3)),
            {"score": s64, "score_mask": mask},
        ),
        "scores32": (make_scores(MODELS, SEGMENTS, s32, mask), {"score": s32, "score_mask": mask}),
    }


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", ["key", "ndx", "scores64", "scores32"])
def test_round_trip_through_both_versions(tmp_path, name, version):
    obj, arrays = _objects()[name]
    path = io.write(obj, tmp_path / f"{name}.mat", mat_version=version)
    back = io.read(path)
    assert back.attrs["bosaris_kind"] == obj.attrs["bosaris_kind"]
    assert back.model.values.tolist() == MODELS and back.segment.values.tolist() == SEGMENTS
    for var, want in arrays.items():
        got = back[var].values
        if var == "score":
            mask = arrays["score_mask"]
            assert got.dtype == want.dtype
            assert got[mask].tolist() == want[mask].tolist()  # exact, float32 kept
            assert (got[~mask] == 0).all()
        else:
            assert got.tolist() == want.tolist()
    assert [p.name for p in tmp_path.iterdir()] == [f"{name}.mat"]  # no temporary left


@pytest.mark.parametrize("version", VERSIONS)
def test_quality_round_trip(tmp_path, version):
    table = quality_table(["s1", "s2", "ß"], [[0.5, 1.0], [-2.0, 3.25], [7.0, 0.0]])
    path = io.write_quality(table, tmp_path / "q.mat") if version == "5" else None
    if path is None:
        path = mat.write_quality_mat(table, tmp_path / "q.mat", mat_version=version)
    back = io.read_quality(path)
    assert back.values.tolist() == table.values.tolist()
    assert back[back.dims[0]].values.tolist() == ["s1", "s2", "ß"]


def test_a_mat_path_gives_a_mat_file_never_text(tmp_path):
    key, _ = _objects()["key"]
    path = io.write(key, tmp_path / "key.mat")
    assert path.read_bytes()[:6] == b"MATLAB"
    assert scipy.io.whosmat(path) == [("key", (1, 1), "struct")]
    fields = scipy.io.loadmat(path, simplify_cells=True)["key"]
    # the toolkit's Key object, as its read_mat rebuilds it: modelset and segset cell arrays,
    # logical tar and non masks (scipy reads MATLAB logicals back as uint8)
    assert sorted(fields) == ["modelset", "non", "segset", "tar"]
    codes = key.trial_mask.values
    assert fields["tar"].tolist() == (codes == 1).tolist()
    assert fields["non"].tolist() == (codes == -1).tolist()
    assert list(fields["modelset"]) == MODELS and list(fields["segset"]) == SEGMENTS
    assert io.detect_format(tmp_path / "key.mat") == "mat"


@pytest.mark.parametrize("kind", ["key", "ndx", "scores64", "scores32"])
def test_mat_files_hold_the_toolkits_object_fields(kind, tmp_path):
    obj, _ = _objects()[kind]
    matrices = {"key": {"tar": "logical", "non": "logical"}, "ndx": {"trialmask": "logical"},
                "scores64": {"scoremat": "double", "scoremask": "logical"},
                "scores32": {"scoremat": "single", "scoremask": "logical"}}[kind]  # fmt: skip
    expected = {"modelset": "cell", "segset": "cell", **matrices}
    name = {"key": "key", "ndx": "ndx"}.get(kind, "scr")
    v5 = scipy.io.loadmat(io.write(obj, tmp_path / "v5.mat"), simplify_cells=True)[name]
    assert sorted(v5) == sorted(expected)
    with h5py.File(io.write(obj, tmp_path / "v73.mat", mat_version="7.3"), "r") as f:
        classes = {k: f[name][k].attrs["MATLAB_class"].decode() for k in f[name]}
        # the field names as MATLAB lists them (vlen strings of 1-byte chars), in v5's order
        listed = [b"".join(chars).decode() for chars in f[name].attrs["MATLAB_fields"]]
        assert h5py.check_vlen_dtype(f[name].attrs.get_id("MATLAB_fields").dtype) == "S1"
    assert classes == expected and listed == list(v5)
    stored = io.read(io.write(obj, tmp_path / f"{kind}.zarr")).compute()
    for path in (tmp_path / "v5.mat", tmp_path / "v73.mat"):
        back = io.read(path).compute()
        for var in stored.data_vars:  # scores off the mask are 0 in MAT (and HDF5) files
            on = stored.score_mask.values if var == "score" else True
            np.testing.assert_array_equal(np.where(on, back[var].values, 0),
                                          np.where(on, stored[var].values, 0))  # fmt: skip


def test_an_unknown_suffix_is_an_explicit_choice(tmp_path):
    scores = make_scores(["m1", "m2"], ["t1"], np.array([[0.5], [-1.0]]))
    with pytest.raises(StoreError, match=r"scores.csv: cannot tell the format .* format='text'"):
        io.write(scores, tmp_path / "scores.csv")
    assert list(tmp_path.iterdir()) == []
    io.write(scores, tmp_path / "scores.csv", format="text")
    assert io.read(tmp_path / "scores.csv", "scores").score_mask.values.sum() > 0
    for name in ("scores", "scores.txt", "trials.lst", "eval.tsv"):
        io.write(scores, tmp_path / name)  # the usual text names need no telling
    with pytest.raises(StoreError, match="unknown format 'npy'"):
        io.write(scores, tmp_path / "s.npy", format="npy")


def test_a_failed_write_leaves_nothing(tmp_path, monkeypatch):
    key, _ = _objects()["key"]

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(mat, "write_v5", broken)
    with pytest.raises(OSError, match="disk full"):
        io.write(key, tmp_path / "key.mat")
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------------
# files written by other tools
# --------------------------------------------------------------------------------------------


def _cell(values):
    out = np.empty((len(values), 1), dtype=object)
    out[:, 0] = values
    return out


def test_reads_hand_built_v5_structs(tmp_path):
    models, segments = ["m1", "m2"], ["t1", "t2", "t3"]
    codes = np.array([[1, -1, 0], [0, 1, -1]], dtype=np.int8)
    # the HDF5 layout's names, ids in an ID sub-struct as in HDF5, a double mask
    nested = {"ID": {"row_ids": _cell(models), "column_ids": _cell(segments)},
              "trial_mask": codes.astype(np.float64)}  # fmt: skip
    scipy.io.savemat(tmp_path / "nested.mat", {"key": nested})
    assert io.read(tmp_path / "nested.mat").trial_mask.values.tolist() == codes.tolist()
    # the toolkit objects' own field names, ids as a row cell array, logical masks
    toolkit = {"modelset": np.array(models, dtype=object), "segset": _cell(segments),
               "tar": codes == 1, "non": codes == -1}  # fmt: skip
    scipy.io.savemat(tmp_path / "toolkit.mat", {"key": toolkit})
    assert io.read(tmp_path / "toolkit.mat", "key").trial_mask.values.tolist() == codes.tolist()
    # scores of one model: MATLAB's 1 x n matrices come back squeezed
    scr = {"modelset": _cell(["only"]), "segset": _cell(segments),
           "scoremat": np.array([[0.5, -1.5, 2.0]]),
           "scoremask": np.array([[1, 0, 1]], np.uint8)}  # fmt: skip
    scipy.io.savemat(tmp_path / "scr.mat", {"scr": scr})
    back = io.read(tmp_path / "scr.mat")
    assert back.attrs["bosaris_kind"] == "scores" and back.model.values.tolist() == ["only"]
    assert back.score.values.tolist() == [[0.5, 0.0, 2.0]]
    assert back.score_mask.values.tolist() == [[True, False, True]]
    # another variable name: the kind comes from the fields
    ndx = {"row_ids": _cell(models), "column_ids": _cell(segments),
           "trial_mask": np.array([[1, 0, 1], [0, 0, 1]], dtype=np.uint8)}  # fmt: skip
    scipy.io.savemat(tmp_path / "other.mat", {"trials": ndx})
    assert io.read(tmp_path / "other.mat").attrs["bosaris_kind"] == "ndx"


def _matlab_v73(path, name, fields):
    """A v7.3 MAT file laid out as MATLAB writes one (independently of our writer)."""
    with h5py.File(path, "w", userblock_size=512) as f:
        group = f.create_group(name)
        group.attrs["MATLAB_class"] = np.bytes_("struct")
        refs = f.create_group("#refs#")
        for field, value in fields.items():
            if isinstance(value, list):  # n x 1 cell of strings
                cells = np.empty((1, len(value)), dtype=h5py.ref_dtype)
                for k, text in enumerate(value):
                    units = np.array([ord(c) for c in text], dtype=np.uint16).reshape(-1, 1)
                    ds = refs.create_dataset(f"{field}{k}", data=units)
                    ds.attrs["MATLAB_class"] = np.bytes_("char")
                    cells[0, k] = ds.ref
                ds = group.create_dataset(field, data=cells)
                ds.attrs["MATLAB_class"] = np.bytes_("cell")
            else:
                ds = group.create_dataset(field, data=value.T)  # column-major: reversed dims
                ds.attrs["MATLAB_class"] = np.bytes_(value.dtype.name)
    with open(path, "r+b") as f:
        f.write(b"MATLAB 7.3 MAT-file, Platform: GLNXA64, HDF5 schema 1.00 .".ljust(128))


def test_reads_a_matlab_v73_file(tmp_path):
    score = np.array([[0.25, 1.0, -3.0], [2.0, 0.0, 4.5]])
    mask = np.array([[1, 1, 0], [1, 0, 1]], dtype=np.uint8)
    fields = {"row_ids": ["m1", "m2"], "column_ids": ["t1", "t2", "t3"], "scores": score,
              "score_mask": mask}  # fmt: skip
    _matlab_v73(tmp_path / "scr.mat", "scr", fields)
    back = io.read(tmp_path / "scr.mat")
    assert back.segment.values.tolist() == ["t1", "t2", "t3"]
    assert back.score.values.tolist() == np.where(mask, score, 0).tolist()
    assert back.score_mask.values.tolist() == (mask == 1).tolist()


def test_large_v73_matrices_are_read_lazily(tmp_path, monkeypatch):
    from bosaris_dask.io.mat import v73

    monkeypatch.setattr(v73, "_LAZY_BYTES", 0)
    obj, arrays = _objects()["scores64"]
    path = io.write(obj, tmp_path / "s.mat", mat_version="7.3")
    back = io.read(path)
    assert hasattr(back.score.data, "dask")
    assert back.score_mask.values.tolist() == arrays["score_mask"].tolist()


def test_bad_codes_of_a_lazy_v73_key_name_the_trial(tmp_path, monkeypatch):
    from bosaris_dask.io.mat import v73

    monkeypatch.setattr(v73, "_LAZY_BYTES", 0)
    codes = np.array([[1, -1, 0], [0, 5, -1]], dtype=np.int8)
    fields = {"row_ids": ["m1", "m2"], "column_ids": ["t1", "t2", "t3"], "trial_mask": codes}
    _matlab_v73(tmp_path / "key.mat", "key", fields)
    key = io.read(tmp_path / "key.mat")  # lazy: found when the block is read
    with pytest.raises(TrialError, match=r"key.mat: key: .*found 5 at \(m2, t2\)"):
        key.trial_mask.compute()


def test_errors_name_the_file_and_field(tmp_path):
    bad = tmp_path / "notmat.mat"
    bad.write_bytes(b"hello, this is not a MAT file at all" * 10)
    with pytest.raises(StoreError, match="notmat.mat: not a readable MAT file"):
        io.read(bad)
    models, segments = ["m1", "m2"], ["t1", "t2"]
    codes = np.array([[1, 7], [0, -1]], dtype=np.int8)
    scipy.io.savemat(tmp_path / "k.mat", {"key": {"row_ids": _cell(models),
                     "column_ids": _cell(segments), "trial_mask": codes}})  # fmt: skip
    with pytest.raises(StoreError, match=r"k.mat: key: .*found 7 at \(m1, t2\)"):
        io.read(tmp_path / "k.mat")
    scipy.io.savemat(tmp_path / "s.mat", {"key": {"row_ids": _cell(models),
                     "column_ids": _cell(segments + ["t3"]), "trial_mask": codes}})  # fmt: skip
    with pytest.raises(StoreError, match=r"key.trial_mask has shape \(2, 2\) but there are 2 row"):
        io.read(tmp_path / "s.mat")
    scipy.io.savemat(tmp_path / "d.mat", {"ndx": {"row_ids": _cell(["m", "m"]),
                     "column_ids": _cell(["t"]), "trial_mask": np.ones((2, 1))}})  # fmt: skip
    with pytest.raises(StoreError, match=r"ndx.row_ids: duplicate id 'm'"):
        io.read(tmp_path / "d.mat")
    empty = _cell(["m", ""])  # MATLAB's '' in a cell array: said "holds ndarray, not strings"
    empty[1, 0] = np.zeros((0, 0))
    scipy.io.savemat(tmp_path / "e.mat", {"ndx": {"row_ids": empty,
                     "column_ids": _cell(["t"]), "trial_mask": np.ones((2, 1))}})  # fmt: skip
    with pytest.raises(StoreError, match=r"ndx.row_ids holds an empty id \(entry 2\)"):
        io.read(tmp_path / "e.mat")
    scipy.io.savemat(tmp_path / "none.mat", {"x": np.ones(3)})
    with pytest.raises(StoreError, match="expected one struct variable"):
        io.read(tmp_path / "none.mat")
    key, _ = _objects()["key"]
    io.write(key, tmp_path / "key.mat")
    with pytest.raises(StoreError, match="holds a key, expected scores"):
        io.read(tmp_path / "key.mat", "scores")


def test_v73_links_out_of_the_file_are_not_followed(tmp_path):
    secret = tmp_path / "secret.h5"
    with h5py.File(secret, "w") as f:
        f["scores"] = np.ones((3, 2))
    fields = {"row_ids": ["m1", "m2"], "column_ids": ["t1", "t2", "t3"],
              "score_mask": np.ones((2, 3), dtype=np.uint8)}  # fmt: skip
    path = tmp_path / "linked.mat"
    _matlab_v73(path, "scr", fields)
    with h5py.File(path, "r+") as f:
        f["scr"]["scores"] = h5py.ExternalLink(str(secret), "/scores")
    with pytest.raises(StoreError, match="external link to .*secret.h5.* not followed"):
        io.read(path)


def test_a_matrix_of_another_shape_is_refused_not_reshaped(tmp_path):
    # 3 models x 5 segments stored 5 x 3: reshaping it mixed the trials (a silent wrong key)
    mask = np.array([[1, -1, 0, -1, 1], [-1, -1, 1, 0, 0], [0, 1, -1, -1, 1]], dtype=np.int8)
    ids = {"row_ids": _cell(["m1", "m2", "m10"]), "column_ids": _cell([f"s{j}" for j in range(5)])}
    scipy.io.savemat(tmp_path / "t.mat", {"key": {**ids, "trial_mask": mask.T.copy()}})
    want = r"t.mat: key.trial_mask has shape \(5, 3\) but there are 3 row ids and 5 column"
    with pytest.raises(StoreError, match=want + r" ids \(transposed\?\)"):
        io.read(tmp_path / "t.mat")
    scipy.io.savemat(tmp_path / "ok.mat", {"key": {**ids, "trial_mask": mask}})
    assert io.read(tmp_path / "ok.mat").trial_mask.values.tolist() == mask.tolist()
    one = {"row_ids": _cell(["m1"]), "column_ids": ids["column_ids"], "trial_mask": mask[:1]}
    scipy.io.savemat(tmp_path / "one.mat", {"key": one})  # 1 x 5: squeezed to a vector, read back
    assert io.read(tmp_path / "one.mat").trial_mask.values.tolist() == mask[:1].tolist()


def test_char_matrix_ids_lose_their_padding(tmp_path):
    # MATLAB's char({'m1', 'm2', 'm10'}) pads the rows with spaces, as v7.3 files show too
    mask = np.array([[1, -1], [-1, 1], [1, 0]], dtype=np.int8)
    key = {"row_ids": np.array(["m1 ", "m2 ", "m10"]), "column_ids": _cell(["s1", "s2"]),
           "trial_mask": mask}  # fmt: skip
    scipy.io.savemat(tmp_path / "c.mat", {"key": key})
    assert io.read(tmp_path / "c.mat").model.values.tolist() == ["m1", "m2", "m10"]


def test_v73_chars_of_code_points_beyond_16_bits_are_not_cut():
    # hdf5storage writes a char outside the BMP as a uint32 code point (MATLAB_int_decode=4);
    # reading it as uint16 turned 's😀' into 's\uf600', an id no key has
    from bosaris_dask.io.mat.v73 import _chars

    wide = np.array([[ord(c)] for c in "s😀"], dtype=np.uint32)  # (length, 1), as stored
    assert _chars(wide) == "s😀"
    units = np.frombuffer("s😀".encode("utf-16-le"), dtype="<u2")  # MATLAB: UTF-16 units
    assert _chars(units[:, None].astype(np.uint16)) == "s😀"


def test_ids_with_nul_characters_are_refused_with_the_file(tmp_path):
    # MATLAB's char arrays would read 'a\x00b' as 'a b' (v5) or end it at the NUL (7.3)
    key = make_key(["a\x00b", "c"], ["s"], np.array([[1], [-1]]))
    for version in ("5", "7.3"):
        path = tmp_path / f"k{version}.mat"
        with pytest.raises(StoreError) as err:
            io.write(key, path, mat_version=version)
        assert str(err.value) == (f"{path}: ids with NUL characters cannot be stored in a MAT "
                                  "file's modelset: 'a\\x00b'")  # fmt: skip
    assert list(tmp_path.iterdir()) == []


def test_convert_writes_version_7_3_when_asked(tmp_path, capsys):
    from bosaris_dask.cli import main

    key, _ = _objects()["key"]
    io.write(key, tmp_path / "key.zarr")
    out = tmp_path / "key.mat"
    assert main(["convert", str(tmp_path / "key.zarr"), str(out), "--mat-version", "7.3",
                 "-q"]) == 0  # fmt: skip
    assert mat.is_v73(out)
    assert io.read(out).trial_mask.values.tolist() == key.trial_mask.values.tolist()
    assert main(["convert", str(tmp_path / "key.zarr"), str(tmp_path / "k.h5"),
                 "--mat-version", "7.3"]) == 1  # fmt: skip
    assert "--mat-version is for a .mat output" in capsys.readouterr().err
    assert not (tmp_path / "k.h5").exists()


def test_errors_name_the_fields_as_the_file_names_them(tmp_path):
    # the toolkit's names (what this package writes): an error says scoremask, not score_mask
    cell = np.empty((2, 1), dtype=object)
    cell[:, 0] = ["m1", "m2"]
    segs = np.empty((3, 1), dtype=object)
    segs[:, 0] = ["t1", "t2", "t3"]
    scipy.io.savemat(tmp_path / "s.mat", {"scr": {
        "modelset": cell, "segset": segs, "scoremat": np.zeros((2, 3)),
        "scoremask": np.ones((3, 2), dtype=bool)}})  # fmt: skip
    with pytest.raises(StoreError, match=r"s\.mat: scr\.scoremask has shape \(3, 2\) but there "
                       r"are 2 row ids and 3 column ids \(transposed\?\)"):  # fmt: skip
        io.read(tmp_path / "s.mat")


def test_quality_tables_with_nul_ids_are_refused_and_quality_objects_sent_to_zarr(tmp_path):
    from bosaris_dask.trials import make_quality

    table = quality_table(["a\x00b"], [[1.0]])
    with pytest.raises(StoreError, match=r"q\.mat: ids with NUL characters cannot be stored"):
        io.write_quality(table, tmp_path / "q.mat")
    both = make_quality(quality_table(["m"], [[1.0]]), quality_table(["s"], [[2.0]]))
    with pytest.raises(StoreError, match="a Quality object of both sides is stored as zarr"):
        io.write(both, tmp_path / "both.mat")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("variable", "fields", "message"),
    [
        ("scr", {"scoremat": [[1.0, 2.0]], "scoremask": [[1.0, np.nan]]},
         r"scr.scoremask holds nan at trial \(m1, s2\), not a mask value"),
        ("ndx", {"trial_mask": np.array([[1, 2]], dtype=np.uint8)},
         r"ndx.trial_mask holds 2 at trial \(m1, s2\)"),
        ("key", {"tar": [[1.0, np.nan]], "non": [[0.0, 0.0]]},
         r"key.tar holds nan at trial \(m1, s2\)"),
    ],
)  # fmt: skip
def test_masks_hold_mask_values(tmp_path, variable, fields, message):
    # each was read as a trial (any value but 0) without a word; a float's nonzero value is a
    # trial, as MATLAB's logical() reads it (whose NaN is an error)
    ids = {
        "modelset": np.array(["m1"], dtype=object),
        "segset": np.array(["s1", "s2"], dtype=object),
    }
    scipy.io.savemat(tmp_path / "x.mat", {variable: {**ids, **fields}})
    with pytest.raises(StoreError, match=message):
        io.read(tmp_path / "x.mat").compute()
    scipy.io.savemat(tmp_path / "y.mat", {"scr": {**ids, "scoremat": [[1.0, 2.0]],
                                                  "scoremask": [[0.5, 0.0]]}})  # fmt: skip
    assert io.read(tmp_path / "y.mat").score_mask.values.tolist() == [[True, False]]


def test_a_float_signed_key_mask_reads_as_from_hdf5(tmp_path):
    # a key's trial_mask of floats: by its sign past 0.5, as the HDF5 reader (MATLAB's
    # meaning); it was refused here (0.25 is no code) where HDF5 read it
    signs = np.array([[0.25, 0.75, -0.6], [1.0, -1.0, -0.5]])
    ids = {"modelset": np.array(["m1", "m2"], dtype=object),
           "segset": np.array(["s1", "s2", "s3"], dtype=object)}  # fmt: skip
    scipy.io.savemat(tmp_path / "k.mat", {"key": {**ids, "trial_mask": signs}})
    key = io.read(tmp_path / "k.mat")
    assert key.trial_mask.values.tolist() == [[0, 1, -1], [1, -1, 0]]
    with h5py.File(tmp_path / "k.h5", "w") as f:
        f["trial_mask"] = signs
        f["ID/row_ids"] = np.array([b"m1", b"m2"])
        f["ID/column_ids"] = np.array([b"s1", b"s2", b"s3"])
    assert (
        io.read(tmp_path / "k.h5", "key").trial_mask.values.tolist()
        == key.trial_mask.values.tolist()
    )
    scipy.io.savemat(tmp_path / "n.mat", {"key": {**ids, "trial_mask": signs * np.nan}})
    with pytest.raises(StoreError, match=r"key.trial_mask holds nan at trial \(m1, s1\)"):
        io.read(tmp_path / "n.mat").compute()


def test_a_quality_table_of_no_ids_is_refused_by_version_5_and_kept_by_7_3(tmp_path):
    from bosaris_dask.io.mat import read_quality_mat, write_quality_mat

    empty = quality_table([], np.zeros((0, 2)), measures=["snr", "duration"])
    with pytest.raises(StoreError, match="q.mat: a quality table of no ids cannot be stored in a "
                                         "version 5"):  # fmt: skip
        write_quality_mat(empty, tmp_path / "q.mat")
    assert list(tmp_path.iterdir()) == []  # (it wrote a file that did not read back)
    write_quality_mat(empty, tmp_path / "q.mat", mat_version="7.3")
    assert read_quality_mat(tmp_path / "q.mat").shape == (0, 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_trial_keeps_its_type(tmp_path, dtype):
    # a 1 x 1 single matrix came back float64 (scipy's simplify_cells made it a Python float)
    scores = make_scores(["m"], ["s"], np.array([[0.1]], dtype=dtype))
    io.write(scores, tmp_path / "s.mat")
    back = io.read(tmp_path / "s.mat")
    assert back.score.dtype == dtype and back.score.values.tolist() == [[dtype(0.1)]]
    assert back.score_mask.values.tolist() == [[True]]
    key = make_key(["m"], ["s"], [[-1]])
    io.write(key, tmp_path / "k.mat")
    assert io.read(tmp_path / "k.mat").trial_mask.values.tolist() == [[-1]]


def test_a_lazy_v73_mask_of_other_values_names_the_trial(tmp_path, monkeypatch):
    from bosaris_dask.io.mat import v73

    monkeypatch.setattr(v73, "_LAZY_BYTES", 0)
    mask = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, np.nan]])
    fields = {"row_ids": ["m1", "m2"], "column_ids": ["t1", "t2", "t3"], "trial_mask": mask}
    _matlab_v73(tmp_path / "ndx.mat", "ndx", fields)
    ndx = io.read(tmp_path / "ndx.mat")  # lazy: found when the block is read
    with pytest.raises(StoreError, match=r"ndx.trial_mask holds nan at trial \(m2, t3\)"):
        ndx.trial_mask.compute()


def test_an_ndx_struct_named_key_reads_as_an_ndx_when_asked(tmp_path):
    """A struct ``key`` holding an Ndx's logical ``trialmask`` (no ``tar``/``non``: not the
    toolkit's Key) reads as a key of targets only, and the note says to read it with
    ``--kind ndx``, which failed: "holds a key, expected an ndx" (audit)."""
    from bosaris_dask.io.mat import read_mat

    def cells(ids):
        return np.array(ids, dtype=object).reshape(-1, 1)

    path = tmp_path / "keyndx.mat"
    mask = np.array([[1, 1, 0], [0, 1, 1]], bool)
    scipy.io.savemat(path, {"key": {"modelset": cells(["a", "b"]), "segset": cells(["x", "y", "z"]),
                                    "trialmask": mask}})  # fmt: skip
    assert read_mat(path, "ndx").trial_mask.values.tolist() == mask.tolist()
    signed = tmp_path / "signed.mat"  # a key's signed mask stays no ndx
    scipy.io.savemat(signed, {"key": {"modelset": cells(["a"]), "segset": cells(["x", "y"]),
                                      "trial_mask": np.array([[1, -1]], np.int8)}})  # fmt: skip
    with pytest.raises(StoreError, match="negative values: a key, not an ndx"):
        read_mat(signed, "ndx")


def test_a_quality_struct_without_numeric_values_is_an_error_naming_the_field(tmp_path):
    """No ``values``: a table of NaN ("no quality") without a word; char ``values``: a bare
    ValueError naming no file (audit)."""

    def cells(ids):
        return np.array(ids, dtype=object).reshape(-1, 1)

    scipy.io.savemat(tmp_path / "none.mat", {"qual": {"ids": cells(["s1"])}})
    scipy.io.savemat(tmp_path / "text.mat", {"qual": {"ids": cells(["a", "b", "c"]),
                                                      "values": "abc"}})  # fmt: skip
    with pytest.raises(StoreError, match=r"none.mat: qual.values is missing"):
        io.read_quality(tmp_path / "none.mat")
    with pytest.raises(StoreError, match=r"text.mat: qual.values holds <U3, expected numbers"):
        io.read_quality(tmp_path / "text.mat")


@pytest.mark.parametrize("lazy", [False, True])
def test_an_ndx_of_signed_values_is_refused_read_eagerly_or_lazily(tmp_path, monkeypatch, lazy):
    """Below 64 MiB refused, above it (read lazily) its -1 entries were read as trials (audit):
    the outcome depended on the file's size."""
    from bosaris_dask.io.mat import v73

    if lazy:
        monkeypatch.setattr(v73, "_LAZY_BYTES", 0)
    mask = np.array([[1.0, -1.0, 0.0], [0.0, 1.0, 1.0]])
    fields = {"row_ids": ["m1", "m2"], "column_ids": ["t1", "t2", "t3"], "trial_mask": mask}
    _matlab_v73(tmp_path / "ndx.mat", "ndx", fields)
    with pytest.raises(StoreError, match=r"ndx.mat: ndx.trial_mask holds negative values: a key"):
        io.read(tmp_path / "ndx.mat").trial_mask.compute()


def test_a_missing_field_is_named_as_the_toolkit_names_it(tmp_path):
    # "scr.score_mask is missing" named the HDF5 layout's dataset, not the struct's field
    def cells(ids):
        return np.array(ids, dtype=object).reshape(-1, 1)

    scipy.io.savemat(tmp_path / "s.mat", {"scr": {"modelset": cells(["m"]), "segset": cells(["a"]),
                                                  "scoremat": np.array([[1.0]])}})  # fmt: skip
    with pytest.raises(StoreError, match=r"s.mat: scr.scoremask is missing"):
        io.read(tmp_path / "s.mat")
