"""The exact AUC in the evaluation's own passes: :class:`RidingAuc`.

Pass 1 also pulls the sorted order keys of every scored target (bounded by
``bosaris_dask.auc-limit``); the count of the pass-1 mixed bins' pairs rides the first
refinement pass. The counting itself, and the passes after the evaluation when the targets do
not fit, are :mod:`bosaris_dask.passes.exact_auc`'s.

Examples
--------
>>> riding = RidingAuc(2, ["a", "b"], split_every=8)
>>> riding.served, riding.part_names  # served once an evaluation has run with riding.rider
(False, ['a', 'b'])
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from functools import partial

import dask.array as da
import numpy as np

from bosaris_dask import config
from bosaris_dask.inputs import names_or_default
from bosaris_dask.measures import twice_u_parts
from bosaris_dask.passes import memory, riders, runner
from bosaris_dask.passes.auc_kernels import (
    BLOCK,
    AucPart,
    MixedBins,
    add_counts,
    auc_task_memory,
    check_found,
    in_bins,
    mixed_bins,
    pair_count_kernel,
)
from bosaris_dask.passes.exact_auc import ExactAuc
from bosaris_dask.passes.keys import key_dtype, order_keys
from bosaris_dask.passes.score_summary import ScoreSummary
from bosaris_dask.passes.screening import key_ranges
from bosaris_dask.progress import current_client

__all__ = ["RidingAuc"]


#: One system's targets pulled in pass 1: their sorted keys and (with conditions) their groups.
_Targets = tuple[np.ndarray, np.ndarray | None]


def _targets_kernel(*blocks: np.ndarray, system: int, limit: int, grouped: bool) -> _Targets | None:
    """Pass 1, one system: the sorted order keys of the chunk's scored targets (and, when
    ``grouped``, their groups in the same order), or ``None`` (overflow) when there are more
    than ``limit`` of them (bounded memory). The blocks: pass 1's lead ones, the classes,
    (``grouped``: the groups), then each system's scores and mask."""
    at = riders.PASS1_LEAD_BLOCKS
    first = at + (2 if grouped else 1) + 2 * system
    c, s, m = blocks[at].reshape(-1), blocks[first].reshape(-1), blocks[first + 1].reshape(-1)
    g = blocks[at + 1].reshape(-1) if grouped else None
    keys, groups = [], []
    count = 0
    for lo in range(0, c.size, BLOCK):
        b = slice(lo, lo + BLOCK)
        picked = (c[b] == 1) & m[b]
        count += int(np.count_nonzero(picked))
        if count > limit:
            return None
        if count:
            keys.append(order_keys(s[b][picked]))
            if g is not None:
                groups.append(g[b][picked].astype(np.int64))
    return _sorted_targets([np.empty(0, dtype=key_dtype(s.dtype)), *keys],
                           [np.empty(0, dtype=np.int64), *groups] if grouped else None)  # fmt: skip


def _sorted_targets(keys: list[np.ndarray], groups: list[np.ndarray] | None) -> _Targets:
    """Keys (and groups) concatenated and sorted by key (stable: sorted runs merge)."""
    k = np.concatenate(keys)
    if groups is None:
        return np.sort(k, kind="stable"), None
    order = np.argsort(k, kind="stable")
    return k[order], np.concatenate(groups)[order]


def _merge_targets(parts: list[_Targets | None], limit: int) -> _Targets | None:
    """Sorted runs merged, or ``None`` when one overflowed or together they exceed ``limit``."""
    if any(p is None for p in parts) or sum(len(p[0]) for p in parts) > limit:  # type: ignore[index]
        return None
    grouped = parts[0][1] is not None  # type: ignore[index]
    return _sorted_targets([p[0] for p in parts],  # type: ignore[index]
                           [p[1] for p in parts] if grouped else None)  # type: ignore[index,misc]  # fmt: skip


class RidingAuc:
    """The exact AUC of an evaluation's summaries in the evaluation's own passes.

    Pass 1 also pulls the order keys of every scored target of each system (``S`` speculatively
    the targets; with conditions, each with its group), as long as they fit the budget
    ``bosaris_dask.auc-limit`` (a chunk or merge over it gives up: bounded memory). With the
    pass-1 summaries, the targets of their mixed bins are known; pass B (:func:`mixed_twice_u`
    per chunk and part, for the non-targets of those bins) rides along the first refinement
    pass, or takes a pass of its own when there is none. Each AUC is its pass-1 summary's
    between-bin part plus pass B's count: exact whatever refinement does. When a system's
    targets overflow, the targets of all parts' pass-1 mixed bins exceed the budget, or the
    workers' memory limits cannot hold the targets pass 1 may pull (the specs are
    ``optional``, :class:`~bosaris_dask.passes.runner.Aggregation`), nothing rides along and
    :func:`exact_aucs` runs its passes after the evaluation as before (:attr:`served` is
    False).

    Parameters
    ----------
    n_systems
        The systems of the call.
    names
        Their names (default ``system-1``, ...).
    split_every
        As :func:`exact_aucs`.
    grouped
        Pass 1 is :func:`~bosaris_dask.passes.grouped.grouped_pass1` (its inputs hold the groups
        after the classes): set :attr:`parts` (pooled first, then conditions whose
        ``condition`` is a code of those groups) before the refinement.
    """

    def __init__(
        self, n_systems: int, names: Sequence[str] | None, split_every: int, grouped: bool = False
    ) -> None:
        self.limit = config.get("auc-limit")
        self.names = names_or_default(names, n_systems)
        self.split_every = split_every
        self.grouped = grouped
        #: What the first summaries after pass 1 count (pooled systems by default).
        self.parts: list[AucPart] = [AucPart(k) for k in range(n_systems)]
        self.part_names: list[str] = list(self.names)
        self.plans: list[MixedBins | None] = []
        self.firsts: list[ScoreSummary] = []
        self.served = False
        self.rider = riders.Rider(
            [runner.Aggregation(f"{self.names[k]} exact AUC targets",
                                partial(_targets_kernel, system=k, limit=self.limit,
                                        grouped=grouped), None,
                                combine=partial(_merge_targets, limit=self.limit),
                                items=(self.limit, 16 if grouped else 8),  # key (and group)
                                optional=True)  # left out where workers cannot hold them
             for k in range(n_systems)],
            self._after_pass1,
        )  # fmt: skip

    def _after_pass1(self, summaries: list[ScoreSummary], targets: list[_Targets | None],
                     inputs: list[da.Array]) -> riders.RiderPass | None:  # fmt: skip
        summaries = summaries[: len(self.parts)]
        plans = [mixed_bins(s, small_is_target=True) for s in summaries]
        js = [j for j, p in enumerate(plans) if p is not None]
        if not js or any(targets[self.parts[j].system] is None for j in js):
            return None
        if sum(plans[j].n_s for j in js) > self.limit:  # type: ignore[union-attr]
            return None
        small = {}
        for j in js:
            keys, groups = targets[self.parts[j].system]  # type: ignore[misc]
            cond = self.parts[j].condition
            if cond is not None:
                keys = keys[groups == cond]
            keys = keys[in_bins(keys, plans[j])]  # type: ignore[arg-type]
            check_found(self.part_names[j], "smaller-class", len(keys), plans[j].n_s)  # type: ignore[union-attr]
            small[j] = keys.astype(np.uint64)
        small_all = np.concatenate([small[j] for j in js])
        ends = dict(zip(js, np.cumsum([len(small[j]) for j in js]).tolist(), strict=True))
        at = {j: slice(ends[j] - len(small[j]), ends[j]) for j in js}
        by_system: dict[int, list[int]] = {}
        for j in js:
            by_system.setdefault(self.parts[j].system, []).append(j)

        def laid_out(read: list[da.Array]) -> list[da.Array]:
            if self.grouped:  # the layout _part_keys reads: classes, scores and masks, groups
                return [read[0], *read[2:], read[1]]
            return read

        inputs = laid_out(inputs)
        group_at = len(inputs) - 1 if self.grouped else None
        lead = [da.from_array(small_all, chunks=max(1, len(small_all))), "k"]
        aggs = [
            runner.Aggregation(
                f"{self.names[k]} exact AUC counts",
                partial(pair_count_kernel, system=k, group_at=group_at,
                        wanted=tuple((self.parts[j].condition, plans[j], (-1,)) for j in mine),
                        at=tuple(at[j] for j in mine)),
                None, combine=add_counts,
            )
            for k, mine in by_system.items()
        ]  # fmt: skip
        n_other = sum(plans[j].n_o for j in js)  # type: ignore[union-attr]
        need = auc_task_memory(inputs, len(small_all), n_other, False, self.split_every)
        memory.check_worker_memory(need, current_client())
        self.plans, self.firsts, self.served = plans, summaries, True
        self._aggs, self._by_system = aggs, by_system

        def build(read: list[da.Array]) -> da.Array:
            return runner.graph(aggs, laid_out(read), lead=lead, split_every=self.split_every)

        # the exact scores it needs: those of the mixed bins' trials (the screen of a
        # refinement pass keeps them, and screens every other trial outside those bins)
        dtype = summaries[js[0]].dtype
        ranges: list = [None] * len(self.names)
        for k, mine in by_system.items():
            lo = np.concatenate([plans[j].lo for j in mine])  # type: ignore[union-attr]
            hi = np.concatenate([plans[j].hi for j in mine])  # type: ignore[union-attr]
            ranges[k] = key_ranges(lo, hi, dtype)
        return riders.RiderPass(build, ranges)

    def found(self) -> ExactAuc:
        """The exact AUC of each part (once the evaluation has run with :attr:`rider` and
        :attr:`served` is True); ``passes`` 0: the evaluation counted them."""
        counted = runner.finalize(self._aggs, self.rider.result)
        mixed = {}
        for mine, flat in zip(self._by_system.values(), counted, strict=True):
            for i, j in enumerate(mine):
                twice_u, found = flat[2 * i], flat[2 * i + 1]
                check_found(self.part_names[j], "other-class", found, self.plans[j].n_o)  # type: ignore[union-attr]
                mixed[j] = twice_u
        values: list[Fraction | None] = []
        for j, s in enumerate(self.firsts):
            base, _ = twice_u_parts(s)
            values.append(Fraction(base + mixed.get(j, 0), 2 * s.n_target * s.n_nontarget))
        return ExactAuc(values, 0, [""] * len(values))
