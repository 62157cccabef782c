"""Exact summaries of every system in every condition, from grouped passes.

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

import dask
import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask import engine
from bosaris_dask.conditions.codes import Conditions
from bosaris_dask.conditions.equalized import EqualizedPlan, extra_mask, plan_members
from bosaris_dask.engine import DEFAULT_SPLIT_EVERY, summarize
from bosaris_dask.errors import MissingTrialsError, have
from bosaris_dask.inputs import check_key, names_or_default, pass_inputs
from bosaris_dask.passes import pass1_bins
from bosaris_dask.passes.binmap import BinMap
from bosaris_dask.passes.exact_auc import AucPart
from bosaris_dask.passes.grouped import Part, grouped_pass1, refine_parts, remap_groups
from bosaris_dask.passes.riding_auc import RidingAuc
from bosaris_dask.passes.runner import Aggregation, run_pass
from bosaris_dask.passes.score_summary import ScoreSummary
from bosaris_dask.trials import align, locate, trial_classes

__all__ = [
    "ConditionSummaries",
    "condition_summaries",
    "condition_counts",
    "GROUPED_KEY",
    "POOLED_KEY",
]

#: The dask config key that switches the grouped kernels off (``False``: one masked copy of
#: each system per condition, the way before them; for comparisons and benchmarks).
GROUPED_KEY = "bosaris_dask.grouped-kernels"
#: The dask config key that counts the pooled summaries apart, with the pass-1 bins of a plain
#: evaluation (``True``, the default: the pooled results are, bin for bin, those of
#: :func:`bosaris_dask.metrics.evaluate` without conditions, and far fewer pooled trials need
#: refining than in the conditions' coarser bins; measured faster at 2e7 and 1e8 trials with
#: 24 conditions, benchmarks/README.md). ``False``: the pooled histogram is the sum of the
#: conditions' (the pooled metrics are exact either way; only its bins differ: the steppy ROC
#: points and the AUC bounds).
POOLED_KEY = "bosaris_dask.pooled-as-plain"


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


#: A key code's class slot in :func:`_count_block`: target 0, non-target 2, no trial 4.
_CLASS_SLOT = np.full(256, 4, dtype=np.uint8)
_CLASS_SLOT[1], _CLASS_SLOT[255] = 0, 2  # +1 and -1 as uint8


def _count_block(classes, groups, *masks, n_groups: int, block: int = 1 << 18) -> np.ndarray:
    """Per system: counts of (condition, class, scored) over the key trials of one chunk."""
    # (condition * 3 + class) * 2 + scored, in cache-sized blocks; the class "no trial" is
    # counted, then dropped
    cls, grp = classes.reshape(-1).astype(np.int8, copy=False).view(np.uint8), groups.reshape(-1)
    flat = [m.reshape(-1) for m in masks]
    base = np.empty(min(block, cls.size), dtype=np.intp)
    cell = np.empty_like(base)
    totals = [np.zeros(6 * n_groups, dtype=np.int64) for _ in masks]
    for lo in range(0, cls.size, block):
        n = min(block, cls.size - lo)
        np.multiply(grp[lo : lo + n], 6, out=base[:n], casting="unsafe")
        np.add(base[:n], _CLASS_SLOT.take(cls[lo : lo + n]), out=base[:n])
        for total, m in zip(totals, flat, strict=True):
            np.add(base[:n], m[lo : lo + n], out=cell[:n])
            total += np.bincount(cell[:n], minlength=6 * n_groups)
    return np.concatenate([t.reshape(n_groups, 3, 2)[:, :2].reshape(-1) for t in totals])


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
    pass runner (:func:`bosaris_dask.passes.runner.run_pass`) over the key classes, the condition
    index and the systems' score masks (not the scores); counts are exact in float64 up to 2**53.

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


#: The most cells (parts x bins) of a chunk's pass-1 histogram with conditions: 2**23, 128 MB
#: of target and non-target counts, however many conditions there are (at 12 bits, the most
#: 2,048 parts reach; tens of thousands of conditions took gigabytes a chunk).
MAX_CONDITION_CELLS = 1 << 23


def _coarse_bits(n_parts: int) -> int | None:
    """Pass-1 key bits for this many parts (systems, and systems in conditions): the engine's
    default up to 8, then one bit fewer per doubling (at least 12), so a chunk's pass-1 result
    stays near 8 systems' at 18 bits (32 MB); beyond 2,048 parts, as many as
    :data:`MAX_CONDITION_CELLS` allows (7 bits for 40,000 conditions). Fewer bits can mean more
    refinement, and wider AUC bounds per condition (the exact AUC is ``exact_auc``).

    >>> _coarse_bits(8), _coarse_bits(25), _coarse_bits(2_000), _coarse_bits(40_001)
    (None, 16, 12, 7)
    """
    if n_parts <= 8:
        return None
    bits = max(12, 18 - int(np.ceil(np.log2(n_parts / 8))))
    return max(1, min(bits, int(np.log2(MAX_CONDITION_CELLS // n_parts))))


#: The conditions' adaptive pass-1 bins: about ``2**CONDITION_EXTRA_BITS`` times the plain
#: evaluation's bins in all (its budget, :func:`bosaris_dask.passes.pass1_bins.adaptive_budget`,
#: shared out over the conditions: 24 x 2**14 at 1e8 trials, 24 x 2**16 at 1e9), at most as many
#: as the fixed bins: their candidate trials after pass 1 stay a small part of ``keep-limit``
#: (1.7M with the plain evaluation's at 1e8), while their histograms stay small enough for the
#: CPU caches (measured: the compiled counts took twice as long with 2**16 bins per
#: condition as with 2**13).
CONDITION_EXTRA_BITS = 2
#: The fewest key bits (bins) of the conditions' adaptive maps.
MIN_CONDITION_BITS = 10


def _bin_maps(
    systems: list[xr.Dataset], key: xr.Dataset, bits: int, plain_bits: int, n_groups: int
) -> tuple[list[BinMap] | None, list[BinMap] | None]:
    """Per system, pass 1's bins of the conditions (at most ``2**bits``) and of the pooled
    histogram apart, fitted to one sample of its scores where a plain evaluation fits its own
    (``bosaris_dask.adaptive-bins``, :func:`bosaris_dask.passes.pass1_bins.adaptive_budget`): the
    pooled ones are then the plain evaluation's, map for map, and the conditions' are finer where
    the scores are dense, so their candidates after pass 1 shrink as the plain evaluation's do.
    ``None, None``: the top ``bits`` (and ``plain_bits``) key bits."""
    inputs, dtype = pass_inputs(systems, key)
    cells = int(np.prod(inputs[0].shape))
    budget = pass1_bins.adaptive_budget(cells, plain_bits)
    if budget is None:
        return None, None
    share = int(np.ceil(np.log2(max(1, n_groups))))
    own = min(bits, max(MIN_CONDITION_BITS, budget + CONDITION_EXTRA_BITS - share))
    pooled, maps = pass1_bins.fitted_bin_maps(inputs, dtype, [budget, own])
    return maps, pooled


def condition_summaries(
    scores: Sequence[xr.Dataset],
    key: xr.Dataset,
    conditions: Conditions,
    *,
    thresholds: Sequence[float] | np.ndarray = (),
    fmr: Sequence[float] | np.ndarray = (),
    fnmr: Sequence[float] | np.ndarray = (),
    cross_entropy_plo: Sequence[float] | np.ndarray = (),
    allow_missing: bool = False,
    split_every: int = DEFAULT_SPLIT_EVERY,
    progress: bool | None = None,
    names: Sequence[str] | None = None,
    equalize: bool = False,
    grouped: bool | None = None,
    riding: RidingAuc | None = None,
) -> ConditionSummaries:
    """Exact summaries of each system pooled and in each condition, from the same passes.

    How it works, and what it costs:

    1. Pass 1 (:func:`bosaris_dask.passes.grouped.grouped_pass1`) keys each system's trials once
       and counts them in a ``(condition, key bin)`` histogram, with exact Cllr sums and the
       key trials without a score per condition: every system's scored/unscored targets and
       non-targets per condition come from it, in the pass a plain evaluation makes anyway
       (the same number of passes). Missing trials are reported from it (the error of a plain
       evaluation) unless ``allow_missing``; conditions without a scored target or non-target
       get no summary.
    2. :func:`bosaris_dask.passes.grouped.refine_parts` then evaluates the pooled systems and every
       non-empty (system, condition) pair as *parts* of the systems: a part's pass-1 histogram
       and exact Cllr sums are sums over its conditions (the pooled one over all), and each
       refinement pass picks the trials inside the union of the parts' candidate bins once.
       The summaries are those of evaluating each condition's trials alone (the same
       refinement rules), bit for bit: the same as the way before the grouped kernels, still
       available for comparison with the dask config key ``bosaris_dask.grouped-kernels:
       False`` (one masked copy of each system per condition: the kernels did ``1 + G`` times
       the work of a plain evaluation, after a counting pass of their own,
       :func:`condition_counts`, so one pass more).
       Pass 1 counts the ``P`` conditions some (model, segment) pair of the key falls in
       (:meth:`~bosaris_dask.conditions.codes.Conditions.possible_groups`, from the ids'
       codes: a Cartesian product of ``--by`` values may hold many no pair has), with as many
       key bits as for ``S * (1 + P)`` ungrouped systems (:func:`_coarse_bits`: fewer beyond
       8; the same in both ways, whichever conditions have trials), so a chunk's histogram
       stays as small; the pooled summaries are counted
       apart, from the same keys, in a plain evaluation's bins (:data:`POOLED_KEY`): each is,
       bin for bin, that of a plain evaluation. Where a plain evaluation fits its pass-1 bins
       to a sample of the scores (``bosaris_dask.adaptive-bins``, :mod:`bosaris_dask.passes.binmap`:
       by default when the trials outnumber ``keep-limit``), the conditions' bins are fitted
       to the same sample, within the same number of bins as the fixed ones: their candidate
       trials after pass 1 then shrink as the plain evaluation's do, so both take the same
       passes where the fixed bins made the conditions read the data once more (at 1e8 trials
       with 24 conditions, benchmarks/README.md).
    3. Each system's conditions share its refinement budgets (``dense-budget`` and
       ``raw-limit`` divided by ``G``; :func:`bosaris_dask.passes.grouped.refine_parts`), so a
       refinement task holds about what it holds for the system alone, and a condition's
       candidate bins are sub-histogrammed before their trials are pulled (the masked copies
       are evaluated under the same budgets, the pooled systems apart).

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
    cross_entropy_plo
        Prior log-odds of the ECE (as :func:`summarize`): every summary, pooled and per
        condition, carries its own trials' exact cross-entropy sums, summed in pass 1.
    allow_missing
        Drop key trials without a score (counted in ``n_missing``) instead of raising.
    split_every, progress, names
        As :func:`summarize`.
    equalize
        Also resolve every system's partition-equalized curve over the conditions, in the
        same passes (:mod:`bosaris_dask.conditions.equalized`; one more summary per condition
        with targets only or non-targets only).
    grouped
        Use the grouped kernels (default: the dask config key :data:`GROUPED_KEY`, on).
    riding
        A :class:`~bosaris_dask.passes.riding_auc.RidingAuc` (made with ``grouped=True``): the exact
        AUCs of the pooled systems and of every condition ride along the grouped passes
        (only with the grouped kernels; it stays unserved otherwise).

    Raises
    ------
    MissingTrialsError
        Key trials without a score, unless ``allow_missing``.
    TrialError, ScoreError, OptionError
        As :func:`summarize` (for the pooled systems).
    """
    systems = list(scores)
    check_key(systems, key)
    names = names_or_default(names, len(systems))
    aligned = [align(s, key) for s in systems]
    chunks = aligned[0].score_mask.data.chunks
    groups = conditions.group_index(chunks)
    if "trial_mask" in key and key.trial_mask.dtype != np.int8:
        # as the engine: codes outside -1/0/+1 stay outside them (it reports them in pass 1)
        key = key.assign(trial_mask=key.trial_mask.clip(-2, 2))
    classes = trial_classes(key, chunks=chunks)
    masks = [s.score_mask.data.rechunk(chunks) for s in aligned]
    n_cond = conditions.n_conditions
    # the conditions some (model, segment) pair falls in, from the ids' codes (a Cartesian
    # product of --by values may hold many no pair has): pass 1 counts those only
    possible = conditions.possible_groups()
    row = np.full(n_cond, -1, dtype=np.int16 if len(possible) < (1 << 15) else np.int32)
    row[possible] = np.arange(len(possible))
    # pass-1 bits from the numbers of systems and possible conditions, not from which have
    # trials: pass 1 tells that, and the masked copies use the same bits
    most = len(systems) * (1 + len(possible))
    bits = _coarse_bits(most) or pass1_bins.default_coarse_bits(most)
    use_grouped = grouped if grouped is not None else dask.config.get(GROUPED_KEY, True)
    apart = bool(dask.config.get(POOLED_KEY, True))
    plain_bits = pass1_bins.default_coarse_bits(len(systems))
    maps, pooled_maps = _bin_maps(systems, key, bits, plain_bits, len(possible))
    if use_grouped:  # the counts come from pass 1: no pass of their own
        rows = groups if len(possible) == n_cond else remap_groups(groups, row)
        first = grouped_pass1(
            systems, key, rows, len(possible), pooled_apart=range(len(systems)) if apart else (),
            share=n_cond, allow_missing=allow_missing, split_every=split_every, coarse_bits=bits,
            pooled_coarse_bits=plain_bits if apart else None, progress=progress, names=names,
            cross_entropy_plo=cross_entropy_plo, bin_maps=maps,
            pooled_bin_maps=pooled_maps if apart else None,
            riding=riding.rider.pass1 if riding is not None else (),
        )  # fmt: skip
        counts = np.zeros((len(systems), n_cond, 2, 2), dtype=np.int64)
        counts[:, possible] = first.counts
    else:
        counts = condition_counts(
            masks, classes, groups, n_cond, split_every=split_every, progress=progress
        )
    n_target, n_nontarget = counts[:, :, 0, 1], counts[:, :, 1, 1]
    n_missing = counts[:, :, :, 0].sum(axis=2)
    if not allow_missing and not use_grouped:  # (pass 1 raised it, as a plain evaluation)
        for k, missing in enumerate(n_missing.sum(axis=1)):
            if missing:
                where = locate((classes != 0) & ~masks[k], key.model.values, key.segment.values)
                raise MissingTrialsError(
                    f"{names[k]}: {have(int(missing), 'key trial')} no score, e.g. {where} "
                    "(allow_missing drops them)"
                )
    pairs = [(k, g) for k in range(len(systems)) for g in range(n_cond)
             if n_target[k, g] and n_nontarget[k, g]]  # fmt: skip
    labels = [f"{names[k]} [condition {g}]" for k, g in pairs]
    plan = None
    if equalize:
        plan = plan_members(pairs, n_target, n_nontarget, len(systems) + len(pairs))
        labels += [f"{names[k]} [condition {g}, equalized]" for k, g, _ in plan.extra]
    hook = plan.candidates if plan is not None else None
    if use_grouped:
        parts = [Part(k) for k in range(len(systems))]
        parts += [Part(k, (int(row[g]),), (int(row[g]),)) for k, g in pairs]
        if riding is not None:  # the AUC's parts: the pooled systems, then each condition's
            riding.parts = [AucPart(k) for k in range(len(systems))]
            riding.parts += [AucPart(k, int(row[g])) for k, g in pairs]
            riding.part_names = [*names, *labels[: len(pairs)]]
        for k, g, filler in plan.extra if plan is not None else ():
            both = tuple(sorted({int(row[g]), int(row[filler])}))
            own = (int(row[g]),)
            parts.append(Part(k, own, both) if n_target[k, g] else Part(k, both, own))
        summaries = refine_parts(
            first, parts, thresholds=thresholds, fmr=fmr, fnmr=fnmr,
            names=[*names, *labels], extra_candidates=hook, share=n_cond,
            rider=riding.rider if riding is not None else None,
        )  # fmt: skip
        passes = summaries[0].passes
    else:  # one masked copy of a system per (system, condition) and equalized filler
        extra = []
        for k, g in pairs:
            part = aligned[k].copy()
            part["score_mask"] = (part.score_mask.dims, masks[k] & (groups == g))
            extra.append(part)
        for k, g, filler in plan.extra if plan is not None else ():
            part = aligned[k].copy()
            part["score_mask"] = (
                part.score_mask.dims,
                extra_mask(masks[k], classes, groups, g, filler, targets=bool(n_target[k, g])),
            )
            extra.append(part)
        # the pooled systems as refine_parts counts them; the copies share the budgets
        pooled = summarize(
            systems, key, thresholds=thresholds, fmr=fmr, fnmr=fnmr, allow_missing=True,
            cross_entropy_plo=cross_entropy_plo,
            split_every=split_every, progress=progress, names=names,
            coarse_bits=plain_bits if apart else bits,
            bin_maps=(pooled_maps if apart else maps) if maps is not None else None,
        )  # fmt: skip
        passes = 1 + pooled[0].passes  # the counting pass, then the pooled systems'
        summaries = list(pooled)
        if extra:
            knobs = engine.engine_knobs()
            shared = {"bosaris_dask.dense-budget": max(1, knobs["dense_budget"] // n_cond),
                      "bosaris_dask.raw-limit": knobs["raw_limit"] // n_cond}  # fmt: skip
            pad: list = [None] * len(systems)
            copies_hook = (lambda subs: hook([*pad, *subs])[len(pad) :]) if hook else None
            owners = [k for k, _ in pairs]
            owners += [k for k, _, _ in (plan.extra if plan is not None else ())]
            with dask.config.set(shared):
                copies = summarize(
                    extra, key, thresholds=thresholds, fmr=fmr, fnmr=fnmr, allow_missing=True,
                    cross_entropy_plo=cross_entropy_plo,
                    split_every=split_every, progress=progress, coarse_bits=bits,
                    names=labels, extra_candidates=copies_hook,
                    bin_maps=[maps[k] for k in owners] if maps is not None else None,
                )  # fmt: skip
            summaries += copies
            passes += copies[0].passes
    # every summary's n_missing counts its own key trials without a score (the masked copies
    # count the key trials outside their condition too)
    summaries = list(summaries)
    for i, (k, g) in enumerate(pairs):
        summaries[len(systems) + i] = replace(summaries[len(systems) + i],
                                              n_missing=int(n_missing[k, g]))  # fmt: skip
    if plan is not None:
        start = len(systems) + len(pairs)
        for i, (k, g, filler) in enumerate(plan.extra):
            both = [g, filler] if g != filler else [g]
            tar, non = ([g], both) if n_target[k, g] else (both, [g])
            own = int(counts[k, tar, 0, 0].sum() + counts[k, non, 1, 0].sum())
            summaries[start + i] = replace(summaries[start + i], n_missing=own)
    pooled = summaries[: len(systems)]
    by_condition: list[list[ScoreSummary | None]] = [
        [None] * conditions.n_conditions for _ in systems
    ]
    for (k, g), summary in zip(pairs, summaries[len(systems) :], strict=False):
        by_condition[k][g] = summary  # (its cached hull: the counts are unchanged)
    return ConditionSummaries(
        pooled, by_condition, n_target, n_nontarget, n_missing,
        passes=passes,
        equalized=(summaries, plan) if plan is not None else None,
    )  # fmt: skip
