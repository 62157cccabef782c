"""Pass 1 of the grouped passes: per system, a ``(group, key bin)`` histogram, the exact Cllr
(and cross-entropy) sums and the missing trials per group, from one keying of its trials.

:func:`grouped_pass1` runs it; :class:`GroupedPass1` holds what it found (the per-group counts
a caller chooses parts from) and what the refinement passes of
:func:`bosaris_dask.passes.grouped.refine_parts` read the data with.

Examples
--------
>>> import numpy as np
>>> import dask.array as da
>>> from bosaris_dask.trials import make_key, make_scores
>>> key = make_key(["m1", "m2"], ["s1", "s2"], np.array([[1, -1], [-1, 1]]))
>>> scores = make_scores(["m1", "m2"], ["s1", "s2"], np.array([[2.0, 0.5], [-1.0, 0.5]]))
>>> first = grouped_pass1([scores], key, da.from_array(np.array([[0, 0], [1, 1]])), 2)
>>> first.counts[0, :, :, 1].tolist()  # scored (target, non-target) per group
[[1, 1], [1, 1]]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask import config, engine
from bosaris_dask.errors import OptionError
from bosaris_dask.inputs import (
    check_inputs,
    key_codes_check,
    names_or_default,
    pass_inputs,
    raise_trial_errors,
)
from bosaris_dask.passes import memory, pass1_bins, runner
from bosaris_dask.passes.binmap import BinMap
from bosaris_dask.passes.grouped_cross_entropy import (
    cross_entropy_length,
    grouped_cross_entropy_kernel,
    split_cross_entropy,
)
from bosaris_dask.passes.grouped_kernels import (
    check_group_codes,
    grouped_bins_note,
    grouped_pass1_kernel,
    pass1_length,
    split_pass1,
)
from bosaris_dask.passes.keys import key_bits
from bosaris_dask.passes.refinement import ChunkBins

__all__ = ["grouped_pass1", "GroupedPass1", "SystemPass1", "remap_groups", "COMPILED_TRIALS"]

#: From how many cells on the grouped pass 1 counts trials with the compiled loops of
#: :mod:`bosaris_dask.passes.fast_grouped` (where numba is installed): they save about 15 ns of CPU
#: per trial at 24 conditions (two histograms and the per-condition Cllr units), and loading
#: numba costs a process about 0.4 s.
COMPILED_TRIALS = 1 << 24


@dataclass(frozen=True)
class SystemPass1:
    """One system's merged grouped pass-1 result (:func:`grouped_pass1`).

    Attributes
    ----------
    counts
        ``(n_groups, nbins, 2)`` scored non-target and target trials per group and key bin.
    units
        Per group, the targets' and the non-targets' exact softplus sums
        (:mod:`~bosaris_dask.passes.exact_sum` units).
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
    raise_trial_errors(name, int(bad), int(group_missing.sum()), inputs[0],
                       inputs[2 + 2 * k], inputs[3 + 2 * k], key, allow_missing)  # fmt: skip
    pooled = None
    if tail:
        n_non, n_tar = (np.rint(x).astype(np.int64) for x in extra.reshape(2, -1))
        pooled = (n_non, n_tar)
    return SystemPass1(counts, units, group_missing, pooled)


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


def _task_memory(
    inputs: list[da.Array],
    dtype: np.dtype,
    nbins: int,
    n_groups: int,
    n_parts: int,
    split_every: int,
    knobs: dict[str, int],
    share: int = 1,
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
        slice_size=knobs["slice"], share=share,
    )  # fmt: skip


@dataclass(frozen=True)
class GroupedPass1:
    """The result of a grouped pass 1 (:func:`grouped_pass1`), and what the refinement passes
    of :func:`~bosaris_dask.passes.grouped.refine_parts` read the data with.

    Attributes
    ----------
    systems
        Per system, its :class:`SystemPass1` (``None`` for a system not counted).
    n_groups
        The number of groups.
    maps, pooled_maps
        Per system, the bins of its ``(group, bin)`` histogram and of its pooled histogram
        counted apart (:class:`~bosaris_dask.passes.binmap.BinMap`; ``pooled_maps`` ``None`` when
        no pooled histogram is counted apart).
    cross_entropy_plo, cross_units
        The prior log-odds of the cross-entropy sums and, per system (``None`` for a system
        not counted), its exact per-group units
        (:func:`~bosaris_dask.passes.grouped_cross_entropy.split_cross_entropy`); none without them.
    """

    systems: list[SystemPass1 | None]
    n_groups: int
    maps: list[BinMap]
    pooled_maps: list[BinMap] | None
    dtype: np.dtype
    inputs: list[da.Array]
    sys_names: list[str]
    split_every: int
    progress: bool | None
    knobs: dict[str, int]
    cross_entropy_plo: np.ndarray = field(default_factory=lambda: np.empty(0))
    cross_units: list | None = None
    held: list | None = None  # per system: ChunkBins of its key bins (None: not noted)
    pooled_held: list | None = None  # the same for its pooled histogram apart
    rode: list | None = None  # the results of the specs riding along (``grouped_pass1``)

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
    share: int = 1,
    allow_missing: bool = False,
    split_every: int = engine.DEFAULT_SPLIT_EVERY,
    coarse_bits: int | None = None,
    pooled_coarse_bits: int | None = None,
    progress: bool | None = None,
    names: Sequence[str] | None = None,
    cross_entropy_plo: Sequence[float] | np.ndarray = (),
    bin_maps: Sequence[BinMap] | None = None,
    pooled_bin_maps: Sequence[BinMap] | None = None,
    riding: Sequence[runner.Aggregation] = (),
) -> GroupedPass1:
    """Pass 1 of grouped passes: every counted system's ``(group, key bin)`` histogram, exact
    Cllr sums and missing trials per group, before any part is chosen.

    What a caller learns from it (e.g. which conditions have trials: :attr:`GroupedPass1.counts`)
    can choose the parts :func:`~bosaris_dask.passes.grouped.refine_parts` then summarizes and
    refines, so choosing them costs no pass of its own.

    Parameters
    ----------
    scores, key, groups, n_groups, allow_missing, split_every, progress
        As :func:`~bosaris_dask.passes.grouped.summarize_parts`.
    systems
        The systems to count (default: all).
    pooled_apart
        The systems whose pooled histogram is also counted apart at ``pooled_coarse_bits``
        (needs it).
    n_parts
        How many parts will be summarized (for the memory estimate and the default bits;
        default: one per counted system and group, plus one per counted system).
    share
        The ``share`` the parts will be refined with
        (:func:`~bosaris_dask.passes.grouped.refine_parts`), for the memory estimate.
    coarse_bits, pooled_coarse_bits
        As :func:`~bosaris_dask.passes.grouped.summarize_parts` (default bits: the engine's for
        ``n_parts`` systems).
    names
        One name per system (errors about a system's trials name it).
    cross_entropy_plo
        As :func:`~bosaris_dask.passes.grouped.summarize_parts`: also sum each counted system's
        cross-entropy terms at these prior log-odds per ``(group, class)``, in the same pass.
    bin_maps, pooled_bin_maps
        Per system, the bins of its ``(group, bin)`` histogram and of its pooled histogram
        apart (:class:`~bosaris_dask.passes.binmap.BinMap`, e.g. fitted to a sample of its scores by
        :func:`bosaris_dask.passes.pass1_bins.fitted_bin_maps`), instead of the top ``coarse_bits``
        and ``pooled_coarse_bits`` key bits. Every bin is a key prefix either way, so only the
        candidates after pass 1 (and so the passes) depend on them, not the exact results.
    riding
        Specs riding along pass 1 (their chunks get the trial positions, the key's classes,
        ``groups``, then each system's scores and mask); their results are in ``rode``.

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
    check_inputs(scores, key, None)
    if not np.issubdtype(groups.dtype, np.integer):
        raise OptionError(f"groups must be integer codes 0 .. n_groups - 1, got {groups.dtype}")
    n_sys = len(scores)
    counted = list(range(n_sys)) if systems is None else sorted(set(systems))
    apart = sorted(set(pooled_apart))
    if apart and pooled_coarse_bits is None and pooled_bin_maps is None:
        raise OptionError("pooled histograms apart need pooled_coarse_bits or pooled_bin_maps")
    sys_names = names_or_default(names, n_sys)
    if len(sys_names) != n_sys:
        raise OptionError(f"{len(sys_names)} names for {n_sys} systems")
    knobs = engine.engine_knobs()
    split_every = config.check_int("split_every", split_every, 2, 1 << 16)
    if coarse_bits is not None:
        coarse_bits = config.check_int("coarse_bits", coarse_bits, 1, pass1_bins.MAX_COARSE_BITS)
    if pooled_coarse_bits is not None:
        pooled_coarse_bits = config.check_int(
            "pooled_coarse_bits", pooled_coarse_bits, 1, pass1_bins.MAX_COARSE_BITS
        )
    if n_parts is None:
        n_parts = len(counted) * (n_groups + 1)
    blocks = {"block": knobs["block"], "slice_size": knobs["slice"]}
    base, dtype = pass_inputs(scores, key)
    inputs = [base[0], groups.rechunk(base[0].chunks), *base[1:]]
    width = key_bits(dtype)
    if bin_maps is None:
        bits = coarse_bits or pass1_bins.default_coarse_bits(n_parts)
        maps = [BinMap.uniform(width, bits)] * n_sys
    else:
        maps = pass1_bins.check_maps(bin_maps, n_sys, width, "bin_maps")
    pmaps: list[BinMap] | None = None
    if pooled_bin_maps is not None:
        pmaps = pass1_bins.check_maps(pooled_bin_maps, n_sys, width, "pooled_bin_maps")
    elif apart:
        pmaps = [BinMap.uniform(width, pooled_coarse_bits)] * n_sys  # type: ignore[arg-type]
    positions, codes = key_codes_check(inputs[0], key, blocks)
    skip = bool(knobs["skip_chunks"]) and inputs[0].npartitions > 1
    compiled = int(np.prod(inputs[0].shape)) >= COMPILED_TRIALS
    coarse: dict[int, int] = {}  # per system: ChunkBins coarseness of its histograms' notes
    pcoarse: dict[int, int] = {}
    aggs = []
    for k in counted:
        nbins = maps[k].nbins
        pmap = pmaps[k] if pmaps is not None and k in apart else None
        mine = pmap.nbins if pmap is not None else 0
        finalize = partial(
            _system_pass1, k=k, name=sys_names[k], n_groups=n_groups, inputs=inputs, key=key,
            nbins=nbins, allow_missing=allow_missing, pooled_nbins=mine,
        )  # fmt: skip
        chunk = partial(
            grouped_pass1_kernel, system=k, shift=pass1_bins.kernel_shift(maps[k]), nbins=nbins,
            n_groups=n_groups, pooled_shift=pass1_bins.kernel_shift(pmap) if pmap else None,
            pooled_nbins=mine, binmap=pass1_bins.kernel_map(maps[k]),
            pooled_binmap=pass1_bins.kernel_map(pmap), compiled=compiled, encoded=True, **blocks,
        )  # fmt: skip
        length = pass1_length(n_groups, nbins) + 2 * mine
        coarse[k] = ChunkBins.coarseness(inputs[0].npartitions, nbins)
        pcoarse[k] = ChunkBins.coarseness(inputs[0].npartitions, mine) if mine else 0
        note = partial(grouped_bins_note, n_groups=n_groups, nbins=nbins, coarse=coarse[k],
                       pooled_nbins=mine, pooled_coarse=pcoarse[k]) if skip else None  # fmt: skip
        aggs.append(runner.Aggregation(sys_names[k], chunk, length, finalize=finalize, note=note))
    nbins = max(maps[k].nbins for k in counted)
    rows = n_groups  # a pooled histogram apart weighs as many rows of nbins as it is wider
    if apart and pmaps is not None:
        rows += -(-max(pmaps[k].nbins for k in apart) // nbins)
    ce_plo = np.asarray(cross_entropy_plo, dtype=np.float64).reshape(-1)
    if not np.isfinite(ce_plo).all():
        raise OptionError("cross_entropy_plo must hold finite prior log-odds")
    cross = [runner.Aggregation(
        f"{sys_names[k]} cross-entropy",
        partial(grouped_cross_entropy_kernel, system=k, plo=ce_plo, n_groups=n_groups,
                compiled=int(np.prod(inputs[0].shape)) * len(ce_plo) >= engine.COMPILED_ECE_TERMS,
                **blocks),
        cross_entropy_length(len(ce_plo), n_groups),
        finalize=partial(split_cross_entropy, n_plo=len(ce_plo), n_groups=n_groups),
    ) for k in counted] if len(ce_plo) else []  # fmt: skip
    need = _task_memory(inputs, dtype, nbins, rows, n_parts, split_every, knobs, share)
    _, *found = runner.run_pass(
        "pass 1", [codes, *aggs, *cross, *riding], inputs, lead=positions,
        split_every=split_every, progress=progress, need=need,
    )  # fmt: skip
    found, rode = found[: len(found) - len(riding)], found[len(found) - len(riding) :]
    found, units = found[: len(aggs)], found[len(aggs) :]
    per_system: list[SystemPass1 | None] = [None] * n_sys
    held: list | None = [None] * n_sys if skip else None
    pooled_held: list | None = [None] * n_sys if skip else None
    for k, own in zip(counted, found, strict=True):
        if held is not None and pooled_held is not None:  # which bins each chunk holds
            own, notes = own
            chunks = inputs[0].chunks
            held[k] = ChunkBins.from_notes([n for n, _ in notes], chunks, maps[k].nbins,
                                           coarse[k])  # fmt: skip
            if k in apart and pmaps is not None:
                pooled_held[k] = ChunkBins.from_notes([p for _, p in notes], chunks,
                                                      pmaps[k].nbins, pcoarse[k])  # fmt: skip
        per_system[k] = own
    cross_units: list | None = None
    if cross:
        cross_units = [None] * n_sys
        for k, u in zip(counted, units, strict=True):
            cross_units[k] = u
    return GroupedPass1(
        per_system, n_groups, maps, pmaps, dtype, inputs, sys_names, split_every, progress,
        knobs, ce_plo, cross_units, held, pooled_held, rode if riding else None,
    )  # fmt: skip
