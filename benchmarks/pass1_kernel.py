"""Pass 1's kernel on one chunk, in one thread: ns per trial, code version against code version.

Usage::

    python benchmarks/pass1_kernel.py [--code NAME=PATH ...] [--n 16777216] [--repeat 5]

Every code version (``--code before=/work/main``: a checkout whose ``bosaris_dask`` is imported
through ``PYTHONPATH``; default: this checkout) runs
:func:`bosaris_dask.passes.kernels.system_kernel` on the same chunk (``--n`` float32 scores, normal,
with 2% targets, a broadcast mask as a label-derived key gives, and an adaptive bin map of 2**20
bins from a sample, as the engine uses at 1e9 trials) in a fresh process, once with the compiled
loop and once on the numpy path. The versions run interleaved, ``--repeat`` rounds; it prints the
median ns per trial of each, and each one's ratio to the first version (per round, then the median),
so that a busy minute on a shared machine hits all of them alike. The times are the thread's CPU
time (best of 3 runs per process), less sensitive than wall time to other jobs on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = """
import json, sys, time
import numpy as np
from threadpoolctl import threadpool_limits
from bosaris_dask.passes import kernels
from bosaris_dask.passes.binmap import BinMap
from bosaris_dask.passes.keys import order_keys

n, compiled = int(sys.argv[1]), sys.argv[2] == "1"
rng = np.random.default_rng(0)
cls = np.where(rng.random(n) < 0.02, 1, -1).astype(np.int8).reshape(1, -1)
s = (rng.standard_normal(n) * 3 + 4 * (cls[0] > 0)).astype(np.float32).reshape(1, -1)
m = np.broadcast_to(np.ones((1, 1), bool), s.shape)  # a label-derived key's mask
bm = BinMap.from_sample(order_keys(s[0, :: max(1, n >> 21)]), 32, 20)
run = lambda: kernels.system_kernel(
    np.arange(1), np.arange(n), cls, s, m, system=0, shift=0, nbins=bm.nbins, block=65536,
    slice_size=4194304, binmap=bm, compiled=compiled)
with threadpool_limits(1):
    run()  # compile, warm the workspace
    times = []
    for _ in range(3):
        t0 = time.thread_time()
        run()
        times.append(time.thread_time() - t0)
print(json.dumps(min(times) / n * 1e9))
"""


def _run(path: Path, n: int, compiled: bool) -> float:
    env = dict(os.environ, PYTHONPATH=str(path))
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(n), "1" if compiled else "0"],
        env=env, cwd=path, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return float(json.loads(out.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--n", type=int, default=1 << 24)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parent.parent
    codes = [c.split("=", 1) for c in args.code] or [["this", str(here)]]
    cases = [(name, Path(path), comp) for name, path in codes for comp in (True, False)]
    times: dict[int, list[float]] = {i: [] for i in range(len(cases))}
    for _ in range(args.repeat):
        for i, (_, path, comp) in enumerate(cases):
            times[i].append(_run(path, args.n, comp))
    print(f"load average {os.getloadavg()[0]:.2f}; {args.n:,} float32 trials, one thread")
    base = times[0]
    for i, (name, _, comp) in enumerate(cases):
        ratio = statistics.median(t / b for t, b in zip(times[i], base, strict=True))
        label = f"{name} {'compiled' if comp else 'numpy'}"
        print(f"{label:<24} {statistics.median(times[i]):6.2f} ns/trial  ratio {ratio:5.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
