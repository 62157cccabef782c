"""The block kernel: one block of scores as a float64 matrix product rounded to float32.

Determinism is what lets the evaluation engine recompute a block in a refinement pass and find
the same scores as in pass 1. Three choices give it:

- the inputs of a block are the prepared (centered, normalized) float64 rows, computed row by
  row with elementwise numpy operations, so a row is the same whatever block it is in;
- the product runs in float64 with the BLAS pinned to one thread inside the task (via
  ``threadpoolctl`` when installed; without it, set ``OMP_NUM_THREADS=1``): a multi-threaded
  BLAS may split the sum differently from one call to the next, a single-threaded one runs the
  same instructions for the same shapes;
- the float64 result is rounded once to float32, so the stored score is the float64 dot product
  rounded to nearest: it equals the exact cosine to float32 rounding (float64 sums of ``d``
  terms are off by about ``d * 1e-16``, far below a float32 ulp).

Rows are multiplied in strips of :data:`STRIP_ROWS` so the float64 intermediate stays small
(``STRIP_ROWS x block columns x 8`` bytes).

Caveat, measured on the development VM (OpenBLAS 0.3.30 and 0.3.31 of scipy and numpy): after a
first threaded computation, ``openblas_get_num_threads`` sometimes read 2 right after a limit of
1 was set, in dask's worker threads and in the main thread, so the pin is not a proof. There,
float64 products of 1 and 2 BLAS threads were bit-identical for ``d <= 256`` and differed in
0.5% of entries for ``d = 512`` (none after rounding to float32 in that test). A change that
survives the rounding makes the engine stop with ``InconsistentPassesError`` rather than report
a wrong number (benchmarks/README.md, "A float32 kernel: measured, not kept").

Examples
--------
>>> import numpy as np
>>> a = np.array([[0.6, 0.8], [1.0, 0.0]])
>>> score_block(a, a)
array([[1. , 0.6],
       [0.6, 1. ]], dtype=float32)
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

#: Rows of a block multiplied at once (bounds the float64 intermediate).
STRIP_ROWS = 1024


_PIN_LOCK = threading.Lock()
_pin_state: dict[str, Any] = {"depth": 0, "limiter": None}


@contextlib.contextmanager
def pinned_blas() -> Iterator[None]:
    """Limit the BLAS to one thread while any task of this process is inside (no-op without
    ``threadpoolctl``).

    BLAS thread counts are per process, not per thread, so concurrent tasks of a threaded
    scheduler share one pin: the first task in sets the limit, the last one out restores the
    original (nested ``threadpool_limits`` contexts in several threads would restore each
    other's limits in the wrong order).
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn and scipy
        yield
        return
    with _PIN_LOCK:
        if _pin_state["depth"] == 0:
            _pin_state["limiter"] = threadpool_limits(limits=1, user_api="blas")
        _pin_state["depth"] += 1
    try:
        yield
    finally:
        with _PIN_LOCK:
            _pin_state["depth"] -= 1
            if _pin_state["depth"] == 0:
                _pin_state["limiter"].restore_original_limits()
                _pin_state["limiter"] = None


def score_block(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b.T`` in float64, rounded to float32; ``a`` and ``b`` are prepared rows."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    out = np.empty((a.shape[0], b.shape[0]), dtype=np.float32)
    with pinned_blas():
        for start in range(0, a.shape[0], STRIP_ROWS):
            stop = min(start + STRIP_ROWS, a.shape[0])
            out[start:stop] = a[start:stop] @ b.T
    return out
