"""The dask graph of one pass: a task per chunk computing every
:class:`~bosaris_dask.passes.aggregation.Aggregation`'s contribution, then a tree of merge tasks.

Numeric contributions and partial totals travel between tasks in compact form
(:mod:`bosaris_dask.passes.compact`: only the non-zero counts, or 32-bit integers), decoded bit
for bit where they are added. The tables a pass's kernels close over are one key of the graph
that every chunk task reads, and the merge tasks carry only each spec's ``combine``.
:mod:`bosaris_dask.passes.runner` computes the graph.

Examples
--------
>>> import dask.array as da
>>> import numpy as np
>>> from bosaris_dask.passes.aggregation import Aggregation, finalize
>>> x = da.from_array(np.arange(12.0).reshape(3, 4), chunks=2)
>>> total = Aggregation("total", chunk=lambda b: np.array([b.sum()]), length=1)
>>> reduced = graph([total], [x], split_every=2)
>>> finalize([total], reduced.compute())
[array([66.])]
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import dask
import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.utils import funcname

from bosaris_dask import config
from bosaris_dask.passes import compact, inline_blocks, malloc
from bosaris_dask.passes.aggregation import (
    Aggregation,
    add_rows,
    for_merges,
    keep_total,
    merges_objects,
)
from bosaris_dask.passes.kernels import object_block

__all__ = ["graph", "chunk_tasks", "task_token", "identity"]


def _object_task(*blocks: Any, aggs: tuple[Aggregation, ...], tune: bool = False) -> np.ndarray:
    if tune:
        malloc.tune_once()
    return object_block([a.chunk(*blocks) for a in aggs])


def identity(x: np.ndarray, axis: Any, keepdims: bool) -> np.ndarray:
    """The reduction's chunk step: the chunk tasks already made each chunk's parts."""
    return x


class _Merge:
    """A merge task's work: every spec's ``combine`` of the parts below it.

    dask names each level of the merge tree by a token of this function, which it would get
    by pickling the specs (their kernels, closures and tables) once per level: a third of a
    small evaluation's time. The token is the chunk tasks' instead, which already depends on
    the specs and the inputs (so equal graphs still get equal names).
    """

    __name__ = "combine"  # dask names the merge tasks after it: combine-partial, ...

    def __init__(self, aggs: tuple[Aggregation, ...], token: str):
        self.aggs = aggs
        self.token = token

    def __dask_tokenize__(self) -> str:
        return self.token

    def __call__(self, x: np.ndarray, axis: Any, keepdims: bool) -> np.ndarray:
        parts = list(np.asarray(x, dtype=object).ravel())
        out = np.empty((1,) * x.ndim if keepdims else (), dtype=object)
        out[...] = None
        out.flat[0] = [a.combine([p[k] for p in parts]) for k, a in enumerate(self.aggs)]
        return out


class _Shared:
    """A value that a graph holds as data (dask would read a tuple or a list in a graph as
    a task or as keys)."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


def _apply_shared(*blocks: Any, shared: _Shared) -> Any:
    return shared.value(*blocks)


def chunk_tasks(func: Callable[..., Any], args: Sequence[Any], name: str) -> da.Array:
    """``func(*blocks)`` for every chunk of ``args`` (arrays and their indices, as for
    :func:`bosaris_dask.passes.inline_blocks.blockwise`; the output indexed ``ij``, one object per
    chunk), the tasks named ``name``.

    ``func``, with every table its ``partial`` holds, is one key of the graph that each task
    reads, not a copy inside each task: a distributed scheduler sends every task to a worker
    on its own, so a refinement pass's selection tables (555 kB at 1e9 trials) went out once
    per chunk, 33 MB per pass in 60 chunks. A worker now fetches them once.
    """
    shared = dask.delayed(_Shared(func), name=f"tables-{name}", pure=True)
    return inline_blocks.blockwise(
        _apply_shared, "ij", *args, shared=shared, name=name, adjust_chunks={"i": 1, "j": 1},
        concatenate=True, dtype=object, meta=np.empty((0, 0), dtype=object),
    )  # fmt: skip


def task_token(func: Callable[..., Any], *args: Any) -> str:
    """A deterministic token of ``func`` (a pass's kernel with its specs and tables) and its
    ``args``, for the names of its tasks.

    dask's ``tokenize`` walks every spec, table and closure one by one: a refinement pass
    with 9,000 conditions holds 45,000 specs, and naming it took 20 s. One pickle of ``func``
    takes a tenth of that, its arrays hashed in place (the exact AUC's tables of thousands of
    conditions are gigabytes); ``func`` that does not pickle (a lambda) is tokenized by dask.

    >>> task_token(partial(np.add, 1), 2) == task_token(partial(np.add, 1), 2)
    True
    >>> task_token(partial(np.add, 1), 2) == task_token(partial(np.add, 2), 2)
    False
    >>> table = np.arange(4.0)
    >>> task_token(partial(np.add, table)) == task_token(partial(np.add, table + [0, 0, 0, 1]))
    False
    """
    buffers: list[pickle.PickleBuffer] = []
    try:  # arrays out of band: hashed where they lie, not copied into the pickle
        blob = pickle.dumps(func, protocol=5, buffer_callback=buffers.append)
    except (pickle.PicklingError, AttributeError, TypeError):
        return tokenize(func, *args)
    digest = hashlib.blake2b(blob, digest_size=16)
    for buffer in buffers:
        digest.update(buffer.raw())
    return tokenize(digest.hexdigest(), *args)


def _object_graph(
    aggs: tuple[Aggregation, ...],
    args: list[Any],
    split_every: int | None,
    task: Callable[..., np.ndarray] | None = None,
    tune: bool = False,
):
    task = task or partial(_object_task, aggs=aggs, tune=tune)
    token = task_token(task, *args)  # once; blockwise and each merge level would each walk aggs
    per_chunk = chunk_tasks(task, args, f"{funcname(task).strip('_')}-{token}")
    merge = _Merge(tuple(for_merges(a) for a in aggs), token)
    return da.reduction(
        per_chunk, chunk=identity, combine=merge, aggregate=merge, axis=(0, 1),
        dtype=object, split_every=_merge_widths(per_chunk.numblocks, split_every),
        concatenate=True, meta=np.empty((), dtype=object),
    )  # fmt: skip


def _merge_widths(numblocks: tuple[int, int], split_every: int | None) -> dict[int, int] | None:
    """dask's per-axis ``split_every`` for merge tasks of at most ``split_every`` chunk results.

    dask splits an integer evenly over the reduced axes (its square root for two), so a grid of
    row chunks (``(n, 1)`` blocks, the usual trial matrix) merged pairwise: ``n - 1`` merges of
    2 results, each decoding and encoding its total, instead of about ``n / 7`` of 8. An axis of
    one block gets 1, the other axis everything (at least 2, as dask gives an integer).

    >>> _merge_widths((60, 1), 8), _merge_widths((1, 9), 8), _merge_widths((5, 7), 8)
    ({0: 8, 1: 1}, {0: 1, 1: 8}, {0: 2, 1: 2})
    """
    if split_every is None:
        return None
    split_every = max(2, int(split_every))
    if numblocks[1] == 1:
        return {0: split_every, 1: 1}
    if numblocks[0] == 1:
        return {0: 1, 1: split_every}
    side = max(2, int(split_every**0.5))
    return {0: side, 1: side}


def _chunk_task(*blocks: np.ndarray, aggs: tuple[Aggregation, ...], tune: bool) -> np.ndarray:
    if tune:  # once per worker process: see bosaris_dask.passes.malloc
        malloc.tune_once()
    parts = []
    for agg in aggs:
        if agg.length is None:  # an object spec riding along numeric ones
            parts.append(agg.chunk(*blocks))
            continue
        got = agg.chunk(*blocks)
        if isinstance(got, compact.Encoded):  # encoded by the kernel (compact.encode_counts)
            encoded, size, row = got, got.length, None
        else:
            row = np.asarray(got, dtype=np.float64).reshape(-1)
            encoded, size = compact.encode(row), row.size
        if size != agg.length:
            raise ValueError(f"{agg.name}: a chunk gave {size} values, not {agg.length}")
        if agg.note is not None:
            parts.append((encoded, [agg.note(_note_row(encoded) if row is None else row, *blocks)]))
        else:
            parts.append(encoded)
    return object_block(parts)


def _note_row(encoded: compact.Encoded) -> np.ndarray | compact.Encoded:
    """What a note reads of a contribution its kernel encoded: a sparse one as it is, a dense
    or narrow one's integers (no float64 vector made), anything else decoded."""
    if encoded.kind == "sparse":
        return encoded
    return compact.decode(encoded) if encoded.kind == "float64" else compact.integers(encoded)


def _combine_numeric(parts: list[Any], agg: Aggregation) -> Any:
    """``agg.combine`` of encoded contributions, encoded: an added total holds one vector at
    a time (:func:`~bosaris_dask.passes.compact.add_encoded`: counts added as integers, anything
    else in float64), other combines get the stack.
    With ``agg.note``, each part is ``(encoded, notes)`` and the notes are gathered."""
    if agg.note is not None:
        total = _combine_numeric([p[0] for p in parts], replace(agg, note=None))
        return total, [n for p in parts for n in p[1]]
    if agg.combine is add_rows:
        return compact.add_encoded(parts)
    rows = np.stack([compact.decode(p) for p in parts])
    return compact.encode(np.asarray(agg.combine(rows), dtype=np.float64).reshape(-1))


def graph(
    aggs: Sequence[Aggregation],
    inputs: Sequence[da.Array],
    *,
    lead: Sequence[Any] = (),
    split_every: int | None,
) -> da.Array:
    """The dask graph of one pass (computes nothing): a 0-d object array holding the list of
    every spec's total (a numeric spec's total encoded by
    :func:`~bosaris_dask.passes.compact.encode`, as every contribution travels between tasks;
    :func:`bosaris_dask.passes.runner.run_pass` decodes them).

    ``inputs`` are 2-D arrays with the same chunks (index ``ij``); ``lead`` are extra
    ``array, index`` pairs (e.g. per-row arrays indexed ``"i"``, or per-row tables ``"ia"``
    whose other index is concatenated into whole blocks) placed first.
    """
    # the client finalizes: the tasks need not carry what finalize closes over (a key's ids,
    # the inputs' graphs: hundreds of kB pickled with every task, and xarray on every worker)
    aggs = tuple(replace(a, finalize=keep_total) for a in aggs)
    tune = bool(config.get("worker-malloc"))
    args: list[Any] = list(lead)
    for arr in inputs:
        args += [arr, "ij"]
    if any(a.note is not None and a.length is None for a in aggs):
        raise ValueError("per-chunk notes need numeric specs")
    if merges_objects(aggs):
        return _object_graph(aggs, args, split_every, tune=tune)
    numeric = tuple(
        Aggregation(a.name, a.chunk, None, combine=a.combine if a.length is None
                    else partial(_combine_numeric, agg=for_merges(a)))
        for a in aggs
    )  # fmt: skip
    task = partial(_chunk_task, aggs=aggs, tune=tune)
    return _object_graph(numeric, args, split_every, task=task)
