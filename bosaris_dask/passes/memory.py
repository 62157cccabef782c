"""What one task of an evaluation pass holds in memory, checked against the workers' limits.

A pass runs one task per chunk, then merge tasks that add ``split_every`` chunk results. Before
the first pass, :func:`check_worker_memory` estimates the peak of such a task
(:func:`pass_task_memory`) and refuses, with :class:`~bosaris_dask.errors.MemoryLimitError`, a
cluster whose workers cannot hold as many of them as they run threads. A clear message before
the work starts beats workers killed for memory, their tasks retried on the next worker and
killed again, an hour later.

Examples
--------
>>> import numpy as np
>>> need = pass_task_memory(
...     (1677, 10_000), input_itemsizes=[1, 4, 1], score_dtype=np.float32, n_systems=1,
...     nbins=1 << 20, split_every=8, refine_bins=1 << 21, raw_trials=1 << 22,
...     kept_trials=1 << 24, block=1 << 16, slice_size=1 << 22,
... )
>>> print(need.describe())
chunk task 227 MiB (inputs 127 MiB, kernel buffers 35 MiB, histograms 64 MiB), merge task 288 MiB, \
results awaiting a merge 128 MiB, kept trials 80 MiB
>>> need.peak // 2**20
288
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import dask
import numpy as np

from bosaris_dask.errors import MemoryLimitError
from bosaris_dask.passes.kernels import coarse_length
from bosaris_dask.passes.keys import key_dtype
from bosaris_dask.passes.workspace import Workspace

__all__ = [
    "TaskMemory", "pass_task_memory", "grouped_task_memory", "objective_task_memory",
    "check_worker_memory", "cluster_threads", "WORKER_BASELINE",
]  # fmt: skip

#: What a worker process holds before our first task: Python with numpy, dask, xarray, zarr.
WORKER_BASELINE = 200 * 2**20

_MB = 2**20


@dataclass(frozen=True)
class TaskMemory:
    """Peak bytes of the tasks of one evaluation pass.

    Attributes
    ----------
    inputs
        One chunk of every input array (key classes, and each system's scores and mask).
    buffers
        The kernel's reusable buffers (one set per worker thread).
    results
        The chunk's count histograms and their temporaries.
    merge
        A merge task: ``split_every`` chunk results, their concatenation and their sum.
    held
        Finished chunk results a worker keeps while they wait for their merge task.
    kept
        The candidate trials the engine may keep between passes, over all workers.
    """

    inputs: int
    buffers: int
    results: int
    merge: int
    held: int = 0
    kept: int = 0

    @property
    def chunk(self) -> int:
        """Peak bytes of a per-chunk task."""
        return self.inputs + self.buffers + self.results

    @property
    def peak(self) -> int:
        """Peak bytes of any task of the pass."""
        return max(self.chunk, self.merge)

    def describe(self) -> str:
        """One line, in MiB, for error messages."""
        return (
            f"chunk task {self.chunk // _MB} MiB (inputs {self.inputs // _MB} MiB, kernel buffers "
            f"{self.buffers // _MB} MiB, histograms {self.results // _MB} MiB), "
            f"merge task {self.merge // _MB} MiB, results awaiting a merge {self.held // _MB} MiB, "
            f"kept trials {self.kept // _MB} MiB"
        )


def pass_task_memory(
    chunk_shape: tuple[int, int],
    *,
    input_itemsizes: Sequence[int],
    score_dtype: np.dtype | type,
    n_systems: int,
    nbins: int,
    split_every: int,
    refine_bins: int = 0,
    raw_trials: int = 0,
    kept_trials: int = 0,
    block: int = 1 << 16,
    slice_size: int = 1 << 22,
) -> TaskMemory:
    """Estimate the peak memory of the tasks of the passes of one evaluation.

    Parameters
    ----------
    chunk_shape
        The largest chunk of the inputs, ``(models, segments)``.
    input_itemsizes
        Bytes per element of each input array of a chunk task (classes, then score and mask
        of each system), including any dtype conversion made in the graph.
    score_dtype
        The dtype the kernels key (float32 or float64).
    n_systems, nbins
        Systems evaluated together, and the key-prefix bins of pass 1 per system.
    split_every
        Chunk results one merge task adds.
    refine_bins, raw_trials, kept_trials
        The most sub-bins a dense refinement result holds per system, the most exact keys a raw
        refinement pulls per system, and the most candidate trials kept in memory between
        passes (the engine's budgets).
    block, slice_size
        The kernels' block sizes (``bosaris_dask.block`` and ``bosaris_dask.slice``).

    Returns
    -------
    TaskMemory
    """
    elements = int(chunk_shape[0]) * int(chunk_shape[1])
    inputs = elements * (sum(input_itemsizes) + 2)  # + building the key classes of a chunk
    buffers = Workspace.nbytes(elements, np.dtype(score_dtype), block, slice_size)
    row = coarse_length(nbins) * 8  # one system's pass-1 result (float64 counts, uncompacted)
    results = (2 * n_systems + 2) * row  # hist + bincount, the rows, their concatenation
    # the compact results (bosaris_dask.passes.compact, at most a float64 row each), their running
    # total, and encoding it: non-zero positions and values, and the encoded copy
    merge = n_systems * max((split_every + 3) * row,
                            _refinement_merge(split_every, refine_bins, raw_trials))  # fmt: skip
    held = split_every * n_systems * row
    kept = kept_trials * (key_dtype(score_dtype).itemsize + 1)  # a key and a target flag each
    return TaskMemory(inputs, buffers, results, merge, held, kept)


def _refinement_merge(split_every: int, refine_bins: int, raw_trials: int) -> int:
    """Peak bytes of a merge of one system's refinement results within its budgets."""
    return max(
        (split_every + 1) * 2 * refine_bins * 8,  # refinements are added in place
        raw_trials * 56,  # keys and counts, concatenated, then np.unique and a total
    )


def grouped_task_memory(
    chunk_shape: tuple[int, int],
    *,
    input_itemsizes: Sequence[int],
    score_dtype: np.dtype | type,
    n_systems: int,
    n_groups: int,
    n_parts: int,
    nbins: int,
    split_every: int,
    refine_bins: int = 0,
    raw_trials: int = 0,
    kept_trials: int = 0,
    block: int = 1 << 16,
    slice_size: int = 1 << 22,
    share: int = 1,
) -> TaskMemory:
    """:func:`pass_task_memory` of grouped passes (:mod:`bosaris_dask.passes.grouped`).

    A system's pass-1 result is a ``(n_groups, nbins)`` histogram: as large as ``n_groups``
    ungrouped systems' (which is why callers coarsen pass 1 by the number of parts, as for
    ungrouped parts), so pass 1 is bounded by :func:`pass_task_memory` of ``max(n_systems *
    n_groups, n_parts)`` systems. ``input_itemsizes`` includes the group index. A refinement
    result is one per part (``n_parts``, the ``n_systems`` pooled ones first), within the
    refinement budgets ``refine_bins`` and ``raw_trials``, except that the parts beyond the
    pooled ones refine within ``1 / share`` of them each
    (:func:`~bosaris_dask.passes.grouped.refine_parts`; a system's conditions share its budgets):
    the refinement merges hold ``n_systems + ceil((n_parts - n_systems) / share)`` budgets.

    Examples
    --------
    >>> need = grouped_task_memory(
    ...     (1000, 1000), input_itemsizes=[1, 2, 4, 1], score_dtype=np.float32, n_systems=1,
    ...     n_groups=24, n_parts=25, nbins=1 << 16, split_every=8)
    >>> need.merge // 2**20  # split_every + 3 rows of 25 parts x 2**16 bins x 2 classes, float64
    275
    >>> budgets = {"refine_bins": 1 << 19, "raw_trials": 1 << 22, "nbins": 1 << 16}
    >>> kw = {"input_itemsizes": [1, 2, 4, 1], "score_dtype": np.float32, "n_systems": 1,
    ...       "n_groups": 24, "n_parts": 25, "split_every": 8, **budgets}
    >>> alone = grouped_task_memory((1000, 1000), **kw).merge // 2**20  # 25 full budgets
    >>> shared = grouped_task_memory((1000, 1000), share=24, **kw).merge // 2**20  # 2 of them
    >>> alone, shared, 2 * (1 << 22) * 56 // 2**20
    (5600, 448, 448)
    """
    rows = pass_task_memory(
        chunk_shape, input_itemsizes=input_itemsizes, score_dtype=score_dtype,
        n_systems=max(n_systems * n_groups, n_parts), nbins=nbins, split_every=split_every,
        kept_trials=kept_trials, block=block, slice_size=slice_size,
    )  # fmt: skip
    budgets = n_systems + -(-max(0, n_parts - n_systems) // max(1, share))
    refining = min(budgets, n_parts) * _refinement_merge(split_every, refine_bins, raw_trials)
    return replace(rows, merge=max(rows.merge, refining))


def objective_task_memory(
    chunk_shape: tuple[int, int],
    *,
    input_itemsizes: Sequence[int],
    n_params: int,
    n_measures: int,
    result_length: int,
    split_every: int,
    slab: int,
) -> TaskMemory:
    """Estimate the peak memory of the tasks of a fusion or calibration objective pass.

    A chunk task (:func:`bosaris_dask.objectives.block_sums`) holds its input blocks and, for a
    slab of at most ``slab`` trials (whole rows), boolean masks, the ``n_params``-feature matrix
    and a copy of it (the Hessian's ``X * h``), a few per-trial float vectors and, with quality,
    the two sides' measures per trial. Its result is a float64 vector of ``result_length``.

    Examples
    --------
    >>> need = objective_task_memory((1000, 3000), input_itemsizes=[4, 1, 4, 1, 1], n_params=3,
    ...                              n_measures=0, result_length=24, split_every=8, slab=1 << 16)
    >>> need.inputs, need.buffers
    (33000000, 5505024)
    """
    elements = int(chunk_shape[0]) * int(chunk_shape[1])
    inputs = elements * sum(input_itemsizes)
    per_slab = min(elements, max(slab, int(chunk_shape[1])))  # whole rows, at least one
    n_q = n_measures + 1 if n_measures else 0
    per_trial = 4 + 2 * n_params * 8 + 4 * 8 + 2 * n_q * 8  # masks, X and X*h, vectors, q
    row = result_length * 8
    return TaskMemory(
        inputs=inputs, buffers=per_slab * per_trial, results=2 * row,
        merge=(2 * split_every + 1) * row, held=split_every * row,
    )  # fmt: skip


def _workers(client: Any) -> list[tuple[str, int, int, int]]:
    """``(address, memory_limit, nthreads, memory in use)`` of each worker of ``client``."""
    info = client.scheduler_info(n_workers=-1)["workers"]
    return [
        (address, int(w.get("memory_limit") or 0), int(w.get("nthreads") or 1),
         int(w.get("metrics", {}).get("memory") or 0))
        for address, w in info.items()
    ]  # fmt: skip


def _terminate_fraction() -> float:
    fraction = dask.config.get("distributed.worker.memory.terminate", 0.95)
    return float(fraction) if fraction else 1.0


def check_worker_memory(need: TaskMemory, client: Any | None) -> None:
    """Raise :class:`MemoryLimitError` if a worker of ``client`` cannot run its threads' tasks.

    A worker needs what it already holds (at least :data:`WORKER_BASELINE`), one peak task per
    thread, the chunk results awaiting a merge and its share of the kept trials, within the
    fraction of its ``memory_limit`` at which dask terminates it
    (``distributed.worker.memory.terminate``). Workers without a limit, and the threaded
    scheduler (``client`` is None), are not checked.

    Examples
    --------
    >>> class FakeClient:
    ...     def scheduler_info(self, n_workers):
    ...         return {"workers": {"tcp://w1": {"memory_limit": 400 * 2**20, "nthreads": 2,
    ...                                          "metrics": {"memory": 150 * 2**20}}}}
    >>> need = TaskMemory(inputs=100 * 2**20, buffers=40 * 2**20, results=10 * 2**20,
    ...                   merge=60 * 2**20, held=20 * 2**20)
    >>> check_worker_memory(need, FakeClient())
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.MemoryLimitError: worker tcp://w1 would need about 520 MiB (200 MiB for \
itself, 2 threads x 150 MiB; chunk task 150 MiB (inputs 100 MiB, kernel buffers 40 MiB, histograms \
10 MiB), merge task 60 MiB, results awaiting a merge 20 MiB, kept trials 0 MiB) but its memory \
limit is 400 MiB: give each worker more memory (--memory-limit under --cluster mpi; dask \
worker --memory-limit for your own), fewer threads (--threads-per-worker 1; dask worker \
--nthreads 1), or use smaller chunks
    """
    if client is None:
        return
    fraction = _terminate_fraction()
    workers = _workers(client)
    for address, limit, nthreads, in_use in workers:
        if not limit:
            continue
        itself = max(in_use, WORKER_BASELINE)
        total = itself + nthreads * need.peak + need.held + need.kept // len(workers)
        if total > fraction * limit:
            threads = f"{nthreads} thread{'s' if nthreads > 1 else ''}"
            raise MemoryLimitError(
                f"worker {address} would need about {total // _MB} MiB ({itself // _MB} MiB for "
                f"itself, {threads} x {need.peak // _MB} MiB; {need.describe()}) but "
                f"its memory limit is {limit // _MB} MiB: {_remedy(client, nthreads)}"
            )


def _remedy(client: Any, nthreads: int) -> str:
    """What gives a worker of ``client``'s cluster room for a task, in the options of the
    cluster kind it is (a local cluster's, slurm/pbs jobs', or workers started elsewhere)."""
    kind = type(getattr(client, "cluster", None)).__name__
    if kind == "LocalCluster":
        more, fewer = "(--memory-limit)", "(--threads-per-worker 1)"
    elif kind in ("SLURMCluster", "PBSCluster"):
        more = "(--memory per job, shared by its worker processes)"
        fewer = "(more worker processes per job: jobqueue's processes, or --workers with --jobs)"
    else:  # a running scheduler's workers, or dask-mpi's
        more = "(--memory-limit under --cluster mpi; dask worker --memory-limit for your own)"
        fewer = "(--threads-per-worker 1; dask worker --nthreads 1)"
    threads = f"fewer threads {fewer}, " if nthreads > 1 else ""
    return f"give each worker more memory {more}, {threads}or use smaller chunks"


def cluster_threads(client: Any | None) -> int:
    """The worker threads of ``client``'s cluster, or without a client those of a local
    computation (:func:`~bosaris_dask.progress.local_threads`: ``num_workers``, else the CPUs
    this process may use, not the node's cores)."""
    if client is None:
        from bosaris_dask.progress import local_threads

        return local_threads()
    return max(1, sum(nthreads for _, _, nthreads, _ in _workers(client)))
