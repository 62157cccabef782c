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

from bosaris_dask.optimize.newton import EXACT_MAX_PARAMS, minimize
from bosaris_dask.optimize.problem import (
    Evaluation,
    Objective,
    OptimizeResult,
    QuadraticObjective,
)
from bosaris_dask.optimize.subproblem import solve_trust_region, steihaug_cg

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
