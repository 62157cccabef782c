"""One pass runner: a pass over the trials is a list of small aggregation specs.

In the style of flox's ``Aggregation``, each statistic a pass accumulates is declared as data
(:class:`~bosaris_dask.passes.aggregation.Aggregation`): what one chunk contributes (``chunk``, a
float64 vector of ``length``), how merge tasks combine the contributions of several chunks
(``combine``, default: add them), and what the client makes of the total (``finalize``).
:func:`run_pass` runs any list of them as **one** pass: one task per chunk computes every spec's
contribution, a tree of merge tasks (``split_every`` at a time) combines them
(:mod:`bosaris_dask.passes.pass_graph` builds that graph), and one ``compute`` brings the totals
back. The memory check before the work (:mod:`bosaris_dask.passes.memory`), the progress bar
(:mod:`bosaris_dask.progress`), the log lines of a long pass and the message for a worker lost to
the cluster are here, in one place, for every pass that uses it.

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

import logging
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import dask.array as da
import numpy as np

from bosaris_dask.errors import ClusterError, MemoryLimitError
from bosaris_dask.passes import memory
from bosaris_dask.passes.aggregation import Aggregation, finalize
from bosaris_dask.passes.pass_graph import chunk_tasks, graph, task_token
from bosaris_dask.progress import compute, compute_and_keep, current_client, shows_bar

_log = logging.getLogger("bosaris_dask.passes")

__all__ = [
    "Aggregation",
    "task_token", "chunk_tasks", "finalize", "graph", "run_pass", "run_pass_and_keep",
    "with_items",
]  # fmt: skip


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
        See :func:`~bosaris_dask.passes.pass_graph.graph`.
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
