"""The block kernel: one block of scores, each the exact dot product of two prepared rows
rounded once to float32.

Determinism is what lets the evaluation engine recompute scores in a refinement pass (a block,
or, through the float32 screen of :mod:`bosaris_dask.embeddings.screen`, the few pairs near a
candidate bin) and find the same scores as in pass 1. It is proven, not hoped for:

- the inputs of a block are the prepared (centered, normalized) float64 rows, computed row by
  row with elementwise numpy operations, so a row is the same whatever block it is in;
- the block is a float64 matrix product, whose error is bounded for any BLAS, thread count and
  summation order; each score is then rounded to the float32 of the *exact* dot product
  (:mod:`bosaris_dask.embeddings.rounding`: certified by the error bound, recomputed exactly
  for the few too close to a float32 rounding boundary). A score is a function of its two rows
  only: the same in any block shape, on any worker, with any number of BLAS threads, and it
  equals the exact cosine (of the prepared rows) to float32 rounding.

The BLAS is pinned to one thread inside a task
(:func:`~bosaris_dask.passes.blas.pinned_blas`) so that dask's threads do not
oversubscribe the cores; the bits do not depend on it. Rows are
multiplied in strips of :data:`STRIP_ROWS` so the float64 intermediate stays small
(``STRIP_ROWS x block columns x 8`` bytes). With ``device`` other than ``"cpu"`` the products
run and are rounded on an accelerator (:mod:`bosaris_dask.embeddings.device`), certified by the
same bound, the uncertain ones settled here: the same bits. Should a score source still change
between passes (a file rewritten meanwhile), the engine stops with ``InconsistentPassesError``
rather than report a wrong number.

Examples
--------
>>> import numpy as np
>>> a = np.array([[0.6, 0.8], [1.0, 0.0]])
>>> score_block(a, a)
array([[1. , 0.6],
       [0.6, 1. ]], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from bosaris_dask.embeddings.device import device_strips
from bosaris_dask.embeddings.rounding import max_row_norm, round_products, settle_uncertain
from bosaris_dask.passes.blas import pinned_blas

#: Rows of a block multiplied at once (bounds the float64 intermediate).
STRIP_ROWS = 1024


def _host_strips(a: np.ndarray, b: np.ndarray, rows: int) -> Iterator[tuple[int, int, np.ndarray]]:
    for start in range(0, a.shape[0], rows):
        stop = min(start + rows, a.shape[0])
        yield start, stop, a[start:stop] @ b.T


def score_block(a: np.ndarray, b: np.ndarray, device: str = "cpu") -> np.ndarray:
    """``a @ b.T`` rounded to float32 as the exact products are; ``a`` and ``b`` are prepared
    float64 rows. ``device``: where the products run and are rounded (``"cpu"``: numpy's BLAS;
    else a PyTorch device, :mod:`bosaris_dask.embeddings.device`), the same bits either way."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    out = np.empty((a.shape[0], b.shape[0]), dtype=np.float32)
    b_norm = max_row_norm(b)
    with pinned_blas():
        if device == "cpu":
            for start, stop, products in _host_strips(a, b, STRIP_ROWS):
                round_products(products, a[start:stop], b, out[start:stop], b_norm=b_norm)
        else:
            for start, stop, scores, uncertain in device_strips(a, b, STRIP_ROWS, device, b_norm):
                out[start:stop] = scores
                settle_uncertain(out[start:stop], a[start:stop], b, uncertain)
    return out
