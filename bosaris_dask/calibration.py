"""Score calibration: affine (logistic regression) and non-parametric (PAV), as fit/apply objects.

- :class:`LinearCalibrator`: ``llr = scale * s + offset`` trained by the prior-weighted logistic
  regression of :mod:`bosaris_dask.fusion` (a fusion of one system).
- :class:`PAVCalibrator`: the monotone map given by the PAV solution on a supervised set.

**The PAV map.** PAV on the supervised scores sorted ascending (ties pooled) pools them into
blocks of strictly increasing target posterior. Each block ``k``, spanning the scores
``[lo_k, hi_k]`` with ``t_k`` targets and ``n_k`` non-targets, gets the LLR
``llr_k = log(t_k / n_k) - log(T / N)`` (posterior log-odds minus prior log-odds). To make the map
finite everywhere, two pseudo-observations are added first (``pseudo_counts=True``): one target
below every score and one non-target above every score, at ``-bound`` and ``+bound``
(``bound = 1e6``, or beyond the data); ``T`` and ``N`` then count them too. The lowest block
then holds a non-target and the highest a target, so every ``llr_k`` is finite, and the map's
outer knots are ``-bound`` and ``+bound``. The map is piecewise linear through the knots
``(lo_k, llr_k - d_k)`` and ``(hi_k, llr_k + d_k)`` (``score_bounds`` and ``llr_bounds``): linear
interpolation between blocks, a gentle ramp of half-height ``d_k = small_val`` inside each block,
which makes it strictly increasing, and linear extrapolation beyond the outer knots. Where two
neighbouring blocks' LLRs differ by ``2 * small_val`` or less, their ramps shrink to a third of
the difference, so that they never meet. With ``small_val=0`` each block is flat (exactly the
PAV LLRs on the training scores). This is the construction of the BOSARIS reference
(``reference/gauss1`` ``pav_calibration``, reproduced to 1e-13 for ``small_val`` 0 and 0.001).

On its own training set, with ``pseudo_counts=False`` and ``small_val=0`` (the pure PAV LLRs,
infinite in pure end blocks), actual DCF equals minimum DCF at every operating point (the
paper's property). The pseudo-counts (and the ramps) trade that exactness, by a hair, for a
finite, strictly increasing map that ranks unseen scores like the raw scores.

Fitting at scale uses :func:`bosaris_dask.engine.score_bins` when the engine provides it (exact
per-bin counts around the PAV block boundaries, coarse elsewhere); until then, a private
in-memory fallback computes the distinct scores with ``np.unique`` (small data only).

Examples
--------
>>> import numpy as np
>>> cal = PAVCalibrator(small_val=0.0).fit_arrays(np.array([1.0, 2.0, 3.0]),
...                                                np.array([0.0, 1.5, 0.5]))
>>> cal.score_bounds_.tolist()
[-1000000.0, 0.5, 1.0, 1.5, 2.0, 1000000.0]
>>> np.round(cal.transform_arrays(np.array([-5.0, 1.25, 10.0])), 6).tolist()
[-0.693147, 0.0, 0.693147]
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import dask
import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask.errors import ScoreError, TrialError
from bosaris_dask.fusion import LinearFuser, QualityFuser
from bosaris_dask.fusion.base import MODEL_FORMAT, JsonModel, _from_json
from bosaris_dask.roc import pav_blocks
from bosaris_dask.trials import align_with, kind_of, make_scores, trial_classes

__all__ = [
    "LinearCalibrator",
    "PAVCalibrator",
    "linear_calibrate",
    "pav_calibrate",
    "pav_map",
    "interpolate_map",
    "load_model",
    "apply_model",
]

#: Where the pseudo-observations sit (unless scores lie beyond).
DEFAULT_BOUND = 1e6


class LinearCalibrator(LinearFuser):
    """Affine calibration ``llr = scale * s + offset`` by prior-weighted logistic regression.

    A :class:`bosaris_dask.fusion.LinearFuser` of one system: same parameters, same objective
    (normalized cross-entropy at ``prior``), same JSON fields (``"weights"`` holds the scale).

    Examples
    --------
    >>> cal = LinearCalibrator(prior=0.5).fit_arrays(np.array([2.0, 3.0, 0.5]),
    ...                                              np.array([0.0, -1.0, 1.0, -0.5]))
    >>> bool(cal.scale_ > 0), cal.converged_
    (True, True)
    """

    kind = "linear_calibration"

    @property
    def scale_(self) -> float:
        """The fitted scale (the single weight)."""
        self._check_fitted()
        return float(self.weights_[0])

    def fit(self, key: xr.Dataset, scores: xr.Dataset, *, x0=None) -> LinearCalibrator:
        """Train on a Key and one Scores object (see :meth:`LinearFuser.fit`)."""
        if not isinstance(scores, xr.Dataset):
            raise TrialError("a calibrator takes one Scores object")
        return super().fit(key, [scores], x0=x0)

    def fit_arrays(
        self, tar: np.ndarray, non: np.ndarray, *, x0=None, chunk: int = 1 << 20
    ) -> LinearCalibrator:
        """Train on 1-D arrays of target and non-target scores."""
        tar, non = np.asarray(tar, dtype=np.float64), np.asarray(non, dtype=np.float64)
        if tar.ndim != 1 or non.ndim != 1:
            raise TrialError("a calibrator takes 1-D arrays of target and non-target scores")
        return super().fit_arrays(tar, non, x0=x0, chunk=chunk)

    def transform(self, scores: xr.Dataset, *, ndx: xr.Dataset | None = None) -> xr.Dataset:
        """Calibrated LLRs as a lazy Scores object (see :meth:`LinearFuser.transform`)."""
        return super().transform([scores], ndx=ndx)


# --------------------------------------------------------------------------------------------
# PAV
# --------------------------------------------------------------------------------------------


def _check_bins(lo, hi, n_tar, n_non) -> tuple[np.ndarray, ...]:
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    nt = np.asarray(n_tar)
    nn = np.asarray(n_non)
    if not (lo.ndim == 1 and lo.shape == hi.shape == nt.shape == nn.shape):
        raise ScoreError("score_lo, score_hi, n_tar and n_non must be 1-D and of equal length")
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        raise ScoreError("bin bounds must be finite")
    if (nt < 0).any() or (nn < 0).any() or (nt != np.round(nt)).any() or (nn != np.round(nn)).any():
        raise ScoreError("bin counts must be non-negative integers")
    keep = (nt > 0) | (nn > 0)
    lo, hi, nt, nn = lo[keep], hi[keep], nt[keep].astype(np.int64), nn[keep].astype(np.int64)
    if (lo > hi).any() or (hi[:-1] >= lo[1:]).any():
        raise ScoreError("bins must be ascending and disjoint: lo <= hi < next lo")
    return lo, hi, nt, nn


def pav_map(
    score_lo: np.ndarray,
    score_hi: np.ndarray,
    n_tar: np.ndarray,
    n_non: np.ndarray,
    *,
    small_val: float = 1e-3,
    pseudo_counts: bool = True,
    bound: float = DEFAULT_BOUND,
) -> tuple[np.ndarray, np.ndarray]:
    """The knots ``(score_bounds, llr_bounds)`` of the PAV calibration map of binned counts.

    Parameters
    ----------
    score_lo, score_hi
        Lowest and highest score of each bin; bins ascending and disjoint (e.g. the distinct
        scores, ``lo == hi``). Empty bins are ignored.
    n_tar, n_non
        Targets and non-targets per bin.
    small_val
        Half-height of the ramp inside each block (0: flat blocks).
    pseudo_counts
        Add one target below and one non-target above all scores (finite LLRs).
    bound
        Where the pseudo-observations sit: ``-bound`` and ``+bound``, or the extreme scores if
        those lie beyond.

    Returns
    -------
    score_bounds, llr_bounds
        ``2B`` knots (``lo_k``, ``hi_k`` per block) and their LLRs, both non-decreasing.

    Examples
    --------
    >>> sb, lb = pav_map([0.0, 1.0, 2.0], [0.0, 1.0, 2.0], [0, 1, 2], [2, 1, 0], small_val=0)
    >>> sb.tolist()
    [-1000000.0, 0.0, 1.0, 1.0, 2.0, 1000000.0]
    >>> np.round(lb, 6).tolist()
    [-0.693147, -0.693147, 0.0, 0.0, 0.693147, 0.693147]
    """
    lo, hi, nt, nn = _check_bins(score_lo, score_hi, n_tar, n_non)
    if nt.sum() == 0 or nn.sum() == 0:
        raise ScoreError(
            f"PAV calibration needs targets and non-targets; got {int(nt.sum())} and "
            f"{int(nn.sum())}"
        )
    if small_val < 0:
        raise ValueError(f"small_val must be non-negative, got {small_val!r}")
    if pseudo_counts:
        low, high = min(-bound, float(lo[0])), max(bound, float(hi[-1]))
        if low == lo[0]:  # a data bin sits at the pseudo-target's place: the target joins it
            nt = nt.copy()
            nt[0] += 1
        else:
            lo, hi, nt, nn = (np.r_[low, lo], np.r_[low, hi], np.r_[1, nt], np.r_[0, nn])
        if high == hi[-1]:
            nn = nn.copy()
            nn[-1] += 1
        else:
            lo, hi, nt, nn = (np.r_[lo, high], np.r_[hi, high], np.r_[nt, 0], np.r_[nn, 1])
    starts, bt, bn = pav_blocks(nt, nn)
    bt, bn = bt.astype(np.float64), bn.astype(np.float64)
    with np.errstate(divide="ignore"):
        llr = np.log(bt) - np.log(bn) - (np.log(nt.sum()) - np.log(nn.sum()))
    block_lo, block_hi = lo[starts[:-1]], hi[starts[1:] - 1]
    half = np.full(len(llr), float(small_val))
    if len(llr) > 1 and small_val > 0:
        gaps = np.diff(llr)  # > 0; ramps shrink to a third of a gap only where they would meet
        limit = np.where(gaps > 2.0 * small_val, np.inf, gaps / 3.0)
        half = np.minimum(half, np.r_[np.inf, limit])
        half = np.minimum(half, np.r_[limit, np.inf])
    score_bounds = np.column_stack([block_lo, block_hi]).ravel()
    with np.errstate(invalid="ignore"):
        llr_bounds = np.column_stack([llr - half, llr + half]).ravel()
    return score_bounds, np.where(np.isnan(llr_bounds), np.repeat(llr, 2), llr_bounds)


def interpolate_map(s: np.ndarray, score_bounds: np.ndarray, llr_bounds: np.ndarray) -> np.ndarray:
    """Evaluate the piecewise-linear map through the knots, extrapolating the outer slopes.

    Infinite knot values (``pseudo_counts=False``) extend as limits: below a ``-inf`` block the
    map is ``-inf``, above a ``+inf`` block ``+inf``.

    Examples
    --------
    >>> interpolate_map(np.array([-1.0, 0.5, 3.0]), np.array([0.0, 1.0, 2.0]),
    ...                 np.array([0.0, 1.0, 3.0])).tolist()
    [-1.0, 0.5, 5.0]
    """
    s = np.asarray(s, dtype=np.float64)
    x, y = np.asarray(score_bounds, np.float64), np.asarray(llr_bounds, np.float64)
    m = len(x)
    if m == 1:
        return np.full(s.shape, y[0])
    j = np.clip(np.searchsorted(x, s, side="right") - 1, 0, m - 2)
    x0, x1, y0, y1 = x[j], x[j + 1], y[j], y[j + 1]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        slope = (y1 - y0) / (x1 - x0)
        slope = np.where(np.isfinite(slope), slope, 0.0)
        # anchor at the nearer end: exact at every knot, the last one included
        out = np.where(s >= x1, y1 + slope * (s - x1), y0 + slope * (s - x0))
    inner = (s >= x0) & (s < x1)
    # rounding may carry y0 + slope * (s - x0) one ulp past y1: keep the map monotone
    out = np.where(inner, np.minimum(np.maximum(out, y0), y1), out)
    out = np.where(inner & np.isneginf(y0), -np.inf, out)
    out = np.where(inner & np.isposinf(y1) & (s > x0), np.inf, out)
    out = np.where(np.isinf(y0) & (y0 == y1), y0, out)
    out = np.where((s < x[0]) & np.isneginf(y[0]), -np.inf, out)
    out = np.where((s >= x[-1]) & np.isposinf(y[-1]), np.inf, out)
    out = np.where(~inner & (s >= x[-1]) & (x[-1] == x[-2]), y[-1], out)
    return out


def _bins_of_arrays(tar: np.ndarray, non: np.ndarray) -> tuple[np.ndarray, ...]:
    tar = np.asarray(tar, dtype=np.float64).ravel()
    non = np.asarray(non, dtype=np.float64).ravel()
    bad = int((~np.isfinite(tar)).sum() + (~np.isfinite(non)).sum())
    if bad:
        raise ScoreError(f"{bad} trials have a non-finite score")
    values, inverse = np.unique(np.concatenate([tar, non]), return_inverse=True)
    n_tar = np.bincount(inverse[: len(tar)], minlength=len(values))
    n_non = np.bincount(inverse[len(tar) :], minlength=len(values))
    return values, values, n_tar, n_non


def _score_bins_in_memory(
    scores: xr.Dataset, key: xr.Dataset
) -> tuple[tuple[np.ndarray, ...], int]:
    """Bins (distinct scores) of a supervised set, computed in memory in one pass.

    A private fallback until ``bosaris_dask.engine.score_bins`` exists: it pulls every target
    and non-target score to the client.
    """
    s = align_with(scores, key)
    mask = s.score_mask.data
    cls = trial_classes(key, chunks=mask.chunks)
    values = s.score.data
    tar, non, missing = dask.compute(
        values[(cls == 1) & mask], values[(cls == -1) & mask], ((cls != 0) & ~mask).sum()
    )
    return _bins_of_arrays(tar, non), int(missing)


def _score_bins(scores: xr.Dataset, key: xr.Dataset) -> tuple[tuple[np.ndarray, ...], int | None]:
    """Bins for PAV: from the engine's exact passes, else from the in-memory fallback.

    The engine's bins are exact around the PAV block boundaries of the data; the pseudo-counts
    only remove block boundaries (a boundary of the augmented hull is one of the data's hull
    vertices), so they are exact for the map with pseudo-counts too. Key trials without a score
    are dropped (the engine does not report how many: ``n_missing`` is then ``None``).
    """
    try:
        from bosaris_dask.engine import score_bins  # the exact, scalable engine passes
    except ImportError:
        return _score_bins_in_memory(scores, key)
    bins = score_bins(scores, key, allow_missing=True)
    return tuple(np.asarray(a) for a in bins), None


class PAVCalibrator(JsonModel):
    """Non-parametric calibration: the PAV map of a supervised set (see the module docstring).

    Parameters
    ----------
    small_val
        Half-height of the ramp inside each PAV block, which makes the map strictly
        increasing (0: flat blocks; the BOSARIS reference shows 0 and 0.001).
    pseudo_counts
        Add one target below and one non-target above every score, so every LLR is finite
        (``False``: the pure PAV LLRs, ``+-inf`` for pure end blocks).
    bound
        Position of the pseudo-observations (``-bound``, ``+bound``).

    Attributes
    ----------
    score_bounds_, llr_bounds_
        The knots of the map (two per PAV block).
    counts_
        ``n_target``, ``n_nontarget`` (without pseudo-counts) and, when known, ``n_missing``.
    """

    kind = "pav"

    def __init__(
        self, *, small_val: float = 1e-3, pseudo_counts: bool = True, bound: float = DEFAULT_BOUND
    ) -> None:
        self.small_val = float(small_val)
        self.pseudo_counts = bool(pseudo_counts)
        self.bound = float(bound)
        self.score_bounds_: np.ndarray | None = None
        self.llr_bounds_: np.ndarray | None = None
        self.counts_: dict[str, int] = {}

    @property
    def n_blocks(self) -> int:
        """Number of PAV blocks of the map."""
        self._check_fitted()
        return len(self.score_bounds_) // 2

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

    def fit(self, key: xr.Dataset, scores: xr.Dataset) -> PAVCalibrator:
        """Fit on a supervised set: a Key and a Scores object (aligned to the key's ids).

        Key trials without a score are dropped (counted); non-finite scores are a
        :class:`ScoreError`.
        """
        if kind_of(key) != "key" or kind_of(scores) != "scores":
            raise TrialError("PAVCalibrator.fit takes a Key and a Scores object")
        bins, missing = _score_bins(scores, key)
        return self.fit_bins(*bins, n_missing=missing)

    def _check_fitted(self) -> None:
        if self.score_bounds_ is None:
            raise TrialError("this PAVCalibrator is not fitted")

    def transform_arrays(self, scores: np.ndarray) -> np.ndarray:
        """Calibrated LLRs of an array of scores (any shape).

        Raises
        ------
        ScoreError
            If a score is not finite.
        """
        self._check_fitted()
        s = np.asarray(scores, dtype=np.float64)
        if not np.isfinite(s).all():
            raise ScoreError(f"{int((~np.isfinite(s)).sum())} scores are not finite")
        return interpolate_map(s, self.score_bounds_, self.llr_bounds_)

    def transform(self, scores: xr.Dataset, *, ndx: xr.Dataset | None = None) -> xr.Dataset:
        """Calibrated LLRs as a lazy Scores object (float64; 0.0 where there is no score).

        ``ndx`` (optional Ndx or Key): output on its ids, mask ANDed with its trials.
        """
        self._check_fitted()
        if kind_of(scores) != "scores":
            raise TrialError(f"expected scores, got {kind_of(scores)}")
        like = scores if ndx is None else ndx
        s = align_with(scores, like)
        mask = s.score_mask.data
        if ndx is not None:
            mask = mask & (trial_classes(ndx, chunks=mask.chunks) != 0)
        llr = da.map_blocks(
            _pav_block,
            s.score.data,
            s.score_mask.data,
            score_bounds=self.score_bounds_,
            llr_bounds=self.llr_bounds_,
            dtype=np.float64,
            meta=np.empty((0, 0)),
        )
        return make_scores(like.model.values, like.segment.values, llr, mask)

    def fit_transform(self, key: xr.Dataset, scores: xr.Dataset) -> xr.Dataset:
        """Fit and apply on the same set (the "cheating" variant), on the key's trials."""
        return self.fit(key, scores).transform(scores, ndx=key)

    def to_dict(self) -> dict[str, Any]:
        """The fitted map as a JSON-friendly dict (``+-Infinity`` only without pseudo-counts)."""
        self._check_fitted()
        return {
            "format": MODEL_FORMAT,
            "kind": self.kind,
            "small_val": self.small_val,
            "pseudo_counts": self.pseudo_counts,
            "bound": self.bound,
            "score_bounds": self.score_bounds_.tolist(),
            "llr_bounds": self.llr_bounds_.tolist(),
            **self.counts_,
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
        sb = np.asarray(d["score_bounds"], dtype=np.float64)
        lb = np.asarray(d["llr_bounds"], dtype=np.float64)
        if sb.ndim != 1 or sb.shape != lb.shape or len(sb) < 2 or len(sb) % 2:
            raise TrialError("score_bounds and llr_bounds must be equal-length even 1-D lists")
        if (sb[1:] < sb[:-1]).any() or (lb[1:] < lb[:-1]).any():
            raise TrialError("score_bounds and llr_bounds must be non-decreasing")
        obj.score_bounds_, obj.llr_bounds_ = sb, lb
        obj.counts_ = {k: int(d[k]) for k in ("n_target", "n_nontarget", "n_missing") if k in d}
        return obj


def _pav_block(
    score: np.ndarray, mask: np.ndarray, *, score_bounds: np.ndarray, llr_bounds: np.ndarray
) -> np.ndarray:
    s = score.astype(np.float64, copy=False)
    bad = int(np.count_nonzero(mask & ~np.isfinite(s)))
    if bad:
        raise ScoreError(f"{bad} scored trials have a non-finite score")
    return np.where(mask, interpolate_map(np.where(mask, s, 0.0), score_bounds, llr_bounds), 0.0)


# --------------------------------------------------------------------------------------------
# array functions and model loading
# --------------------------------------------------------------------------------------------


def linear_calibrate(
    tar: np.ndarray, non: np.ndarray, prior: float = 0.5, **kwargs: Any
) -> LinearCalibrator:
    """Fit a :class:`LinearCalibrator` on 1-D arrays of target and non-target scores.

    Examples
    --------
    >>> cal = linear_calibrate(np.array([2.0, 3.0, 0.5]), np.array([0.0, -1.0, 1.0]))
    >>> cal.transform_arrays(np.array([0.0])).shape
    (1,)
    """
    return LinearCalibrator(prior, **kwargs).fit_arrays(tar, non)


def pav_calibrate(tar: np.ndarray, non: np.ndarray, **kwargs: Any) -> PAVCalibrator:
    """Fit a :class:`PAVCalibrator` on arrays of target and non-target scores.

    Examples
    --------
    >>> cal = pav_calibrate(np.array([2.0, 3.0]), np.array([0.0, 2.5]))
    >>> bool(np.all(np.diff(cal.transform_arrays(np.linspace(-1, 4, 9))) > 0))
    True
    """
    return PAVCalibrator(**kwargs).fit_arrays(tar, non)


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
    return _model_of(model) if isinstance(model, dict) else _from_json(_model_of, model)


def _model_of(d: dict[str, Any]) -> LinearCalibrator | LinearFuser | QualityFuser | PAVCalibrator:
    kind = d.get("kind")
    if kind not in _KINDS:
        raise TrialError(f"unknown model kind {kind!r}; expected one of {sorted(_KINDS)}")
    return _KINDS[kind].from_dict(d)


def apply_model(
    model: LinearCalibrator | LinearFuser | QualityFuser | PAVCalibrator,
    scores: xr.Dataset | Sequence[xr.Dataset],
    *,
    quality: xr.Dataset | None = None,
    ndx: xr.Dataset | None = None,
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
        The Quality object, required by a quality fuser (ignored otherwise: an error).
    ndx
        Optional Ndx or Key: output on its ids, restricted to its trials.

    Examples
    --------
    >>> from bosaris_dask.trials import make_scores
    >>> cal = linear_calibrate(np.array([2.0, 3.0, 0.5]), np.array([0.0, -1.0, 1.0]))
    >>> out = apply_model(load_model(cal.to_dict()), make_scores(["m"], ["s"], [[1.0]]))
    >>> bool(np.isclose(out.score.values[0, 0], cal.transform_arrays(np.array([1.0]))[0]))
    True
    """
    systems = [scores] if isinstance(scores, xr.Dataset) else list(scores)
    if isinstance(model, QualityFuser):
        if quality is None:
            raise TrialError("a quality fusion model needs the quality measures")
        return model.transform(systems, quality, ndx=ndx)
    if quality is not None:
        raise TrialError(f"a {model.kind} model takes no quality measures")
    if isinstance(model, LinearCalibrator | PAVCalibrator):
        if len(systems) != 1:
            raise TrialError(f"a {model.kind} model takes one Scores object, got {len(systems)}")
        return model.transform(systems[0], ndx=ndx)
    return model.transform(systems, ndx=ndx)
