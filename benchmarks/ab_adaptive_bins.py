"""Fixed against adaptive pass-1 bins (issue 16): passes, candidate trials and time, interleaved.

Usage::

    python benchmarks/ab_adaptive_bins.py --workdir DIR [--repeat 3] [--emulate 10]

``DIR`` holds ``key.zarr`` and ``system-1.zarr`` (``bosaris-dask simulate``). Each repeat runs
the full evaluation (4 priors, a 201-point NBE sweep, EER, PRBEP, Cllr, minCllr; threads) once
with the fixed bins (``bosaris_dask.adaptive-bins`` 0) and once with the adaptive ones (1), each
in a fresh process, interleaved, and prints per mode the passes over the data, the trials in the
candidate bins after pass 1 (what must fit ``keep-limit`` for two passes), the median wall and
CPU time (all threads of the process; less disturbed by other jobs on a shared machine) of
``evaluate()`` and their ratios to the fixed bins' (medians of the per-repeat ratios); it checks
that the exact metrics are the same, bit for bit.

``--emulate S`` emulates ``S`` times more trials: ``keep-limit`` and ``raw-limit`` divided by
``S`` and the pass-1 bin budget ``log2(S)`` bits smaller (rounded), so that the candidate
pressure after pass 1 is about that of ``S`` times the trials with the default budgets.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

EXACT = ("min_dcf", "act_dcf", "eer", "prbep", "cllr", "min_cllr", "min_pmiss", "min_pfa")


def _child(workdir: Path, mode: int, emulate: float) -> None:
    import dask

    from bosaris_dask import config, io
    from bosaris_dask.metrics import evaluate
    from bosaris_dask.passes import pass1_bins, refinement

    knobs = {"bosaris_dask.adaptive-bins": mode, "scheduler": "threads"}
    if emulate > 1:
        bits = 20 - round(math.log2(emulate))
        pass1_bins.default_coarse_bits = lambda n: bits  # the budget of one or two systems' bins
        for name in ("keep-limit", "raw-limit"):
            knobs[f"bosaris_dask.{name}"] = int(config.KNOBS[name][0] / emulate)
    volumes: list[int] = []
    volume = refinement.volume

    def counted(summaries, plans):
        v = volume(summaries, plans)
        volumes.append(v)
        return v

    refinement.volume = counted
    key, scores = io.read(workdir / "key.zarr"), io.read(workdir / "system-1.zarr")
    with dask.config.set(knobs):
        t0, cpu0 = time.perf_counter(), time.process_time()
        ds = evaluate(scores, key, priors=(0.5, 0.1, 0.01, 0.001), sweep=np.linspace(-10, 10, 201))
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    out = {"mode": mode, "evaluate_s": wall, "cpu_s": cpu, "passes": int(ds.attrs["passes"]),
           "candidates": volumes[0] if volumes else 0,
           "metrics": {k: ds[k].values.tolist() for k in EXACT}}  # fmt: skip
    print(json.dumps(out))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--emulate", type=float, default=1.0)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        _child(args.workdir, args.child, args.emulate)
        return
    runs: dict[int, list[dict]] = {0: [], 1: []}
    env = dict(os.environ)
    for _ in range(args.repeat):
        for mode in (0, 1):
            cmd = [sys.executable, __file__, "--workdir", str(args.workdir), "--child",
                   str(mode), "--emulate", str(args.emulate)]  # fmt: skip
            done = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
            runs[mode].append(json.loads(done.stdout.strip().splitlines()[-1]))
    load = os.getloadavg()[0]
    print(f"{args.workdir}: median of {args.repeat}, interleaved; emulating x{args.emulate:g}; "
          f"load average {load:.2f} at the end")  # fmt: skip
    pairs = list(zip(runs[0], runs[1], strict=True))
    ratios = {k: statistics.median(a[k] / f[k] for f, a in pairs) for k in ("evaluate_s", "cpu_s")}
    for mode, name in ((0, "fixed"), (1, "adaptive")):
        r = runs[mode]
        t = statistics.median(x["evaluate_s"] for x in r)
        cpu = statistics.median(x["cpu_s"] for x in r)
        rel = (f" ({ratios['evaluate_s']:.2f} x fixed; CPU {ratios['cpu_s']:.2f} x)"
               if mode else "")  # fmt: skip
        passes = sorted({x["passes"] for x in r})
        print(f"  {name:8s}: passes {passes}, candidate trials after pass 1 "
              f"{r[0]['candidates']:,}, evaluate() {t:.2f} s, CPU {cpu:.2f} s{rel}")  # fmt: skip
    same = all(x["metrics"] == runs[0][0]["metrics"] for r in runs.values() for x in r)
    print(f"  exact metrics identical across all runs: {same}")
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
