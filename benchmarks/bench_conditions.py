"""24 conditions against a plain evaluation of the same store: passes and wall time, measured in
the same run, with the grouped kernels and with one masked copy of each system per condition.

Usage::

    python benchmarks/bench_conditions.py [--models 4000] [--segments 5000] [--repeat 3]
        [--store DIR]

Simulates one system (``bosaris_dask.simulate``, float32, 0.5% targets), writes it and its key
as zarr stores in a temporary directory (or reads ``DIR/key.zarr`` and ``DIR/system-1.zarr``
of an existing store, e.g. one ``bosaris-dask simulate`` wrote, left as it is), draws condition
tables (models: gender of 2 values and language of 3; segments: source of 6 values and language
of 3) and evaluates it at two priors with the NBE sweep, each the median of ``--repeat``
interleaved runs:

* ``plain``: :func:`bosaris_dask.metrics.evaluate`;
* ``masked``: the same with ``--by model.gender segment.source same.language`` (24 conditions),
  the way before the grouped kernels (``bosaris_dask.grouped-kernels: False``: a counting pass,
  then every pass keys each trial once per condition, plus once pooled);
* ``grouped``: the same with the grouped kernels, the pooled histogram the sum of the
  conditions' (``bosaris_dask.pooled-as-plain: False``: each trial keyed once per pass, counted
  in a ``(condition, bin)`` histogram);
* ``apart``: the default: ``grouped`` with the pooled histogram counted apart at a plain
  evaluation's bits, from the same keys (``bosaris_dask.pooled-as-plain: True``).

``--kernels`` measures instead the pass-1 kernel alone on one in-memory chunk of the same
size, one thread, 24 random conditions per cell (the worst case for the histogram's cache),
with bins fitted to the scores as at 1e8 trials: the plain kernel (2**17 bins; numpy, and the
compiled counts of :mod:`bosaris_dask.passes.fast_pass1`), the grouped one (24 x 2**16 bins), the
grouped one with the pooled histogram apart (numpy, and the compiled loops of
:mod:`bosaris_dask.passes.fast_grouped`), and the 25 masked copies it replaced, in ns per trial.
``--selection`` measures the compiled selection of a refinement pass on such a chunk, one
thread, in ns per trial: plain (:func:`bosaris_dask.passes.refine_kernels.select_trials`, 2**20
bins, 1.5% of them candidates, as at 1e9 trials) and grouped
(:func:`bosaris_dask.passes.grouped_refine_kernels._select_parts`: the pooled part in the plain
bins, 0.2% candidates, and 24 conditions in 2**16 bins, 0.6% candidates each), interleaved rounds.

Prints passes, wall time, the time spent inside the passes over the data (the rest is the
client's: refinement plans and every condition's metrics, which do not grow with the trials)
and their ratios to ``plain``, and checks that ``masked`` and ``grouped`` give the same Dataset
(``--mode`` runs some of the modes only). The class ``Conditions`` follows the asv convention
(``setup``, ``time_*``, ``teardown``) so a test can run every benchmark body once.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import dask
import numpy as np

from bosaris_dask import io
from bosaris_dask.conditions import condition_table
from bosaris_dask.conditions.summaries import GROUPED_KEY, POOLED_KEY
from bosaris_dask.metrics import evaluate
from bosaris_dask.passes import runner
from bosaris_dask.simulate import simulate

BY = ["model.gender", "segment.source", "same.language"]
MODES = ("plain", "masked", "grouped", "apart")


class _PassClock:
    """Seconds spent computing passes (every pass goes through the runner's compute calls)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.saved = {name: getattr(runner, name) for name in ("compute", "compute_and_keep")}
        for name, func in self.saved.items():
            setattr(runner, name, self._timed(func))

    def restore(self) -> None:
        for name, func in self.saved.items():
            setattr(runner, name, func)

    def _timed(self, func):  # type: ignore[no-untyped-def]
        def timed(*args, **kwargs):  # type: ignore[no-untyped-def]
            start = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        return timed


class Conditions:
    """asv-style benchmark bodies over one simulated store and its condition tables."""

    def setup(self, models: int = 4000, segments: int = 5000, store: str | None = None) -> None:
        self.own = store is None
        if store is None:
            self.dir = Path(tempfile.mkdtemp(prefix="bench-conditions-"))
            key, (system,) = simulate(models, segments, systems=1, seed=5)
            io.write(key, self.dir / "key.zarr")
            io.write(system, self.dir / "system-1.zarr")
        else:
            self.dir = Path(store)
            key = io.read(self.dir / "key.zarr")
            models, segments = key.sizes["model"], key.sizes["segment"]
        rng = np.random.default_rng(7)
        langs = ["eng", "cmn", "yue"]
        self.tables = [
            condition_table("model", key.model.values.tolist(), {
                "gender": rng.choice(["f", "m"], models).tolist(),
                "language": rng.choice(langs, models).tolist()}),
            condition_table("segment", key.segment.values.tolist(), {
                "source": rng.choice([f"src{i}" for i in range(6)], segments).tolist(),
                "language": rng.choice(langs, segments).tolist()}),
        ]  # fmt: skip
        self.results: dict[str, object] = {}

    def teardown(self, *args: object) -> None:
        if self.own:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _run(self, name: str) -> None:
        key, scores = io.read(self.dir / "key.zarr"), io.read(self.dir / "system-1.zarr")
        extra = {} if name == "plain" else {"conditions": self.tables, "by": BY}
        with dask.config.set({GROUPED_KEY: name != "masked", POOLED_KEY: name == "apart"}):
            self.results[name] = evaluate(scores, key, priors=[0.01, 0.005], **extra)

    def time_plain(self) -> None:
        self._run("plain")

    def time_masked(self) -> None:
        self._run("masked")

    def time_grouped(self) -> None:
        self._run("grouped")

    def time_apart(self) -> None:
        self._run("apart")


def _ns_per_trial(runs: dict, repeat: int, trials: int) -> dict[str, float]:
    """Median ns per trial of each run over ``repeat`` interleaved rounds (a noisy minute hits
    every run)."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return {name: float(np.median(t)) / trials * 1e9 for name, t in times.items()}


def kernel_costs(models: int, segments: int, repeat: int) -> dict[str, float]:
    """Median ns per trial of each pass-1 kernel on one ``models x segments`` chunk, with the
    bins a 1e8-trial evaluation fits to the scores (plain: 2**17 bins; conditions: 2**16)."""
    from bosaris_dask.passes import kernels
    from bosaris_dask.passes.binmap import BinMap
    from bosaris_dask.passes.grouped_kernels import grouped_pass1_kernel
    from bosaris_dask.passes.keys import order_keys

    rng = np.random.default_rng(0)
    cls = rng.choice(np.array([-1, 1], np.int8), size=(models, segments), p=[0.995, 0.005])
    s = (rng.normal(size=cls.shape) + (cls == 1) * 2).astype(np.float32)
    m = np.ones(cls.shape, bool)
    g = rng.integers(0, 24, size=cls.shape).astype(np.int16)
    rows, cols = np.arange(models), np.arange(segments)
    kw = {"block": 1 << 16, "slice_size": 1 << 22}
    pick = rng.integers(0, cls.size, 1 << 20)
    sample, tar = order_keys(s.reshape(-1)[pick]), cls.reshape(-1)[pick] > 0
    plain_map = BinMap.from_sample(sample, 32, 17, tar)
    cond_map = BinMap.from_sample(sample, 32, 16, tar)
    grouped = {"shift": 0, "nbins": cond_map.nbins, "n_groups": 24, "binmap": cond_map, **kw}
    apart = {"pooled_shift": 0, "pooled_nbins": plain_map.nbins, "pooled_binmap": plain_map}

    def plain(compiled: bool) -> None:
        kernels.system_kernel(rows, cols, cls, s, m, system=0, shift=0, nbins=plain_map.nbins,
                              binmap=plain_map, compiled=compiled, **kw)  # fmt: skip

    def masked() -> None:
        plain(False)
        for k in range(24):
            kernels.system_kernel(rows, cols, cls, s, m & (g == k), system=0, shift=0,
                                  nbins=cond_map.nbins, binmap=cond_map, compiled=False,
                                  **kw)  # fmt: skip

    runs = {
        "plain": lambda: plain(False),
        "plain-compiled": lambda: plain(True),
        "grouped": lambda: grouped_pass1_kernel(rows, cols, cls, g, s, m, system=0, **grouped),
        "apart": lambda: grouped_pass1_kernel(rows, cols, cls, g, s, m, system=0, **grouped,
                                              **apart),
        "apart-compiled": lambda: grouped_pass1_kernel(rows, cols, cls, g, s, m, system=0,
                                                       compiled=True, **grouped, **apart),
        "masked": masked,
    }  # fmt: skip
    for run in runs.values():  # compile (numba) and warm the workspaces first
        if run is not masked:
            run()
    return _ns_per_trial(runs, repeat, cls.size)


def selection_costs(models: int, segments: int, repeat: int) -> dict[str, float]:
    """Median ns per trial of the compiled selections of a refinement pass (see the module
    docstring) on one ``models x segments`` chunk, one thread, ``repeat`` interleaved rounds."""
    from bosaris_dask.passes import kernels
    from bosaris_dask.passes.binmap import BinMap
    from bosaris_dask.passes.grouped_kernels import Part
    from bosaris_dask.passes.grouped_refine_kernels import _select_parts
    from bosaris_dask.passes.keys import order_keys
    from bosaris_dask.passes.refine_kernels import RefineSpec, select_trials

    rng = np.random.default_rng(0)
    cls = rng.choice(np.array([-1, 1], np.int8), size=models * segments, p=[0.995, 0.005])
    s = (rng.normal(size=cls.shape) + (cls == 1) * 2).astype(np.float32)
    m = np.ones(cls.shape, bool)
    g = rng.integers(0, 24, size=cls.shape).astype(np.int16)
    pick = rng.integers(0, cls.size, 1 << 20)
    sample, tar = order_keys(s[pick]), cls[pick] > 0
    plain_map = BinMap.from_sample(sample, 32, 20, tar)
    cond_map = BinMap.from_sample(sample, 32, 16, tar)

    def spec(bm: BinMap, share: float) -> RefineSpec:
        cands = np.flatnonzero(rng.random(bm.nbins) < share)
        lo, bits = bm.bin_lo_bits(cands)
        return RefineSpec(0, bm.top, lo.astype(np.uint64), bits.astype(np.int64),
                          np.zeros(len(cands), np.int64), raw=True, binmap=bm)  # fmt: skip

    plain_spec = spec(plain_map, 0.015)
    parts = [Part(0)] + [Part(0, (k,), (k,)) for k in range(24)]
    specs = [spec(plain_map, 0.002)] + [spec(cond_map, 0.006) for _ in range(24)]
    ws = kernels.workspace(np.dtype(np.float32), 1 << 16, 1 << 22)
    runs = {
        "select (plain)": lambda: select_trials(cls, s, m, plain_spec, ws, compiled=True),
        "select (24 conditions)": lambda: _select_parts(cls, g, s, m, specs, parts, 24, ws,
                                                        compiled=True),
    }  # fmt: skip
    for run in runs.values():  # compile (numba) and warm the workspace first
        run()
    return _ns_per_trial(runs, repeat, cls.size)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=4000)
    parser.add_argument("--segments", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--mode", action="append", choices=MODES, help="default: all")
    parser.add_argument("--kernels", action="store_true", help="the pass-1 kernels alone")
    parser.add_argument("--selection", action="store_true",
                        help="a refinement pass's compiled selections alone")  # fmt: skip
    parser.add_argument("--store", help="read DIR/key.zarr and DIR/system-1.zarr instead")
    args = parser.parse_args(argv)
    if args.selection:
        costs = selection_costs(args.models, args.segments, args.repeat)
        load = os.getloadavg()[0]
        print(f"refinement selection, one {args.models:,} x {args.segments:,} chunk, one "
              f"thread, median of {args.repeat}, load average {load:.1f}")  # fmt: skip
        for name, ns in costs.items():
            print(f"{name:<24}{ns:>8.2f} ns/trial")
        return 0
    if args.kernels:
        costs = kernel_costs(args.models, args.segments, args.repeat)
        print(f"pass-1 kernel, one {args.models:,} x {args.segments:,} chunk, one thread, "
              f"median of {args.repeat}, load average {os.getloadavg()[0]:.1f}")  # fmt: skip
        for name, ns in costs.items():
            print(f"{name:<15}{ns:>8.1f} ns/trial{ns / costs['plain']:>8.2f}x")
        return 0
    modes = [m for m in MODES if m in (args.mode or MODES)]
    bench = Conditions()
    bench.setup(args.models, args.segments, args.store)
    try:
        walls: dict[str, list[float]] = {name: [] for name in modes}
        in_passes: dict[str, list[float]] = {name: [] for name in modes}
        clock = _PassClock()
        try:
            for _ in range(args.repeat):  # interleaved repeats: a noisy minute hits every mode
                for name in modes:
                    start, clock.seconds = time.perf_counter(), 0.0
                    getattr(bench, f"time_{name}")()
                    walls[name].append(time.perf_counter() - start)
                    in_passes[name].append(clock.seconds)
        finally:
            clock.restore()
        same: bool | str = "not run"
        if "masked" in modes and "grouped" in modes:
            masked, grouped = bench.results["masked"], bench.results["grouped"]
            same = all(np.array_equal(masked[v].values, grouped[v].values, equal_nan=True)  # type: ignore[index]
                       for v in masked.data_vars)  # type: ignore[attr-defined]  # fmt: skip
        n_cond = next((r.sizes["condition"] for n, r in bench.results.items()  # type: ignore[attr-defined]
                       if n != "plain"), 0)  # fmt: skip
        models, segments = bench.tables[0].ids.size, bench.tables[1].ids.size
        print(f"{models:,} x {segments:,} trials, {n_cond} conditions, median of "
              f"{args.repeat}, load average {os.getloadavg()[0]:.1f}; masked == grouped: "
              f"{same}")  # fmt: skip
        print(f"{'':<9}{'passes':>7}{'wall (s)':>10}{'/ plain':>9}{'in passes':>11}"
              f"{'/ plain':>9}  walls per repeat")  # fmt: skip
        nan = float("nan")
        base = float(np.median(walls["plain"])) if "plain" in modes else nan
        base_in = float(np.median(in_passes["plain"])) if "plain" in modes else nan
        for name in modes:
            passes = bench.results[name].attrs["passes"]  # type: ignore[attr-defined]
            wall, inside = float(np.median(walls[name])), float(np.median(in_passes[name]))
            each = ", ".join(f"{w:.2f}" for w in walls[name])
            print(f"{name:<9}{passes:>7}{wall:>10.2f}{wall / base:>9.2f}{inside:>11.2f}"
                  f"{inside / base_in:>9.2f}  {each}")  # fmt: skip
        if same is False:
            return 1
    finally:
        bench.teardown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
