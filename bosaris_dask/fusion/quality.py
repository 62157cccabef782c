"""Quality-measure fusion: :class:`QualityFuser`, a linear fusion plus ``q~_m' W q~_s``."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask._deprecation import renamed_keyword
from bosaris_dask.errors import MissingTrialsError, ScoreError, TrialError, have
from bosaris_dask.fusion.base import (
    _as_list,
    _output_mask,
    apply_block,
    check_systems,
    scores_and_key,
    wanted_trials,
    with_ids,
)
from bosaris_dask.fusion.fit_checks import FitWarning
from bosaris_dask.fusion.json_model import in_llr_base, model_array
from bosaris_dask.fusion.linear import LinearFuser
from bosaris_dask.objectives import (
    TrialQuality,
    align_inputs,
    fusion_data,
    measure_names,
    n_quality_params,
    quality_matrix,
    quality_params,
    quality_sides,
)
from bosaris_dask.objectives.data import FusionData, cell_quality
from bosaris_dask.objectives.quality_scaling import (
    MAPPED_BACK_TOLERANCE,
    mapped_back_error,
    quality_standardization,
    standardize_vectors,
    unstandardize,
)
from bosaris_dask.progress import compute
from bosaris_dask.trials import kind_of, make_quality, make_scores, quality_table


class QualityBackoffWarning(UserWarning):
    """Some trials have no quality: they get the first-stage linear fusion's score."""


class UncheckedMeasuresWarning(UserWarning):
    """The quality's measures are only numbered (a BOSARIS HDF5 or text table), the model's
    named, or the other way round: their order cannot be checked."""


def transform_quality(
    quality: xr.Dataset | TrialQuality, qtrans: np.ndarray | None
) -> xr.Dataset | TrialQuality:
    """Both sides' quality vectors mapped by ``qtrans`` (``(r, q)``): ``q -> qtrans @ q``.

    ``None`` returns ``quality`` unchanged. A row with a NaN stays all NaN (no quality).

    Examples
    --------
    >>> q = make_quality(quality_table(["m"], [[1.0, 2.0]]), quality_table(["s"], [[3.0, 4.0]]))
    >>> transform_quality(q, np.array([[1.0, 1.0]])).segment_quality.values.tolist()
    [[7.0]]
    """
    if isinstance(quality, TrialQuality):  # the trials' ids' quality, mapped
        return quality.mapped(lambda ids: transform_quality(ids, qtrans))
    if qtrans is None:
        return quality
    if kind_of(quality) != "quality":
        raise TrialError(f"expected quality, got {kind_of(quality)}")
    tables = {}
    for side in ("model", "segment"):
        name = f"{side}_quality"
        if name not in quality:
            raise TrialError("quality fusion needs both a model-side and a segment-side table")
        values = quality[name].values.astype(np.float64)
        if values.shape[1] != qtrans.shape[1]:
            raise TrialError(
                f"Qtrans has {qtrans.shape[1]} columns but the {side} side has "
                f"{values.shape[1]} quality measures"
            )
        with np.errstate(invalid="ignore"):
            mapped = values @ qtrans.T
        mapped[np.isnan(values).any(axis=1)] = np.nan
        tables[side] = quality_table(quality[side].values, mapped)
    return make_quality(tables["model"], tables["segment"])


def _both_have(
    has_m: np.ndarray, has_s: np.ndarray, cells: TrialQuality | None, chunks: Any
) -> da.Array:
    """Which cells' trials have quality on both sides (``has_m``/``has_s``: per model, per
    segment), in ``chunks``: a grid's rows and columns, or each packed cell's own trial."""
    if cells is not None:
        return da.from_array(has_m[cells.model_cells] & has_s[cells.segment_cells], chunks)
    rows = da.from_array(has_m, chunks=(chunks[0],))[:, None]
    return rows & da.from_array(has_s, chunks=(chunks[1],))[None, :]


def _has_quality(side: np.ndarray) -> np.ndarray:
    """Which rows of a quality side (from ``quality_sides``), or which cells of packed trials'
    (``(rows, columns, Q)``), have quality: the constant 1."""
    return side[..., -1] != 0


def _quality_block(
    *blocks: np.ndarray,
    n_systems: int,
    weights: np.ndarray,
    offset: float,
    W: np.ndarray,
    backoff_weights: np.ndarray,
    backoff_offset: float,
    ids: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """One chunk: the quality fusion where both sides have quality, else the back-off (the
    quality vectors: the chunk's rows' and columns', or each cell's own)."""
    k = n_systems
    fused = apply_block(*blocks, n_systems=k, weights=weights, offset=offset, W=W, ids=ids)
    backoff = apply_block(*blocks[: 2 * k], n_systems=k, weights=backoff_weights,
                          offset=backoff_offset, ids=ids)  # fmt: skip
    qm, qs = blocks[2 * k], blocks[2 * k + 1]
    if qm.ndim == 3:  # packed trials: each cell's own model and segment
        has = _has_quality(qm) & _has_quality(qs)
    else:
        has = _has_quality(qm)[:, None] & _has_quality(qs)[None, :]
    return np.where(has, fused, backoff)


def _swapped_hint(quality: Any, key: xr.Dataset, side: str) -> str:
    """Where ``side``'s quality table names the key's ids of the other side: a hint that the
    two tables were given the other way round."""
    ids = quality.quality if isinstance(quality, TrialQuality) else quality
    other = "segment" if side == "model" else "model"
    table = ids.get(f"{side}_quality")
    if table is None or not np.isin(table[side].values, key[other].values).any():
        return ""
    return (
        f"; its table's ids are the key's {other} ids: the {side} and {other} tables "
        "given the other way round?"
    )


class QualityFuser(LinearFuser):
    """Quality-measure fusion ``l = a + sum_k b_k s_k + q~_m' W q~_s`` with symmetric ``W``.

    ``q~_m`` and ``q~_s`` are a trial's model-side and segment-side quality vectors with a
    constant 1 appended, from a Quality object (:func:`bosaris_dask.trials.make_quality`, both
    sides with the same measures), after the optional linear map ``qtrans`` (the toolkit's
    ``Qtrans``: ``q -> qtrans @ q`` on both sides). ``W[-1, -1]`` (the product of the two
    constants) duplicates the offset and is fixed to 0.

    Training has two stages, as in the toolkit: a linear fusion on every scored key trial
    (:attr:`linear_`), then the quality fusion, started from it with ``W = 0``, on the trials
    whose model *and* segment have quality (an absent id or a NaN row means none); the others
    are left out of this stage (``counts_["n_no_quality"]`` of them). Measures far from unit
    scale (a duration in samples, or offset by 1000) are fitted standardized and ``W`` mapped
    back (:mod:`~bosaris_dask.objectives.quality_scaling`): the fit does not depend on their
    units (``result_.x`` and the fit notes' ``W[i, j]`` are then those of the standardized
    measures); where float64 cannot hold the map back (``1000 +- 1e-3``), the fit runs in
    the measures' own units. Applying gives trials
    without quality the *first stage's* score (the back-off), with a
    :class:`QualityBackoffWarning` giving their count. The reported ``iterations_`` and
    ``passes_`` include both stages (``linear_passes_`` the first, and the pass that persists
    the data when ``persist=True``).

    Parameters
    ----------
    train_prior, **kwargs
        Those of :class:`LinearFuser`; the penalty ``l2`` also applies to ``W``'s free
        entries (its upper triangle but the corner: each off-diagonal pair once).
    qtrans
        Optional ``(r, q)`` matrix mapping the ``q`` quality measures of each side to ``r``
        (then ``W`` is ``(r + 1)`` square); saved with the model.

    Attributes
    ----------
    quality_matrix_
        The fitted ``W``, ``(n_measures + 1)`` square and symmetric.
    linear_
        The :class:`LinearFuser` of the first stage (saved in the model's JSON as ``"linear"``).

    Examples
    --------
    >>> from bosaris_dask.trials import make_key, make_scores, make_quality, quality_table
    >>> qf = QualityFuser(0.5)
    >>> qf.linear_ = LinearFuser(0.5)
    >>> qf.linear_.weights_, qf.linear_.offset_ = np.array([1.0]), 0.0
    >>> qf.weights_, qf.offset_ = np.array([2.0]), 1.0
    >>> qf.quality_matrix_ = np.array([[1.0, 0.0], [0.0, 0.0]])
    >>> scores = make_scores(["m1", "m2"], ["s1"], [[1.0], [1.0]])
    >>> q = make_quality(quality_table(["m1"], [[3.0]]), quality_table(["s1"], [[2.0]]))
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     out = qf.transform(scores, q)
    >>> out.score.values.tolist(), str(caught[0].message)  # m2 has no quality: 0 + 1 * 1
    ([[9.0], [1.0]], '1 trial has no quality: they get the first-stage linear fusion score')
    """

    kind = "quality_fusion"
    description = "quality fusion"

    # fitted attributes, beside LinearFuser's: set by fit (or load), absent before
    quality_matrix_: np.ndarray
    measures_: list[str] | None  # the quality measures' names, as trained (None: unnamed)
    linear_: LinearFuser | None  # None: loaded without its first stage
    linear_passes_: int

    @renamed_keyword("prior", "train_prior")
    def __init__(self, train_prior: float = 0.5, *, qtrans: Any = None, **kwargs: Any) -> None:
        unknown = [name for name in kwargs if name not in LinearFuser._param_names()]
        if unknown:
            raise TypeError(f"QualityFuser() got an unexpected keyword argument {unknown[0]!r}")
        super().__init__(train_prior, **kwargs)
        try:
            self.qtrans = (None if qtrans is None
                           else np.atleast_2d(np.asarray(qtrans, np.float64)))  # fmt: skip
        except (TypeError, ValueError):
            raise TrialError(f"Qtrans must be a finite 2-D matrix, got {qtrans!r}"[:200]) from None
        if self.qtrans is not None and (
            self.qtrans.ndim != 2 or not np.isfinite(self.qtrans).all()
        ):
            raise TrialError(f"Qtrans must be a finite 2-D matrix, got shape {self.qtrans.shape}")

    def fit(  # type: ignore[override]
        self,
        scores: xr.Dataset | Sequence[xr.Dataset],
        key: xr.Dataset,
        quality: xr.Dataset | TrialQuality,
        *,
        allow_missing: bool = False,
        names: Sequence[str] | None = None,
        linear: LinearFuser | None = None,
    ) -> QualityFuser:
        """Train on ``K`` Scores, a Key and a Quality object (for packed trials, their
        :class:`~bosaris_dask.objectives.cells.TrialQuality`: the same model as on the ids'
        grid, the sums running in another order).

        ``linear``: an already fitted linear fuser to start from and to back off to (its passes
        are not counted again); by default one is trained first on the same data.
        ``allow_missing``, ``names``: as in :meth:`LinearFuser.fit`. The order ``fit(key, scores,
        quality)`` of earlier releases still works, with a ``FutureWarning``.
        """
        scores, key = scores_and_key(scores, key, "QualityFuser.fit")
        self._forget_training_inputs()
        cells = quality if isinstance(quality, TrialQuality) else None  # packed trials
        named = kind_of(quality.quality if cells else quality) == "quality"
        self.measures_ = measure_names(quality.quality if cells else quality) if named else None
        quality = transform_quality(quality, self.qtrans)
        data = fusion_data(_as_list(scores), key, quality, persist=self.persist, names=names)
        try:
            self._fit_quality(data, key, quality, cells, allow_missing, linear)
        except (MissingTrialsError, ScoreError) as exc:
            raise data.located(exc, key.model.values, key.segment.values) from None
        return self._trained_on(data.names)

    def _fit_quality(
        self,
        data: FusionData,
        key: xr.Dataset,
        quality: Any,
        cells: TrialQuality | None,
        allow_missing: bool,
        linear: LinearFuser | None,
    ) -> QualityFuser:
        """:meth:`fit` on the aligned data: the linear stage (unless given), then the quality
        matrix."""
        k = data.n_systems
        if linear is None:
            linear = LinearFuser(
                self.train_prior,
                l2=self.l2,
                method=self.method,
                gtol=self.gtol,
                max_iter=self.max_iter,
                split_every=self.split_every,
            )._fit_data(data, None, persisted=self.persist, allow_missing=allow_missing)
            self.linear_passes_, self.iterations_ = linear.passes_, linear.iterations_
        else:
            weights, _ = linear._check_fitted()
            if len(weights) != k:
                raise TrialError(f"the linear fuser has {len(weights)} weights, not {k}")
            self.linear_passes_ = int(self.persist)  # persisting the data is a pass
            self.iterations_ = 0
        self.linear_ = linear
        self.passes_ = self.linear_passes_
        # the linear stage's warnings, then the quality stage's
        self.fit_warnings_ = list(getattr(linear, "fit_warnings_", []))
        weights, offset = linear._check_fitted()
        qm, qs = (quality.sides() if cells else  # the ids' quality (after qtrans)
                  quality_sides(quality, key.model.values, key.segment.values))  # fmt: skip
        has_m, has_s = _has_quality(qm), _has_quality(qs)
        if not (has_m.any() and has_s.any()):  # no trial has quality: nothing to learn
            side = "model" if not has_m.any() else "segment"
            note = (f"no training trial has quality measures on both sides (the {side} side "
                    f"has none{_swapped_hint(quality, key, side)}): the quality fusion is the "
                    "linear fusion (W = 0)")  # fmt: skip
            self.fit_warnings_.append(note)
            warnings.warn(note, FitWarning, stacklevel=2)
            self.weights_, self.offset_ = np.array(weights, dtype=np.float64), float(offset)
            self.quality_matrix_ = np.zeros((data.n_measures + 1,) * 2)
            report = linear._solver_report()
            self.objective_, self.converged_ = report["objective"], report["converged"]
            self.result_ = getattr(linear, "result_", None)
            self.counts_ = dict(getattr(linear, "counts_", {}))
            return self
        has = _both_have(has_m, has_s, cells, data.classes.chunks)
        data = replace(data, classes=da.where(has, data.classes, 0).astype(np.int8))
        x0 = np.r_[weights, offset, np.zeros(n_quality_params(data.n_measures))]  # W = 0 = W'
        x = self._fit_standardized(data, qm, qs, allow_missing, x0)
        if x is None:  # measures near unit scale, or a map back that float64 cannot hold
            x = self._solve_standardizing(data, True, allow_missing, x0)
        self.weights_, self.offset_ = x[:k].copy(), float(x[k])
        self.quality_matrix_ = quality_matrix(x[k + 1 :], data.n_measures)
        if self.linear_passes_ > int(self.persist) and linear.counts_:  # fitted here: same data
            scored = linear.counts_["n_target"] + linear.counts_["n_nontarget"]
            used = self.counts_["n_target"] + self.counts_["n_nontarget"]
            self.counts_["n_no_quality"] = scored - used
            # the trials dropped for want of a score: all of them, not only those of ids with
            # quality (the quality stage's own count)
            self.counts_["n_missing"] = linear.counts_["n_missing"]
        return self

    def _fit_standardized(
        self,
        data: FusionData,
        qm: np.ndarray,
        qs: np.ndarray,
        allow_missing: bool,
        x0: np.ndarray,
    ) -> np.ndarray | None:
        """The quality stage fitted in standardized measures and mapped back, where the
        measures are far from unit scale (e.g. durations in samples); ``None`` where they are
        not, or where the mapped-back parameters do not give the fitted quality terms in
        float64 (the fit then runs in the measures' own units, its notes and counts anew)."""
        scaled = quality_standardization(qm, qs)
        if scaled is None:
            return None
        k, warned = data.n_systems, list(self.fit_warnings_)
        standardized = replace(
            data,
            quality_by=scaled,
            model_quality=standardize_vectors(data.model_quality, *scaled),
            segment_quality=standardize_vectors(data.segment_quality, *scaled),
        )
        with warnings.catch_warnings(record=True) as noted:  # said only if this fit is kept
            warnings.simplefilter("always")
            x_std = self._solve_standardizing(standardized, True, allow_missing, x0)
        x = unstandardize(x_std, k, *scaled)  # the same fused scores in the measures' units
        if mapped_back_error(x_std, x, k, qm, qs, *scaled) <= MAPPED_BACK_TOLERANCE:
            for w in noted:
                warnings.warn(w.message, w.category, stacklevel=4)
            return x
        self.fit_warnings_ = warned  # (the refit notes its own)
        return None

    def _fitted_quality_matrix(self) -> np.ndarray:
        """The fitted quality matrix ``W``; a :class:`NotFittedError` before ``fit``."""
        self._check_fitted()
        return self.quality_matrix_

    def fit_arrays(self, *args: Any, **kwargs: Any) -> QualityFuser:
        raise TrialError("quality fusion needs trial objects: use fit(scores, key, quality)")

    @in_llr_base
    def transform(  # type: ignore[override]
        self,
        scores: xr.Dataset | Sequence[xr.Dataset],
        quality: xr.Dataset | TrialQuality,
        *,
        ndx: xr.Dataset | None = None,
        names: Sequence[str] | None = None,
    ) -> xr.Dataset:
        """The fused LLRs as a lazy Scores object (see :meth:`LinearFuser.transform`, also for
        ``names``).

        Trials whose model or segment has no quality get the first-stage linear fusion's score.
        When some ids lack quality, one pass over the score masks counts those trials for the
        :class:`QualityBackoffWarning` (and none when every id has quality). Packed trials
        (:mod:`bosaris_dask.io.text.packed`) take their
        :class:`~bosaris_dask.objectives.cells.TrialQuality`: each cell its own trial's
        vectors, the same values as on the ids' grid, the same warnings and errors.
        """
        W = self._fitted_quality_matrix()
        weights, offset = self._check_fitted()
        self._check_order(names)
        cells = quality if isinstance(quality, TrialQuality) else None  # packed trials
        ids_quality = quality.quality if isinstance(quality, TrialQuality) else quality
        if kind_of(ids_quality) != "quality":
            raise TrialError(f"expected quality, got {kind_of(ids_quality)}")
        given = measure_names(ids_quality)
        trained = getattr(self, "measures_", None)  # None: unnamed, or a model made by hand
        if trained is not None and given is not None and given != trained:
            numbered = [str(i) for i in range(len(given))]
            if numbered not in (given, trained):  # a table that only numbers them
                raise TrialError(
                    f"the quality measures are {given}, the model was trained on "
                    f"{trained}: W pairs them by position, so give the same measures "
                    "in the same order"
                )
            if len(given) == len(trained) > 1:  # one side numbered: swapped columns go unseen
                unnamed = "the quality's" if given == numbered else "the model's"
                warnings.warn(
                    f"{unnamed} measures are only numbered, so their order cannot be checked "
                    f"against {trained if given == numbered else given}: W pairs them by "
                    "position (zarr quality stores keep the names)",
                    UncheckedMeasuresWarning, stacklevel=2,
                )  # fmt: skip
        systems = _as_list(scores)
        check_systems(systems, len(weights))
        like = wanted_trials(ndx, systems[0])
        aligned = align_inputs(systems, like)
        chunks = aligned[0].score.data.chunks
        mapped = transform_quality(quality, self.qtrans)
        if isinstance(mapped, TrialQuality):  # the trials' ids' vectors
            cells = mapped
            qm, qs = cells.sides()
        else:
            qm, qs = quality_sides(mapped, like.model.values, like.segment.values)
        if qm.shape[1] != W.shape[0]:
            raise TrialError(
                f"the model has {W.shape[0] - 1} quality measures, the quality {qm.shape[1] - 1}"
            )
        mask = _output_mask(aligned, ndx)
        has_m, has_s = _has_quality(qm), _has_quality(qs)
        if cells is not None:
            cells.check_layout(mask.shape)
        backoff = getattr(self, "linear_", None)
        if not (has_m.all() and has_s.all()):
            lacking = mask & ~_both_have(has_m, has_s, cells, chunks)
            n = int(compute(lacking.sum(), progress=None))
            if n and backoff is None:
                raise TrialError(
                    f"{have(n, 'trial')} no quality and this model has no first-stage linear "
                    "fusion to back off to (saved without one): fit it again"
                )
            if n:
                none = [side for side, has in (("model", has_m), ("segment", has_s))
                        if not has.any()]  # fmt: skip
                every = ""
                if none:
                    every = (f" (every trial: no {' or '.join(none)} id of these scores is in "
                             "the quality; is it the training set's, not this set's?)")  # fmt: skip
                warnings.warn(
                    f"{have(n, 'trial')} no quality: they get the first-stage linear fusion "
                    f"score{every}",
                    QualityBackoffWarning,
                    stacklevel=2,
                )
        b_weights, b_offset = (weights, offset) if backoff is None else backoff._check_fitted()
        args: list[Any] = []
        for a in (*(s.score.data for s in aligned), *(s.score_mask.data for s in aligned)):
            args += [a, "ij"]
        if cells is not None:  # (rows, columns, Q) each: the cells' own vectors
            qm_cells, qs_cells = cell_quality(cells, chunks, (qm, qs))
            args += [qm_cells, "ija", qs_cells, "ija"]
        else:
            args += [da.from_array(qm, chunks=(chunks[0], qm.shape[1])), "ia"]
            args += [da.from_array(qs, chunks=(chunks[1], qs.shape[1])), "jb"]
        block, ids = with_ids(_quality_block, like, chunks)
        llr = da.blockwise(
            block,
            "ij",
            *ids,
            *args,
            n_systems=len(aligned),
            weights=np.asarray(weights),
            offset=offset,
            W=W,
            backoff_weights=np.asarray(b_weights),
            backoff_offset=float(b_offset),
            concatenate=True,
            dtype=np.float64,
            meta=np.empty((0, 0)),
        )
        return make_scores(like.model.values, like.segment.values, llr, mask)

    def transform_arrays(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise TrialError("quality fusion needs trial objects: use transform(scores, quality)")

    def fit_transform(  # type: ignore[override]
        self,
        scores: xr.Dataset | Sequence[xr.Dataset],
        key: xr.Dataset,
        quality: xr.Dataset,
        **fit_kwargs: Any,
    ) -> xr.Dataset:
        """Train and apply on the same set, restricted to the key's trials."""
        scores, key = scores_and_key(scores, key, "QualityFuser.fit_transform")
        return self.fit(scores, key, quality, **fit_kwargs).transform(scores, quality, ndx=key)

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        W = self._fitted_quality_matrix()
        d["quality_matrix"] = np.asarray(W).tolist()
        d["n_measures"] = int(W.shape[0] - 1)
        d["linear_passes"] = int(getattr(self, "linear_passes_", 0))
        if getattr(self, "measures_", None) is not None:
            d["measures"] = list(self.measures_)
        if self.qtrans is not None:
            d["qtrans"] = self.qtrans.tolist()
        if getattr(self, "linear_", None) is not None:
            d["linear"] = self.linear_.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> QualityFuser:
        obj = super().from_dict(d)
        W = model_array(d["quality_matrix"], "quality_matrix", 2)
        if W.ndim != 2 or W.shape[0] != W.shape[1] or not np.array_equal(W, W.T):
            raise TrialError("quality_matrix must be a symmetric square matrix")
        if W[-1, -1] != 0:
            raise TrialError("quality_matrix[-1][-1] must be 0 (the offset takes its place)")
        obj.quality_matrix_ = quality_matrix(quality_params(W), W.shape[0] - 1)
        obj.linear_passes_ = int(d.get("linear_passes", 0))
        measures = d.get("measures")
        obj.measures_ = None if measures is None else [str(m) for m in measures]
        obj.linear_ = None
        if "n_no_quality" in d:
            obj.counts_["n_no_quality"] = int(d["n_no_quality"])
        if d.get("qtrans") is not None:
            obj.qtrans = model_array(d["qtrans"], "qtrans", 2)
            if obj.qtrans.shape[0] != W.shape[0] - 1:
                raise TrialError(
                    f"qtrans has {obj.qtrans.shape[0]} rows for {W.shape[0] - 1} quality measures"
                )
        if d.get("linear") is not None:
            if not isinstance(d["linear"], dict):
                raise TrialError(f"linear must be a linear fusion model (an object), got "
                                 f"{d['linear']!r}"[:200])  # fmt: skip
            obj.linear_ = LinearFuser.from_dict(d["linear"])
            if len(obj.linear_.weights_) != len(obj.weights_):  # type: ignore[arg-type]
                raise TrialError("the first-stage linear fusion has a different number of systems")
        return obj
