"""One BLAS thread inside the passes' tasks: dask's threads do not oversubscribe the cores, and a
task's matrix products add in one order, whatever the scheduler (worker processes start their
BLAS with one thread, the threaded scheduler's process with one per core).

Examples
--------
>>> with pinned_blas():
...     pass
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["pinned_blas"]

_PIN_LOCK = threading.Lock()
_pin_state: dict[str, Any] = {"depth": 0, "limiter": None}


@contextlib.contextmanager
def pinned_blas() -> Iterator[None]:
    """Limit the BLAS to one thread while any task of this process is inside (threadpoolctl,
    through one controller per process: :func:`_blas_controller`).

    BLAS thread counts are per process, not per thread, so concurrent tasks of a threaded
    scheduler share one pin: the first task in sets the limit, the last one out restores the
    original (nested ``threadpool_limits`` contexts in several threads would restore each
    other's limits in the wrong order). A limit the main thread set with threadpoolctl and
    has not restored keeps OpenBLAS (0.3.31 here) from taking a worker thread's pin: the BLAS
    then runs on the main thread's count inside the tasks too.
    """
    with _PIN_LOCK:
        if _pin_state["depth"] == 0:
            _pin_state["limiter"] = _blas_controller().limit(limits=1, user_api="blas")
        _pin_state["depth"] += 1
    try:
        yield
    finally:
        with _PIN_LOCK:
            _pin_state["depth"] -= 1
            if _pin_state["depth"] == 0:
                _pin_state["limiter"].restore_original_limits()
                _pin_state["limiter"] = None


@functools.cache
def _blas_controller() -> Any:
    """The process's threadpoolctl controller, found once: making one scans the loaded
    libraries (1.6 ms; a fusion pass pinned its BLAS per slab and ran 4x slower), using it to
    set a limit takes 13 us."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()
