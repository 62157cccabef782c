"""The exact AUC at scale (``evaluate(exact_auc=True)``): passes and wall time against a plain
evaluation of the same store, measured in the same run.

Usage::

    python benchmarks/bench_auc.py [--models 10000] [--segments 10000] [--repeat 3]
    python benchmarks/bench_auc.py --store /work/stores/1e8  # key.zarr, system-1.zarr there

Simulates one system (``bosaris_dask.simulate``, float32, 0.5% targets), writes it and its key
as zarr stores in a temporary directory (or reads them from ``--store``), and evaluates it at
one prior, each the median of ``--repeat`` interleaved runs:

* ``plain``: :func:`bosaris_dask.metrics.evaluate` (``auc`` NaN at scale, with its bounds);
* ``exact``: the same with ``exact_auc=True`` and the default budget
  (``bosaris_dask.auc-limit``): when every target fits it, pass 1 pulls their keys and the
  count rides the refinement pass (no extra pass);
* ``exact-2``: ``exact_auc=True`` with the budget set to the smaller class's trials of the mixed
  bins: pass 1's pull of all targets overflows it, and the passes after the evaluation run
  as before (two extra passes).

Prints the smaller and the other class's trials in the mixed bins, then passes, wall time and
the ratio to ``plain`` of each. The class ``ExactAuc`` follows the asv convention (``setup``,
``time_*``, ``teardown``) so a test can run every benchmark body once.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import dask
import numpy as np

from bosaris_dask import io
from bosaris_dask.metrics import evaluate, pooled_evaluation
from bosaris_dask.passes import exact_auc
from bosaris_dask.simulate import simulate

MODES = ("plain", "exact", "exact-2")


class ExactAuc:
    """asv-style benchmark bodies over one simulated store."""

    def setup(self, models: int = 10000, segments: int = 10000, store: str | None = None) -> None:
        self.store = store
        if store is not None:
            self.dir = Path(store)
        else:
            self.dir = Path(tempfile.mkdtemp(prefix="bench-auc-"))
            key, (system,) = simulate(models, segments, systems=1, seed=5)
            io.write(key, self.dir / "key.zarr")
            io.write(system, self.dir / "system.zarr")
        self.results: dict[str, object] = {}
        _, (summary,) = pooled_evaluation(*self._inputs()[::-1], priors=[0.01])
        mixed = exact_auc.mixed_bins(summary)
        self.small, self.other = (mixed.n_s, mixed.n_o) if mixed is not None else (0, 0)

    def teardown(self, *args: object) -> None:
        if self.store is None:  # never remove a store given
            shutil.rmtree(self.dir, ignore_errors=True)

    def _inputs(self):
        name = "system.zarr" if self.store is None else "system-1.zarr"
        return io.read(self.dir / "key.zarr"), io.read(self.dir / name)

    def _run(self, name: str, **options: object) -> None:
        key, scores = self._inputs()
        self.results[name] = evaluate(scores, key, priors=[0.01], **options)

    def time_plain(self) -> None:
        self._run("plain")

    def time_exact(self) -> None:
        self._run("exact", exact_auc=True)

    def time_exact_2(self) -> None:
        with dask.config.set({"bosaris_dask.auc-limit": self.small}):
            self._run("exact-2", exact_auc=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=10000)
    parser.add_argument("--segments", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--store", help="a directory with key.zarr and system-1.zarr")
    args = parser.parse_args(argv)
    bench = ExactAuc()
    bench.setup(args.models, args.segments, args.store)
    try:
        walls: dict[str, list[float]] = {name: [] for name in MODES}
        for _ in range(args.repeat):  # interleaved repeats: the same cache state for each
            for name in MODES:
                start = time.perf_counter()
                getattr(bench, f"time_{name.replace('-', '_')}")()
                walls[name].append(time.perf_counter() - start)
        shape = bench._inputs()[1].score.shape
        print(f"{shape[0]:,} x {shape[1]:,} trials, median of {args.repeat}; mixed "
              f"bins hold {bench.small:,} trials of the smaller class, {bench.other:,} of the "
              "other")  # fmt: skip
        print(f"{'':<9}{'passes':>8}{'wall (s)':>10}{'ratio':>8}{'auc':>20}")
        base = float(np.median(walls["plain"]))
        for name in MODES:
            ds = bench.results[name]
            wall = float(np.median(walls[name]))
            print(f"{name:<9}{ds.attrs['passes']:>8}{wall:>10.2f}{wall / base:>8.2f}"  # type: ignore[attr-defined]
                  f"{float(ds.auc.item()):>20.15f}")  # type: ignore[attr-defined]  # fmt: skip
    finally:
        bench.teardown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
