"""Linear calibration, and loading or applying any saved model by its kind.

:class:`LinearCalibrator` is a :class:`~bosaris_dask.fusion.LinearFuser` of one system;
:func:`load_model` and :func:`apply_model` dispatch over every model kind of the package
(linear and PAV calibration, linear and quality fusion).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import xarray as xr

from bosaris_dask._deprecation import renamed_keyword
from bosaris_dask.calibration.pav import PAVCalibrator
from bosaris_dask.errors import TrialError
from bosaris_dask.fusion import LinearFuser, QualityFuser
from bosaris_dask.fusion.base import scores_and_key
from bosaris_dask.fusion.json_model import _from_json, with_training_fields
from bosaris_dask.objectives import TrialQuality


class LinearCalibrator(LinearFuser):
    """Affine calibration ``llr = scale * s + offset`` by prior-weighted logistic regression.

    A :class:`bosaris_dask.fusion.LinearFuser` of one system: same parameters, same objective
    (normalized cross-entropy at ``train_prior``), same JSON fields (``"weights"`` holds the scale).

    Examples
    --------
    >>> cal = LinearCalibrator(train_prior=0.5).fit_arrays(np.array([2.0, 3.0, 0.5]),
    ...                                              np.array([0.0, -1.0, 1.0, -0.5]))
    >>> bool(cal.scale_ > 0), cal.converged_
    (True, True)
    """

    kind = "linear_calibration"
    description = "linear calibration"

    @property
    def scale_(self) -> float:
        """The fitted scale (the single weight)."""
        weights, _ = self._check_fitted()
        return float(weights[0])

    def fit(  # type: ignore[override]  # one Scores object
        self,
        scores: xr.Dataset,
        key: xr.Dataset,
        *,
        allow_missing: bool = False,
        names: Sequence[str] | None = None,
        x0: np.ndarray | None = None,
    ) -> Self:
        """Train on one Scores object and a Key (see :meth:`LinearFuser.fit`; ``names``: the
        system's name, as a list of one, for errors)."""
        scores, key = scores_and_key(scores, key, f"{type(self).__name__}.fit")
        if not isinstance(scores, xr.Dataset):
            raise TrialError("a calibrator takes one Scores object (fuse several systems with "
                             f"LinearFuser), got a {type(scores).__name__}")  # fmt: skip
        return super().fit([scores], key, allow_missing=allow_missing, names=names, x0=x0)

    def fit_arrays(
        self,
        tar: np.ndarray,
        non: np.ndarray,
        *,
        x0: np.ndarray | None = None,
        chunk: int = 1 << 20,
    ) -> Self:
        """Train on 1-D arrays of target and non-target scores."""
        tar, non = np.asarray(tar, dtype=np.float64), np.asarray(non, dtype=np.float64)
        if tar.ndim != 1 or non.ndim != 1:
            raise TrialError("a calibrator takes 1-D arrays of target and non-target scores")
        return super().fit_arrays(tar, non, x0=x0, chunk=chunk)

    def transform(
        self, scores: xr.Dataset | Sequence[xr.Dataset], *, ndx: xr.Dataset | None = None
    ) -> xr.Dataset:
        """Calibrated LLRs as a lazy Scores object (see :meth:`LinearFuser.transform`)."""
        if not isinstance(scores, xr.Dataset):
            raise TrialError("a calibrator takes one Scores object")
        return super().transform([scores], ndx=ndx)

    def transform_arrays(self, scores: np.ndarray) -> np.ndarray:
        """Calibrated LLRs of an array of scores of any shape (as
        :meth:`PAVCalibrator.transform_arrays`; a fuser's takes ``(n, K)``).

        Examples
        --------
        >>> cal = linear_calibrate(np.array([2.0, 3.0, 0.5]), np.array([0.0, -1.0, 1.0]))
        >>> cal.transform_arrays(np.zeros((2, 3))).shape
        (2, 3)
        """
        s = np.asarray(scores, dtype=np.float64)
        return super().transform_arrays(s.reshape(-1, 1)).reshape(s.shape)


@renamed_keyword("prior", "train_prior")
def linear_calibrate(
    tar: np.ndarray, non: np.ndarray, train_prior: float = 0.5, **kwargs: Any
) -> LinearCalibrator:
    """Fit a :class:`LinearCalibrator` on 1-D arrays of target and non-target scores.

    Examples
    --------
    >>> cal = linear_calibrate(np.array([2.0, 3.0, 0.5]), np.array([0.0, -1.0, 1.0]))
    >>> cal.transform_arrays(np.array([0.0])).shape
    (1,)
    """
    return LinearCalibrator(train_prior, **kwargs).fit_arrays(tar, non)


_KINDS = {cls.kind: cls for cls in (LinearCalibrator, LinearFuser, QualityFuser, PAVCalibrator)}


def load_model(
    model: str | os.PathLike[str] | dict[str, Any],
) -> LinearCalibrator | LinearFuser | QualityFuser | PAVCalibrator:
    """A fitted calibrator or fuser from a JSON file or dict, by its ``"kind"``.

    Kinds: ``"linear_calibration"``, ``"linear_fusion"``, ``"quality_fusion"``, ``"pav"``.

    Examples
    --------
    >>> cal = linear_calibrate(np.array([2.0, 3.0, 0.5]), np.array([0.0, -1.0, 1.0]))
    >>> type(load_model(cal.to_dict())).__name__
    'LinearCalibrator'
    """
    build = with_training_fields(_model_of)
    return build(model) if isinstance(model, dict) else _from_json(build, model)


def _model_of(d: dict[str, Any]) -> LinearCalibrator | LinearFuser | QualityFuser | PAVCalibrator:
    kind = d.get("kind")
    if kind not in _KINDS:
        raise TrialError(f"unknown model kind {kind!r}; expected one of {sorted(_KINDS)}")
    return _KINDS[kind].from_dict(d)


def apply_model(
    model: LinearCalibrator | LinearFuser | QualityFuser | PAVCalibrator,
    scores: xr.Dataset | Sequence[xr.Dataset],
    *,
    quality: xr.Dataset | TrialQuality | None = None,
    ndx: xr.Dataset | None = None,
    llr_base: str | None = None,
    names: Sequence[str] | None = None,
) -> xr.Dataset:
    """Apply any fitted calibrator or fuser to Scores, lazily (one entry point for the CLI).

    Parameters
    ----------
    model
        From :func:`load_model` or a ``fit``.
    scores
        One Scores object (calibrators) or the ``K`` systems' Scores in training order (fusers;
        a single Scores is accepted when ``K = 1``).
    quality
        The Quality object, required by a quality fuser (given to another model: an error);
        for packed trials (:mod:`bosaris_dask.io.text.packed`), their
        :class:`~bosaris_dask.objectives.cells.TrialQuality`.
    ndx
        Optional Ndx or Key: output on its ids, restricted to its trials.
    llr_base : {"e", "10", "2"}, optional
        The base of the LLRs in ``scores`` and in the output. ``None``: the one the model was
        trained on (``model.llr_base_``: ``"e"`` unless ``bosaris-dask calibrate/fuse
        --llr-base`` trained it), as ``bosaris-dask apply`` does.
    names
        A fusion's systems' names: the names it was fitted on (``systems_``) in another order
        are an :class:`~bosaris_dask.errors.OptionError` (see ``LinearFuser.transform``).

    Examples
    --------
    >>> from bosaris_dask.trials import make_scores
    >>> cal = linear_calibrate(np.array([2.0, 3.0, 0.5]), np.array([0.0, -1.0, 1.0]))
    >>> out = apply_model(load_model(cal.to_dict()), make_scores(["m"], ["s"], [[1.0]]))
    >>> bool(np.isclose(out.score.values[0, 0], cal.transform_arrays(np.array([1.0]))[0]))
    True
    """
    import copy

    if llr_base is not None and llr_base != model.llr_base_:  # the model read in that base
        model = copy.copy(model)
        model.llr_base_ = llr_base
    systems = [scores] if isinstance(scores, xr.Dataset) else list(scores)
    return _apply(model, systems, quality, ndx, names)  # each transform follows ``llr_base_``


def _apply(
    model: LinearCalibrator | LinearFuser | QualityFuser | PAVCalibrator,
    systems: list[xr.Dataset],
    quality: xr.Dataset | TrialQuality | None,
    ndx: xr.Dataset | None,
    names: Sequence[str] | None,
) -> xr.Dataset:
    if isinstance(model, QualityFuser):
        if quality is None:
            raise TrialError("a quality fusion model needs the quality measures")
        return model.transform(systems, quality, ndx=ndx, names=names)
    if quality is not None:
        raise TrialError(f"a {model.kind} model takes no quality measures")
    if isinstance(model, LinearCalibrator | PAVCalibrator):
        if len(systems) != 1:
            raise TrialError(f"a {model.kind} model takes one Scores object, got {len(systems)}")
        return model.transform(systems[0], ndx=ndx)
    return model.transform(systems, ndx=ndx, names=names)
