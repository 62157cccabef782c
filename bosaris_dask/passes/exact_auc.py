"""The exact AUC at any scale: in the evaluation's own passes where the targets fit a budget.

The AUC is twice the Mann-Whitney U over twice the pairs: ``(2·#{s_tar > s_non} + #{s_tar = s_non})
/ (2·T·N)`` (ties counted half, scikit-learn's ``roc_auc_score``). An engine summary
(:class:`~bosaris_dask.passes.score_summary.ScoreSummary`) orders every pair whose trials lie in
different bins and every pair tied in an exact bin (:func:`~bosaris_dask.measures.twice_u_parts`);
only pairs inside a **mixed** coarse bin (``bits > 0``, both classes) are unknown. Here they are
counted exactly:

* **Riding along** (:class:`~bosaris_dask.passes.riding_auc.RidingAuc`): pass 1 of the evaluation
  also pulls the exact order keys (:func:`~bosaris_dask.passes.keys.order_keys`) of every scored
  target of each system (with conditions, each with its condition), sorted per chunk and
  merged, as long as they fit the budget ``bosaris_dask.auc-limit``
  (:mod:`bosaris_dask.config`): a chunk or merge over it gives up (bounded memory). The
  pass-1 summaries then say which coarse bins are mixed; the count of their pairs (pass B
  below, with the targets as ``S``, for the pooled summaries and every condition's at once)
  rides along the first refinement pass, or takes a pass of its own when the evaluation needs
  none. Each AUC is its pass-1 summary's between-bin part plus that count, whatever
  refinement does: **no** extra pass (one without refinement).
* Otherwise (a system's targets over the budget, or conditions without the grouped kernels),
  the passes run after the evaluation, with the summaries it made. The class with fewer
  trials in the mixed bins is ``S`` (usually the targets), the other ``O``. If ``S`` fits the
  budget (summed over the systems and conditions of one call), **pass A** pulls the exact
  order keys of the ``S`` trials in mixed bins: each chunk sorts its own, merge tasks merge
  sorted runs.
  When the ``O`` trials of the mixed bins fit too, pass A pulls them as well and the count is
  done on the client: **one** extra pass.
* Otherwise **pass B** counts, per chunk, for the ``O`` trials of the mixed bins, the ``S`` keys
  below, equal to and above each of them inside its bin: the chunk sorts its ``O`` keys
  (those of the mixed bins, found through a prefix table) and looks every ``S`` key and bin edge
  up in them (:func:`mixed_twice_u`): an exact integer per chunk, added exactly. **Two** extra
  passes, for every system of the call at once.
* The client adds the between-bin part and divides as a :class:`~fractions.Fraction`, rounded
  once to float64.
* With conditions (``evaluate(..., by=..., exact_auc=True)``) each condition's summary has
  mixed bins of its own (:class:`AucPart`: a system's trials in one condition). The same
  passes after the evaluation serve the pooled summaries and every condition's: each chunk
  keys a system's trials once, then hands each key to the parts whose bins and condition it
  falls in (the pooled one and its own condition's), so the extra passes are as many as
  without conditions; riding along, they ride the grouped passes
  (:func:`~bosaris_dask.passes.grouped.refine_parts`) the same way.

When ``S`` does not fit the budget the bounds stay (``auc`` NaN, ``auc_low``/``auc_high`` exact
bounds) and :func:`exact_aucs` says why in one line (:class:`ExactAucWarning`).

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.trials import make_key, make_scores
>>> from bosaris_dask.metrics import evaluate
>>> key = make_key(["m1", "m2"], ["s1", "s2", "s3"], [[1, -1, -1], [-1, 1, -1]])
>>> scores = make_scores(["m1", "m2"], ["s1", "s2", "s3"],
...                      np.array([[2.0, 0.5, 0.25], [1.0, 0.5, -1.0]]))
>>> ds = evaluate(scores, key, priors=[0.5], exact_auc=True)
>>> ds.auc.item(), ds.attrs["passes"]  # 6 of 8 pairs ordered, a tie at 0.5, 1 reversed
(0.8125, 2)

Here the count rode the refinement pass: the passes are a plain evaluation's.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import partial

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask import config, engine
from bosaris_dask.inputs import pass_inputs
from bosaris_dask.measures import twice_u_parts
from bosaris_dask.passes import runner
from bosaris_dask.passes.auc_kernels import (
    AucPart,
    MixedBins,
    Wanted,
    add_counts,
    auc_task_memory,
    check_found,
    collect_kernel,
    merge_collected,
    mixed_bins,
    mixed_twice_u,
    pair_count_kernel,
)
from bosaris_dask.passes.score_summary import ScoreSummary

__all__ = [
    "ExactAucWarning",
    "AucPart",
    "MixedBins",
    "mixed_bins",
    "mixed_twice_u",
    "exact_aucs",
    "ExactAuc",
    "apply_exact_auc",
    "with_passes",
    "auc_task_memory",
]


class ExactAucWarning(UserWarning):
    """The exact AUC was asked for but the smaller class of the mixed bins exceeds the budget."""


@dataclass(frozen=True)
class ExactAuc:
    """What :func:`exact_aucs` found for the summaries of one call.

    Attributes
    ----------
    values
        Per summary, the exact AUC (a :class:`~fractions.Fraction`) or ``None`` (bounds only).
    passes
        Passes over the data it took (0, 1 or 2).
    notes
        Per summary, why it is not exact (``""`` where it is).
    """

    values: list[Fraction | None]
    passes: int
    notes: list[str]


def exact_aucs(
    scores: xr.Dataset | Sequence[xr.Dataset],
    key: xr.Dataset,
    summaries: Sequence[ScoreSummary],
    *,
    parts: Sequence[AucPart] | None = None,
    groups: da.Array | None = None,
    names: Sequence[str] | None = None,
    split_every: int = engine.DEFAULT_SPLIT_EVERY,
    progress: bool | None = None,
    warn: bool = True,
) -> ExactAuc:
    """The exact AUC of each summary and at most two more passes, for all of them at once.

    Parameters
    ----------
    scores, key
        The systems and the key the ``summaries`` were made from
        (:func:`~bosaris_dask.engine.summarize`).
    summaries
        Their summaries: without ``parts``, one per system (same order).
    parts
        Whose trials each summary counts (one :class:`AucPart` per summary): a system's
        pooled trials or those of one of its conditions. Each trial of a system is keyed once
        per pass, for the pooled summary and every condition's together.
    groups
        The condition of every cell (``(n_models, n_segments)`` integers, e.g.
        :meth:`~bosaris_dask.conditions.codes.Conditions.group_index`): needed when a part
        has a condition.
    names
        What the notes call each summary (default: their names).
    split_every
        How many chunk results one merge task combines.
    progress
        Show a progress bar per pass.
    warn
        Warn (:class:`ExactAucWarning`) for each summary whose ``S`` trials exceed the budget.

    Returns
    -------
    ExactAuc
        The exact AUCs (``None`` where the budget ``bosaris_dask.auc-limit``, shared by every
        summary of the call in order, is too small: the note says by how much), and the passes
        taken.
    """
    systems = [scores] if isinstance(scores, xr.Dataset) else list(scores)
    parts = [AucPart(k) for k in range(len(summaries))] if parts is None else list(parts)
    names = [s.name for s in summaries] if names is None else list(names)
    limit = config.get("auc-limit")
    plans = [mixed_bins(s) for s in summaries]
    fits: list[int] = []
    notes = [""] * len(summaries)
    used = 0
    for k, (s, b) in enumerate(zip(summaries, plans, strict=True)):
        if b is None:
            continue
        if used + b.n_s <= limit:
            fits.append(k)
            used += b.n_s
        else:
            side = "targets" if b.small_is_target else "non-targets"
            notes[k] = (
                f"{names[k]}: exact AUC not computed: its mixed score bins hold {b.n_s:,} "
                f"{side}, over the budget bosaris_dask.auc-limit = {limit:,}"
                + (f" ({used:,} taken by other summaries)" if used else "")
                + f"; reporting bounds {_bounds(s)}"
            )
            if warn:
                warnings.warn(notes[k], ExactAucWarning, stacklevel=2)
    mixed: dict[int, int] = {}
    passes = 0
    if fits:
        inputs, _ = pass_inputs(systems, key)
        group_at = None
        if any(parts[k].condition is not None for k in fits):
            if groups is None:
                raise ValueError("exact_aucs: parts with conditions need groups")
            inputs = [*inputs, groups.rechunk(inputs[0].chunks)]
            group_at = len(inputs) - 1
        by_system: dict[int, list[int]] = {}
        for k in fits:
            by_system.setdefault(parts[k].system, []).append(k)
        both = used + sum(plans[k].n_o for k in fits) <= limit  # all fit: no count pass

        def wanted(ks: list[int], codes: str) -> Wanted:
            code = {"small": lambda b: (b.small_code,), "other": lambda b: (-b.small_code,),
                    "both": lambda b: (b.small_code, -b.small_code)}[codes]  # fmt: skip
            return tuple((parts[k].condition, plans[k], code(plans[k])) for k in ks)

        aggs = [
            runner.Aggregation(
                f"{names[ks[0]]} exact AUC keys",
                partial(collect_kernel, system=system, group_at=group_at,
                        wanted=wanted(ks, "both" if both else "small")),
                None, combine=merge_collected,
            )
            for system, ks in by_system.items()
        ]  # fmt: skip
        name = "exact AUC pass" if both else "exact AUC pass 1 of 2"
        n_other = sum(plans[k].n_o for k in fits)
        need = auc_task_memory(inputs, used, n_other, both, split_every)
        collected = runner.run_pass(
            name, aggs, inputs, split_every=split_every, progress=progress, need=need
        )
        passes += 1
        small_of: dict[int, np.ndarray] = {}
        for ks, per_part in zip(by_system.values(), collected, strict=True):
            for k, (small, other) in zip(ks, per_part, strict=True):
                check_found(names[k], "smaller-class", len(small), plans[k].n_s)
                small_of[k] = small
                if both:
                    mixed[k], found = mixed_twice_u(plans[k], small, other)
                    check_found(names[k], "other-class", found, plans[k].n_o)
        if not both:
            order = [k for ks in by_system.values() for k in ks]
            small_all = np.concatenate([small_of[k].astype(np.uint64) for k in order])
            ends = dict(zip(order, np.cumsum([len(small_of[k]) for k in order]), strict=True))
            at = {k: slice(int(ends[k]) - len(small_of[k]), int(ends[k])) for k in order}
            lead = [da.from_array(small_all, chunks=max(1, len(small_all))), "k"]
            aggs = [
                runner.Aggregation(
                    f"{names[ks[0]]} exact AUC counts",
                    partial(pair_count_kernel, system=system, group_at=group_at,
                            wanted=wanted(ks, "other"), at=tuple(at[k] for k in ks)),
                    None, combine=add_counts,
                )
                for system, ks in by_system.items()
            ]  # fmt: skip
            counted = runner.run_pass(
                "exact AUC pass 2 of 2", aggs, inputs, lead=lead, split_every=split_every,
                progress=progress, need=need,
            )  # fmt: skip
            passes += 1
            for ks, flat in zip(by_system.values(), counted, strict=True):
                for i, k in enumerate(ks):
                    twice_u, found = flat[2 * i], flat[2 * i + 1]
                    check_found(names[k], "other-class", found, plans[k].n_o)
                    mixed[k] = twice_u
    values: list[Fraction | None] = []
    for k, s in enumerate(summaries):
        base, _ = twice_u_parts(s)
        if plans[k] is None or k in mixed:
            values.append(Fraction(base + mixed.get(k, 0), 2 * s.n_target * s.n_nontarget))
        else:
            values.append(None)
    return ExactAuc(values, passes, notes)


def _bounds(s: ScoreSummary) -> str:
    base, unknown = twice_u_parts(s)
    total = 2 * s.n_target * s.n_nontarget
    return f"{float(Fraction(base, total)):.6f}..{float(Fraction(base + unknown, total)):.6f}"


def apply_exact_auc(ds: xr.Dataset, found: ExactAuc) -> xr.Dataset:
    """``ds`` (an evaluation's Dataset) with the exact AUCs in ``auc``, ``auc_low`` and
    ``auc_high``, ``attrs["exact_auc"] = 1`` (the table reports them), and
    ``attrs["auc_notes"]`` where a system's AUC stayed a bound."""
    out = ds.copy()
    out.attrs["exact_auc"] = 1
    for name in ("auc", "auc_low", "auc_high"):
        values = out[name].values.copy()
        for k, v in enumerate(found.values):
            if v is not None:
                values[k] = float(v)
        out[name] = out[name].copy(data=values)
    notes = [n for n in found.notes if n]
    if notes:
        out.attrs["auc_notes"] = notes
    return out


def with_passes(summaries: Sequence[ScoreSummary], extra: int) -> list[ScoreSummary]:
    """The summaries with ``extra`` more passes counted."""
    return [replace(s, passes=s.passes + extra) for s in summaries]
