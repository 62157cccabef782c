"""Trust-region subproblems, solved on the client: exactly (:func:`solve_trust_region`, from a full
Hessian) or approximately (:func:`steihaug_cg`, from Hessian-vector products).
"""

from __future__ import annotations

import math

import numpy as np

_EPS = np.finfo(np.float64).eps


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
