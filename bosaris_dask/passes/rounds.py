"""The refinement rounds after pass 1, for plain systems (:func:`bosaris_dask.engine.summarize`)
and for parts of systems (:func:`bosaris_dask.passes.grouped.refine_parts`) alike.

A round plans each summary's candidate bins (:mod:`bosaris_dask.passes.refinement`), reads the data
(screened where a score source has a screen, :mod:`bosaris_dask.passes.screening`; only the chunks
that hold a candidate bin), or the trials a former round kept, refines the candidate bins and
applies the refinements to the summaries, which are values (a refined summary is a new one).
A round whose candidates fit the keep budget selects and keeps their trials in the same pass,
so that later rounds read the kept trials instead of the data. Rounds end when no summary has
a candidate bin left. Work riding along pass 1 (:class:`~bosaris_dask.passes.riders.Rider`) is
computed with the first round that reads the data, or alone after the last, from the same
screened scores (its own score ranges added to the screen's).

What differs between the callers (how candidates are planned, which kernels select and refine
trials, and how a pass's results are unpacked per summary) is given by a :class:`Rounds`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np

from bosaris_dask.passes import refinement, runner, screening
from bosaris_dask.passes.refine_kernels import RefineSpec
from bosaris_dask.progress import compute

if TYPE_CHECKING:  # pragma: no cover
    from bosaris_dask.passes.riders import Rider, RiderPass
    from bosaris_dask.passes.score_summary import ScoreSummary

__all__ = ["Plan", "Specs", "Rounds", "run_rounds"]

#: A summary's candidate bins and the refinement spec that plans them (``None``: none left).
Plan = tuple[np.ndarray, RefineSpec] | None
Specs = tuple[RefineSpec | None, ...]


@dataclass(frozen=True)
class Rounds:
    """How a caller's refinement rounds plan, read, select and refine.

    Attributes
    ----------
    inputs
        Pass 1's inputs (the trial codes first, then the score arrays).
    dtype
        The scores' dtype.
    first_scores
        The index in ``inputs`` of the first score array (for the screen).
    plan
        The plans of the current summaries, one per summary.
    ranges
        Per score array, the score ranges of the specs' candidate bins (for its screen).
    held
        Per refined summary (by index), the pass-1 chunk notes its candidates are planned in;
        ``None``: every chunk is read.
    select
        The kept trials' graph of a select-and-keep pass over ``read``.
    kept_aggregations
        The aggregations refining the refined summaries from kept trials.
    read_aggregations
        The aggregations refining the refined summaries from ``read``, and the function that
        maps the pass's results to a result per refined summary.
    keep_limit, split_every, progress
        The engine's keep budget, merge width and progress flag.
    """

    inputs: list[da.Array]
    dtype: np.dtype
    first_scores: int
    plan: Callable[[list[ScoreSummary]], list[Plan]]
    ranges: Callable[[Specs], list[screening.Ranges]]
    held: Callable[[int], refinement.ChunkBins] | None
    select: Callable[[Specs, list[da.Array]], Any]
    kept_aggregations: Callable[[list[int], Specs, refinement.Selection], list[runner.Aggregation]]
    read_aggregations: Callable[
        [list[int], Specs], tuple[list[runner.Aggregation], Callable[[list], dict[int, Any]]]
    ]
    keep_limit: int
    split_every: int
    progress: bool | None


def _with_rider(ranges: list[screening.Ranges], along: RiderPass | None) -> list:
    """Per system, the screen's ranges and the rider's together."""
    if along is None:
        return ranges
    out = []
    for mine, its in zip(ranges, along.ranges, strict=True):
        got = [r for r in (mine, its) if r is not None]
        out.append(screening.merge_ranges(np.concatenate([r[0] for r in got]),
                                          np.concatenate([r[1] for r in got]))
                   if got else None)  # fmt: skip
    return out


def run_rounds(
    summaries: Sequence[ScoreSummary], rounds: Rounds, rider: Rider | None = None,
    along: RiderPass | None = None,
) -> list[ScoreSummary]:  # fmt: skip
    """The exact summaries after the refinement rounds, with the pass count (pass 1 included).

    ``along``: the rider's pass, computed with the first pass that reads the data (its result
    set on ``rider``), or in a pass of its own after the last round; it reads the same
    (screened) scores as the round.
    """
    summaries = list(summaries)
    passes = 1
    selection: refinement.Selection | None = None
    while True:
        plans = rounds.plan(summaries)
        if all(p is None for p in plans):
            break
        specs = tuple(p[1] if p else None for p in plans)
        if selection is not None and not selection.holds(specs):
            selection = None  # a bin outside the kept trials became a candidate: read again
        refined = [k for k, plan in enumerate(plans) if plan is not None]
        read, part, also = rounds.inputs, "", None
        if selection is None:
            read = screening.screened_inputs(
                read, _with_rider(rounds.ranges(specs), along), first=rounds.first_scores,
                dtype=rounds.dtype,
            )  # fmt: skip
            also = along.build(read) if along is not None else None  # every chunk
        if selection is None and rounds.held is not None:
            held = rounds.held
            read, part = refinement.chunks_to_read(read, [(held(k), specs[k]) for k in refined])
        keep = None
        if selection is None and refinement.volume(summaries, plans) <= rounds.keep_limit:
            keep = rounds.select(specs, read)
            selection = refinement.Selection(specs, keep)
            passes += 1
        name = f"refinement pass {passes + (selection is None)}{part}"
        run = {"split_every": rounds.split_every, "progress": rounds.progress}
        if selection is not None:
            aggs = rounds.kept_aggregations(refined, specs, selection)
            if keep is not None:  # select, keep and refine in one go
                kept = runner.run_pass_and_keep(name, aggs, [keep], keep, also=also, **run)
                selection.trials, results = kept[:2]
                if also is not None:
                    rider.result, along = kept[2], None  # type: ignore[union-attr]
            else:
                results = runner.run_pass(name, aggs, [selection.trials], **run)
            by_summary = dict(zip(refined, results, strict=True))
        else:
            aggs, unpack = rounds.read_aggregations(refined, specs)
            results = runner.run_pass(name, aggs, read, also=also, **run)
            if also is not None:
                (results, rider.result), along = results, None  # type: ignore[union-attr]
            passes += 1
            by_summary = unpack(results)
        for k in refined:
            cands, spec = plans[k]  # type: ignore[misc]
            summaries[k] = refinement.apply_refinement(summaries[k], cands, spec, by_summary[k])
    if along is not None:  # no pass read the data after pass 1: the rider takes one of its own
        read = screening.screened_inputs(
            rounds.inputs, _with_rider([None] * len(along.ranges), along),
            first=rounds.first_scores, dtype=rounds.dtype,
        )  # fmt: skip
        rider.result = compute(along.build(read), progress=rounds.progress)  # type: ignore[union-attr]
        rider.alone = True  # type: ignore[union-attr]
        passes += 1
    return [replace(s, passes=passes) for s in summaries]
