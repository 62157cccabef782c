"""glibc's malloc thresholds in dask workers that distributed started with a fixed trim threshold.

distributed starts every worker process with ``MALLOC_TRIM_THRESHOLD_=65536`` (its config
``distributed.nanny.pre-spawn-environ``). Setting any glibc ``MALLOC_*`` threshold switches off
glibc's dynamic mmap threshold, so every temporary array over 128 KiB of a pass's kernels is a
fresh ``mmap`` whose pages fault on first touch, and every ``free`` over 64 KiB hands memory back:
on this project's 2-core machine, a 2-process ``LocalCluster`` took 2.2x the threaded scheduler's
time at 1e8 trials (``benchmarks/README.md``, "Worker processes").

The local clusters this package starts leave the variable out
(:func:`bosaris_dask.cluster.scheduler.worker_environ`). A cluster the user started
(``Client()`` in a notebook, dask-jobqueue, dask-mpi) gets the same effect here: the first pass
task a worker process runs (:mod:`bosaris_dask.passes.pass_graph`) calls :func:`tune_once`,
which, where the process's environment holds distributed's value and the C library is glibc,
raises the mmap threshold to 64 MiB and the trim threshold to 256 MiB with ``mallopt``, above
the kernels' temporaries (as glibc's dynamic threshold adapts to them, up to its 32 MiB
ceiling). A worker then keeps up to 256 MiB of freed heap for reuse instead of returning it at
once (distributed's memory monitor counts it as unmanaged memory). A value of one's own (any
other ``MALLOC_TRIM_THRESHOLD_``), another C library, or
``dask.config.set({"bosaris_dask.worker-malloc": 0})`` on the client (read when a pass's graph
is built, :mod:`bosaris_dask.config`) leaves malloc alone.

Examples
--------
>>> should_tune({"MALLOC_TRIM_THRESHOLD_": "65536"}), should_tune({}), should_tune(
...     {"MALLOC_TRIM_THRESHOLD_": "0"})
(True, False, False)
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Mapping

__all__ = ["DISTRIBUTED_TRIM", "should_tune", "tune_once"]

#: distributed's default ``MALLOC_TRIM_THRESHOLD_`` for its worker processes.
DISTRIBUTED_TRIM = "65536"
#: ``mallopt`` parameters (glibc's ``malloc.h``) and the values set.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_BYTES, _TRIM_BYTES = 64 << 20, 256 << 20

_done = False


def should_tune(environ: Mapping[str, str]) -> bool:
    """Whether a process with ``environ`` runs with distributed's fixed trim threshold."""
    return environ.get("MALLOC_TRIM_THRESHOLD_") == DISTRIBUTED_TRIM


def tune_once() -> bool:
    """Raise glibc's mmap and trim thresholds once per process where :func:`should_tune` says so.

    Returns whether this call changed them (``False`` on every later call, or when nothing is to
    be done: another C library, a threshold of the user's own).
    """
    global _done
    if _done:
        return False
    _done = True
    if not should_tune(os.environ):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc: nothing to tune
        return False
    mmap_set = mallopt(_M_MMAP_THRESHOLD, _MMAP_BYTES) == 1
    return mmap_set and mallopt(_M_TRIM_THRESHOLD, _TRIM_BYTES) == 1
