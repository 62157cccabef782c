"""Per-row and per-column arrays inside the tasks (``bosaris_dask.passes.inline_blocks``): the
blocks a task gets are the slices of the array along the chunks, under any chunking, and no task is
made for them; a label-derived key's mask, a condition's group index and a pass's row positions
add no tasks to a pass."""

from __future__ import annotations

import cloudpickle
import dask
import dask.array as da
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.conditions import condition_codes, condition_table
from bosaris_dask.passes import runner
from bosaris_dask.passes.inline_blocks import blockwise, per_block
from bosaris_dask.trials import key_from_labels, make_key


def _tasks(x: da.Array) -> int:
    (optimized,) = dask.optimize(x)
    return len(optimized.__dask_graph__())


def _chunks(draw, n: int) -> tuple[int, ...]:
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=4))) if n > 1 else []
    return tuple(np.diff([0, *cuts, n]).tolist())


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 12), cols=st.integers(1, 12),
       data=st.data())  # fmt: skip
def test_each_task_gets_its_blocks_slices_and_no_task_is_added(seed, rows, cols, data):
    rng = np.random.default_rng(seed)
    r, c = rng.integers(-9, 9, size=rows), rng.integers(-9, 9, size=cols)
    chunks = (_chunks(data.draw, rows), _chunks(data.draw, cols))
    x = da.ones((rows, cols), chunks=chunks, dtype=np.int64)
    out = blockwise(lambda a, b, m: m * (a[:, None] * 10 + b[None, :]), "ij",
                    per_block(r, chunks[0]), "i", per_block(c, chunks[1]), "j", x, "ij",
                    dtype=np.int64)  # fmt: skip
    np.testing.assert_array_equal(out.compute(), r[:, None] * 10 + c[None, :])
    assert _tasks(out) == x.npartitions  # the ones fused in, nothing for r and c


def test_blocks_that_do_not_match_the_arrays_chunks_are_an_error():
    x = da.ones((6, 4), chunks=(3, 4))
    with pytest.raises(ValueError, match=r"per-block values in chunks \(2, 4\), the arrays' "):
        blockwise(lambda a, m: m, "ij", per_block(np.arange(6), (2, 4)), "i", x, "ij")
    with pytest.raises(ValueError, match=r"chunks \(2, 2\) do not split an array of shape"):
        per_block(np.arange(6), (2, 2))


def test_dask_arrays_among_them_are_unified_as_dask_unifies_them():
    x, y = da.ones((6, 4), chunks=(3, 4)), da.ones((6, 4), chunks=(2, 2))
    out = blockwise(lambda a, b: a + b, "ij", x, "ij", y, "ij", dtype=float)
    assert out.chunks == ((2, 1, 1, 2), (2, 2))
    assert out.compute().tolist() == [[2.0] * 4] * 6


def test_a_label_key_mask_is_one_task_per_chunk():
    ml, sl = [f"spk{i % 3}" for i in range(10)], [f"spk{i % 4}" for i in range(7)]
    key = key_from_labels([f"m{i}" for i in range(10)], ml, [f"s{i}" for i in range(7)], sl,
                          chunks=(3, 2))  # fmt: skip
    mask = key.trial_mask.data
    expected = np.where(np.array(ml)[:, None] == np.array(sl)[None, :], 1, -1)
    np.testing.assert_array_equal(mask.compute(), expected)
    assert _tasks(mask) == mask.npartitions == 16


def test_a_condition_group_index_is_one_task_per_chunk():
    mids, sids = [f"m{i}" for i in range(5)], [f"s{i}" for i in range(4)]
    key = make_key(mids, sids, np.ones((5, 4), dtype=np.int8))
    tables = [condition_table("model", mids, {"g": list("ababa"), "l": list("xyxyy")}),
              condition_table("segment", sids, {"l": list("xxyy")})]  # fmt: skip
    cond = condition_codes(key, tables, ["model.g", "same.l"])
    groups = cond.group_index((2, 3))
    g, same = np.array([0, 1, 0, 1, 0]), np.array(list("xyxyy"))[:, None] == np.array(list("xxyy"))
    np.testing.assert_array_equal(groups.compute(), g[:, None] * 2 + ~same)
    assert _tasks(groups) == groups.npartitions == 6


def test_a_pass_with_inline_lead_blocks_has_only_chunk_and_merge_tasks():
    x = da.ones((20, 30), chunks=(7, 9))  # 3 x 4 chunks
    rows = runner.Aggregation("rows", lambda r, b: np.array([r @ b.sum(axis=1)]), 1)
    inline = runner.graph([rows], [x], lead=[per_block(np.arange(20), x.chunks[0]), "i"],
                          split_every=4)  # fmt: skip
    tasks = runner.graph([rows], [x], lead=[da.arange(20, chunks=x.chunks[0]), "i"],
                         split_every=4)  # fmt: skip
    for graph in (inline, tasks):
        assert runner.finalize([rows], graph.compute())[0].tolist() == [30.0 * sum(range(20))]
    none = runner.graph([runner.Aggregation("n", lambda b: np.array([b.size]), 1)], [x],
                        split_every=4)  # fmt: skip
    assert _tasks(inline) == _tasks(none) == _tasks(tasks) - 3  # arange: a task per row block


def test_blocks_differing_only_inside_are_different_inputs():
    # dask names its ArrayValuesDep by the repr of the values: numpy shortens an array of
    # more than 1,000 elements to its ends, so these two would share one name (and one graph
    # would compute one mask for both keys)
    ids = [f"m{i}" for i in range(3000)]
    labels = np.arange(3000) % 7
    other = labels.copy()
    other[1500] = 0  # was 2: now the label of segment s0
    one, two = (key_from_labels(ids, lab, ["s0", "s1"], [0, 1], chunks=(3000, 2)).trial_mask.data
                for lab in (labels, other))  # fmt: skip
    assert one.name != two.name
    got_one, got_two = dask.compute(one, two)
    assert np.argwhere(got_one != got_two).tolist() == [[1500, 0]]
    np.testing.assert_array_equal(got_one[:, 0], np.where(labels == 0, 1, -1))
    np.testing.assert_array_equal(got_two[:, 1], np.where(other == 1, 1, -1))


def test_blocks_every_row_chunk_reuses_become_keys_past_the_inline_budget(monkeypatch):
    # a key's column codes when its chunks are whole rows: each of the row chunks' tasks would
    # carry the whole column array to a worker process (60 x 253 kB a pass at 1e9 trials)
    from dask.utils import key_split

    from bosaris_dask.passes import inline_blocks

    c = np.arange(500.0)
    x = da.ones((40, 500), chunks=(4, 500))  # 10 row chunks, one column chunk

    def tasks_holding(budget: int) -> tuple[list[str], int]:
        monkeypatch.setattr(inline_blocks, "INLINE_BYTES", budget, raising=False)
        out = blockwise(lambda m, b: m * b[None, :], "ij", x, "ij", per_block(c, (500,)), "j",
                        dtype=float)  # fmt: skip
        np.testing.assert_array_equal(out.compute(), np.broadcast_to(c, (40, 500)))
        graph = dict(dask.optimize(out)[0].__dask_graph__())
        heaviest = max(len(cloudpickle.dumps(graph[k])) for k in out.__dask_keys__() for k in k)
        return sorted({key_split(k) for k in graph}), heaviest

    names, heaviest = tasks_holding(9 * c.nbytes)  # 9 copies past the first: inline
    assert "per-block" not in names and heaviest > c.nbytes
    names, heaviest = tasks_holding(9 * c.nbytes - 1)
    assert "per-block" in names and heaviest < c.nbytes  # the tasks name the one block
