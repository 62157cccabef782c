"""Partition-equalized metrics (NIST SRE): one weighted ROC curve over the ``--by`` partitions.

Definition (``FIELD_METRICS.md`` section 1, as NIST's SRE16/SRE18 scorer): over the partitions
``P`` (the conditions of the ``--by`` specs), a target trial of partition ``p`` weighs
``max_q N_tar,q / N_tar,p`` and a non-target ``max_q N_non,q / N_non,p``; Pmiss and Pfa are
weighted fractions. Since every partition's targets then weigh the same in all, this is::

    Pmiss_eq(t) = mean over the partitions with targets     of Pmiss_p(t)
    Pfa_eq(t)   = mean over the partitions with non-targets of Pfa_p(t)

**Empty partitions.** The weights are per class, as in NIST's scorer: a partition without
targets (or without non-targets) gives that class weight 0 and is left out of that class's mean
only; its trials of the other class still count. A partition with no trial at all counts for
neither. The EER (the ROCCH-EER, as the package defines it: where the convex hull of the
equalized curve crosses ``Pmiss = Pfa``), minDCF (the minimum over every threshold, reached at a
vertex of that hull) and actDCF (threshold ``-logit(p)``) are computed on that one curve.

**How it stays exact without a sort, and without new passes.** The equalized curve's hull
vertices need not be vertices of any one partition's hull, so the engine resolves the *joint*
histogram where the equalized curve needs it: each (system, partition) is a member summary of
the same call that gives the per-condition metrics (a part of
:func:`~bosaris_dask.passes.grouped.summarize_parts`, through
:func:`~bosaris_dask.conditions.summaries.condition_summaries`; a partition with one class only
rides with a partition of the other class whose trials it ignores). All
members' bins are nested dyadic key ranges, so their coarsest common cover is a histogram with
a ``(partition, bin)`` integer count matrix. After every round, :func:`joint_candidates` builds that
grid, forms the equalized curve at its edges, and asks the engine to refine (in every member)
the bins that are mixed on the equalized curve and whose optimistic corner lies below the hull
of the edges (the engine's own rule, :func:`bosaris_dask.passes.refinement.hull_candidates`, with a
tolerance that errs on the side of refining). The candidates of later rounds lie inside those
of earlier ones, so the kept candidate trials serve them: the pass count stays that of the
per-condition evaluation in the usual case.

**What is exact.** The integer counts of every partition at every edge of the final grid are
exact (the same in any chunking, merge tree and scheduler), and no hull vertex of the equalized
curve lies inside an unresolved bin. The equalized Pmiss and Pfa at an edge are then formed in
float64 in a fixed order (each partition's fraction ``count / N_p``, correctly rounded, summed
over partitions in index order, divided by their number), so the result is deterministic and
within a few ulps of the exact rational value. actDCF uses each partition's exact error counts
at the Bayes thresholds.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.trials import make_key, make_scores
>>> from bosaris_dask.conditions import condition_table, evaluate_conditions
>>> key = make_key(["m1", "m2"], ["s1", "s2", "s3"], [[1, -1, -1], [-1, 1, -1]])
>>> scores = make_scores(["m1", "m2"], ["s1", "s2", "s3"], [[2.0, 0.5, -1.0], [0.0, -0.5, -2.0]])
>>> models = condition_table("model", ["m1", "m2"], {"gender": ["f", "m"]})
>>> ds = evaluate_conditions(scores, key, conditions=[models], by=["model.gender"],
...                          priors=[0.5], equalize=True)
>>> ds.equalized_eer.values.tolist(), ds.condition_eer.values.tolist()
([0.25], [[0.0, 0.3333333333333333]])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
from scipy.special import expit

from bosaris_dask import roc
from bosaris_dask._deprecation import renamed_getattr
from bosaris_dask.conditions.float_hull import lower_hull

__all__ = [
    "Member", "EqualizedPlan", "plan_members", "joint_candidates", "equalized_curve",
    "equalized_values", "add_to_dataset", "VARIABLES",
]  # fmt: skip

#: Tolerance of the corner test on equalized rates (they lie in [0, 1]; rounding is ~1e-16).
_TOL = 1e-12

#: The Dataset variables this module adds: name -> (units, long_name).
VARIABLES: dict[str, tuple[str, str]] = {
    "equalized_eer": ("probability", "partition-equalized ROCCH-EER over the --by partitions"),
    "equalized_act_dcf": ("normalized DCF", "partition-equalized actDCF / min(p, 1 - p)"),
    "equalized_min_dcf": ("normalized DCF", "partition-equalized minDCF / min(p, 1 - p)"),
    "equalized_cprimary_act": ("normalized DCF", "Cprimary of the equalized actDCF"),
    "equalized_cprimary_min": ("normalized DCF", "Cprimary of the equalized minDCF"),
}


@dataclass(frozen=True)
class Member:
    """One summary of a :func:`~bosaris_dask.engine.summarize` call that carries a partition.

    ``index`` is the summary's position in the call; its targets are partition ``tar``'s and
    its non-targets partition ``non``'s (``-1``: that class of this summary is ignored).
    """

    index: int
    tar: int
    non: int


@dataclass
class EqualizedPlan:
    """Per system, its members, and the partitions' scored target and non-target counts.

    ``extra`` lists the summaries to add to the call for partitions with one class only:
    ``(system, partition, filler)``: the system's trials of ``partition`` plus the trials of
    the other class of partition ``filler`` (ignored, weight 0).
    """

    members: list[list[Member]]
    n_target: np.ndarray  # (S, G)
    n_nontarget: np.ndarray  # (S, G)
    extra: list[tuple[int, int, int]]

    def candidates(self, summaries: Sequence[Any]) -> list[np.ndarray | None]:
        """The engine's ``extra_candidates`` hook: :func:`candidates` for every system."""
        out: list[np.ndarray | None] = [None] * len(summaries)
        for k, members in enumerate(self.members):
            for index, cands in joint_candidates(summaries, members, self.n_target[k],
                                           self.n_nontarget[k]).items():  # fmt: skip
                out[index] = cands
        return out


def plan_members(
    pairs: Sequence[tuple[int, int]],
    n_target: np.ndarray,
    n_nontarget: np.ndarray,
    first_extra: int,
) -> EqualizedPlan:
    """The members of every system: its per-condition summaries, and one extra summary per
    partition with one class only (:attr:`EqualizedPlan.extra`).

    Parameters
    ----------
    pairs
        ``(system, partition)`` of the per-condition summaries, in call order; summary
        ``first_extra - len(pairs) + i`` is ``pairs[i]``.
    n_target, n_nontarget
        ``(S, G)`` scored counts.
    first_extra
        The call index of the first extra summary.

    Examples
    --------
    >>> plan = plan_members([(0, 0)], np.array([[2, 3]]), np.array([[4, 0]]), first_extra=2)
    >>> plan.members[0], plan.extra
    ([Member(index=1, tar=0, non=0), Member(index=2, tar=1, non=-1)], [(0, 1, 0)])
    """
    n_sys = n_target.shape[0]
    members: list[list[Member]] = [[] for _ in range(n_sys)]
    base = first_extra - len(pairs)
    for i, (k, g) in enumerate(pairs):
        members[k].append(Member(base + i, g, g))
    extra: list[tuple[int, int, int]] = []
    for k in range(n_sys):
        for g in range(n_target.shape[1]):
            has_t, has_n = n_target[k, g] > 0, n_nontarget[k, g] > 0
            if has_t == has_n:
                continue  # both (a per-condition summary) or neither (counts for nothing)
            other = n_nontarget[k] if has_t else n_target[k]
            filler = int(np.flatnonzero(other > 0)[0]) if (other > 0).any() else -1
            if filler < 0:
                continue  # the pooled system lacks a class: summarize reports it
            index = first_extra + len(extra)
            members[k].append(Member(index, g, -1) if has_t else Member(index, -1, g))
            extra.append((k, g, filler))
    return EqualizedPlan(members, np.asarray(n_target), np.asarray(n_nontarget), extra)


def extra_mask(
    mask: da.Array,
    classes: da.Array,
    groups: da.Array,
    partition: int,
    filler: int,
    targets: bool,
) -> da.Array:
    """The score mask of an extra member: the partition's trials and the filler's other class."""
    own = groups == partition
    other = (groups == filler) & (classes == (-1 if targets else 1))
    return mask & (own | other)


# --------------------------------------------------------------------------------------------
# the equalized curve on the common grid of the members
# --------------------------------------------------------------------------------------------


def _counted(s: Any, m: Member) -> np.ndarray:
    """Which bins of member ``m``'s summary hold a trial of a class it carries."""
    out = np.zeros(len(s.lo), dtype=bool)
    if m.tar >= 0:
        out |= s.n_tar > 0
    if m.non >= 0:
        out |= s.n_non > 0
    return out


def common_grid(summaries: Sequence[Any], members: Sequence[Member]) -> tuple[np.ndarray, ...]:
    """The coarsest common cover ``(lo, bits)`` of the members' (counted) bins, ascending.

    The bins are dyadic key ranges, so two are nested or disjoint: the cover keeps each bin
    that no other contains.
    """
    los, bits = [], []
    for m in members:
        s = summaries[m.index]
        keep = _counted(s, m)
        los.append(s.lo[keep])
        bits.append(s.bits[keep].astype(np.int64))
    lo = np.concatenate(los) if los else np.empty(0, dtype=np.uint64)
    b = np.concatenate(bits) if bits else np.empty(0, dtype=np.int64)
    if len(lo) == 0:
        return lo, b
    order = np.lexsort((-b, lo))  # by lo, the widest first
    lo, b = lo[order], b[order]
    hi = lo + ((np.uint64(1) << b.astype(np.uint64)) - np.uint64(1))
    prev_hi = np.maximum.accumulate(hi)
    inside = np.zeros(len(lo), dtype=bool)
    inside[1:] = lo[1:] <= prev_hi[:-1]
    return lo[~inside], b[~inside]


@dataclass(frozen=True)
class Curve:
    """The equalized curve at the edges of a grid of ``B`` bins (``B + 1`` edges).

    ``pmiss[e]``/``pfa[e]``: the rates when the first ``e`` bins are rejected.
    """

    lo: np.ndarray
    bits: np.ndarray
    pmiss: np.ndarray
    pfa: np.ndarray


def _rates_on_grid(
    summaries: Sequence[Any], members: Sequence[Member], lo: np.ndarray, which: str,
    sizes: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """The sum over partitions of each one's class rate in each grid bin (``which``: ``"tar"``
    or ``"non"``): every member's counts of that class divided by its partition's size, added
    per grid bin in one sorted reduction (each of its counted bins lies inside one grid bin).

    The sums are in ``numpy.longdouble`` (80-bit on x86: rounding ~1e-19 a term, so a cumulative
    sum over millions of bins stays near float64 rounding once rounded back); one cumulative
    sum over all partitions together, not one per partition (thousands of conditions times a
    grid of millions of edges took minutes).
    """
    counts = "n_tar" if which == "tar" else "n_non"
    owners, weights = [np.empty(0, dtype=np.intp)], [np.empty(0, dtype=np.longdouble)]
    for m in members:
        p = getattr(m, which)
        if p < 0:
            continue
        summary = summaries[m.index]
        owners.append(np.maximum(np.searchsorted(lo, summary.lo, side="right") - 1, 0))
        weights.append(getattr(summary, counts).astype(np.longdouble) / np.longdouble(sizes[p]))
    owner, weight = np.concatenate(owners), np.concatenate(weights)
    out = np.zeros(len(lo), dtype=np.longdouble)
    if len(owner):  # out[owner] += weight (bincount adds in float64; np.add.at is slow)
        order = np.argsort(owner, kind="stable")
        owner, weight = owner[order], weight[order]
        starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
        out[owner[starts]] += np.add.reduceat(weight, starts)
    return out


def equalized_curve(
    summaries: Sequence[Any],
    members: Sequence[Member],
    n_target: np.ndarray,
    n_nontarget: np.ndarray,
) -> Curve:
    """The equalized Pmiss and Pfa at every edge of the members' common grid.

    Each partition's rate in a grid bin is its exact count divided by its size; the rates are
    summed over partitions and cumulated along the grid (in ``longdouble``,
    :func:`_rates_on_grid`), then divided by the number of partitions with that class. Pmiss
    is 0 at the first edge and 1 at the last, and Pfa the reverse, exactly.
    """
    lo, bits = common_grid(summaries, members)
    n_tar = int((np.asarray(n_target) > 0).sum())
    n_non = int((np.asarray(n_nontarget) > 0).sum())
    tar = _rates_on_grid(summaries, members, lo, "tar", np.asarray(n_target))
    non = _rates_on_grid(summaries, members, lo, "non", np.asarray(n_nontarget))
    pmiss = np.concatenate([[0.0], (np.cumsum(tar) / max(n_tar, 1)).astype(np.float64)])
    pfa = np.concatenate([(np.cumsum(non[::-1])[::-1] / max(n_non, 1)).astype(np.float64), [0.0]])
    if n_tar:
        pmiss[-1] = 1.0
    if n_non:
        pfa[0] = 1.0
    return Curve(lo, bits, pmiss, pfa)


def _hull(curve: Curve) -> tuple[np.ndarray, roc.Hull]:
    x = -curve.pfa  # ascending: the edges reject more and more non-targets
    v = lower_hull(x, curve.pmiss)
    hull = roc.Hull(positions=v, misses=curve.pmiss[v], false_alarms=curve.pfa[v],
                    n_target=1, n_nontarget=1)  # fmt: skip
    return v, hull


def joint_candidates(
    summaries: Sequence[Any],
    members: Sequence[Member],
    n_target: np.ndarray,
    n_nontarget: np.ndarray,
) -> dict[int, np.ndarray]:
    """Per member summary, the bins to refine so that the equalized curve's hull gets exact.

    A common-grid bin is a candidate when it is not one key (``bits > 0``), holds equalized
    weight of both classes, and its optimistic corner (all its targets above all its
    non-targets) lies below, or within a tolerance of, the hull of the edges. Every member's
    bins inside a candidate are refined (so that the trials kept for this round serve the
    next).
    """
    if not members:
        return {}
    curve = equalized_curve(summaries, members, n_target, n_nontarget)
    if len(curve.lo) == 0:
        return {}
    x, y = -curve.pfa, curve.pmiss
    v, _ = _hull(curve)
    hull_y = np.interp(x[1:], x[v], y[v])
    below = y[:-1] < hull_y + _TOL
    mixed = (np.diff(y) > 0) & (np.diff(x) > 0) & (curve.bits > 0)
    cand = np.flatnonzero(below & mixed)
    if len(cand) == 0:
        return {}
    c_lo = curve.lo[cand]
    c_hi = c_lo + ((np.uint64(1) << curve.bits[cand].astype(np.uint64)) - np.uint64(1))
    out: dict[int, np.ndarray] = {}
    for m in members:
        s = summaries[m.index]
        i = np.searchsorted(c_lo, s.lo, side="right") - 1
        ok = i >= 0
        inside = np.zeros(len(s.lo), dtype=bool)
        inside[ok] = s.lo[ok] <= c_hi[i[ok]]
        found = np.flatnonzero(inside & (s.bits > 0) & _counted(s, m))
        if len(found):
            out[m.index] = found
    return out


# --------------------------------------------------------------------------------------------
# metrics
# --------------------------------------------------------------------------------------------


def equalized_values(
    summaries: Sequence[Any],
    members: Sequence[Member],
    n_target: np.ndarray,
    n_nontarget: np.ndarray,
    plo: np.ndarray,
) -> dict[str, Any]:
    """EER and, at each prior log-odds, the normalized actDCF and minDCF of the equalized curve.

    Returns ``{"eer", "act_dcf", "min_dcf", "act_dcf_raw", "min_dcf_raw"}`` (arrays along
    ``plo``); NaN when no partition has targets or none has non-targets.
    """
    plo = np.asarray(plo, dtype=np.float64)
    if not (np.asarray(n_target) > 0).any() or not (np.asarray(n_nontarget) > 0).any():
        nan = np.full(len(plo), np.nan)
        return {"eer": np.nan, "act_dcf": nan, "min_dcf": nan, "act_dcf_raw": nan,
                "min_dcf_raw": nan}  # fmt: skip
    curve = equalized_curve(summaries, members, n_target, n_nontarget)
    _, hull = _hull(curve)
    eer = roc.hull_eer(hull)
    min_raw = roc.min_bayes_error(hull, plo)[0]
    pmiss, pfa = np.zeros(len(plo)), np.zeros(len(plo))
    for m in sorted(members, key=lambda m: m.tar):
        if m.tar >= 0:
            pmiss += summaries[m.index].error_counts(-plo)[0] / n_target[m.tar]
    for m in sorted(members, key=lambda m: m.non):
        if m.non >= 0:
            pfa += summaries[m.index].error_counts(-plo)[1] / n_nontarget[m.non]
    pmiss /= int((np.asarray(n_target) > 0).sum())
    pfa /= int((np.asarray(n_nontarget) > 0).sum())
    act_raw = expit(plo) * pmiss + expit(-plo) * pfa
    norm = np.minimum(expit(plo), expit(-plo))
    return {"eer": eer, "act_dcf": act_raw / norm, "min_dcf": min_raw / norm,
            "act_dcf_raw": act_raw, "min_dcf_raw": min_raw}  # fmt: skip


def add_to_dataset(
    ds: xr.Dataset,
    summaries: Sequence[Any],
    plan: EqualizedPlan,
    *,
    by: Sequence[str] = (),
    cprimary_priors: np.ndarray | None = None,
) -> xr.Dataset:
    """``ds`` with ``equalized_eer`` (``system``) and ``equalized_act_dcf``/``equalized_min_dcf``
    (``system``, ``plo``), and with Cprimary priors ``equalized_cprimary_act``/``_min``."""

    def values(k: int, plo: np.ndarray) -> dict[str, Any]:
        return equalized_values(summaries, plan.members[k], plan.n_target[k],
                                plan.n_nontarget[k], plo)  # fmt: skip

    rows = [values(k, ds.plo.values) for k in range(len(plan.members))]
    data: dict[str, Any] = {
        "equalized_eer": ("system", np.array([r["eer"] for r in rows], dtype=np.float64)),
        "equalized_act_dcf": (("system", "plo"), np.array([r["act_dcf"] for r in rows])),
        "equalized_min_dcf": (("system", "plo"), np.array([r["min_dcf"] for r in rows])),
    }
    if cprimary_priors is not None:
        cp = np.log(cprimary_priors) - np.log1p(-cprimary_priors)
        vals = [values(k, cp) for k in range(len(plan.members))]
        data["equalized_cprimary_act"] = ("system", [float(np.mean(v["act_dcf"])) for v in vals])
        data["equalized_cprimary_min"] = ("system", [float(np.mean(v["min_dcf"])) for v in vals])
    ds = ds.assign(data)
    for name, (units, long_name) in VARIABLES.items():
        if name in ds:
            ds[name].attrs.update(units=units, long_name=long_name)
    ds.attrs["equalized_by"] = list(by)
    return ds


def _moved_to_report() -> dict[str, tuple[str, Any]]:
    """The report's functions, moved to :mod:`bosaris_dask.conditions.equalized_report`."""
    from bosaris_dask.conditions import equalized_report as report

    moved = ("json_entry", "format_block")
    return {name: (f"{report.__name__}.{name}", getattr(report, name)) for name in moved}


__getattr__ = renamed_getattr(__name__, _moved_to_report())
