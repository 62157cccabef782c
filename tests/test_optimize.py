"""The trust-region Newton solver: exact subproblems, Steihaug CG, honest pass counts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize as sciopt
from scipy.special import expit

from bosaris_dask.optimize import (
    Evaluation,
    QuadraticObjective,
    minimize,
    solve_trust_region,
    steihaug_cg,
)


def _random_problem(seed: int, kind: str) -> tuple[np.ndarray, np.ndarray, float]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 7))
    A = rng.normal(size=(n, n))
    H = A @ A.T if kind == "psd" else A + A.T
    g = rng.normal(size=n)
    if kind == "hard" and n > 1:  # g orthogonal to the eigenvector of the smallest eigenvalue
        w, Q = np.linalg.eigh(H)
        g = Q[:, 1:] @ rng.normal(size=n - 1)
    return g, H, float(rng.uniform(0.05, 3.0))


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**31), kind=st.sampled_from(["psd", "indefinite", "hard"]))
def test_trust_region_subproblem_is_optimal(seed: int, kind: str) -> None:
    """KKT conditions of the exact subproblem, and no sampled feasible point does better."""
    g, H, radius = _random_problem(seed, kind)
    p, reduction, on_boundary = solve_trust_region(g, H, radius)
    norm = np.linalg.norm(p)
    scale = 1.0 + np.abs(H).max() + np.abs(g).max()
    assert norm <= radius * (1 + 1e-9)
    model = g @ p + 0.5 * p @ H @ p
    assert reduction == pytest.approx(-model, abs=1e-10 * scale)
    # (H + lam I) p = -g with lam >= max(0, -lambda_min) and lam = 0 inside the region
    lam = 0.0 if not on_boundary else float(-(g + H @ p) @ p / max(norm**2, 1e-300))
    assert np.allclose((H + lam * np.eye(len(g))) @ p, -g, atol=1e-7 * scale)
    assert lam >= -1e-8 * scale
    assert np.linalg.eigvalsh(H + lam * np.eye(len(g)))[0] >= -1e-7 * scale
    # brute force: random points of the ball (and its boundary) are never better
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(4000, len(g)))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q *= radius * np.r_[np.ones(2000), rng.uniform(0, 1, 2000) ** (1 / len(g))][:, None]
    values = q @ g + 0.5 * np.einsum("ki,ij,kj->k", q, H, q)
    assert model <= values.min() + 1e-9 * scale


def test_trust_region_newton_step_inside() -> None:
    H = np.array([[4.0, 1.0], [1.0, 3.0]])
    g = np.array([1.0, 2.0])
    p, reduction, on_boundary = solve_trust_region(g, H, 100.0)
    assert not on_boundary
    np.testing.assert_allclose(p, -np.linalg.solve(H, g), rtol=1e-14)
    assert reduction == pytest.approx(0.5 * g @ np.linalg.solve(H, g), rel=1e-14)


def test_trust_region_singular_convex_takes_the_minimum_norm_step() -> None:
    """Directions the objective does not depend on are left alone (no 'hard case' push)."""
    H = np.diag([2.0, 0.0, 1.0])
    g = np.array([2.0, 0.0, -1.0])
    for radius in (np.inf, 10.0):
        p, reduction, on_boundary = solve_trust_region(g, H, radius)
        np.testing.assert_array_equal(p, [-1.0, 0.0, 1.0])
        assert not on_boundary and reduction == pytest.approx(1.5)
    p, _, on_boundary = solve_trust_region(g, H, 0.5)  # too long: shortened, still no push
    assert on_boundary and p[1] == 0 and np.linalg.norm(p) == pytest.approx(0.5)


def test_trust_region_infinite_radius_indefinite_is_bounded() -> None:
    p, reduction, on_boundary = solve_trust_region(
        np.array([1.0, 0.0]), np.diag([1.0, -1.0]), np.inf
    )
    assert np.isfinite(p).all() and reduction > 0 and on_boundary


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_steihaug_matches_exact_inside_and_stays_in_region(seed: int) -> None:
    g, H, radius = _random_problem(seed, "psd")
    H = H + 0.1 * np.eye(len(g))  # positive definite
    newton = -np.linalg.solve(H, g)
    p, reduction, on_boundary, k = steihaug_cg(
        g, lambda v: H @ v, 10 * np.linalg.norm(newton) + 1, rtol=1e-12, max_iter=50
    )
    assert not on_boundary
    np.testing.assert_allclose(p, newton, rtol=1e-6, atol=1e-8 * np.linalg.norm(newton))
    p, reduction, on_boundary, k = steihaug_cg(g, lambda v: H @ v, radius, rtol=1e-12, max_iter=50)
    assert np.linalg.norm(p) <= radius * (1 + 1e-12)
    assert reduction == pytest.approx(-(g @ p + 0.5 * p @ H @ p), abs=1e-10)
    # the CG model decrease is at least the Cauchy decrease (Steihaug's guarantee)
    gHg = g @ H @ g
    tau = min(1.0, np.linalg.norm(g) ** 3 / (radius * gHg))
    cauchy = -tau * radius / np.linalg.norm(g) * g
    assert reduction >= -(g @ cauchy + 0.5 * cauchy @ H @ cauchy) - 1e-12


def test_steihaug_negative_curvature_goes_to_boundary() -> None:
    H = np.diag([-1.0, 2.0])
    p, reduction, on_boundary, k = steihaug_cg(
        np.array([1.0, 1.0]), lambda v: H @ v, 2.0, rtol=1e-10, max_iter=10
    )
    assert on_boundary and np.linalg.norm(p) == pytest.approx(2.0) and reduction > 0


@pytest.mark.parametrize("method", ["exact", "cg"])
def test_quadratic_solved_with_counted_passes(method: str) -> None:
    rng = np.random.default_rng(3)
    A = rng.normal(size=(6, 6))
    A = A @ A.T + 0.5 * np.eye(6)
    A = A * np.outer(np.logspace(0, 2, 6), np.logspace(0, 2, 6))  # badly scaled
    b = rng.normal(size=6)
    obj = QuadraticObjective(A, b)
    res = minimize(obj, np.zeros(6), method=method, gtol=1e-12)
    assert res.converged
    np.testing.assert_allclose(res.x, np.linalg.solve(A, b), rtol=1e-8)
    assert res.passes == obj.passes  # every evaluation is counted, nothing else
    if method == "exact":
        assert (res.iterations, res.passes) == (1, 2)


class _Logistic:
    """A numpy logistic-regression objective (mean log-loss) for the solver alone."""

    def __init__(self, X: np.ndarray, y: np.ndarray) -> None:
        self.X, self.y = X, y
        self.n_params = X.shape[1]
        self.passes = 0

    def evaluate(self, x, order):
        self.passes += 1
        yz = self.y * (self.X @ x)
        f = float(np.mean(np.logaddexp(0, -yz)))
        if order == "f":
            return Evaluation(f)
        e = expit(-yz)
        g = self.X.T @ (-self.y * e) / len(yz)
        h = e * expit(yz) / len(yz)
        H = (self.X.T * h) @ self.X
        return Evaluation(f, g, H if order == "fgH" else None, np.diag(H).copy())

    def hessp(self, x, v):
        self.passes += 1
        yz = self.y * (self.X @ x)
        h = expit(-yz) * expit(yz) / len(yz)
        return self.X.T @ (h * (self.X @ v))

    def fun(self, x):
        return float(np.mean(np.logaddexp(0, -self.y * (self.X @ x))))


@pytest.mark.parametrize("method", ["exact", "cg"])
def test_far_start_rejects_steps_and_still_converges(method: str) -> None:
    rng = np.random.default_rng(5)
    X = np.c_[rng.normal(size=(400, 3)) * [1.0, 30.0, 0.01], np.ones(400)]
    y = np.where(X[:, 0] + X[:, 1] / 30 + rng.normal(size=400) > 0, 1.0, -1.0)
    obj = _Logistic(X, y)
    x0 = np.array([20.0, -5.0, 300.0, 8.0])
    res = minimize(obj, x0, method=method, gtol=1e-11)
    assert res.passes == obj.passes
    ref = sciopt.minimize(
        obj.fun,
        x0,
        jac=lambda x: obj.evaluate(x, "fg").g,
        method="BFGS",
        options={"gtol": 1e-13, "maxiter": 10_000},
    )
    assert res.converged, res.message
    assert res.fun <= ref.fun + 1e-13
    np.testing.assert_allclose(res.x, ref.x, rtol=1e-5, atol=1e-5)
    assert any(not accepted for *_, accepted in res.history)  # the radius did its job


def test_zero_gradient_start_is_converged() -> None:
    obj = QuadraticObjective(np.eye(2), np.zeros(2))
    res = minimize(obj, np.zeros(2))
    assert res.converged and res.iterations == 0 and res.passes == 1


def test_max_iter_reports_not_converged() -> None:
    rng = np.random.default_rng(1)
    X = np.c_[rng.normal(size=(200, 2)), np.ones(200)]
    y = np.where(rng.normal(size=200) + X[:, 0] > 0, 1.0, -1.0)
    res = minimize(_Logistic(X, y), np.array([50.0, -50.0, 10.0]), max_iter=1, initial_radius=0.01)
    assert not res.converged and res.iterations == 1 and "max_iter" in res.message


def test_bad_method() -> None:
    with pytest.raises(ValueError, match="method"):
        minimize(QuadraticObjective(np.eye(1), np.ones(1)), np.zeros(1), method="lbfgs")
