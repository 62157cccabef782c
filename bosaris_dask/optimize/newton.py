"""The outer trust-region Newton iteration, :func:`minimize`: one pass per iteration."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from bosaris_dask.optimize.problem import Evaluation, Objective, OptimizeResult
from bosaris_dask.optimize.subproblem import _EPS, solve_trust_region, steihaug_cg

#: Up to this many parameters, ``method="auto"`` computes full Hessians and solves exactly.
EXACT_MAX_PARAMS = 50


def _gradient(ev: Evaluation) -> np.ndarray:
    """The gradient of an evaluation of an order that includes it."""
    if ev.g is None:
        raise ValueError("the objective returned no gradient where one was asked for")
    return ev.g


def _hessian(ev: Evaluation) -> np.ndarray:
    """The full Hessian of an evaluation of order ``"fgH"``."""
    if ev.H is None:
        raise ValueError("the objective returned no Hessian where one was asked for")
    return ev.H


def _polished(x: np.ndarray, ev: Evaluation, s: np.ndarray) -> np.ndarray:
    """``x`` moved by the Newton step of the last pass's gradient and Hessian, which cost no
    pass: at convergence the gradient test leaves the parameters about ``gtol`` (relative) from
    the minimum, and one Newton step there (quadratic convergence) takes them to about float
    precision. Not taken where the Hessian is not positive definite or the step is not small
    (``1e-3`` of ``x`` in the scaled variables): there no step is sure to improve ``x``.

    Examples
    --------
    >>> ev = Evaluation(0.0, np.array([1e-9, 0.0]), np.eye(2), None)
    >>> _polished(np.array([1.0, 2.0]), ev, np.ones(2)).tolist()
    [0.999999999, 2.0]
    """
    g, H = _gradient(ev), _hessian(ev)
    try:
        np.linalg.cholesky(H)
        p = -np.linalg.solve(H, g)
    except np.linalg.LinAlgError:
        return x
    small = float(np.linalg.norm(p * s)) <= 1e-3 * max(1.0, float(np.linalg.norm(x * s)))
    return x + p if np.isfinite(p).all() and small else x


def _scaling(diag: np.ndarray | None, n: int, fallback: np.ndarray | None = None) -> np.ndarray:
    """Jacobi scaling ``s = sqrt(diag(H))`` (variables ``y = s * x``), guarded against zeros;
    ``fallback`` (default ones) where the diagonal says nothing (missing, nil or not finite)."""
    d = np.abs(np.asarray(diag, dtype=np.float64)) if diag is not None else np.zeros(n)
    top = float(d.max(initial=0.0))
    if not top > 0.0 or not math.isfinite(top):
        return np.ones(n) if fallback is None else fallback
    return np.sqrt(np.maximum(d, 1e-12 * top))


def minimize(
    objective: Objective,
    x0: np.ndarray,
    *,
    method: Literal["auto", "exact", "cg"] = "auto",
    gtol: float = 1e-8,
    max_iter: int = 100,
    initial_radius: float | None = None,
    max_cg: int | None = None,
    scale: bool = True,
    fallback: tuple[np.ndarray, float] | None = None,
) -> OptimizeResult:
    """Minimize a smooth convex objective by trust-region Newton, counting passes.

    Parameters
    ----------
    objective
        An :class:`Objective`: every ``evaluate``/``hessp`` call is one pass over the data.
    x0
        Starting point.
    method : {"auto", "exact", "cg"}
        - ``"exact"``: one pass gives value, gradient and full Hessian; the subproblem is solved
          exactly (:func:`solve_trust_region`). One pass per iteration.
        - ``"cg"``: Steihaug CG on Hessian-vector products (:func:`steihaug_cg`); one pass per
          product plus one per trial point.
        - ``"auto"``: ``"exact"`` up to :data:`EXACT_MAX_PARAMS` parameters, else ``"cg"``.
    gtol
        Converged when ``||g|| <= gtol * ||g0||`` (2-norms of the gradient now and at ``x0``).
    max_iter
        At most this many trust-region iterations.
    initial_radius
        Trust-region radius of the first step, in the scaled variables; ``None`` allows a full
        Newton step first.
    max_cg
        At most this many Hessian-vector products per CG solve (default ``max(2n, 10)``).
    fallback
        ``(x, f(x))``, a point whose objective value is known without a pass: where ``x0`` is
        worse, the iterations start from it instead (one more pass). A logistic fit's ``x0``
        can sit where every trial is saturated (scores offset by hundreds): the Hessian there
        is nil to float precision and no Newton step means anything, while at zero LLRs the
        normalized cross-entropy is exactly 1.
    scale
        Work in variables scaled by the square root of the Hessian diagonal: at ``x0``, then
        at each accepted point, never shrinking (Moré's rule, as MINPACK scales its trust
        region). Where a few extreme training scores put a steep, narrow valley along one
        parameter (its curvature is huge near the optimum and nil at ``x0``), a scaling fixed
        at ``x0`` keeps the trust region round in the wrong variables: the steps zigzag across
        the valley at a collapsed radius and ``max_iter`` ends the fit far from its minimum.

    Returns
    -------
    OptimizeResult
        With ``"exact"``, a converged ``x`` is moved by one last Newton step from the last
        pass's gradient and Hessian (no pass: :func:`_polished`); ``fun``, ``grad`` and
        ``hess`` are those of the last point evaluated.

    Examples
    --------
    >>> from bosaris_dask.optimize import QuadraticObjective
    >>> A = np.diag([1.0, 100.0])
    >>> res = minimize(QuadraticObjective(A, np.ones(2)), np.zeros(2), method="cg")
    >>> np.round(res.x, 10).tolist(), res.converged
    ([1.0, 0.01], True)
    """
    x = np.asarray(x0, dtype=np.float64).copy()
    n = len(x)
    if method == "auto":
        method = "exact" if n <= EXACT_MAX_PARAMS else "cg"
    if method not in ("exact", "cg"):
        raise ValueError(f"method must be 'auto', 'exact' or 'cg', not {method!r}")
    exact = method == "exact"
    start_passes = objective.passes
    ev = objective.evaluate(x, "fgH" if exact else "fgd")
    if fallback is not None and not ev.f <= fallback[1]:
        x = np.asarray(fallback[0], dtype=np.float64).copy()
        ev = objective.evaluate(x, "fgH" if exact else "fgd")
    s = _scaling(ev.diag, n) if scale else np.ones(n)
    g0norm = float(np.linalg.norm(_gradient(ev)))
    radius = math.inf if initial_radius is None else float(initial_radius)
    max_cg = max(2 * n, 10) if max_cg is None else max_cg
    history: list[tuple[float, float, float, bool]] = []
    iterations = 0
    converged, message = False, f"reached max_iter={max_iter}"
    stalls = 0
    at_precision = False
    while True:
        gnorm = float(np.linalg.norm(_gradient(ev)))
        if not math.isfinite(ev.f) or not math.isfinite(gnorm):
            message = "the objective or its gradient is not finite"
            break
        if gnorm <= gtol * g0norm:
            converged, message = True, f"||g|| <= gtol * ||g0|| (gtol={gtol:g})"
            break
        if iterations >= max_iter:
            break
        gy = _gradient(ev) / s
        if exact:
            Hy = _hessian(ev) / np.outer(s, s)
            py, pred, on_boundary = solve_trust_region(gy, Hy, radius)
        else:
            rtol = min(0.5, math.sqrt(gnorm / g0norm))
            xk = x

            def hessp_y(v: np.ndarray, xk: np.ndarray = xk, sk: np.ndarray = s) -> np.ndarray:
                return objective.hessp(xk, v / sk) / sk

            py, pred, on_boundary, _ = steihaug_cg(gy, hessp_y, radius, rtol=rtol, max_iter=max_cg)
        p = py / s
        step_norm = float(np.linalg.norm(py))
        if step_norm == 0.0 or not pred > 0.0:
            message, at_precision = "no descent step can be computed (at float precision)", True
            break
        x_new = x + p
        ev_new = objective.evaluate(x_new, "fgH" if exact else "fgd" if scale else "fg")
        iterations += 1
        ared = ev.f - ev_new.f
        noise = 64.0 * _EPS * max(abs(ev.f), abs(ev_new.f))
        if pred <= noise:  # the model decrease is below what f can resolve: trust the model
            rho = 1.0 if ared >= -noise else -1.0
        else:
            rho = ared / pred
        accepted = rho > 1e-4 and math.isfinite(ev_new.f)
        if rho < 0.25 or not math.isfinite(ev_new.f):
            radius = 0.25 * step_norm
        elif rho > 0.75 and (on_boundary or not math.isfinite(radius)):
            radius = 2.0 * max(step_norm, radius if math.isfinite(radius) else 0.0)
        elif not math.isfinite(radius):
            radius = step_norm
        history.append((ev_new.f, float(np.linalg.norm(_gradient(ev_new))), radius, accepted))
        if accepted:
            stalls = stalls + 1 if pred <= noise else 0
            x = x_new
            if ev_new.diag is None and ev.diag is not None:
                ev_new = Evaluation(ev_new.f, ev_new.g, ev_new.H, ev.diag)
            ev = ev_new
            if scale:
                s = np.maximum(s, _scaling(ev.diag, n, fallback=s))
            if stalls >= 3:
                message = "the steps no longer change the objective (float precision)"
                at_precision = True
                break
        elif radius <= 1e-14 * max(float(np.linalg.norm(x * s)), 1.0):
            message = "the trust region collapsed"
            break
    if converged and exact:
        x = _polished(x, ev, s)
    return OptimizeResult(
        x=x,
        fun=float(ev.f),
        grad=np.asarray(ev.g),
        iterations=iterations,
        passes=objective.passes - start_passes,
        converged=converged,
        message=message,
        method=method,
        history=history,
        hess=ev.H,
        at_precision=at_precision,
    )
