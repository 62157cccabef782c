"""Linear fusion of K systems (and, with K = 1, linear calibration): :class:`LinearFuser`."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal, Self

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask._deprecation import renamed_keyword
from bosaris_dask.errors import (
    MissingTrialsError,
    OptionError,
    ScoreError,
    TrialError,
    are,
)
from bosaris_dask.fusion.base import (
    _as_list,
    _output_mask,
    apply_block,
    check_systems,
    scores_and_key,
    wanted_trials,
    with_ids,
)
from bosaris_dask.fusion.fit_checks import (
    CHECKED_MAX_PARAMS,
    SEPARATION_CHECK_RATIO,
    FitWarning,
    combination_tie_note,
    flattest_direction,
    parameter_names,
    separation_note,
    tied_separation_note,
    unconverged_note,
    undetermined_note,
)
from bosaris_dask.fusion.json_model import (
    MODEL_FORMAT,
    JsonModel,
    check_split_every,
    in_llr_base,
    model_array,
    number_or_nan,
    training_prior,
)
from bosaris_dask.objectives import (
    FusionData,
    FusionObjective,
    Rescale,
    align_inputs,
    check_prior,
    fusion_data,
    fusion_data_from_arrays,
    quality_sides,
)
from bosaris_dask.optimize import OptimizeResult, minimize
from bosaris_dask.trials import make_scores

_METHODS = ("auto", "exact", "cg")


#: Newton decrement (half of g' H^+ g: how much lower the objective's quadratic model goes) above
#: which a fit that passed its gradient test is short of its minimum. The objective is a
#: normalized cross-entropy (1 for LLRs of 0), so this is an absolute amount of it.
DECREMENT_LEFT = 1e-12


def _decrement_left(res: OptimizeResult, hess: np.ndarray | None) -> bool:
    """Whether a converged fit's quadratic model (``hess``: its Hessian) still goes
    :data:`DECREMENT_LEFT` lower: the relative gradient test passes short of the minimum where
    one parameter's gradient is tiny for its scale, e.g. the weight of scores standardized by a
    half-range that a few far outliers set (+-1e13 among scores near 1: "converged" at 0.4651
    for 0.4595). Invariant to how the parameters are scaled; the Hessian's null directions
    (undetermined fits, which the fit's notes name) count 0."""
    if not res.converged or hess is None or res.grad is None:
        return False
    g, hess = np.asarray(res.grad, dtype=np.float64), np.asarray(hess, dtype=np.float64)
    d = np.sqrt(np.abs(np.diag(hess)))
    d = np.where(d > 0, d, 1.0)  # (Jacobi-scaled, so that no parameter's scale hides it)
    gs = g / d
    step = np.linalg.lstsq(hess / np.outer(d, d), gs, rcond=1e-12)[0]
    return bool(0.5 * float(gs @ step) > DECREMENT_LEFT)


def _curvature_lost(obj: FusionObjective, hess: np.ndarray | None, k: int) -> bool:
    """Whether a system that is not constant has no curvature left in ``hess`` (its weight's
    diagonal 0: scores standardized to below float64's squares), which no data can mean."""
    if hess is None or obj.score_ranges is None:
        return False
    ranges = np.asarray(obj.score_ranges, dtype=np.float64)[:k]
    varies = np.maximum(ranges[:, 1], ranges[:, 3]) > np.minimum(ranges[:, 0], ranges[:, 2])
    return bool(np.any((np.diag(np.asarray(hess))[:k] == 0) & varies))


class LinearFuser(JsonModel):
    """Linear logistic-regression fusion ``l = a + sum_k b_k s_k`` of ``K`` systems.

    Parameters
    ----------
    train_prior
        Target prior ``p`` of the prior-weighted cross-entropy (the output is an LLR at any
        prior; ``p`` only sets what the training emphasizes): the CLI's ``--train-prior``,
        the JSON's ``"train_prior"``. (``prior=``, its name in earlier releases, works for
        one release, with a ``FutureWarning``.)
    l2
        L2 penalty ``l2/2 * ||b||^2`` (the offset is not penalized); 0: none (BOSARIS default).
    method : {"auto", "exact", "cg"}
        Trust-region solver (:func:`bosaris_dask.optimize.minimize`): full Hessian in one pass
        and an exact subproblem, or Steihaug CG on Hessian-vector products.
    gtol
        Stop when the gradient norm falls below ``gtol`` times its starting value.
    max_iter
        At most this many trust-region iterations.
    split_every
        ``split_every`` of the dask sum merging per-chunk results.
    persist
        Persist the aligned inputs before the passes (see
        :func:`bosaris_dask.objectives.fusion_data`): one read of the stores instead of one
        per pass, for the price of holding them in memory.

    Attributes
    ----------
    weights_, offset_
        The fitted ``b`` (``K``) and ``a``.
    objective_
        The minimized objective: normalized cross-entropy (``Cllr`` at ``p = 0.5``) plus the
        L2 penalty, if any.
    iterations_, passes_, converged_
        Solver report (each pass is one dask compute over the data).
    fit_warnings_
        What the fit says about its training data, each also a
        :class:`~bosaris_dask.fusion.fit_checks.FitWarning`: classes the model separates (the
        cross-entropy has no minimum; the LLRs are over-confident) or parameters the data do not
        determine (a constant or repeated system). Empty for a well-posed fit; ``"warnings"``
        in the JSON.
    counts_
        ``n_target``, ``n_nontarget`` and ``n_missing`` (key trials without a score in every
        system, dropped from training).
    result_
        The :class:`bosaris_dask.optimize.OptimizeResult` (not serialized; its ``x`` is in
        standardized scores where the fit ran on them, see :meth:`fit`).

    Examples
    --------
    Two systems whose scores are each ``2 s - 2`` in natural-log LLRs (unit-variance classes
    at 0 and 2) fuse with weights near 2 and an offset near -4:

    >>> rng = np.random.default_rng(0)
    >>> tar, non = rng.normal(2.0, 1.0, (200, 2)), rng.normal(0.0, 1.0, (800, 2))
    >>> fuser = LinearFuser(train_prior=0.5).fit_arrays(tar, non)
    >>> fuser.weights_.round(2).tolist(), round(fuser.offset_, 2), fuser.converged_
    ([1.99, 2.11], -3.9, True)
    >>> fuser.transform_arrays(np.array([[2.0, 2.0]])).round(1).tolist()
    [4.3]
    """

    kind = "linear_fusion"
    #: The kind in words, as messages name it.
    description = "linear fusion"
    _renamed_params = {"prior": "train_prior"}

    # fitted attributes: set by fit (or load), absent before (a NotFittedError)
    weights_: np.ndarray
    offset_: float
    objective_: float | None
    iterations_: int
    passes_: int
    converged_: bool
    counts_: dict[str, int]
    fit_warnings_: list[str]
    result_: OptimizeResult | None

    @renamed_keyword("prior", "train_prior")
    def __init__(
        self,
        train_prior: float = 0.5,
        *,
        l2: float = 0.0,
        method: Literal["auto", "exact", "cg"] = "auto",
        gtol: float = 1e-8,
        max_iter: int = 100,
        split_every: int | dict | None = None,
        persist: bool = False,
    ) -> None:
        self.train_prior = check_prior(train_prior)
        self.l2 = number_or_nan(l2)
        if not 0 <= self.l2 < math.inf:  # NaN fitted the all-zero model
            raise OptionError(f"l2 must be a finite number >= 0, got {l2!r}")
        if method not in _METHODS:
            raise OptionError(f"method must be one of {', '.join(_METHODS)}, got {method!r}")
        self.method = method
        self.gtol = number_or_nan(gtol)
        if not 0 < self.gtol < math.inf:
            raise OptionError(f"gtol must be a finite number > 0, got {gtol!r}")
        if isinstance(max_iter, bool) or not isinstance(max_iter, int | np.integer) or max_iter < 0:
            raise OptionError(f"max_iter must be an integer >= 0, got {max_iter!r}")
        self.max_iter = int(max_iter)
        self.split_every = check_split_every(split_every)
        self.persist = persist

    # -- fitting -----------------------------------------------------------------------------

    def _objective(
        self,
        data: FusionData,
        quality: bool,
        allow_missing: bool = True,
        rescale: bool = False,
        standardized_by: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> FusionObjective:
        return FusionObjective(
            data, self.train_prior, l2=self.l2, quality=quality, split_every=self.split_every,
            allow_missing=allow_missing, rescale=rescale, standardized_by=standardized_by,
        )  # fmt: skip

    def _solve(self, obj: FusionObjective, x0: np.ndarray, *, note: bool = True) -> OptimizeResult:
        res = minimize(
            obj, x0, method=self.method, gtol=self.gtol, max_iter=self.max_iter,
            fallback=(np.zeros_like(x0), 1.0),  # all LLRs 0: the normalized cross-entropy is 1
        )  # fmt: skip
        self.result_ = res
        self.iterations_ += res.iterations
        self.passes_ += res.passes
        self.converged_ = res.converged
        self.objective_ = res.fun
        self.counts_ = {k: v for k, v in (obj.counts or {}).items() if k != "n_nonfinite"}
        if note:
            self._note_fit(obj, res)
        return res

    def _note_fit(self, obj: FusionObjective, res: OptimizeResult) -> None:
        """Warn (:class:`~bosaris_dask.fusion.fit_checks.FitWarning`) and keep in
        ``fit_warnings_`` what the fit says about its data (separated classes, or parameters the
        data leave undetermined: from the last pass's value and Hessian, no pass; the CG
        solver computes no Hessian, so one pass more computes it up to
        :data:`~bosaris_dask.fusion.fit_checks.CHECKED_MAX_PARAMS` parameters), then about
        itself (stopped before its minimum)."""
        note = separation_note(obj.data_term(res.fun, res.x), obj.class_weights(), self.l2)
        if note is not None and self.kind == "linear_calibration" and res.x[0] < 0:
            note += (". The fitted scale is negative: in these data every target's raw "
                     "score is below every non-target's (are the scores' sign or the labels "
                     "reversed?)")  # fmt: skip
        if note is None:
            note = tied_separation_note(obj.score_ranges, self.l2, systems=obj.data.names,
                                        calibration=self.kind == "linear_calibration")  # fmt: skip
        if note is None:
            names = parameter_names(
                obj.data.n_systems, obj.data.n_measures if obj.quality else 0,
                calibration=self.kind == "linear_calibration", systems=obj.data.names,
            )  # fmt: skip
            hess = res.hess
            if hess is None and obj.n_params <= CHECKED_MAX_PARAMS:  # the CG solver
                hess = obj.evaluate(res.x, "fgH").H
                self.passes_ += 1
            note = self._combination_note(obj, hess)
            if note is None:
                note = undetermined_note(hess, names)
        for said in (note, unconverged_note(res)):
            if said is not None and said not in self.fit_warnings_:
                self.fit_warnings_.append(said)
                warnings.warn(said, FitWarning, stacklevel=2)

    def _combination_note(self, obj: FusionObjective, hess: np.ndarray | None) -> str | None:
        """Where the Hessian is nearly flat along some direction, one pass more: do the
        systems' combination along it separate the classes, ties aside (no minimum)? Each
        system alone was checked by :func:`tied_separation_note`, from no pass."""
        flat = flattest_direction(hess)
        if (flat is None or flat[0] >= SEPARATION_CHECK_RATIO or self.l2 > 0 or obj.quality
                or obj.data.n_systems < 2):  # fmt: skip
            return None
        names = obj.data.names or [f"system {k + 1}" for k in range(obj.data.n_systems)]
        scales = None if obj.standardized_by is None else obj.standardized_by[1]
        ranges, size = obj.direction_ranges(flat[1])
        self.passes_ += 1
        return combination_tie_note(ranges, size, flat[1], names, scales)

    def _fit_data(
        self,
        data: FusionData,
        x0: np.ndarray | None,
        persisted: bool = False,
        allow_missing: bool = True,
    ) -> Self:
        k = data.n_systems
        if k == 0:
            raise TrialError("no system to fuse: the scores have 0 columns")
        start = np.r_[np.full(k, 1.0 / k), 0.0] if x0 is None else np.asarray(x0, float)
        if start.shape != (k + 1,):
            raise ValueError(f"x0 must hold {k} weights and an offset, got shape {start.shape}")
        self.iterations_, self.passes_ = 0, int(persisted)
        self.fit_warnings_ = []
        self._forget_training_inputs()
        x = self._solve_standardizing(data, False, allow_missing, start)
        self.weights_, self.offset_ = x[:k].copy(), float(x[k])
        return self

    def _solve_standardizing(
        self, data: FusionData, quality: bool, allow_missing: bool, start: np.ndarray
    ) -> np.ndarray:
        """The fitted parameters from ``start`` (``K`` weights, the offset, then any quality
        parameters); where the first pass finds the scores far from 0 or from unit spread
        (:class:`~bosaris_dask.objectives.Rescale`), fitted on ``(s - c) / h`` and mapped
        back (the quality parameters unchanged)."""
        k = data.n_systems
        try:
            return self._solve(self._objective(data, quality, allow_missing, True), start).x
        except Rescale as far:  # e.g. 1000 +- 5: fit v (s - c) / h + b', then w = v / h, ...
            self.passes_ += 1  # the first pass, which found it
            c, h = far.centers, far.scales
            standardized = replace(data, scores=tuple(
                (s.astype(np.float64) - ck) / hk
                for s, ck, hk in zip(data.scores, c.tolist(), h.tolist(), strict=True)
            ))  # fmt: skip
            at = start.copy()
            at[:k], at[k] = start[:k] * h, start[k] + start[:k] @ c  # the same LLRs as start
            obj = self._objective(standardized, quality, allow_missing, standardized_by=(c, h))
            res = self._solve(obj, at, note=False)
            x = res.x.copy()
            x[:k] /= h
            x[k] -= x[:k] @ c  # ... and b = b' - w c
            if res.hess is None and res.converged and obj.n_params <= CHECKED_MAX_PARAMS:
                res = replace(res, hess=obj.evaluate(res.x, "fgH").H)  # (CG computes none)
                self.passes_ += 1
            hess = res.hess
            # separable classes have no minimum (any decrement is left): no second fit for them
            data_term = obj.data_term(res.fun, res.x)
            separated = separation_note(data_term, obj.class_weights(), self.l2) is not None
            if _curvature_lost(obj, hess, k) or (not separated and _decrement_left(res, hess)):
                # a half-range set by a few far outliers (+-1e13 among scores near 1) leaves the
                # standardized weight's gradient tiny for its scale, so the gradient test passed
                # short of the minimum ("converged" at 0.4651 for 0.4595), or its curvature below
                # float64 (+-1e300: "undetermined"): carried on in the scores themselves
                return self._solve(self._objective(data, quality, allow_missing, False), x).x
            self._note_fit(obj, res)
            return x

    def fit(
        self,
        scores: xr.Dataset | Sequence[xr.Dataset],
        key: xr.Dataset,
        *,
        allow_missing: bool = False,
        names: Sequence[str] | None = None,
        x0: np.ndarray | None = None,
    ) -> Self:
        """Train on a supervised set: ``K`` Scores and a Key (the scores aligned to its ids).

        Key trials without a score in some system are an error, as in ``evaluate``, unless
        ``allow_missing``: then they are dropped and counted in ``counts_["n_missing"]``. A
        non-finite score is a :class:`ScoreError`. ``names``: the systems' names, which errors
        and fit notes use (default ``system-1``, ..., as ``evaluate``'s) and which a fusion of
        several systems keeps (``systems_``, saved with it). The default starting point is
        ``b_k = 1/K``, ``a = 0`` (as BOSARIS). Where the first pass finds a system's scores far
        from 0 compared with their spread, or spread far from 1, the fit runs on ``(s -
        midpoint) / half-range`` (:func:`~bosaris_dask.objectives.objective.standardization`)
        and maps the weights back. The order ``fit(key, scores)`` of earlier releases still
        works, with a ``FutureWarning``.

        Raises
        ------
        MissingTrialsError
            Key trials without a score, unless ``allow_missing`` (found by the first pass).
        """
        scores, key = scores_and_key(scores, key, f"{type(self).__name__}.fit")
        data = fusion_data(_as_list(scores), key, persist=self.persist, names=names)
        try:  # persisting is a pass too
            self._fit_data(data, x0, persisted=self.persist, allow_missing=allow_missing)
        except (MissingTrialsError, ScoreError) as exc:
            raise data.located(exc, key.model.values, key.segment.values) from None
        return self._trained_on(data.names)

    def fit_arrays(
        self,
        tar: np.ndarray,
        non: np.ndarray,
        *,
        x0: np.ndarray | None = None,
        chunk: int = 1 << 20,
    ) -> Self:
        """Train on arrays of target ``(T, K)`` and non-target ``(N, K)`` scores.

        ``chunk``: trials per dask chunk (the passes run over chunks as for trial objects).
        """
        return self._fit_data(fusion_data_from_arrays(tar, non, chunk=chunk), x0)

    # -- applying ----------------------------------------------------------------------------

    def _check_fitted(self) -> tuple[np.ndarray, float]:
        """The fitted weights and offset; a :class:`NotFittedError` before ``fit``."""
        return self.weights_, self.offset_  # a NotFittedError before fit (JsonModel)

    def _transform(
        self,
        scores: Sequence[xr.Dataset],
        ndx: xr.Dataset | None,
        quality: xr.Dataset | None,
        W: np.ndarray | None,
    ) -> xr.Dataset:
        weights, offset = self._check_fitted()
        check_systems(scores, len(weights))
        like = wanted_trials(ndx, scores[0])
        aligned = align_inputs(scores, like)
        chunks = aligned[0].score.data.chunks
        args: list[Any] = []
        for a in (*(s.score.data for s in aligned), *(s.score_mask.data for s in aligned)):
            args += [a, "ij"]
        if W is not None:
            if quality is None:
                raise TrialError("the quality term needs a Quality object")
            qm, qs = quality_sides(quality, like.model.values, like.segment.values)
            args += [da.from_array(qm, chunks=(chunks[0], qm.shape[1])), "ia"]
            args += [da.from_array(qs, chunks=(chunks[1], qs.shape[1])), "jb"]
        block, ids = with_ids(apply_block, like, chunks)
        llr = da.blockwise(
            block,
            "ij",
            *ids,
            *args,
            n_systems=len(aligned),
            weights=np.asarray(weights),
            offset=offset,
            W=W,
            concatenate=True,
            dtype=np.float64,
            meta=np.empty((0, 0)),
        )
        return make_scores(like.model.values, like.segment.values, llr, _output_mask(aligned, ndx))

    @in_llr_base
    def transform(
        self,
        scores: xr.Dataset | Sequence[xr.Dataset],
        *,
        ndx: xr.Dataset | None = None,
        names: Sequence[str] | None = None,
    ) -> xr.Dataset:
        """The fused LLRs as a lazy Scores object (computed chunk by chunk when used).

        Parameters
        ----------
        scores
            The ``K`` systems' Scores, in training order.
        ndx
            Optional Ndx (or Key) of the trials wanted: the output takes its ids and its mask
            is ANDed with it. Default: the first input's ids.
        names
            The systems' names, checked against those the fit was given (``systems_``): the
            same names in another order are an :class:`~bosaris_dask.errors.OptionError` (each
            weight would multiply another system's scores); other names (another set's) pass.
        """
        self._check_order(names)
        return self._transform(_as_list(scores), ndx, None, None)

    @in_llr_base
    def transform_arrays(self, scores: np.ndarray) -> np.ndarray:
        """Fused LLRs of an ``(n, K)`` array of scores (or ``(n,)`` when ``K = 1``).

        Raises
        ------
        ScoreError
            If a score is not finite.
        """
        weights, offset = self._check_fitted()
        s = np.asarray(scores, dtype=np.float64)
        s = s[:, None] if s.ndim == 1 else s
        if s.ndim != 2 or s.shape[1] != len(weights):
            raise TrialError(f"expected scores of shape (n, {len(weights)}), got {s.shape}")
        if not np.isfinite(s).all():
            raise ScoreError(f"{are(int((~np.isfinite(s)).sum()), 'score')} not finite")
        return offset + s @ weights

    def fit_transform(
        self, scores: xr.Dataset | Sequence[xr.Dataset], key: xr.Dataset, **fit_kwargs: Any
    ) -> xr.Dataset:
        """Train and apply on the same set (the paper's "cheating" variant), restricted to the
        key's trials."""
        scores, key = scores_and_key(scores, key, f"{type(self).__name__}.fit_transform")
        return self.fit(scores, key, **fit_kwargs).transform(scores, ndx=key)

    # -- serialization -----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The fitted model as a JSON-friendly dict (the CLI's ``MODEL.json``)."""
        weights, offset = self._check_fitted()
        return {
            "format": MODEL_FORMAT,
            "kind": self.kind,
            **self.training_fields(),
            "train_prior": self.train_prior,
            "weights": [float(w) for w in weights],
            "offset": float(offset),
            **self._solver_report(),
            "l2": self.l2,
            "method": self.method,
            "gtol": self.gtol,
            "max_iter": self.max_iter,
            **{k: int(v) for k, v in getattr(self, "counts_", {}).items()},
        }

    def _solver_report(self) -> dict[str, Any]:
        """What the fit reported, for ``to_dict`` (a model whose parameters were set by hand
        has no report: no objective, no iterations)."""
        objective = getattr(self, "objective_", None)
        return {
            "objective": None if objective is None else float(objective),
            "iterations": int(getattr(self, "iterations_", 0)),
            "passes": int(getattr(self, "passes_", 0)),
            "converged": bool(getattr(self, "converged_", False)),
            "warnings": list(getattr(self, "fit_warnings_", [])),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Self:
        """Rebuild a fitted model from :meth:`to_dict` output."""
        if d.get("kind") != cls.kind:
            raise TrialError(f"a {cls.kind} model was expected, got kind {d.get('kind')!r}")
        obj = cls(
            train_prior=training_prior(d),
            l2=d.get("l2", 0.0),
            method=d.get("method", "auto"),
            gtol=d.get("gtol", 1e-8),
            max_iter=d.get("max_iter", 100),
        )
        obj.weights_ = model_array(d["weights"], "weights", 1)
        if cls.kind == "linear_calibration" and obj.weights_.size != 1:
            raise TrialError(f"a linear_calibration has one weight, got {obj.weights_.size} (a "
                             "fusion's model is of kind linear_fusion)")  # fmt: skip
        obj.offset_ = float(model_array(d["offset"], "offset", 0))
        obj.objective_ = d.get("objective")
        obj.iterations_ = int(d.get("iterations", 0))
        obj.passes_ = int(d.get("passes", 0))
        obj.converged_ = bool(d.get("converged", False))
        obj.fit_warnings_ = [str(w) for w in d.get("warnings", [])]
        obj.counts_ = {k: int(d[k]) for k in ("n_target", "n_nontarget", "n_missing") if k in d}
        obj.result_ = None  # not serialized
        return obj


@renamed_keyword("prior", "train_prior")
def linear_fuse(
    tar: np.ndarray, non: np.ndarray, train_prior: float = 0.5, **kwargs: Any
) -> LinearFuser:
    """Fit a :class:`LinearFuser` on arrays: ``tar`` ``(T, K)``, ``non`` ``(N, K)``.

    Examples
    --------
    >>> tar = np.array([[2.0, 1.0], [1.0, 0.5], [-0.5, 0.2]])
    >>> f = linear_fuse(tar, np.array([[0.0, 0.3], [1.5, -1], [-1.0, 0.4]]))
    >>> f.transform_arrays(np.zeros((1, 2))).shape, f.fit_warnings_
    ((1,), [])

    Classes that the model separates have no best fit (the cross-entropy falls without end as
    the weights grow); the fit says so:

    >>> import warnings
    >>> with warnings.catch_warnings(record=True):
    ...     warnings.simplefilter("always")
    ...     f = linear_fuse(np.array([[2.0, 1.0]]), np.array([[0.0, 0.3]]))
    >>> f.fit_warnings_[0][:34]
    'the training classes are separable'
    """
    return LinearFuser(train_prior, **kwargs).fit_arrays(tar, non)
