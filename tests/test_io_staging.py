"""Tests of staging: realigning scores in another id order once (issue 11, item 4) and the
scratch directory of text inputs on clusters (issue 11, item 5)."""

from __future__ import annotations

import contextlib
import logging

import dask
import numpy as np
import pytest
import xarray as xr
from dask.callbacks import Callback
from hypothesis import given, settings
from hypothesis import strategies as st

import bosaris_dask as bd
from bosaris_dask.trials import align, make_key, make_ndx, make_scores

M, S, ROWS = 400, 30, 10  # 40 chunks of 10 full rows


def _ids(prefix: str, n: int) -> np.ndarray:
    return np.array([f"{prefix}{i:04d}" for i in range(n)], dtype=object)


@pytest.fixture(scope="module")
def trials():
    rng = np.random.default_rng(11)
    models, segments = _ids("m", M), _ids("s", S)
    codes = rng.integers(-1, 2, size=(M, S)).astype(np.int8)
    codes[0, :2] = (1, -1)
    score = np.round(rng.normal(size=(M, S)) + 1.5 * codes, 2)  # ties
    mask = rng.random((M, S)) < 0.97
    mask[codes != 0] = True
    key = make_key(models, segments, codes, chunks=(ROWS, S))
    return models, segments, key, score, mask


class _Count(Callback):
    def __init__(self):
        super().__init__()
        self.tasks = 0

    def _pretask(self, key, dsk, state):
        self.tasks += 1


def _evaluate(scores, key) -> tuple[xr.Dataset, int]:
    with dask.config.set(scheduler="threads"), _Count() as count:
        result = bd.evaluate(scores, key)
    return result, count.tasks


@pytest.mark.parametrize("axes", ["model", "segment", "both"])
def test_scores_in_another_id_order_are_realigned_once(trials, axes, caplog):
    models, segments, key, score, mask = trials
    rng = np.random.default_rng(12)
    pm = rng.permutation(M) if axes in ("model", "both") else np.arange(M)
    ps = rng.permutation(S) if axes in ("segment", "both") else np.arange(S)
    aligned = make_scores(models, segments, score, mask, chunks=(ROWS, S))
    shuffled = make_scores(
        models[pm], segments[ps], score[np.ix_(pm, ps)], mask[np.ix_(pm, ps)], chunks=(ROWS, S)
    )
    expected, base = _evaluate(aligned, key)
    with caplog.at_level(logging.INFO, logger="bosaris_dask.io"):
        got, tasks = _evaluate(shuffled, key)
    xr.testing.assert_identical(got, expected)
    # every pass reads one task per chunk: the realignment adds a few tasks per chunk (162
    # here, for 40 chunks), not a task per pair of chunks (1,600)
    assert tasks - base <= 5 * (M // ROWS), (tasks, base)
    realigned = [r for r in caplog.records if "realigned once" in r.getMessage()]
    assert len(realigned) == (axes != "segment")  # one chunk across: reordered in place


def test_realigned_scores_with_missing_and_extra_ids(trials):
    models, segments, key, score, mask = trials
    keep = np.r_[M - 1 : 150 : -1, 3:100]  # reversed, with 51 models of the key missing
    extra = np.array(["x1", "x2"], dtype=object)
    ids = np.concatenate([models[keep], extra])
    values = np.vstack([score[keep], np.ones((2, S))])
    shuffled = make_scores(ids, segments, values, np.vstack([mask[keep], np.ones((2, S), bool)]))
    shuffled = shuffled.chunk({"model": 25})
    lazy = align(shuffled, key)  # by default nothing is computed: a lazy reindex
    assert not any(name.startswith("realigned-") for name in lazy.score.data.dask.layers)
    aligned = align(shuffled, key, once=True)
    assert aligned.model.values.tolist() == models.tolist()
    assert aligned.score.data.npartitions == M // ROWS
    present = np.isin(np.arange(M), keep)
    trials_of_key = key.trial_mask.values != 0  # align keeps only the key's trials
    want_mask = np.where(present[:, None], mask, False) & trials_of_key
    assert aligned.score_mask.values.tolist() == want_mask.tolist()
    assert aligned.score.values.tolist() == np.where(present[:, None], score, 0).tolist()
    xr.testing.assert_identical(aligned.compute(), lazy.compute())
    with pytest.raises(bd.errors.MissingTrialsError):
        bd.evaluate(shuffled, key)


# --------------------------------------------------------------------------------------------
# text inputs on a cluster of several hosts (issue 11, item 5)
# --------------------------------------------------------------------------------------------

KEY_TEXT = "m1 s1 target\nm1 s2 nontarget\nm2 s1 nontarget\nm2 s2 target\nm3 s1 nontarget\n"
SCORES_TEXT = "m1 s1 2.5\nm1 s2 -1.0\nm2 s1 0.5\nm2 s2 1.5\nm3 s1 -3.0\n"


@pytest.fixture
def texts(tmp_path):
    (tmp_path / "key.txt").write_text(KEY_TEXT)
    (tmp_path / "scores.txt").write_text(SCORES_TEXT)
    return tmp_path / "key.txt", tmp_path / "scores.txt"


def _local_cluster(**options):
    distributed = pytest.importorskip("distributed")
    return distributed.LocalCluster(threads_per_worker=1, dashboard_address=None, **options)


@pytest.fixture
def cluster():
    with _local_cluster(n_workers=1, processes=False) as local:
        yield local


@pytest.fixture
def elsewhere(monkeypatch):
    """Make every worker look as if it ran on another host."""
    from bosaris_dask.io import staging

    monkeypatch.setattr(staging, "_is_this_host", lambda host: False)


def _read_staged(path, **options):
    from bosaris_dask.io.text import read_text

    return read_text(path, memmap_threshold=0, **options)  # always memory-mapped scratch


def test_text_staged_for_workers_elsewhere_is_refused_with_advice(texts, cluster, elsewhere):
    from distributed import Client

    key_path, _ = texts
    with Client(cluster), pytest.raises(bd.errors.ClusterError) as error:
        _read_staged(key_path)
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"{key_path}: ")
    assert f"bosaris-dask convert {key_path} {key_path}.zarr" in message
    assert "--scratch-dir DIR" in message


def test_scores_realigned_for_workers_elsewhere_are_refused_with_the_way_out(trials, cluster,
                                                                           elsewhere):  # fmt: skip
    # the advice put the description where a file name goes ('bosaris-dask convert scores in
    # another id order than the key's scores in ... .zarr'); converting keeps the order anyway
    from distributed import Client

    models, segments, key, score, mask = trials
    shuffled = make_scores(models[::-1], segments, score[::-1], mask[::-1], chunks=(ROWS, S))
    with Client(cluster), pytest.raises(bd.errors.ClusterError) as error:
        align(shuffled, key, once=True)
    assert str(error.value).startswith("scores in another id order than the key's: staging it")
    assert str(error.value).endswith("; pass --scratch-dir DIR (scratch= in Python) with DIR "
                                     "shared by all hosts")  # fmt: skip
    assert "convert" not in str(error.value)


def test_text_staged_before_the_cluster_is_refused_when_it_comes(texts, cluster, elsewhere):
    from distributed import Client

    from bosaris_dask.io.staging import check_staged_readable

    key = _read_staged(texts[0])  # no cluster yet: the temporary folder
    check_staged_readable()  # no client: fine
    with Client(cluster) as client, pytest.raises(bd.errors.ClusterError, match="convert it"):
        check_staged_readable(client)
    del key


def test_scratch_directory_serves_workers_elsewhere(tmp_path, texts, cluster, elsewhere):
    from distributed import Client

    shared = tmp_path / "shared"
    shared.mkdir()
    with Client(cluster):
        key = _read_staged(texts[0], scratch_dir=shared)
        scores = _read_staged(texts[1], scratch_dir=shared)
        assert sorted(p.suffix for p in shared.iterdir()) == [".dat"] * 3  # mask, score, mask
        with dask.config.set({"bosaris_dask.scratch": str(shared)}):
            via_config = _read_staged(texts[0])
        result = bd.evaluate(scores, key)
    expected = bd.evaluate(bd.io.read(texts[1]), bd.io.read(texts[0]))
    xr.testing.assert_identical(result, expected)
    assert via_config.trial_mask.values.tolist() == key.trial_mask.values.tolist()


def test_cli_scratch_option_and_refusal(tmp_path, texts, cluster, elsewhere, monkeypatch, capsys):
    from bosaris_dask.cli import main
    from bosaris_dask.io.text import collect, read_text

    staged = {**read_text.__kwdefaults__, "memmap_threshold": 0}  # text inputs memory-mapped
    monkeypatch.setattr(read_text, "__kwdefaults__", staged)
    monkeypatch.setattr(collect, "MEMMAP_THRESHOLD", 0)  # (also as the CLI reads text lists)
    key_path, scores_path = texts
    argv = ["evaluate", "--key", str(key_path), "--scores", str(scores_path), "-q"]
    argv += ["--scheduler", cluster.scheduler_address]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bosaris-dask: error: ")
    assert "bosaris-dask convert" in err and "--scratch-dir DIR" in err
    shared = tmp_path / "shared"
    shared.mkdir()
    assert main([*argv, "--scratch-dir", str(shared)]) == 0
    assert "scores" in capsys.readouterr().out  # the table, named after the system
    assert main([*argv, "--scratch-dir", str(tmp_path / "nowhere")]) == 1
    assert "scratch directory" in capsys.readouterr().err


def test_cli_says_when_scores_are_realigned(tmp_path, trials, capsys):
    from bosaris_dask import io
    from bosaris_dask.cli import main

    models, segments, key, score, mask = trials
    pm = np.random.default_rng(13).permutation(M)
    shuffled = make_scores(models[pm], segments, score[pm], mask[pm], chunks=(ROWS, S))
    chunk_mb = ROWS * S * 8 / 2**20
    io.write(key, tmp_path / "key.zarr", chunk_mb=chunk_mb)
    io.write(shuffled, tmp_path / "sys.zarr", chunk_mb=chunk_mb)
    argv = ["evaluate", "--key", str(tmp_path / "key.zarr"), "--scores", str(tmp_path / "sys.zarr")]
    assert main([*argv, "--cluster", "threads"]) == 0
    err = capsys.readouterr().err
    assert "ids in another order than the key's: realigned once through" in err
    assert main([*argv, "--cluster", "threads", "-q"]) == 0
    assert capsys.readouterr().err == ""


@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(1, 12),
    cols=st.integers(1, 9),
    chunk=st.tuples(st.integers(1, 5), st.integers(1, 5)),
    seed=st.integers(0, 2**16),
    dtype=st.sampled_from([np.float32, np.float64]),
)
def test_realigning_once_equals_the_lazy_reindex(rows, cols, chunk, seed, dtype):
    """Any order, subset and superset of ids, any chunking: the same matrices as xarray's."""
    rng = np.random.default_rng(seed)
    models, segments = _ids("m", rows), _ids("s", cols)
    score = rng.normal(size=(rows, cols)).astype(dtype)
    mask = rng.random((rows, cols)) < 0.7
    scores = make_scores(models, segments, score, mask, chunks=chunk)
    pick_m = rng.permutation(rows)[: rng.integers(1, rows + 1)]
    pick_s = rng.permutation(cols)[: rng.integers(1, cols + 1)]
    new_m = np.concatenate([models[pick_m], _ids("x", int(rng.integers(0, 3)))])
    new_s = np.concatenate([segments[pick_s], _ids("y", int(rng.integers(0, 3)))])
    rng.shuffle(new_m)
    like = make_ndx(new_m, new_s, chunks=(int(rng.integers(1, 6)), int(rng.integers(1, 6))))
    once = align(scores, like, once=True)
    lazy = align(scores, like)
    for name in ("score", "score_mask"):
        assert once[name].dtype == lazy[name].dtype
        np.testing.assert_array_equal(once[name].values, lazy[name].values)
    assert once.model.values.tolist() == new_m.tolist()
    assert once.segment.values.tolist() == new_s.tolist()


# --------------------------------------------------------------------------------------------
# in-memory inputs go to a cluster's workers once, not with every pass's graph
# --------------------------------------------------------------------------------------------

SIDE = 400  # 160,000 trials: float64 scores of 1.28 MB, over the 1 MiB from which they move


@pytest.fixture(scope="module")
def two_processes():
    with _local_cluster(n_workers=2, processes=True) as local:
        yield local


@pytest.fixture(scope="module")
def big_texts(tmp_path_factory):
    rng = np.random.default_rng(21)
    folder = tmp_path_factory.mktemp("texts")
    codes = np.where(rng.random((SIDE, SIDE)) < 0.05, 1, -1).astype(np.int8)
    score = rng.normal(size=(SIDE, SIDE)) + 2.0 * (codes == 1)
    models, segments = _ids("m", SIDE), _ids("s", SIDE)
    key = make_key(models, segments, codes)
    scores = make_scores(models, segments, score, np.ones_like(codes, dtype=bool))
    return bd.io.write(key, folder / "key.txt"), bd.io.write(scores, folder / "scores.txt")


def _graph_warnings(record) -> list[str]:
    return [str(w.message) for w in record if "Sending large graph" in str(w.message)]


def test_text_inputs_are_sent_to_the_workers_once(big_texts, two_processes):
    from distributed import Client

    from bosaris_dask.io.scattered import named
    from bosaris_dask.io.staging import _in_memory_bytes, on_the_workers

    key_path, scores_path = big_texts
    with dask.config.set(scheduler="threads"):
        expected = bd.evaluate(bd.io.read(scores_path), bd.io.read(key_path))
    threshold = {"distributed.admin.large-graph-warning-threshold": "1MiB"}
    with dask.config.set(threshold), Client(two_processes) as client, pytest.warns() as record:
        both = (bd.io.read(scores_path), bd.io.read(key_path))
        scores, key = on_the_workers(both)
        assert scores is both[0] and key is both[1]  # the graphs computed name the copies
        assert _in_memory_bytes(named(scores.score.data, client)) == 0
        result = bd.evaluate(scores, key)
        assert result.attrs["passes"] >= 2
        import warnings

        warnings.warn("a marker, so that the record is never empty", UserWarning, stacklevel=1)
    # before, each pass sent the 1.44 MB of scores and mask again ("Sending large graph")
    assert _graph_warnings(record) == []
    xr.testing.assert_identical(result, expected)


def test_cli_sends_text_inputs_read_before_the_cluster_once(big_texts, two_processes, capsys):
    from bosaris_dask.cli import main

    key_path, scores_path = big_texts
    argv = ["evaluate", "--key", str(key_path), "--scores", str(scores_path), "-q"]
    assert main([*argv, "--cluster", "threads"]) == 0
    expected = capsys.readouterr().out
    threshold = {"distributed.admin.large-graph-warning-threshold": "1MiB"}
    with dask.config.set(threshold), pytest.warns() as record:
        assert main([*argv, "--scheduler", two_processes.scheduler_address]) == 0
        import warnings

        warnings.warn("a marker, so that the record is never empty", UserWarning, stacklevel=1)
    assert _graph_warnings(record) == []
    assert capsys.readouterr().out == expected


def test_scores_from_embeddings_send_their_embeddings_once(two_processes):
    # the embeddings move, nothing is computed; the screens that compute the scores in each
    # pass build graphs of their own from the embeddings, which name the workers' copies too
    from distributed import Client

    from bosaris_dask.embeddings import from_arrays, scores_from_embeddings
    from bosaris_dask.io.scattered import forget, named
    from bosaris_dask.io.staging import _in_memory_bytes, on_the_workers
    from bosaris_dask.progress import compute

    rng = np.random.default_rng(5)
    spk = np.arange(1500) % 50
    centres = rng.normal(size=(50, 64))
    enrol = from_arrays(_ids("e", 1500), centres[spk] + rng.normal(size=(1500, 64)))
    test = from_arrays(_ids("t", 1500), centres[spk] + rng.normal(size=(1500, 64)))
    key = make_key(_ids("e", 1500), _ids("t", 1500),
                   np.where(spk[:, None] == spk[None, :], 1, -1))  # fmt: skip
    scores = scores_from_embeddings(enrol, test, chunks=(500, 500))
    with dask.config.set(scheduler="threads"):
        expected = bd.evaluate(scores, key)
    threshold = {"distributed.admin.large-graph-warning-threshold": "1MiB"}
    with dask.config.set(threshold), Client(two_processes) as client, pytest.warns() as record:
        assert _in_memory_bytes(scores.score.data) >= 2 * 1500 * 64 * 8  # 1.5 MB
        kept = on_the_workers({"systems": [scores], "enrol": enrol, "key": key}, client)
        assert kept["systems"][0] is scores and kept["enrol"] is enrol
        assert _in_memory_bytes(named(scores.score.data, client)) == 0
        assert _in_memory_bytes(named(enrol.embedding.data, client)) == 0
        np.testing.assert_array_equal(compute(named(enrol.embedding.data, client)),
                                      enrol.embedding.values)  # fmt: skip
        result = bd.evaluate(kept["systems"][0], kept["key"])
        forget(client)
        assert _in_memory_bytes(named(scores.score.data, client)) > 0
        import warnings

        warnings.warn("a marker, so that the record is never empty", UserWarning, stacklevel=1)
    assert _graph_warnings(record) == []  # each pass sent the 1.5 MB again before
    xr.testing.assert_identical(result, expected)


def test_data_sent_once_survive_a_lost_worker():
    # sent with client.scatter, a piece was lost with its worker and every later pass failed
    # ('lost dependencies'); sent as tasks, the scheduler gives it again
    import os

    from distributed import Client

    from bosaris_dask.io.scattered import recorded
    from bosaris_dask.io.staging import on_the_workers
    from bosaris_dask.progress import compute

    ids = _ids("m", 600)
    values = np.random.default_rng(0).normal(size=(600, 600))
    scores = make_scores(ids, ids, values, chunks=(150, 600))
    with _local_cluster(n_workers=2, processes=True) as local, Client(local) as client:
        moved = on_the_workers(scores, client)
        before = compute(moved.score.data.sum(axis=1))
        victim = next(a for a, keys in client.has_what().items() if keys)
        with contextlib.suppress(Exception):
            client.run(lambda: os._exit(1), workers=[victim])
        client.wait_for_workers(1)
        np.testing.assert_array_equal(compute(moved.score.data.sum(axis=1)), before)
        np.testing.assert_array_equal(compute(scores.score.data.sum(axis=1)), before)
        # still named, not sent again: a future 'lost' for a moment is computed again (a
        # computation in that moment dropped the record for good)
        assert recorded(client)


def test_data_sent_before_a_restart_are_sent_again_not_named():
    # client.restart() cancels the futures of the data sent: graphs still named them and every
    # later computation of the same data failed ('lost dependencies')
    from distributed import Client

    from bosaris_dask.io.scattered import recorded
    from bosaris_dask.io.staging import on_the_workers
    from bosaris_dask.progress import compute

    ids = _ids("m", 400)
    values = np.random.default_rng(4).normal(size=(400, 400))
    with _local_cluster(n_workers=2, processes=True) as local, Client(local) as client:
        on_the_workers(make_scores(ids, ids, values), client)
        assert recorded(client)
        client.restart()
        fresh = make_scores(ids, ids, values)  # the same data: the same layer name
        expected = float(fresh.score.data.sum().compute(scheduler="sync"))
        assert float(compute(fresh.score.data.sum())) == pytest.approx(expected, rel=1e-12)
        assert not recorded(client)


def test_xarray_objects_computed_name_the_data_sent(two_processes):
    # progress.compute of a Dataset (a text write's bands, a table's columns) sent the data
    # with the graph again: only dask arrays and delayed values were rewritten
    from distributed import Client

    from bosaris_dask.io.scattered import named
    from bosaris_dask.io.staging import _in_memory_bytes, on_the_workers
    from bosaris_dask.progress import compute

    ids = _ids("m", SIDE)
    values = np.random.default_rng(3).normal(size=(SIDE, SIDE))
    scores = make_scores(ids, ids, values, np.ones((SIDE, SIDE), bool))
    threshold = {"distributed.admin.large-graph-warning-threshold": "1MiB"}
    with dask.config.set(threshold), Client(two_processes) as client, pytest.warns() as record:
        on_the_workers(scores, client)
        later = scores * 2.0  # a graph made later from the same data
        assert _in_memory_bytes(later.score.data) > 0
        assert _in_memory_bytes(named(later, client).score.data) == 0
        assert _in_memory_bytes(named(later.score, client).data) == 0
        ids_array = later.model
        assert named(ids_array, client) is ids_array  # (nothing lazy: as it is)
        doubled = compute(later)
        import warnings

        warnings.warn("a marker, so that the record is never empty", UserWarning, stacklevel=1)
    assert _graph_warnings(record) == []
    np.testing.assert_array_equal(doubled.score.values, 2.0 * values)
    assert doubled.model.values.tolist() == list(ids)


def test_only_layers_named_by_their_data_are_recorded(two_processes):
    # a layer named by hand could be another array's of the same name: computed on the old data
    import dask.array as da
    from distributed import Client

    from bosaris_dask.io.scattered import named
    from bosaris_dask.io.staging import _in_memory_bytes, on_the_workers
    from bosaris_dask.progress import compute

    ids = _ids("m", 400)
    first = make_scores(ids, ids, np.ones((400, 400)))
    dims = ("model", "segment")
    first = first.assign(score=(dims, da.from_array(np.ones((400, 400)), name="mine")))
    second = first.assign(score=(dims, da.from_array(np.zeros((400, 400)), name="mine")))
    with Client(two_processes) as client:
        on_the_workers(first, client)
        assert _in_memory_bytes(named(first.score.data, client)) > 0  # not recorded
        assert float(compute(second.score.data.sum())) == 0.0


def test_a_command_on_an_existing_client_keeps_what_its_user_sent(big_texts, two_processes):
    # the command's end dropped every record of the client, the user's own ones too
    from distributed import Client

    from bosaris_dask.cli import main
    from bosaris_dask.io.scattered import recorded
    from bosaris_dask.io.staging import on_the_workers

    key_path, scores_path = big_texts
    with Client(two_processes) as client:
        on_the_workers(bd.io.read(scores_path), client)
        mine = recorded(client)
        assert mine
        argv = ["evaluate", "--key", str(key_path), "--scores", str(scores_path), "-q"]
        assert main(argv) == 0  # (the existing client: a command's own records end with it)
        assert recorded(client) == mine


def test_an_object_whose_data_were_sent_survives_a_restart_a_new_client_and_threads(big_texts):
    # on_the_workers returned the object with its graphs naming the client's futures: after a
    # restart ('lost dependencies'), on a new client, or on threads once the client had closed
    # ('Missing dependency') it could never be computed again
    from distributed import Client

    from bosaris_dask.io.staging import on_the_workers

    key_path, scores_path = big_texts
    scores, key = bd.io.read(scores_path), bd.io.read(key_path)
    with dask.config.set(scheduler="threads"):
        expected = bd.evaluate(scores, key)
    with _local_cluster(n_workers=2, processes=True) as local, Client(local) as client:
        scores, key = on_the_workers((scores, key), client)
        xr.testing.assert_identical(bd.evaluate(scores, key), expected)
        client.restart()
        xr.testing.assert_identical(bd.evaluate(scores, key), expected)
    with _local_cluster(n_workers=2, processes=True) as local, Client(local):
        xr.testing.assert_identical(bd.evaluate(scores, key), expected)
    with dask.config.set(scheduler="threads"):
        xr.testing.assert_identical(bd.evaluate(scores, key), expected)


def test_many_small_systems_are_sent_once_together(two_processes):
    # the bound was per matrix: twelve systems of 0.8 MB each went with every pass's graph
    # (9.3 MiB per pass)
    from distributed import Client

    from bosaris_dask.io.scattered import named
    from bosaris_dask.io.staging import SCATTER_FROM, _in_memory_bytes, on_the_workers

    ids = _ids("m", 200)
    rng = np.random.default_rng(8)
    systems = [make_scores(ids, ids, rng.normal(size=(200, 200))) for _ in range(12)]
    each = _in_memory_bytes(systems[0].score.data)
    assert each < SCATTER_FROM <= 12 * each
    with Client(two_processes) as client:
        on_the_workers(systems, client)
        assert all(_in_memory_bytes(named(s.score.data, client)) == 0 for s in systems)


@pytest.mark.parametrize("suffix", [".zarr", ".h5"])
def test_a_store_written_from_data_sent_names_them(two_processes, tmp_path, suffix):
    # the zarr and HDF5 writers build graphs of their own (xarray's fused to_zarr tasks,
    # batches of delayed chunks), in which progress found no layer to rewrite: the data went
    # out again once on_the_workers left the object as it is
    import warnings

    from distributed import Client

    from bosaris_dask.io.staging import on_the_workers

    ids = _ids("m", SIDE)
    values = np.random.default_rng(6).normal(size=(SIDE, SIDE))
    scores = make_scores(ids, ids, values)
    threshold = {"distributed.admin.large-graph-warning-threshold": "1MiB"}
    with dask.config.set(threshold), Client(two_processes) as client, pytest.warns() as record:
        on_the_workers(scores, client)
        bd.io.write(scores, tmp_path / f"s{suffix}")
        warnings.warn("a marker, so that the record is never empty", UserWarning, stacklevel=1)
    assert _graph_warnings(record) == []
    np.testing.assert_array_equal(bd.io.read(tmp_path / f"s{suffix}").score.values, values)
