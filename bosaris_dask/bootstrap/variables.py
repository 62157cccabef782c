"""The bootstrap's resamples as Dataset variables: percentile intervals, paired comparisons of
systems, per condition too, with their units and definitions.

Each system's replicate metrics (:func:`~bosaris_dask.bootstrap.replicates.replicate_metrics`:
row 0 the data itself, rows 1..B the resamples) become ``<metric>_ci`` and ``<metric>_binned``;
pairs of systems ``compare_<metric>`` (exact difference), ``_ci`` (the resamples' paired
differences), ``_p_better`` and, for the binned metrics, ``_resolution``; with conditions the
same with a ``condition`` dimension. Per-point metrics are laid out along the evaluation's
``plo`` (NaN off the reported operating points).

Examples
--------
>>> import numpy as np
>>> percentile_interval(np.arange(101.0)[:, None], 0.9)
array([[ 5., 95.]])
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import xarray as xr

from bosaris_dask.bootstrap.replicates import (
    BINNED,
    BINNED_BELOW,
    METRICS,
    PER_POINT,
    replicate_metrics,
    scaled_copies,
)
from bosaris_dask.errors import BosarisError

__all__ = [
    "BINNED",
    "percentile_interval",
    "interval_variables",
    "interval_resolution",
    "compare_variables",
    "condition_interval_variables",
    "condition_compare_variables",
    "equalized_rows",
    "equalized_interval_variables",
    "cprimary_interval_variables",
    "describe",
]


def percentile_interval(values: np.ndarray, level: float) -> np.ndarray:
    """Percentile interval along axis 0 (NaN rows left out): shape ``values.shape[1:] + (2,)``."""
    with np.errstate(all="ignore"):
        if np.all(np.isnan(values)):
            return np.full(values.shape[1:] + (2,), np.nan)
        q = np.nanquantile(values, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return np.moveaxis(q, 0, -1)


def condition_interval_variables(
    ds, results, binnings, plo, level, is_op, bootstrap
) -> tuple[dict[str, Any], dict[tuple[int, int], dict[str, np.ndarray]]]:
    """``condition_<metric>_ci`` (``system``, ``condition``[, ``plo``], ``bound``),
    ``condition_bootstrap_degenerate`` (how many of the ``bootstrap`` resamples each interval
    left out) and ``condition_bootstrap_whole`` (conditions whose resamples are all the data's
    trials scaled, :func:`~bosaris_dask.bootstrap.replicates.scaled_copies`: NaN intervals, not
    intervals of no width), and every other (system, condition)'s replicate metrics (those
    with targets and non-targets)."""
    n_sys, n_cond = ds.sizes["system"], ds.sizes["condition"]
    reps: dict[tuple[int, int], dict[str, np.ndarray]] = {}
    # resamples that drew no target or no non-target of a condition (all of them where the
    # condition has none): left out of its intervals
    left_out = np.full((n_sys, n_cond), int(bootstrap), dtype=np.int64)
    whole = np.zeros((n_sys, n_cond), dtype=bool)
    out = {name: np.full((n_sys, n_cond, 2), np.nan) for name in METRICS}
    out |= {name: np.full((n_sys, n_cond, ds.sizes["plo"], 2), np.nan) for name in PER_POINT}
    below = {name: np.full(out[name].shape[:-1], np.nan) for name in BINNED}
    for k, pooled in enumerate(results):
        for g, res in enumerate(pooled.conditions):
            counted = (int(res.tar[0].sum()), int(res.non[0].sum()))
            expected = (int(ds.condition_n_target[k, g]), int(ds.condition_n_nontarget[k, g]))
            if counted != expected:
                raise BosarisError(
                    f"condition {g} of system {k + 1}: the bootstrap pass counted {counted[0]} "
                    f"targets and {counted[1]} non-targets, the evaluation {expected[0]} and "
                    f"{expected[1]}"
                )
            if not (counted[0] and counted[1]):
                continue
            rep = replicate_metrics(res.tar, res.non, res.sp_tar, res.sp_non, plo,
                                    binnings[k].edge_index(-plo))  # fmt: skip
            left_out[k, g] = int(np.isnan(rep["eer"][1:]).sum())
            if scaled_copies(res.tar, res.non):  # e.g. a condition of one resampled speaker
                whole[k, g] = True
                continue
            reps[k, g] = rep
            for name in METRICS:
                out[name][k, g] = percentile_interval(rep[name][1:, None], level)[0]
            for name in PER_POINT:
                out[name][k, g, is_op] = percentile_interval(rep[name][1:], level)
            for name in BINNED:
                if name in PER_POINT:
                    below[name][k, g, is_op] = interval_resolution(rep, name)
                else:
                    below[name][k, g] = interval_resolution(rep, name)
    variables = {
        f"condition_{name}_ci": (("system", "condition")
                                 + (("plo",) if name in PER_POINT else ()) + ("bound",), arr)
        for name, arr in out.items()
    }  # fmt: skip
    for name, arr in below.items():
        dims = ("system", "condition", "plo") if name in PER_POINT else ("system", "condition")
        variables[f"condition_{name}_ci_resolution"] = (dims, arr)
    variables["condition_bootstrap_degenerate"] = (("system", "condition"), left_out)
    variables["condition_bootstrap_whole"] = (("system", "condition"), whole)
    return variables, reps


def equalized_rows(tar: np.ndarray, non: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The partition-equalized histogram of each resample: ``(partitions, rows, bins)``
    weighted counts to ``(rows, bins)`` shares, each partition's counts over its own total,
    averaged over the partitions with trials of that class (per class, as
    :mod:`bosaris_dask.conditions.equalized` defines it); a row without targets (or
    non-targets) in every partition is all zero there.

    >>> tar = np.array([[[1, 1]], [[0, 4]]])  # 2 partitions, 1 row, 2 bins
    >>> non = np.array([[[2, 0]], [[0, 0]]])
    >>> [a.tolist() for a in equalized_rows(tar, non)]
    [[[0.25, 0.75]], [[1.0, 0.0]]]
    """

    def shares(counts: np.ndarray) -> np.ndarray:
        n = counts.sum(axis=2, keepdims=True)
        has = n > 0
        fractions = np.divide(counts, n, out=np.zeros(counts.shape), where=has).sum(axis=0)
        parts = has.sum(axis=0)
        return np.divide(fractions, parts, out=np.zeros(fractions.shape), where=parts > 0)

    return shares(tar), shares(non)


#: The equalized shares of a resample in integer units of ``2**-EQUALIZED_BITS`` (the hulls
#: take integer counts): each rate within ``bins * 2**-(EQUALIZED_BITS + 1)`` of its value.
EQUALIZED_BITS = 30


def _equalized_units(pooled: Any) -> list[np.ndarray]:
    """A system's equalized resample histograms (:func:`equalized_rows` of its conditions'),
    in integer units of ``2**-EQUALIZED_BITS``."""
    shares = equalized_rows(np.stack([c.tar for c in pooled.conditions]),
                            np.stack([c.non for c in pooled.conditions]))  # fmt: skip
    return [np.rint(share * 2.0**EQUALIZED_BITS) for share in shares]


def equalized_interval_variables(
    ds, results, binnings, plo, level, is_op, compare=False
) -> dict[str, Any]:
    """``equalized_eer_ci`` (``system``, ``bound``), ``equalized_act_dcf_ci`` and
    ``equalized_min_dcf_ci`` (``system``, ``plo``, ``bound``): each resample's equalized
    curve (:func:`equalized_rows` of its per-condition histograms, on the system's bins, its
    shares rounded to :data:`EQUALIZED_BITS` bits), the EER and minDCF at the bins'
    resolution, actDCF at its threshold (a bin edge). With ``compare``, their paired
    differences ``compare_equalized_*`` along ``pair`` (:func:`compare_variables`)."""
    n_sys, n_plo = ds.sizes["system"], ds.sizes["plo"]
    eer = np.full((n_sys, 2), np.nan)
    dcf = {name: np.full((n_sys, n_plo, 2), np.nan) for name in PER_POINT}
    reps = []
    for k, pooled in enumerate(results):
        units = _equalized_units(pooled)
        zero = np.zeros(units[0].shape[0])  # (no equalized Cllr)
        rep = replicate_metrics(*units, zero, zero, plo, binnings[k].edge_index(-plo))
        eer[k] = percentile_interval(rep["eer"][1:, None], level)[0]
        for name in PER_POINT:
            dcf[name][k, is_op] = percentile_interval(rep[name][1:], level)
        reps.append(_prefixed(rep, "equalized_"))
    out = {"equalized_eer_ci": (("system", "bound"), eer)} | {
        f"equalized_{name}_ci": (("system", "plo", "bound"), arr) for name, arr in dcf.items()
    }
    if compare:
        names = ("eer", *PER_POINT)
        out |= compare_variables(ds, reps, level, is_op, range(n_sys),
                                 metrics=tuple(f"equalized_{n}" for n in names),
                                 binned=tuple(f"equalized_{n}" for n in names if n in BINNED),
                                 per_point=tuple(f"equalized_{n}" for n in PER_POINT))  # fmt: skip
    return out


def _prefixed(rep: dict[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    """A system's replicate metrics under the names of their variables (``equalized_eer``)."""
    return {prefix + name: values for name, values in rep.items()}


def cprimary_interval_variables(
    ds, results, binnings, cp_plo, level, compare=False, whole=None
) -> dict[str, Any]:
    """``cprimary_act_ci`` and ``cprimary_min_ci`` (``system``, ``bound``), with conditions
    ``condition_cprimary_*_ci`` (``system``, ``condition``, ``bound``) and equalized
    ``equalized_cprimary_*_ci``: the intervals of each resample's mean over the Cprimary
    priors (their Bayes thresholds ``-cp_plo`` bin edges) of the normalized actDCF (exact)
    and minDCF (at the bins' resolution: each minimum's ``*_ci_resolution``, the mean of the
    priors' bounds), from the resamples the other intervals use. With ``compare``, the paired
    differences along ``pair`` (:func:`compare_variables`): pooled ``compare_cprimary_act``/
    ``_min``, per condition ``condition_compare_cprimary_*`` and equalized
    ``compare_equalized_cprimary_*``. ``whole`` (with conditions): the conditions without
    intervals, ``condition_bootstrap_whole`` of :func:`condition_interval_variables`."""
    n_sys = ds.sizes["system"]

    def replicates(k: int, tar, non, sp_tar=None, sp_non=None) -> dict[str, np.ndarray]:
        zero = np.zeros(tar.shape[0])
        rep = replicate_metrics(tar, non, zero if sp_tar is None else sp_tar,
                                zero if sp_non is None else sp_non, cp_plo,
                                binnings[k].edge_index(-cp_plo))  # fmt: skip
        return {"cprimary_act": rep["act_dcf"].mean(axis=1),
                "cprimary_min": rep["min_dcf"].mean(axis=1),
                "cprimary_min_bound": rep["min_dcf_bound"].mean(axis=1)}  # fmt: skip

    def intervals(rep: dict[str, np.ndarray]) -> np.ndarray:
        """(act low, act high, min low, min high, min's resolution)"""
        return np.concatenate([percentile_interval(rep["cprimary_act"][1:, None], level)[0],
                               percentile_interval(rep["cprimary_min"][1:, None], level)[0],
                               [interval_resolution(rep, "cprimary_min")]])  # fmt: skip

    def variables(prefix: str, dims: tuple[str, ...], values: np.ndarray) -> dict[str, Any]:
        return {f"{prefix}cprimary_act_ci": ((*dims, "bound"), values[..., 0:2]),
                f"{prefix}cprimary_min_ci": ((*dims, "bound"), values[..., 2:4]),
                f"{prefix}cprimary_min_ci_resolution": (dims, values[..., 4])}  # fmt: skip

    names, binned = ("cprimary_act", "cprimary_min"), ("cprimary_min",)
    reps = [replicates(k, r.tar, r.non, r.sp_tar, r.sp_non) for k, r in enumerate(results)]
    out = variables("", ("system",), np.array([intervals(rep) for rep in reps]))
    if "condition_cprimary_act" in ds:
        cond = np.full((n_sys, ds.sizes["condition"], 5), np.nan)
        creps = {}
        for k, r in enumerate(results):
            for g, c in enumerate(r.conditions):
                if c.tar[0].sum() and c.non[0].sum() and not whole[k, g]:
                    creps[k, g] = replicates(k, c.tar, c.non)
                    cond[k, g] = intervals(creps[k, g])
        out |= variables("condition_", ("system", "condition"), cond)
        if compare:
            out |= condition_compare_variables(ds, creps, level, None, n_sys, whole,
                                               metrics=names, binned=binned)  # fmt: skip
    if "equalized_cprimary_act" in ds:
        ereps = [replicates(k, *_equalized_units(r)) for k, r in enumerate(results)]
        out |= variables("equalized_", ("system",), np.array([intervals(r) for r in ereps]))
        if compare:  # as the pooled ones, named equalized_cprimary_*
            ereps = [_prefixed(rep, "equalized_") for rep in ereps]
            out |= compare_variables(ds, ereps, level, None, range(n_sys),
                                     metrics=tuple(f"equalized_{n}" for n in names),
                                     binned=tuple(f"equalized_{n}" for n in binned))  # fmt: skip
    if compare:  # the pooled Cprimary's paired differences, as the other metrics'
        out |= compare_variables(ds, reps, level, None, range(n_sys), metrics=names,
                                 binned=binned)  # fmt: skip
    return out


def condition_compare_variables(
    ds, reps, level, is_op, n_sys, whole, metrics=(*METRICS, *PER_POINT), binned=BINNED
) -> dict[str, Any]:
    """``condition_compare_<metric>`` (``pair``, ``condition``[, ``plo``]) with its ``_ci``
    and ``_p_better``: :func:`compare_variables` per condition, from the same resamples (NaN
    where either system has no targets or no non-targets in the condition; only the exact
    difference where either's resamples are copies of its data, ``whole``)."""
    pairs = list(itertools.combinations(range(n_sys), 2))
    n_cond, n_plo = ds.sizes["condition"], ds.sizes["plo"]
    out: dict[str, Any] = {}
    for name in metrics:
        per_point = name in PER_POINT
        tail = (n_plo,) if per_point else ()
        point = np.full((len(pairs), n_cond, *tail), np.nan)
        ci = np.full((len(pairs), n_cond, *tail, 2), np.nan)
        p_better = np.full((len(pairs), n_cond, *tail), np.nan)
        resolution = np.full((len(pairs), n_cond, *tail), np.nan)
        exact = ds[f"condition_{name}"].values
        for p, (i, j) in enumerate(pairs):
            for g in range(n_cond):
                if (i, g) not in reps or (j, g) not in reps:
                    if all((k, g) in reps or whole[k, g] for k in (i, j)):  # no interval
                        point[p, g] = exact[i, g] - exact[j, g]
                        if per_point:
                            point[p, g, ~is_op] = np.nan
                    continue
                diff = reps[i, g][name][1:] - reps[j, g][name][1:]  # (B,) or (B, n_ops)
                with np.errstate(invalid="ignore"):
                    better = np.where(np.isnan(diff), np.nan, diff < 0)
                    frac = np.nanmean(better, axis=0)
                pair_exact = [exact[k, g][is_op] if per_point else exact[k, g] for k in (i, j)]
                off = (resolution_of(reps[i, g], reps[j, g], name, *pair_exact)
                       if name in binned else np.nan)  # fmt: skip
                if per_point:
                    point[p, g] = exact[i, g] - exact[j, g]
                    point[p, g, ~is_op] = np.nan
                    ci[p, g, is_op] = percentile_interval(diff, level)
                    p_better[p, g, is_op] = frac
                    resolution[p, g, is_op] = off
                else:
                    point[p, g] = exact[i, g] - exact[j, g]
                    ci[p, g] = percentile_interval(diff, level)
                    p_better[p, g] = frac
                    resolution[p, g] = off
        dims = ("pair", "condition", "plo") if per_point else ("pair", "condition")
        out[f"condition_compare_{name}"] = (dims, point)
        out[f"condition_compare_{name}_ci"] = ((*dims, "bound"), ci)
        out[f"condition_compare_{name}_p_better"] = (dims, p_better)
        if name in binned:
            out[f"condition_compare_{name}_resolution"] = (dims, resolution)
    return out


def describe(ds: xr.Dataset, level: float, *, two_way: bool = True) -> None:
    """``units`` and ``long_name`` of the bootstrap's variables (as the evaluation's have):
    ``two_way`` where both sides were resampled, else a bootstrap of one side."""
    from bosaris_dask.result_layout import ATTRS

    pct = f"{100 * level:g}%" + (" two-way" if two_way else "") + " bootstrap"
    for name in (*METRICS, *PER_POINT):
        units, long_name = ATTRS[name]
        short = long_name.split(":")[0]
        side = "above" if name in BINNED_BELOW else "below"
        text = {
            f"{name}_ci": f"{pct} percentile interval of {short}",
            f"condition_{name}_ci": f"{pct} percentile interval of {short}, per condition",
            f"{name}_binned": f"{short} of the data from the bootstrap's coarse bins",
            f"{name}_ci_resolution": f"bound on how far {side} the ends of {name}_ci (the "
            "bins') the exact bootstrap's are",
            f"condition_{name}_ci_resolution": f"bound on how far {side} the ends of "
            f"condition_{name}_ci (the bins') the exact bootstrap's are",
            f"compare_{name}": f"{short} of the first system minus the second's (exact)",
            f"compare_{name}_ci": f"{pct} paired interval of compare_{name}",
            f"compare_{name}_p_better": f"fraction of resamples where the first's {short} is lower",
            f"compare_{name}_resolution": f"bound on how far any resample's binned difference of "
            f"{short} is from its exact one (so the interval's ends from the exact bootstrap's): "
            "differences within it are not resolved",
            f"condition_compare_{name}_resolution": f"bound on how far any resample's binned "
            f"difference of {short} in the condition is from its exact one",
            f"condition_compare_{name}": f"{short} of the first system minus the second's "
            "(exact), per condition",
            f"condition_compare_{name}_ci": f"{pct} paired interval of condition_compare_{name}",
            f"condition_compare_{name}_p_better": f"fraction of resamples where the first's "
            f"{short} is lower, per condition",
        }
        for var, long in text.items():
            if var in ds.variables:
                ds[var].attrs.update(units="fraction" if var.endswith("_p_better") else units,
                                     long_name=long)  # fmt: skip
    _describe_by_name(ds, pct)
    ds["bound"].attrs.update(units="", long_name="low and high end of an interval")
    if "condition_bootstrap_degenerate" in ds.variables:
        ds["condition_bootstrap_degenerate"].attrs.update(
            units="resamples", long_name="resamples with no target or no non-target of the "
            "condition, left out of its intervals",
        )  # fmt: skip
    if "condition_bootstrap_whole" in ds.variables:
        ds["condition_bootstrap_whole"].attrs.update(
            units="", long_name="every resample holds the condition's trials in the data's "
            "proportions (one resampled group): no interval",
        )  # fmt: skip


def _describe_by_name(ds: xr.Dataset, pct: str) -> None:
    """The attributes of the variables :func:`describe` has no words for (Cprimary's and the
    equalized metrics' intervals, comparisons and resolutions), after the variable they are of.
    """
    for var in [str(v) for v in ds.data_vars if "long_name" not in ds[v].attrs]:
        # a comparison per condition is worded as the pooled one, of the condition's metric
        pooled = var.replace("condition_compare_", "compare_", 1)
        of = "condition_" if pooled != var else ""
        base = pooled.removeprefix("compare_").removesuffix("_ci").removesuffix("_ci_resolution")
        base = base.removesuffix("_p_better").removesuffix("_resolution")
        source = of + base
        if source not in ds or base == pooled:
            continue
        units = ds[source].attrs.get("units", "")
        metric = base.removeprefix("condition_").removeprefix("equalized_")
        binned = metric in (*BINNED, "cprimary_min")
        if var == f"{base}_ci":
            how = "exact"
            if base.startswith("equalized_"):
                how = "exact, the conditions' shares rounded to 2**-30"
            if binned:
                bound = f"{base}_ci_resolution"
                how = (f"binned: the exact bootstrap's ends at most {bound} below" if bound in ds
                       else "binned: its ends at or above the exact bootstrap's, no bound "
                       "computed")  # fmt: skip
            long = f"{pct} percentile interval of {base} ({how})"
        elif var == f"{base}_ci_resolution":
            long = f"bound on how far below the ends of {base}_ci the exact bootstrap's are"
        elif pooled == f"compare_{base}":
            long = f"{source} of the first system minus the second's (exact)"
        elif pooled == f"compare_{base}_ci":
            long = f"{pct} paired interval of {of}compare_{base}"
        elif pooled == f"compare_{base}_p_better":
            units = "fraction"
            long = f"fraction of resamples where the first's {source} is lower"
        elif pooled == f"compare_{base}_resolution":
            long = (f"bound on how far any resample's binned difference of {source} is from "
                    "its exact one")  # fmt: skip
        else:
            continue
        ds[var].attrs.update(units=units, long_name=long)


def _per_plo(ds: xr.Dataset, values: np.ndarray, is_op: np.ndarray) -> np.ndarray:
    """``(..., n_ops, *)`` values at the operating points into ``(..., n_plo, *)``, NaN off."""
    shape = list(values.shape)
    shape[1] = ds.sizes["plo"]
    out = np.full(shape, np.nan)
    out[:, is_op] = values
    return out


def interval_variables(ds, reps, level, is_op) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in METRICS:
        out[name + "_ci"] = (
            ("system", "bound"),
            np.stack([percentile_interval(r[name][1:, None], level)[0] for r in reps]),
        )
    for name in PER_POINT:
        ci = np.stack([percentile_interval(r[name][1:], level) for r in reps])
        out[name + "_ci"] = (("system", "plo", "bound"), _per_plo(ds, ci, is_op))
    for name in BINNED:
        binned = np.stack([r[name][0] for r in reps])
        below = np.stack([interval_resolution(r, name) for r in reps])
        if name in PER_POINT:
            out[name + "_binned"] = (("system", "plo"), _per_plo(ds, binned, is_op))
            out[name + "_ci_resolution"] = (("system", "plo"), _per_plo(ds, below, is_op))
        else:
            out[name + "_binned"] = ("system", binned)
            out[name + "_ci_resolution"] = ("system", below)
    return out


def interval_resolution(rep: dict[str, np.ndarray], name: str) -> np.ndarray:
    """How far from a binned metric's interval ends the exact bootstrap's can be (below them;
    above for :data:`~bosaris_dask.bootstrap.replicates.BINNED_BELOW`): the most any
    resample's binned value is from its other bound (row 0, the data, left out). Each
    resample's exact value lies between the two, and a percentile moves no more than the values
    it is taken from, so each end of the exact interval is at most this from the binned one.

    >>> float(interval_resolution({"eer": np.array([0.3, 0.5, 0.25]),
    ...                            "eer_bound": np.array([0.1, 0.375, 0.25])}, "eer"))
    0.125
    """
    return np.fmax.reduce(np.abs(rep[name][1:] - rep[f"{name}_bound"][1:]), axis=0)


def resolution_of(rep_a: dict[str, np.ndarray], rep_b: dict[str, np.ndarray], name: str,
                  exact_a: Any, exact_b: Any) -> np.ndarray:  # fmt: skip
    """How far a binned difference of two systems' ``name`` (replicate metrics ``rep_*``: row 0
    the data, whose exact values are ``exact_*``, then the resamples) can be from the exact
    difference, in any row: the larger of the two systems' binning errors, each bounded by
    how far its binned value is from its other bound (on the data: from its exact value). Both
    errors have one sign (a metric's binned value is never on the other side of its exact
    one), so a difference is off by at most the larger. 0 where the two are the same on the
    data and in every resample and their exact values are equal (the same bins of the same
    scores, e.g. a system and its copy: differences of exactly 0).

    >>> a = {"eer": np.array([0.25, 0.5, 0.75]), "eer_bound": np.array([0.0, 0.375, 0.5])}
    >>> b = {"eer": np.array([0.5, 0.5, 1.0]), "eer_bound": np.array([0.0, 0.5, 0.625])}
    >>> float(resolution_of(a, b, "eer", 0.125, 0.375)), float(resolution_of(a, a, "eer", 0.125,
    ...                                                                      0.125))
    (0.375, 0.0)
    """
    binned_a, binned_b = rep_a[name], rep_b[name]
    on_data = np.fmax(np.abs(binned_a[0] - exact_a), np.abs(binned_b[0] - exact_b))
    resampled = np.fmax(interval_resolution(rep_a, name), interval_resolution(rep_b, name))
    off = np.fmax(on_data, resampled)  # (fmax: a row without a value has no difference)
    alike = (binned_a == binned_b) | (np.isnan(binned_a) & np.isnan(binned_b))
    return np.where(alike.all(axis=0) & (np.asarray(exact_a) == exact_b), 0.0, off)


def compare_variables(
    ds, reps, level, is_op, names, metrics=(*METRICS, *PER_POINT), binned=BINNED,
    per_point=PER_POINT,
) -> dict[str, Any]:  # fmt: skip
    """``compare_<metric>`` (``pair``[, ``plo``]) with its ``_ci``, ``_p_better`` and, for the
    ``binned`` metrics, ``_resolution``: each pair's exact difference, the percentile interval
    of its resamples' differences (``reps``: per system, each metric's row 0 the data, then the
    resamples) and the fraction of them where the first is lower."""
    out: dict[str, Any] = {}
    pairs = list(itertools.combinations(range(len(names)), 2))
    for name in metrics:
        at_points = name in per_point
        exact = ds[name].values[:, is_op] if at_points else ds[name].values
        diff = np.stack([reps[i][name][1:] - reps[j][name][1:] for i, j in pairs])
        with np.errstate(invalid="ignore"):
            better = np.where(np.isnan(diff), np.nan, diff < 0)
            p_better = np.nanmean(better, axis=1) if diff.size else diff
        point = np.stack([exact[i] - exact[j] for i, j in pairs])
        ci = np.stack([percentile_interval(d, level) for d in diff])
        dims: tuple[str, ...] = ("pair", "plo") if at_points else ("pair",)
        if at_points:
            point, p_better = _per_plo(ds, point, is_op), _per_plo(ds, p_better, is_op)
            ci = _per_plo(ds, ci, is_op)
        out[f"compare_{name}"] = (dims, point)
        out[f"compare_{name}_ci"] = ((*dims, "bound"), ci)
        out[f"compare_{name}_p_better"] = (dims, p_better)
        if name in binned:  # each resample's value is the bins'; on the data they are off by
            resolution = np.stack([resolution_of(reps[i], reps[j], name, exact[i], exact[j])
                                   for i, j in pairs])  # fmt: skip
            if at_points:
                resolution = _per_plo(ds, resolution, is_op)
            out[f"compare_{name}_resolution"] = (dims, resolution)
    return out
