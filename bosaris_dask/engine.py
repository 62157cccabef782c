"""The evaluation engine: exact score summaries from a fixed number of passes over the chunks.

This is the only module that builds dask graphs for evaluation passes. Scores never get sorted
globally. Instead (see DESIGN.md, section 3.1):

1. **Pass 1** keys every score (:mod:`bosaris_dask.keys`) and, in one fused kernel per chunk,
   counts targets and non-targets per key prefix (the top ``coarse_bits`` bits), sums what needs
   no refinement (Cllr terms, missing trials, non-finite scores). Chunk results are merged by
   exact sums in a tree (``split_every``).
2. On the client, the bin edges are exact ROC points. A bin can hide an ROC convex hull vertex
   only if its optimistic corner lies below the hull of the edges; a Bayes threshold needs exact
   counts only in the bin that contains it. Only those **candidate bins** are refined.
3. **Refinement passes** sub-histogram the candidate bins on the next key bits, or, when few
   trials remain in them, pull their exact keys. float32 scores are exact after two passes.

The result of a system is a :class:`ScoreSummary`: ascending, non-empty key bins with target and
non-target counts, exact (single keys) wherever a metric could depend on it.

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

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask import kernels, memory, roc
from bosaris_dask.errors import MissingTrialsError, OptionError, ScoreError, TrialError
from bosaris_dask.keys import key_bits, keys_to_values, threshold_keys
from bosaris_dask.progress import compute, compute_and_keep, current_client
from bosaris_dask.trials import align_with, kind_of, locate, trial_classes, validate

__all__ = ["ScoreSummary", "summarize", "score_bins", "DEFAULT_SPLIT_EVERY"]

#: How many chunk results one merge task adds up.
DEFAULT_SPLIT_EVERY = 8
#: Dense refinement histograms stay below this many bins per system (per chunk result).
_DENSE_BUDGET = 1 << 19
#: Pull exact keys instead of sub-histogramming when candidate bins hold at most this many trials.
_RAW_LIMIT = 1 << 22
#: Keep the candidate trials in memory (5-9 bytes each) when all systems' hold at most this many.
_KEEP_LIMIT = 1 << 24


# --------------------------------------------------------------------------------------------
# the summary of one system
# --------------------------------------------------------------------------------------------


@dataclass
class ScoreSummary:
    """Exact-where-it-matters summary of one system's scores against a key.

    Attributes
    ----------
    dtype
        The score dtype (float32 or float64).
    lo, bits
        Each non-empty bin covers the keys ``[lo, lo + 2**bits)``; ascending, disjoint. A bin
        with ``bits == 0`` is one exact score value.
    n_tar, n_non
        Target and non-target counts per bin.
    softplus_tar, softplus_non
        ``sum log(1 + exp(-s))`` over targets and ``sum log(1 + exp(s))`` over non-targets
        (natural log): Cllr without a second pass.
    n_missing
        Key trials without a score (dropped; non-zero only with ``allow_missing``).
    passes
        Passes over the data this summary took (shared by all systems of one call).
    """

    dtype: np.dtype
    lo: np.ndarray
    bits: np.ndarray
    n_tar: np.ndarray
    n_non: np.ndarray
    softplus_tar: float
    softplus_non: float
    n_missing: int = 0
    passes: int = 1
    name: str = ""
    _hull: roc.Hull | None = field(default=None, repr=False)

    @property
    def n_target(self) -> int:
        """Number of target trials."""
        return int(self.n_tar.sum())

    @property
    def n_nontarget(self) -> int:
        """Number of non-target trials."""
        return int(self.n_non.sum())

    def values(self) -> np.ndarray:
        """The lowest score value of each bin (the exact value where ``bits == 0``)."""
        return keys_to_values(self.lo, self.dtype)

    def upper_values(self) -> np.ndarray:
        """The highest score value each bin can hold (exact where ``bits == 0``)."""
        hi = self.lo + ((np.uint64(1) << self.bits.astype(np.uint64)) - np.uint64(1))
        return keys_to_values(hi, self.dtype)

    @property
    def hull(self) -> roc.Hull:
        """The ROC convex hull (exact: no vertex lies inside an unrefined bin)."""
        if self._hull is None:
            self._hull = roc.rocch(self.n_tar, self.n_non)
        return self._hull

    def error_counts(self, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Misses (targets below) and false alarms (non-targets at or above) at thresholds.

        Exact for the thresholds the summary was refined for (and any between exact bins).
        """
        kappa = threshold_keys(np.asarray(thresholds, dtype=np.float64), self.dtype)
        pos = np.searchsorted(self.lo, kappa.astype(np.uint64), side="left")
        cum_tar = np.concatenate([[0], np.cumsum(self.n_tar)])
        cum_non = np.concatenate([[0], np.cumsum(self.n_non)])
        return cum_tar[pos], cum_non[-1] - cum_non[pos]


# --------------------------------------------------------------------------------------------
# graph construction
# --------------------------------------------------------------------------------------------


def _blockwise(kernel: Callable, inputs: list[da.Array], length: int | None) -> da.Array:
    args: list[Any] = []
    for arr in inputs:
        args += [arr, "ij"]
    if length is None:  # one object per chunk
        return da.blockwise(
            kernel, "ij", *args, adjust_chunks={"i": 1, "j": 1}, dtype=object,
            meta=np.empty((0, 0), dtype=object),
        )  # fmt: skip
    return da.blockwise(
        kernel, "ijk", *args, new_axes={"k": length}, adjust_chunks={"i": 1, "j": 1},
        dtype=np.float64, meta=np.empty((0, 0, 0)),
    )  # fmt: skip


def _object_tree_reduce(per_chunk: da.Array, split_every: int) -> da.Array:
    def chunk(x, axis, keepdims):
        return x

    def combine(x, axis, keepdims):
        parts = [v for v in np.asarray(x, dtype=object).ravel()]
        out = np.empty((1,) * x.ndim if keepdims else (), dtype=object)
        out[...] = None
        out.flat[0] = kernels.merge_refinements(parts)
        return out

    return da.reduction(
        per_chunk, chunk=chunk, combine=combine, aggregate=combine, axis=(0, 1),
        dtype=object, split_every=split_every, concatenate=True, meta=np.empty((), dtype=object),
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# candidates
# --------------------------------------------------------------------------------------------


def _hull_candidates(s: ScoreSummary) -> np.ndarray:
    """Mixed, unrefined bins whose optimistic corner lies below the hull of the bin edges."""
    cum_tar = np.concatenate([[0], np.cumsum(s.n_tar)])
    cum_non = np.concatenate([[0], np.cumsum(s.n_non)])
    vertices = roc.convex_minorant(cum_non, cum_tar)
    corner_x, corner_y = cum_non[1:], cum_tar[:-1]
    hull_y = np.interp(corner_x, cum_non[vertices], cum_tar[vertices])
    below = corner_y < hull_y * (1 + 1e-12) + 1e-9  # errs on the side of refining
    mixed = (s.n_tar > 0) & (s.n_non > 0) & (s.bits > 0)
    return np.flatnonzero(below & mixed)


def _threshold_candidates(s: ScoreSummary, kappa: np.ndarray) -> np.ndarray:
    """Unrefined bins that contain a threshold key strictly inside."""
    if len(kappa) == 0:
        return np.empty(0, dtype=np.int64)
    k = kappa.astype(np.uint64)
    i = np.searchsorted(s.lo, k, side="right") - 1
    ok = i >= 0
    i, k = i[ok], k[ok]
    inside = (k > s.lo[i]) & (((k - s.lo[i]) >> s.bits[i].astype(np.uint64)) == 0)
    return np.unique(i[inside & (s.bits[i] > 0)])


def _pav_bound_candidates(s: ScoreSummary) -> np.ndarray:
    """Unrefined bins next to a hull vertex, and the extreme bins: PAV needs their exact values."""
    pos = s.hull.positions
    nb = len(s.lo)
    idx = np.concatenate([pos - 1, pos, [0, nb - 1]])
    idx = np.unique(idx[(idx >= 0) & (idx < nb)])
    return idx[s.bits[idx] > 0]


def _plan(s: ScoreSummary, cands: np.ndarray, shift: int) -> kernels.RefineSpec:
    cand_bits = s.bits[cands].astype(np.int64)
    volume = int(s.n_tar[cands].sum() + s.n_non[cands].sum())
    raw = volume <= _RAW_LIMIT
    sub = cand_bits.copy()
    if not raw:  # the same number of sub-bits for every candidate, within the budget
        per = max(1, int(math.floor(math.log2(max(1, _DENSE_BUDGET // len(cands))))))
        sub = np.minimum(cand_bits, per)
    prefix_bits = key_bits(s.dtype) - shift
    return kernels.RefineSpec(shift, prefix_bits, s.lo[cands], cand_bits, sub, raw)


def _volume(summaries: list[ScoreSummary], plans: list) -> int:
    """Trials in the candidate bins of all systems."""
    return sum(
        int(s.n_tar[p[0]].sum() + s.n_non[p[0]].sum())
        for s, p in zip(summaries, plans, strict=True)
        if p is not None
    )


@dataclass
class _Selection:
    """The candidate trials of every chunk, kept (persisted) after one pass over the data.

    Refinement passes over these touch a few percent of the trials instead of reading, keying
    and filtering all of them again.
    """

    specs: tuple[kernels.RefineSpec | None, ...]  # what was kept, per system
    trials: da.Array  # one object per chunk: per system, (keys, is_target) or None

    def holds(self, specs: tuple[kernels.RefineSpec | None, ...]) -> bool:
        """Does every candidate bin of ``specs`` lie inside a kept candidate bin?"""
        for old, new in zip(self.specs, specs, strict=True):
            if new is None:
                continue
            if old is None:
                return False
            i = np.searchsorted(old.cand_lo, new.cand_lo, side="right") - 1
            if np.any(i < 0):
                return False
            rel = new.cand_lo - old.cand_lo[i]
            width = old.cand_bits[i].astype(np.uint64)
            if np.any((rel >> width) != 0) or np.any(new.cand_bits > old.cand_bits[i]):
                return False
        return True


def _apply_refinement(s: ScoreSummary, cands: np.ndarray, spec: kernels.RefineSpec, result) -> None:
    """Replace the candidate bins of ``s`` by what the refinement pass found inside them."""
    if spec.raw:
        lo, counts = result
        lo = lo.astype(np.uint64)
        bits = np.zeros(len(lo), dtype=np.int8)
    else:
        counts = np.asarray(result, dtype=np.int64).reshape(-1, 2)
        owner = np.repeat(np.arange(len(cands)), np.diff(spec.offsets))
        rank = np.arange(len(owner)) - spec.offsets[owner]
        new_bits = (spec.cand_bits - spec.sub_bits)[owner]
        lo = spec.cand_lo[owner] + (rank.astype(np.uint64) << new_bits.astype(np.uint64))
        bits = new_bits.astype(np.int8)
    found = counts.sum(axis=1) > 0
    keep = np.ones(len(s.lo), dtype=bool)
    keep[cands] = False
    new_lo = np.concatenate([s.lo[keep], lo[found]])
    order = np.argsort(new_lo, kind="stable")
    s.lo = new_lo[order]
    s.bits = np.concatenate([s.bits[keep], bits[found]])[order]
    s.n_non = np.concatenate([s.n_non[keep], counts[found, 0]])[order]
    s.n_tar = np.concatenate([s.n_tar[keep], counts[found, 1]])[order]
    s._hull = None


# --------------------------------------------------------------------------------------------
# the public entry point
# --------------------------------------------------------------------------------------------


def _check_inputs(
    scores: Sequence[xr.Dataset], key: xr.Dataset, names: Sequence[str] | None
) -> None:
    """Cheap structural checks (kinds, dims, dtypes, unique ids, names); computes nothing."""
    if kind_of(key) != "key":
        raise TrialError(f"evaluation needs a key, got {kind_of(key)}")
    validate(key)
    if len(scores) == 0:
        raise TrialError("no systems to evaluate (an empty list of Scores)")
    for k, s in enumerate(scores):
        if kind_of(s) != "scores":
            raise TrialError(f"system {k + 1} is a {kind_of(s)}, not Scores")
        validate(s)
    if names is not None and len(names) != len(scores):
        raise OptionError(f"{len(names)} names for {len(scores)} systems")


def _inputs(scores: Sequence[xr.Dataset], key: xr.Dataset) -> tuple[list[da.Array], np.dtype]:
    """The kernels' inputs (key classes, then each system's scores and mask) and score dtype."""
    aligned = [align_with(s, key) for s in scores]
    dtypes = {np.dtype(s.score.dtype) for s in aligned}
    chunks = aligned[0].score.data.chunks
    inputs = [trial_classes(key, chunks=chunks)]
    for s in aligned:
        inputs += [s.score.data.rechunk(chunks), s.score_mask.data.rechunk(chunks)]
    dtype = np.dtype(np.float32) if dtypes == {np.dtype(np.float32)} else np.dtype(np.float64)
    if dtype == np.float64:
        inputs = [a.astype(np.float64) if i % 2 == 1 else a for i, a in enumerate(inputs)]
    return inputs, dtype


def _task_memory(
    inputs: list[da.Array], dtype: np.dtype, nbins: int, split_every: int
) -> memory.TaskMemory:
    """The peak memory of a task of this evaluation's passes.

    A merge adds at most as many results as there are chunks, and no pass pulls or keeps more
    trials than there are cells: small jobs need little, whatever the budgets.
    """
    itemsizes = [a.dtype.itemsize for a in inputs]
    if dtype == np.float64:  # float32 chunks converted in the graph: both copies are alive
        itemsizes += [4] * (len(inputs) // 2)
    cells = int(np.prod(inputs[0].shape))
    return memory.pass_task_memory(
        tuple(max(c) for c in inputs[0].chunks), input_itemsizes=itemsizes, score_dtype=dtype,
        n_systems=len(inputs) // 2, nbins=nbins,
        split_every=max(1, min(split_every, inputs[0].npartitions)),
        refine_bins=_DENSE_BUDGET, raw_trials=min(_RAW_LIMIT, cells),
        kept_trials=min(_KEEP_LIMIT, cells),
    )  # fmt: skip


def _coarse_bits(n_systems: int) -> int:
    """Key-prefix bits of pass 1: 16 MB of histogram per system and chunk at 20 bits, halved
    for 3-4 systems and quartered beyond, so a chunk's result grows slower than the systems."""
    return 20 if n_systems <= 2 else 19 if n_systems <= 4 else 18


def summarize(
    scores: Sequence[xr.Dataset],
    key: xr.Dataset,
    *,
    thresholds: Sequence[float] | np.ndarray = (),
    pav_bounds: bool = False,
    allow_missing: bool = False,
    split_every: int = DEFAULT_SPLIT_EVERY,
    coarse_bits: int | None = None,
    progress: bool = False,
    names: Sequence[str] | None = None,
) -> list[ScoreSummary]:
    """Exact summaries of one or more systems' scores against one key.

    Parameters
    ----------
    scores
        Scores objects (one per system); each is aligned to the key's ids.
    key
        The Key (possibly label-derived).
    thresholds
        Score thresholds at which exact error counts are needed (e.g. Bayes thresholds
        ``-plo``); bins containing them are refined.
    pav_bounds
        Also make exact the bins next to each hull vertex (the score range of every PAV block),
        as PAV calibration needs.
    allow_missing
        Drop key trials that have no score instead of raising :class:`MissingTrialsError`.
    split_every
        How many chunk results one merge task combines.
    coarse_bits
        Key prefix bits of the first pass (default: 20 for one or two systems, fewer for more).
    progress
        Show a progress bar for each pass.
    names
        System names, stored in the summaries.

    Returns
    -------
    list of ScoreSummary
        One per system, in order.

    Raises
    ------
    TrialError
        ``key`` is not a Key, a system is not Scores, ids are not unique.
    OptionError
        ``names`` of another length than ``scores``.
    ScoreError
        Scores that are not real numbers, non-finite scores on trials, or no targets or no
        non-targets.
    MissingTrialsError
        Key trials without a score, unless ``allow_missing``.
    MemoryLimitError
        The distributed workers' memory limits cannot hold the tasks (checked before pass 1).
    """
    _check_inputs(scores, key, names)
    inputs, dtype = _inputs(scores, key)
    n_sys = len(scores)
    bits = coarse_bits or _coarse_bits(n_sys)
    shift = key_bits(dtype) - bits
    nbins = 1 << bits
    memory.check_worker_memory(_task_memory(inputs, dtype, nbins, split_every), current_client())
    kernel = partial(kernels.coarse_kernel, shift=shift, nbins=nbins)
    packed = _blockwise(kernel, inputs, n_sys * (2 * nbins + 4))
    totals = compute(packed.sum(axis=(0, 1), split_every=split_every), progress=progress)
    totals = totals.reshape(n_sys, 2 * nbins + 4)

    summaries = []
    for k, row in enumerate(totals):
        name = names[k] if names else f"system-{k + 1}"
        n_non, n_tar = row[:nbins].astype(np.int64), row[nbins : 2 * nbins].astype(np.int64)
        sp_tar, sp_non, missing, bad = row[2 * nbins :]
        if bad:
            cond = ~da.isfinite(inputs[1 + 2 * k]) & (inputs[0] != 0) & inputs[2 + 2 * k]
            where = locate(cond, key.model.values, key.segment.values)
            raise ScoreError(f"{name}: {int(bad)} trials have non-finite scores, e.g. {where}")
        if missing and not allow_missing:
            cond = (inputs[0] != 0) & ~inputs[2 + 2 * k]
            where = locate(cond, key.model.values, key.segment.values)
            raise MissingTrialsError(
                f"{name}: {int(missing)} key trials have no score, e.g. {where} "
                "(allow_missing drops them)"
            )
        nonempty = np.flatnonzero((n_tar + n_non) > 0)
        summary = ScoreSummary(
            dtype=dtype,
            lo=nonempty.astype(np.uint64) << np.uint64(shift),
            bits=np.full(len(nonempty), shift, dtype=np.int8),
            n_tar=n_tar[nonempty],
            n_non=n_non[nonempty],
            softplus_tar=float(sp_tar),
            softplus_non=float(sp_non),
            n_missing=int(missing),
            name=name,
        )
        if summary.n_target == 0 or summary.n_nontarget == 0:
            raise ScoreError(
                f"{name}: need both targets and non-targets, found {summary.n_target} targets "
                f"and {summary.n_nontarget} non-targets"
            )
        summaries.append(summary)

    kappa = threshold_keys(np.asarray(thresholds, dtype=np.float64), dtype)
    passes = 1
    selection: _Selection | None = None
    while True:
        plans: list[tuple[np.ndarray, kernels.RefineSpec] | None] = []
        for s in summaries:
            parts = [_hull_candidates(s), _threshold_candidates(s, kappa)]
            if pav_bounds:
                parts.append(_pav_bound_candidates(s))
            cands = np.unique(np.concatenate(parts)).astype(np.int64)
            plans.append((cands, _plan(s, cands, shift)) if len(cands) else None)
        if all(p is None for p in plans):
            break
        specs = tuple(p[1] if p else None for p in plans)
        if selection is not None and not selection.holds(specs):
            selection = None  # a bin outside the kept trials became a candidate: read again
        keep = None
        if selection is None and _volume(summaries, plans) <= _KEEP_LIMIT:
            keep = _blockwise(partial(kernels.select_kernel, specs=specs), inputs, None)
            selection = _Selection(specs, keep)
            passes += 1
        if selection is not None:
            refine = partial(
                kernels.refine_selection_kernel, specs=specs, kept_specs=selection.specs
            )
            per_chunk = da.map_blocks(refine, selection.trials, dtype=object)
        else:
            per_chunk = _blockwise(partial(kernels.refine_kernel, specs=specs), inputs, None)
            passes += 1
        reduced = _object_tree_reduce(per_chunk, split_every)
        if keep is not None and selection is not None:  # select, keep and refine in one go
            selection.trials, results = compute_and_keep(keep, reduced, progress=progress)
        else:
            results = compute(reduced, progress=progress)
        results = results[()]
        for s, plan, result in zip(summaries, plans, results, strict=True):
            if plan is not None:
                _apply_refinement(s, plan[0], plan[1], result)
    for s in summaries:
        s.passes = passes
    return summaries


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
