"""One pass runner: a pass over the trials is a list of small aggregation specs.

In the style of flox's ``Aggregation``, each statistic a pass accumulates is declared as data:
what one chunk contributes (``chunk``, a float64 vector of ``length``), how merge tasks combine
the contributions of several chunks (``combine``, default: add them), and what the client makes
of the total (``finalize``). :func:`run_pass` runs any list of them as **one** pass: one task per
chunk computes every spec's contribution, a tree of merge tasks (``split_every`` at a time)
combines them, and one ``compute`` brings the totals back. Numeric contributions and partial
totals travel between tasks in compact form (:mod:`bosaris_dask.passes.compact`: only the non-zero
counts, or 32-bit integers), decoded bit for bit where they are added. The memory check before
the work (:mod:`bosaris_dask.passes.memory`), the progress bar (:mod:`bosaris_dask.progress`) and
the message for a worker lost to the cluster are here, in one place, for every pass that uses it.

Examples
--------
>>> import dask.array as da
>>> import numpy as np
>>> x = da.from_array(np.arange(12.0).reshape(3, 4), chunks=2)
>>> total = Aggregation("total", chunk=lambda b: np.array([b.sum()]), length=1,
...                     finalize=lambda v: float(v[0]))
>>> largest = Aggregation("largest", chunk=lambda b: np.array([b.max()]), length=1,
...                       combine=lambda rows: rows.max(axis=0), finalize=lambda v: float(v[0]))
>>> run_pass("example", [total, largest], [x], split_every=2)
[66.0, 11.0]
"""

from __future__ import annotations

import hashlib
import logging
import pickle
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import dask
import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.utils import funcname

from bosaris_dask import config
from bosaris_dask.errors import ClusterError, MemoryLimitError
from bosaris_dask.passes import compact, inline_blocks, malloc, memory
from bosaris_dask.passes.kernels import object_block
from bosaris_dask.progress import compute, compute_and_keep, current_client, shows_bar

_log = logging.getLogger("bosaris_dask.passes")

__all__ = [
    "Aggregation",
    "task_token", "chunk_tasks", "finalize", "graph", "run_pass", "run_pass_and_keep",
    "with_items",
]  # fmt: skip


def _add(rows: np.ndarray) -> np.ndarray:
    return rows.sum(axis=0)


def _identity(total: np.ndarray) -> Any:
    return total


@dataclass(frozen=True)
class Aggregation:
    """One statistic of a pass.

    Attributes
    ----------
    name
        What it is (for messages).
    chunk
        ``chunk(*blocks)``: the chunk's contribution, a float64 vector of ``length`` or its
        :class:`~bosaris_dask.passes.compact.Encoded` form (e.g. counts a kernel holds as integers,
        :func:`~bosaris_dask.passes.compact.encode_counts`: no float64 vector made and checked). The
        blocks are those of :func:`run_pass`'s ``lead`` arguments, then its ``inputs``.
    length
        The length of a contribution; ``None``: a contribution is any Python object (e.g. the
        exact keys a refinement pulls), and a pass with such a spec merges objects.
    combine
        ``combine(rows)``: one vector from a ``(m, length)`` stack of contributions or partial
        combinations (for object specs: one object from a list of them). It must be associative
        and commutative (merge trees vary); the default adds them, which is exact for counts
        and for :mod:`~bosaris_dask.passes.exact_sum` limbs.
    finalize
        ``finalize(total)``: the result on the client (may raise, naming what is wrong).
    note
        ``note(contribution, *blocks)``: a small object about one chunk (numeric specs only;
        the contribution's values, as integers where the chunk gave them encoded densely, the
        sparse :class:`~bosaris_dask.passes.compact.Encoded` itself where it gave them so),
        made where the chunk's contribution is, e.g. which score bins the chunk holds. The
        spec's result is then ``(finalize(total), notes)``, ``notes`` a list with one note per
        chunk (in no particular order: a note says which chunk it is about).
    items
        ``(most, size)`` for a contribution that grows with the chunk (e.g. the exact keys of
        the chunk's targets, up to a budget): at most ``min(most, trials of a chunk)`` items of
        ``size`` bytes, which :func:`run_pass`'s memory check adds to its tasks' (the chunk
        task holds them twice, to sort; a merge task its parts and their merge).
    optional
        Work the pass may leave out when the workers cannot hold what its ``items`` may grow
        to (the pass's other work can): :func:`run_pass` then gives ``None`` as its result
        (e.g. the exact AUC's targets riding pass 1, which it then counts in passes of its
        own, sized by what pass 1 found).
    """

    name: str
    chunk: Callable[..., np.ndarray]
    length: int | None
    combine: Callable[[np.ndarray], np.ndarray] = _add
    finalize: Callable[[np.ndarray], Any] = _identity
    note: Callable[..., Any] | None = None
    items: tuple[int, int] | None = None
    optional: bool = False


def _is_object(aggs: Sequence[Aggregation]) -> bool:
    """Whether every spec of a pass merges objects (else numeric specs travel compact)."""
    return all(a.length is None for a in aggs)


def _object_task(*blocks: Any, aggs: tuple[Aggregation, ...], tune: bool = False) -> np.ndarray:
    if tune:
        malloc.tune_once()
    return object_block([a.chunk(*blocks) for a in aggs])


def identity(x: np.ndarray, axis: Any, keepdims: bool) -> np.ndarray:
    """The reduction's chunk step: the chunk tasks already made each chunk's parts."""
    return x


def _not_in_a_merge(*_: Any) -> Any:
    raise AssertionError("a merge task runs no chunk kernel")  # pragma: no cover


def _for_merges(agg: Aggregation) -> Aggregation:
    """``agg`` as a merge task reads it: its ``combine``, and whether it gathers notes,
    without the chunk kernel, the note and the tables they close over (a bootstrap's 8 MB
    were pickled into every merge task; a refinement's selection tables too)."""
    return replace(agg, chunk=_not_in_a_merge, finalize=_identity,
                   note=None if agg.note is None else _not_in_a_merge)  # fmt: skip


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
    merge = _Merge(tuple(_for_merges(a) for a in aggs), token)
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
    if agg.combine is _add:
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
    :func:`run_pass` decodes them).

    ``inputs`` are 2-D arrays with the same chunks (index ``ij``); ``lead`` are extra
    ``array, index`` pairs (e.g. per-row arrays indexed ``"i"``, or per-row tables ``"ia"``
    whose other index is concatenated into whole blocks) placed first.
    """
    # the client finalizes: the tasks need not carry what finalize closes over (a key's ids,
    # the inputs' graphs: hundreds of kB pickled with every task, and xarray on every worker)
    aggs = tuple(replace(a, finalize=_identity) for a in aggs)
    tune = bool(config.get("worker-malloc"))
    args: list[Any] = list(lead)
    for arr in inputs:
        args += [arr, "ij"]
    if any(a.note is not None and a.length is None for a in aggs):
        raise ValueError("per-chunk notes need numeric specs")
    if _is_object(aggs):
        return _object_graph(aggs, args, split_every, tune=tune)
    numeric = tuple(
        Aggregation(a.name, a.chunk, None, combine=a.combine if a.length is None
                    else partial(_combine_numeric, agg=_for_merges(a)))
        for a in aggs
    )  # fmt: skip
    task = partial(_chunk_task, aggs=aggs, tune=tune)
    return _object_graph(numeric, args, split_every, task=task)


def _lost_worker(err: BaseException) -> bool:
    try:
        from distributed import KilledWorker
    except ImportError:  # pragma: no cover - distributed is a dependency
        return False
    return isinstance(err, KilledWorker)


def run_pass(
    name: str,
    aggs: Sequence[Aggregation],
    inputs: Sequence[da.Array],
    *,
    lead: Sequence[Any] = (),
    split_every: int | None,
    progress: bool | None = None,
    need: memory.TaskMemory | None = None,
    also: Any = None,
) -> Any:
    """Run ``aggs`` over the chunks of ``inputs`` in one pass; their finalized results.

    Parameters
    ----------
    name
        The pass, for messages (e.g. ``"pass 1"``).
    aggs
        The statistics to accumulate.
    inputs, lead
        See :func:`graph`.
    split_every
        How many chunk results one merge task combines (``None``: dask's default).
    progress
        Show a progress bar (``None``: follow :func:`~bosaris_dask.progress.showing_progress`).
    need
        The peak memory of a task, checked against the distributed workers' limits before any
        work (:func:`~bosaris_dask.passes.memory.check_worker_memory`); ``None``: no check.
    also
        Another dask graph computed in the same go (e.g. the exact AUC's count riding along a
        refinement pass: the chunks both read are read once); the return is then
        ``(results, computed also)``.

    Raises
    ------
    MemoryLimitError
        The workers cannot hold the tasks (before any work), even without the ``optional``
        specs.
    ClusterError
        The scheduler gave up on a task whose workers kept dying (``KilledWorker``).
    """
    aggs = list(aggs)
    left_out: list[int] = []
    if need is not None:
        left_out = _left_out(need, aggs, inputs, split_every)
    run = [a for i, a in enumerate(aggs) if i not in left_out]
    reduced = graph(run, inputs, lead=lead, split_every=split_every)
    with _lost_workers(name, inputs, bar=shows_bar(progress)):
        if also is None:
            return _put_back(finalize(run, compute(reduced, progress=progress)), left_out)
        total, extra = compute((reduced, also), progress=progress)
    return _put_back(finalize(run, total), left_out), extra


def _left_out(
    need: memory.TaskMemory, aggs: list[Aggregation], inputs: Sequence[da.Array],
    split_every: int | None,
) -> list[int]:  # fmt: skip
    """The positions of the ``optional`` specs the workers cannot hold (all of them, or none),
    after checking the rest (:func:`~bosaris_dask.passes.memory.check_worker_memory`)."""
    client = current_client()
    try:
        memory.check_worker_memory(with_items(need, aggs, inputs, split_every), client)
        return []
    except MemoryLimitError:
        optional = [i for i, a in enumerate(aggs) if a.optional]
        if not optional:
            raise
    rest = [a for a in aggs if not a.optional]
    memory.check_worker_memory(with_items(need, rest, inputs, split_every), client)
    return optional


def _put_back(results: list[Any], left_out: list[int]) -> list[Any]:
    """``results`` with ``None`` at the ``left_out`` positions."""
    out = list(results)
    for i in sorted(left_out):
        out.insert(i, None)
    return out


def with_items(
    need: memory.TaskMemory,
    aggs: Sequence[Aggregation],
    inputs: Sequence[da.Array],
    split_every: int | None,
) -> memory.TaskMemory:
    """``need`` with what the specs that declare ``items`` hold (see :class:`Aggregation`).

    Examples
    --------
    >>> import dask.array as da
    >>> x = da.zeros((4, 4), chunks=2)  # chunks of 4 trials, 4 chunks
    >>> keys = Aggregation("keys", chunk=np.sort, length=None, items=(3, 8))  # at most 3 keys
    >>> need = memory.TaskMemory(inputs=0, buffers=0, results=0, merge=0)
    >>> with_items(need, [keys], [x], split_every=2)  # chunk: 2 x 3 x 8; merge: (2 + 1) x 3 x 8
    TaskMemory(inputs=0, buffers=0, results=48, merge=72, held=48, kept=0)
    """
    cells = int(np.prod([max(c) for c in inputs[0].chunks]))
    per = sum(min(cells, a.items[0]) * a.items[1] for a in aggs if a.items is not None)
    if not per:
        return need
    k = max(1, min(split_every or 8, inputs[0].npartitions))
    return replace(need, results=need.results + 2 * per, merge=need.merge + (k + 1) * per,
                   held=need.held + k * per)  # fmt: skip


def run_pass_and_keep(
    name: str,
    aggs: Sequence[Aggregation],
    inputs: Sequence[da.Array],
    keep: da.Array,
    *,
    split_every: int | None,
    progress: bool | None = None,
    also: Any = None,
) -> Any:
    """:func:`run_pass`, keeping ``keep`` (an array the pass reads) for later passes.

    Returns the kept array (persisted on the workers, or in memory on the local schedulers:
    :func:`~bosaris_dask.progress.compute_and_keep`) and the finalized results (and, with
    ``also``, its computed value: see :func:`run_pass`).
    """
    aggs = list(aggs)
    reduced = graph(aggs, inputs, split_every=split_every)
    with _lost_workers(name, inputs, bar=shows_bar(progress)):
        if also is None:
            kept, total = compute_and_keep(keep, reduced, progress=progress)
            return kept, finalize(aggs, total)
        kept, (total, extra) = compute_and_keep(keep, (reduced, also), progress=progress)
    return kept, finalize(aggs, total), extra


def finalize(aggs: Sequence[Aggregation], total: Any) -> list[Any]:
    """The finalized results of a computed :func:`graph` of ``aggs``."""
    totals = total[()]
    if _is_object(aggs):
        return [a.finalize(t) for a, t in zip(aggs, totals, strict=True)]
    return [
        a.finalize(t) if a.length is None
        else a.finalize(compact.decode(t)) if a.note is None
        else (a.finalize(compact.decode(t[0])), t[1])
        for a, t in zip(aggs, totals, strict=True)
    ]  # fmt: skip


#: Seconds between the lines that say a long pass is still running.
RUNNING_S = 30.0


@contextmanager
def _still_running(name: str, chunks: str, start: float) -> Iterator[None]:
    """A line every :data:`RUNNING_S` seconds of a long pass (a batch log is not silent for
    the minutes a pass can take), from a thread that ends with the block."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(RUNNING_S):
            _log.info("%s: %srunning for %.0f s", name, chunks, time.perf_counter() - start)

    thread = threading.Thread(target=beat, name=f"bosaris-dask {name}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@contextmanager
def _lost_workers(
    name: str, inputs: Sequence[da.Array] = (), *, bar: bool = False
) -> Iterator[None]:
    """Log the pass's time (logger ``bosaris_dask.passes``, INFO: a batch job's log shows each
    pass where a terminal shows a progress bar); turn the scheduler giving up on a task
    (``KilledWorker``) into one clear message."""
    start = time.perf_counter()
    n = inputs[0].npartitions if inputs else 0
    chunks = f"{n:,} chunk{'s' * (n > 1)}, " if inputs else ""
    if bar:  # the bar itself names nothing
        print(f"{name}{': ' + chunks.rstrip(', ') if chunks else ''}", file=sys.stderr)
    try:
        with _still_running(name, chunks, start):
            yield
        _log.info("%s: %sdone in %.1f s", name, chunks, time.perf_counter() - start)
    except Exception as err:
        if not _lost_worker(err):
            raise
        raise ClusterError(
            f"{name}: workers died running a task ({err}); this is most often memory: give "
            "each worker more (--memory-limit), fewer threads, or use smaller chunks"
        ) from err
