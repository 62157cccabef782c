"""What a Scores object lacks of a trial list, and filling those trials with a value.

:func:`alignment_report` counts, in one pass, the models, segments and trials of a Key or Ndx
that a Scores object does not have; :func:`set_missing_to_value` gives those trials a score
(the toolkit's ``set_missing_to_value``; after calibration ``0.0`` means "no information").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask.errors import TrialError
from bosaris_dask.progress import compute
from bosaris_dask.trials.construction import _dataset, kind_of, trial_classes
from bosaris_dask.trials.operations import reindex_ids

_log = logging.getLogger("bosaris_dask")


@dataclass(frozen=True)
class AlignmentReport:
    """What a Scores object lacks of a trial list (counts; totals are those of the list).

    ``targets``/``nontargets`` (and their totals) are ``None`` when the list is an Ndx.
    """

    models: int
    n_models: int
    segments: int
    n_segments: int
    trials: int
    n_trials: int
    targets: int | None = None
    n_targets: int | None = None
    nontargets: int | None = None
    n_nontargets: int | None = None

    def __str__(self) -> str:
        parts = [
            f"{self.models} of {self.n_models} models",
            f"{self.segments} of {self.n_segments} segments",
        ]
        if self.targets is None:
            parts.append(f"{self.trials} of {self.n_trials} trials")
        else:
            parts.append(f"{self.targets} of {self.n_targets} targets")
            parts.append(f"{self.nontargets} of {self.n_nontargets} non-targets")
        return "scores are missing " + ", ".join(parts)


def _check(scores: xr.Dataset, trials: xr.Dataset) -> str:
    if kind_of(scores) != "scores":
        raise TrialError(f"expected Scores, got a {kind_of(scores)}")
    kind = kind_of(trials)
    if kind not in ("key", "ndx"):
        raise TrialError(f"expected a Key or an Ndx, got a {kind}")
    return kind


def alignment_report(scores: xr.Dataset, trials: xr.Dataset) -> AlignmentReport:
    """Count, in one pass, what ``trials`` (a Key or Ndx) has and ``scores`` lacks.

    ``models``/``segments``: ids of ``trials`` absent from ``scores`` (no pass needed);
    ``trials`` (and for a Key ``targets`` and ``nontargets``): trials without a score.

    Examples
    --------
    >>> from bosaris_dask.trials import make_key, make_scores
    >>> key = make_key(["m1", "m2"], ["s1", "s2"], [[1, -1], [-1, 1]])
    >>> scores = make_scores(["m1"], ["s1", "s2"], [[1.0, 2.0]], [[True, False]])
    >>> print(alignment_report(scores, key))
    scores are missing 1 of 2 models, 0 of 2 segments, 1 of 2 targets, 2 of 2 non-targets
    """
    kind = _check(scores, trials)
    lacks = {
        dim: int((~trials.indexes[dim].isin(scores.indexes[dim])).sum())
        for dim in ("model", "segment")
    }
    aligned = reindex_ids(scores, trials.model.values, trials.segment.values)
    mask = aligned.score_mask.data
    cls = trial_classes(trials, chunks=mask.chunks)
    counts = [((cls == c) & ~mask).sum() for c in (1, -1)] + [(cls == c).sum() for c in (1, -1)]
    miss_tar, miss_non, n_tar, n_non = (int(n) for n in compute(counts, progress=None))
    sizes = {dim: len(trials.indexes[dim]) for dim in ("model", "segment")}
    common = {
        "models": lacks["model"],
        "n_models": sizes["model"],
        "segments": lacks["segment"],
        "n_segments": sizes["segment"],
        "trials": miss_tar + miss_non,
        "n_trials": n_tar + n_non,
    }
    if kind == "ndx":
        return AlignmentReport(**common)
    return AlignmentReport(
        **common, targets=miss_tar, n_targets=n_tar, nontargets=miss_non, n_nontargets=n_non
    )


def set_missing_to_value(
    scores: xr.Dataset, trials: xr.Dataset, value: float, *, log_missing: bool = True
) -> xr.Dataset:
    """Scores on the ids of ``trials`` with a score for every trial: ``value`` where missing.

    The result's mask is exactly the trials of ``trials`` (a Key or Ndx): scores of pairs that
    are not trials are dropped. Lazy, except that ``log_missing`` (the default, as the toolkit
    does) counts the filled trials in one pass and logs them at INFO on ``"bosaris_dask"``.
    float32 scores stay float32.

    Examples
    --------
    >>> from bosaris_dask.trials import make_ndx, make_scores
    >>> ndx = make_ndx(["m1", "m2"], ["s1"])
    >>> scores = make_scores(["m1"], ["s1"], [[2.5]])
    >>> filled = set_missing_to_value(scores, ndx, 0.0, log_missing=False)
    >>> filled.score.values.tolist(), filled.score_mask.values.tolist()
    ([[2.5], [0.0]], [[True], [True]])
    """
    _check(scores, trials)
    value = float(value)
    if not np.isfinite(value):
        raise TrialError(f"the fill value must be a finite number, got {value}")
    if log_missing:
        _log.info("%s (filled with %r)", alignment_report(scores, trials), value)
    aligned = reindex_ids(scores, trials.model.values, trials.segment.values)
    mask = aligned.score_mask.data
    is_trial = trial_classes(trials, chunks=mask.chunks) != 0
    score = aligned.score.data
    filled = da.where(mask, score, np.asarray(value, dtype=score.dtype)).astype(score.dtype)
    return _dataset(
        "scores", aligned.model.values, aligned.segment.values, score=filled, score_mask=is_trial
    )
