"""Reading embedding files: every format gives the same ids and values, read lazily; bad files
give one-line errors naming the file."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
import zarr

from bosaris_dask.embeddings import from_arrays, info, read, write
from bosaris_dask.errors import ParseError, StoreError, StoreNotFoundError, TrialError

IDS = np.array([f"spk{i % 3}-utt{i}" for i in range(11)])


@pytest.fixture
def values():
    return np.random.default_rng(0).normal(size=(11, 5)).astype(np.float32)


def _write(fmt, tmp_path, ids, values):
    if fmt == "npy":
        path = tmp_path / "e.npy"
        np.save(path, values)
        (tmp_path / "e.ids").write_text("".join(f"{i}\n" for i in ids))
    elif fmt == "npz":
        path = tmp_path / "e.npz"
        np.savez(path, ids=ids, embeddings=values)
    elif fmt == "hdf5":
        path = tmp_path / "e.h5"
        with h5py.File(path, "w") as f:
            f["ids"] = np.asarray(ids, dtype="S")
            f["embeddings"] = values
    elif fmt == "zarr":
        path = tmp_path / "e.zarr"
        g = zarr.open_group(str(path), mode="w")
        g.create_array("ids", shape=(len(ids),), dtype=str)[:] = np.asarray(ids, dtype=object)
        g.create_array("embeddings", data=values, chunks=(4, values.shape[1]))
    else:
        kaldiio = pytest.importorskip("kaldiio")
        ark, scp = tmp_path / "e.ark", tmp_path / "e.scp"
        kaldiio.save_ark(str(ark), {i: v for i, v in zip(ids, values, strict=True)},
                         scp=str(scp))  # fmt: skip
        path = scp if fmt == "scp" else ark
    return path


@pytest.mark.parametrize("fmt", ["npy", "npz", "hdf5", "zarr", "scp", "ark"])
def test_every_format_reads_the_same_ids_and_values(fmt, tmp_path, values):
    emb = read(_write(fmt, tmp_path, IDS, values), chunk_rows=4)
    assert emb.id.values.tolist() == IDS.tolist()
    assert emb.embedding.dims == ("id", "component")
    assert emb.embedding.data.chunks[0] == (4, 4, 3)  # lazy, in row chunks
    np.testing.assert_array_equal(emb.embedding.values, values)
    assert emb.attrs["format"] == fmt


def test_npy_takes_an_explicit_ids_file_and_txt_sibling(tmp_path, values):
    np.save(tmp_path / "x.npy", values)
    (tmp_path / "x.txt").write_text("\n".join(IDS))
    assert read(tmp_path / "x.npy").id.values.tolist() == IDS.tolist()
    (tmp_path / "other.lst").write_text("\n".join(IDS[::-1]))
    assert read(tmp_path / "x.npy", ids=tmp_path / "other.lst").id.values[0] == IDS[-1]


def test_info_counts_dimension_and_norms(values):
    bad = values.copy()
    bad[2, 1] = np.nan
    d = info(from_arrays(IDS, bad))
    norms = np.linalg.norm(np.delete(values, 2, axis=0).astype(np.float64), axis=1)
    assert (d["count"], d["dimension"], d["dtype"], d["non_finite"]) == (11, 5, "float32", 1)
    assert d["norm_min"] == pytest.approx(norms.min(), rel=1e-12)
    assert d["norm_max"] == pytest.approx(norms.max(), rel=1e-12)


def test_duplicate_ids_are_named_with_the_file(tmp_path, values):
    ids = IDS.copy()
    ids[7] = ids[2]
    path = _write("npz", tmp_path, ids, values)
    with pytest.raises(TrialError, match=rf"e.npz: duplicate id '{ids[2]}'"):
        read(path)


def test_bad_files_name_the_file(tmp_path, values):
    np.save(tmp_path / "lonely.npy", values)
    with pytest.raises(StoreNotFoundError, match="lonely.npy: a .npy file needs its ids"):
        read(tmp_path / "lonely.npy")
    (tmp_path / "lonely.ids").write_text("\n".join(IDS[:5]))
    with pytest.raises(ParseError, match="lonely.npy: 5 ids for 11 embeddings"):
        read(tmp_path / "lonely.npy")
    np.savez(tmp_path / "noids.npz", embeddings=values)
    with pytest.raises(ParseError, match="noids.npz: no 'ids' array"):
        read(tmp_path / "noids.npz")
    np.savez(tmp_path / "flat.npz", ids=IDS, embeddings=values.ravel())
    with pytest.raises(ParseError, match="flat.npz: embeddings must be a 2-D"):
        read(tmp_path / "flat.npz")
    with pytest.raises(StoreError, match="unknown embedding format 'csv'"):
        read(tmp_path / "e.csv")
    with pytest.raises(StoreNotFoundError, match="missing.h5"):
        read(tmp_path / "missing.h5")
    (tmp_path / "two.ids").write_text("a b\n")
    np.save(tmp_path / "two.npy", values[:1])
    with pytest.raises(ParseError, match="two.ids:1: expected one id per line"):
        read(tmp_path / "two.npy")


def test_kaldi_vectors_of_another_dimension_are_named(tmp_path, values):
    kaldiio = pytest.importorskip("kaldiio")
    vecs = {"a": values[0], "b": values[1, :3]}
    kaldiio.save_ark(str(tmp_path / "v.ark"), vecs, scp=str(tmp_path / "v.scp"))
    with pytest.raises(ParseError, match="v.ark: id 'b' has dimension 3, the first has 5"):
        read(tmp_path / "v.ark")
    emb = read(tmp_path / "v.scp")  # lazy: found when the rows are read
    with pytest.raises(ParseError, match="v.scp: id 'b' has dimension 3"):
        emb.embedding.compute()


def test_kaldi_without_kaldiio_says_how_to_install(tmp_path, monkeypatch, capsys):
    import sys

    from bosaris_dask.cli import main

    (tmp_path / "x.scp").write_text("a x.ark:5\n")
    monkeypatch.setitem(sys.modules, "kaldiio", None)  # import kaldiio now fails
    with pytest.raises(ImportError, match=r"needs kaldiio: pip install 'bosaris-dask\[emb"):
        read(tmp_path / "x.scp")
    # the CLI says so in one line (it was an ImportError traceback), for a binary .vec too
    np.save(tmp_path / "e.npy", np.eye(3))
    (tmp_path / "e.ids").write_text("a\nb\nc\n")
    (tmp_path / "mean.vec").write_bytes(b"\0BFV \4\3\0\0\0")
    out = ["--out", str(tmp_path / "s.zarr")]
    for enrol, more in (("e.npy", ["--center", str(tmp_path / "mean.vec")]), ("x.scp", [])):
        argv = ["score", "--enrol", str(tmp_path / enrol), "--test", str(tmp_path / "e.npy")]
        assert main([*argv, *more, *out]) == 1
        err = capsys.readouterr().err
        assert "needs kaldiio: pip install 'bosaris-dask[embeddings]'" in err
        assert "Traceback" not in err


@pytest.mark.parametrize("fmt", ["npy", "hdf5", "scp"])
def test_graph_keys_follow_the_file(fmt, tmp_path, values):
    path = _write(fmt, tmp_path, IDS, values)
    assert read(path).embedding.data.name == read(path).embedding.data.name


@pytest.mark.parametrize("ext", ["npy", "npz", "h5", "zarr"])
def test_write_then_read_gives_the_same_set(ext, tmp_path, values):
    kaldiio = pytest.importorskip("kaldiio")
    kaldiio.save_ark(str(tmp_path / "in.ark"), dict(zip(IDS, values, strict=True)))
    emb = read(tmp_path / "in.ark", chunk_rows=4)
    out = write(emb, tmp_path / f"out.{ext}", chunk_rows=3)
    back = read(out)
    assert back.id.values.tolist() == IDS.tolist()
    assert back.embedding.values.tobytes() == values.tobytes()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_writing_kaldi_is_refused(tmp_path, values):
    with pytest.raises(StoreError, match="kaldiio.save_ark"):
        write(from_arrays(IDS, values), tmp_path / "x.ark")


def test_empty_cut_short_and_unreadable_files_are_named(tmp_path):
    """Zero-byte and truncated .npz/.npy files were EOFError/BadZipFile tracebacks; a 0-row file
    was read (an empty --center centered nothing, an empty cohort divided by zero); a bad Kaldi
    offset was kaldiio's AssertionError."""
    ids = np.array(["a", "b"])
    np.savez(tmp_path / "ok.npz", ids=ids, embeddings=np.ones((2, 3), np.float32))
    (tmp_path / "zero.npz").write_bytes(b"")
    (tmp_path / "cut.npz").write_bytes((tmp_path / "ok.npz").read_bytes()[:200])
    (tmp_path / "zero.npy").write_bytes(b"")
    (tmp_path / "zero.ids").write_text("")
    np.savez(tmp_path / "empty.npz", ids=np.array([], "U1"), embeddings=np.zeros((0, 3), "f4"))
    for name, message in [("zero.npz", "not a readable .npz file"),
                          ("cut.npz", "not a readable .npz file"),
                          ("zero.npy", "not a readable .npy array"),
                          ("empty.npz", "no embeddings in the file")]:  # fmt: skip
        with pytest.raises(ParseError, match=f"{name}: {message}"):
            read(tmp_path / name)
    kaldiio = pytest.importorskip("kaldiio")
    kaldiio.save_ark(str(tmp_path / "e.ark"), {"a": np.ones(3, np.float32)},
                     scp=str(tmp_path / "e.scp"))  # fmt: skip
    (tmp_path / "bad.scp").write_text(f"a {tmp_path / 'e.ark'}:999999\n")
    with pytest.raises(ParseError, match=r"bad.scp: id 'a': cannot read .*e.ark:999999"):
        read(tmp_path / "bad.scp")


def test_an_embedding_file_given_as_scores_is_named_as_such(tmp_path):
    import bosaris_dask as bd

    np.savez(tmp_path / "e.npz", ids=np.array(["a"]), embeddings=np.ones((1, 2), np.float32))
    with pytest.raises(StoreError, match="e.npz: embeddings, not trials or scores"):
        bd.read(tmp_path / "e.npz")  # was "NUL byte in a text file"


def test_a_cut_short_archive_and_a_norm_beyond_float64_are_named(tmp_path):
    from bosaris_dask.embeddings import scores_from_embeddings
    from bosaris_dask.errors import ScoreError

    kaldiio = pytest.importorskip("kaldiio")
    kaldiio.save_ark(str(tmp_path / "e.ark"), {k: np.ones(4, np.float32) for k in "abc"})
    (tmp_path / "cut.ark").write_bytes((tmp_path / "e.ark").read_bytes()[:-5])
    with pytest.raises(ParseError, match=r"cut.ark: cannot read the archive after id 'b'"):
        read(tmp_path / "cut.ark")  # was numpy's ValueError traceback
    huge = from_arrays(["e"], np.array([[1.5e308, 1.5e308]]), source="huge.npz")
    with pytest.raises(ScoreError, match="huge.npz: id 'e' has a norm beyond float64"):
        scores_from_embeddings(huge, from_arrays(["t"], np.ones((1, 2))))  # was a score of 0


def test_an_empty_model_map_is_refused(tmp_path):
    from bosaris_dask.embeddings import read_model_map

    (tmp_path / "map.txt").write_text("# models of nobody\n\n")  # scored 0 models, silently
    with pytest.raises(ParseError, match="map.txt: no 'model segment' lines in the model map"):
        read_model_map(tmp_path / "map.txt")


def _kaldi_set(folder, values, scale):
    """``xvector.ark``/``xvector.scp`` in ``folder`` written from inside it, as kaldiio's
    ``WriteHelper('ark,scp:xvector.ark,xvector.scp')`` does in an output folder: the script's
    archive paths are relative (``xvector.ark:OFFSET``)."""
    import os

    kaldiio = pytest.importorskip("kaldiio")
    folder.mkdir()
    here = os.getcwd()
    os.chdir(folder)
    try:
        rows = {f"id{i:04d}": (scale * v).astype(np.float32) for i, v in enumerate(values)}
        kaldiio.save_ark("xvector.ark", rows, scp="xvector.scp")
    finally:
        os.chdir(here)
    return folder / "xvector.scp"


def test_a_relative_archive_in_two_places_is_refused_not_read_from_the_wrong_one(
    tmp_path, values, monkeypatch
):
    # The enrolment script says 'xvector.ark:27'; run from the test folder, which has its own
    # xvector.ark with ids of the same length, every offset landed on a test vector: all scores
    # wrong (EER 47 % for 0 %), nothing said.
    enrol = _kaldi_set(tmp_path / "enrol", values, 1.0)
    _kaldi_set(tmp_path / "test", values[::-1], 2.0)
    monkeypatch.chdir(tmp_path / "test")
    with pytest.raises(ParseError, match=r"enrol/xvector.scp:1: archive 'xvector.ark' is "
                                         r"relative, and there are two: .*test/xvector.ark \(from "
                                         r"the working directory"):  # fmt: skip
        read("../enrol/xvector.scp")
    # Found in one place only (beside the script here), that one is read, by absolute path:
    # a worker process in another working directory reads the same archive.
    monkeypatch.chdir(tmp_path)
    emb = read(enrol)
    monkeypatch.chdir(tmp_path / "test")
    np.testing.assert_array_equal(emb.embedding.values, values)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    missing = r"archive 'xvector.ark' not found: neither .*elsewhere/xvector.ark \(from the work"
    with pytest.raises(ParseError, match=missing):
        read(_moved_script(tmp_path))


def _moved_script(tmp_path):
    """The enrolment script copied to a folder without its archive."""
    folder = tmp_path / "scp_only"
    folder.mkdir()
    (folder / "xvector.scp").write_text((tmp_path / "enrol" / "xvector.scp").read_text())
    return folder / "xvector.scp"


def _field_layout(layout, tmp_path, ids, values):
    """An embedding set as one of the field's tools writes it (module docstring of
    ``bosaris_dask.embeddings.formats``)."""
    if layout == "hdf5-other-names":  # ids as variable-length strings in an (n, 1) column
        path = tmp_path / "x.h5"
        with h5py.File(path, "w") as f:
            f.create_dataset("utt_ids", data=np.asarray(ids, dtype=object)[:, None],
                             dtype=h5py.string_dtype())  # fmt: skip
            f["xvectors"] = values[:, None, :]  # (n, 1, d)
    elif layout == "hdf5-per-id":  # hyperion's H5DataWriter: a dataset per id
        path = tmp_path / "hyp.h5"
        with h5py.File(path, "w") as f:
            for i, v in zip(ids, values, strict=True):
                f[i.replace("-", "/")] = v  # an id with '/' is a path of groups
        ids = np.array([i.replace("-", "/") for i in ids])
    elif layout == "zarr-xarray":  # our own Dataset written by xarray's to_zarr
        import xarray as xr

        path = tmp_path / "x.zarr"
        coords = {"id": ids.astype(object)}
        xr.Dataset({"embedding": (("id", "dim"), values)}, coords=coords).to_zarr(
            path, consolidated=False
        )
    elif layout == "npz-other-names":
        path = tmp_path / "x.npz"
        np.savez(path, names=ids, data=values)
    elif layout == "npz-per-id":  # np.savez(out, **vectors)
        path = tmp_path / "d.npz"
        np.savez(path, **dict(zip(ids, values, strict=True)))
    elif layout == "npy-folder":  # speechbrain: one ID.npy per utterance, ids with '/' nested
        path = tmp_path / "emb"
        for i, v in zip(ids, values, strict=True):
            f = path / (i.replace("-", "/", 1) + ".npy")
            f.parent.mkdir(parents=True, exist_ok=True)
            np.save(f, v)
        ids = np.array([i.replace("-", "/", 1) for i in ids])
    else:  # .npy with a Windows ids file: byte-order mark and CRLF
        path = tmp_path / "w.npy"
        np.save(path, values)
        (tmp_path / "w.ids").write_bytes(("\ufeff" + "\r\n".join(ids) + "\r\n").encode())
    return path, ids


@pytest.mark.parametrize(
    "layout",
    [
        "hdf5-other-names",
        "hdf5-per-id",
        "zarr-xarray",
        "npz-other-names",
        "npz-per-id",
        "npy-folder",
        "npy-bom",
    ],
)
def test_the_fields_layouts_read_each_id_with_its_own_vector(layout, tmp_path, values):
    from bosaris_dask.cli.embeddings import is_embedding_file

    path, ids = _field_layout(layout, tmp_path, IDS, values)
    emb = read(path)
    got = dict(zip(emb.id.values.tolist(), emb.embedding.values, strict=True))
    assert sorted(got) == sorted(ids.tolist())  # a BOM stuck to the first id failed here
    for i, v in zip(ids.tolist(), values, strict=True):
        np.testing.assert_array_equal(got[i], v)
    assert is_embedding_file(str(path))  # so `info` shows it as embeddings


@pytest.mark.parametrize(
    ("name", "write", "message"),
    [
        ("n.pkl", lambda p, v: p.write_bytes(b"\x80\x04."), r"a pickle .* is not read: unpickl"),
        ("o.npz", lambda p, v: np.savez(p, ids=np.array(list(IDS), dtype=object),
                                        embeddings=v), r"stored as Python objects"),
        ("d.npy", lambda p, v: np.save(p, np.array([{"a": 1}]), allow_pickle=True),
         r"holds Python objects \(np.save of a dict"),
        ("t.h5", lambda p, v: _h5(p, ids=IDS.astype("S"), embeddings=v.T),
         r"11 ids for 5 embeddings: the array is 5 x 11, dimension first"),
    ],
)  # fmt: skip
def test_layouts_that_are_not_read_say_what_to_do(name, write, message, tmp_path, values):
    path = tmp_path / name
    write(path, values)
    if name == "d.npy":
        (tmp_path / "d.ids").write_text("a\n")
    with pytest.raises((ParseError, StoreError), match=message):
        read(path)


def _h5(path, **arrays):
    with h5py.File(path, "w") as f:
        for name, value in arrays.items():
            f[name] = value


@pytest.mark.parametrize(
    ("written", "hint"),
    [
        (lambda i: f"{i[0]},{i[1]}", r"the file has it as '0,spk0-utt0': an ids file written "
                                     r"with its index \(pandas' to_csv\)\?"),
        (lambda i: f"{float(i[0])}", r"the file has it as '0.0': numbers stored as floats\?"),
    ],
)  # fmt: skip
def test_a_missing_id_the_file_spells_otherwise_is_explained(tmp_path, values, written, hint):
    from bosaris_dask.embeddings import scores_from_embeddings
    from bosaris_dask.trials import make_ndx

    wanted = IDS if "," in written((0, "x")) else np.array([str(k) for k in range(len(IDS))])
    np.save(tmp_path / "e.npy", values)
    (tmp_path / "e.ids").write_text("".join(f"{written((k, i))}\n" for k, i in enumerate(wanted)))
    emb = read(tmp_path / "e.npy")
    ndx = make_ndx(wanted[:2].tolist(), wanted[2:4].tolist())
    with pytest.raises(TrialError, match=hint):
        scores_from_embeddings(emb, emb, trials=ndx)


@pytest.mark.parametrize("fmt", ["npy", "hdf5", "zarr"])
def test_a_lazy_set_whose_file_is_rewritten_is_an_error_not_other_vectors(fmt, tmp_path, values):
    emb = read(_write(fmt, tmp_path, IDS, values), chunk_rows=4)
    np.testing.assert_array_equal(emb.embedding.values, values)
    more = np.append(IDS, "new")  # another set at the same path (its size tells it)
    _write(fmt, tmp_path, more, np.vstack([values, values[:1]]) * 2)
    with pytest.raises(StoreError, match="ids would be paired with other values"):
        emb.embedding.load()
    np.testing.assert_array_equal(read(_write(fmt, tmp_path, IDS, values)).embedding, values)
