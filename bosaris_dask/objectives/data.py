"""The aligned lazy inputs of a fit: scores, classes and quality sides, chunk by chunk.

:func:`fusion_data` aligns scores (and quality measures) with a key once, so that every pass of
the optimizer reads the same dask arrays; :func:`fusion_data_from_arrays` wraps in-memory scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask._deprecation import warn_swapped
from bosaris_dask.errors import BosarisError, MissingTrialsError, ScoreError, TrialError
from bosaris_dask.inputs import check_names, names_or_default
from bosaris_dask.objectives.cells import TrialQuality
from bosaris_dask.progress import persist
from bosaris_dask.trials import align, kind_of, trial_classes, validate


@dataclass(frozen=True)
class FusionData:
    """The aligned lazy inputs of a fit: everything a pass reads.

    Attributes
    ----------
    scores, masks
        ``K`` score matrices and their score masks, all in the same 2-D chunks.
    classes
        The key's signed trial mask (+1 target, -1 non-target, 0 no trial), same chunks.
    model_quality, segment_quality
        ``(n_models, Q)`` and ``(n_segments, Q)`` dask arrays (chunked like the rows and the
        columns) of quality vectors with a constant 1 appended, zero rows where quality is
        missing; ``None`` without quality. For trials laid out off their ids' grid (packed
        lists, :class:`~bosaris_dask.objectives.cells.TrialQuality`), both are ``(rows,
        columns, Q)``: each cell's own trial's vectors, chunked like the classes (see
        :attr:`per_cell`).
    names
        The systems' names, what errors and fit notes call them (``None``: ``system-1``, ...,
        as :func:`~bosaris_dask.metrics.evaluate` names them).
    quality_by
        The ``(centers, scales)`` the quality measures were standardized by (the vectors hold
        ``(q - c) / h``; :mod:`~bosaris_dask.objectives.quality_scaling`), or ``None``.
    """

    scores: tuple[da.Array, ...]
    masks: tuple[da.Array, ...]
    classes: da.Array
    model_quality: da.Array | None = None
    segment_quality: da.Array | None = None
    names: tuple[str, ...] | None = None
    quality_by: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def n_systems(self) -> int:
        """``K``, the number of systems."""
        return len(self.scores)

    @property
    def system_names(self) -> list[str]:
        """The systems' names: :attr:`names`, else ``system-1``, ..."""
        return names_or_default(self.names, self.n_systems)

    @property
    def n_measures(self) -> int:
        """Quality measures per side (0 without quality)."""
        return 0 if self.model_quality is None else int(self.model_quality.shape[-1]) - 1

    @property
    def per_cell(self) -> bool:
        """Whether the quality vectors are each cell's (packed trials), not each row's and
        each column's."""
        return self.model_quality is not None and self.model_quality.ndim == 3

    def persist(self) -> FusionData:
        """Persist every array (one read of the stores; afterwards passes read memory)."""
        arrays = [*self.scores, *self.masks, self.classes]
        arrays = list(persist(*arrays))
        k = self.n_systems
        return replace(
            self,
            scores=tuple(arrays[:k]),
            masks=tuple(arrays[k : 2 * k]),
            classes=arrays[2 * k],
        )

    def located(
        self, error: BosarisError, models: np.ndarray, segments: np.ndarray
    ) -> BosarisError:
        """A fit's count of key trials without a score, or of non-finite scores, as an
        evaluation words it: the first system with such trials (by :attr:`system_names`),
        their count and a few of them by ``models`` and ``segments`` (the ids of the key's
        grid), found by one more look at the data (on this error path only). Any other error
        as it is.

        Examples
        --------
        >>> data = fusion_data_from_arrays(np.array([[1.0]]), np.array([[np.nan], [0.0]]))
        >>> str(data.located(ScoreError("1 trial has a non-finite score"), np.array(["m"]),
        ...                  np.array(["t1", "n1", "n2"])))
        'system-1: 1 trial has a non-finite score, e.g. (m, n1)'
        """
        from bosaris_dask.inputs import trial_cells_error
        from bosaris_dask.progress import compute

        missing = isinstance(error, MissingTrialsError)
        if not missing and "non-finite score" not in str(error):
            return error
        trials = self.classes != 0
        for name, score, mask in zip(self.system_names, self.scores, self.masks, strict=True):
            bad = trials & ~mask if missing else trials & mask & ~da.isfinite(score)
            n = int(compute(bad.sum(), progress=None))
            if n:
                return trial_cells_error(name, bad, models, segments, n, missing=missing)
        return error


def align_inputs(
    scores: Sequence[xr.Dataset], like: xr.Dataset, *, once: bool = False
) -> list[xr.Dataset]:
    """Align each Scores to the ids of ``like`` and rechunk them all to the first one's chunks.

    ``once``: realign ids in another order now, once (a fit's passes would each repeat the
    shuffle; see :func:`bosaris_dask.trials.align`).

    Raises
    ------
    TrialError
        If an input is not a Scores object (or its ids are not unique).
    ScoreError
        If its scores are not real numbers.
    """
    if not len(scores):
        raise TrialError("at least one Scores object is needed")
    aligned = []
    for s in scores:
        if kind_of(s) != "scores":
            raise TrialError(f"expected scores, got {kind_of(s)}")
        aligned.append(align(validate(s), like, once=once))
    chunks = aligned[0].score.data.chunks
    out = []
    for s in aligned:
        if s.score.data.chunks != chunks:
            s = s.copy()
            s["score"] = s.score.chunk(dict(zip(("model", "segment"), chunks, strict=True)))
            s["score_mask"] = s.score_mask.chunk(
                dict(zip(("model", "segment"), chunks, strict=True))
            )
        out.append(s)
    return out


def _side(table: xr.DataArray, dim: str, ids: np.ndarray) -> np.ndarray:
    values = table.reindex({dim: ids}).values.astype(np.float64)
    missing = np.isnan(values).any(axis=1)
    infinite = np.isinf(values)
    if infinite.any():
        row, col = np.argwhere(infinite)[0]
        raise ScoreError(f"{dim} quality measures contain infinite values: {dim} {ids[row]!r} "
                         f"has {values[row, col]} as measure {col + 1}")  # fmt: skip
    out = np.zeros((len(ids), values.shape[1] + 1))
    out[~missing, :-1] = values[~missing]
    out[~missing, -1] = 1.0
    return out


def quality_sides(
    quality: xr.Dataset, models: np.ndarray, segments: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Model-side and segment-side quality vectors ``q~`` (a constant 1 appended) per id.

    Ids absent from a table, and rows with a NaN, get the zero vector: their trials have no
    quality term and fall back to the linear fusion.

    Raises
    ------
    TrialError
        If a table is missing or the two sides have different numbers of measures (``W`` is
        symmetric, so both sides must carry the same measures).
    ScoreError
        If a quality measure is infinite.

    Examples
    --------
    >>> from bosaris_dask.trials import make_quality, quality_table
    >>> q = make_quality(quality_table(["m1"], [[0.5]]), quality_table(["s1", "s2"], [[1], [2]]))
    >>> qm, qs = quality_sides(q, np.array(["m1", "m2"]), np.array(["s2"]))
    >>> qm.tolist(), qs.tolist()
    ([[0.5, 1.0], [0.0, 0.0]], [[2.0, 1.0]])
    """
    if kind_of(quality) != "quality":
        raise TrialError(f"expected quality, got {kind_of(quality)}")
    if "model_quality" not in quality or "segment_quality" not in quality:
        raise TrialError("quality fusion needs both a model-side and a segment-side table")
    mq, sq = quality.model_quality, quality.segment_quality
    if mq.sizes["model_measure"] != sq.sizes["segment_measure"]:
        raise TrialError(
            f"{mq.sizes['model_measure']} model-side and {sq.sizes['segment_measure']} "
            "segment-side quality measures: W is symmetric, so both sides need the same number"
        )
    names = measure_names(quality)
    if names is None:
        m_names = [str(v) for v in mq.model_measure.values]
        s_names = [str(v) for v in sq.segment_measure.values]
        raise TrialError(
            f"the model side's quality measures are {m_names} and the segment side's "
            f"{s_names}: W pairs them by position, so both sides need the same measures in the "
            "same order"
        )
    return _side(mq, "model", np.asarray(models)), _side(sq, "segment", np.asarray(segments))


def measure_names(quality: xr.Dataset) -> list[str] | None:
    """The quality measures' names (both sides', or the side given: a side that only numbers
    its measures ``0..q-1`` takes the other's names), or ``None`` where the sides name them
    differently (or there is no side).

    >>> from bosaris_dask.trials import make_quality, quality_table
    >>> q = make_quality(quality_table(["m1"], [[0.5, 2]], measures=["snr", "dur"]),
    ...                  quality_table(["s1"], [[1, 3]]))
    >>> measure_names(q)
    ['snr', 'dur']
    """
    sides = [[str(v) for v in quality[f"{side}_measure"].values]
             for side in ("model", "segment") if f"{side}_measure" in quality.coords]  # fmt: skip
    if not sides:
        return None
    numbered = [str(i) for i in range(len(sides[0]))]
    named = [names for names in sides if names != numbered] or [numbered]
    return named[0] if all(names == named[0] for names in named) else None


def fusion_data(
    scores: Sequence[xr.Dataset],
    key: xr.Dataset,
    quality: xr.Dataset | TrialQuality | None = None,
    *,
    persist: bool = False,
    names: Sequence[str] | None = None,
) -> FusionData:
    """The inputs of a fit: Scores aligned to the key's ids, its classes, quality vectors.

    Parameters
    ----------
    scores
        ``K`` Scores objects (the systems to fuse; one for calibration).
    key
        The supervision (a Key; a label-derived key's mask is generated in the scores' chunks).
        ``(key, scores)``, the order of earlier releases, is swapped with a ``FutureWarning``.
    quality
        Optional Quality object (both sides, same number of measures); for packed trials
        (:mod:`bosaris_dask.io.text.packed`), their
        :class:`~bosaris_dask.objectives.cells.TrialQuality` (each cell gets its own trial's
        vectors).
    persist
        Persist the aligned scores, masks and classes (see :meth:`FusionData.persist`): the
        stores are read once instead of once per pass, at the price of holding every score
        matrix in the cluster's memory (``K * (4 or 8) + K + 1`` bytes per trial). Worth it
        when the data fit in memory: a fit costs about 5-10 passes with ``method="exact"`` and
        tens with ``"cg"``.
    names
        The systems' names, for errors and fit notes (default ``system-1``, ...).

    Examples
    --------
    >>> from bosaris_dask.trials import make_key, make_scores
    >>> key = make_key(["m1", "m2"], ["s1"], [[1], [-1]])
    >>> s = make_scores(["m2", "m1"], ["s1"], [[0.5], [2.0]])
    >>> data = fusion_data([s], key)
    >>> data.scores[0].compute().tolist(), data.classes.compute().tolist()
    ([[2.0], [0.5]], [[1], [-1]])
    """
    if isinstance(scores, xr.Dataset) and kind_of(scores) == "key":  # (key, scores)
        warn_swapped("fusion_data")  # (the warning names the caller's line)
        scores, key = key, scores
    if kind_of(key) != "key":
        raise TrialError(f"expected a key, got {kind_of(key)}")
    check_names(names, len(scores))
    # the fit's passes read them many times: realign ids in another order once (persisting
    # computes the lazy reindex once anyway)
    aligned = align_inputs(scores, key, once=not persist)
    chunks = aligned[0].score.data.chunks
    classes = trial_classes(key, chunks=chunks)
    qm = qs = None
    if isinstance(quality, TrialQuality):
        qm, qs = cell_quality(quality, chunks)
    elif quality is not None:
        qm_np, qs_np = quality_sides(quality, key.model.values, key.segment.values)
        qm = da.from_array(qm_np, chunks=(chunks[0], qm_np.shape[1]))
        qs = da.from_array(qs_np, chunks=(chunks[1], qs_np.shape[1]))
    data = FusionData(
        scores=tuple(s.score.data for s in aligned),
        masks=tuple(s.score_mask.data for s in aligned),
        classes=classes,
        model_quality=qm,
        segment_quality=qs,
        names=None if names is None else tuple(map(str, names)),
    )
    return data.persist() if persist else data


def cell_quality(
    quality: TrialQuality,
    chunks: tuple[tuple[int, ...], ...],
    sides: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[da.Array, da.Array]:
    """Each cell's model-side and segment-side quality vectors as ``(rows, columns, Q)`` dask
    arrays in the trials' ``chunks`` (``sides``: the ids' vectors, when already computed).

    Raises
    ------
    TrialError
        If the quality is laid out in another shape than the trials.
    """
    quality.check_layout(tuple(sum(c) for c in chunks))
    qm, qs = quality.cells(sides)
    q_chunks = (*chunks, qm.shape[-1])
    return da.from_array(qm, chunks=q_chunks), da.from_array(qs, chunks=q_chunks)


def fusion_data_from_arrays(
    tar: np.ndarray, non: np.ndarray, *, chunk: int = 1 << 20
) -> FusionData:
    """The inputs of a fit from plain arrays of target and non-target scores (small data).

    ``tar`` is ``(T,)`` or ``(T, K)`` and ``non`` is ``(N,)`` or ``(N, K)``: one column per
    system. The trials are laid out as one row of ``T + N`` entries in chunks of ``chunk``.

    Examples
    --------
    >>> d = fusion_data_from_arrays(np.array([1.0, 2.0]), np.array([0.0]), chunk=2)
    >>> d.n_systems, d.scores[0].chunks, d.classes.compute().tolist()
    (1, ((1,), (2, 1)), [[1, 1, -1]])
    """
    tar = np.asarray(tar, dtype=np.float64)
    non = np.asarray(non, dtype=np.float64)
    tar = tar[:, None] if tar.ndim == 1 else tar
    non = non[:, None] if non.ndim == 1 else non
    if tar.ndim != 2 or non.ndim != 2 or tar.shape[1] != non.shape[1]:
        raise TrialError(
            f"target scores {tar.shape} and non-target scores {non.shape} must be (n, K) "
            "with the same number K of systems"
        )
    both = np.concatenate([tar, non])
    n = len(both)
    chunks = (1, max(1, min(chunk, n)))
    cls = np.concatenate([np.ones(len(tar), np.int8), -np.ones(len(non), np.int8)])[None, :]
    scores = tuple(da.from_array(both[:, k][None, :], chunks=chunks) for k in range(both.shape[1]))
    masks = tuple(da.ones((1, n), dtype=bool, chunks=chunks) for _ in scores)
    return FusionData(scores=scores, masks=masks, classes=da.from_array(cls, chunks=chunks))
