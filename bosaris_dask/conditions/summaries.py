"""Exact summaries of every system in every condition: the one function a grouped kernel replaces.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.trials import make_key, make_scores
>>> from bosaris_dask.conditions import condition_codes, condition_table
>>> key = make_key(["m1", "m2"], ["s1", "s2", "s3"], [[1, -1, -1], [-1, 1, -1]])
>>> scores = make_scores(["m1", "m2"], ["s1", "s2", "s3"], [[2.0, 0.5, -1.0], [0.0, 1.0, -2.0]])
>>> models = condition_table("model", ["m1", "m2"], {"gender": ["f", "m"]})
>>> out = condition_summaries([scores], key, condition_codes(key, [models], ["model.gender"]))
>>> out.n_target.tolist(), out.n_nontarget.tolist()
([[1, 1]], [[2, 2]])
>>> [s.n_target for s in out.pooled], out.by_condition[0][1].n_nontarget
([2], 2)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask.conditions.codes import Conditions
from bosaris_dask.conditions.equalized import EqualizedPlan, extra_mask, plan_members
from bosaris_dask.engine import DEFAULT_SPLIT_EVERY, ScoreSummary, summarize
from bosaris_dask.errors import MissingTrialsError, TrialError
from bosaris_dask.runner import Aggregation, run_pass
from bosaris_dask.trials import align, kind_of, locate, trial_classes

__all__ = ["ConditionSummaries", "condition_summaries", "condition_counts"]


@dataclass
class ConditionSummaries:
    """The pooled and per-condition summaries of some systems (``S`` systems, ``G`` conditions).

    Attributes
    ----------
    pooled
        One :class:`ScoreSummary` per system, over all key trials (as :func:`summarize`).
    by_condition
        ``by_condition[s][g]``: the summary of system ``s`` on the trials of condition ``g``
        alone, or ``None`` when that condition has no scored target or no scored non-target.
        Its ``n_missing`` counts the condition's own key trials without a score.
    n_target, n_nontarget, n_missing
        ``(S, G)`` integer arrays: scored targets, scored non-targets and key trials without
        a score, per system and condition (also for the conditions without a summary).
    passes
        Passes over the data, all counted.
    """

    pooled: list[ScoreSummary]
    by_condition: list[list[ScoreSummary | None]]
    n_target: np.ndarray
    n_nontarget: np.ndarray
    n_missing: np.ndarray
    passes: int
    #: With ``equalize``: every summary of the call and the plan that reads the equalized
    #: curves from them (:mod:`bosaris_dask.conditions.equalized`).
    equalized: tuple[list[ScoreSummary], EqualizedPlan] | None = None


def _count_block(classes, groups, *masks, n_groups: int) -> np.ndarray:
    """Per system: counts of (condition, class, scored) over the key trials of one chunk."""
    trial = (classes == 1) | (classes == -1)
    base = (groups[trial].astype(np.int64) * 2 + (classes[trial] == -1)) * 2
    return np.concatenate([np.bincount(base + m[trial], minlength=4 * n_groups) for m in masks])


def condition_counts(
    masks: Sequence[da.Array],
    classes: da.Array,
    groups: da.Array,
    n_groups: int,
    *,
    split_every: int = DEFAULT_SPLIT_EVERY,
    progress: bool | None = None,
) -> np.ndarray:
    """Exact ``(S, G, 2, 2)`` counts of key trials per system, condition, class and scored.

    Axis 2 is target (0) / non-target (1), axis 3 unscored (0) / scored (1). One pass of the
    pass runner (:func:`bosaris_dask.runner.run_pass`) over the key classes, the condition index
    and the systems' score masks (not the scores); counts are exact in float64 up to 2**53.

    Examples
    --------
    >>> import dask.array as da
    >>> classes = da.from_array(np.array([[1, -1], [0, 1]], dtype=np.int8), chunks=1)
    >>> groups = da.from_array(np.array([[0, 1], [1, 1]], dtype=np.int16), chunks=1)
    >>> mask = da.from_array(np.array([[True, True], [True, False]]), chunks=1)
    >>> condition_counts([mask], classes, groups, 2)[0].reshape(2, 4).tolist()
    [[0, 1, 0, 0], [1, 0, 0, 1]]
    """
    chunks = classes.chunks
    shape = (len(masks), n_groups, 2, 2)
    spec = Aggregation(
        "condition counts", chunk=partial(_count_block, n_groups=n_groups),
        length=int(np.prod(shape)),
        finalize=lambda total: np.rint(total).astype(np.int64).reshape(shape),
    )  # fmt: skip
    inputs = [classes, groups.rechunk(chunks), *(m.rechunk(chunks) for m in masks)]
    (counts,) = run_pass("condition counts", [spec], inputs, split_every=split_every,
                         progress=progress)  # fmt: skip
    return counts


def _coarse_bits(n_systems: int) -> int | None:
    """Pass-1 key bits for this many systems: the engine's default up to 8 systems, then one
    bit fewer per doubling (at least 12), so a chunk's pass-1 result stays near 8 systems' at
    18 bits (32 MB) however many conditions there are. Fewer bits can mean more refinement."""
    if n_systems <= 8:
        return None
    return max(12, 18 - int(np.ceil(np.log2(n_systems / 8))))


def condition_summaries(
    scores: Sequence[xr.Dataset],
    key: xr.Dataset,
    conditions: Conditions,
    *,
    thresholds: Sequence[float] | np.ndarray = (),
    fmr: Sequence[float] | np.ndarray = (),
    fnmr: Sequence[float] | np.ndarray = (),
    allow_missing: bool = False,
    split_every: int = DEFAULT_SPLIT_EVERY,
    progress: bool | None = None,
    names: Sequence[str] | None = None,
    equalize: bool = False,
) -> ConditionSummaries:
    """Exact summaries of each system pooled and in each condition, from the same passes.

    This is the single function that a grouped kernel (the condition as a dimension of the
    pass-1 and refinement histograms) replaces; its result does not depend on how it is built.

    How it works today, and what it costs:

    1. One counting pass (through the pass runner) over the key classes, the condition index
       and the score masks (not the scores) gives every system's scored/unscored targets and
       non-targets per condition (:func:`condition_counts`). Missing trials are reported from
       it, naming a few, unless ``allow_missing``; conditions without a scored target or
       non-target get no summary.
    2. One call of :func:`bosaris_dask.engine.summarize` evaluates the pooled systems and, as
       extra "systems", every non-empty (system, condition) pair: the system's scores with its
       ``score_mask`` ANDed with the condition's cells. All of them come out of the same passes,
       exactly (the same refinement rules as a plain evaluation of that condition's trials
       alone), but the kernels do ``1 + G`` times the work of a plain evaluation and each pass-1
       chunk result is ``1 + G`` histograms (coarser ones beyond 8 systems, see
       :func:`_coarse_bits`, which may cost refinement passes).

    Parameters
    ----------
    scores
        Scores objects, one per system.
    key
        The Key.
    conditions
        The conditions of the key's trials (:func:`~bosaris_dask.conditions.condition_codes`).
    thresholds
        Score thresholds where exact error counts are needed (as :func:`summarize`).
    fmr, fnmr
        Fixed-FMR and fixed-FNMR targets (as :func:`summarize`): each condition's summary is
        refined for its own operating points, in the same passes.
    allow_missing
        Drop key trials without a score (counted in ``n_missing``) instead of raising.
    split_every, progress, names
        As :func:`summarize`.
    equalize
        Also resolve every system's partition-equalized curve over the conditions, in the
        same passes (:mod:`bosaris_dask.conditions.equalized`; one more summary per condition
        with targets only or non-targets only).

    Raises
    ------
    MissingTrialsError
        Key trials without a score, unless ``allow_missing``.
    TrialError, ScoreError, OptionError
        As :func:`summarize` (for the pooled systems).
    """
    if kind_of(key) != "key":
        raise TrialError(f"evaluation needs a key, got {kind_of(key)}")
    systems = list(scores)
    names = list(names) if names is not None else [f"system-{k + 1}" for k in range(len(systems))]
    aligned = [align(s, key) for s in systems]
    chunks = aligned[0].score_mask.data.chunks
    groups = conditions.group_index(chunks)
    if "trial_mask" in key and key.trial_mask.dtype != np.int8:
        # as the engine: codes outside -1/0/+1 stay outside them (it reports them in pass 1)
        key = key.assign(trial_mask=key.trial_mask.clip(-2, 2))
    classes = trial_classes(key, chunks=chunks)
    masks = [s.score_mask.data.rechunk(chunks) for s in aligned]
    counts = condition_counts(
        masks, classes, groups, conditions.n_conditions, split_every=split_every,
        progress=progress,
    )  # fmt: skip
    n_target, n_nontarget = counts[:, :, 0, 1], counts[:, :, 1, 1]
    n_missing = counts[:, :, :, 0].sum(axis=2)
    if not allow_missing:
        for k, missing in enumerate(n_missing.sum(axis=1)):
            if missing:
                where = locate((classes != 0) & ~masks[k], key.model.values, key.segment.values)
                raise MissingTrialsError(
                    f"{names[k]}: {int(missing)} key trials have no score, e.g. {where} "
                    "(allow_missing drops them)"
                )
    pairs = [(k, g) for k in range(len(systems)) for g in range(conditions.n_conditions)
             if n_target[k, g] and n_nontarget[k, g]]  # fmt: skip
    extra = []
    for k, g in pairs:
        part = aligned[k].copy()
        part["score_mask"] = (part.score_mask.dims, masks[k] & (groups == g))
        extra.append(part)
    labels = [f"{names[k]} [condition {g}]" for k, g in pairs]
    plan = None
    if equalize:
        plan = plan_members(pairs, n_target, n_nontarget, len(systems) + len(extra))
        for k, g, filler in plan.extra:
            part = aligned[k].copy()
            part["score_mask"] = (part.score_mask.dims, extra_mask(
                masks[k], classes, groups, g, filler, targets=bool(n_target[k, g])))
            extra.append(part)
            labels.append(f"{names[k]} [condition {g}, equalized]")
    summaries = summarize(
        [*systems, *extra], key, thresholds=thresholds, fmr=fmr, fnmr=fnmr, allow_missing=True,
        split_every=split_every, progress=progress,
        coarse_bits=_coarse_bits(len(systems) + len(extra)), names=[*names, *labels],
        extra_candidates=plan.candidates if plan is not None else None,
    )  # fmt: skip
    pooled = summaries[: len(systems)]
    by_condition: list[list[ScoreSummary | None]] = [
        [None] * conditions.n_conditions for _ in systems
    ]
    for (k, g), summary in zip(pairs, summaries[len(systems) :], strict=False):
        # the engine counts the key trials outside the condition as missing: keep the genuine
        by_condition[k][g] = replace(summary, n_missing=int(n_missing[k, g]), _hull=None)
    return ConditionSummaries(
        pooled, by_condition, n_target, n_nontarget, n_missing,
        passes=pooled[0].passes + 1, equalized=(summaries, plan) if plan is not None else None,
    )  # fmt: skip
