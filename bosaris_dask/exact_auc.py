"""The exact AUC at any scale: in the evaluation's own passes where the targets fit a budget.

The AUC is twice the Mann-Whitney U over twice the pairs: ``(2·#{s_tar > s_non} +
#{s_tar = s_non}) / (2·T·N)`` (ties counted half, scikit-learn's ``roc_auc_score``). An engine
summary (:class:`~bosaris_dask.engine.ScoreSummary`) orders every pair whose trials lie in
different bins and every pair tied in an exact bin (:func:`~bosaris_dask.measures.twice_u_parts`);
only pairs inside a **mixed** coarse bin (``bits > 0``, both classes) are unknown. Here they are
counted exactly:

* **Riding along** (:class:`~bosaris_dask.riding_auc.RidingAuc`): pass 1 of the evaluation
  also pulls the exact order keys (:func:`~bosaris_dask.keys.order_keys`) of every scored
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
  (:func:`~bosaris_dask.grouped.refine_parts`) the same way.

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

from bosaris_dask import config, engine, memory, runner
from bosaris_dask.engine import ScoreSummary
from bosaris_dask.errors import InconsistentPassesError
from bosaris_dask.keys import key_bits, key_dtype, keys_to_values, order_keys
from bosaris_dask.measures import twice_u_parts

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

#: Bits of the prefix table that finds a chunk's trials of the mixed bins (1 MB per system).
TABLE_BITS = 20
#: Trials a kernel keys at a time (bounds its temporaries).
_BLOCK = 1 << 20


class ExactAucWarning(UserWarning):
    """The exact AUC was asked for but the smaller class of the mixed bins exceeds the budget."""


@dataclass(frozen=True)
class MixedBins:
    """The mixed coarse bins of one system and how a chunk finds their trials.

    Attributes
    ----------
    lo, hi
        The lowest and highest key of each mixed bin (ascending, disjoint), in the key dtype.
    n_small, n_other
        Per mixed bin, the trials of the smaller class ``S`` and of the other class ``O``.
    small_is_target
        Whether ``S`` are the targets.
    table
        ``table[key >> shift]`` is True where a key's prefix overlaps a mixed bin.
    shift
        The prefix shift of ``table``.
    """

    lo: np.ndarray
    hi: np.ndarray
    n_small: np.ndarray
    n_other: np.ndarray
    small_is_target: bool
    table: np.ndarray
    shift: int

    @property
    def small_code(self) -> int:
        """The key code (+1 target, -1 non-target) of ``S``."""
        return 1 if self.small_is_target else -1

    def value_range(self, dtype: np.dtype) -> tuple[float, float]:
        """The lowest and highest score the mixed bins can hold (``-inf``/``inf`` where a bin
        reaches into the keys of NaNs): every trial of a mixed bin lies between them."""
        low, high = keys_to_values(np.array([self.lo[0], self.hi[-1]]), dtype)
        return (-np.inf if np.isnan(low) else low), (np.inf if np.isnan(high) else high)

    @property
    def n_s(self) -> int:
        return int(self.n_small.sum())

    @property
    def n_o(self) -> int:
        return int(self.n_other.sum())


def mixed_bins(summary: ScoreSummary, small_is_target: bool | None = None) -> MixedBins | None:
    """The mixed coarse bins of ``summary`` (``None`` when there is none: the AUC is exact);
    ``S`` is the class with fewer trials in them unless ``small_is_target`` says.

    Examples
    --------
    >>> from bosaris_dask.measures import summary_from_arrays
    >>> s = summary_from_arrays([1.0, 2.0], [0.0, 2.0])  # exact bins only
    >>> mixed_bins(s) is None
    True
    """
    mixed = (summary.n_tar > 0) & (summary.n_non > 0) & (summary.bits > 0)
    if not mixed.any():
        return None
    kdt = key_dtype(summary.dtype)
    lo = summary.lo[mixed].astype(np.uint64)
    hi = lo + ((np.uint64(1) << summary.bits[mixed].astype(np.uint64)) - np.uint64(1))
    n_tar = summary.n_tar[mixed].astype(np.int64)
    n_non = summary.n_non[mixed].astype(np.int64)
    if small_is_target is None:
        small_is_target = int(n_tar.sum()) <= int(n_non.sum())
    shift = key_bits(summary.dtype) - TABLE_BITS
    p_lo, p_hi = (
        (lo >> np.uint64(shift)).astype(np.int64),
        (hi >> np.uint64(shift)).astype(np.int64),
    )
    diff = np.zeros((1 << TABLE_BITS) + 1, dtype=np.int64)
    np.add.at(diff, p_lo, 1)
    np.add.at(diff, p_hi + 1, -1)
    table = np.cumsum(diff[:-1]) > 0
    return MixedBins(
        lo=lo.astype(kdt), hi=hi.astype(kdt),
        n_small=n_tar if small_is_target else n_non, n_other=n_non if small_is_target else n_tar,
        small_is_target=small_is_target, table=table, shift=shift,
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# counting (pure numpy; the same on a chunk and on the client)
# --------------------------------------------------------------------------------------------


def mixed_twice_u(bins: MixedBins, small: np.ndarray, other: np.ndarray) -> tuple[int, int]:
    """Twice the U statistic of the pairs inside the mixed bins that ``other`` takes part in.

    ``small`` are the sorted keys of **every** ``S`` trial of the mixed bins; ``other`` the
    sorted keys of some ``O`` trials (any keys: those outside the mixed bins count for nothing).
    Each ``S`` key ``a`` and bin edge is looked up in ``other``; with ``l_a = #{x < a}``,
    ``r_a = #{x <= a}`` and, per bin ``b``, ``L_b = #{x < lo_b}``, ``H_b = #{x <= hi_b}``::

        S targets:  sum_a 2·#{x in b(a): x < a} + #{x = a} = sum_a (l_a + r_a) - 2·sum_b n_Sb·L_b
        S non-tar:  sum_a 2·#{x in b(a): x > a} + #{x = a} = 2·sum_b n_Sb·H_b - sum_a (l_a + r_a)

    Returns that exact integer and the number of ``O`` trials found in the mixed bins.

    Examples
    --------
    >>> from bosaris_dask.measures import summary_from_arrays
    >>> s = summary_from_arrays([1.0, 3.0], [2.0, 3.0, 9.0])
    >>> from dataclasses import replace
    >>> coarse = replace(s, lo=np.array([1 << 63], np.uint64), bits=np.array([63], np.int8),
    ...                  n_tar=np.array([2]), n_non=np.array([3]))
    >>> b = mixed_bins(coarse)
    >>> keys = lambda v: np.sort(order_keys(np.array(v)))
    >>> mixed_twice_u(b, keys([1.0, 3.0]), keys([2.0, 3.0, 9.0]))  # 3 > 2, a tie at 3: 2 + 1
    (3, 3)
    """
    small = np.asarray(small, dtype=bins.lo.dtype)
    other = np.asarray(other, dtype=bins.lo.dtype)
    left = np.searchsorted(other, small, side="left").astype(np.int64)
    right = np.searchsorted(other, small, side="right").astype(np.int64)
    below_lo = np.searchsorted(other, bins.lo, side="left").astype(np.int64)
    upto_hi = np.searchsorted(other, bins.hi, side="right").astype(np.int64)
    ranks = int(left.sum()) + int(right.sum())
    if bins.small_is_target:
        twice_u = ranks - 2 * int(np.dot(bins.n_small, below_lo))
    else:
        twice_u = 2 * int(np.dot(bins.n_small, upto_hi)) - ranks
    return twice_u, int((upto_hi - below_lo).sum())


def _in_bins(keys: np.ndarray, bins: MixedBins) -> np.ndarray:
    at = np.searchsorted(bins.lo, keys, side="right") - 1
    return (at >= 0) & (keys <= bins.hi[np.maximum(at, 0)])


@dataclass(frozen=True)
class AucPart:
    """Whose trials a summary counts: system ``system``'s in condition ``condition`` (an index
    of the ``groups`` array given to :func:`exact_aucs`), or all of them (``None``)."""

    system: int
    condition: int | None = None


#: One system's parts in a pass: per part, its condition, its mixed bins and the key codes
#: (+1, -1) whose keys the pass wants.
_Wanted = tuple[tuple[int | None, MixedBins, tuple[int, ...]], ...]


def _part_keys(blocks: Sequence[np.ndarray], system: int, group_at: int | None,
               wanted: _Wanted, inside: bool = True) -> list[list[np.ndarray]]:  # fmt: skip
    """Per part and wanted code, the sorted order keys of a chunk's trials of that class (and
    condition) whose prefix overlaps the part's mixed bins; ``inside``: only those inside the
    bins. Each trial is keyed once, whatever the parts: the pooled system and every condition
    share the keying."""
    classes, s, m = blocks[0], blocks[1 + 2 * system], blocks[2 + 2 * system]
    c, s, m = classes.reshape(-1), s.reshape(-1), m.reshape(-1)
    g = blocks[group_at].reshape(-1) if group_at is not None else None
    ranges = [bins.value_range(s.dtype) for _, bins, _ in wanted]
    low, high = min(r[0] for r in ranges), max(r[1] for r in ranges)
    kdt = wanted[0][1].lo.dtype
    # one table for every part (same key width: one system), so each key is looked up once
    # before the parts sort it out; a condition's part then sees its own trials only
    shift = wanted[0][1].shift
    table = np.logical_or.reduce([bins.table for _, bins, _ in wanted])
    classes_wanted = {code for _, _, per in wanted for code in per}
    only = classes_wanted.pop() if len(classes_wanted) == 1 else 0  # key that class only
    found: list[list[list[np.ndarray]]] = [[[] for _ in codes] for _, _, codes in wanted]
    for lo in range(0, c.size, _BLOCK):
        b = slice(lo, lo + _BLOCK)
        sb, cb = s[b], c[b]
        picked = ((cb == only) if only else (cb != 0)) & m[b] & (sb >= low) & (sb <= high)
        if not picked.any():
            continue
        keys = order_keys(sb[picked])
        near = table[keys >> shift]
        keys, kc = keys[near], cb[picked][near]
        if not keys.size:
            continue
        by_group: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if g is not None:
            kg = g[b][picked][near]
            order = np.argsort(kg, kind="stable")
            values, starts = np.unique(kg[order], return_index=True)
            ends = [*starts[1:], len(order)]
            for v, a, e in zip(values.tolist(), starts.tolist(), ends, strict=True):
                by_group[v] = keys[order[a:e]], kc[order[a:e]]
        for i, (cond, bins, codes) in enumerate(wanted):
            if cond is None:
                own, own_c = keys, kc
            elif cond in by_group:
                own, own_c = by_group[cond]
            else:
                continue
            if len(wanted) > 1:  # (one part: the union table was its own)
                keep = bins.table[own >> bins.shift]
                own, own_c = own[keep], own_c[keep]
            for j, code in enumerate(codes):
                found[i][j].append(own if only else own[own_c == code])
    out = []
    for (_, bins, _), per_code in zip(wanted, found, strict=True):
        row = []
        for parts in per_code:
            keys = np.concatenate([np.empty(0, dtype=kdt), *parts])
            keys.sort()
            row.append(keys[_in_bins(keys, bins)] if inside else keys)
        out.append(row)
    return out


def _collect_kernel(
    *blocks: np.ndarray, system: int, group_at: int | None, wanted: _Wanted
) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """Pass A, one system: per part, the sorted ``S`` keys of its mixed bins (and the ``O``
    ones when the pass wants them)."""
    found = _part_keys(blocks, system, group_at, wanted)
    return [(row[0], row[1] if len(row) > 1 else None) for row in found]


def _merge_collected(parts: list[list[tuple[np.ndarray, np.ndarray | None]]]) -> list:
    """Sorted runs merged, part by part (a stable sort of their concatenation merges runs)."""
    merged = []
    for i in range(len(parts[0])):
        small = np.sort(np.concatenate([p[i][0] for p in parts]), kind="stable")
        if parts[0][i][1] is None:
            merged.append((small, None))
        else:
            merged.append((small, np.sort(np.concatenate([p[i][1] for p in parts]),
                                          kind="stable")))  # fmt: skip
    return merged


def _count_kernel(
    small_all: np.ndarray,
    *blocks: np.ndarray,
    system: int,
    group_at: int | None,
    wanted: _Wanted,
    at: tuple[slice, ...],
) -> list[int]:
    """Pass B, one system: per part, ``twice U, O trials`` of the chunk's ``O`` trials in its
    mixed bins (a flat list)."""
    found = _part_keys(blocks, system, group_at, wanted, inside=False)  # counted in bins only
    counts: list[int] = []
    for (_, bins, _), (other,), where in zip(wanted, found, at, strict=True):
        counts.extend(mixed_twice_u(bins, small_all[where].astype(bins.lo.dtype), other))
    return counts


def _add_counts(parts: list[list[int]]) -> list[int]:
    return [sum(column) for column in zip(*parts, strict=True)]


# --------------------------------------------------------------------------------------------
# the passes
# --------------------------------------------------------------------------------------------


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


def auc_task_memory(
    inputs: Sequence[da.Array], n_small: int, n_other: int, both: bool, split_every: int
) -> memory.TaskMemory:
    """The peak memory of a task of the exact AUC's passes (checked before them).

    A chunk task holds its inputs, a block's temporaries (:data:`_BLOCK` trials) and the keys
    it picks (at most the chunk's trials, sorted: twice); pass A's merge tasks hold up to
    ``split_every`` parts and their merge of the ``S`` keys (and of the ``O`` keys when
    ``both``); pass B's chunk tasks hold all ``S`` keys and their look-ups (four 8-byte words
    per key).
    """
    cells = int(np.prod([max(c) for c in inputs[0].chunks]))
    itemsize = inputs[1].dtype.itemsize  # the key's size
    pulled = (n_small + n_other) if both else n_small
    picked = 2 * min(cells, pulled if both else cells) * itemsize
    return memory.TaskMemory(
        inputs=cells * sum(a.dtype.itemsize for a in inputs),
        buffers=min(cells, _BLOCK) * (2 * itemsize + 8),
        results=picked + (0 if both else 4 * 8 * n_small),
        merge=3 * pulled * itemsize,
        held=min(split_every, inputs[0].npartitions) * min(cells, pulled) * itemsize,
    )


def _check(name: str, what: str, found: int, expected: int) -> None:
    if found != expected:
        raise InconsistentPassesError(
            f"{name}: the exact-AUC pass found {found:,} {what} trials in the mixed bins, "
            f"pass 1 counted {expected:,}: the scores changed between passes"
        )


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
        inputs, _ = engine.pass_inputs(systems, key)
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

        def wanted(ks: list[int], codes: str) -> _Wanted:
            code = {"small": lambda b: (b.small_code,), "other": lambda b: (-b.small_code,),
                    "both": lambda b: (b.small_code, -b.small_code)}[codes]  # fmt: skip
            return tuple((parts[k].condition, plans[k], code(plans[k])) for k in ks)

        aggs = [
            runner.Aggregation(
                f"{names[ks[0]]} exact AUC keys",
                partial(_collect_kernel, system=system, group_at=group_at,
                        wanted=wanted(ks, "both" if both else "small")),
                None, combine=_merge_collected,
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
                _check(names[k], "smaller-class", len(small), plans[k].n_s)
                small_of[k] = small
                if both:
                    mixed[k], found = mixed_twice_u(plans[k], small, other)
                    _check(names[k], "other-class", found, plans[k].n_o)
        if not both:
            order = [k for ks in by_system.values() for k in ks]
            small_all = np.concatenate([small_of[k].astype(np.uint64) for k in order])
            ends = dict(zip(order, np.cumsum([len(small_of[k]) for k in order]), strict=True))
            at = {k: slice(int(ends[k]) - len(small_of[k]), int(ends[k])) for k in order}
            lead = [da.from_array(small_all, chunks=max(1, len(small_all))), "k"]
            aggs = [
                runner.Aggregation(
                    f"{names[ks[0]]} exact AUC counts",
                    partial(_count_kernel, system=system, group_at=group_at,
                            wanted=wanted(ks, "other"), at=tuple(at[k] for k in ks)),
                    None, combine=_add_counts,
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
                    _check(names[k], "other-class", found, plans[k].n_o)
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
    ``auc_high``, and ``attrs["auc_notes"]`` where a system's AUC stayed a bound."""
    out = ds.copy()
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
