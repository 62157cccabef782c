"""The evaluation engine: exact score summaries from a fixed number of passes over the chunks.

This module runs a plain evaluation's passes (:mod:`bosaris_dask.passes.grouped_histograms` and
:mod:`bosaris_dask.passes.rounds` run those of conditions and refinement rounds on the same plan).
Scores never get sorted globally. Instead:

1. **Pass 1** keys every score (:mod:`bosaris_dask.passes.keys`) and, in one fused kernel per chunk,
   counts targets and non-targets per key prefix (the top ``coarse_bits`` bits, or, for more
   trials than ``keep-limit``, prefixes of lengths fitted to a sample of the scores:
   :mod:`bosaris_dask.passes.binmap`), sums what needs no refinement (Cllr terms, missing trials,
   non-finite scores). Chunk results are merged by exact sums in a tree (``split_every``).
2. On the client, the bin edges are exact ROC points. A bin can hide an ROC convex hull vertex
   only if its optimistic corner lies below the hull of the edges; a Bayes threshold needs exact
   counts only in the bin that contains it. Only those **candidate bins** are refined
   (:mod:`bosaris_dask.passes.refinement` chooses them and applies what a pass finds).
3. **Refinement passes** sub-histogram the candidate bins on the next key bits, or, when few
   trials remain in them, pull their exact keys. When the candidate trials fit in memory, one
   pass keeps them and every later round runs on them alone. A pass that reads the data reads
   only the chunks holding a trial of a candidate's pass-1 bin (pass 1 notes which bins each
   chunk holds: :class:`~bosaris_dask.passes.refinement.ChunkBins`; knob ``skip-chunks``): from
   embeddings, a chunk skipped is a block product not computed. A score source with a screen
   (:mod:`bosaris_dask.passes.screening`; knob ``screen``) computes, for such a pass, exact scores
   only where they can fall in a candidate bin: from embeddings, a float32 product per block instead
   of the exact float64 one (:mod:`bosaris_dask.embeddings.screen`).

The checks of the inputs, the arrays the kernels read and the errors pass 1 finds in them are
:mod:`bosaris_dask.inputs`'s; work that rides along the passes (the exact AUC) is declared by
:mod:`bosaris_dask.passes.riders`.

The result of a system is a :class:`~bosaris_dask.passes.score_summary.ScoreSummary`: ascending,
non-empty key bins with target and non-target counts, exact (single keys) wherever a metric
could depend on it.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.trials import make_key, make_scores
>>> key = make_key(["m1", "m2"], ["s1", "s2"], np.array([[1, -1], [-1, 1]]))
>>> scores = make_scores(["m1", "m2"], ["s1", "s2"], np.array([[2.0, 0.5], [-1.0, 0.5]]))
>>> (summary,) = summarize([scores], key)
>>> summary.n_target, summary.n_nontarget, summary.passes
(2, 2, 2)
>>> summary.n_tar.tolist(), summary.n_non.tolist(), summary.bits.tolist()
([0, 1, 1], [1, 1, 0], [44, 0, 44])

Only the mixed bin holding 0.5 was refined to an exact value: the pure bins cannot hide a hull
vertex. :func:`score_bins` also resolves the bins PAV calibration needs:

>>> score_bins(scores, key)[0].tolist()
[-1.0, 0.5, 2.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
from dask.utils import funcname

from bosaris_dask import config, fixed_rates
from bosaris_dask.errors import OptionError
from bosaris_dask.inputs import (
    check_both_classes,
    check_inputs,
    key_codes_check,
    names_or_default,
    pass_inputs,
    raise_trial_errors,
)
from bosaris_dask.passes import (
    exact_sum,
    kernels,
    memory,
    pass1_bins,
    refine_kernels,
    refinement,
    rounds,
    runner,
    screening,
    softplus,
)
from bosaris_dask.passes.binmap import BinMap
from bosaris_dask.passes.keys import threshold_keys
from bosaris_dask.passes.riders import Rider
from bosaris_dask.passes.score_summary import ScoreSummary

__all__ = ["ScoreSummary", "summarize", "score_bins", "DEFAULT_SPLIT_EVERY"]

#: How many chunk results one merge task adds up.
DEFAULT_SPLIT_EVERY = 8
#: From how many cells on pass 1 counts trials with the compiled loop of
#: :mod:`bosaris_dask.passes.fast_pass1`, and a refinement pass selects them with that of
#: :mod:`bosaris_dask.passes.fast_select` (where numba is installed): it saves about 2.7 ns of CPU
#: per trial, and loading numba costs a process about 0.4 s (measured: 16% slower at 1e8 trials).
COMPILED_PASS1_TRIALS = 1 << 28
#: From how many ECE terms (cells times grid points) pass 1 sums the cross-entropy terms with
#: the compiled loops of :mod:`bosaris_dask.passes.fast_ece` (where numba is installed; the same
#: bits): they save about 2 ns of CPU per term, loading numba costs a process about 0.4 s.
COMPILED_ECE_TERMS = 1 << 28


# --------------------------------------------------------------------------------------------
# graph construction
# --------------------------------------------------------------------------------------------


def blockwise_pass(kernel: Callable, inputs: list[da.Array]) -> da.Array:
    """``kernel`` on every chunk of ``inputs`` (all indexed ``ij``): one object per chunk."""
    args: list[Any] = []
    for arr in inputs:
        args += [arr, "ij"]
    return runner.chunk_tasks(
        kernel, args, f"{funcname(kernel)}-{runner.task_token(kernel, *args)}"
    )


def _pass1_summary(
    row: np.ndarray,
    *,
    name: str,
    k: int,
    inputs: list[da.Array],
    key: xr.Dataset,
    dtype: np.dtype,
    binmap: BinMap,
    allow_missing: bool,
) -> ScoreSummary:
    """System ``k``'s summary from its pass-1 totals, or the error its trials call for."""
    nbins = binmap.nbins
    n_non, n_tar = row[:nbins].astype(np.int64), row[nbins : 2 * nbins].astype(np.int64)
    limbs = row[2 * nbins : -2].reshape(2, -1)
    sp_tar, sp_non = exact_sum.from_limbs_array(limbs).tolist()
    missing, bad = row[-2:]
    raise_trial_errors(name, int(bad), int(missing), inputs[0], inputs[1 + 2 * k],
                       inputs[2 + 2 * k], key, allow_missing)  # fmt: skip
    nonempty = np.flatnonzero((n_tar + n_non) > 0)
    lo, bits = binmap.bin_lo_bits(nonempty)
    summary = ScoreSummary(
        dtype=dtype,
        lo=lo,
        bits=bits,
        n_tar=n_tar[nonempty],
        n_non=n_non[nonempty],
        softplus_units=(sp_tar, sp_non),
        n_missing=int(missing),
        name=name,
    )
    return check_both_classes(summary)


def _cross_entropy_units(total: np.ndarray, n: int) -> list[tuple[int, int]]:
    """The ``n`` exact (target, non-target) unit sums of :func:`softplus.cross_entropy_kernel`'s
    merged limbs."""
    units = exact_sum.from_limbs_array(np.asarray(total).reshape(n * 2, exact_sum.LIMBS)).tolist()
    return list(zip(units[::2], units[1::2], strict=True))


def engine_knobs() -> dict[str, int]:
    """The engine's knobs (:mod:`bosaris_dask.config`), read and checked when a graph is built."""
    return {name.replace("-", "_"): config.get(name) for name in config.KNOBS}


def _task_memory(
    inputs: list[da.Array],
    dtype: np.dtype,
    nbins: int,
    split_every: int,
    knobs: dict[str, int] | None = None,
) -> memory.TaskMemory:
    """The peak memory of a task of this evaluation's passes.

    A merge adds at most as many results as there are chunks, and no pass pulls or keeps more
    trials than there are cells: small jobs need little, whatever the budgets.
    """
    itemsizes = [a.dtype.itemsize for a in inputs]
    if dtype == np.float64:  # float32 chunks converted in the graph: both copies are alive
        itemsizes += [4] * (len(inputs) // 2)
    cells = int(np.prod(inputs[0].shape))
    k = knobs or engine_knobs()
    return memory.pass_task_memory(
        tuple(max(c) for c in inputs[0].chunks), input_itemsizes=itemsizes, score_dtype=dtype,
        n_systems=len(inputs) // 2, nbins=nbins,
        split_every=max(1, min(split_every, inputs[0].npartitions)),
        refine_bins=k["dense_budget"], raw_trials=min(k["raw_limit"], cells),
        kept_trials=min(k["keep_limit"], cells), block=k["block"], slice_size=k["slice"],
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# the public entry point
# --------------------------------------------------------------------------------------------


def summarize(
    scores: xr.Dataset | Sequence[xr.Dataset],
    key: xr.Dataset,
    *,
    thresholds: Sequence[float] | np.ndarray = (),
    pav_bounds: bool = False,
    fmr: Sequence[float] | np.ndarray = (),
    fnmr: Sequence[float] | np.ndarray = (),
    cross_entropy_plo: Sequence[float] | np.ndarray = (),
    allow_missing: bool = False,
    split_every: int = DEFAULT_SPLIT_EVERY,
    coarse_bits: int | None = None,
    progress: bool | None = None,
    names: Sequence[str] | None = None,
    extra_candidates: Callable[[list[ScoreSummary]], list[np.ndarray | None]] | None = None,
    own_candidates: Sequence[bool] | None = None,
    bin_maps: Sequence[BinMap] | None = None,
    rider: Rider | None = None,
) -> list[ScoreSummary]:
    """Exact summaries of one or more systems' scores against one key.

    Parameters
    ----------
    scores
        A Scores object or a list of them (one per system, as :func:`bosaris_dask.evaluate`
        takes them); each is aligned to the key's ids.
    key
        The Key (possibly label-derived).
    thresholds
        Score thresholds at which exact error counts are needed (e.g. Bayes thresholds
        ``-plo``); bins containing them are refined.
    pav_bounds
        Also make exact the bins next to each hull vertex (the score range of every PAV block),
        as PAV calibration needs.
    fmr, fnmr
        Target false-match and false-non-match rates (in ``(0, 1]``): also make exact the bins
        that hold their operating points' thresholds and counts
        (:func:`bosaris_dask.fixed_rates.fixed_rate_candidates`), in the same refinement passes.
    cross_entropy_plo
        Prior log-odds at which pass 1 also sums each system's cross-entropy terms (the ECE
        plot, :mod:`bosaris_dask.ece`; ``len`` softplus evaluations per trial, no extra pass).
    allow_missing
        Drop key trials that have no score instead of raising
        :class:`~bosaris_dask.errors.MissingTrialsError`.
    split_every
        How many chunk results one merge task combines (2 to 65536).
    coarse_bits
        Key prefix bits of the first pass, 1 to
        :data:`~bosaris_dask.passes.pass1_bins.MAX_COARSE_BITS` (default: 20 for one
        or two systems, fewer for more). The block sizes and refinement budgets are dask config
        keys (:mod:`bosaris_dask.config`), read when the graphs are built.
    progress
        Show a progress bar for each pass; ``None`` follows the innermost
        :func:`bosaris_dask.progress.showing_progress` block (no bar outside one).
    names
        System names, stored in the summaries.
    extra_candidates
        Called with the current summaries before every refinement round; returns, per
        system, more bin indices to refine (``None`` for none), only bins with ``bits > 0``.
        Joint curves over several systems (equalized metrics,
        :mod:`bosaris_dask.conditions.equalized`) use it to refine where only their
        combination needs it, in the same rounds.
    own_candidates
        Per system, whether it gets its own candidates (hull, thresholds, PAV bounds, fixed
        rates); default all. ``False`` for a summary that only serves ``extra_candidates``
        (:mod:`bosaris_dask.spoofing.scale`): its hull is then not exact.
    bin_maps
        Pass 1's bins, one :class:`~bosaris_dask.passes.binmap.BinMap` per system (e.g. from
        :func:`~bosaris_dask.passes.pass1_bins.fitted_bin_maps`), instead of those ``coarse_bits``
        and ``bosaris_dask.adaptive-bins`` choose.
    rider
        Work riding along pass 1 and the next pass that reads the data
        (:class:`~bosaris_dask.passes.riders.Rider`).

    Returns
    -------
    list of ScoreSummary
        One per system, in order (a list of one for one Scores object).

    Raises
    ------
    TrialError
        ``key`` is not a Key, a system is not Scores, ids are not unique.
    OptionError
        ``names`` of another length than ``scores``; ``split_every``, ``coarse_bits`` or a
        ``bosaris_dask.*`` config value of the wrong type or out of its range.
    ScoreError
        Scores that are not real numbers, non-finite scores on trials, or no targets or no
        non-targets.
    MissingTrialsError
        Key trials without a score, unless ``allow_missing``.
    MemoryLimitError
        The distributed workers' memory limits cannot hold the tasks (checked before pass 1).

    Examples
    --------
    >>> from bosaris_dask.trials import make_key, make_scores
    >>> key = make_key(["m1", "m2"], ["s1", "s2"], [[1, -1], [-1, 1]])
    >>> scores = make_scores(["m1", "m2"], ["s1", "s2"], [[2.5, -1.0], [0.3, 1.5]])
    >>> (summary,) = summarize(scores, key)
    >>> summary.n_target, summary.n_nontarget, summary.passes
    (2, 2, 1)
    """
    if isinstance(scores, xr.Dataset):
        scores = [scores]
    check_inputs(scores, key, names)
    fmr = fixed_rates.check_rates(fmr, "FMR") if len(fmr) else np.empty(0)
    fnmr = fixed_rates.check_rates(fnmr, "FNMR") if len(fnmr) else np.empty(0)
    if own_candidates is not None and len(own_candidates) != len(scores):
        raise OptionError(f"{len(own_candidates)} own_candidates flags for {len(scores)} systems")
    knobs = engine_knobs()
    split_every = config.check_int("split_every", split_every, 2, 1 << 16)
    if coarse_bits is not None:
        most = pass1_bins.MAX_COARSE_BITS
        coarse_bits = config.check_int("coarse_bits", coarse_bits, 1, most)
    blocks = {"block": knobs["block"], "slice_size": knobs["slice"]}
    inputs, dtype = pass_inputs(scores, key)
    n_sys = len(scores)
    cells = int(np.prod(inputs[0].shape))
    maps = pass1_bins.system_maps(inputs, dtype, coarse_bits=coarse_bits, bin_maps=bin_maps,
                                  knobs=knobs)  # fmt: skip
    nbins = max(m.nbins for m in maps)
    positions, codes = key_codes_check(inputs[0], key, blocks)
    skip = bool(knobs["skip_chunks"]) and inputs[0].npartitions > 1
    systems = []
    for k, name in enumerate(names_or_default(names, n_sys)):
        finalize = partial(
            _pass1_summary, name=name, k=k, inputs=inputs, key=key, dtype=dtype,
            binmap=maps[k], allow_missing=allow_missing,
        )  # fmt: skip
        chunk = partial(kernels.system_kernel, system=k, shift=pass1_bins.kernel_shift(maps[k]),
                        nbins=maps[k].nbins, binmap=pass1_bins.kernel_map(maps[k]), encoded=True,
                        compiled=cells >= COMPILED_PASS1_TRIALS, **blocks)  # fmt: skip
        coarse = refinement.ChunkBins.coarseness(inputs[0].npartitions, maps[k].nbins)
        note = partial(kernels.bins_note, nbins=maps[k].nbins, coarse=coarse) if skip else None
        systems.append(runner.Aggregation(name, chunk, kernels.coarse_length(maps[k].nbins),
                                          finalize=finalize, note=note))  # fmt: skip
    ce_plo = np.asarray(cross_entropy_plo, dtype=np.float64).reshape(-1)
    if not np.isfinite(ce_plo).all():
        raise OptionError("cross_entropy_plo must hold finite prior log-odds")
    ce_length = 2 * len(ce_plo) * exact_sum.LIMBS
    cross = [
        runner.Aggregation(
            f"{s.name} cross-entropy", partial(
                softplus.cross_entropy_kernel, system=k, plo=ce_plo,
                compiled=cells * len(ce_plo) >= COMPILED_ECE_TERMS, **blocks),
            ce_length, finalize=partial(_cross_entropy_units, n=len(ce_plo)),
        )
        for k, s in enumerate(systems)
    ] if len(ce_plo) else []  # fmt: skip
    need = _task_memory(inputs, dtype, nbins, split_every, knobs)
    riding = list(rider.pass1) if rider is not None else []
    _, *summaries = runner.run_pass(
        "pass 1", [codes, *systems, *cross, *riding], inputs, lead=positions,
        split_every=split_every, progress=progress, need=need,
    )  # fmt: skip
    if riding:
        summaries, rode = summaries[: -len(riding)], summaries[-len(riding) :]
    held: list[refinement.ChunkBins] | None = None
    if skip:  # which pass-1 bins each chunk holds: refinement passes read only what they need
        held = [refinement.ChunkBins.from_notes(
                    notes, inputs[0].chunks, m.nbins,
                    refinement.ChunkBins.coarseness(inputs[0].npartitions, m.nbins))
                for (_, notes), m in zip(summaries[:n_sys], maps, strict=True)]  # fmt: skip
        summaries = [s for s, _ in summaries[:n_sys]] + summaries[n_sys:]
    if cross:
        sums, summaries = summaries[n_sys:], summaries[:n_sys]
        summaries = [replace(s, cross_entropy_plo=ce_plo, cross_entropy=x)
                     for s, x in zip(summaries, sums, strict=True)]  # fmt: skip
    along = None  # a rider's pass, computed with the next pass that reads the data
    if rider is not None:
        along = rider.after_pass1([replace(s) for s in summaries], rode if riding else [], inputs)

    kappa = threshold_keys(np.asarray(thresholds, dtype=np.float64), dtype)

    def plan(current: list[ScoreSummary]) -> list[rounds.Plan]:
        plans: list[rounds.Plan] = []
        joint = extra_candidates(current) if extra_candidates is not None else None
        for k, s in enumerate(current):
            if own_candidates is None or own_candidates[k]:
                cands = refinement.candidates(s, kappa, pav_bounds, fmr=fmr, fnmr=fnmr)
            else:
                cands = np.empty(0, dtype=np.int64)
            if joint is not None and joint[k] is not None:
                cands = np.union1d(cands, joint[k]).astype(np.int64)
            if len(cands):
                spec = refinement.plan(
                    s, cands, pass1_bins.kernel_shift(maps[k]), dense_budget=knobs["dense_budget"],
                    raw_limit=knobs["raw_limit"], binmap=maps[k],
                )  # fmt: skip
                plans.append((cands, spec))
            else:
                plans.append(None)
        return plans

    compiled = cells >= COMPILED_PASS1_TRIALS
    merge = refine_kernels.merge_system_refinements

    def select(specs: rounds.Specs, read: list[da.Array]) -> da.Array:
        kernel = partial(refine_kernels.select_kernel, specs=specs, compiled=compiled, **blocks)
        return blockwise_pass(kernel, read)

    def kept_aggregations(refined: list[int], specs: rounds.Specs,
                          selection: refinement.Selection) -> list[runner.Aggregation]:  # fmt: skip
        return [runner.Aggregation(summaries[k].name, partial(
                    refine_kernels.refine_kept_kernel, system=k, spec=specs[k],
                    kept_spec=selection.specs[k]), None, combine=merge)
                for k in refined]  # fmt: skip

    def read_aggregations(refined: list[int], specs: rounds.Specs):
        aggs = [runner.Aggregation(summaries[k].name, partial(
                    refine_kernels.refine_system_kernel, system=k, spec=specs[k],
                    compiled=compiled, **blocks), None, combine=merge)
                for k in refined]  # fmt: skip
        return aggs, lambda results: dict(zip(refined, results, strict=True))

    plan_rounds = rounds.Rounds(
        inputs=inputs, dtype=dtype, first_scores=1, plan=plan,
        ranges=lambda specs: [screening.spec_ranges(spec, dtype) for spec in specs],
        held=None if held is None else held.__getitem__, select=select,
        kept_aggregations=kept_aggregations, read_aggregations=read_aggregations,
        keep_limit=knobs["keep_limit"], split_every=split_every, progress=progress,
    )  # fmt: skip
    return rounds.run_rounds(summaries, plan_rounds, rider, along)


def score_bins(
    scores: xr.Dataset, key: xr.Dataset, **kwargs: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Ascending score bins with exact PAV block boundaries, for PAV calibration at scale.

    Returns ``(score_lo, score_hi, n_tar, n_non)``: the lowest and highest score each bin can
    hold (exact values for bins next to a PAV block boundary and at both ends), and the counts.
    Keyword arguments go to :func:`summarize`.
    """
    (s,) = summarize([scores], key, pav_bounds=True, **kwargs)
    return s.values().astype(np.float64), s.upper_values().astype(np.float64), s.n_tar, s.n_non
