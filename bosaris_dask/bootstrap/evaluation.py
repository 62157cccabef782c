"""Bootstrap confidence intervals of an evaluation, and paired comparisons of its systems.

:func:`evaluate_with_intervals` is what :func:`bosaris_dask.metrics.evaluate` runs with
``bootstrap=B``: the point estimates stay the exact ones of the evaluation; one more pass over
the data (with conditions, Cprimary or equalization too) gives every resample's metrics, from
which :func:`add_intervals` takes the intervals:

1. each system's coarse score bins are chosen from exact counts per key prefix: the
   evaluation's own summaries, or, where the evaluation does not hand them over, a pass of
   their own (:mod:`~bosaris_dask.bootstrap.bins`; the operating points' Bayes thresholds are
   edges);
2. the bootstrap pass: every resample's exact weighted histogram over those bins and exact Cllr
   sums, for all ``B`` resamples at once (:mod:`~bosaris_dask.bootstrap.histograms`).

Resampling is the two-way bootstrap of :mod:`~bosaris_dask.bootstrap.resample` (multinomial
group multiplicities per side, a trial's multiplicity the product of its two sides'). Intervals
are **percentile intervals**: the ``(1 - ci) / 2`` and ``(1 + ci) / 2`` quantiles (numpy's
default linear interpolation) of the ``B`` resamples' values, resamples without targets or
non-targets left out (their number is ``attrs["bootstrap_degenerate"]``). What each resample's
metric is computed from (:mod:`~bosaris_dask.bootstrap.replicates`): actDCF and Cllr exactly;
EER, minDCF and minCllr from the ROC convex hull of the coarse bins, i.e. at the bins'
resolution, and the calibration loss (``cllr_cal``, Cllr minus that minCllr), each with an
other bound such that the exact value lies between the two
(:mod:`~bosaris_dask.bootstrap.replicates`), so their intervals carry ``<metric>_ci_resolution``:
the exact bootstrap's ends are at most that below theirs (above, for the calibration loss). The
same computation on the data itself (no resampling) is reported as ``eer_binned``,
``min_dcf_binned``, ``min_cllr_binned`` and ``cllr_cal_binned``: their difference to the exact
values is the binning's error at the data.

With ``compare``, every pair of systems (``first``, ``second``) gets the exact difference
``first - second`` of each metric, the percentile interval of the resamples' differences (the
same resamples for both systems: paired) and the fraction of resamples in which the first is
strictly better (lower). Each system has bins of its own, so the resamples' EER, minDCF and
minCllr of two systems carry different binning errors: two systems that rank every trial alike
(one a shifted or scaled copy of the other) get an interval around 0, not [0, 0], and a
fraction that is the bins' noise. ``compare_<metric>_resolution`` (for those four) bounds that
error: every resample's binned difference is within it of the exact difference (the larger of
the two systems' distances from binned value to other bound, in any resample).

With ``by`` (conditions), every condition with targets and non-targets gets its intervals too
(``condition_<metric>_ci``), from the same resamples and the same pass, on its system's bins:
the pass's histograms get a condition axis (a group pair's trials are split between their
conditions, so the matrix products do not grow; the results are ``G`` times larger), and the
pooled histograms are their sums. With ``compare`` too, every pair of systems is compared in
every condition (``condition_compare_<metric>``, ``_ci``, ``_p_better``: ``pair``,
``condition``[, ``plo``]), from the same resamples.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask import metrics
>>> from bosaris_dask.conditions import condition_table
>>> from bosaris_dask.trials import make_key, make_scores
>>> rng = np.random.default_rng(0)
>>> mids, sids = [f"m{i}" for i in range(12)], [f"s{j}" for j in range(12)]
>>> spk = np.arange(12) // 2
>>> key = make_key(mids, sids, np.where(spk[:, None] == spk[None, :], 1, -1))
>>> scores = make_scores(mids, sids, rng.normal(size=(12, 12)) + 3 * (key.trial_mask.values > 0))
>>> tables = [condition_table("model", mids, {"spk": spk}),
...           condition_table("segment", sids, {"spk": spk})]
>>> ds = metrics.evaluate(scores, key, priors=[0.5], conditions=tables, ci=0.9, bootstrap=50,
...                       resample=["model.spk", "segment.spk"], seed=1)
>>> low, high = ds.eer_ci.values[0]
>>> bool(low <= float(ds.eer[0]) <= high), ds.eer_ci.dims, ds.attrs["bootstrap"]
(True, ('system', 'bound'), 50)
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from bosaris_dask import config, measures
from bosaris_dask.arguments import one_or_many
from bosaris_dask.bootstrap.bins import choose_edges, prefix_histograms, summary_prefix_counts
from bosaris_dask.bootstrap.blocks import BLOCK_BYTES
from bosaris_dask.bootstrap.cells import CellGroups, TrialResample
from bosaris_dask.bootstrap.histograms import LIMBS, check_multiplicities, resample_histograms
from bosaris_dask.bootstrap.replicates import METRICS, PER_POINT, replicate_metrics
from bosaris_dask.bootstrap.resample import (
    NO_RESAMPLE,
    ids_with_trials,
    multiplicities,
    parse_resample,
    resample_groups,
)
from bosaris_dask.bootstrap.variables import (
    compare_variables,
    condition_compare_variables,
    condition_interval_variables,
    cprimary_interval_variables,
    describe,
    equalized_interval_variables,
    interval_variables,
)
from bosaris_dask.conditions.codes import Conditions
from bosaris_dask.conditions.tables import ConditionTable, as_condition_table
from bosaris_dask.errors import BosarisError, OptionError, have, option
from bosaris_dask.passes import memory
from bosaris_dask.progress import current_client

__all__ = [
    "evaluate_with_intervals",
    "add_intervals",
    "check_options",
    "warn_if_few",
    "choose_bins",
    "BOUNDS",
    "BootstrapWarning",
]

#: The ``bound`` dimension of the intervals.
BOUNDS = ("low", "high")


def check_options(
    ci: float | None, bootstrap: int | None, resample: Sequence[Any], compare: bool,
    conditions: Sequence[Any],
) -> tuple[float, int]:  # fmt: skip
    """The interval level and resample count, or a one-line OptionError for a bad combination
    (too few resamples for the level: :func:`warn_if_few`, once every option is checked).

    Examples
    --------
    >>> check_options(None, 100, ["model.spk"], False, ["t.tsv"])
    (0.95, 100)
    >>> check_options(0.9, None, [], False, [])
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.OptionError: ci (--ci) needs bootstrap (--bootstrap), a number of resamples
    """
    if bootstrap is None:
        what = "ci" if ci is not None else "resample" if resample else "compare"
        raise OptionError(f"{option(what)} needs {option('bootstrap')}, a number of resamples")
    bootstrap = config.check_int(option("bootstrap"), bootstrap, 2, 1 << 20)
    level = 0.95 if ci is None else float(ci)
    if not 0 < level < 1:
        raise OptionError(f"{option('ci')} must be strictly between 0 and 1, got {ci!r}")
    if not resample:
        raise OptionError(NO_RESAMPLE)
    if not conditions:
        raise OptionError(f"{option('resample')} names columns of condition tables: give "
                          f"{option('conditions')}")  # fmt: skip
    return level, bootstrap


def warn_if_few(bootstrap: int, level: float, *, stacklevel: int = 3) -> None:
    """A :class:`BootstrapWarning` where fewer than one resample lies beyond each end of the
    intervals (they are then interpolated between the most extreme ones).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_if_few(100, 0.999)
    >>> str(caught[0].message).split("; ")[-1]
    'take at least 2000'
    """
    if bootstrap * (1 - level) / 2 >= 1:
        return
    least = math.ceil(2 / (1 - level))
    stable = " (1000 or more for stable ends)" if least < 1000 else ""
    warnings.warn(
        f"{bootstrap} resamples are too few for {100 * level:g}% intervals: fewer than one "
        "resample lies beyond each end, which is interpolated between the most extreme ones; "
        f"take at least {least}{stable}",
        BootstrapWarning, stacklevel=stacklevel,
    )  # fmt: skip


class BootstrapWarning(UserWarning):
    """Bootstrap settings that give intervals in name only (too few resamples for the level)."""


#: The bootstrap pass merges its tasks' histograms two at a time: they are large (a row per
#: resample, a set per system and condition) and merge by a sum, so a merge task holds three
#: of them, not ``split_every + 1`` (more bins for the same budget).
MERGE_EVERY = 2


def _task_bytes(n_rows: int, nb: int, n_sys: int, split_every: int, groups: int) -> int:
    result = n_sys * 2 * n_rows * (nb + LIMBS) * 8
    return (split_every + 1) * result + n_rows * (4096 + groups) * 8 + BLOCK_BYTES


def choose_bins(
    n_rows: int, n_sys: int, split_every: int, groups: int, n_conditions: int = 1
) -> int:
    """The number of coarse bins: ``bosaris_dask.bootstrap-bins``, fewer when a task's memory
    (:func:`_task_bytes`, a histogram per system and condition, merged :data:`MERGE_EVERY` at
    a time) would pass ``bosaris_dask.bootstrap-budget``; OptionError below 16.

    >>> choose_bins(101, 1, 8, 50)
    256
    >>> import dask
    >>> with dask.config.set({"bosaris_dask.bootstrap-budget": 2**20}):
    ...     choose_bins(101, 1, 8, 50, n_conditions=3000)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.OptionError: --bootstrap 100 with 50 groups, 1 system x 3,000 conditions ...
    """
    budget = config.get("bootstrap-budget")
    nb = config.get("bootstrap-bins")
    split_every = min(split_every, MERGE_EVERY)  # the bootstrap pass's merges
    parts = n_sys * n_conditions
    while nb > 16 and _task_bytes(n_rows, nb, parts, split_every, groups) > budget:
        nb //= 2
    need = _task_bytes(n_rows, nb, parts, split_every, groups)
    if need > budget:
        what = f"{n_sys} system{'s' if n_sys > 1 else ''}"
        if n_conditions > 1:
            what += f" x {n_conditions:,} conditions"
        raise OptionError(
            f"--bootstrap {n_rows - 1} with {groups:,} groups, {what} needs "
            f"{need / 2**20:,.0f} MiB per task at {nb} bins, over bosaris_dask.bootstrap-budget "
            f"= {budget / 2**20:,.0f} MiB: fewer resamples, coarser groups"
            f"{' or conditions' if n_conditions > 1 else ''}, or a larger budget"
        )
    return nb


def evaluate_with_intervals(
    scores: xr.Dataset | Sequence[xr.Dataset],
    key: xr.Dataset,
    *,
    conditions: Sequence[Any] = (),
    by: Sequence[Any] = (),
    cprimary_priors: Sequence[float] = (),
    equalize: bool = False,
    ci: float | None = None,
    bootstrap: int | None = None,
    resample: Sequence[str] = (),
    seed: int | None = None,
    compare: bool = False,
    split_every: int,
    progress: bool | None = None,
    bootstrap_method: str = "multinomial",
    **kwargs: Any,
) -> xr.Dataset:
    """:func:`~bosaris_dask.metrics.evaluate` with bootstrap intervals (its keywords).

    The bins are chosen from the evaluation's own pooled summaries (their exact counts): no
    pass of their own, with conditions, Cprimary or ``equalize`` too (their pooled summaries
    are a plain evaluation's, bin for bin, with ``bosaris_dask.pooled-as-plain``, the
    default).
    """
    from bosaris_dask import metrics

    conditions, by, resample = (one_or_many(x) for x in (conditions, by, resample))
    level, n_resamples = check_options(ci, bootstrap, resample, compare, conditions)
    systems = [scores] if isinstance(scores, xr.Dataset) else list(scores)
    if compare and len(systems) < 2:
        raise OptionError(f"{option('compare')} needs at least two systems")
    # the tables read once, here, not by each step that uses them (draws, conditions, intervals)
    conditions = [c if isinstance(c, Conditions) else as_condition_table(c) for c in conditions]
    # the resamples are drawn and checked on the client before any pass
    draws = _draw(key, conditions, resample, n_resamples, seed, bootstrap_method)
    warn_if_few(n_resamples, level, stacklevel=4)  # once the options are known to be good
    tables = conditions
    if by:  # made once, and the pass's memory checked (choose_bins) before the evaluation's
        from bosaris_dask.conditions.evaluation import _conditions_of

        tables = [_conditions_of(key, conditions, by)]
        groups = draws[0]
        choose_bins(n_resamples + 1, len(systems), split_every,
                    groups.n_model + groups.n_segment, tables[0].n_conditions)  # fmt: skip
    if by or len(cprimary_priors) or equalize:
        from bosaris_dask.conditions.evaluation import conditions_and_summaries

        # the pooled summaries give the bins (no pass of their own)
        ds, summaries = conditions_and_summaries(
            systems, key, conditions=tables if by else (), by=by,
            cprimary_priors=cprimary_priors, equalize=equalize, split_every=split_every,
            progress=progress, **kwargs,
        )  # fmt: skip
    else:
        ds, summaries = metrics.pooled_evaluation(
            systems, key, split_every=split_every, progress=progress, **kwargs
        )
    if compare and "n_missing" in ds and int(ds.n_missing.max()) > 0:
        missing = ", ".join(f"{n} {int(m)}" for n, m in zip(ds.system.values, ds.n_missing.values,
                                                              strict=True))  # fmt: skip
        warnings.warn(
            f"the comparison pairs the resamples, not the trials: with missing scores the "
            f"systems are compared on different trials (key trials missing per system: "
            f"{missing})", BootstrapWarning, stacklevel=2,
        )  # fmt: skip
    return add_intervals(
        ds, systems, key, conditions=tables, resample=resample, bootstrap=int(bootstrap or 0),
        ci=ci, seed=seed, compare=compare, split_every=split_every, progress=progress,
        summaries=summaries, by=by, _draws=draws, bootstrap_method=bootstrap_method,
    )  # fmt: skip


def _draw(
    key, conditions, resample, bootstrap, seed, method="multinomial"
) -> tuple[Any, np.ndarray, np.ndarray, int]:
    """The resampled groups, their multiplicities (checked) and the seed (a fresh one if None);
    a packed list's groups are made from its recipe (:mod:`~bosaris_dask.bootstrap.cells`)."""
    if len(resample) == 1 and isinstance(resample[0], TrialResample):
        groups = resample[0].groups()
        groups.check_layout(key)
    else:
        tables = [as_condition_table(t) for t in conditions]
        sides = sorted({parse_resample(r).side for r in resample})
        groups = resample_groups(key, tables, resample, ids_with_trials(key, sides))
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (1 << 63))
    m, s = multiplicities(groups, bootstrap, seed, method)
    check_multiplicities(m, s)
    return groups, m, s, seed


def add_intervals(
    ds: xr.Dataset,
    systems: Sequence[xr.Dataset],
    key: xr.Dataset,
    *,
    conditions: Sequence[ConditionTable | str],
    resample: Sequence[str],
    bootstrap: int,
    ci: float | None = None,
    seed: int | None = None,
    compare: bool = False,
    split_every: int,
    progress: bool | None = None,
    binnings: Sequence[Any] | None = None,
    keep_replicates: bool = False,
    summaries: Sequence[Any] | None = None,
    by: Sequence[Any] = (),
    bootstrap_method: str = "multinomial",
    _draws: tuple[Any, np.ndarray, np.ndarray, int] | None = None,
) -> xr.Dataset:
    """``ds`` (an evaluation of ``systems`` against ``key``) with bootstrap intervals.

    Parameters
    ----------
    conditions
        Condition tables holding the ``resample`` columns.
    resample
        ``model.COL`` and/or ``segment.COL``: the groups resampled on each side.
    bootstrap, ci, seed
        Resamples, interval level (default 0.95), the seed of :func:`numpy.random.default_rng`
        (``None``: a fresh one, recorded in ``attrs["bootstrap_seed"]``).
    compare
        Also compare every pair of systems (``compare_*`` variables along ``pair``).
    bootstrap_method
        ``"multinomial"`` (each side draws as many groups as it has, with replacement) or
        ``"poisson"`` (every group's multiplicity from Poisson(1)):
        :mod:`~bosaris_dask.bootstrap.resample` (``attrs["bootstrap_method"]``).
    binnings
        Coarse bins per system (:class:`~bosaris_dask.bootstrap.bins.Binning`) instead of the
        chosen ones (tests); the Bayes thresholds must be edges.
    keep_replicates
        Also keep every resample's metrics (``replicate_*``, along ``resample``; 0 = the data).
    summaries
        The evaluation's :class:`~bosaris_dask.passes.score_summary.ScoreSummary` objects: the bins
        are then chosen from their exact counts instead of a pass of their own.
    by
        The evaluation's ``--by`` specs: also intervals per condition (``condition_*_ci``),
        from the same pass and the same resamples, on the system's bins.

    Returns
    -------
    xarray.Dataset
        With ``eer_ci``, ``cllr_ci``, ``min_cllr_ci``, ``cllr_cal_ci`` (``system``, ``bound``) and
        ``act_dcf_ci``, ``min_dcf_ci`` (``system``, ``plo``, ``bound``; NaN off the reported
        operating points), ``*_binned``, and ``attrs`` ``bootstrap``, ``ci``, ``bootstrap_seed``,
        ``resample``, ``bootstrap_bins``, ``bootstrap_groups``, ``bootstrap_degenerate``,
        ``bootstrap_pair_factor`` (the group pairs of all chunks over ``G_model * G_segment``: 1
        when no group's ids are split between chunks; the bootstrap pass's matrix products grow with
        it); ``attrs["passes"]`` counts the bootstrap's passes (one, or two when the bins need a
        pass of their own).
    """
    from bosaris_dask.inputs import pass_inputs

    level, bootstrap = check_options(ci, bootstrap, resample, compare, conditions)
    if compare and len(systems) < 2:
        raise OptionError(f"{option('compare')} needs at least two systems")
    # drawn and checked before any pass (by evaluate_with_intervals before the evaluation's)
    groups, m, s, seed = _draws or _draw(key, conditions, resample, bootstrap, seed,
                                         bootstrap_method)  # fmt: skip
    if _draws is None:  # (else warned already), once the options are known to be good
        warn_if_few(bootstrap, level)
    names = [str(n) for n in ds.system.values]
    is_op = ds.operating_point.values >= 0
    plo = ds.plo.values[is_op]
    cp = ds.attrs.get("cprimary_priors")  # their Bayes thresholds bin edges too
    cp_plo = measures.stated_plo(np.asarray(cp, dtype=np.float64)) if cp is not None else None
    thresholds = -plo if cp_plo is None else -np.concatenate([plo, cp_plo])
    inputs, dtype = pass_inputs(systems, key)
    passes = 1
    if binnings is None:
        n_groups = groups.n_model + groups.n_segment
        per = ds.sizes.get("condition", 1) if by else 1  # a histogram per condition with --by
        nb = choose_bins(bootstrap + 1, len(systems), split_every, n_groups, per)
        if summaries is None:
            hists = prefix_histograms(inputs, dtype, split_every=split_every, progress=progress)
            passes += 1
        else:
            hists = [summary_prefix_counts(x, dtype) for x in summaries]
        binnings = [choose_edges(t, n, dtype, nb, thresholds) for t, n in hists]
    inputs, pin = _merged_rows(inputs, groups)
    cond = _condition_index(key, conditions, by, inputs) if by else None
    results = resample_histograms(
        inputs, m, s, groups.model_codes, groups.segment_codes, binnings, names,
        split_every=min(split_every, MERGE_EVERY), progress=progress, pin_blas=pin,
        conditions=None if cond is None else cond[0], n_conditions=0 if cond is None else cond[1],
        cells=groups.arrays(inputs[0].chunks) if isinstance(groups, CellGroups) else None,
    )  # fmt: skip
    reps = []
    for k, (res, binning) in enumerate(zip(results, binnings, strict=True)):
        if res.tar[0].sum() != int(ds.n_target[k]) or res.non[0].sum() != int(ds.n_nontarget[k]):
            raise BosarisError(
                f"{names[k]}: the bootstrap pass counted {res.tar[0].sum()} targets and "
                f"{res.non[0].sum()} non-targets, the evaluation {int(ds.n_target[k])} and "
                f"{int(ds.n_nontarget[k])}: the data changed between passes"
            )
        reps.append(replicate_metrics(res.tar, res.non, res.sp_tar, res.sp_non, plo,
                                      binning.edge_index(-plo)))  # fmt: skip
    out = interval_variables(ds, reps, level, is_op)
    whole = None
    if cond is not None:
        variables, creps = condition_interval_variables(ds, results, binnings, plo, level, is_op,
                                                bootstrap)  # fmt: skip
        out |= variables
        whole = variables["condition_bootstrap_whole"][1]
        _warn_whole(whole, ds.condition.values)
        if compare:
            out |= condition_compare_variables(ds, creps, level, is_op, len(names), whole)
        if "equalized_eer" in ds:
            out |= equalized_interval_variables(ds, results, binnings, plo, level, is_op, compare)
    if cp_plo is not None:
        out |= cprimary_interval_variables(ds, results, binnings, cp_plo, level, compare, whole)
    if compare:
        out |= compare_variables(ds, reps, level, is_op, names)
    if keep_replicates:
        for name in (*METRICS, *PER_POINT):
            arr = np.stack([r[name] for r in reps])
            dims = ("system", "resample") + (("operating_point_index",) if arr.ndim == 3 else ())
            out["replicate_" + name] = (dims, arr)
    ds = ds.assign(out).assign_coords(bound=list(BOUNDS))
    if compare:
        pairs = list(itertools.combinations(range(len(names)), 2))
        ds = ds.assign_coords(pair=[f"{names[i]} - {names[j]}" for i, j in pairs],
                              first=("pair", [names[i] for i, _ in pairs]),
                              second=("pair", [names[j] for _, j in pairs]))  # fmt: skip
    describe(ds, level, two_way=len(groups.specs) > 1)
    degenerate = int(max(np.isnan(r["eer"][1:]).sum() for r in reps))
    spread = _pair_factor(groups, inputs[0].chunks)
    ds.attrs.update(
        bootstrap=bootstrap, ci=level, bootstrap_seed=seed, bootstrap_method=bootstrap_method,
        resample=[str(x) for x in groups.specs], bootstrap_bins=[b.n_bins for b in binnings],
        bootstrap_groups=[groups.n_model, groups.n_segment], bootstrap_degenerate=degenerate,
        bootstrap_pair_factor=spread,
        passes=int(ds.attrs.get("passes", 0)) + passes,
    )  # fmt: skip
    return ds


def _warn_whole(whole: np.ndarray, labels: np.ndarray) -> None:
    """A :class:`BootstrapWarning` naming the conditions without intervals because every
    resample holds their trials in the data's proportions (``whole``: system x condition)."""
    found = [str(c) for c, w in zip(labels, whole.any(axis=0), strict=True) if w]
    if found:
        shown = ", ".join(repr(c) for c in found[:3]) + (", ..." if len(found) > 3 else "")
        warnings.warn(
            f"{have(len(found), 'condition')} no bootstrap intervals ({shown}): every resample "
            "holds the trials of each in the data's proportions, as when a condition's trials "
            "are of one resampled group, drawn whole or not at all (a resampled column nested "
            "in the condition); resample a finer column to get intervals",
            BootstrapWarning, stacklevel=3,
        )  # fmt: skip


def _condition_index(
    key: xr.Dataset, conditions: Sequence[Any], by: Sequence[Any], inputs: list[Any]
) -> tuple[Any, int]:
    """Each cell's condition under ``by`` (lazy, in the inputs' chunks), and how many (from
    tables, or given: a packed list's :class:`~bosaris_dask.conditions.cells.CellConditions`)."""
    from bosaris_dask.conditions.evaluation import _conditions_of

    cond = _conditions_of(key, conditions, by)
    return cond.group_index(inputs[0].chunks), cond.n_conditions


def _merged_rows(inputs: list[Any], groups: Any) -> tuple[list[Any], bool]:
    """The inputs with their row chunks merged into fewer, even ones (at most
    ``bosaris_dask.bootstrap-chunk`` bytes each) when that lowers :func:`_pair_factor` by a
    fifth or more: a model group split between row chunks costs the pass's matrix products once
    per chunk. Only on the threaded scheduler: a distributed cluster keeps the chunks, whose
    tasks the memory check sized for its workers (merged ones can take several times their
    memory: 3.3 GB against 0.9 GB of peak RSS at 1e8 trials in 6 row chunks merged into 2).
    Also whether the tasks pin the BLAS to one thread: yes when there are at least as many
    chunks as cores (the tasks run in parallel), no for fewer (a task then runs its blocks in
    threads, or its one block with a threaded BLAS)."""
    chunks = inputs[0].chunks
    client = current_client()
    cores = memory.cluster_threads(client)
    if client is not None:
        return inputs, len(chunks[0]) * len(chunks[1]) >= cores
    n_rows = sum(chunks[0])
    per_row = sum(a.dtype.itemsize for a in inputs) * max(chunks[1])
    fewest = -(-n_rows * per_row // config.get("bootstrap-chunk"))
    best, best_factor = chunks, _pair_factor(groups, chunks)
    for n in sorted({min(cores, len(chunks[0])), 1}, reverse=True):
        if n >= len(chunks[0]) or n < fewest:
            continue
        size = -(-n_rows // n)
        rows = (size,) * (n_rows // size) + ((n_rows % size,) if n_rows % size else ())
        factor = _pair_factor(groups, (rows, chunks[1]))
        if factor <= 0.8 * best_factor:
            best, best_factor = (rows, chunks[1]), factor
    if best is not chunks:
        inputs = [a.rechunk(best) for a in inputs]
    return inputs, len(best[0]) * len(best[1]) >= cores


def _pair_factor(groups: Any, chunks: tuple[tuple[int, ...], ...]) -> float:
    """The group pairs the chunks hold, summed over chunks, over ``G_model * G_segment``: the
    bootstrap pass's work relative to groups whose ids are never split between chunks."""
    if isinstance(groups, CellGroups):
        return groups.pair_factor(chunks)
    total = []
    for codes, sizes in ((groups.model_codes, chunks[0]), (groups.segment_codes, chunks[1])):
        edges = np.cumsum([0, *sizes])
        total.append(sum(len(np.unique(codes[a:b])) for a, b in zip(edges[:-1], edges[1:],
                                                                     strict=True)))  # fmt: skip
    return float(total[0] * total[1] / (groups.n_model * groups.n_segment))
