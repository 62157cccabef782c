"""Riders: work that rides along :func:`bosaris_dask.engine.summarize`'s passes.

A :class:`Rider` adds its specs to pass 1 and, from pass 1's results, asks for a
:class:`RiderPass` computed with the next pass that reads the data (the first refinement
round, or a pass of its own: :mod:`bosaris_dask.passes.rounds`). The exact AUC rides this way
(:mod:`bosaris_dask.passes.riding_auc`); the grouped passes of conditions take riders too
(:func:`bosaris_dask.passes.grouped.refine_parts`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import dask.array as da
    import numpy as np

    from bosaris_dask.passes.runner import Aggregation
    from bosaris_dask.passes.score_summary import ScoreSummary

__all__ = ["Rider", "RiderPass", "PASS1_LEAD_BLOCKS"]


#: The blocks pass 1 gives a chunk before its inputs (the trial row and column positions).
PASS1_LEAD_BLOCKS = 2


@dataclass
class Rider:
    """Work that rides along :func:`~bosaris_dask.engine.summarize`'s passes (e.g.
    :mod:`bosaris_dask.passes.exact_auc`).

    Attributes
    ----------
    pass1
        Specs added to pass 1 (their chunks get pass 1's lead blocks first,
        :data:`PASS1_LEAD_BLOCKS` of them, then its inputs).
    after_pass1
        ``after_pass1(summaries, results, inputs)``: called with the pass-1 summaries, the
        results of ``pass1`` and the pass inputs; returns the :class:`RiderPass` to compute
        with the next pass that reads the data (the first refinement pass, or a pass of its
        own when there is none), or ``None``.
    result
        The computed graph (``None`` until then).
    alone
        Whether the graph took a pass of its own.
    """

    pass1: Sequence[Aggregation]
    after_pass1: Callable[[list[ScoreSummary], list[Any], list[da.Array]], Any]
    result: Any = None
    alone: bool = False


@dataclass(frozen=True)
class RiderPass:
    """What a :class:`Rider` computes with the next pass that reads the data.

    Attributes
    ----------
    build
        ``build(inputs)``: its graph over that pass's inputs, laid out as pass 1's (the score
        arrays possibly screened, :mod:`bosaris_dask.passes.screening`).
    ranges
        Per system, the score ranges ``(lo, hi)`` whose trials it needs with their exact
        scores (a screen keeps those exact; a trial screened outside them is outside them), or
        ``None`` for none.
    """

    build: Callable[[list[da.Array]], Any]
    ranges: Sequence[tuple[np.ndarray, np.ndarray] | None]
