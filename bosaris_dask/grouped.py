"""Grouped evaluation passes: many parts of each system (pooled, per condition) from one
keying of its trials.

:func:`summarize_parts` returns what :func:`bosaris_dask.engine.summarize` returns for a list
of "systems" that are parts of a few real systems (:class:`~bosaris_dask.grouped_kernels.Part`:
the targets of some groups and the non-targets of some groups, e.g. one condition), bit for
bit, in the same passes, with the same refinement decisions (the same pass-1 bins, candidates,
plans, rounds and kept trials), but each real system's trials are read and keyed once per pass
instead of once per part:

- pass 1 counts a ``(group, bin)`` histogram per system (:mod:`bosaris_dask.grouped_kernels`),
  and sums the Cllr terms (and, with ``cross_entropy_plo``, the ECE's cross-entropy terms) per
  ``(group, class)`` exactly; a part's summary is the sum over its groups (the pooled one: over
  all groups), made on the client;
- a refinement pass picks each system's trials inside the union of its parts' candidate bins
  once, and counts each part's own.

Examples
--------
>>> import numpy as np
>>> import dask.array as da
>>> from bosaris_dask.grouped_kernels import Part
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
from dataclasses import dataclass, field, replace
from functools import partial

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask import config, engine, exact_sum, fixed_rates, kernels, memory, refinement, runner
from bosaris_dask.engine import ScoreSummary
from bosaris_dask.errors import OptionError, ScoreError
from bosaris_dask.grouped_kernels import (
    Part,
    check_group_codes,
    cross_entropy_length,
    grouped_cross_entropy_kernel,
    grouped_pass1_kernel,
    grouped_refine_kernel,
    grouped_select_kernel,
    merge_part_refinements,
    merge_parts,
    pass1_length,
    refine_kept_part,
    split_cross_entropy,
    split_pass1,
)
from bosaris_dask.keys import key_bits, threshold_keys

__all__ = ["summarize_parts", "grouped_pass1", "refine_parts", "GroupedPass1", "SystemPass1",
           "Part", "remap_groups"]  # fmt: skip


@dataclass(frozen=True)
class SystemPass1:
    """One system's merged grouped pass-1 result (:func:`grouped_pass1`).

    Attributes
    ----------
    counts
        ``(n_groups, nbins, 2)`` scored non-target and target trials per group and key bin.
    units
        Per group, the targets' and the non-targets' exact softplus sums
        (:mod:`~bosaris_dask.exact_sum` units).
    missing
        ``(n_groups, 2)`` key non-target and target trials without a score.
    pooled
        With the pooled histogram counted apart: its ``(n_non, n_tar)`` per pooled bin.
    """

    counts: np.ndarray
    units: list[list[int]]
    missing: np.ndarray
    pooled: tuple[np.ndarray, np.ndarray] | None = None


def _system_pass1(
    row: np.ndarray,
    *,
    k: int,
    name: str,
    n_groups: int,
    inputs: list[da.Array],
    key: xr.Dataset,
    nbins: int,
    allow_missing: bool,
    pooled_nbins: int = 0,
) -> SystemPass1:
    """System ``k``'s merged grouped pass-1 totals, or the error its trials call for (as
    :func:`bosaris_dask.engine.summarize` raises them)."""
    tail = 2 * pooled_nbins
    row, extra = (row[: len(row) - tail], row[len(row) - tail :]) if tail else (row, row[:0])
    counts, units, group_missing, bad = split_pass1(row, n_groups, nbins)
    engine.raise_trial_errors(name, int(bad), int(group_missing.sum()), inputs[0],
                              inputs[2 + 2 * k], inputs[3 + 2 * k], key, allow_missing)  # fmt: skip
    pooled = None
    if tail:
        n_non, n_tar = (np.rint(x).astype(np.int64) for x in extra.reshape(2, -1))
        pooled = (n_non, n_tar)
    return SystemPass1(counts, units, group_missing, pooled)


def _part_summary(first: GroupedPass1, part: Part, name: str) -> ScoreSummary:
    """A part's pass-1 summary from its system's grouped pass-1 totals."""
    own = first.systems[part.system]
    assert own is not None, "pass 1 did not count this system"
    if part.pooled and own.pooled is not None:
        n_non, n_tar = own.pooled
        nonempty = np.flatnonzero((n_tar + n_non) > 0)
        return _summary(
            first.dtype, nonempty, first.pooled_shift, n_tar[nonempty], n_non[nonempty],
            sum(u[0] for u in own.units), sum(u[1] for u in own.units),
            int(own.missing.sum()), name,
        )  # fmt: skip
    tar, non = part.groups(first.n_groups)
    n_tar = own.counts[tar, :, 1].sum(axis=0)
    n_non = own.counts[non, :, 0].sum(axis=0)
    sp_tar = exact_sum.to_float(sum(own.units[g][0] for g in np.flatnonzero(tar).tolist()))
    sp_non = exact_sum.to_float(sum(own.units[g][1] for g in np.flatnonzero(non).tolist()))
    nonempty = np.flatnonzero((n_tar + n_non) > 0)
    return _summary(
        first.dtype, nonempty, first.shift, n_tar[nonempty], n_non[nonempty], sp_tar, sp_non,
        int(own.missing[tar, 1].sum() + own.missing[non, 0].sum()), name,
    )  # fmt: skip


def _summary(
    dtype: np.dtype,
    nonempty: np.ndarray,
    shift: int,
    n_tar: np.ndarray,
    n_non: np.ndarray,
    sp_tar: int | float,
    sp_non: int | float,
    missing: int,
    name: str,
) -> ScoreSummary:
    """A pass-1 summary (softplus sums as exact units or floats), or the error of a part
    without targets or non-targets."""
    summary = ScoreSummary(
        dtype=dtype,
        lo=nonempty.astype(np.uint64) << np.uint64(shift),
        bits=np.full(len(nonempty), shift, dtype=np.int8),
        n_tar=n_tar, n_non=n_non,
        softplus_tar=sp_tar if isinstance(sp_tar, float) else exact_sum.to_float(sp_tar),
        softplus_non=sp_non if isinstance(sp_non, float) else exact_sum.to_float(sp_non),
        n_missing=missing, name=name,
    )  # fmt: skip
    if summary.n_target == 0 or summary.n_nontarget == 0:
        raise ScoreError(
            f"{name}: need both targets and non-targets, found {summary.n_target} "
            f"targets and {summary.n_nontarget} non-targets"
        )
    return summary


def _part_cross_entropy(units: list[list[list[int]]], part: Part, n_groups: int) -> np.ndarray:
    """A part's ``(len(plo), 2)`` cross-entropy sums (targets, non-targets) from its system's
    per-group exact units (:func:`~bosaris_dask.grouped_kernels.split_cross_entropy`)."""
    tar, non = (np.flatnonzero(m).tolist() for m in part.groups(n_groups))
    return np.array([
        [exact_sum.to_float(sum(at[g][0] for g in tar)),
         exact_sum.to_float(sum(at[g][1] for g in non))]
        for at in units
    ]).reshape(len(units), 2)  # fmt: skip


def _remap_block(block: np.ndarray, table: np.ndarray) -> np.ndarray:
    check_group_codes(block, len(table))  # a negative code would wrap around
    return table.take(block)


def remap_groups(groups: da.Array, table: np.ndarray) -> da.Array:
    """``table[g]`` for every cell's group ``g`` (lazy; a code outside the table is an
    OptionError when computed).

    >>> import dask.array as da
    >>> remap_groups(da.from_array(np.array([[0, 3]])), np.array([1, -1, -1, 0])).compute()
    array([[1, 0]])
    """
    return groups.map_blocks(_remap_block, table=table, dtype=table.dtype)


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


def _task_memory(
    inputs: list[da.Array],
    dtype: np.dtype,
    nbins: int,
    n_groups: int,
    n_parts: int,
    split_every: int,
    knobs: dict[str, int],
) -> memory.TaskMemory:
    """The peak memory of a task of these passes (:func:`memory.grouped_task_memory`)."""
    itemsizes = [a.dtype.itemsize for a in inputs]
    n_systems = (len(inputs) - 2) // 2
    if dtype == np.float64:
        itemsizes += [4] * n_systems
    cells = int(np.prod(inputs[0].shape))
    return memory.grouped_task_memory(
        tuple(max(c) for c in inputs[0].chunks), input_itemsizes=itemsizes, score_dtype=dtype,
        n_systems=n_systems, n_groups=n_groups, n_parts=n_parts, nbins=nbins,
        split_every=max(1, min(split_every, inputs[0].npartitions)),
        refine_bins=knobs["dense_budget"], raw_trials=min(knobs["raw_limit"], cells),
        kept_trials=min(knobs["keep_limit"], cells), block=knobs["block"],
        slice_size=knobs["slice"],
    )  # fmt: skip


@dataclass(frozen=True)
class GroupedPass1:
    """The result of a grouped pass 1 (:func:`grouped_pass1`), and what the refinement passes
    of :func:`refine_parts` read the data with.

    Attributes
    ----------
    systems
        Per system, its :class:`SystemPass1` (``None`` for a system not counted).
    n_groups, nbins, shift, pooled_shift
        The groups and the key bins (``key >> shift``; the pooled histograms counted apart:
        ``key >> pooled_shift``).
    cross_entropy_plo, cross_units
        The prior log-odds of the cross-entropy sums and, per system (``None`` for a system
        not counted), its exact per-group units
        (:func:`~bosaris_dask.grouped_kernels.split_cross_entropy`); none without them.
    """

    systems: list[SystemPass1 | None]
    n_groups: int
    nbins: int
    shift: int
    pooled_shift: int
    dtype: np.dtype
    inputs: list[da.Array]
    sys_names: list[str]
    split_every: int
    progress: bool | None
    knobs: dict[str, int]
    cross_entropy_plo: np.ndarray = field(default_factory=lambda: np.empty(0))
    cross_units: list | None = None

    @property
    def counts(self) -> np.ndarray:
        """``(S, n_groups, 2, 2)`` key trials per system, group, class (target 0, non-target
        1) and scored (unscored 0, scored 1): the layout of
        :func:`bosaris_dask.conditions.summaries.condition_counts` (zeros for a system not
        counted)."""
        out = np.zeros((len(self.systems), self.n_groups, 2, 2), dtype=np.int64)
        for k, own in enumerate(self.systems):
            if own is None:
                continue
            scored = own.counts.sum(axis=1)  # (group, non-target/target)
            out[k, :, 0, 1], out[k, :, 1, 1] = scored[:, 1], scored[:, 0]
            out[k, :, 0, 0], out[k, :, 1, 0] = own.missing[:, 1], own.missing[:, 0]
        return out


def grouped_pass1(
    scores: xr.Dataset | Sequence[xr.Dataset],
    key: xr.Dataset,
    groups: da.Array,
    n_groups: int,
    *,
    systems: Sequence[int] | None = None,
    pooled_apart: Sequence[int] = (),
    n_parts: int | None = None,
    allow_missing: bool = False,
    split_every: int = engine.DEFAULT_SPLIT_EVERY,
    coarse_bits: int | None = None,
    pooled_coarse_bits: int | None = None,
    progress: bool | None = None,
    names: Sequence[str] | None = None,
    cross_entropy_plo: Sequence[float] | np.ndarray = (),
) -> GroupedPass1:
    """Pass 1 of grouped passes: every counted system's ``(group, key bin)`` histogram, exact
    Cllr sums and missing trials per group, before any part is chosen.

    What a caller learns from it (e.g. which conditions have trials: :attr:`GroupedPass1.counts`)
    can choose the parts :func:`refine_parts` then summarizes and refines, so choosing them
    costs no pass of its own.

    Parameters
    ----------
    scores, key, groups, n_groups, allow_missing, split_every, progress
        As :func:`summarize_parts`.
    systems
        The systems to count (default: all).
    pooled_apart
        The systems whose pooled histogram is also counted apart at ``pooled_coarse_bits``
        (needs it).
    n_parts
        How many parts will be summarized (for the memory estimate and the default bits;
        default: one per counted system and group, plus one per counted system).
    coarse_bits, pooled_coarse_bits
        As :func:`summarize_parts` (default bits: the engine's for ``n_parts`` systems).
    names
        One name per system (errors about a system's trials name it).
    cross_entropy_plo
        As :func:`summarize_parts`: also sum each counted system's cross-entropy terms at
        these prior log-odds per ``(group, class)``, in the same pass.

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> from bosaris_dask.trials import make_key, make_scores
    >>> key = make_key(["m1", "m2"], ["s1", "s2"], np.array([[1, -1], [-1, 1]]))
    >>> scores = make_scores(["m1", "m2"], ["s1", "s2"], np.array([[2.0, 0.5], [-1.0, 0.5]]))
    >>> groups = da.from_array(np.array([[0, 0], [2, 2]], dtype=np.int16))
    >>> first = grouped_pass1([scores], key, groups, 3)
    >>> first.counts[0, :, :, 1].tolist()  # scored (target, non-target) per group
    [[1, 1], [0, 0], [1, 1]]
    """
    if isinstance(scores, xr.Dataset):
        scores = [scores]
    engine._check_inputs(scores, key, None)
    if not np.issubdtype(groups.dtype, np.integer):
        raise OptionError(f"groups must be integer codes 0 .. n_groups - 1, got {groups.dtype}")
    n_sys = len(scores)
    counted = list(range(n_sys)) if systems is None else sorted(set(systems))
    apart = sorted(set(pooled_apart))
    if apart and pooled_coarse_bits is None:
        raise OptionError("pooled histograms apart need pooled_coarse_bits")
    sys_names = list(names) if names is not None else [f"system-{k + 1}" for k in range(n_sys)]
    if len(sys_names) != n_sys:
        raise OptionError(f"{len(sys_names)} names for {n_sys} systems")
    knobs = engine._knobs()
    split_every = config.check_int("split_every", split_every, 2, 1 << 16)
    if coarse_bits is not None:
        coarse_bits = config.check_int("coarse_bits", coarse_bits, 1, engine.MAX_COARSE_BITS)
    if pooled_coarse_bits is not None:
        pooled_coarse_bits = config.check_int(
            "pooled_coarse_bits", pooled_coarse_bits, 1, engine.MAX_COARSE_BITS
        )
    if n_parts is None:
        n_parts = len(counted) * (n_groups + 1)
    blocks = {"block": knobs["block"], "slice_size": knobs["slice"]}
    base, dtype = engine._inputs(scores, key)
    inputs = [base[0], groups.rechunk(base[0].chunks), *base[1:]]
    bits = coarse_bits or engine._coarse_bits(n_parts)
    shift = key_bits(dtype) - bits
    nbins = 1 << bits
    pshift = key_bits(dtype) - pooled_coarse_bits if apart else shift  # type: ignore[operator]
    pnbins = 1 << pooled_coarse_bits if apart else 0  # type: ignore[operator]
    positions, codes = engine.key_codes_check(inputs[0], key, blocks)
    aggs = []
    for k in counted:
        mine = pnbins if k in apart else 0
        finalize = partial(
            _system_pass1, k=k, name=sys_names[k], n_groups=n_groups, inputs=inputs, key=key,
            nbins=nbins, allow_missing=allow_missing, pooled_nbins=mine,
        )  # fmt: skip
        chunk = partial(grouped_pass1_kernel, system=k, shift=shift, nbins=nbins,
                        n_groups=n_groups, pooled_shift=pshift if mine else None,
                        pooled_nbins=mine, **blocks)  # fmt: skip
        length = pass1_length(n_groups, nbins) + 2 * mine
        aggs.append(runner.Aggregation(sys_names[k], chunk, length, finalize=finalize))
    rows = n_groups  # a pooled histogram apart weighs as many rows of nbins as it is wider
    if apart:
        rows += 1 << max(0, pooled_coarse_bits - bits)  # type: ignore[operator]
    ce_plo = np.asarray(cross_entropy_plo, dtype=np.float64).reshape(-1)
    if not np.isfinite(ce_plo).all():
        raise OptionError("cross_entropy_plo must hold finite prior log-odds")
    cross = [runner.Aggregation(
        f"{sys_names[k]} cross-entropy",
        partial(grouped_cross_entropy_kernel, system=k, plo=ce_plo, n_groups=n_groups, **blocks),
        cross_entropy_length(len(ce_plo), n_groups),
        finalize=partial(split_cross_entropy, n_plo=len(ce_plo), n_groups=n_groups),
    ) for k in counted] if len(ce_plo) else []  # fmt: skip
    need = _task_memory(inputs, dtype, nbins, rows, n_parts, split_every, knobs)
    _, *found = runner.run_pass(
        "pass 1", [codes, *aggs, *cross], inputs, lead=positions, split_every=split_every,
        progress=progress, need=need,
    )  # fmt: skip
    found, units = found[: len(aggs)], found[len(aggs) :]
    per_system: list[SystemPass1 | None] = [None] * n_sys
    for k, own in zip(counted, found, strict=True):
        per_system[k] = own
    cross_units: list | None = None
    if cross:
        cross_units = [None] * n_sys
        for k, u in zip(counted, units, strict=True):
            cross_units[k] = u
    return GroupedPass1(
        per_system, n_groups, nbins, shift, pshift, dtype, inputs, sys_names, split_every,
        progress, knobs, ce_plo, cross_units,
    )  # fmt: skip


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
        What each summary counts (:class:`~bosaris_dask.grouped_kernels.Part`).
    thresholds, fmr, fnmr, allow_missing, split_every, progress, extra_candidates
        As :func:`~bosaris_dask.engine.summarize`; ``extra_candidates`` gets the part
        summaries.
    cross_entropy_plo
        As :func:`~bosaris_dask.engine.summarize`: pass 1 also sums each system's
        cross-entropy terms at these prior log-odds, per ``(group, class)``
        (:func:`~bosaris_dask.grouped_kernels.grouped_cross_entropy_kernel`), and each part's
        ``cross_entropy`` is the exact sum over its groups: the ECE of every condition, no
        extra pass.
    coarse_bits
        Pass-1 key bits (default: the engine's for as many systems as there are parts, so the
        bins are those of the ungrouped call).
    pooled_coarse_bits
        Pass-1 key bits of the pooled parts (``Part(k)``), which are then counted apart by the
        plain kernel (:func:`bosaris_dask.kernels.system_kernel`): with the engine's bits for
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
        names = [f"system-{k + 1}" for k in range(n_sys)]
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
    knobs, inputs, n_groups = first.knobs, first.inputs, first.n_groups
    split_every, progress, sys_names = first.split_every, first.progress, first.sys_names
    blocks = {"block": knobs["block"], "slice_size": knobs["slice"]}
    shift, n_sys = first.shift, len(first.systems)
    kappa = threshold_keys(np.asarray(thresholds, dtype=np.float64), first.dtype)
    passes = 1
    selection: refinement.Selection | None = None
    part_tuple = tuple(parts)
    while True:
        plans: list[tuple[np.ndarray, kernels.RefineSpec] | None] = []
        joint = extra_candidates(summaries) if extra_candidates is not None else None
        for j, s in enumerate(summaries):
            cands = refinement.candidates(s, kappa, False, fmr=fmr, fnmr=fnmr)
            if joint is not None and joint[j] is not None:
                cands = np.union1d(cands, joint[j]).astype(np.int64)
            if len(cands):
                own = first.systems[parts[j].system]
                apart = parts[j].pooled and own is not None and own.pooled is not None
                own_share = 1 if parts[j].pooled else share
                spec = refinement.plan(s, cands, first.pooled_shift if apart else shift,
                                       dense_budget=max(1, knobs["dense_budget"] // own_share),
                                       raw_limit=knobs["raw_limit"] // own_share)  # fmt: skip
                plans.append((cands, spec))
            else:
                plans.append(None)
        if all(p is None for p in plans):
            break
        specs = tuple(p[1] if p else None for p in plans)
        if selection is not None and not selection.holds(specs):
            selection = None
        keep = None
        if selection is None and refinement.volume(summaries, plans) <= knobs["keep_limit"]:
            keep = engine._blockwise(
                partial(grouped_select_kernel, specs=specs, parts=part_tuple, n_groups=n_groups,
                        **blocks), inputs)  # fmt: skip
            selection = refinement.Selection(specs, keep)
            passes += 1
        refined = [j for j, plan in enumerate(plans) if plan is not None]
        name = f"refinement pass {passes + (selection is None)}"
        if selection is not None:
            aggs = [runner.Aggregation(
                summaries[j].name, partial(refine_kept_part, part=j, spec=specs[j],
                                           kept_spec=selection.specs[j]),
                None, combine=merge_part_refinements) for j in refined]  # fmt: skip
            if keep is not None:
                selection.trials, results = runner.run_pass_and_keep(
                    name, aggs, [keep], keep, split_every=split_every, progress=progress
                )
            else:
                results = runner.run_pass(
                    name, aggs, [selection.trials], split_every=split_every, progress=progress
                )
            by_part = dict(zip(refined, results, strict=True))
        else:
            owners = [k for k in range(n_sys)
                      if any(parts[j].system == k for j in refined)]  # fmt: skip
            mine = {k: [j for j, p in enumerate(parts) if p.system == k] for k in owners}
            aggs = [runner.Aggregation(
                sys_names[k], partial(grouped_refine_kernel, system=k,
                                      specs=tuple(specs[j] for j in mine[k]),
                                      parts=tuple(parts[j] for j in mine[k]),
                                      n_groups=n_groups, **blocks),
                None, combine=merge_parts) for k in owners]  # fmt: skip
            results = runner.run_pass(
                name, aggs, inputs, split_every=split_every, progress=progress
            )
            passes += 1
            by_part = {j: r for k, rs in zip(owners, results, strict=True)
                       for j, r in zip(mine[k], rs, strict=True) if r is not None}  # fmt: skip
        for j in refined:
            plan = plans[j]
            if plan is not None:
                summaries[j] = refinement.apply_refinement(summaries[j], plan[0], plan[1],
                                                           by_part[j])  # fmt: skip
    return [replace(s, passes=passes) for s in summaries]
