"""Quality-measure fusion: :class:`QualityFuser`, a linear fusion plus ``q~_m' W q~_s``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from bosaris_dask.errors import (
    NotFittedError,
    TrialError,
)
from bosaris_dask.fusion.base import _as_list, scores_and_key
from bosaris_dask.fusion.linear import LinearFuser
from bosaris_dask.objectives import (
    fusion_data,
    n_quality_params,
    quality_matrix,
    quality_params,
)
from bosaris_dask.trials import kind_of


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
        scores: xr.Dataset | Sequence[xr.Dataset],
        key: xr.Dataset,
        quality: xr.Dataset,
        *,
        allow_missing: bool = False,
        linear: LinearFuser | None = None,
    ) -> QualityFuser:
        """Train on ``K`` Scores, a Key and a Quality object.

        ``linear``: an already fitted linear fuser to start from (its passes are not counted
        again); by default one is trained first on the same data. ``allow_missing``: as in
        :meth:`LinearFuser.fit`. The order ``fit(key, scores, quality)`` of earlier releases
        still works, with a ``FutureWarning``.
        """
        scores, key = scores_and_key(scores, key, "QualityFuser.fit")
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
        weights, offset = linear._check_fitted()
        x0 = np.r_[weights, offset, np.zeros(n_quality_params(data.n_measures))]
        res = self._solve(self._objective(data, True, allow_missing), x0)
        self.weights_, self.offset_ = res.x[:k].copy(), float(res.x[k])
        self.quality_matrix_ = quality_matrix(res.x[k + 1 :], data.n_measures)
        return self

    def _fitted_quality_matrix(self) -> np.ndarray:
        """The fitted quality matrix ``W``; a :class:`NotFittedError` before ``fit``."""
        self._check_fitted()
        if self.quality_matrix_ is None:
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit first")
        return self.quality_matrix_

    def fit_arrays(self, *args: Any, **kwargs: Any) -> QualityFuser:
        raise TrialError("quality fusion needs trial objects: use fit(scores, key, quality)")

    def transform(  # type: ignore[override]
        self,
        scores: xr.Dataset | Sequence[xr.Dataset],
        quality: xr.Dataset,
        *,
        ndx: xr.Dataset | None = None,
    ) -> xr.Dataset:
        """The fused LLRs with the quality term, as a lazy Scores object (see
        :meth:`LinearFuser.transform`)."""
        W = self._fitted_quality_matrix()
        if kind_of(quality) != "quality":
            raise TrialError(f"expected quality, got {kind_of(quality)}")
        return self._transform(_as_list(scores), ndx, quality, W)

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
