"""Lazy Scores computed from embeddings: :func:`scores_from_embeddings`.

The score matrix is never stored: each chunk is one block product of prepared enrolment rows
and prepared test rows (:mod:`bosaris_dask.embeddings.kernel`), computed when a pass needs it
and recomputed, bit for bit, by every later pass. The matrix registers a screen
(:mod:`bosaris_dask.passes.screening`): a refinement pass of the engine then computes each block as
a float32 product and recomputes exactly only the pairs whose score can lie in a candidate bin
(:mod:`bosaris_dask.embeddings.screen`; normalized scores:
:mod:`bosaris_dask.embeddings.normalized_screen`), instead of every exact product again.
"""

from __future__ import annotations

import os
import warnings
from functools import partial
from typing import Any

import dask.array as da
import numpy as np
import pandas as pd
import xarray as xr

from bosaris_dask.embeddings.device import check_device
from bosaris_dask.embeddings.kernel import score_block
from bosaris_dask.embeddings.prepare import (
    Side,
    _load,
    check_backend,
    check_dot_range,
    prepare,
    prepare_models,
    resolve_center,
)
from bosaris_dask.embeddings.screen import screened_scores
from bosaris_dask.errors import OptionError, TrialError
from bosaris_dask.passes import screening, subgrids
from bosaris_dask.trials import kind_of, make_scores, trial_classes

__all__ = [
    "trial_scores",
    "scores_from_embeddings",
    "scores_with_cohort_quality",
    "score_matrix",
    "screened_matrix",
    "DEFAULT_CHUNKS",
]

#: Score chunk shape: 4096 x 4096 float32 is 64 MiB (plus a 32 MiB float64 strip in the kernel).
DEFAULT_CHUNKS = (4096, 4096)

Embeddings = xr.Dataset | str | os.PathLike[str]


def _check_dimensions(a: Side, b: Side) -> None:
    if a.values.shape[1] != b.values.shape[1]:
        raise TrialError(
            f"embeddings of dimension {a.values.shape[1]} in {a.source} and "
            f"{b.values.shape[1]} in {b.source} cannot be compared"
        )


def score_matrix(enrol: Side, test: Side, device: str = "cpu") -> da.Array:
    """The lazy float32 ``(enrol x test)`` score matrix of two prepared sides, one block product
    per chunk (chunked as the sides' rows, the products and their rounding on ``device``),
    with its float32 screen registered for the engine's refinement passes
    (:mod:`bosaris_dask.passes.screening`) when they run on the CPU; on an accelerator a
    refinement pass recomputes the whole blocks it reads there."""
    _check_dimensions(enrol, test)
    on = {} if device == "cpu" else {"device": device}  # the CPU's blocks as they always were
    matrix = outer_blocks(score_block, enrol.values, test.values, **on)
    if device == "cpu":
        screening.register(matrix, partial(screened_matrix, enrol.values, test.values))
    return matrix


def screened_matrix(rows: da.Array, cols: da.Array, lo: np.ndarray, hi: np.ndarray) -> da.Array:
    """The screened ``(rows x cols)`` matrix for the score ranges ``[lo[k], hi[k]]``
    (:func:`bosaris_dask.embeddings.screen.screen_block` per block), chunked as
    :func:`score_matrix`'s.

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> a = da.from_array(np.array([[1.0, 0.0], [0.6, 0.8]]), chunks=1)
    >>> screened_matrix(a, a, np.array([0.5]), np.array([0.7])).compute().tolist()
    [[1.0, 0.6000000238418579], [0.6000000238418579, 1.0]]
    """
    return outer_blocks(screened_scores, rows, cols, lo=lo, hi=hi)


def _boxed(block: np.ndarray) -> np.ndarray:
    """A chunk of rows as the one element of a 1-D object array."""
    out = np.empty(1, dtype=object)
    out[0] = block
    return out


def _unboxed(kernel: Any, *boxes: np.ndarray, **kwargs: Any):
    return kernel(*(box[0] for box in boxes), **kwargs)


def _boxed_rows(rows: da.Array) -> da.Array:
    """Each row chunk of an array (1-D or 2-D) as one element of a 1-D object array."""
    if rows.ndim == 2:
        rows = rows.rechunk({1: -1})
    return da.map_blocks(_boxed, rows, drop_axis=list(range(1, rows.ndim)), dtype=object,
                         chunks=((1,) * rows.numblocks[0],),
                         meta=np.empty(0, dtype=object))  # fmt: skip


def outer_blocks(kernel: Any, rows: da.Array, cols: da.Array, *extra: Any, **kwargs: Any):
    """``kernel(rows_block, cols_block, *extra_blocks)`` for every pair of row chunks: the
    float32 ``(rows x cols)`` matrix. ``extra`` alternates arrays and their index (``"i"`` or
    ``"j"``), chunked as ``rows`` or ``cols``. That the output has many more chunks than each
    input is the point, so dask's warning about it is silenced.

    The row chunks travel boxed (:func:`_boxed_rows`) so that the layer has no contracted
    index: dask then fuses each block's product into the pass task that consumes it, and a
    block's scores live only inside that task (with a contracted index it does not, and the
    threaded scheduler held dozens of 64 MiB blocks at once at 1e10 pairs). A strided part of
    a block is computed from its rows and columns alone (:mod:`bosaris_dask.passes.subgrids`).
    """
    boxed = [_boxed_rows(x) if k % 2 == 0 else x for k, x in enumerate(extra)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", da.PerformanceWarning)
        matrix = da.blockwise(
            partial(_unboxed, kernel), "ij", _boxed_rows(rows), "i", _boxed_rows(cols), "j",
            *boxed, dtype=np.float32, concatenate=True, meta=np.empty((0, 0), dtype=np.float32),
            adjust_chunks={"i": rows.chunks[0], "j": cols.chunks[0]}, **kwargs,
        )  # fmt: skip
    subgrids.register_reader(matrix, partial(_strided_block, kernel, rows, cols, extra, kwargs))
    return matrix


def _strided_block(
    kernel: Any, rows: da.Array, cols: da.Array, extra: tuple, kwargs: dict[str, Any],
    i: int, j: int, row_step: int, col_step: int,
) -> da.Array:  # fmt: skip
    """Block ``(i, j)`` of :func:`outer_blocks`' matrix at every ``row_step``-th row and
    ``col_step``-th column, from those rows and columns alone (the kernel's scores are those
    of each pair, whatever else its block holds)."""
    at = {"i": (i, row_step), "j": (j, col_step)}

    def part(x: da.Array, index: str) -> da.Array:
        block, step = at[index]
        return x.blocks[block][::step]

    picked = [part(x, extra[k + 1]) if k % 2 == 0 else x for k, x in enumerate(extra)]
    return outer_blocks(kernel, part(rows, "i"), part(cols, "j"), *picked, **kwargs)


def _sides(
    enrol: Embeddings, test: Embeddings, *, backend: str, center: np.ndarray | None, models: Any,
    trials: xr.Dataset | None, chunks: tuple[int, int],
) -> tuple[Side, Side]:  # fmt: skip
    """Both prepared sides, restricted to (and ordered as) the trials' ids when given."""
    model_ids = segment_ids = None
    if trials is not None:
        if kind_of(trials) not in ("key", "ndx"):
            raise TrialError(f"trials must be a key or an ndx, got {kind_of(trials)}")
        model_ids, segment_ids = trials.model.values, trials.segment.values
    which = "key" if trials is None or kind_of(trials) == "key" else "trial list"
    return _prepared_sides(enrol, test, model_ids, segment_ids, which, backend=backend,
                           center=center, models=models, chunks=chunks)  # fmt: skip


def _prepared_sides(
    enrol: Embeddings, test: Embeddings, model_ids: Any, segment_ids: Any, which: str, *,
    backend: str, center: np.ndarray | None, models: Any, chunks: tuple[int, int],
) -> tuple[Side, Side]:  # fmt: skip
    """Both prepared sides, restricted to (and ordered as) these ids (``None``: all)."""
    if models is None:
        e = prepare(enrol, model_ids, backend=backend, center=center, chunk_rows=chunks[0],
                    what=f"{which} model")  # fmt: skip
    else:
        e = prepare_models(enrol, models, model_ids, backend=backend, center=center,
                           chunk_rows=chunks[0])  # fmt: skip
    t = prepare(test, segment_ids, backend=backend, center=center, chunk_rows=chunks[1],
                what=f"{which} segment")  # fmt: skip
    return e, t


def scores_from_embeddings(
    enrol: Embeddings,
    test: Embeddings,
    *,
    backend: str = "cosine",
    center: Any = None,
    models: Any = None,
    trials: xr.Dataset | None = None,
    norm: str = "none",
    cohort: Embeddings | None = None,
    top_n: int | None = None,
    chunks: tuple[int, int] = DEFAULT_CHUNKS,
    device: str = "cpu",
) -> xr.Dataset:
    """Lazy Scores of enrolment against test embeddings (one blocked matrix product per chunk).

    Parameters
    ----------
    enrol, test
        Embedding sets (:func:`bosaris_dask.embeddings.read`) or paths to embedding files.
    backend : {"cosine", "dot"}
        - ``"cosine"``: center (if asked), length-normalize, then dot product (default).
        - ``"dot"``: center (if asked), then dot product.
    center
        ``None`` (no centering), a mean vector, or an embedding set / path whose mean is
        estimated (a ``.npy`` file holding a 1-D array is taken as the vector itself). The same
        vector is subtracted from every side (and the cohort) before normalization.
    models
        A model map (path of ``model segment`` lines, ``{model: [segments]}``, or a table): the
        models are the map's, each the mean of its segments' prepared embeddings, normalized
        again for cosine (see :mod:`bosaris_dask.embeddings.prepare`). ``None``: every enrolment
        embedding is a model.
    trials
        A Key or Ndx: the scores cover exactly its model and segment ids, in its order, and
        ``score_mask`` is its trial list (so only its trials count). ``None``: all models
        against all test embeddings.
    norm : {"none", "z", "t", "s", "as"}
        Cohort score normalization (:mod:`bosaris_dask.embeddings.cohort`); all but ``"none"``
        need ``cohort``, ``"as"`` also ``top_n``.
    cohort
        The cohort embedding set (or path), prepared like the test side.
    top_n
        The adaptive cohort size of AS-norm.
    chunks
        Score chunk shape ``(models, segments)``.
    device
        Where the block products run and are rounded: ``"cpu"`` (numpy's BLAS), or a
        PyTorch device with float64 products such as ``"cuda"`` or ``"cuda:1"`` (needs
        ``torch``; the device of the workers that compute the blocks; refused unless it
        rounds to nearest, ties to even). The scores are the same bits on any device
        (:mod:`bosaris_dask.embeddings.device`); the cohort statistics of a normalization are
        computed on the CPU.

    Returns
    -------
    xarray.Dataset
        A Scores object (see :mod:`bosaris_dask.trials`) with float32 ``score``; nothing is
        computed beyond the checks of the embeddings (and the cohort statistics).

    Raises
    ------
    TrialError
        Ids of the trials without embedding, a model map naming unknown segments, embeddings of
        different dimensions, duplicate ids.
    ScoreError
        NaN/infinite embeddings, zero vectors with the cosine back-end.
    OptionError
        An unknown back-end, normalization or device, a missing cohort, a bad ``top_n``.

    Examples
    --------
    >>> import numpy as np
    >>> from bosaris_dask.embeddings import from_arrays
    >>> e = from_arrays(["m1", "m2"], np.array([[1.0, 0.0], [0.6, 0.8]]))
    >>> t = from_arrays(["t1", "t2", "t3"], np.array([[2.0, 0.0], [0.0, 3.0], [-1.0, -1.0]]))
    >>> s = scores_from_embeddings(e, t, chunks=(1, 2))
    >>> s.score.data.chunks, s.score.dtype
    (((1, 1), (2, 1)), dtype('float32'))
    >>> s.score.values.astype(float).round(4).tolist()
    [[1.0, 0.0, -0.7071], [0.6, 0.8, -0.9899]]
    """
    options = {"backend": backend, "center": center, "models": models, "trials": trials,
               "norm": norm, "cohort": cohort, "top_n": top_n, "chunks": chunks,
               "device": device}  # fmt: skip
    return _build(enrol, test, quality=False, **options)[0]


def trial_scores(
    enrol: Embeddings,
    test: Embeddings,
    model_ids: Any,
    segment_ids: Any,
    model_of: np.ndarray,
    segment_of: np.ndarray,
    *,
    backend: str = "cosine",
    center: Any = None,
    models: Any = None,
    norm: str = "none",
    cohort: Embeddings | None = None,
    top_n: int | None = None,
    device: str = "cpu",
    what: str = "key",
) -> np.ndarray:
    """The float32 scores of a list of trials, ``(model_ids[model_of[k]],
    segment_ids[segment_of[k]])``: the bits :func:`scores_from_embeddings` gives them in any
    block (every score is the exact product rounded once: :mod:`.rounding`; a normalization
    is elementwise on it, with each side's cohort statistics), computed pair by pair, for lists
    too sparse for a models x segments matrix (a VoxCeleb1-E key). The options are
    :func:`scores_from_embeddings`'s (``device`` is checked as there; the products of single
    pairs run on the CPU, the same bits); ``what`` names the list in errors (``"key"``,
    ``"trial list"``).

    Examples
    --------
    >>> from bosaris_dask.embeddings import from_arrays
    >>> e = from_arrays(["m1", "m2"], np.array([[1.0, 0.0], [0.6, 0.8]]))
    >>> t = from_arrays(["t1", "t2"], np.array([[2.0, 0.0], [0.0, 3.0]]))
    >>> trial_scores(e, t, ["m2", "m1"], ["t2", "t1"], np.array([0, 1]), np.array([0, 1]))
    array([0.8, 1. ], dtype=float32)
    """
    from bosaris_dask.embeddings.rounding import exact_pairs
    from bosaris_dask.progress import compute

    check_backend(backend)
    check_device(device)
    from bosaris_dask.embeddings.normalization import check_top_n_used

    check_top_n_used(norm, top_n, statistics=False)  # (no cohort statistics written here)
    vector = resolve_center(center)
    e, t = _prepared_sides(enrol, test, np.asarray(model_ids), np.asarray(segment_ids), what,
                           backend=backend, center=vector, models=models,
                           chunks=DEFAULT_CHUNKS)  # fmt: skip
    if backend == "dot":
        check_dot_range(e, t)
    _check_dimensions(e, t)
    rows, cols = np.asarray(model_of), np.asarray(segment_of)
    a, b = (np.asarray(v, dtype=np.float64) for v in compute([e.values, t.values]))
    raw = exact_pairs(a, b, rows, cols)
    if norm == "none" and cohort is None:
        return raw
    from bosaris_dask.embeddings.normalization import side_norms
    from bosaris_dask.embeddings.normalized_screen import KINDS, normalized_values

    c = _prepared_cohort(cohort, e, t, backend, vector)
    if norm in ("s", "as") and models is None and _same_source(enrol, test):
        union = _union_side(e, t, a, b)
        del a, b  # (the union holds the rows now: a VoxCeleb1-E side is 300 MB)
        mu_e, sd_e, mu_t, sd_t = _one_side_norms(e, t, union, c, norm, top_n)
    else:
        (mu_e, sd_e, mu_t, sd_t), _, _ = side_norms(e, t, c, norm=norm, top_n=top_n)
    out = normalized_values(raw.astype(np.float64), mu_e[rows], sd_e[rows], mu_t[cols],
                            sd_t[cols], KINDS[norm])  # fmt: skip
    return out.astype(np.float32)


def _prepared_cohort(
    cohort: Embeddings | None, e: Side, t: Side, backend: str, center: np.ndarray | None
) -> Side | None:
    """The cohort prepared like the sides ``e`` and ``t`` (``None`` without one); with the dot
    back-end, its products with both sides checked to be float32 scores."""
    if cohort is None:
        return None
    c = prepare(_load(cohort), backend=backend, center=center, what="cohort")
    if backend == "dot":
        check_dot_range(e, c)
        check_dot_range(t, c)
    return c


def _same_source(enrol: Embeddings, test: Embeddings) -> bool:
    """Whether both sides come from one embedding set (one object, or one file)."""
    if enrol is test:
        return True
    if isinstance(enrol, str | os.PathLike) and isinstance(test, str | os.PathLike):
        try:
            return os.path.samefile(enrol, test)
        except OSError:
            return False
    return False


def _union_side(e: Side, t: Side, a: np.ndarray, b: np.ndarray) -> Side:
    """One side of the ids of ``e`` then those of ``t`` not in ``e`` (their prepared rows
    ``a`` and ``b``), for two sides prepared from one embedding set."""
    extra = ~pd.Index(t.ids).isin(pd.Index(e.ids))
    rows = np.concatenate([a, b[extra]])
    return Side(np.concatenate([e.ids, t.ids[extra]]),
                da.from_array(rows, chunks=(e.values.chunks[0][0], -1)), e.source,
                max(e.max_norm, t.max_norm))  # fmt: skip


def _one_side_norms(
    e: Side, t: Side, union: Side, cohort: Side | None, norm: str, top_n: int | None
) -> tuple[np.ndarray, ...]:
    """The normalization statistics of two sides prepared from one embedding set (a VoxCeleb1-E
    list: its enrolment and test utterances mostly the same), each id's computed once, on the
    ``union`` of their ids (:func:`_union_side`; a row's statistics do not depend on the rows
    beside it), with the checks and warnings of the two sides."""
    from bosaris_dask.embeddings.cohort import CohortWarning, _warn_if_shared
    from bosaris_dask.embeddings.normalization import side_norms

    if cohort is not None:
        _warn_if_shared(e, cohort)
        _warn_if_shared(t, cohort)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CohortWarning)  # (said above, side by side)
        (mu, sd, _, _), _, _ = side_norms(union, union, cohort, norm=norm, top_n=top_n)
    at = pd.Index(union.ids).get_indexer(t.ids)
    n = len(e.ids)
    return mu[:n], sd[:n], mu[at], sd[at]


def scores_with_cohort_quality(
    enrol: Embeddings, test: Embeddings, *, cohort: Embeddings, norm: str = "none",
    **options: Any,
) -> tuple[xr.Dataset, xr.Dataset]:  # fmt: skip
    """:func:`scores_from_embeddings` and the cohort statistics of both sides as a Quality
    object (measures ``cohort_mean``, ``cohort_std``, and with ``top_n`` also ``top_mean``,
    ``top_std``), computed in the same pass as the normalization's.

    Examples
    --------
    >>> import numpy as np
    >>> from bosaris_dask.embeddings import from_arrays
    >>> e, t = from_arrays(["m"], [[1.0, 0.0]]), from_arrays(["t"], [[0.6, 0.8]])
    >>> c = from_arrays(["c1", "c2"], [[1.0, 0.0], [0.0, 1.0]])
    >>> scores, q = scores_with_cohort_quality(e, t, cohort=c, norm="z")
    >>> q.model_quality.model_measure.values.tolist(), q.model_quality.values.tolist()
    (['cohort_mean', 'cohort_std'], [[0.5, 0.5]])
    >>> q.segment_quality.values.round(6).tolist()  # t scores the cohort 0.6 and 0.8 (float32)
    [[0.7, 0.1]]
    """
    scores, quality = _build(enrol, test, cohort=cohort, norm=norm, quality=True, **options)
    return scores, quality


def _build(
    enrol: Embeddings, test: Embeddings, *, backend: str = "cosine", center: Any = None,
    models: Any = None, trials: xr.Dataset | None = None, norm: str = "none",
    cohort: Embeddings | None = None, top_n: int | None = None,
    chunks: tuple[int, int] = DEFAULT_CHUNKS, device: str = "cpu", quality: bool,
) -> tuple[xr.Dataset, xr.Dataset | None]:  # fmt: skip
    check_backend(backend)
    device = check_device(device)
    if quality and cohort is None:
        raise OptionError("cohort statistics (quality measures) need a cohort")
    from bosaris_dask.embeddings.normalization import check_top_n_used

    check_top_n_used(norm, top_n, statistics=quality)  # (ignored without a norm before)
    vector = resolve_center(center)
    e, t = _sides(enrol, test, backend=backend, center=vector, models=models, trials=trials,
                  chunks=chunks)  # fmt: skip
    if backend == "dot":
        check_dot_range(e, t)
    found = None
    if norm == "none" and cohort is None:
        score = score_matrix(e, t, device)
    else:
        from bosaris_dask.embeddings.normalization import normalize

        c = _prepared_cohort(cohort, e, t, backend, vector)
        if norm == "none" and quality:
            from bosaris_dask.embeddings.cohort import side_statistics

            score, found = score_matrix(e, t, device), side_statistics([e, t], c, top_n=top_n)
        else:
            score, *found = normalize(e, t, c, norm=norm, top_n=top_n, both_sides=quality,
                                      device=device)  # fmt: skip
    mask = None
    if trials is not None:
        mask = trial_classes(trials, chunks=score.chunks) != 0
    scores = make_scores(e.ids, t.ids, score, mask)
    if not quality:
        return scores, None
    from bosaris_dask.embeddings.cohort import cohort_quality, stats_dataset

    return scores, cohort_quality(stats_dataset(e.ids, found[0], top_n),
                                  stats_dataset(t.ids, found[1], top_n))  # fmt: skip
