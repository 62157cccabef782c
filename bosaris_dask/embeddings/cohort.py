"""Cohort statistics of embeddings: mean and standard deviation of each embedding's scores
against a cohort, over all of it and over its top-N scores.

The statistics of an embedding depend on it and the cohort only, never on a trial, so they are
computed once per embedding (one task per chunk of rows) and then used by every block of the
normalized score matrix (:mod:`bosaris_dask.embeddings.normalization`).

**Full cohort (Z-, T-, S-norm)**: no cohort score is computed. The mean and population
standard deviation of ``e . c_j`` over the cohort are ``e . c_mean`` and ``sqrt(e^T Sigma e)``,
from the cohort's mean and covariance computed once in a fixed order
(:mod:`bosaris_dask.embeddings.cohort_moments`). They are the statistics of the **exact** dot
products of the prepared rows, before their rounding to float32, up to float64 rounding (see
there; a row where that rounding may matter takes its own cohort products' statistics:
:func:`_direct_where_untrusted`); those of the float32 cohort scores differ by at most
``2^-24 mean(|x|)`` (mean) and ``2^-24 sqrt(mean(x^2))`` (std), ``x`` the exact products.

**Top N (AS-norm)**: each chunk of rows screens the cohort by float32 products with a rigorous
error bound, keeps the cohort rows that may be among a row's top N and recomputes those exactly
(:mod:`bosaris_dask.embeddings.cohort_screen`). Rows the screen cannot settle (a buffer
overflow: many near-equal scores), and every row without numba, take the *streaming* path: the
cohort scored in blocks of :data:`COHORT_BLOCK` embeddings with the same kernel as the trials
(float32 scores), the N best kept by selection: the N best so far are merged with the values of
the new block that beat the current N-th best (``np.partition``, see :func:`_merge_top`; with
numba, one compiled pass per block: :mod:`bosaris_dask.embeddings.fast_top`). Both paths find
the same multiset of the N largest exact float32 scores, sorted before it is summed, so the
top-N mean and std have the same bits either way. ``side_statistics(..., method="streaming")``
runs the streaming path for everything (the full statistics then from the float32 scores,
merged block by block with Chan et al.'s update): the reference of the tests.

Standard deviations are population ones (``ddof=0``), as in wespeaker's ``score_norm.py``.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.embeddings.store import from_arrays
>>> e = from_arrays(["a"], [[1.0, 0.0]])
>>> c = from_arrays(["c1", "c2", "c3"], [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
>>> st = cohort_stats(e, c, top_n=2)
>>> st.cohort_mean.values.tolist(), st.top_mean.values.tolist(), st.top_std.values.tolist()
([0.0], [0.5], [0.5])
"""

from __future__ import annotations

import os
import warnings
from statistics import NormalDist
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask.embeddings.cohort_moments import (
    TRUSTED,
    cohort_moments,
    direct_moments,
    error_bounds,
    row_moments,
)
from bosaris_dask.embeddings.cohort_screen import row_norms, screen_top
from bosaris_dask.embeddings.fast_top import top_kernel
from bosaris_dask.embeddings.kernel import score_block
from bosaris_dask.embeddings.prepare import Side, _load, prepare, prepare_models, resolve_center
from bosaris_dask.errors import OptionError
from bosaris_dask.progress import compute

__all__ = ["COHORT_BLOCK", "STATISTICS", "CohortWarning", "side_statistics", "cohort_stats",
           "cohort_quality"]  # fmt: skip

#: Cohort embeddings scored at once per chunk of rows (a 4096-row chunk then holds ~100 MB:
#: the float32 block, a float64 strip of the product, and the top-N candidates).
COHORT_BLOCK = 2048

#: Rows of a cohort block whose moments are taken at once (a float64 strip of 32 x 2048
#: scores is 512 KiB: cache-resident).
MOMENT_ROWS = 32

#: Cohorts up to this size are screened whatever ``top_n``; larger ones only when ``top_n`` is
#: at most a quarter of the cohort (beyond that, the exact top-N scores cost about as much as
#: scoring the whole cohort).
SCREEN_ALWAYS = 16384

#: The statistics per embedding, in the order of the last axis of :func:`side_statistics`.
STATISTICS = ("cohort_mean", "cohort_std", "top_mean", "top_std")


def _merge_top(top: np.ndarray, s: np.ndarray, n: int) -> np.ndarray:
    """The ``n`` largest values per row of ``top`` (the best so far) and the new block ``s``.

    Until ``n`` values are held, the two are concatenated and partitioned. After that only the
    new values *above* each row's current ``n``-th best can enter (one equal to it would only
    swap equal values), and they become rare as the cohort goes by (about ``n * B / k`` in the
    ``k``-th block of ``B``), so they are gathered sparsely and partitioned with the best so
    far: the work is a comparison per cohort score, not a selection.
    """
    if top.shape[1] < n:
        cand = np.concatenate([top, s], axis=1)
        kth = cand.shape[1] - n
        return np.partition(cand, kth, axis=1)[:, kth:] if kth > 0 else cand
    keep = s > top.min(axis=1)[:, None]
    counts = keep.sum(axis=1)
    width = int(counts.max(initial=0))
    if width == 0:
        return top
    rows, cols = np.nonzero(keep)  # row-major: grouped by row
    starts = np.cumsum(counts) - counts
    pad = np.full((s.shape[0], width), -np.inf, dtype=s.dtype)
    pad[rows, np.arange(rows.size) - np.repeat(starts, counts)] = s[rows, cols]
    return np.partition(np.concatenate([top, pad], axis=1), width, axis=1)[:, width:]


def _block_moments(s: np.ndarray, buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's mean and sum of squared deviations from it, in float64, of the float32 block
    ``s``, by strips of :data:`MOMENT_ROWS` rows in the float64 scratch ``buf`` (cache-sized,
    reused: a float64 copy of the whole block cost page faults and memory traffic). A row's
    sums do not depend on the strips (numpy reduces each contiguous row on its own)."""
    m, nb = s.shape
    mean, m2 = np.empty(m), np.empty(m)
    for lo in range(0, m, MOMENT_ROWS):
        hi = min(lo + MOMENT_ROWS, m)
        x = buf[: (hi - lo) * nb].reshape(hi - lo, nb)
        np.copyto(x, s[lo:hi])
        mean[lo:hi] = x.mean(axis=1)
        x -= mean[lo:hi, None]
        np.square(x, out=x)
        m2[lo:hi] = x.sum(axis=1)
    return mean, m2


def _stream(
    a: np.ndarray, cohort: np.ndarray, top_n: int, block: int, compiled: bool, moments: bool
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """The streaming pass over the cohort: every cohort score by :func:`score_block`, block
    moments merged (with ``moments``) and the top-N selected. Returns the count, the means, the
    sums of squared deviations and the ``(m, N)`` best scores (sorted ascending when compiled)."""
    m = a.shape[0]
    count, mean, m2 = 0, np.zeros(m), np.zeros(m)
    top = np.empty((m, 0), dtype=np.float32)
    kernel = top_kernel() if (top_n and compiled) else None
    buf = np.empty(MOMENT_ROWS * min(block, cohort.shape[0]))
    for start in range(0, cohort.shape[0], block):
        s = score_block(a, cohort[start : start + block])
        nb = s.shape[1]
        if moments:
            mb, m2b = _block_moments(s, buf)
            delta, total = mb - mean, count + nb
            mean = mean + delta * (nb / total)
            m2 = m2 + m2b + delta**2 * (count * nb / total)
            count = total
        if kernel is not None and top.shape[1] == top_n:  # the rows' best, sorted ascending
            kernel(top, s)
        elif top_n:
            top = _merge_top(top, s, top_n)
            if kernel is not None and top.shape[1] == top_n:
                top = np.sort(top, axis=1)
    return count, mean, m2, top


def _top_moments(top: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and std of each row's N best scores, summed in a fixed order (sorted descending)."""
    best = -np.sort(-top, axis=1).astype(np.float64)  # only N per row: a fixed order
    return best.mean(axis=1), best.std(axis=1)


def _stats_block(
    a: np.ndarray, cohort: np.ndarray, top_n: int, block: int, compiled: bool = True
) -> np.ndarray:
    """The ``(m, 4)`` statistics of the rows ``a`` against the whole ``cohort`` by streaming
    over every cohort score (the reference of the screened path; ``method="streaming"``): the
    full mean and std are those of the float32 scores. ``compiled``: select the top-N with the
    numba kernel when there is one (same bits either way)."""
    count, mean, m2, top = _stream(a, cohort, top_n, block, compiled, moments=True)
    out = np.empty((a.shape[0], 4))
    out[:, 0], out[:, 1] = mean, np.sqrt(m2 / count)
    if top_n:
        out[:, 2], out[:, 3] = _top_moments(top)
    else:
        out[:, 2:] = np.nan
    return out


def _guess(moments: np.ndarray, top_n: int, n: int) -> np.ndarray:
    """A starting threshold of the screen per row: where a normal distribution of the row's
    cohort scores (its mean and std) would leave ``2 N`` scores above. Only a hint: the
    screen checks it (see :func:`~bosaris_dask.embeddings.cohort_screen.screen_top`)."""
    z = NormalDist().inv_cdf(1.0 - min(0.5, 2.0 * top_n / n))
    return moments[:, 0] + z * moments[:, 1]


def _top_block(
    a: np.ndarray, cohort: np.ndarray, cohort32: np.ndarray, cohort_norms: np.ndarray | None,
    top_n: int, block: int, moments: np.ndarray | None = None,
) -> np.ndarray:  # fmt: skip
    """The ``(m, 2)`` top-N mean and std of the rows ``a``: the float32 screen
    (:func:`~bosaris_dask.embeddings.cohort_screen.screen_top`, started from a guess when the
    rows' full ``moments`` are given), with the streaming selection for the rows it leaves
    (and for all rows without numba): the same N values either way."""
    n = cohort.shape[0]
    found = None
    if 4 * top_n <= n or n <= SCREEN_ALWAYS:  # else the N exact scores a row cost as much
        guess = None if moments is None else _guess(moments, top_n, n)
        found = screen_top(a, cohort, cohort32, top_n=top_n, block=block,
                           cohort_norms=cohort_norms, guess=guess)  # fmt: skip
    if found is None:
        top = _stream(a, cohort, top_n, block, True, moments=False)[3]
    else:
        top, over = found
        if over.size:
            top[over] = _stream(a[over], cohort, top_n, block, True, moments=False)[3]
    return np.stack(_top_moments(top), axis=1)


def _screen_block(
    a: np.ndarray, packed: np.ndarray, cohort: np.ndarray, cohort32: np.ndarray,
    cohort_norms: np.ndarray, top_n: int, block: int,
) -> np.ndarray:  # fmt: skip
    """The ``(m, 4)`` statistics of the rows ``a``: moments, then the screened top-N."""
    moments = row_moments(a, packed[0], packed[1:])
    top = _top_block(a, cohort, cohort32, cohort_norms, top_n, block, moments)
    return np.concatenate([_untrusted_marked(moments, a, packed, len(cohort)), top], axis=1)


def _packed_moments(cohort: np.ndarray) -> np.ndarray:
    """The cohort's mean (row 0) and covariance (rows 1 to d) in one ``(d + 1, d)`` array."""
    mean, cov = cohort_moments(cohort)
    return np.concatenate([mean[None, :], cov])


def _moments_block(a: np.ndarray, packed: np.ndarray, n: int) -> np.ndarray:
    return _untrusted_marked(row_moments(a, packed[0], packed[1:]), a, packed, n)


def _untrusted_marked(moments: np.ndarray, a: np.ndarray, packed: np.ndarray, n: int):
    """``moments`` with NaN for the std of the rows whose ``e^T Σ e`` float64 rounding may
    matter (:func:`~bosaris_dask.embeddings.cohort_moments.error_bounds`): the client computes
    those from their products (:func:`_direct_where_untrusted`)."""
    untrusted = error_bounds(a, packed[1:], n) > TRUSTED * moments[:, 1] ** 2
    if untrusted.any():
        moments = moments.copy()
        moments[untrusted, 1] = np.nan
    return moments


def _direct_where_untrusted(
    stats: list[np.ndarray], sides: list[Side], whole: da.Array
) -> list[np.ndarray]:
    """The statistics with each row marked untrusted by its task given the mean and std of
    its own cohort products (rare: a cohort spread far more across a row than along it)."""
    if not any(np.isnan(s[:, 1]).any() for s in stats):
        return stats
    marked = [np.flatnonzero(np.isnan(s[:, 1])) for s in stats]
    wanted = [side.values[rows] for side, rows in zip(sides, marked, strict=True)]
    cohort, *rows_of = compute([whole, *wanted], progress=None)
    mean = cohort_moments(np.asarray(cohort))[0]  # the tasks' bits
    for s, rows, e in zip(stats, marked, rows_of, strict=True):
        if rows.size:
            s[rows, :2] = direct_moments(np.asarray(e), cohort, mean)
    return stats


class CohortWarning(UserWarning):
    """A cohort that holds ids of the embeddings it normalizes: each of them meets itself among
    its cohort scores (a cosine of 1, at the top of its top-N)."""


def _warn_if_shared(side: Side, cohort: Side) -> None:
    shared = np.intersect1d(side.ids.astype(str), cohort.ids.astype(str))
    if len(shared):
        warnings.warn(
            f"the cohort {cohort.source} holds {len(shared)} of the ids of {side.source} (e.g. "
            f"{str(shared[0])!r}): each meets itself among its cohort scores; a cohort is usually "
            "kept apart from the trials",
            CohortWarning,
            stacklevel=4,
        )


def _check_top_n(top_n: int | None, cohort: Side) -> int:
    n_cohort = cohort.values.shape[0]
    if n_cohort < 2:  # no spread of its scores (and none at all for an empty one)
        raise OptionError(f"{cohort.source}: a cohort needs at least 2 embeddings, got "
                          f"{n_cohort}")  # fmt: skip
    if top_n is None:
        return 0
    if not isinstance(top_n, int | np.integer) or not 2 <= top_n <= n_cohort:
        raise OptionError(f"top_n (--top-n) must be an integer from 2 to the size of the "
                          f"cohort {cohort.source}, {n_cohort}; got {top_n!r}")  # fmt: skip
    return int(top_n)


def side_statistics(
    sides: list[Side], cohort: Side, *, top_n: int | None = None, block: int | None = None,
    method: str = "screen",
) -> list[np.ndarray]:  # fmt: skip
    """``(n, 4)`` float64 statistics (:data:`STATISTICS`) of each side's rows, in one compute.

    The top-N columns are NaN without ``top_n``. ``method="screen"`` (default): the full mean
    and std from the cohort's moments, the top-N by the float32 screen; ``"streaming"``: every
    cohort score computed and streamed (the reference; full statistics of the float32 scores).

    Raises
    ------
    TrialError
        A cohort of another dimension than a side.
    OptionError
        ``top_n`` not an integer from 2 to the cohort size, or an unknown ``method``.
    """
    from bosaris_dask.embeddings.scoring import _check_dimensions

    if method not in ("screen", "streaming"):
        raise OptionError(f"method must be 'screen' or 'streaming', got {method!r}")
    n = _check_top_n(top_n, cohort)
    block = COHORT_BLOCK if block is None else block
    whole = cohort.values.rechunk((-1, -1))
    packed = whole.map_blocks(_packed_moments, chunks=((whole.shape[1] + 1,), whole.chunks[1]),
                              dtype=np.float64, meta=np.empty((0, 0)))  # fmt: skip
    whole32 = whole.map_blocks(np.asarray, np.float32, dtype=np.float32,
                               meta=np.empty((0, 0), dtype=np.float32))  # fmt: skip
    norms = whole.map_blocks(row_norms, drop_axis=1, dtype=np.float64, meta=np.empty(0))
    graphs = []
    for side in sides:
        _check_dimensions(side, cohort)
        _warn_if_shared(side, cohort)
        if method == "streaming":
            graphs.append(da.blockwise(
                _stats_block, "is", side.values, "ik", whole, "jk", new_axes={"s": 4},
                concatenate=True, dtype=np.float64, meta=np.empty((0, 0)), top_n=n, block=block,
            ))  # fmt: skip
            continue
        if n:
            graphs.append(da.blockwise(
                _screen_block, "is", side.values, "ik", packed, "pk", whole, "jk", whole32, "jk",
                norms, "j", new_axes={"s": 4}, concatenate=True, dtype=np.float64,
                meta=np.empty((0, 0)), top_n=n, block=block,
            ))  # fmt: skip
            continue
        full = da.blockwise(
            _moments_block, "is", side.values, "ik", packed, "jk", new_axes={"s": 2},
            concatenate=True, dtype=np.float64, meta=np.empty((0, 0)), n=whole.shape[0],
        )  # fmt: skip
        top = da.full((side.values.shape[0], 2), np.nan, chunks=(side.values.chunks[0], 2))
        graphs.append(da.concatenate([full, top], axis=1))
    stats = list(compute(graphs, progress=None))
    return stats if method == "streaming" else _direct_where_untrusted(stats, sides, whole)


def cohort_stats(
    emb: xr.Dataset | str | os.PathLike[str],
    cohort: xr.Dataset | str | os.PathLike[str],
    *,
    backend: str = "cosine",
    center: Any = None,
    models: Any = None,
    top_n: int | None = None,
    block: int | None = None,
) -> xr.Dataset:
    """Per-embedding cohort statistics (mean, std; top-N mean, std with ``top_n``).

    Returns
    -------
    xarray.Dataset
        Variables ``cohort_mean``, ``cohort_std``, ``top_mean``, ``top_std`` (float64, NaN without
        ``top_n``) over ``id`` (the models of ``models`` when given); ``attrs["top_n"]``.
    """
    c = resolve_center(center)
    if models is None:
        side = prepare(emb, backend=backend, center=c)
    else:
        side = prepare_models(emb, models, backend=backend, center=c)
    co = prepare(_load(cohort), backend=backend, center=c, what="cohort")
    (stats,) = side_statistics([side], co, top_n=top_n, block=block)
    return stats_dataset(side.ids, stats, top_n)


def stats_dataset(ids: np.ndarray, stats: np.ndarray, top_n: int | None) -> xr.Dataset:
    """The ``(n, 4)`` statistics of :func:`side_statistics` as a Dataset over ``id``."""
    return xr.Dataset(
        {name: ("id", stats[:, k]) for k, name in enumerate(STATISTICS)},
        coords={"id": ids}, attrs={"top_n": int(top_n or 0)},
    )  # fmt: skip


def cohort_quality(model_stats: xr.Dataset | None, segment_stats: xr.Dataset | None):
    """A Quality object (for quality fusion) from model-side and/or segment-side statistics.

    The measures are the statistics' names (``cohort_mean``, ``cohort_std``, and with top-N also
    ``top_mean``, ``top_std``).

    Examples
    --------
    >>> import numpy as np
    >>> from bosaris_dask.embeddings.store import from_arrays
    >>> c = from_arrays(["c1", "c2"], [[1.0, 0.0], [0.0, 1.0]])
    >>> q = cohort_quality(None, cohort_stats(from_arrays(["s1"], [[1.0, 1.0]]), c))
    >>> q.segment_quality.segment_measure.values.tolist()
    ['cohort_mean', 'cohort_std']
    """
    from bosaris_dask.trials import make_quality, quality_table

    tables = []
    for st in (model_stats, segment_stats):
        if st is None:
            tables.append(None)
            continue
        names = [n for n in STATISTICS if not np.isnan(st[n].values).all()]
        values = np.stack([st[n].values for n in names], axis=1)
        tables.append(quality_table(st.id.values, values, measures=names))
    quality = make_quality(*tables)
    # measure names as variable-length strings: zarr v3 has no spec for fixed-length unicode
    dims = [d for d in ("model_measure", "segment_measure") if d in quality.coords]
    return quality.assign_coords({d: quality[d].values.astype(object) for d in dims})
