"""Linear and quality-measure fusion of K systems into one calibrated LLR, as fit/apply objects.

The fused LLR of a trial is ``l = a + sum_k b_k s_k`` (:class:`LinearFuser`), plus
``q~_m' W q~_s`` with quality vectors of the model and the segment (a constant 1 appended) and a
symmetric ``W`` (:class:`QualityFuser`). The parameters minimize the prior-weighted
cross-entropy of :mod:`bosaris_dask.objectives` by the trust-region Newton method of
:mod:`bosaris_dask.optimize`; every evaluation is one pass over the trials.

Workflows (the paper's two variants):

- dev/eval: ``fuser.fit(dev_key, dev_scores)``, then ``fuser.transform(eval_scores,
  ndx=eval_ndx)``;
- "cheating" (train and apply on the same set): ``fuser.fit_transform(key, scores)``.

``transform`` is lazy: it returns a new Scores object (float64 LLRs, ``score_mask`` the AND of the
inputs' masks after aligning them to the first input's ids, or to ``ndx``) whose chunks are
computed only when written or evaluated, so a fused billion-trial store is written out of core.

A fitted fuser serializes to a JSON-friendly dict (:meth:`LinearFuser.to_dict`, the CLI's
``MODEL.json``)::

    {"format": "bosaris_dask.model/1", "kind": "linear_fusion", "prior": 0.5,
     "weights": [...], "offset": a, "objective": C, "iterations": n, "passes": n, ...}

plus ``"quality_matrix"`` (the full symmetric ``W``) for quality fusion.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> tar, non = rng.normal(2, 1, (200, 2)), rng.normal(0, 1, (2000, 2))
>>> fuser = LinearFuser(prior=0.5).fit_arrays(tar, non)
>>> fuser.converged_, fuser.weights_.shape, bool(fuser.objective_ < 1)
(True, (2,), True)
>>> llr = fuser.transform_arrays(np.array([[2.0, 2.0], [0.0, 0.0]]))
>>> bool(llr[0] > 0 > llr[1])
True
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any, Literal

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask.errors import (
    ParseError,
    ScoreError,
    StoreError,
    StoreNotFoundError,
    TrialError,
)
from bosaris_dask.objectives import (
    FusionData,
    FusionObjective,
    align_inputs,
    check_prior,
    fusion_data,
    fusion_data_from_arrays,
    n_quality_params,
    quality_matrix,
    quality_params,
    quality_sides,
)
from bosaris_dask.optimize import OptimizeResult, minimize
from bosaris_dask.trials import kind_of, make_scores, trial_classes

__all__ = ["MODEL_FORMAT", "LinearFuser", "QualityFuser", "linear_fuse", "apply_block"]

#: The ``"format"`` field of every model dict.
MODEL_FORMAT = "bosaris_dask.model/1"


def apply_block(
    *blocks: np.ndarray,
    n_systems: int,
    weights: np.ndarray,
    offset: float,
    W: np.ndarray | None = None,
) -> np.ndarray:
    """The fused LLRs of one chunk (0.0 where a trial has no score in some system).

    ``blocks`` are ``K`` score blocks, ``K`` mask blocks and, with ``W``, the chunk's
    model-side and segment-side quality vectors.

    Raises
    ------
    ScoreError
        If a scored trial's fused value is not finite (a non-finite input score).

    Examples
    --------
    >>> apply_block(np.array([[1.0, np.nan]]), np.array([[True, False]]), n_systems=1,
    ...             weights=np.array([2.0]), offset=-1.0).tolist()
    [[1.0, 0.0]]
    """
    k = n_systems
    scores, masks = blocks[:k], blocks[k : 2 * k]
    mask = masks[0].copy()
    for m in masks[1:]:
        mask &= m
    with np.errstate(invalid="ignore", over="ignore"):
        llr = np.full(mask.shape, float(offset))
        for w, s in zip(weights, scores, strict=True):
            llr += float(w) * s.astype(np.float64, copy=False)
        if W is not None:
            qm, qs = blocks[2 * k], blocks[2 * k + 1]
            llr += qm @ W @ qs.T
    bad = int(np.count_nonzero(mask & ~np.isfinite(llr)))
    if bad:
        raise ScoreError(f"{bad} scored trials have a non-finite score")
    return np.where(mask, llr, 0.0)


def _output_mask(aligned: Sequence[xr.Dataset], ndx: xr.Dataset | None) -> da.Array:
    mask = aligned[0].score_mask.data
    for s in aligned[1:]:
        mask = mask & s.score_mask.data
    if ndx is not None:
        mask = mask & (trial_classes(ndx, chunks=mask.chunks) != 0)
    return mask


def _as_list(scores: xr.Dataset | Sequence[xr.Dataset]) -> list[xr.Dataset]:
    return [scores] if isinstance(scores, xr.Dataset) else list(scores)


class JsonModel:
    """``save_json`` / ``load_json`` for model classes with ``to_dict`` / ``from_dict``."""

    def save_json(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_dict` as JSON (atomically: a temporary file renamed into place)."""
        _save_json(self.to_dict(), path)  # type: ignore[attr-defined]

    @classmethod
    def load_json(cls, path: str | os.PathLike[str]) -> Any:
        """Read a model written by :meth:`save_json`."""
        return _from_json(cls.from_dict, path)  # type: ignore[attr-defined]


class LinearFuser(JsonModel):
    """Linear logistic-regression fusion ``l = a + sum_k b_k s_k`` of ``K`` systems.

    Parameters
    ----------
    prior
        Target prior ``p`` of the prior-weighted cross-entropy (the output is an LLR at any
        prior; ``p`` only sets what the training emphasizes).
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
    counts_
        ``n_target``, ``n_nontarget`` and ``n_missing`` (key trials without a score in every
        system, dropped from training).
    result_
        The :class:`bosaris_dask.optimize.OptimizeResult` (not serialized).
    """

    kind = "linear_fusion"

    def __init__(
        self,
        prior: float = 0.5,
        *,
        l2: float = 0.0,
        method: Literal["auto", "exact", "cg"] = "auto",
        gtol: float = 1e-8,
        max_iter: int = 100,
        split_every: int | dict | None = None,
        persist: bool = False,
    ) -> None:
        self.prior = check_prior(prior)
        self.l2 = float(l2)
        self.method = method
        self.gtol = float(gtol)
        self.max_iter = int(max_iter)
        self.split_every = split_every
        self.persist = persist
        self.weights_: np.ndarray | None = None
        self.offset_: float | None = None
        self.objective_: float | None = None
        self.iterations_ = 0
        self.passes_ = 0
        self.converged_ = False
        self.counts_: dict[str, int] = {}
        self.result_: OptimizeResult | None = None

    # -- fitting -----------------------------------------------------------------------------

    def _objective(self, data: FusionData, quality: bool) -> FusionObjective:
        return FusionObjective(
            data, self.prior, l2=self.l2, quality=quality, split_every=self.split_every
        )

    def _solve(self, obj: FusionObjective, x0: np.ndarray) -> OptimizeResult:
        res = minimize(obj, x0, method=self.method, gtol=self.gtol, max_iter=self.max_iter)
        self.result_ = res
        self.iterations_ += res.iterations
        self.passes_ += res.passes
        self.converged_ = res.converged
        self.objective_ = res.fun
        self.counts_ = {k: v for k, v in (obj.counts or {}).items() if k != "n_nonfinite"}
        return res

    def _fit_data(
        self, data: FusionData, x0: np.ndarray | None, persisted: bool = False
    ) -> LinearFuser:
        k = data.n_systems
        start = np.r_[np.full(k, 1.0 / k), 0.0] if x0 is None else np.asarray(x0, float)
        if start.shape != (k + 1,):
            raise ValueError(f"x0 must hold {k} weights and an offset, got shape {start.shape}")
        self.iterations_, self.passes_ = 0, int(persisted)
        res = self._solve(self._objective(data, quality=False), start)
        self.weights_, self.offset_ = res.x[:k].copy(), float(res.x[k])
        return self

    def fit(
        self,
        key: xr.Dataset,
        scores: xr.Dataset | Sequence[xr.Dataset],
        *,
        x0: np.ndarray | None = None,
    ) -> LinearFuser:
        """Train on a supervised set: a Key and ``K`` Scores (aligned to the key's ids).

        Trials of the key without a score in some system are dropped (counted in
        ``counts_["n_missing"]``); a non-finite score is a :class:`ScoreError`. The default
        starting point is ``b_k = 1/K``, ``a = 0`` (as BOSARIS).
        """
        data = fusion_data(key, _as_list(scores), persist=self.persist)
        return self._fit_data(data, x0, persisted=self.persist)  # persisting is a pass too

    def fit_arrays(
        self,
        tar: np.ndarray,
        non: np.ndarray,
        *,
        x0: np.ndarray | None = None,
        chunk: int = 1 << 20,
    ) -> LinearFuser:
        """Train on arrays of target ``(T, K)`` and non-target ``(N, K)`` scores.

        ``chunk``: trials per dask chunk (the passes run over chunks as for trial objects).
        """
        return self._fit_data(fusion_data_from_arrays(tar, non, chunk=chunk), x0)

    # -- applying ----------------------------------------------------------------------------

    def _check_fitted(self) -> None:
        if self.weights_ is None:
            raise TrialError(f"this {type(self).__name__} is not fitted")

    def _transform(
        self,
        scores: Sequence[xr.Dataset],
        ndx: xr.Dataset | None,
        quality: xr.Dataset | None,
        W: np.ndarray | None,
    ) -> xr.Dataset:
        self._check_fitted()
        if len(scores) != len(self.weights_):
            raise TrialError(f"expected {len(self.weights_)} Scores, got {len(scores)}")
        like = scores[0] if ndx is None else ndx
        aligned = align_inputs(scores, like)
        chunks = aligned[0].score.data.chunks
        args: list[Any] = []
        for a in (*(s.score.data for s in aligned), *(s.score_mask.data for s in aligned)):
            args += [a, "ij"]
        if W is not None:
            qm, qs = quality_sides(quality, like.model.values, like.segment.values)
            args += [da.from_array(qm, chunks=(chunks[0], qm.shape[1])), "ia"]
            args += [da.from_array(qs, chunks=(chunks[1], qs.shape[1])), "jb"]
        llr = da.blockwise(
            apply_block,
            "ij",
            *args,
            n_systems=len(aligned),
            weights=np.asarray(self.weights_),
            offset=self.offset_,
            W=W,
            concatenate=True,
            dtype=np.float64,
            meta=np.empty((0, 0)),
        )
        return make_scores(like.model.values, like.segment.values, llr, _output_mask(aligned, ndx))

    def transform(
        self, scores: xr.Dataset | Sequence[xr.Dataset], *, ndx: xr.Dataset | None = None
    ) -> xr.Dataset:
        """The fused LLRs as a lazy Scores object (computed chunk by chunk when used).

        Parameters
        ----------
        scores
            The ``K`` systems' Scores, in training order.
        ndx
            Optional Ndx (or Key) of the trials wanted: the output takes its ids and its mask
            is ANDed with it. Default: the first input's ids.
        """
        return self._transform(_as_list(scores), ndx, None, None)

    def transform_arrays(self, scores: np.ndarray) -> np.ndarray:
        """Fused LLRs of an ``(n, K)`` array of scores (or ``(n,)`` when ``K = 1``).

        Raises
        ------
        ScoreError
            If a score is not finite.
        """
        self._check_fitted()
        s = np.asarray(scores, dtype=np.float64)
        s = s[:, None] if s.ndim == 1 else s
        if s.ndim != 2 or s.shape[1] != len(self.weights_):
            raise TrialError(f"expected scores of shape (n, {len(self.weights_)}), got {s.shape}")
        if not np.isfinite(s).all():
            raise ScoreError(f"{int((~np.isfinite(s)).sum())} scores are not finite")
        return self.offset_ + s @ self.weights_

    def fit_transform(
        self, key: xr.Dataset, scores: xr.Dataset | Sequence[xr.Dataset], **fit_kwargs: Any
    ) -> xr.Dataset:
        """Train and apply on the same set (the paper's "cheating" variant), restricted to the
        key's trials."""
        return self.fit(key, scores, **fit_kwargs).transform(scores, ndx=key)

    # -- serialization -----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The fitted model as a JSON-friendly dict (the CLI's ``MODEL.json``)."""
        self._check_fitted()
        return {
            "format": MODEL_FORMAT,
            "kind": self.kind,
            "prior": self.prior,
            "weights": [float(w) for w in self.weights_],
            "offset": float(self.offset_),
            "objective": float(self.objective_),
            "iterations": int(self.iterations_),
            "passes": int(self.passes_),
            "converged": bool(self.converged_),
            "l2": self.l2,
            "method": self.method,
            "gtol": self.gtol,
            **{k: int(v) for k, v in self.counts_.items()},
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LinearFuser:
        """Rebuild a fitted model from :meth:`to_dict` output."""
        if d.get("kind") != cls.kind:
            raise TrialError(f"a {cls.kind} model was expected, got kind {d.get('kind')!r}")
        obj = cls(
            prior=d["prior"],
            l2=d.get("l2", 0.0),
            method=d.get("method", "auto"),
            gtol=d.get("gtol", 1e-8),
        )
        obj.weights_ = np.asarray(d["weights"], dtype=np.float64)
        obj.offset_ = float(d["offset"])
        obj.objective_ = d.get("objective")
        obj.iterations_ = int(d.get("iterations", 0))
        obj.passes_ = int(d.get("passes", 0))
        obj.converged_ = bool(d.get("converged", False))
        obj.counts_ = {k: int(d[k]) for k in ("n_target", "n_nontarget", "n_missing") if k in d}
        return obj


class QualityFuser(LinearFuser):
    """Quality-measure fusion ``l = a + sum_k b_k s_k + q~_m' W q~_s`` with symmetric ``W``.

    ``q~_m`` and ``q~_s`` are a trial's model-side and segment-side quality vectors with a
    constant 1 appended, from a Quality object (:func:`bosaris_dask.trials.make_quality`, both
    sides with the same measures). Trials whose model or segment has no quality (absent id or a
    NaN) get no quality term: they fall back to the linear fusion. ``W[-1, -1]`` (the product of
    the two constants) duplicates the offset and is fixed to 0.

    Training first fits the linear fusion, then starts from it with ``W = 0``; the reported
    ``iterations_`` and ``passes_`` include both stages (``linear_passes_`` the first, and the
    pass that persists the data when ``persist=True``).

    Parameters are those of :class:`LinearFuser`; the penalty ``l2`` also applies to ``W``.

    Attributes
    ----------
    quality_matrix_
        The fitted ``W``, ``(n_measures + 1)`` square and symmetric.
    linear_
        The :class:`LinearFuser` of the first stage.
    """

    kind = "quality_fusion"

    def __init__(self, prior: float = 0.5, **kwargs: Any) -> None:
        super().__init__(prior, **kwargs)
        self.quality_matrix_: np.ndarray | None = None
        self.linear_: LinearFuser | None = None
        self.linear_passes_ = 0

    def fit(  # type: ignore[override]
        self,
        key: xr.Dataset,
        scores: xr.Dataset | Sequence[xr.Dataset],
        quality: xr.Dataset,
        *,
        linear: LinearFuser | None = None,
    ) -> QualityFuser:
        """Train on a Key, ``K`` Scores and a Quality object.

        ``linear``: an already fitted linear fuser to start from (its passes are not counted
        again); by default one is trained first on the same data.
        """
        data = fusion_data(key, _as_list(scores), quality, persist=self.persist)
        k = data.n_systems
        if linear is None:
            linear = LinearFuser(
                self.prior,
                l2=self.l2,
                method=self.method,
                gtol=self.gtol,
                max_iter=self.max_iter,
                split_every=self.split_every,
            )._fit_data(data, None, persisted=self.persist)
            self.linear_passes_, self.iterations_ = linear.passes_, linear.iterations_
        else:
            linear._check_fitted()
            if len(linear.weights_) != k:
                raise TrialError(f"the linear fuser has {len(linear.weights_)} weights, not {k}")
            self.linear_passes_ = int(self.persist)  # persisting the data is a pass
            self.iterations_ = 0
        self.linear_ = linear
        self.passes_ = self.linear_passes_
        x0 = np.r_[linear.weights_, linear.offset_, np.zeros(n_quality_params(data.n_measures))]
        res = self._solve(self._objective(data, quality=True), x0)
        self.weights_, self.offset_ = res.x[:k].copy(), float(res.x[k])
        self.quality_matrix_ = quality_matrix(res.x[k + 1 :], data.n_measures)
        return self

    def fit_arrays(self, *args: Any, **kwargs: Any) -> QualityFuser:  # type: ignore[override]
        raise TrialError("quality fusion needs trial objects: use fit(key, scores, quality)")

    def transform(  # type: ignore[override]
        self,
        scores: xr.Dataset | Sequence[xr.Dataset],
        quality: xr.Dataset,
        *,
        ndx: xr.Dataset | None = None,
    ) -> xr.Dataset:
        """The fused LLRs with the quality term, as a lazy Scores object (see
        :meth:`LinearFuser.transform`)."""
        self._check_fitted()
        if kind_of(quality) != "quality":
            raise TrialError(f"expected quality, got {kind_of(quality)}")
        return self._transform(_as_list(scores), ndx, quality, self.quality_matrix_)

    def transform_arrays(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise TrialError("quality fusion needs trial objects: use transform(scores, quality)")

    def fit_transform(  # type: ignore[override]
        self, key: xr.Dataset, scores: xr.Dataset | Sequence[xr.Dataset], quality: xr.Dataset
    ) -> xr.Dataset:
        """Train and apply on the same set, restricted to the key's trials."""
        return self.fit(key, scores, quality).transform(scores, quality, ndx=key)

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["quality_matrix"] = np.asarray(self.quality_matrix_).tolist()
        d["n_measures"] = int(self.quality_matrix_.shape[0] - 1)
        d["linear_passes"] = int(self.linear_passes_)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> QualityFuser:
        obj = super().from_dict(d)
        W = np.asarray(d["quality_matrix"], dtype=np.float64)
        if W.ndim != 2 or W.shape[0] != W.shape[1] or not np.array_equal(W, W.T):
            raise TrialError("quality_matrix must be a symmetric square matrix")
        if W[-1, -1] != 0:
            raise TrialError("quality_matrix[-1][-1] must be 0 (the offset takes its place)")
        obj.quality_matrix_ = quality_matrix(quality_params(W), W.shape[0] - 1)
        obj.linear_passes_ = int(d.get("linear_passes", 0))
        return obj


def linear_fuse(tar: np.ndarray, non: np.ndarray, prior: float = 0.5, **kwargs: Any) -> LinearFuser:
    """Fit a :class:`LinearFuser` on arrays: ``tar`` ``(T, K)``, ``non`` ``(N, K)``.

    Examples
    --------
    >>> f = linear_fuse(np.array([[2.0, 1.0], [1.0, 0.5]]), np.array([[0.0, 0.3], [1.5, -1]]))
    >>> f.transform_arrays(np.zeros((1, 2))).shape
    (1,)
    """
    return LinearFuser(prior, **kwargs).fit_arrays(tar, non)


def _save_json(d: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Write a model atomically: the file is the previous one or the complete new one.

    The JSON text is built before anything is written (a value JSON cannot hold fails with
    nothing on disk) and goes through :func:`~bosaris_dask.io.atomic.atomic_path`: a hidden
    temporary sibling, removed if the write fails, which
    :func:`~bosaris_dask.io.atomic.remove_stale` deletes if the process was killed.
    """
    from bosaris_dask.io.atomic import atomic_path

    text = json.dumps(d, indent=2) + "\n"
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def _from_json(build: Callable[[dict[str, Any]], Any], path: str | os.PathLike[str]) -> Any:
    """``build(d)`` of the JSON object in a model file; what is wrong with it names the file.

    Raises
    ------
    StoreNotFoundError
        No such file.
    ParseError
        Not JSON, not an object, a missing field or a field ``build`` rejects.
    """
    d = _load_json(path)
    try:
        return build(d)
    except KeyError as exc:
        raise ParseError(f"the model has no {exc.args[0]!r} field", path=path) from None
    except (TrialError, TypeError, ValueError) as exc:
        raise ParseError(str(exc), path=path) from None


def _load_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A model file's JSON object; a missing file, bad JSON or a non-object is an error."""
    try:
        with open(path, encoding="utf-8") as fh:
            d = json.load(fh)
    except FileNotFoundError:
        raise StoreNotFoundError(f"{os.fspath(path)}: no such model file") from None
    except OSError as exc:
        raise StoreError(f"{os.fspath(path)}: cannot read ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        raise ParseError(f"not UTF-8 text ({exc.reason})", path=path) from None
    except json.JSONDecodeError as exc:
        raise ParseError(f"not a JSON model file: {exc.msg}", path=path, line=exc.lineno) from None
    if not isinstance(d, dict):
        raise ParseError(f"a model file holds a JSON object, not {type(d).__name__}", path=path)
    return d
