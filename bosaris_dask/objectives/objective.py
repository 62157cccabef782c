"""The objective of calibration and fusion as an :class:`~bosaris_dask.optimize.Objective`.

:class:`FusionObjective` runs :func:`~bosaris_dask.objectives.block_sums` as one
:mod:`~bosaris_dask.passes.runner` pass per evaluation (with its memory check and progress bar) and
unpacks value, gradient and Hessian.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, Literal

import numpy as np

from bosaris_dask.errors import (
    MissingTrialsError,
    NoClassError,
    OptionError,
    ScoreError,
    TrialError,
    have,
)
from bosaris_dask.objectives.data import FusionData
from bosaris_dask.objectives.kernel import (
    _COUNTS,
    SLAB,
    Mode,
    _class_length,
    block_sums,
    check_prior,
    class_ranges,
    n_quality_params,
    packed_length,
    prior_entropy,
)
from bosaris_dask.objectives.quality_scaling import penalty_block
from bosaris_dask.optimize import Evaluation
from bosaris_dask.passes import memory, runner


def _quality_last(kernel: Any, qm: np.ndarray, qs: np.ndarray, *blocks: np.ndarray) -> np.ndarray:
    return kernel(*blocks, qm, qs)


def _without_lead(kernel: Any, n_lead: int, *blocks: np.ndarray) -> np.ndarray:
    return kernel(*blocks[n_lead:])


#: A system whose scores' midpoint is this many half-ranges from 0 (e.g. 1000 +- 5) makes its
#: weight and the offset nearly collinear; one whose half-range is beyond these bounds gives a
#: gradient whose weight part dwarfs the offset's (the relative stopping test then passes with
#: the offset unfitted). :class:`Rescale` asks for the fit in standardized scores.
OFFSET_RATIO, SPREAD_BOUNDS = 100.0, (1e-4, 1e4)


class Rescale(Exception):  # noqa: N818 (a request, not an error)
    """Raised by the first pass of a :class:`FusionObjective` with ``rescale=True`` whose
    systems' scores are far from 0 compared with their spread, or spread over a range far from
    1 (:func:`standardization`): fit again on ``(s - centers) / scales``."""

    def __init__(self, centers: np.ndarray, scales: np.ndarray) -> None:
        super().__init__("the scores are far from 0 or from unit spread")
        self.centers, self.scales = centers, scales


def standardization(score_ranges: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Each system's midpoint and half-range (1 for a constant system) where one system that
    is not constant lies more than :data:`OFFSET_RATIO` half-ranges from 0 or has a half-range
    outside :data:`SPREAD_BOUNDS`, else ``None``.

    Examples
    --------
    >>> [c.tolist() for c in standardization(np.array([[1000.0, 1010.0, 995.0, 1004.0]]))]
    [[1002.5], [7.5]]
    >>> standardization(np.array([[-1.0, 3.0, -4.0, 1.0]])) is None
    True
    """
    lo = np.minimum(score_ranges[:, 0], score_ranges[:, 2])
    hi = np.maximum(score_ranges[:, 1], score_ranges[:, 3])
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    far = np.abs(mid) > OFFSET_RATIO * half
    odd = (half < SPREAD_BOUNDS[0]) | (half > SPREAD_BOUNDS[1])
    if not np.any((far | odd) & (half > 0)):  # a constant system is the fit checks' to name
        return None
    return mid, np.where(half > 0, half, 1.0)


class FusionObjective:
    """The normalized prior-weighted cross-entropy of a fusion, evaluated by passes over data.

    Implements :class:`bosaris_dask.optimize.Objective`: each :meth:`evaluate` or
    :meth:`hessp` is exactly one ``dask.compute`` over the data, counted in :attr:`passes`.

    Parameters
    ----------
    data
        The aligned inputs (:func:`fusion_data`, :func:`fusion_data_from_arrays`).
    prior
        The target prior ``p`` in ``(0, 1)`` at which the cross-entropy is weighted.
    l2
        L2 penalty ``l2/2 * ||theta||^2`` on everything but the offset (0: none).
    quality
        Fit the quality matrix too (default: whenever ``data`` has quality).
    split_every
        Passed to the dask sum that merges the per-chunk vectors (``None``: dask's default).
    allow_missing
        Drop key trials without a score in every system (counted in ``counts``); ``False``:
        the first pass raises a :class:`~bosaris_dask.errors.MissingTrialsError` if there is one.
    progress
        Show a progress bar for each pass; ``None`` (default) follows the innermost
        :func:`bosaris_dask.progress.showing_progress` block (no bar outside one).
    rescale
        Raise :class:`Rescale` after the first pass where a system's scores sit far from 0
        compared with their spread, or spread far from 1 (:func:`standardization`).
    standardized_by
        The ``(centers, scales)`` the data's scores were standardized by (``data`` holds
        ``(s - c) / h``), so that :attr:`score_ranges` are in the original scores' units.

    Raises
    ------
    MemoryLimitError
        At the first pass, before any work: the distributed workers' memory limits cannot hold
        the tasks (the same check as evaluation's,
        :func:`bosaris_dask.passes.memory.check_worker_memory`).

    Attributes
    ----------
    n_params
        ``K + 1`` (+ the free entries of ``W`` with quality).
    passes
        Passes so far.
    counts
        After the first pass: ``n_target``, ``n_nontarget``, ``n_missing`` (trials of the key
        without a score in every system: dropped) and ``n_nonfinite``.
    score_ranges
        After the first pass: ``(K, 4)``, each system's lowest and highest target score, then
        lowest and highest non-target score, over the trials counted.
    """

    def __init__(
        self,
        data: FusionData,
        prior: float,
        *,
        l2: float = 0.0,
        quality: bool | None = None,
        split_every: int | dict | None = None,
        allow_missing: bool = True,
        progress: bool | None = None,
        rescale: bool = False,
        standardized_by: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        prior = check_prior(prior)
        if l2 < 0:
            raise OptionError(f"l2 must be non-negative, got {l2!r}")
        self.data = data
        self.prior = prior
        self.plo = math.log(prior) - math.log1p(-prior)
        self.l2 = float(l2)
        self.quality = data.model_quality is not None if quality is None else bool(quality)
        if self.quality and data.model_quality is None:
            raise TrialError("quality fusion needs quality measures")
        self.split_every = split_every
        self.allow_missing = bool(allow_missing)
        self.progress = progress
        self.rescale = rescale
        self.standardized_by = standardized_by
        self.n_params = data.n_systems + 1 + (n_quality_params(data.n_measures) * self.quality)
        self.passes = 0
        self.counts: dict[str, int] | None = None
        self.score_ranges: np.ndarray | None = None
        self._entropy = prior_entropy(prior)
        # the L2 penalty is l2/2 * ||r * theta||^2: r is 0 for the offset, 1 for the other
        # parameters, and 1/h for a weight of scores standardized by h (the original weight's)
        self._regularized = np.ones(self.n_params)
        self._regularized[data.n_systems] = 0.0
        if standardized_by is not None:
            self._regularized[: data.n_systems] = 1.0 / standardized_by[1]
        self._curvature = self._regularized**2  # of the penalty, per parameter
        # standardized quality measures (FusionData.quality_by): the penalty on the original
        # W's entries is a quadratic form w' P w in the standardized ones
        self._quality_block: tuple[slice, np.ndarray] | None = None
        if self.quality and data.quality_by is not None:
            at = slice(data.n_systems + 1, self.n_params)
            self._quality_block = (at, penalty_block(*data.quality_by))
            self._regularized[at] = 0.0
            self._curvature[at] = np.diag(self._quality_block[1])

    def _penalty(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """``||r * x||^2`` (plus the quality block's ``w' P w``) and ``l2`` times half its
        gradient: the penalty's value over ``l2 / 2``, and its gradient."""
        reg = self._regularized * x
        value, grad = float(reg @ reg), self.l2 * self._regularized * reg
        if self._quality_block is not None:
            at, P = self._quality_block
            value += float(x[at] @ P @ x[at])
            grad[at] += self.l2 * (P @ x[at])
        return value, grad

    def _penalty_times(self, v: np.ndarray) -> np.ndarray:
        """The penalty's Hessian times ``v``."""
        out = self.l2 * self._curvature * v
        if self._quality_block is not None:
            at, P = self._quality_block
            out[at] = self.l2 * (P @ v[at])
        return out

    # -- one pass ------------------------------------------------------------------------------

    def _aggregation(self, mode: Mode, theta: np.ndarray, v: np.ndarray | None):
        """The pass as a :class:`~bosaris_dask.passes.runner.Aggregation`, and its ``lead``
        inputs."""
        d = self.data
        kernel = partial(
            block_sums,
            n_systems=d.n_systems,
            quality=self.quality,
            mode=mode,
            theta=np.asarray(theta, dtype=np.float64),
            plo=self.plo,
            v=None if v is None else np.asarray(v, dtype=np.float64),
        )
        lead: list[Any] = []
        if self.quality:  # the runner passes lead blocks first; block_sums wants them last
            per_cell = d.per_cell  # each cell's own vectors (packed trials)
            lead = [d.model_quality, "ija" if per_cell else "ia",
                    d.segment_quality, "ija" if per_cell else "jb"]  # fmt: skip
            kernel = partial(_quality_last, kernel)
        agg = runner.Aggregation(f"fusion {mode}", kernel, packed_length(self.n_params, mode))
        return agg, lead

    def _graph(self, mode: Mode, theta: np.ndarray, v: np.ndarray | None) -> Any:
        """The pass's dask graph (computes nothing; its name is deterministic)."""
        d = self.data
        agg, lead = self._aggregation(mode, theta, v)
        return runner.graph([agg], [*d.scores, *d.masks, d.classes], lead=lead,
                            split_every=self.split_every)  # fmt: skip

    def _pass(self, mode: Mode, theta: np.ndarray, v: np.ndarray | None = None) -> np.ndarray:
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.n_params,):
            raise ValueError(f"expected {self.n_params} parameters, got shape {theta.shape}")
        d = self.data
        agg, lead = self._aggregation(mode, theta, v)
        aggs = [agg]
        if self.passes == 0:  # each system's score range per class, for the fit's checks
            ranges = partial(class_ranges, n_systems=d.n_systems)
            aggs.append(runner.Aggregation(
                "score ranges", partial(_without_lead, ranges, len(lead) // 2),
                4 * d.n_systems, combine=partial(np.min, axis=0),
            ))  # fmt: skip
        packed, *more = runner.run_pass(
            f"fit pass {self.passes + 1}", aggs, [*d.scores, *d.masks, d.classes], lead=lead,
            split_every=self.split_every, progress=self.progress,
            need=self.task_memory(mode) if self.passes == 0 else None,
        )  # fmt: skip
        if more:
            r = np.asarray(more[0]).reshape(d.n_systems, 4)
            ranges = np.column_stack([r[:, 0], -r[:, 1], r[:, 2], -r[:, 3]])
            if self.standardized_by is not None:
                c, h = self.standardized_by
                ranges = ranges * h[:, None] + c[:, None]
            self.score_ranges = ranges
        self.passes += 1
        length = _class_length(self.n_params, mode)
        counts = {k: int(round(c)) for k, c in zip(_COUNTS, packed[2 * length :], strict=True)}
        if counts["n_missing"] and not self.allow_missing:
            raise MissingTrialsError(
                f"{have(counts['n_missing'], 'key trial')} no score in some system "
                "(allow_missing drops them)"
            )
        if counts["n_nonfinite"]:
            raise ScoreError(f"{have(counts['n_nonfinite'], 'trial')} a non-finite score")
        if counts["n_target"] == 0 or counts["n_nontarget"] == 0:
            raise NoClassError(
                f"fitting needs target and non-target trials with scores; found "
                f"{counts['n_target']} targets and {counts['n_nontarget']} non-targets"
            )
        self.counts = counts
        if more and self.rescale:  # the data are sound: is the parametrization?
            found = standardization(self.score_ranges)
            if found is not None:
                raise Rescale(*found)
        return packed

    def direction_ranges(self, direction: np.ndarray) -> tuple[np.ndarray, float]:
        """One pass: the lowest and highest target, then non-target, value of
        ``direction . (s_1, .., s_K, 1)`` over the trials the fit counts (``(4,)``; without
        quality), and the largest ``|direction| . (|s_1|, .., |s_K|, 1)`` (the scale its
        rounding is relative to). Along a direction that leaves the classes apart, ties
        aside, the cross-entropy falls without end
        (:func:`~bosaris_dask.fusion.fit_checks.combination_tie_note`)."""
        d = self.data
        v = np.asarray(direction, dtype=np.float64)
        k = d.n_systems
        along = v[k] + sum(float(w) * s for w, s in zip(v[:k], d.scores, strict=True))
        size = abs(v[k]) + sum(abs(float(w)) * abs(s) for w, s in zip(v[:k], d.scores, strict=True))
        scored = d.masks[0]
        for m in d.masks[1:]:
            scored = scored & m
        agg = runner.Aggregation("direction ranges", partial(class_ranges, n_systems=2), 8,
                                 combine=partial(np.min, axis=0))  # fmt: skip
        (r,) = runner.run_pass(
            f"fit pass {self.passes + 1}", [agg], [along, size, scored, scored, d.classes],
            split_every=self.split_every, progress=self.progress,
        )  # fmt: skip
        self.passes += 1
        r = np.asarray(r, dtype=np.float64).reshape(8)
        return np.array([r[0], -r[1], r[2], -r[3]]), float(max(-r[5], -r[7]))

    def task_memory(self, mode: Mode = "fgH") -> memory.TaskMemory:
        """The peak memory of a task of a pass of ``mode`` (checked before the first pass)."""
        d = self.data
        arrays = [*d.scores, *d.masks, d.classes]
        if d.per_cell and self.quality:  # each cell's two quality vectors are inputs too
            arrays += [d.model_quality, d.segment_quality]
        chunk = tuple(max(c) for c in d.classes.chunks)
        split_every = self.split_every if isinstance(self.split_every, int) else 8
        return memory.objective_task_memory(
            (chunk[0], chunk[1]),
            input_itemsizes=[a.dtype.itemsize * int(np.prod(a.shape[2:])) for a in arrays],
            n_params=self.n_params, n_measures=d.n_measures if self.quality else 0,
            result_length=packed_length(self.n_params, mode), split_every=split_every,
            slab=SLAB,
        )  # fmt: skip

    def class_weights(self) -> tuple[float, float]:
        """The weight of each target's and each non-target's cross-entropy term in the
        normalized objective: ``p / (N_tar H(p))`` and ``(1 - p) / (N_non H(p))`` (known after
        the first pass)."""
        return self._weights()

    def _weights(self) -> tuple[float, float]:
        c = self.counts
        if c is None:
            raise RuntimeError("the class weights are known only after the first pass")
        return (
            self.prior / c["n_target"] / self._entropy,
            (1.0 - self.prior) / c["n_nontarget"] / self._entropy,
        )

    # -- the Objective protocol ----------------------------------------------------------------

    def evaluate(self, x: np.ndarray, order: Literal["f", "fg", "fgd", "fgH"]) -> Evaluation:
        """Value (and gradient, Hessian diagonal or full Hessian) at ``x``: one pass."""
        packed = self._pass(order, x)
        n, length = self.n_params, _class_length(self.n_params, order)
        wt, wn = self._weights()
        comb = wt * packed[:length] + wn * packed[length : 2 * length]
        penalty, penalty_grad = self._penalty(np.asarray(x, dtype=np.float64))
        f = float(comb[0] + 0.5 * self.l2 * penalty)
        if order == "f":
            return Evaluation(f)
        g = comb[1 : 1 + n] + penalty_grad
        if order == "fgd":
            return Evaluation(f, g, diag=comb[1 + n :] + self.l2 * self._curvature)
        if order == "fg":
            return Evaluation(f, g)
        H = np.zeros((n, n))
        H[np.triu_indices(n)] = comb[1 + n :]
        H = H + np.triu(H, 1).T + self.l2 * np.diag(self._curvature)
        if self._quality_block is not None:
            at, P = self._quality_block
            H[at, at] += self.l2 * (P - np.diag(np.diag(P)))  # its diagonal is in _curvature
        return Evaluation(f, g, H, np.diag(H).copy())

    def hessp(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The Hessian at ``x`` times ``v``: one pass."""
        packed = self._pass("hv", x, v)
        n = self.n_params
        wt, wn = self._weights()
        v = np.asarray(v, dtype=np.float64)
        return wt * packed[:n] + wn * packed[n : 2 * n] + self._penalty_times(v)

    # -- conveniences (scipy drivers, reporting) -----------------------------------------------

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """``(f, g)`` in one pass, in the form ``scipy.optimize.minimize(jac=True)`` wants."""
        ev = self.evaluate(x, "fg")
        if ev.g is None:
            raise RuntimeError("an evaluation of order 'fg' has a gradient")
        return ev.f, ev.g

    def data_term(self, f: float, x: np.ndarray) -> float:
        """The normalized cross-entropy alone: ``f`` minus the L2 penalty at ``x``."""
        return float(f - 0.5 * self.l2 * self._penalty(np.asarray(x, dtype=np.float64))[0])
