"""Non-parametric calibration as a fit/apply object: :class:`PAVCalibrator`.

Fitting bins the supervised scores with the engine's exact passes
(:func:`bosaris_dask.engine.summarize` with ``pav_bounds``: the bins are exact around the PAV
block boundaries; the pseudo-counts only remove block boundaries, so they are exact for the map
with pseudo-counts too) and builds the :func:`~bosaris_dask.calibration.pav_map`;
``transform`` maps scores chunk by chunk, lazily.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask.calibration.knots import DEFAULT_BOUND, interpolate_map, pav_map
from bosaris_dask.engine import summarize
from bosaris_dask.errors import OptionError, ScoreError, TrialError, are, have
from bosaris_dask.fusion.base import nonfinite_error, scores_and_key, wanted_trials, with_ids
from bosaris_dask.fusion.json_model import (
    MODEL_FORMAT,
    JsonModel,
    in_llr_base,
    model_array,
    number_or_nan,
)
from bosaris_dask.trials import align, kind_of, make_scores, trial_classes


def _bins_of_arrays(tar: np.ndarray, non: np.ndarray) -> tuple[np.ndarray, ...]:
    tar = np.asarray(tar, dtype=np.float64).ravel()
    non = np.asarray(non, dtype=np.float64).ravel()
    bad = int((~np.isfinite(tar)).sum() + (~np.isfinite(non)).sum())
    if bad:
        raise ScoreError(f"{have(bad, 'trial')} a non-finite score")
    values, inverse = np.unique(np.concatenate([tar, non]), return_inverse=True)
    n_tar = np.bincount(inverse[: len(tar)], minlength=len(values))
    n_non = np.bincount(inverse[len(tar) :], minlength=len(values))
    return values, values, n_tar, n_non


class PAVCalibrator(JsonModel):
    """Non-parametric calibration: the PAV map of a supervised set (see the module docstring).

    Parameters
    ----------
    small_val
        Half-height of the ramp inside each PAV block, which makes the map strictly
        increasing (0: flat blocks; the BOSARIS reference shows 0 and 0.001).
    pseudo_counts
        Add one target below and one non-target above every score, so every LLR is finite
        (``False``: the pure PAV LLRs, ``+-inf`` for pure end blocks and for scores between
        such a block and its neighbour; an evaluation refuses non-finite scores, and the JSON
        then holds ``Infinity``, which strict JSON parsers refuse: for analysis, as
        :func:`~bosaris_dask.calibration.optimal_llrs`).
    bound
        Position of the pseudo-observations (``-bound``, ``+bound``; the extreme scores where
        scores lie beyond).

    Attributes
    ----------
    score_bounds_, llr_bounds_
        The knots of the map (two per PAV block).
    n_blocks_
        The number of PAV blocks.
    counts_
        ``n_target``, ``n_nontarget`` (without pseudo-counts) and, when known, ``n_missing``.

    Examples
    --------
    >>> pav = PAVCalibrator().fit_arrays(np.array([1.0, 2.0, 3.0, 2.5]),
    ...                                  np.array([0.0, 1.5, -1.0, 0.5]))
    >>> pav.n_blocks_, pav.transform_arrays(np.array([-1.0, 1.2, 3.0])).round(3).tolist()
    (3, [-1.098, -0.0, 1.098])
    """

    kind = "pav"
    #: The kind in words, as messages name it.
    description = "PAV calibration"

    # fitted attributes: set by fit (or load), absent before (a NotFittedError)
    score_bounds_: np.ndarray
    llr_bounds_: np.ndarray
    counts_: dict[str, int]

    def __init__(
        self, *, small_val: float = 1e-3, pseudo_counts: bool = True, bound: float = DEFAULT_BOUND
    ) -> None:
        self.small_val = number_or_nan(small_val)
        if not 0 <= self.small_val < math.inf:
            raise OptionError(f"small_val must be a finite number >= 0, got {small_val!r}")
        if not isinstance(pseudo_counts, (bool, np.bool_)):  # "no" would be True
            raise OptionError(f"pseudo_counts must be True or False, got {pseudo_counts!r}")
        self.pseudo_counts = bool(pseudo_counts)
        self.bound = number_or_nan(bound)
        if not 0 < self.bound < math.inf:  # NaN made every LLR NaN
            raise OptionError(f"bound must be a finite number > 0, got {bound!r}")

    @property
    def n_blocks_(self) -> int:
        """Number of PAV blocks of the fitted map."""
        score_bounds, _ = self._check_fitted()
        return len(score_bounds) // 2

    @property
    def n_blocks(self) -> int:
        """Deprecated name of :attr:`n_blocks_` (a fitted attribute ends with ``_``)."""
        warnings.warn("PAVCalibrator.n_blocks is deprecated: use n_blocks_", FutureWarning,
                      stacklevel=2)  # fmt: skip
        return self.n_blocks_

    def fit_bins(
        self,
        score_lo: np.ndarray,
        score_hi: np.ndarray,
        n_tar: np.ndarray,
        n_non: np.ndarray,
        *,
        n_missing: int | None = None,
    ) -> PAVCalibrator:
        """Fit from binned counts in ascending score order (the core entry point).

        Parameters
        ----------
        score_lo, score_hi
            Lowest and highest score of each bin (bins ascending, disjoint).
        n_tar, n_non
            Target and non-target counts per bin.
        n_missing
            Trials dropped upstream for lack of a score (recorded in ``counts_``).
        """
        self._forget_training_inputs()
        self.score_bounds_, self.llr_bounds_ = pav_map(
            score_lo,
            score_hi,
            n_tar,
            n_non,
            small_val=self.small_val,
            pseudo_counts=self.pseudo_counts,
            bound=self.bound,
        )
        self.counts_ = {"n_target": int(np.sum(n_tar)), "n_nontarget": int(np.sum(n_non))}
        if n_missing is not None:
            self.counts_["n_missing"] = int(n_missing)
        return self

    def fit_arrays(self, tar: np.ndarray, non: np.ndarray) -> PAVCalibrator:
        """Fit from arrays of target and non-target scores (ties pooled by ``np.unique``)."""
        return self.fit_bins(*_bins_of_arrays(tar, non))

    def fit(
        self,
        scores: xr.Dataset,
        key: xr.Dataset,
        *,
        allow_missing: bool = False,
        names: Sequence[str] | None = None,
    ) -> PAVCalibrator:
        """Fit on a supervised set: a Scores object and a Key (the scores aligned to its ids).

        Key trials without a score are a :class:`MissingTrialsError` (naming a few), as in
        ``evaluate``, unless ``allow_missing`` drops them (``counts_["n_missing"]`` says how
        many, as the logistic fits do); non-finite scores are a :class:`ScoreError`.
        ``names``: the system's name, as a list of one, for errors (as ``evaluate``'s).
        The order ``fit(key, scores)`` of earlier releases still works, with a ``FutureWarning``.
        """
        scores, key = scores_and_key(scores, key, "PAVCalibrator.fit")
        if not isinstance(scores, xr.Dataset):
            raise TrialError("a calibrator takes one Scores object (fuse several systems with "
                             f"LinearFuser), got a {type(scores).__name__}")  # fmt: skip
        if kind_of(key) != "key" or kind_of(scores) != "scores":
            raise TrialError("PAVCalibrator.fit takes a Scores object and a Key")
        (s,) = summarize([scores], key, pav_bounds=True, allow_missing=allow_missing, names=names)
        return self.fit_bins(
            s.values().astype(np.float64),
            s.upper_values().astype(np.float64),
            s.n_tar,
            s.n_non,
            n_missing=s.n_missing if allow_missing else None,
        )

    def _check_fitted(self) -> tuple[np.ndarray, np.ndarray]:
        """The knots ``(score_bounds_, llr_bounds_)``; a :class:`NotFittedError` before ``fit``."""
        return self.score_bounds_, self.llr_bounds_  # a NotFittedError before fit (JsonModel)

    @in_llr_base
    def transform_arrays(self, scores: np.ndarray) -> np.ndarray:
        """Calibrated LLRs of an array of scores (any shape).

        Raises
        ------
        ScoreError
            If a score is not finite.
        """
        score_bounds, llr_bounds = self._check_fitted()
        s = np.asarray(scores, dtype=np.float64)
        if not np.isfinite(s).all():
            raise ScoreError(f"{are(int((~np.isfinite(s)).sum()), 'score')} not finite")
        return interpolate_map(s, score_bounds, llr_bounds)

    @in_llr_base
    def transform(self, scores: xr.Dataset, *, ndx: xr.Dataset | None = None) -> xr.Dataset:
        """Calibrated LLRs as a lazy Scores object (float64; 0.0 where there is no score).

        ``ndx`` (optional Ndx or Key): output on its ids, mask ANDed with its trials.
        """
        score_bounds, llr_bounds = self._check_fitted()
        if kind_of(scores) != "scores":
            raise TrialError(f"expected scores, got {kind_of(scores)}")
        like = wanted_trials(ndx, scores)
        s = align(scores, like)
        mask = s.score_mask.data
        if ndx is not None:
            mask = mask & (trial_classes(ndx, chunks=mask.chunks) != 0)
        block, ids = with_ids(_pav_block, like, s.score.data.chunks)
        llr = da.blockwise(
            block,
            "ij",
            *ids,
            s.score.data,
            "ij",
            s.score_mask.data,
            "ij",
            score_bounds=score_bounds,
            llr_bounds=llr_bounds,
            dtype=np.float64,
            meta=np.empty((0, 0)),
        )
        return make_scores(like.model.values, like.segment.values, llr, mask)

    def fit_transform(
        self,
        scores: xr.Dataset,
        key: xr.Dataset,
        *,
        allow_missing: bool = False,
        names: Sequence[str] | None = None,
    ) -> xr.Dataset:
        """Fit and apply on the same set (the "cheating" variant), on the key's trials."""
        scores, key = scores_and_key(scores, key, "PAVCalibrator.fit_transform")
        fitted = self.fit(scores, key, allow_missing=allow_missing, names=names)
        return fitted.transform(scores, ndx=key)

    def to_dict(self) -> dict[str, Any]:
        """The fitted map as a JSON-friendly dict (``+-Infinity`` only without pseudo-counts)."""
        score_bounds, llr_bounds = self._check_fitted()
        return {
            "format": MODEL_FORMAT,
            "kind": self.kind,
            **self.training_fields(),
            "small_val": self.small_val,
            "pseudo_counts": self.pseudo_counts,
            "bound": self.bound,
            "score_bounds": score_bounds.tolist(),
            "llr_bounds": llr_bounds.tolist(),
            **getattr(self, "counts_", {}),  # none for a map set by hand
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PAVCalibrator:
        """Rebuild a fitted map from :meth:`to_dict` output."""
        if d.get("kind") != cls.kind:
            raise TrialError(f"a pav model was expected, got kind {d.get('kind')!r}")
        obj = cls(
            small_val=d.get("small_val", 1e-3),
            pseudo_counts=d.get("pseudo_counts", True),
            bound=d.get("bound", DEFAULT_BOUND),
        )
        sb = model_array(d["score_bounds"], "score_bounds", 1)
        lb = model_array(d["llr_bounds"], "llr_bounds", 1, infinite_ok=True)  # pure end blocks
        if sb.ndim != 1 or sb.shape != lb.shape or len(sb) < 2 or len(sb) % 2:
            raise TrialError("score_bounds and llr_bounds must be equal-length even 1-D lists")
        if (sb[1:] < sb[:-1]).any() or (lb[1:] < lb[:-1]).any():
            raise TrialError("score_bounds and llr_bounds must be non-decreasing")
        obj.score_bounds_, obj.llr_bounds_ = sb, lb
        obj.counts_ = {k: int(d[k]) for k in ("n_target", "n_nontarget", "n_missing") if k in d}
        return obj


def _pav_block(
    score: np.ndarray,
    mask: np.ndarray,
    *,
    score_bounds: np.ndarray,
    llr_bounds: np.ndarray,
    ids: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    s = score.astype(np.float64, copy=False)
    bad = mask & ~np.isfinite(s)
    if bad.any():
        raise nonfinite_error(bad, ids, fused=False)
    return np.where(mask, interpolate_map(np.where(mask, s, 0.0), score_bounds, llr_bounds), 0.0)


def pav_calibrate(tar: np.ndarray, non: np.ndarray, **kwargs: Any) -> PAVCalibrator:
    """Fit a :class:`PAVCalibrator` on arrays of target and non-target scores.

    Examples
    --------
    >>> cal = pav_calibrate(np.array([2.0, 3.0]), np.array([0.0, 2.5]))
    >>> bool(np.all(np.diff(cal.transform_arrays(np.linspace(-1, 4, 9))) > 0))
    True
    """
    return PAVCalibrator(**kwargs).fit_arrays(tar, non)
