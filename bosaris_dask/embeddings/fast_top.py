"""The top-N selection of the cohort statistics as a compiled (numba) kernel, when numba is
installed (``pip install bosaris-dask[fast]``).

:func:`bosaris_dask.embeddings.cohort._merge_top` (numpy) keeps the ``n`` largest scores of
each row block by block: a comparison of every score with the row's current ``n``-th best,
then a sparse gather of the few that beat it and a partition with the ``n`` best so far. Once
a row holds ``n`` values, the kernel here does that in one pass per row: the row's best are
kept sorted, the scores above the ``n``-th best are gathered and sorted (they are few after the
first blocks), and the two sorted runs are merged, keeping the ``n`` largest.

Both keep exactly the multiset of the ``n`` largest values of a row (a selection compares, it
never rounds), and the statistics are computed from that multiset sorted, so the two paths give
the same bits; the tests check it on random blocks with ties. Without numba
(:func:`top_kernel` returns ``None``) the numpy path runs.

Examples
--------
>>> import numpy as np
>>> top = np.array([[0.2, 0.4]], dtype=np.float32)  # the 2 best so far, ascending
>>> s = np.array([[0.1, 0.5, 0.3, 0.5]], dtype=np.float32)
>>> kernel = top_kernel()
>>> if kernel is not None:
...     kernel(top, s)
... else:
...     top[:] = np.sort(np.concatenate([top, s], axis=1), axis=1)[:, -2:]
>>> top.tolist()
[[0.5, 0.5]]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from bosaris_dask.passes.jit import DISABLE_ENV, compiled

__all__ = ["top_kernel", "DISABLE_ENV"]


def _merge_sorted_rows(top: np.ndarray, s: np.ndarray) -> None:  # pragma: no cover
    # compiled by numba (coverage does not see inside); tested against the numpy path
    rows, n = top.shape
    width = s.shape[1]
    cand = np.empty(width, dtype=top.dtype)
    old = np.empty(n, dtype=top.dtype)
    for i in range(rows):
        worst = top[i, 0]
        c = 0
        for j in range(width):
            v = s[i, j]
            if v > worst:
                cand[c] = v
                c += 1
        if c == 0:
            continue
        new = np.sort(cand[:c])
        for j in range(n):
            old[j] = top[i, j]
        ti, ci = n - 1, c - 1
        for out in range(n - 1, -1, -1):  # the n largest of the two ascending runs
            if ci >= 0 and (ti < 0 or new[ci] > old[ti]):
                top[i, out] = new[ci]
                ci -= 1
            else:
                top[i, out] = old[ti]
                ti -= 1


def top_kernel() -> Callable[[np.ndarray, np.ndarray], None] | None:
    """The compiled ``kernel(top, block)``, or ``None`` when numba is missing or
    :data:`DISABLE_ENV` is set.

    ``top`` is a C-contiguous float32 ``(rows, n)`` array of each row's ``n`` best scores so
    far, sorted ascending; the kernel merges the float32 ``block``'s rows into it in place (it
    stays sorted). Compiled on first use (about a second; cached on disk by numba where it can
    write). It releases the GIL, so dask's threads run it in parallel.
    """
    return compiled(_merge_sorted_rows)
