"""The pass runner: specs combine exactly under any merge tree, one compute per pass, the
memory check and the lost-worker message before and around the work."""

from __future__ import annotations

from functools import partial
from types import SimpleNamespace

import dask
import dask.array as da
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.errors import ClusterError, MemoryLimitError
from bosaris_dask.passes import runner
from bosaris_dask.passes.inline_blocks import per_block
from bosaris_dask.passes.memory import TaskMemory

MB = 2**20


def _specs():
    total = runner.Aggregation("total", lambda rows, b: np.array([b.sum(), b.size]), 2)
    largest = runner.Aggregation(
        "largest", lambda rows, b: np.array([b.max()]), 1,
        combine=lambda r: r.max(axis=0), finalize=lambda v: float(v[0]),
    )  # fmt: skip
    first_row = runner.Aggregation(  # the smallest row holding a negative value
        "first negative row",
        lambda rows, b: np.array([rows[np.flatnonzero((b < 0).any(axis=1))].min(initial=1e9)]),
        1, combine=lambda r: r.min(axis=0), finalize=lambda v: int(v[0]),
    )  # fmt: skip
    return [total, largest, first_row]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 12), cols=st.integers(1, 12),
       split_every=st.integers(2, 5), data=st.data())  # fmt: skip
def test_specs_combine_exactly_under_any_chunking(seed, rows, cols, split_every, data):
    x = np.random.default_rng(seed).integers(-5, 100, size=(rows, cols)).astype(np.float64)
    chunks = (data.draw(st.integers(1, rows)), data.draw(st.integers(1, cols)))
    arr = da.from_array(x, chunks=chunks)
    inline = data.draw(st.booleans())  # the rows inside the chunk tasks, or tasks of their own
    positions = per_block(np.arange(rows), arr.chunks[0]) if inline else da.arange(
        rows, chunks=arr.chunks[0])  # fmt: skip
    lead = [positions, "i"]
    total, largest, first = runner.run_pass("test", _specs(), [arr], lead=lead,
                                            split_every=split_every)  # fmt: skip
    assert total.tolist() == [x.sum(), x.size]
    assert largest == x.max()
    negative = np.flatnonzero((x < 0).any(axis=1))
    assert first == (negative.min() if len(negative) else 1e9)


def test_one_compute_per_pass_and_none_while_building():
    arr = da.ones((20, 30), chunks=(7, 9))
    lead = [da.arange(20, chunks=arr.chunks[0]), "i"]
    calls = []

    def counting_get(dsk, keys, **kwargs):
        calls.append(keys)
        return dask.get(dsk, keys, **kwargs)

    with dask.config.set(scheduler=counting_get):
        runner.graph(_specs(), [arr], lead=lead, split_every=2)
        assert calls == []
        out = runner.run_pass("test", _specs(), [arr], lead=lead, split_every=2)
    assert len(calls) == 1 and out[0].tolist() == [600.0, 600.0]


def test_a_chunk_of_the_wrong_length_is_named():
    bad = runner.Aggregation("short", lambda b: np.array([1.0]), 2)
    with pytest.raises(ValueError, match="^short: a chunk gave 1 values, not 2$"):
        runner.run_pass("test", [bad], [da.ones((2, 2), chunks=1)], split_every=2)


class _FakeClient:
    def scheduler_info(self, n_workers):
        return {"workers": {"w1": {"memory_limit": 300 * MB, "nthreads": 1,
                                   "metrics": {"memory": 100 * MB}}}}  # fmt: skip


def test_memory_is_checked_before_any_work(monkeypatch):
    monkeypatch.setattr(runner, "current_client", lambda: _FakeClient())
    computed = []
    monkeypatch.setattr(runner, "compute", lambda *a, **k: computed.append(a))
    need = TaskMemory(inputs=200 * MB, buffers=0, results=0, merge=0)
    with pytest.raises(MemoryLimitError, match="^worker w1 would need about 400 MiB"):
        runner.run_pass("pass 1", _specs(), [da.ones((2, 2))], split_every=2, need=need)
    assert computed == []


def test_a_lost_worker_is_one_clear_message(monkeypatch):
    from distributed import KilledWorker

    def die(*args, **kwargs):
        raise KilledWorker("kernel-abc", SimpleNamespace(address="tcp://10.0.0.1:4000"), 3)

    monkeypatch.setattr(runner, "compute", die)
    message = r"^pass 1: workers died running a task \(.*kernel-abc.*10.0.0.1:4000.*-limit"
    with pytest.raises(ClusterError, match=message):
        runner.run_pass("pass 1", _specs(), [da.ones((2, 2))], split_every=2)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), split_every=st.integers(2, 4), data=st.data())
def test_object_specs_merge_any_objects_and_keep_what_they_read(seed, split_every, data):
    x = np.random.default_rng(seed).integers(0, 6, size=(9, 11))
    arr = da.from_array(x, chunks=(data.draw(st.integers(1, 9)), data.draw(st.integers(1, 11))))
    distinct = runner.Aggregation(
        "distinct", lambda b: set(np.unique(b).tolist()), None,
        combine=lambda sets: set().union(*sets), finalize=sorted,
    )  # fmt: skip
    count = runner.Aggregation("count", lambda b: b.size, None, combine=sum)
    assert runner.run_pass("objects", [distinct, count], [arr], split_every=split_every) == [
        sorted(set(x.ravel().tolist())),
        x.size,
    ]
    doubled = arr * 2
    kept, (total,) = runner.run_pass_and_keep(
        "keep", [count], [doubled], doubled, split_every=split_every
    )
    assert total == x.size
    np.testing.assert_array_equal(kept.compute(), 2 * x)


def _plus_table(block: np.ndarray, table: np.ndarray) -> np.ndarray:
    out = np.empty((1, 1), dtype=object)
    out[0, 0] = float(block.sum() + table[-1])
    return out


def test_a_pass_holds_a_kernels_tables_once_not_in_every_task():
    import pickle

    table = np.arange(200_000)  # 1.6 MB
    x = da.ones((40, 30), chunks=(10, 30))
    tasks = runner.chunk_tasks(partial(_plus_table, table=table), [x, "ij"], "plus-abc")
    (optimized,) = dask.optimize(tasks)
    sizes = {k: len(pickle.dumps(v)) for k, v in dict(optimized.__dask_graph__()).items()}
    assert [k for k, n in sizes.items() if n > table.nbytes] == ["tables-plus-abc"]
    assert len(sizes) == 5 and max(n for k, n in sizes.items() if k != "tables-plus-abc") < 5000
    assert [v[0] for v in tasks.compute()] == [300.0 + 199_999] * 4


def _sum_plus_table(block: np.ndarray, table: np.ndarray) -> np.ndarray:
    return np.array([block.sum() + table[-1]])


def _total_plus_table(block: np.ndarray, table: np.ndarray) -> float:
    return float(block.sum() + table[-1])


def _bins_noted(row: np.ndarray, block: np.ndarray, table: np.ndarray) -> int:
    return int(table[0] + block.size)


@pytest.mark.parametrize("length", [1, None])
def test_merge_tasks_carry_no_kernel_tables(length):
    # every merge task pickled the specs whole, the chunk kernel and its tables with them: a
    # bootstrap's 8 MB went with each merge (the chunk tasks read them once, as one key)
    import pickle

    table = np.arange(200_000)  # 1.6 MB
    kernel = partial(_sum_plus_table, table=table)
    if length is None:
        spec = runner.Aggregation("objects", partial(_total_plus_table, table=table), None,
                                  combine=sum)  # fmt: skip
    else:
        spec = runner.Aggregation("sum", kernel, length,
                                  note=partial(_bins_noted, table=table))  # fmt: skip
    x = da.ones((80, 30), chunks=(10, 30))
    (optimized,) = dask.optimize(runner.graph([spec], [x], split_every=2))
    sizes = {k: len(pickle.dumps(v)) for k, v in dict(optimized.__dask_graph__()).items()}
    big = [k for k, n in sizes.items() if n > table.nbytes]
    assert len(big) == 1 and big[0].startswith("tables-"), big
    assert len(sizes) > 8  # chunk tasks and a merge tree
    expected = 80 * 30 + 8 * 199_999
    (total,) = runner.run_pass("t", [spec], [x], split_every=2)
    if length is None:
        assert total == expected
    else:
        assert total[0][0] == expected and sorted(total[1]) == [300] * 8
