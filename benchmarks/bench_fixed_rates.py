"""Fixed-FMR/FNMR operating points and the ECE sums: passes and wall time against a plain
evaluation of the same store, measured in the same run.

Usage::

    python benchmarks/bench_fixed_rates.py [--models 4000] [--segments 5000] [--repeat 3]
        [--run fixed --run ece --run all] [--conditions G] [--store-dir DIR]

Simulates one system (``bosaris_dask.simulate``, float32, 0.5% targets), writes it and its key
as zarr stores in a temporary directory (or reads the ``bosaris-dask simulate`` output in
``--store-dir``, e.g. 1e9 trials), and evaluates it, each the median of ``--repeat`` runs:

* ``plain``: :func:`bosaris_dask.metrics.evaluate` at one prior;
* ``fixed``: the same with the ``ijbc`` profile's FMR targets (1e-6 ... 1e-1) and two FNMR
  targets, whose bins are refined in the hull's passes;
* ``ece``: the same with the ECE plot's 41-point grid (one softplus per trial and grid point,
  accumulated in pass 1);
* ``all``: both (``evaluate --fmr ... --fnmr ... --ece``).

With ``--conditions G`` every run is also per condition (G model-side conditions, ``--by``):
the fixed-rate points and the ECE of every condition, from the same passes.

Prints passes, wall time and its ratio to ``plain`` (medians of the interleaved runs, so each
ratio compares runs made under the same load), and the load average before and after; the
claim checked is that ``fixed``, ``ece`` and ``all`` take the passes of ``plain``. The class
``FixedRates`` follows the asv convention (``setup``, ``time_*``, ``teardown``) so a test can
run every benchmark body once.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bosaris_dask import io
from bosaris_dask.conditions import condition_table
from bosaris_dask.ece import DEFAULT_ECE_PLO
from bosaris_dask.metrics import evaluate
from bosaris_dask.profiles import PROFILES
from bosaris_dask.simulate import simulate

OPTIONS = {
    "plain": {},
    "fixed": {"fmr": list(PROFILES["ijbc"].fmr), "fnmr": [0.01, 0.1]},
    "ece": {"ece_plo": DEFAULT_ECE_PLO},
    "all": {"fmr": list(PROFILES["ijbc"].fmr), "fnmr": [0.01, 0.1], "ece_plo": DEFAULT_ECE_PLO},
}


class FixedRates:
    """asv-style benchmark bodies over one simulated store."""

    def setup(
        self, models: int = 4000, segments: int = 5000, conditions: int = 0,
        store_dir: Path | None = None,
    ) -> None:  # fmt: skip
        self.keep = store_dir is not None
        if store_dir is not None:  # a ``bosaris-dask simulate`` output, read and kept
            self.dir, self.system = Path(store_dir), "system-1.zarr"
            key = io.read(self.dir / "key.zarr")
        else:
            self.dir, self.system = Path(tempfile.mkdtemp(prefix="bench-fixed-")), "system.zarr"
            key, (system,) = simulate(models, segments, systems=1, seed=5)
            io.write(key, self.dir / "key.zarr")
            io.write(system, self.dir / self.system)
        self.shape = (key.sizes["model"], key.sizes["segment"])
        self.results: dict[str, object] = {}
        # with conditions: model m in condition m % G (``--by model.group``)
        self.by: dict[str, object] = {}
        if conditions:
            ids = [str(m) for m in key.model.values]
            groups = [f"g{i % conditions}" for i in range(len(ids))]
            table = condition_table("model", ids, {"group": groups})
            self.by = {"conditions": [table], "by": ["model.group"]}

    def teardown(self, *args: object) -> None:
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _run(self, name: str) -> None:
        key, scores = io.read(self.dir / "key.zarr"), io.read(self.dir / self.system)
        self.results[name] = evaluate(scores, key, priors=[0.01], **OPTIONS[name], **self.by)

    def time_plain(self) -> None:
        self._run("plain")

    def time_fixed(self) -> None:
        self._run("fixed")

    def time_ece(self) -> None:
        self._run("ece")

    def time_all(self) -> None:
        self._run("all")


def _load() -> str:
    """The 1-minute load average (other sessions share the cores)."""
    return f"{os.getloadavg()[0]:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=4000)
    parser.add_argument("--segments", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--store-dir", type=Path, metavar="DIR",
                        help="evaluate DIR/key.zarr and DIR/system-1.zarr (made by 'bosaris-dask "
                             "simulate') instead of simulating; DIR is kept")  # fmt: skip
    parser.add_argument("--conditions", type=int, default=0, metavar="G",
                        help="evaluate per condition too: G model-side conditions")  # fmt: skip
    parser.add_argument("--run", action="append", choices=list(OPTIONS),
                        help="run only these (plain always); repeatable; default all")  # fmt: skip
    args = parser.parse_args(argv)
    names = [n for n in OPTIONS if n == "plain" or not args.run or n in args.run]
    bench = FixedRates()
    bench.setup(args.models, args.segments, args.conditions, args.store_dir)
    load_before = _load()
    try:
        walls = {}
        for name in names:  # interleaved repeats: the same cache state for each
            walls[name] = []
        for _ in range(args.repeat):
            for name in names:
                start = time.perf_counter()
                getattr(bench, f"time_{name}")()
                walls[name].append(time.perf_counter() - start)
                print(f"# {name}: {walls[name][-1]:.2f} s (load {_load()})", file=sys.stderr,
                      flush=True)  # fmt: skip
        by = f", {args.conditions} conditions" if args.conditions else ""
        shape = bench.shape
        print(
            f"{shape[0]:,} x {shape[1]:,} trials{by}, median of {args.repeat}; load "
            f"average {load_before} before, {_load()} after"
        )
        print(f"{'':<8}{'passes':>8}{'wall (s)':>10}{'/ plain':>9}   runs (s)")
        base = float(np.median(walls["plain"]))
        for name in names:
            passes = bench.results[name].attrs["passes"]  # type: ignore[attr-defined]
            wall = float(np.median(walls[name]))
            runs = " ".join(f"{w:.2f}" for w in walls[name])
            print(f"{name:<8}{passes:>8}{wall:>10.2f}{wall / base:>8.2f}x   {runs}")
    finally:
        bench.teardown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
