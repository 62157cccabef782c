"""Lazy Scores computed from embeddings: :func:`scores_from_embeddings`.

The score matrix is never stored: each chunk is one block product of prepared enrolment rows
and prepared test rows (:mod:`bosaris_dask.embeddings.kernel`), computed when a pass needs it
and recomputed, bit for bit, by every later pass.
"""

from __future__ import annotations

import os
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask.embeddings.kernel import score_block
from bosaris_dask.embeddings.prepare import (
    Side,
    _load,
    check_backend,
    prepare,
    prepare_models,
    resolve_center,
)
from bosaris_dask.errors import TrialError
from bosaris_dask.trials import kind_of, make_scores, trial_classes

__all__ = ["scores_from_embeddings", "score_matrix", "DEFAULT_CHUNKS"]

#: Score chunk shape: 4096 x 4096 float32 is 64 MiB (plus a 32 MiB float64 strip in the kernel).
DEFAULT_CHUNKS = (4096, 4096)

Embeddings = xr.Dataset | str | os.PathLike[str]


def _check_dimensions(a: Side, b: Side) -> None:
    if a.values.shape[1] != b.values.shape[1]:
        raise TrialError(
            f"embeddings of dimension {a.values.shape[1]} in {a.source} and "
            f"{b.values.shape[1]} in {b.source} cannot be compared"
        )


def score_matrix(enrol: Side, test: Side) -> da.Array:
    """The lazy float32 ``(enrol x test)`` score matrix of two prepared sides, one block product
    per chunk (chunked as the sides' rows)."""
    _check_dimensions(enrol, test)
    return da.blockwise(
        score_block, "ij", enrol.values, "ik", test.values, "jk",
        dtype=np.float32, concatenate=True, meta=np.empty((0, 0), dtype=np.float32),
    )  # fmt: skip


def _sides(
    enrol: Embeddings, test: Embeddings, *, backend: str, center: np.ndarray | None, models: Any,
    trials: xr.Dataset | None, chunks: tuple[int, int],
) -> tuple[Side, Side]:  # fmt: skip
    """Both prepared sides, restricted to (and ordered as) the trials' ids when given."""
    c = center
    model_ids = segment_ids = None
    if trials is not None:
        if kind_of(trials) not in ("key", "ndx"):
            raise TrialError(f"trials must be a key or an ndx, got {kind_of(trials)}")
        model_ids, segment_ids = trials.model.values, trials.segment.values
    if models is None:
        e = prepare(enrol, model_ids, backend=backend, center=c, chunk_rows=chunks[0],
                    what="key model")  # fmt: skip
    else:
        e = prepare_models(enrol, models, model_ids, backend=backend, center=c,
                           chunk_rows=chunks[0])  # fmt: skip
    t = prepare(test, segment_ids, backend=backend, center=c, chunk_rows=chunks[1],
                what="key segment")  # fmt: skip
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
        An unknown back-end or normalization, a missing cohort, a bad ``top_n``.

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
    check_backend(backend)
    vector = resolve_center(center)
    e, t = _sides(enrol, test, backend=backend, center=vector, models=models, trials=trials,
                  chunks=chunks)  # fmt: skip
    if norm == "none" and cohort is None:
        score = score_matrix(e, t)
    else:
        from bosaris_dask.embeddings.normalization import normalized_matrix

        c = None if cohort is None else prepare(
            _load(cohort), backend=backend, center=vector, what="cohort")
        score = normalized_matrix(e, t, c, norm=norm, top_n=top_n)
    mask = None
    if trials is not None:
        mask = trial_classes(trials, chunks=score.chunks) != 0
    return make_scores(e.ids, t.ids, score, mask)
