"""The block kernel: one block of scores as a float64 matrix product rounded to float32.

Determinism is what lets the evaluation engine recompute a block in a refinement pass and find
the same scores as in pass 1. Three choices give it:

- the inputs of a block are the prepared (centered, normalized) float64 rows, computed row by
  row with elementwise numpy operations, so a row is the same whatever block it is in;
- the product runs in float64 with the BLAS set to one thread by every task (via
  ``threadpoolctl`` when installed; without it, set ``OMP_NUM_THREADS=1``): a multi-threaded
  BLAS may split the sum differently from one call to the next, a single-threaded one runs the
  same instructions for the same shapes;
- the float64 result is rounded once to float32, so the stored score is the float64 dot product
  rounded to nearest: it equals the exact cosine to float32 rounding (float64 sums of ``d``
  terms are off by about ``d * 1e-16``, far below a float32 ulp).

Rows are multiplied in strips of :data:`STRIP_ROWS` so the float64 intermediate stays small
(``STRIP_ROWS x block columns x 8`` bytes).

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
from collections.abc import Iterator
from typing import Any

import numpy as np

#: Rows of a block multiplied at once (bounds the float64 intermediate).
STRIP_ROWS = 1024


@contextlib.contextmanager
def pinned_blas() -> Iterator[None]:
    """Run the block inside with the BLAS at one thread (no-op without ``threadpoolctl``).

    Every task entering sets the limit again and none restores it: the process's BLAS stays at
    one thread after the first block (dask's threads are the parallelism). Restoring was
    measured to fail here: with a shared pin that the last task out restored, blocks computed
    after a first threaded computation ran with 2 OpenBLAS threads (OpenBLAS 0.3.30/0.3.31,
    numpy's and scipy's), and a float32 product then changed bits from one computation to the
    next. Setting the limit costs ~2 ms, ~1% of a 4096 x 4096 block.
    """
    for lib in _blas_libraries():
        lib.set_num_threads(1)  # unconditionally: threadpoolctl skips a limit it sees as set
    yield


_libraries: dict[str, Any] = {}


def _blas_libraries() -> list[Any]:
    """threadpoolctl's controllers of the BLAS libraries loaded in this process (looked up
    again when a library was loaded since the last look; none without threadpoolctl)."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn and scipy
        return []
    import sys

    if _libraries.get("modules") != len(sys.modules):
        ctl = ThreadpoolController().select(user_api="blas")
        _libraries["libs"] = list(ctl.lib_controllers)
        _libraries["modules"] = len(sys.modules)
    return _libraries["libs"]


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


#: Side of the fixed tiles of the single-precision kernel (:func:`score_block_single`).
TILE = 256


def _padded(x: np.ndarray, offset: int) -> np.ndarray:
    """``x`` as float32 rows placed at ``offset`` in zeros padded to whole :data:`TILE`\\ s."""
    tiles = -(-(offset + x.shape[0]) // TILE)
    out = np.zeros((tiles * TILE, x.shape[1]), dtype=np.float32)
    out[offset : offset + x.shape[0]] = x  # rounded to float32 element by element
    return out


def score_block_single(a: np.ndarray, b: np.ndarray, rows: np.ndarray, cols: np.ndarray):
    """``a @ b.T`` in float32 on the global grid of :data:`TILE` x :data:`TILE` tiles.

    ``a`` and ``b`` are prepared rows, rounded here to float32; ``rows`` and ``cols`` are
    their global indices (only the first of each is read). Every tile of the global grid
    that the block overlaps is one float32 BLAS call of the same shape (``TILE x d`` by
    ``d x TILE``, rows outside the block are zeros) with the BLAS pinned to one thread, and a
    score sits at the same place of its tile whatever the chunking. A BLAS computes an entry
    of a product of a given shape from its row and column alone, with the same operations for
    the same place; so the score of a pair has the same bits in every block, every pass and
    every chunking. (A BLAS call of another shape or thread count may sum differently: on
    this machine's OpenBLAS, 6 of 7 sub-block shapes gave other bits than the whole product.)

    Float32 sums are off the float64 cosine by at most ``(d + 2) * 2**-24`` for unit vectors
    (the rounding of the inputs, then of ``d`` accumulations), a few float32 ulps in practice:
    use it where that is negligible against the scores' spread; :func:`score_block` is the
    exactly rounded kernel.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([[0.6, 0.8], [1.0, 0.0]])
    >>> score_block_single(a, a, np.arange(2), np.arange(2))
    array([[1. , 0.6],
           [0.6, 1. ]], dtype=float32)
    """
    m, n = a.shape[0], b.shape[0]
    out = np.empty((m, n), dtype=np.float32)
    if m == 0 or n == 0:
        return out
    off_a, off_b = int(rows[0]) % TILE, int(cols[0]) % TILE
    pa, pb = _padded(a, off_a), _padded(b, off_b)
    tile = np.empty((TILE, TILE), dtype=np.float32)
    with pinned_blas():
        for p in range(0, pa.shape[0], TILE):
            r_lo, r_hi = max(p, off_a), min(p + TILE, off_a + m)
            for q in range(0, pb.shape[0], TILE):
                c_lo, c_hi = max(q, off_b), min(q + TILE, off_b + n)
                np.matmul(pa[p : p + TILE], pb[q : q + TILE].T, out=tile)
                out[r_lo - off_a : r_hi - off_a, c_lo - off_b : c_hi - off_b] = tile[
                    r_lo - p : r_hi - p, c_lo - q : c_hi - q
                ]
    return out
