"""Linear fusion of K systems from zarr stores: passes and wall time of four solvers.

Usage::

    python benchmarks/bench_fusion.py [--trials 1e8] [--systems 3] [--prior 0.5]
                                      [--persist] [--workdir DIR]

Simulates a dense ``sqrt(n) x sqrt(n)`` trial matrix of ``K`` correlated, mis-calibrated systems
(:func:`bosaris_dask.simulate.simulate`, float32, a label-derived key), writes each system to a
zarr store, reads them back lazily and fits the linear fusion (prior-weighted logistic
regression) with every solver driven through the **same** per-chunk reductions
(:class:`bosaris_dask.objectives.FusionObjective`), so every solver pays the same for a pass:

* ``exact``: our trust-region Newton, value + gradient + full Hessian in one pass, exact
  subproblem on the client (one pass per iteration);
* ``cg``: our trust-region Newton with Steihaug CG on Hessian-vector products (one pass each);
* ``scipy-lbfgs``: ``scipy.optimize.minimize(method="L-BFGS-B")``, value and gradient in one pass;
* ``scipy-trust-ncg``: ``scipy.optimize.minimize(method="trust-ncg")``, value and gradient in one
  pass (cached), one pass per Hessian-vector product.

All stop at the same relative gradient tolerance ``||g|| <= 1e-8 ||g0||`` (scipy's absolute
``gtol`` is set from ``||g0||``, whose pass is counted). Prints, per solver, the passes, the
wall time, the final objective and the largest parameter difference from the ``exact`` optimum.
Each pass reads the stores again unless ``--persist``. For scale, the same run times an
evaluation of the same K systems (:func:`bosaris_dask.metrics.evaluate`, all systems in each
pass, default priors and sweep) and prints each solver's seconds per pass as a ratio to the
evaluation's (``--no-evaluate`` skips it): the issue asks that a fusion pass be no slower
than an evaluation pass.

The class ``Fusion`` follows the asv convention (``setup``, ``time_*``, ``teardown``) so a test
can run every benchmark body once.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import optimize as sciopt

from bosaris_dask import io
from bosaris_dask.metrics import evaluate
from bosaris_dask.objectives import FusionObjective, fusion_data
from bosaris_dask.optimize import minimize

GTOL = 1e-8


def make_stores(n_trials: int, n_systems: int, workdir: Path) -> tuple[Path, list[Path]]:
    """Simulate ``n_trials`` dense trials of ``n_systems`` systems and write zarr stores."""
    try:
        from bosaris_dask.simulate import simulate
    except ImportError:  # pragma: no cover - simulate is part of the package
        simulate = None
    side = max(2, int(round(math.sqrt(n_trials))))
    if simulate is None:  # pragma: no cover
        raise SystemExit("bosaris_dask.simulate is needed")
    key, systems = simulate(side, side, systems=n_systems, seed=1)
    key_path = io.write(key, workdir / "key.zarr")
    paths = [io.write(s, workdir / f"system-{k + 1}.zarr") for k, s in enumerate(systems)]
    return Path(key_path), [Path(p) for p in paths]


def open_objective(key_path: Path, paths: list[Path], prior: float, persist: bool):
    key = io.read(key_path)
    scores = [io.read(p) for p in paths]
    return FusionObjective(fusion_data(scores, key, persist=persist), prior)


def run_ours(obj: FusionObjective, method: str) -> dict:
    k = obj.n_params - 1
    res = minimize(obj, np.r_[np.full(k, 1 / k), 0.0], method=method, gtol=GTOL)
    return {"x": res.x, "f": res.fun, "passes": res.passes, "converged": res.converged}


def run_scipy(obj: FusionObjective, method: str) -> dict:
    k = obj.n_params - 1
    x0 = np.r_[np.full(k, 1 / k), 0.0]
    start = obj.passes
    g0 = obj.evaluate(x0, "fg").g  # to translate the relative tolerance (counted)
    cache: dict[bytes, tuple[float, np.ndarray]] = {}

    def fg(x: np.ndarray) -> tuple[float, np.ndarray]:
        key = np.asarray(x, dtype=np.float64).tobytes()
        if key not in cache:
            cache.clear()
            cache[key] = obj.value_and_grad(x)
        return cache[key]

    if method == "L-BFGS-B":
        tol = GTOL * float(np.max(np.abs(g0)))  # L-BFGS-B tests the largest component
        res = sciopt.minimize(
            fg, x0, jac=True, method=method,
            options={"gtol": tol, "ftol": 0.0, "maxiter": 10_000, "maxfun": 10_000},
        )  # fmt: skip
    else:
        res = sciopt.minimize(
            lambda x: fg(x)[0], x0, jac=lambda x: fg(x)[1],
            hessp=lambda x, v: obj.hessp(x, v), method=method,
            options={"gtol": GTOL * float(np.linalg.norm(g0)), "maxiter": 1000},
        )  # fmt: skip
    return {"x": res.x, "f": float(res.fun), "passes": obj.passes - start, "converged": res.success}


SOLVERS = {
    "exact": lambda obj: run_ours(obj, "exact"),
    "cg": lambda obj: run_ours(obj, "cg"),
    "scipy-lbfgs": lambda obj: run_scipy(obj, "L-BFGS-B"),
    "scipy-trust-ncg": lambda obj: run_scipy(obj, "trust-ncg"),
}


class Fusion:
    """Linear fusion of 3 simulated systems read from zarr stores, one ``time_*`` per solver."""

    params = [10**5]

    def setup(self, n: int) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.key_path, self.paths = make_stores(n, 3, Path(self.dir.name))

    def teardown(self, n: int) -> None:
        self.dir.cleanup()

    def _run(self, solver: str) -> dict:
        return SOLVERS[solver](open_objective(self.key_path, self.paths, 0.5, False))

    def time_exact(self, n: int) -> None:
        self._run("exact")

    def time_cg(self, n: int) -> None:
        self._run("cg")

    def time_scipy_lbfgs(self, n: int) -> None:
        self._run("scipy-lbfgs")

    def time_scipy_trust_ncg(self, n: int) -> None:
        self._run("scipy-trust-ncg")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=float, default=1e8)
    parser.add_argument("--systems", type=int, default=3)
    parser.add_argument("--prior", type=float, default=0.5)
    parser.add_argument("--persist", action="store_true")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--solvers", default=",".join(SOLVERS))
    parser.add_argument("--no-evaluate", dest="evaluate", action="store_false")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        t0 = time.perf_counter()
        key_path, paths = make_stores(int(args.trials), args.systems, Path(tmp))
        print(f"simulated and wrote {int(args.trials):.3g} trials x {args.systems} systems "
              f"in {time.perf_counter() - t0:.1f} s")  # fmt: skip
        results = {}
        for name in args.solvers.split(","):
            obj = open_objective(key_path, paths, args.prior, args.persist)
            t0 = time.perf_counter()
            results[name] = SOLVERS[name](obj)
            results[name]["wall"] = time.perf_counter() - t0
        per_pass = None
        if args.evaluate:
            t0 = time.perf_counter()
            ds = evaluate([io.read(p) for p in paths], io.read(key_path))
            wall = time.perf_counter() - t0
            per_pass = wall / ds.attrs["passes"]
            print(f"evaluation of the {args.systems} systems: {ds.attrs['passes']} passes, "
                  f"{wall:.2f} s, {per_pass:.3f} s/pass")  # fmt: skip
        ref = results.get("exact", next(iter(results.values())))["x"]
        print(f"{'solver':<16} {'passes':>6} {'wall s':>8} {'s/pass':>7} {'vs eval':>7} "
              f"{'objective':>20} {'max|dx|':>9} converged")  # fmt: skip
        for name, r in results.items():
            s_pass = r["wall"] / r["passes"]
            ratio = f"{s_pass / per_pass:>7.2f}" if per_pass else f"{'-':>7}"
            print(
                f"{name:<16} {r['passes']:>6} {r['wall']:>8.2f} {s_pass:>7.3f} {ratio} "
                f"{r['f']:>20.15f} {np.max(np.abs(r['x'] - ref)):>9.2e} {r['converged']}"
            )


if __name__ == "__main__":
    main()
