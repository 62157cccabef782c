"""Trust-region Newton minimization of smooth convex objectives whose every evaluation is a pass.

The objectives of calibration and fusion are sums over billions of trials: every value, gradient,
Hessian or Hessian-vector product is one pass over the data (a dask reduction). What costs is the
number of passes, not the arithmetic on the client, so the solver spends client work freely to
save passes:

- ``method="exact"`` (few parameters, the default up to :data:`EXACT_MAX_PARAMS`): one pass
  returns value, gradient **and** full Hessian; the trust-region subproblem is solved exactly on
  the client (eigendecomposition and the secular equation, More-Sorensen style, including the
  "hard case"). Every iteration is exactly one pass: the pass at the trial point also yields the
  gradient and Hessian for the next iteration when the step is accepted.
- ``method="cg"`` (many parameters): the Steihaug truncated conjugate-gradient method inside the
  trust region, on Hessian-vector products (one pass each), in the spirit of TRON (Lin, Weng and
  Keerthi, the optimizer the BOSARIS paper cites). One pass returns value and gradient at the
  trial point; the first pass also returns the Hessian diagonal, used as a fixed Jacobi scaling.

Both methods work in the variables scaled by the square root of the Hessian diagonal at the
starting point (the trust region is a ball there), so badly scaled scores (one system in
``[0, 0.5]``, another in ``[-50, 50]``) do not slow them down. The first step is a full Newton
step (no radius); the radius then follows the usual ratio test.

Convergence is declared when ``||g|| <= gtol * ||g0||`` (the gradient relative to the starting
gradient, as in TRON), which makes ``gtol`` independent of the scale of the objective.

Examples
--------
A quadratic is solved by one Newton step (two passes: the start and the step):

>>> import numpy as np
>>> A, b = np.array([[3.0, 1.0], [1.0, 2.0]]), np.array([1.0, -1.0])
>>> res = minimize(QuadraticObjective(A, b), np.zeros(2))
>>> np.allclose(res.x, np.linalg.solve(A, b)), res.iterations, res.passes, res.converged
(True, 1, 2, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

__all__ = [
    "EXACT_MAX_PARAMS",
    "Evaluation",
    "Objective",
    "OptimizeResult",
    "QuadraticObjective",
    "minimize",
    "solve_trust_region",
    "steihaug_cg",
]

#: Up to this many parameters, ``method="auto"`` computes full Hessians and solves exactly.
EXACT_MAX_PARAMS = 50

Order = Literal["f", "fg", "fgd", "fgH"]

_EPS = np.finfo(np.float64).eps


@dataclass(frozen=True)
class Evaluation:
    """What one pass over the data returned at a point.

    Attributes
    ----------
    f
        The objective value.
    g
        The gradient (orders ``"fg"``, ``"fgd"``, ``"fgH"``), else ``None``.
    H
        The full Hessian (order ``"fgH"``), else ``None``.
    diag
        The Hessian diagonal (orders ``"fgd"`` and ``"fgH"``), else ``None``.
    """

    f: float
    g: np.ndarray | None = None
    H: np.ndarray | None = None
    diag: np.ndarray | None = None


class Objective(Protocol):
    """What :func:`minimize` needs: evaluations that each cost one pass.

    ``evaluate(x, order)`` returns an :class:`Evaluation` holding what ``order`` asks for:
    ``"f"`` (value), ``"fg"`` (and gradient), ``"fgd"`` (and Hessian diagonal), ``"fgH"``
    (and full Hessian). ``hessp(x, v)`` returns the Hessian at ``x`` times ``v``. Each call is
    one pass; ``passes`` counts them.
    """

    n_params: int
    passes: int

    def evaluate(self, x: np.ndarray, order: Order) -> Evaluation: ...

    def hessp(self, x: np.ndarray, v: np.ndarray) -> np.ndarray: ...


@dataclass
class OptimizeResult:
    """The outcome of :func:`minimize`.

    Attributes
    ----------
    x, fun, grad
        The final point, its objective value and gradient.
    iterations
        Trust-region iterations (accepted or rejected steps).
    passes
        Evaluations of the objective, each one pass over the data (every one counted: the
        starting point, rejected steps and each Hessian-vector product of CG).
    converged
        Whether the gradient test ``||g|| <= gtol * ||g0||`` was met (or ``g0`` is zero).
    message
        Why the iterations stopped.
    method
        ``"exact"`` or ``"cg"``.
    history
        One ``(f, ||g||, radius, accepted)`` tuple per iteration.
    """

    x: np.ndarray
    fun: float
    grad: np.ndarray
    iterations: int
    passes: int
    converged: bool
    message: str
    method: str
    history: list[tuple[float, float, float, bool]] = field(default_factory=list)


class QuadraticObjective:
    """``f(x) = 0.5 x'Ax - b'x`` as an :class:`Objective` (for tests and examples).

    Examples
    --------
    >>> q = QuadraticObjective(np.eye(2), np.ones(2))
    >>> q.evaluate(np.zeros(2), "fg").g.tolist(), q.passes
    ([-1.0, -1.0], 1)
    """

    def __init__(self, A: np.ndarray, b: np.ndarray) -> None:
        self.A = np.asarray(A, dtype=np.float64)
        self.b = np.asarray(b, dtype=np.float64)
        self.n_params = len(self.b)
        self.passes = 0

    def evaluate(self, x: np.ndarray, order: Order) -> Evaluation:
        self.passes += 1
        Ax = self.A @ x
        f = float(0.5 * x @ Ax - self.b @ x)
        if order == "f":
            return Evaluation(f)
        g = Ax - self.b
        diag = np.diag(self.A).copy() if order in ("fgd", "fgH") else None
        return Evaluation(f, g, self.A.copy() if order == "fgH" else None, diag)

    def hessp(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        self.passes += 1
        return self.A @ v


# --------------------------------------------------------------------------------------------
# trust-region subproblems
# --------------------------------------------------------------------------------------------


def _model_reduction(g: np.ndarray, Hp: np.ndarray, p: np.ndarray) -> float:
    """``-(g'p + p'Hp/2)``: how much the quadratic model decreases along ``p``."""
    return float(-(g @ p + 0.5 * (p @ Hp)))


def solve_trust_region(
    g: np.ndarray, H: np.ndarray, radius: float
) -> tuple[np.ndarray, float, bool]:
    """Exactly minimize ``g'p + p'Hp/2`` subject to ``||p|| <= radius``.

    Uses the eigendecomposition of ``H``: the solution is ``p(lam) = -(H + lam I)^-1 g`` with
    ``lam >= max(0, -lambda_min)`` and ``lam (radius - ||p||) = 0``; ``lam`` solves the secular
    equation ``1/||p(lam)|| = 1/radius`` (safeguarded Newton). In the hard case (``g``
    orthogonal to the eigenvectors of the smallest eigenvalue) the step is completed along such
    an eigenvector to the boundary.

    Parameters
    ----------
    g, H
        Gradient and symmetric Hessian of the model.
    radius
        Trust-region radius; ``inf`` allows the unconstrained (Newton) step when ``H`` is
        positive definite.

    Returns
    -------
    p, reduction, on_boundary
        The step, the model decrease ``-(g'p + p'Hp/2)`` (non-negative) and whether the
        constraint is active.

    Examples
    --------
    >>> p, red, hit = solve_trust_region(np.array([1.0, 0.0]), np.eye(2), 10.0)
    >>> p.tolist(), red, hit
    ([-1.0, 0.0], 0.5, False)
    >>> p, red, hit = solve_trust_region(np.array([1.0, 0.0]), np.eye(2), 0.5)
    >>> p.tolist(), hit
    ([-0.5, 0.0], True)
    """
    g = np.asarray(g, dtype=np.float64)
    H = 0.5 * (np.asarray(H, dtype=np.float64) + np.asarray(H, dtype=np.float64).T)
    lam_h, Q = np.linalg.eigh(H)
    gq = Q.T @ g
    scale = max(float(np.max(np.abs(lam_h))), _EPS)
    lam_min = float(lam_h[0])
    tiny = 1e-13 * scale

    def step(lam: float) -> np.ndarray:
        return -gq / (lam_h + lam)

    gnorm = float(np.linalg.norm(gq))
    positive = lam_h > tiny
    if lam_min >= -tiny and np.all(np.abs(gq[~positive]) <= 1e-12 * max(gnorm, _EPS)):
        # convex and g in the range of H: the (minimum-norm) Newton step, if it fits. Leaving
        # the null space alone matters: those directions do not change the objective at all.
        pq = np.where(positive, -gq / np.where(positive, lam_h, 1.0), 0.0)
        if np.linalg.norm(pq) <= radius:
            p = Q @ pq
            return p, _model_reduction(g, H @ p, p), False
    if not math.isfinite(radius):
        # no Newton step exists (indefinite, or unbounded along the null space)
        radius = gnorm / scale if gnorm > 0 else 1.0
    lo = max(0.0, -lam_min)
    # the hard case (negative curvature only): g has no component on the smallest eigenvectors
    on_min = np.abs(lam_h - lam_min) <= tiny
    hard = lo > tiny and bool(np.all(np.abs(gq[on_min]) <= 1e-12 * max(gnorm, _EPS)))
    if hard:
        denom = lam_h + lo
        pq = np.where(on_min, 0.0, -gq / np.where(on_min, 1.0, denom))
        norm = float(np.linalg.norm(pq))
        if norm <= radius:
            tau = math.sqrt(max(radius**2 - norm**2, 0.0))
            pq = pq + tau * np.where(np.arange(len(pq)) == np.flatnonzero(on_min)[0], 1.0, 0.0)
            p = Q @ pq
            return p, _model_reduction(g, H @ p, p), True
    # bracket lam in (lo, hi] with ||p(hi)|| <= radius, then safeguarded Newton on 1/||p||
    hi = max(lo, 0.0) + gnorm / radius + scale
    lam = hi
    a, b = lo, hi
    for _ in range(200):
        pq = step(lam)
        norm = float(np.linalg.norm(pq))
        phi = 1.0 / norm - 1.0 / radius
        if abs(phi) <= 1e-12 / radius:
            break
        if phi < 0:  # ||p|| > radius: lam is too small
            a = lam
        else:
            b = lam
        dnorm = -float(np.sum(gq**2 / (lam_h + lam) ** 3)) / norm  # d||p||/dlam
        newton = lam - phi / (-dnorm / norm**2)
        lam = newton if a < newton < b else 0.5 * (a + b)
        if b - a <= 1e-15 * max(b, 1.0):
            break
    pq = step(lam)
    pq *= radius / max(float(np.linalg.norm(pq)), _EPS)  # land exactly on the boundary
    p = Q @ pq
    return p, _model_reduction(g, H @ p, p), True


def _boundary_tau(p: np.ndarray, d: np.ndarray, radius: float) -> float:
    """The ``tau >= 0`` with ``||p + tau d|| = radius``."""
    a, b, c = d @ d, 2.0 * (p @ d), p @ p - radius**2
    return float((-b + math.sqrt(max(b * b - 4.0 * a * c, 0.0))) / (2.0 * a))


def steihaug_cg(
    g: np.ndarray, hessp, radius: float, *, rtol: float, max_iter: int
) -> tuple[np.ndarray, float, bool, int]:
    """Steihaug's truncated conjugate gradients for ``min g'p + p'Hp/2``, ``||p|| <= radius``.

    Parameters
    ----------
    g
        The gradient.
    hessp
        ``v -> H v`` (each call is one pass when ``H`` lives on the data).
    radius
        Trust-region radius; ``inf`` gives truncated Newton (stopped on negative curvature).
    rtol
        Stop when the residual ``||H p + g|| <= rtol * ||g||``.
    max_iter
        At most this many Hessian-vector products.

    Returns
    -------
    p, reduction, on_boundary, n_hessp
        The step, the model decrease, whether the radius stopped it, and the number of
        Hessian-vector products used.

    Examples
    --------
    >>> A = np.array([[2.0, 0.0], [0.0, 1.0]])
    >>> p, red, hit, k = steihaug_cg(np.array([-2.0, -1.0]), lambda v: A @ v, 10.0,
    ...                              rtol=1e-12, max_iter=10)
    >>> np.round(p, 12).tolist(), hit, k
    ([1.0, 1.0], False, 2)
    """
    p = np.zeros_like(g)
    Hp = np.zeros_like(g)
    r = g.copy()
    d = -r
    rr = float(r @ r)
    gnorm = math.sqrt(rr)
    n_hessp = 0
    if gnorm == 0.0:
        return p, 0.0, False, 0
    while n_hessp < max_iter:
        Hd = hessp(d)
        n_hessp += 1
        curv = float(d @ Hd)
        if curv <= 0.0:
            if not math.isfinite(radius):
                if n_hessp > 1:
                    break  # keep the truncated-Newton step found so far
                radius = gnorm / max(abs(curv) / float(d @ d), _EPS) if curv < 0 else gnorm
            tau = _boundary_tau(p, d, radius)
            p, Hp = p + tau * d, Hp + tau * Hd
            return p, _model_reduction(g, Hp, p), True, n_hessp
        alpha = rr / curv
        p_next = p + alpha * d
        if math.isfinite(radius) and np.linalg.norm(p_next) >= radius:
            tau = _boundary_tau(p, d, radius)
            p, Hp = p + tau * d, Hp + tau * Hd
            return p, _model_reduction(g, Hp, p), True, n_hessp
        p, Hp = p_next, Hp + alpha * Hd
        r = r + alpha * Hd
        rr_next = float(r @ r)
        if math.sqrt(rr_next) <= rtol * gnorm:
            break
        d = -r + (rr_next / rr) * d
        rr = rr_next
    return p, _model_reduction(g, Hp, p), False, n_hessp


# --------------------------------------------------------------------------------------------
# the outer iteration
# --------------------------------------------------------------------------------------------


def _scaling(diag: np.ndarray | None, n: int) -> np.ndarray:
    """Jacobi scaling ``s = sqrt(diag(H))`` (variables ``y = s * x``), guarded against zeros."""
    if diag is None:
        return np.ones(n)
    d = np.abs(np.asarray(diag, dtype=np.float64))
    top = float(d.max(initial=0.0))
    if not top > 0.0 or not math.isfinite(top):
        return np.ones(n)
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
    scale
        Work in variables scaled by the square root of the Hessian diagonal at ``x0``.

    Returns
    -------
    OptimizeResult

    Examples
    --------
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
    s = _scaling(ev.diag, n) if scale else np.ones(n)
    g0norm = float(np.linalg.norm(ev.g))
    radius = math.inf if initial_radius is None else float(initial_radius)
    max_cg = max(2 * n, 10) if max_cg is None else max_cg
    history: list[tuple[float, float, float, bool]] = []
    iterations = 0
    converged, message = False, f"reached max_iter={max_iter}"
    stalls = 0
    while True:
        gnorm = float(np.linalg.norm(ev.g))
        if not math.isfinite(ev.f) or not math.isfinite(gnorm):
            message = "the objective or its gradient is not finite"
            break
        if gnorm <= gtol * g0norm:
            converged, message = True, f"||g|| <= gtol * ||g0|| (gtol={gtol:g})"
            break
        if iterations >= max_iter:
            break
        gy = ev.g / s
        if exact:
            Hy = ev.H / np.outer(s, s)
            py, pred, on_boundary = solve_trust_region(gy, Hy, radius)
        else:
            rtol = min(0.5, math.sqrt(gnorm / g0norm))
            xk = x

            def hessp_y(v: np.ndarray, xk: np.ndarray = xk) -> np.ndarray:
                return objective.hessp(xk, v / s) / s

            py, pred, on_boundary, _ = steihaug_cg(gy, hessp_y, radius, rtol=rtol, max_iter=max_cg)
        p = py / s
        step_norm = float(np.linalg.norm(py))
        if step_norm == 0.0 or not pred > 0.0:
            message = "no descent step can be computed (at float precision)"
            break
        x_new = x + p
        ev_new = objective.evaluate(x_new, "fgH" if exact else "fg")
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
        history.append((ev_new.f, float(np.linalg.norm(ev_new.g)), radius, accepted))
        if accepted:
            stalls = stalls + 1 if pred <= noise else 0
            x = x_new
            if ev_new.diag is None and ev.diag is not None:
                ev_new = Evaluation(ev_new.f, ev_new.g, ev_new.H, ev.diag)
            ev = ev_new
            if stalls >= 3:
                message = "the steps no longer change the objective (float precision)"
                break
        elif radius <= 1e-14 * max(float(np.linalg.norm(x * s)), 1.0):
            message = "the trust region collapsed"
            break
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
    )
