r"""The top-N cohort scores of each embedding by a float32 screen and an exact recomputation of
the few candidates.

A cohort score is the exact dot product ``x = a . b`` of two prepared float64 rows rounded once
to float32, ``r = fl32(x)`` (:mod:`bosaris_dask.embeddings.rounding`). Computing every one
exactly (a float64 product per score) is what made the AS-norm statistics slow; here each
block of cohort scores is *screened* by a float32 product ``v = fl(a32 . b32)`` of the
float32-rounded rows (sgemm), which is within a rigorous bound of ``r`` whatever the BLAS does
(:func:`~bosaris_dask.embeddings.rounding.screen_factors`: ``|v - r| <= c |a| |b| + t``), and
only the cohort rows whose score may still be among a row's top N are kept and recomputed
exactly.

**The selection.** Per row, with ``e_j`` the bound of cohort row ``j``, every ``v_j - e_j <=
r_j <= v_j + e_j``. Let ``L`` be the ``N``-th largest lower bound ``v_j - e_j`` so far: it is
at most the ``N``-th largest exact score so far, itself at most the final ``N``-th largest. A
cohort row with ``v_j + e_j < L`` is therefore strictly below the final ``N``-th score and can
never be in the top N; every other one is kept in a bounded buffer per row. When the buffer
fills, ``L`` is raised from the buffer's lower bounds and the buffer is compacted (rows of the
current top N always survive: their ``r_j >= L``). A row whose buffer is still nearly full
after compaction (many near-equal scores: duplicated cohort vectors) is marked *overflowed*
and its top N is computed by the exact streaming selection instead. For random 256-dimensional
unit rows and ``N = 300`` of a 1e5 cohort, about ``N + 1`` candidates per row remain.

**Exactness.** The candidates are recomputed as exact float32 scores
(:func:`~bosaris_dask.embeddings.rounding.exact_pairs`): the score of a pair does not depend on
the pairs computed with it, so these are the bits of
:func:`~bosaris_dask.embeddings.kernel.score_block` for the same pairs. The ``N`` largest of
them are the multiset of the ``N`` largest exact cohort scores: the statistics computed from it
are the bits of the streaming selection's.

Without numba (:func:`screen_kernels` gives ``None``) there is no screen; the caller runs the
streaming selection.

Examples
--------
>>> import numpy as np
>>> a = np.array([[1.0, 0.0]])
>>> c = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0], [-1.0, 0.0]])
>>> found = screen_top(a, c, c.astype(np.float32), top_n=2, block=2)  # None without numba
>>> found is None or (found[0].tolist(), found[1].tolist()) == ([[0.6000000238418579, 1.0]], [])
True
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from bosaris_dask.embeddings.rounding import exact_pairs, screen_factors
from bosaris_dask.passes.blas import pinned_blas
from bosaris_dask.passes.jit import compiled

__all__ = ["SCREEN_BLOCK", "SCREEN_ROWS", "screen_kernels", "screen_top", "row_norms"]

#: Rows of a row chunk screened per float32 product, and the most cohort rows per product
#: (:func:`screen_top`'s ``block`` is capped by it): the product, 512 x 512 float32 (1 MiB),
#: stays in the core's L2 cache while it is scanned, and the BLAS packs each cohort block
#: for 512 rows at a time. (One thread, 4,096 rows x a 1e5 cohort, top-300, medians of 3:
#: 3.05 s against 3.46 s with 128 x 2,048 products, both scanned in runs of 16.)
SCREEN_ROWS = 512
SCREEN_BLOCK = 512

#: The most bytes of candidate buffers (float32 value and int32 index per slot) per call;
#: more rows are screened in parts.
BUFFER_BYTES = 64 * 2**20

_ETA = 2.0**-149  # float32's smallest subnormal


def _below(x):  # pragma: no cover - compiled by numba
    """A float32 at most ``x`` (float64), and close to it."""
    return np.float32(x - abs(x) * 2.0**-22 - 2.0**-140)


def _lower_select(w, n, k):  # pragma: no cover - compiled by numba
    """A value ``t`` with at least ``k`` of ``w[:n]`` at or above it, near the ``k``-th
    largest: a strided sample of 64 values proposes ``t``, a counting pass checks it (a
    selection costs ~9 ns a value, the check ~1)."""
    if n < 512 or 2 * k > n:
        return np.partition(w[:n], n - k)[n - k]
    step = n // 64
    sample = np.empty(64)
    for q in range(64):
        sample[q] = w[q * step]
    sample = np.sort(sample)
    above = int(1.5 * 64 * k / n) + 2
    pos = 64 - above
    while pos >= 0:
        t = sample[pos]
        count = 0
        for j in range(n):
            if w[j] >= t:
                count += 1
        if count >= k:
            return t
        pos -= above
    return np.partition(w[:n], n - k)[n - k]


#: Scores of a row counted at once before any is looked at (:func:`_count_above`; numba
#: compiles a global as a constant, so the loop's trip count is known).
SCAN_RUN = 64


def _count_above(row, q, cut):  # pragma: no cover - compiled by numba
    """How many of ``row[q : q + SCAN_RUN]`` are at least ``cut``. The compiler vectorizes this loop
    (a slice indexed from 0, a trip count it knows, no wraparound checks); with 64 scores a
    call rather than 16 the scan of a 4,096-row chunk against a 1e5 cohort took 0.35 s against
    0.45 s (one thread, top-300; 2-3x on a loop that only counts, although a third of the runs
    of 64 then hold a score to look at, against a tenth of those of 16)."""
    block = row[q : q + SCAN_RUN]
    hits = 0
    for t in range(SCAN_RUN):
        if block[t] >= cut:
            hits += 1
    return hits


def _compact(r, top_n, ka, nb, tabs, thr, cnt, vals, idx, work, exact):  # pragma: no cover
    """Raise row ``r``'s threshold to (at most) the ``top_n``-th largest lower bound of its
    buffer and drop the entries below it; returns that lower bound (``-inf`` with fewer than
    ``top_n`` entries)."""
    n = cnt[r]
    low = -np.inf
    if n >= top_n:
        for k in range(n):
            work[k] = np.float64(vals[r, k]) - (ka[r] * nb[idx[r, k]] + tabs[r])
        if exact:
            low = np.partition(work[:n], n - top_n)[n - top_n]
        else:
            low = _lower_select(work, n, top_n)
        if low > thr[r]:
            thr[r] = low
    keep = 0
    for k in range(n):
        if np.float64(vals[r, k]) + (ka[r] * nb[idx[r, k]] + tabs[r]) >= thr[r]:
            vals[r, keep] = vals[r, k]
            idx[r, keep] = idx[r, k]
            keep += 1
    cnt[r] = keep
    return low


#: The helpers the loops call by name, callees first (``_compact`` calls ``_lower_select``).
_PARTS = (_below, _lower_select, _count_above, _compact)


def _scan_loop(s, row0, col0, top_n, ka, nb, nbmax, tabs, thr, cnt, vals, idx, over, work, room,
               limit):  # fmt: skip
    # pragma: no cover - compiled by numba
    cap = vals.shape[1]
    width = s.shape[1]
    for i in range(s.shape[0]):
        r = row0 + i
        if over[r]:
            continue
        if thr[r] == -np.inf and s.shape[1] >= top_n:  # a first threshold: the N-th bound here
            for j in range(s.shape[1]):
                work[j] = np.float64(s[i, j]) - (ka[r] * nb[col0 + j] + tabs[r])
            low = _lower_select(work, s.shape[1], top_n)
            if low > thr[r]:
                thr[r] = low
        cut = _below(thr[r] - (ka[r] * nbmax + tabs[r]))
        row = s[i]
        for q in range(0, width, SCAN_RUN):  # count first (vectorized), look closer at hits
            hi = min(q + SCAN_RUN, width)
            if hi - q == SCAN_RUN and _count_above(row, q, cut) == 0:
                continue
            block = row[q:hi]
            for t in range(hi - q):
                v = block[t]
                if v >= cut:
                    col = col0 + q + t
                    if np.float64(v) + (ka[r] * nb[col] + tabs[r]) >= thr[r]:
                        vals[r, cnt[r]] = v
                        idx[r, cnt[r]] = col
                        cnt[r] += 1
                        if cnt[r] >= limit[r]:  # raise the threshold: fewer hits after
                            _compact(r, top_n, ka, nb, tabs, thr, cnt, vals, idx, work, False)
                            if cnt[r] > cap - room:
                                over[r] = True
                                break
                            limit[r] = min(cap, cnt[r] + top_n // 2 + 64)
                            cut = _below(thr[r] - (ka[r] * nbmax + tabs[r]))
            if over[r]:
                break


def _finish_loop(top_n, ka, nb, tabs, thr, cnt, vals, idx, over, work, proof):
    # pragma: no cover - compiled by numba
    for r in range(cnt.shape[0]):
        if not over[r]:
            proof[r] = _compact(r, top_n, ka, nb, tabs, thr, cnt, vals, idx, work, True)


def _dots_loop(a, c, rows, cols, out):  # pragma: no cover - compiled by numba (fastmath)
    # any summation order will do: exact_pairs certifies the products against their bound
    for p in range(rows.shape[0]):
        x, y = a[rows[p]], c[cols[p]]
        s = 0.0
        for k in range(x.shape[0]):
            s += x[k] * y[k]
        out[p] = s


def _select_loop(exact, cnt, top):  # pragma: no cover - compiled by numba
    n = top.shape[1]
    for r in range(cnt.shape[0]):
        if cnt[r] >= n:
            best = np.sort(exact[r, : cnt[r]])
            for k in range(n):
                top[r, k] = best[cnt[r] - n + k]


def screen_kernels() -> dict[str, Callable[..., None]] | None:
    """The compiled loops of the screen, or ``None`` without numba (or with
    :data:`~bosaris_dask.passes.jit.DISABLE_ENV` set)."""
    names = {"scan": _scan_loop, "finish": _finish_loop, "dots": _dots_loop,
             "select": _select_loop}  # fmt: skip
    kernels = {name: compiled(fn, fastmath=name == "dots", calls=_PARTS)
               for name, fn in names.items()}  # fmt: skip
    if any(k is None for k in kernels.values()):
        return None
    return kernels  # type: ignore[return-value]


def row_norms(x: np.ndarray) -> np.ndarray:
    """Upper bounds on both ``|x_i|`` and ``|fl32(x_i)|`` for float64 rows ``x``: each float32
    element is at most ``(1 + 2^-24) |x_ik| + 2^-149``, so ``|fl32(x_i)| <= (1 + 2^-24) |x_i|
    + 2^-149 sqrt(d)``; the factor ``1 + 2^-22`` also covers the float64 rounding of the norm.

    Examples
    --------
    >>> bool(row_norms(np.array([[3.0, 4.0]]))[0] > 5.0)
    True
    """
    x = np.asarray(x, dtype=np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", x, x))
    return norms * (1.0 + 2.0**-22) + _ETA * math.sqrt(max(x.shape[1], 1))


def screen_top(
    a: np.ndarray, cohort: np.ndarray, cohort32: np.ndarray, *, top_n: int, block: int,
    capacity: int | None = None, cohort_norms: np.ndarray | None = None,
    guess: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray] | None:  # fmt: skip
    """The ``N`` largest exact float32 cohort scores of each row of ``a`` (prepared float64
    rows; ``cohort32`` is ``cohort`` rounded to float32), and the rows whose buffer overflowed
    (their top-N row is not filled in: the caller computes it exactly).

    ``guess``: a starting threshold per row (e.g. from the row's cohort mean and std), near
    the ``N``-th largest score: cohort rows whose screen value is surely below it are never
    kept. A guess is only a hint: a row whose ``N``-th largest lower bound ends up below its
    guess (too few scores above it) is screened again without one.

    ``block``: cohort rows per float32 product, at most :data:`SCREEN_BLOCK` (the result does
    not depend on it). ``capacity`` is the per-row buffer (default ``4 N + 512``). ``None``
    when the screen cannot run (no numba, or norms too large for float32): the caller uses the
    streaming selection.

    Returns
    -------
    tuple
        ``top`` (``(m, N)`` float32, each row's values ascending) and the overflowed row
        indices.
    """
    kernels = screen_kernels()
    m, d = a.shape
    n = cohort.shape[0]
    if kernels is None or m == 0:
        return None
    block = min(block, SCREEN_BLOCK)
    cap = 4 * top_n + 512 if capacity is None else max(int(capacity), top_n + 2)
    rows = max(1, BUFFER_BYTES // (cap * 8))
    if m > rows:  # bounded buffers: the rows in parts
        nb = row_norms(cohort) if cohort_norms is None else cohort_norms
        parts = [screen_top(a[lo : lo + rows], cohort, cohort32, top_n=top_n, block=block,
                            capacity=cap, cohort_norms=nb,
                            guess=None if guess is None else guess[lo : lo + rows])
                 for lo in range(0, m, rows)]  # fmt: skip
        if any(p is None for p in parts):
            return None
        tops = np.concatenate([p[0] for p in parts])  # type: ignore[index]
        over = np.concatenate([p[1] + lo for p, lo in zip(parts, range(0, m, rows), strict=True)])  # type: ignore[index]
        return tops, over
    a32 = a.astype(np.float32)
    na = row_norms(a)
    nb = row_norms(cohort) if cohort_norms is None else cohort_norms
    a_max, b_max = float(na.max(initial=0.0)), float(nb.max(initial=0.0))
    factors = screen_factors(d, a_max, b_max)
    if factors is None:
        return None
    ka = factors[0] * na
    tabs = np.full(m, factors[1])
    room = max(2, cap // 4)
    itype = np.int32 if n < 2**31 - 1 else np.int64
    thr = np.full(m, -np.inf) if guess is None else np.array(guess, dtype=np.float64)
    cnt = np.zeros(m, dtype=np.int64)
    vals = np.empty((m, cap), dtype=np.float32)
    idx = np.zeros((m, cap), dtype=itype)
    over = np.zeros(m, dtype=np.bool_)
    limit = np.full(m, min(cap, 2 * top_n + 64), dtype=np.int64)  # compact when reached
    work = np.empty(max(cap, min(block, n)))
    rows_per = min(SCREEN_ROWS, m)
    buf = np.empty(rows_per * min(block, n), dtype=np.float32)
    with pinned_blas():
        for start in range(0, n, block):
            cb = cohort32[start : start + block]
            nbmax = float(nb[start : start + block].max())
            for lo in range(0, m, rows_per):
                hi = min(lo + rows_per, m)
                s = buf[: (hi - lo) * cb.shape[0]].reshape(hi - lo, cb.shape[0])
                np.matmul(a32[lo:hi], cb.T, out=s)
                kernels["scan"](s, lo, start, top_n, ka, nb, nbmax, tabs, thr, cnt, vals, idx,
                                over, work, room, limit)  # fmt: skip
    proof = np.full(m, -np.inf)
    kernels["finish"](top_n, ka, nb, tabs, thr, cnt, vals, idx, over, work, proof)
    again = np.zeros(m, dtype=np.bool_)
    if guess is not None:  # rows whose guess was too high: some dropped row may be in the top
        again = ~over & ~(proof >= np.asarray(guess, dtype=np.float64))
    ok = ~over & ~again
    rows = np.repeat(np.arange(m), np.where(ok, cnt, 0))
    cols = np.concatenate([idx[r, : cnt[r]] for r in np.flatnonzero(ok)] or [np.zeros(0, itype)])
    order = np.argsort(cols, kind="stable")  # cohort rows in order: each read once
    exact = exact_pairs(a, cohort, rows[order], cols[order].astype(np.int64), a_norm=a_max,
                        b_norm=b_max, dots=kernels["dots"])  # fmt: skip
    flat = np.empty_like(exact)
    flat[order] = exact
    packed = np.zeros((m, cap), dtype=np.float32)
    offsets = np.cumsum(np.where(ok, cnt, 0)) - np.where(ok, cnt, 0)
    packed_pos = np.arange(len(rows)) - np.repeat(offsets, np.where(ok, cnt, 0))
    packed[rows, packed_pos] = flat
    top = np.zeros((m, top_n), dtype=np.float32)
    kernels["select"](packed, np.where(ok, cnt, 0), top)
    if again.any():
        redo = np.flatnonzero(again)
        found = screen_top(a[redo], cohort, cohort32, top_n=top_n, block=block, capacity=cap,
                           cohort_norms=nb)  # fmt: skip
        if found is None:  # pragma: no cover - the same rows screened a moment ago
            return None
        top[redo] = found[0]
        over[redo[found[1]]] = True
    return top, np.flatnonzero(over)
