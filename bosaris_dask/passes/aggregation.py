"""A pass's statistics as data, in the style of flox's ``Aggregation``: what one chunk
contributes, how contributions merge, and what the client makes of the total.

:mod:`bosaris_dask.passes.pass_graph` builds the dask graph of a list of them and
:mod:`bosaris_dask.passes.runner` runs it as one pass.

Examples
--------
>>> import numpy as np
>>> total = Aggregation("total", chunk=lambda b: np.array([b.sum()]), length=1,
...                     finalize=lambda v: float(v[0]))
>>> total.combine(np.array([[1.0], [2.5]])), total.finalize(np.array([3.5]))
(array([3.5]), 3.5)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from bosaris_dask.passes import compact

__all__ = ["Aggregation", "add_rows", "keep_total", "merges_objects", "for_merges", "finalize"]


def add_rows(rows: np.ndarray) -> np.ndarray:
    """The default ``combine``: the sum of a stack of contributions."""
    return rows.sum(axis=0)


def keep_total(total: np.ndarray) -> Any:
    """The default ``finalize``: the total as it is."""
    return total


@dataclass(frozen=True)
class Aggregation:
    """One statistic of a pass.

    Attributes
    ----------
    name
        What it is (for messages).
    chunk
        ``chunk(*blocks)``: the chunk's contribution, a float64 vector of ``length`` or its
        :class:`~bosaris_dask.passes.compact.Encoded` form (e.g. counts a kernel holds as integers,
        :func:`~bosaris_dask.passes.compact.encode_counts`: no float64 vector made and checked).
        The blocks are those of :func:`~bosaris_dask.passes.runner.run_pass`'s ``lead``
        arguments, then its ``inputs``.
    length
        The length of a contribution; ``None``: a contribution is any Python object (e.g. the
        exact keys a refinement pulls), and a pass with such a spec merges objects.
    combine
        ``combine(rows)``: one vector from a ``(m, length)`` stack of contributions or partial
        combinations (for object specs: one object from a list of them). It must be associative
        and commutative (merge trees vary); the default adds them, which is exact for counts
        and for :mod:`~bosaris_dask.passes.exact_sum` limbs.
    finalize
        ``finalize(total)``: the result on the client (may raise, naming what is wrong).
    note
        ``note(contribution, *blocks)``: a small object about one chunk (numeric specs only;
        the contribution's values, as integers where the chunk gave them encoded densely, the
        sparse :class:`~bosaris_dask.passes.compact.Encoded` itself where it gave them so),
        made where the chunk's contribution is, e.g. which score bins the chunk holds. The
        spec's result is then ``(finalize(total), notes)``, ``notes`` a list with one note per
        chunk (in no particular order: a note says which chunk it is about).
    items
        ``(most, size)`` for a contribution that grows with the chunk (e.g. the exact keys of
        the chunk's targets, up to a budget): at most ``min(most, trials of a chunk)`` items of
        ``size`` bytes, which :func:`~bosaris_dask.passes.runner.run_pass`'s memory check adds
        to its tasks' (the chunk task holds them twice, to sort; a merge task its parts and
        their merge).
    optional
        Work the pass may leave out when the workers cannot hold what its ``items`` may grow
        to (the pass's other work can): :func:`~bosaris_dask.passes.runner.run_pass` then gives
        ``None`` as its result (e.g. the exact AUC's targets riding pass 1, which it then
        counts in passes of its own, sized by what pass 1 found).
    """

    name: str
    chunk: Callable[..., np.ndarray]
    length: int | None
    combine: Callable[[np.ndarray], np.ndarray] = add_rows
    finalize: Callable[[np.ndarray], Any] = keep_total
    note: Callable[..., Any] | None = None
    items: tuple[int, int] | None = None
    optional: bool = False


def merges_objects(aggs: Sequence[Aggregation]) -> bool:
    """Whether every spec of a pass merges objects (else numeric specs travel compact)."""
    return all(a.length is None for a in aggs)


def _not_in_a_merge(*_: Any) -> Any:
    raise AssertionError("a merge task runs no chunk kernel")  # pragma: no cover


def for_merges(agg: Aggregation) -> Aggregation:
    """``agg`` as a merge task reads it: its ``combine``, and whether it gathers notes,
    without the chunk kernel, the note and the tables they close over (a bootstrap's 8 MB
    were pickled into every merge task; a refinement's selection tables too)."""
    return replace(agg, chunk=_not_in_a_merge, finalize=keep_total,
                   note=None if agg.note is None else _not_in_a_merge)  # fmt: skip


def finalize(aggs: Sequence[Aggregation], total: Any) -> list[Any]:
    """The finalized results of ``aggs`` from the computed total of their pass's graph
    (:func:`bosaris_dask.passes.pass_graph.graph`)."""
    totals = total[()]
    if merges_objects(aggs):
        return [a.finalize(t) for a, t in zip(aggs, totals, strict=True)]
    return [
        a.finalize(t) if a.length is None
        else a.finalize(compact.decode(t)) if a.note is None
        else (a.finalize(compact.decode(t[0])), t[1])
        for a, t in zip(aggs, totals, strict=True)
    ]  # fmt: skip
