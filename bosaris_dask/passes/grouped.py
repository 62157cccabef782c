"""Grouped evaluation passes: many parts of each system (pooled, per condition) from one
keying of its trials.

:func:`summarize_parts` returns what :func:`bosaris_dask.engine.summarize` returns for a list
of "systems" that are parts of a few real systems
(:class:`~bosaris_dask.passes.grouped_kernels.Part`: the targets of some groups and the non-targets
of some groups, e.g. one condition), bit for bit, in the same passes, with the same refinement
decisions (the same pass-1 bins, candidates, plans, rounds and kept trials), but each real system's
trials are read and keyed once per pass instead of once per part:

- pass 1 (:mod:`bosaris_dask.passes.grouped_histograms`) counts a ``(group, bin)`` histogram per
  system (:mod:`bosaris_dask.passes.grouped_kernels`),
  and sums the Cllr terms (and, with ``cross_entropy_plo``, the ECE's cross-entropy terms) per
  ``(group, class)`` exactly; a part's summary is the sum over its groups (the pooled one: over
  all groups), made on the client;
- a refinement pass picks each system's trials inside the union of its parts' candidate bins
  once, and counts each part's own.

Examples
--------
>>> import numpy as np
>>> import dask.array as da
>>> from bosaris_dask.passes.grouped_kernels import Part
>>> from bosaris_dask.trials import make_key, make_scores
>>> key = make_key(["m1", "m2"], ["s1", "s2"], np.array([[1, -1], [-1, 1]]))
>>> scores = make_scores(["m1", "m2"], ["s1", "s2"], np.array([[2.0, 0.5], [-1.0, 0.5]]))
>>> groups = da.from_array(np.array([[0, 0], [1, 1]], dtype=np.int16))
>>> pooled, first, second = summarize_parts(
...     [scores], key, groups, 2, [Part(0), Part(0, (0,), (0,)), Part(0, (1,), (1,))])
>>> pooled.n_target, first.n_target, second.n_nontarget, pooled.passes
(2, 1, 1, 2)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask import config, engine, fixed_rates
from bosaris_dask.errors import OptionError
from bosaris_dask.inputs import check_both_classes, names_or_default
from bosaris_dask.passes import (
    grouped_histograms,
    refine_kernels,
    refinement,
    rounds,
    runner,
    screening,
)
from bosaris_dask.passes.binmap import BinMap
from bosaris_dask.passes.grouped_histograms import (
    GroupedPass1,
    SystemPass1,
    grouped_pass1,
    remap_groups,
)
from bosaris_dask.passes.grouped_kernels import Part
from bosaris_dask.passes.grouped_refine_kernels import (
    grouped_refine_kernel,
    grouped_select_kernel,
    merge_part_refinements,
    merge_parts,
    refine_kept_part,
)
from bosaris_dask.passes.keys import threshold_keys
from bosaris_dask.passes.riders import Rider
from bosaris_dask.passes.score_summary import ScoreSummary

__all__ = ["summarize_parts", "grouped_pass1", "refine_parts", "GroupedPass1", "SystemPass1",
           "Part", "remap_groups"]  # fmt: skip


def _part_summary(first: GroupedPass1, part: Part, name: str) -> ScoreSummary:
    """A part's pass-1 summary from its system's grouped pass-1 totals."""
    own = first.systems[part.system]
    assert own is not None, "pass 1 did not count this system"
    if part.pooled and own.pooled is not None:
        assert first.pooled_maps is not None
        n_non, n_tar = own.pooled
        nonempty = np.flatnonzero((n_tar + n_non) > 0)
        return _summary(
            first.dtype, nonempty, first.pooled_maps[part.system], n_tar[nonempty], n_non[nonempty],
            sum(u[0] for u in own.units), sum(u[1] for u in own.units),
            int(own.missing.sum()), name,
        )  # fmt: skip
    tar, non = part.groups(first.n_groups)
    n_tar = own.counts[tar, :, 1].sum(axis=0)
    n_non = own.counts[non, :, 0].sum(axis=0)
    sp_tar = sum(own.units[g][0] for g in np.flatnonzero(tar).tolist())
    sp_non = sum(own.units[g][1] for g in np.flatnonzero(non).tolist())
    nonempty = np.flatnonzero((n_tar + n_non) > 0)
    return _summary(
        first.dtype, nonempty, first.maps[part.system], n_tar[nonempty], n_non[nonempty],
        sp_tar, sp_non, int(own.missing[tar, 1].sum() + own.missing[non, 0].sum()), name,
    )  # fmt: skip


def _summary(
    dtype: np.dtype,
    nonempty: np.ndarray,
    binmap: BinMap,
    n_tar: np.ndarray,
    n_non: np.ndarray,
    sp_tar: int,
    sp_non: int,
    missing: int,
    name: str,
) -> ScoreSummary:
    """A pass-1 summary (softplus sums in exact units), or the error of a part without targets
    or non-targets."""
    lo, bits = binmap.bin_lo_bits(nonempty)
    summary = ScoreSummary(
        dtype=dtype, lo=lo, bits=bits,
        n_tar=n_tar, n_non=n_non,
        softplus_units=(sp_tar, sp_non),
        n_missing=missing, name=name,
    )  # fmt: skip
    return check_both_classes(summary)


def _part_cross_entropy(
    units: list[list[list[int]]], part: Part, n_groups: int
) -> list[tuple[int, int]]:
    """A part's exact (target, non-target) cross-entropy sums per prior log-odds from its
    system's per-group units
    (:func:`~bosaris_dask.passes.grouped_cross_entropy.split_cross_entropy`)."""
    tar, non = (np.flatnonzero(m).tolist() for m in part.groups(n_groups))
    return [(sum(at[g][0] for g in tar), sum(at[g][1] for g in non)) for at in units]


def _used_groups(
    groups: da.Array, n_groups: int, parts: list[Part]
) -> tuple[da.Array, int, list[Part]]:
    """Only the groups some part counts apart get histogram rows; all others share one.

    The pooled parts are sums over every group, so the groups no other part names (e.g. the
    empty conditions of a Cartesian product of ``--by`` values) need not be told apart: a
    chunk's pass-1 result then grows with the conditions that have trials, not with all.
    """
    named = [p for p in parts if not p.pooled]
    if any(p.tar is None or p.non is None for p in named):
        return groups, n_groups, parts
    used = sorted({g for p in named for g in (*p.tar, *p.non)})  # type: ignore[misc]
    if len(used) == n_groups:
        return groups, n_groups, parts
    table = np.full(n_groups, len(used), dtype=np.int16 if len(used) < (1 << 15) else np.int32)
    table[used] = np.arange(len(used))
    where = {g: i for i, g in enumerate(used)}
    parts = [p if p.pooled else Part(p.system, tuple(where[g] for g in p.tar),  # type: ignore[union-attr]
                                     tuple(where[g] for g in p.non))  # type: ignore[union-attr]
             for p in parts]  # fmt: skip
    return remap_groups(groups, table), len(used) + 1, parts


def summarize_parts(
    scores: xr.Dataset | Sequence[xr.Dataset],
    key: xr.Dataset,
    groups: da.Array,
    n_groups: int,
    parts: Sequence[Part],
    *,
    thresholds: Sequence[float] | np.ndarray = (),
    fmr: Sequence[float] | np.ndarray = (),
    fnmr: Sequence[float] | np.ndarray = (),
    cross_entropy_plo: Sequence[float] | np.ndarray = (),
    allow_missing: bool = False,
    split_every: int = engine.DEFAULT_SPLIT_EVERY,
    coarse_bits: int | None = None,
    pooled_coarse_bits: int | None = None,
    progress: bool | None = None,
    names: Sequence[str] | None = None,
    extra_candidates: Callable[[list[ScoreSummary]], list[np.ndarray | None]] | None = None,
) -> list[ScoreSummary]:
    """Exact summaries of parts of some systems: one per part, in order.

    The result equals, bit for bit and in passes, :func:`bosaris_dask.engine.summarize` of one
    "system" per part (the system's scores with its mask restricted to the part's trials),
    called with the same arguments, but for ``n_missing``: the part's own key trials without a
    score (not also the key trials outside the part, as in such a masked copy).
    :func:`grouped_pass1` then :func:`refine_parts`, for parts known before any pass.

    Parameters
    ----------
    scores, key
        The systems (one Dataset or a list) and the key (as
        :func:`~bosaris_dask.engine.summarize`).
    groups
        The group of every cell (integers ``0 <= g < n_groups``), a lazy array shaped like the
        key (e.g. :meth:`bosaris_dask.conditions.Conditions.group_index`).
    n_groups
        The number of groups.
    parts
        What each summary counts (:class:`~bosaris_dask.passes.grouped_kernels.Part`).
    thresholds, fmr, fnmr, allow_missing, split_every, progress, extra_candidates
        As :func:`~bosaris_dask.engine.summarize`; ``extra_candidates`` gets the part
        summaries.
    cross_entropy_plo
        As :func:`~bosaris_dask.engine.summarize`: pass 1 also sums each system's
        cross-entropy terms at these prior log-odds, per ``(group, class)``
        (:func:`~bosaris_dask.passes.grouped_cross_entropy.grouped_cross_entropy_kernel`), and each
        part's ``cross_entropy`` is the exact sum over its groups: the ECE of every condition, no
        extra pass.
    coarse_bits
        Pass-1 key bits (default: the engine's for as many systems as there are parts, so the
        bins are those of the ungrouped call).
    pooled_coarse_bits
        Pass-1 key bits of the pooled parts (``Part(k)``), which are then counted apart by the
        plain kernel (:func:`bosaris_dask.passes.kernels.system_kernel`): with the engine's bits for
        the systems alone, each pooled summary is, bin for bin, that of a plain
        :func:`~bosaris_dask.engine.summarize` of the systems (only ``passes`` is the call's).
        ``None``: pooled parts are sums over the groups, at ``coarse_bits``.
    names
        One name per system (errors about a system's trials name it), then one per part
        (stored in its summary); default ``system-1``, ... and ``system-1 [part 1]``, ...

    Returns
    -------
    list of ScoreSummary
        One per part; its ``n_missing`` counts the part's own key trials without a score
        (``allow_missing``).

    Raises
    ------
    As :func:`~bosaris_dask.engine.summarize`, naming the system (non-finite scores, missing
    trials) or the part (no targets or no non-targets).
    """
    if isinstance(scores, xr.Dataset):
        scores = [scores]
    parts = list(parts)
    n_sys = len(scores)
    if any(not 0 <= p.system < n_sys for p in parts) or not parts:
        raise OptionError(f"parts must name systems 1 to {n_sys}")
    if names is None:
        names = names_or_default(None, n_sys)
        names += [f"{names[p.system]} [part {j + 1}]" for j, p in enumerate(parts)]
    if len(names) != n_sys + len(parts):
        raise OptionError(f"{len(names)} names for {n_sys} systems and {len(parts)} parts")
    if not np.issubdtype(groups.dtype, np.integer):
        raise OptionError(f"groups must be integer codes 0 .. n_groups - 1, got {groups.dtype}")
    groups, n_groups, parts = _used_groups(groups, n_groups, parts)
    apart = [p.system for p in parts if p.pooled] if pooled_coarse_bits is not None else []
    first = grouped_pass1(
        scores, key, groups, n_groups, systems=[p.system for p in parts], pooled_apart=apart,
        n_parts=len(parts), allow_missing=allow_missing, split_every=split_every,
        coarse_bits=coarse_bits, pooled_coarse_bits=pooled_coarse_bits, progress=progress,
        names=names[:n_sys], cross_entropy_plo=cross_entropy_plo,
    )  # fmt: skip
    return refine_parts(first, parts, thresholds=thresholds, fmr=fmr, fnmr=fnmr,
                        names=names[n_sys:], extra_candidates=extra_candidates)  # fmt: skip


def _held(first: GroupedPass1, part: Part) -> refinement.ChunkBins:
    """The chunk notes a part's refinement plans are in: its system's key bins, or its pooled
    histogram apart's (what :func:`refine_parts` plans a pooled part with, when there is one)."""
    own = first.systems[part.system]
    if part.pooled and own is not None and own.pooled is not None:
        return first.pooled_held[part.system]  # type: ignore[index]
    return first.held[part.system]  # type: ignore[index]


def _system_ranges(
    specs: Sequence[refine_kernels.RefineSpec | None], parts: Sequence[Part], n_sys: int,
    dtype: np.dtype,
) -> list[screening.Ranges]:  # fmt: skip
    """Per system, the score ranges of all its parts' candidate bins (for its screen)."""
    out = []
    for k in range(n_sys):
        got = [screening.spec_ranges(spec, dtype)
               for spec, p in zip(specs, parts, strict=True) if p.system == k]  # fmt: skip
        lo = np.concatenate([r[0] for r in got]) if got else np.empty(0)
        hi = np.concatenate([r[1] for r in got]) if got else np.empty(0)
        out.append(screening.merge_ranges(lo, hi))
    return out


def refine_parts(
    first: GroupedPass1,
    parts: Sequence[Part],
    *,
    thresholds: Sequence[float] | np.ndarray = (),
    fmr: Sequence[float] | np.ndarray = (),
    fnmr: Sequence[float] | np.ndarray = (),
    names: Sequence[str] | None = None,
    extra_candidates: Callable[[list[ScoreSummary]], list[np.ndarray | None]] | None = None,
    share: int = 1,
    rider: Rider | None = None,
) -> list[ScoreSummary]:
    """The exact summaries of ``parts`` (one per part, in order) from a grouped pass 1: each
    part's pass-1 summary is a sum over its groups (a pooled part counted apart: its own
    histogram), then the refinement passes of :func:`summarize_parts`.

    Parameters
    ----------
    first
        The grouped pass 1 (it counted every system a part names, and the pooled histograms
        apart of the systems whose pooled parts should use them).
    parts
        What each summary counts.
    thresholds, fmr, fnmr, extra_candidates
        As :func:`summarize_parts`.
    names
        One name per part (default ``system-1 [part 1]``, ...).
    share
        The parts that are not pooled refine within ``1 / share`` of the engine's dense budget
        and raw limit each (``bosaris_dask.dense-budget``, ``bosaris_dask.raw-limit``; at
        least 1 sub-bin): e.g. a system's ``G`` conditions share its budgets, so a refinement
        task holds what it holds for the system alone, and a condition's candidates are
        sub-histogrammed first (cheap), then pulled raw in the pooled parts' later round, from
        far fewer trials. The pooled parts keep the whole budgets (so that they refine as a
        plain evaluation does).
    rider
        Work riding along (:class:`~bosaris_dask.passes.riders.Rider`): its ``after_pass1`` gets the
        parts' pass-1 summaries, ``first.rode`` and ``first.inputs``; its graph is computed
        with the first refinement pass (or a pass of its own when there is none).

    Raises
    ------
    ScoreError
        A part without targets or non-targets (naming it).
    """
    parts = list(parts)
    if names is None:
        names = [f"{first.sys_names[p.system]} [part {j + 1}]" for j, p in enumerate(parts)]
    if len(names) != len(parts):
        raise OptionError(f"{len(names)} names for {len(parts)} parts")
    if any(not 0 <= p.system < len(first.systems) or first.systems[p.system] is None
           for p in parts):  # fmt: skip
        raise OptionError("a part names a system pass 1 did not count")
    fmr = fixed_rates.check_rates(fmr, "FMR") if len(fmr) else np.empty(0)
    fnmr = fixed_rates.check_rates(fnmr, "FNMR") if len(fnmr) else np.empty(0)
    share = config.check_int("share", share, 1, 1 << 30)
    summaries = [_part_summary(first, p, nm) for p, nm in zip(parts, names, strict=True)]
    if first.cross_units is not None:
        summaries = [
            replace(s, cross_entropy_plo=first.cross_entropy_plo,
                    cross_entropy=_part_cross_entropy(first.cross_units[p.system], p,
                                                      first.n_groups))
            for s, p in zip(summaries, parts, strict=True)
        ]  # fmt: skip
    along = None  # a rider's pass, computed with the next pass that reads the data
    if rider is not None:
        along = rider.after_pass1([replace(s) for s in summaries], first.rode or [], first.inputs)
    knobs, inputs, n_groups = first.knobs, first.inputs, first.n_groups
    split_every, progress, sys_names = first.split_every, first.progress, first.sys_names
    # the compiled selection (fast_select) where pass 1 counted with the compiled loops
    compiled = int(np.prod(inputs[0].shape)) >= grouped_histograms.COMPILED_TRIALS
    blocks = {"block": knobs["block"], "slice_size": knobs["slice"], "compiled": compiled}
    n_sys = len(first.systems)
    kappa = threshold_keys(np.asarray(thresholds, dtype=np.float64), first.dtype)
    part_tuple = tuple(parts)

    # the summaries that needed no refinement: one that a round left as it was needs none in
    # the next (its candidates are its own; with thousands of conditions, finding them again
    # for every part in every round took most of the rounds' time)
    settled: list[ScoreSummary | None] = [None] * len(parts)

    def plan(current: list[ScoreSummary]) -> list[rounds.Plan]:
        plans: list[rounds.Plan] = []
        joint = extra_candidates(current) if extra_candidates is not None else None
        for j, s in enumerate(current):
            if joint is None and s is settled[j]:
                plans.append(None)
                continue
            cands = refinement.candidates(s, kappa, False, fmr=fmr, fnmr=fnmr)
            if joint is not None and joint[j] is not None:
                cands = np.union1d(cands, joint[j]).astype(np.int64)
            if len(cands):
                k = parts[j].system
                own = first.systems[k]
                apart = parts[j].pooled and own is not None and own.pooled is not None
                own_share = 1 if parts[j].pooled else share
                binmap = first.pooled_maps[k] if apart else first.maps[k]  # type: ignore[index]
                spec = refinement.plan(s, cands, 0 if binmap.adaptive else binmap.shift,
                                       dense_budget=max(1, knobs["dense_budget"] // own_share),
                                       raw_limit=knobs["raw_limit"] // own_share,
                                       binmap=binmap)  # fmt: skip
                plans.append((cands, spec))
            else:
                settled[j] = s
                plans.append(None)
        return plans

    def read_aggregations(refined: list[int], specs: rounds.Specs):
        owners = [k for k in range(n_sys) if any(parts[j].system == k for j in refined)]
        mine = {k: [j for j, p in enumerate(parts) if p.system == k] for k in owners}
        aggs = [runner.Aggregation(
            sys_names[k], partial(grouped_refine_kernel, system=k,
                                  specs=tuple(specs[j] for j in mine[k]),
                                  parts=tuple(parts[j] for j in mine[k]),
                                  n_groups=n_groups, **blocks),
            None, combine=merge_parts) for k in owners]  # fmt: skip

        def unpack(results: list) -> dict[int, Any]:
            return {j: r for k, rs in zip(owners, results, strict=True)
                    for j, r in zip(mine[k], rs, strict=True) if r is not None}  # fmt: skip

        return aggs, unpack

    def select(specs: rounds.Specs, read: list[da.Array]) -> da.Array:
        kernel = partial(grouped_select_kernel, specs=specs, parts=part_tuple, n_groups=n_groups,
                         **blocks)  # fmt: skip
        return engine.blockwise_pass(kernel, read)

    def kept_aggregations(refined: list[int], specs: rounds.Specs,
                          selection: refinement.Selection) -> list[runner.Aggregation]:  # fmt: skip
        return [runner.Aggregation(summaries[j].name, partial(
                    refine_kept_part, part=j, spec=specs[j], kept_spec=selection.specs[j]),
                    None, combine=merge_part_refinements)
                for j in refined]  # fmt: skip

    plan_rounds = rounds.Rounds(
        inputs=inputs, dtype=first.dtype, first_scores=2, plan=plan,
        ranges=lambda specs: _system_ranges(specs, parts, n_sys, first.dtype),
        held=None if first.held is None else lambda j: _held(first, parts[j]), select=select,
        kept_aggregations=kept_aggregations, read_aggregations=read_aggregations,
        keep_limit=knobs["keep_limit"], split_every=split_every, progress=progress,
    )  # fmt: skip
    return rounds.run_rounds(summaries, plan_rounds, rider, along)
