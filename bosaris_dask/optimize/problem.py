"""What the solver and an objective exchange: :class:`Evaluation`, the :class:`Objective`
protocol, :class:`OptimizeResult`, and a :class:`QuadraticObjective` to test with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

Order = Literal["f", "fg", "fgd", "fgH"]


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
    at_precision
        Whether they stopped short of the gradient test because float64 resolves no further
        decrease of the objective (a minimum to float precision; ``False`` when converged, and
        when ``max_iter``, a collapsed trust region or a non-finite value stopped them).
    method
        ``"exact"`` or ``"cg"``.
    history
        One ``(f, ||g||, radius, accepted)`` tuple per iteration.
    hess
        The exact Hessian at ``x`` (method ``"exact"``; ``None`` for ``"cg"``).
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
    hess: np.ndarray | None = None
    at_precision: bool = False


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
