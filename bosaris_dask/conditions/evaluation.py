"""The labelled result of an evaluation per condition, and Cprimary.

:func:`evaluate_conditions` is what :func:`bosaris_dask.metrics.evaluate` runs when given
condition tables and ``by`` specs, or Cprimary priors. The pooled variables are those of a plain
evaluation, unchanged; each per-condition variable is the pooled one's name prefixed with
``condition_`` and has a ``condition`` dimension after ``system``. :func:`condition_result`
gives one condition's results in the pooled layout.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.trials import make_key, make_scores
>>> from bosaris_dask.conditions import condition_table
>>> key = make_key(["m1", "m2"], ["s1", "s2", "s3"], [[1, -1, -1], [-1, 1, -1]])
>>> scores = make_scores(["m1", "m2"], ["s1", "s2", "s3"], [[2.0, 0.5, -1.0], [0.0, -0.5, -2.0]])
>>> models = condition_table("model", ["m1", "m2"], {"gender": ["f", "m"]})
>>> ds = evaluate_conditions(scores, key, conditions=[models], by=["model.gender"], priors=[0.5])
>>> ds.condition.values.tolist(), ds.condition_n_target.values.tolist()
(['model.gender=f', 'model.gender=m'], [[1, 1]])
>>> ds.condition_eer.values.tolist(), ds.eer.values.tolist()
([[0.0, 0.3333333333333333]], [0.25])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction
from typing import Any

import numpy as np
import xarray as xr

from bosaris_dask import measures, metrics, result_layout, roc
from bosaris_dask._deprecation import renamed_getattr
from bosaris_dask.arguments import one_or_many
from bosaris_dask.conditions import equalized
from bosaris_dask.conditions.cells import CellConditions
from bosaris_dask.conditions.codes import (
    BySpec,
    Conditions,
    condition_codes,
    parse_by,
)
from bosaris_dask.conditions.summaries import condition_summaries
from bosaris_dask.conditions.tables import ConditionTable, as_condition_table
from bosaris_dask.costs import OperatingPoint
from bosaris_dask.ece import check_plo, ece_from_summary
from bosaris_dask.engine import DEFAULT_SPLIT_EVERY, summarize
from bosaris_dask.errors import OptionError, option
from bosaris_dask.inputs import pass_inputs
from bosaris_dask.passes.exact_auc import (
    AucPart,
    ExactAuc,
    apply_exact_auc,
    exact_aucs,
    with_passes,
)
from bosaris_dask.passes.riding_auc import RidingAuc
from bosaris_dask.passes.score_summary import ScoreSummary

__all__ = ["evaluate_conditions", "conditions_and_summaries", "condition_result",
           "conditions_as_systems", "summary_cprimary", "PREFIX"]  # fmt: skip

#: The prefix of the per-condition variables.
PREFIX = "condition_"
_SCALARS = result_layout.SCALARS
_PER_PLO = result_layout.PER_PLO
#: Curves, NaN-padded: variable -> its padded dimension (``condition_`` + it per condition).
_CURVES = {name: dim for name, (dim, _) in result_layout.CURVES.items()}
#: The ECE curves computed per condition (``ece_neutral`` is the pooled one's: it depends on
#: the prior log-odds alone).
_ECE = ("ece", "ece_pav")


def summary_cprimary(summary: ScoreSummary, priors: Sequence[float]) -> tuple[float, float]:
    """Cprimary of one summary: the means over ``priors`` of the normalized actDCF and of the
    normalized minDCF (``--profile sre18``/``sre21`` set these priors:
    :func:`bosaris_dask.profiles.cprimary_priors`).

    Exact at priors whose Bayes thresholds the summary was refined for.

    Examples
    --------
    >>> s = measures.summary_from_arrays([1.0, 2.0, 3.0], [-1.0, 0.0, 1.5, -2.0])
    >>> act, mn = summary_cprimary(s, [0.5, 0.5])
    >>> act == metrics.act_dcf([1.0, 2.0, 3.0], [-1.0, 0.0, 1.5, -2.0], 0.5), mn
    (True, 0.25)
    """
    plo = measures.stated_plo(measures.check_priors(priors, "Cprimary prior"))
    norm = measures.dcf_normalizer(plo)
    act = measures.act_rates(summary, plo)["raw"] / norm
    mn = roc.min_bayes_error(summary.hull, plo)[0] / norm
    return float(np.mean(act)), float(np.mean(mn))


def _conditions_of(key: xr.Dataset, conditions: Sequence[Any], by: Sequence[Any]) -> Conditions:
    """The conditions of the key's trials: from condition tables, or given already (one
    :class:`Conditions` of the key's layout, e.g. packed lists':
    :func:`~bosaris_dask.conditions.cells.trial_conditions`) and made under the same specs."""
    if len(conditions) == 1 and isinstance(conditions[0], Conditions):
        cond = conditions[0]
        if tuple(parse_by(b) for b in by) != cond.by:
            raise OptionError(f"the conditions given were made by={[str(b) for b in cond.by]}"
                              f", not by={[str(b) for b in by]}")  # fmt: skip
        if isinstance(cond, CellConditions) and cond.cells.shape != (
            key.sizes["model"],
            key.sizes["segment"],
        ):
            raise OptionError(f"the conditions given are laid out {cond.cells.shape}, the key "
                              f"{key.sizes['model'], key.sizes['segment']}")  # fmt: skip
        return cond
    return condition_codes(key, [as_condition_table(t) for t in conditions], by)


def evaluate_conditions(
    scores: xr.Dataset | Sequence[xr.Dataset],
    key: xr.Dataset,
    **kwargs: Any,
) -> xr.Dataset:
    """:func:`~bosaris_dask.metrics.evaluate`, pooled and per condition, with Cprimary:
    the Dataset of :func:`conditions_and_summaries` (see it for the parameters)."""
    return conditions_and_summaries(scores, key, **kwargs)[0]


def conditions_and_summaries(
    scores: xr.Dataset | Sequence[xr.Dataset],
    key: xr.Dataset,
    *,
    conditions: Sequence[ConditionTable | str] = (),
    by: Sequence[str | BySpec] = (),
    cprimary_priors: Sequence[float] = (),
    priors: Sequence[float] = measures.DEFAULT_PRIORS,
    operating_points: Sequence[OperatingPoint | str] = (),
    sweep: np.ndarray | None = None,
    names: Sequence[str] | None = None,
    allow_missing: bool = False,
    progress: bool = False,
    split_every: int = DEFAULT_SPLIT_EVERY,
    equalize: bool = False,
    fmr: Sequence[float] = (),
    fnmr: Sequence[float] = (),
    ece_plo: Sequence[float] | np.ndarray | None = None,
    exact_auc: bool = False,
) -> tuple[xr.Dataset, list[ScoreSummary]]:
    """:func:`~bosaris_dask.metrics.evaluate`, pooled and per condition, with Cprimary, and the
    pooled summaries it was computed from (those of a plain evaluation, bin for bin, unless
    ``bosaris_dask.pooled-as-plain`` is off: the bootstrap takes its bins from them).

    Parameters
    ----------
    conditions
        Condition tables (:class:`ConditionTable` objects, pandas DataFrames or paths to
        read), or the
        :class:`~bosaris_dask.conditions.codes.Conditions` of the key's trials made under
        ``by`` (:func:`~bosaris_dask.conditions.cells.trial_conditions` for packed lists).
    by
        ``model.COL``, ``segment.COL``, ``same.COL`` or ``trial.COL`` specs; several give
        their Cartesian product. ``conditions`` and ``by`` go together.
    cprimary_priors
        Effective priors whose normalized actDCF and minDCF are averaged into Cprimary
        (``cprimary_act``, ``cprimary_min``; SRE21: 0.01 and 0.05).
    priors, operating_points, sweep, names, allow_missing, progress, split_every, fmr, fnmr
        As :func:`~bosaris_dask.metrics.evaluate`; the fixed-FMR/FNMR points are computed per
        condition too, each from its own trials (``condition_fixed_fmr_*``).
    ece_plo
        As :func:`~bosaris_dask.metrics.evaluate`: the ECE curves pooled (``ece``,
        ``ece_pav``, ``ece_neutral``) and per condition, each from its own trials
        (``condition_ece``, ``condition_ece_pav`` over ``system``, ``condition``,
        ``ece_plo``; NaN for a condition without targets or non-targets), their
        cross-entropy sums made in pass 1 (no extra pass).
    exact_auc
        As :func:`~bosaris_dask.metrics.evaluate`, pooled and per condition: each condition's
        ``condition_auc`` is the exact AUC of its own trials (NaN without targets or
        non-targets), from the same passes as the pooled ones: the evaluation's own when the
        targets fit the budget ``bosaris_dask.auc-limit`` (pass 1 pulls every target's key
        with its condition, the counts ride the refinement pass:
        :class:`~bosaris_dask.passes.riding_auc.RidingAuc`), else one or two extra passes (every
        condition's keys pulled and counted in them) within that one budget (pooled
        summaries first, then the conditions in order; beyond it, bounds and a note in
        ``attrs["auc_notes"]``).
    equalize
        Also the partition-equalized metrics over the conditions (NIST SRE), from the same
        passes: ``equalized_eer`` (``system``), ``equalized_act_dcf`` and
        ``equalized_min_dcf`` (``system``, ``plo``; normalized), and with Cprimary priors
        ``equalized_cprimary_act``/``equalized_cprimary_min``
        (:mod:`bosaris_dask.conditions.equalized`). Needs ``by``.

    Returns
    -------
    xarray.Dataset
        The pooled results of :func:`~bosaris_dask.metrics.evaluate`, plus ``cprimary_act`` and
        ``cprimary_min`` (``system``; the priors in ``attrs["cprimary_priors"]``) and, with
        conditions, ``condition_<name>`` for every scalar, per-prior and sweep variable
        (``system``, ``condition``[, ``plo``]). ``condition`` is labelled
        ``"model.gender=f, same.language=same"``; the curves (``condition_rocch_*``,
        ``condition_roc_*``) are NaN-padded along ``condition_vertex`` and
        ``condition_roc_point`` past ``condition_n_vertices``/``condition_n_roc_points``
        (:func:`~bosaris_dask.metrics.curve` of a :func:`condition_result` cuts them); it
        carries one coordinate per spec (named like the spec, e.g. ``same.language``);
        ``attrs["by"]`` lists the specs. A condition without a scored target or non-target has
        its counts and NaN metrics.
        ``attrs["passes"]`` counts every pass: as many as a plain evaluation (the counts per
        condition come from its pass 1).

    Raises
    ------
    OptionError
        ``conditions`` without ``by`` or the reverse, ``equalize`` without them, a bad spec
        or column, a bad prior.
    TrialError
        A key id missing from a condition table, duplicate ids.
    ParseError
        A malformed condition table (with its file and line).
    ScoreError, MissingTrialsError
        As :func:`~bosaris_dask.metrics.evaluate`. An empty condition is not an error.
    """
    systems = [scores] if isinstance(scores, xr.Dataset) else list(scores)
    conditions, by = one_or_many(conditions), one_or_many(by)
    if bool(conditions) != bool(by):
        raise OptionError(f"condition tables, {option('conditions')}, and the specs of their "
                          f"columns, {option('by')}, go together")  # fmt: skip
    if equalize and not by:
        raise OptionError(f"{option('equalize')} needs conditions to equalize over: give "
                          f"{option('conditions')} and {option('by')}")  # fmt: skip
    points = metrics.stated_operating_points(priors, operating_points)
    fmr, fnmr = metrics.check_fixed_rates(fmr, fnmr)
    plo = measures.stated_plo(points)
    sweep = measures.check_sweep(sweep, plo)
    cp = measures.check_priors(cprimary_priors, "Cprimary prior") if len(cprimary_priors) else None
    if cp is not None and len(set(cp.tolist())) < len(cp):  # the mean would weigh it twice
        raise OptionError(f"a Cprimary prior is given twice: {cp.tolist()}")
    extra_plo = measures.stated_plo(cp) if cp is not None else np.empty(0)
    thresholds = -np.concatenate([plo, sweep, extra_plo])
    names = list(names) if names is not None else None
    ce_plo = () if ece_plo is None else check_plo(ece_plo)
    if not conditions:  # the exact AUC rides along the pooled passes where it fits
        riding = RidingAuc(len(systems), names, split_every) if exact_auc else None
        pooled = summarize(systems, key, thresholds=thresholds, fmr=fmr, fnmr=fnmr,
                           cross_entropy_plo=ce_plo, allow_missing=allow_missing,
                           progress=progress, split_every=split_every, names=names,
                           rider=None if riding is None else riding.rider)  # fmt: skip
        if riding is not None and riding.served:
            exact: ExactAuc | None = riding.found()
        else:
            exact = _exact(systems, key, pooled, [], None, exact_auc, split_every, progress)
        if exact is not None:
            pooled = with_passes(pooled, exact.passes)
        ds = result_layout.results_dataset(pooled, points, sweep, fmr, fnmr)
        if exact is not None:
            ds = apply_exact_auc(ds, exact)
        return _with_cprimary(ds, pooled, cp), list(pooled)
    cond = _conditions_of(key, conditions, by)
    riding = RidingAuc(len(systems), names, split_every, grouped=True) if exact_auc else None
    result = condition_summaries(
        systems, key, cond, thresholds=thresholds, fmr=fmr, fnmr=fnmr, cross_entropy_plo=ce_plo,
        allow_missing=allow_missing, split_every=split_every, progress=progress, names=names,
        equalize=equalize, riding=riding,
    )  # fmt: skip
    ds = _with_cprimary(result_layout.results_dataset(result.pooled, points, sweep, fmr, fnmr),
                        result.pooled, cp)  # fmt: skip
    if result.equalized is not None:
        ds = equalized.add_to_dataset(ds, *result.equalized, by=[str(b) for b in cond.by],
                                      cprimary_priors=cp)  # fmt: skip
    labels = cond.labels
    texts = [condition_text(lab) for lab in labels]
    pairs = [(k, g) for k, row in enumerate(result.by_condition)
             for g, summary in enumerate(row) if summary is not None]  # fmt: skip
    if riding is not None and riding.served:  # pooled, then conditions: the order of pairs
        exact: ExactAuc | None = riding.found()
    else:
        exact = _exact(systems, key, result.pooled,
                       [(k, g, result.by_condition[k][g], texts[g]) for k, g in pairs],
                       cond, exact_auc, split_every, progress)  # fmt: skip
    pooled_summaries = list(result.pooled)
    condition_auc: dict[tuple[int, int], Fraction] = {}
    if exact is not None:
        n_pooled = len(systems)
        ds = apply_exact_auc(ds, replace(exact, values=exact.values[:n_pooled]))
        notes = [n for n in exact.notes if n]
        if notes:
            ds.attrs["auc_notes"] = notes
        condition_auc = {pair: v for pair, v in zip(pairs, exact.values[n_pooled:], strict=True)
                         if v is not None}  # fmt: skip
        pooled_summaries = with_passes(pooled_summaries, exact.passes)
    ds.attrs["passes"] = result.passes + (exact.passes if exact is not None else 0)
    data: dict[str, Any] = {}
    n_sys, n_cond, n_plo = len(systems), len(labels), ds.sizes["plo"]
    blank = {n: np.full((n_sys, n_cond), np.nan) for n in _SCALARS}
    blank |= {n: np.zeros((n_sys, n_cond), dtype=np.int64) for n in ("n_vertices", "n_roc_points")}
    blank |= {n: np.full((n_sys, n_cond, n_plo), np.nan) for n in _PER_PLO}
    if cp is not None:
        blank |= {"cprimary_act": np.full((n_sys, n_cond), np.nan),
                  "cprimary_min": np.full((n_sys, n_cond), np.nan)}  # fmt: skip
    fixed = {name: np.full((n_sys, n_cond, ds.sizes[dim]), np.nan)
             for name, (dim, _, _) in result_layout.FIXED_RATES.items() if name in ds}  # fmt: skip
    ece = {name: np.full((n_sys, n_cond, len(ce_plo)), np.nan) for name in _ECE if len(ce_plo)}
    curves: dict[tuple[int, int], dict[str, np.ndarray]] = {}
    for k, row in enumerate(result.by_condition):
        for g, summary in enumerate(row):
            if summary is None:
                continue
            values = measures.summary_metrics(summary, points, sweep)
            curves[k, g] = {name: values[name] for name in _CURVES}
            if cp is not None:
                values["cprimary_act"], values["cprimary_min"] = summary_cprimary(summary, cp)
            if (k, g) in condition_auc:
                values["auc"] = values["auc_low"] = values["auc_high"] = float(condition_auc[k, g])
            for name, arr in blank.items():
                arr[k, g] = values[name]
            for name, value in metrics.fixed_rate_metrics(summary, fmr, fnmr).items():
                fixed[name][k, g] = value
            if ece:
                curves_ece = ece_from_summary(summary)
                for name in _ECE:
                    ece[name][k, g] = curves_ece[name]
    for name, count in (("n_target", result.n_target), ("n_nontarget", result.n_nontarget),
                        ("n_missing", result.n_missing)):  # fmt: skip
        blank[name] = count.astype(np.int64)
    for name, arr in blank.items():
        dims = ("system", "condition") + (("plo",) if arr.ndim == 3 else ())
        data[PREFIX + name] = (dims, arr)
    for name, arr in fixed.items():
        data[PREFIX + name] = (("system", "condition", result_layout.FIXED_RATES[name][0]), arr)
    for name, arr in ece.items():
        data[PREFIX + name] = (("system", "condition", "ece_plo"), arr)
    for name, dim in _CURVES.items():
        rows = [curves.get((k, g), {}).get(name, []) for k in range(n_sys) for g in range(n_cond)]
        data[PREFIX + name] = (("system", "condition", PREFIX + dim),
                               result_layout.padded(rows, (n_sys, n_cond)))  # fmt: skip
    coords: dict[str, Any] = {"condition": texts}
    for spec in cond.by:
        coords[str(spec)] = ("condition", [lab[str(spec)] for lab in labels])
    ds = result_layout.with_attrs(ds.assign_coords(coords).assign(data), PREFIX)
    ds = result_layout.with_attrs(ds)  # the condition coordinate's own
    for spec in cond.by:
        ds[str(spec)].attrs.update(units="label", long_name=f"the condition's value of {spec}")
    ds.attrs["by"] = [str(b) for b in cond.by]
    return ds, pooled_summaries


def _exact(
    systems: list[xr.Dataset],
    key: xr.Dataset,
    pooled: Sequence[ScoreSummary],
    conditions: Sequence[tuple[int, int, ScoreSummary, str]],
    cond: Conditions | None,
    exact_auc: bool,
    split_every: int,
    progress: bool,
) -> ExactAuc | None:
    """The exact AUCs of the pooled summaries, then of each ``(system, condition, summary,
    label)`` in ``conditions``, from the same extra passes (``None`` unless ``exact_auc``)."""
    if not exact_auc:
        return None
    parts = [AucPart(k) for k in range(len(pooled))]
    parts += [AucPart(k, g) for k, g, _, _ in conditions]
    names = [s.name for s in pooled] + [f"{pooled[k].name} [{text}]"
                                        for k, _, _, text in conditions]  # fmt: skip
    groups = None
    if conditions and cond is not None:
        inputs, _ = pass_inputs(systems, key)
        groups = cond.group_index(inputs[0].chunks)
    return exact_aucs(
        systems, key, [*pooled, *(s for _, _, s, _ in conditions)], parts=parts, groups=groups,
        names=names, split_every=split_every, progress=progress,
    )  # fmt: skip


def _with_cprimary(
    ds: xr.Dataset, summaries: Sequence[ScoreSummary], priors: np.ndarray | None
) -> xr.Dataset:
    if priors is None:
        return ds
    values = np.array([summary_cprimary(s, priors) for s in summaries]).reshape(-1, 2)
    ds = ds.assign(cprimary_act=("system", values[:, 0]), cprimary_min=("system", values[:, 1]))
    result_layout.with_attrs(ds)
    ds.attrs["cprimary_priors"] = [float(p) for p in priors]
    return ds


def condition_result(results: xr.Dataset, condition: int | str) -> xr.Dataset:
    """One condition's results in the layout of a pooled evaluation (what plots and reports take).

    ``attrs["by"]`` is then the condition's ``{spec: value}`` dict.

    Examples
    --------
    >>> from bosaris_dask.conditions import condition_table
    >>> from bosaris_dask.trials import make_key, make_scores
    >>> key = make_key(["m1", "m2"], ["s1", "s2"], [[1, -1], [-1, 1]])
    >>> scores = make_scores(["m1", "m2"], ["s1", "s2"], [[2.0, 0.5], [-1.0, 0.5]])
    >>> segs = condition_table("segment", ["s1", "s2"], {"lang": ["a", "b"]})
    >>> ds = evaluate_conditions(scores, key, conditions=[segs], by=["segment.lang"])
    >>> one = condition_result(ds, "segment.lang=b")
    >>> one.attrs["by"], one.n_target.values.tolist(), one.n_nontarget.values.tolist()
    ({'segment.lang': 'b'}, [1], [1])
    """
    g = condition if isinstance(condition, int) else list(results.condition.values).index(condition)
    # one isel of the Dataset, not a Dataset aligned from a DataArray per variable (26 ms a
    # condition: most of a report's time with a few hundred conditions)
    names = [name for name in results.data_vars if name.startswith(PREFIX)]
    out = results[names].isel(condition=g, drop=True)
    out = out.rename_vars({name: name[len(PREFIX) :] for name in names})
    if "ece_neutral" in results:  # the same at every condition
        out["ece_neutral"] = results.ece_neutral
    out = out.drop_vars([str(b) for b in results.attrs["by"]], errors="ignore")
    out = out.rename_dims({PREFIX + d: d for d in set(_CURVES.values()) if PREFIX + d in out.dims})
    out.attrs = {k: v for k, v in results.attrs.items() if k != "by"}
    out.attrs["by"] = {str(b): str(results[str(b)].values[g]) for b in results.attrs["by"]}
    if "bootstrap_degenerate" in out.data_vars:  # the condition's own left-out resamples
        out.attrs["bootstrap_degenerate"] = int(out.bootstrap_degenerate.max())
        out = out.drop_vars("bootstrap_degenerate")
    return out


def conditions_as_systems(results: xr.Dataset, *, empty: bool = False) -> xr.Dataset:
    """The per-condition results as one pooled-layout Dataset whose ``system`` is each
    (system, condition) pair, labelled ``"name [model.gender=f]"``: any plot then draws a curve
    per condition. Conditions without targets or non-targets are left out unless ``empty``
    (their labels in ``attrs["conditions_left_out"]``).

    Examples
    --------
    >>> from bosaris_dask.conditions import condition_table
    >>> from bosaris_dask.trials import make_key, make_scores
    >>> key = make_key(["m1", "m2"], ["s1", "s2"], [[1, -1], [-1, 1]])
    >>> scores = make_scores(["m1", "m2"], ["s1", "s2"], [[2.0, 0.5], [-1.0, 0.5]])
    >>> segs = condition_table("segment", ["s1", "s2"], {"lang": ["a", "b"]})
    >>> ds = evaluate_conditions(scores, key, conditions=[segs], by=["segment.lang"])
    >>> conditions_as_systems(ds).system.values.tolist()
    ['system-1 [segment.lang=a]', 'system-1 [segment.lang=b]']
    """
    systems, labels = results.system.values, results.condition.values
    n_tar, n_non = results[PREFIX + "n_target"].values, results[PREFIX + "n_nontarget"].values
    # (condition, system) pairs, condition-major: each condition's systems in turn
    cond, system = (
        a.ravel()
        for a in np.meshgrid(np.arange(len(labels)), np.arange(len(systems)), indexing="ij")
    )
    kept = np.ones(len(cond), dtype=bool) if empty else (n_tar * n_non > 0)[system, cond]
    named = [f"{systems[j]} [{labels[g]}]" for g, j in zip(cond, system, strict=True)]
    left_out = [named[k] for k in np.flatnonzero(~kept)]
    if not kept.any():
        raise OptionError("no condition has both targets and non-targets")
    names = [name for name in results.data_vars if name.startswith(PREFIX)]
    # one pointwise isel of every per-condition variable: its (system, condition) dims become
    # one "system" of the kept pairs
    pair = {"system": ("kept", system[kept]), "condition": ("kept", cond[kept])}
    out = results[names].drop_vars([str(b) for b in results.attrs["by"]], errors="ignore")
    out = out.isel({d: xr.Variable(*v) for d, v in pair.items()}).drop_vars(list(pair))
    out = out.drop_vars([PREFIX + "bootstrap_degenerate", PREFIX + "bootstrap_whole"],
                        errors="ignore")  # fmt: skip
    out = out.rename_vars({name: name[len(PREFIX) :] for name in out.data_vars})
    out = out.rename_dims({PREFIX + d: d for d in set(_CURVES.values()) if PREFIX + d in out.dims})
    # (comparisons, which have no system, repeat along it: each pair's condition's, first)
    out = out.rename_dims(kept="system").transpose("system", ...)
    out = out.assign_coords(system=[named[k] for k in np.flatnonzero(kept)])
    if "ece_neutral" in results:  # one curve, not one per system
        out["ece_neutral"] = results.ece_neutral
    out.attrs = {k: v for k, v in results.attrs.items() if k != "by"}
    if left_out:
        out.attrs["conditions_left_out"] = left_out
    return out


__getattr__ = renamed_getattr(__name__, {"cprimary": ("summary_cprimary", summary_cprimary)})


def condition_text(label: dict[str, Any]) -> str:
    """A condition's label as one line, ``spec=value`` joined by commas; a value holding a
    comma, ``=``, a quote or a backslash is quoted (its ``repr``), so that two conditions never
    share a label.

    >>> condition_text({"model.g": "f", "segment.src": "tel, mic"})
    "model.g=f, segment.src='tel, mic'"
    """
    return ", ".join(f"{k}={_shown(str(v))}" for k, v in label.items())


def _shown(value: str) -> str:
    return repr(value) if any(c in value for c in ",='\"\\") else value
