"""An evaluation on worker processes with a hard memory limit: does it finish, losing no worker?

Usage::

    python benchmarks/memory_limited.py --workdir DIR [--workers 2] [--threads-per-worker 1]
        [--memory-limit 1GB]

``DIR`` holds ``key.zarr`` and ``system-1.zarr`` (``bosaris-dask simulate --n-models 31623
--n-segments 31623 --systems 1 --out-dir DIR`` makes the 1e9-trial set). Runs the full evaluation
(four priors, a 201-point sweep, EER, PRBEP, Cllr, minCllr) on a ``LocalCluster`` whose workers dask
terminates at 95% of ``--memory-limit``, and prints the wall time, each worker's peak resident
memory (``VmHWM``), the engine's per-task estimate, whether any worker was replaced (a worker
killed for memory comes back under a new address), and whether the numbers equal a run with the
threaded scheduler (``--compare``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

PRIORS = (0.5, 0.1, 0.01, 0.001)
MB = 2**20


def peak_rss() -> int:
    """This process's peak resident memory in bytes (``VmHWM``, reset by ``exec``)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def run(workdir: Path, cluster: str, **options) -> tuple:
    from bosaris_dask import engine, io
    from bosaris_dask.cluster import connect
    from bosaris_dask.inputs import pass_inputs
    from bosaris_dask.metrics import evaluate
    from bosaris_dask.passes import pass1_bins

    key = io.read(workdir / "key.zarr")
    scores = io.read(workdir / "system-1.zarr")
    with connect(cluster=cluster, dashboard=False, announce=None, **options) as client:
        before = set(client.scheduler_info(n_workers=-1)["workers"]) if client else set()
        start = time.perf_counter()
        ds = evaluate(scores, key, priors=PRIORS, sweep=np.linspace(-10, 10, 201))
        wall = time.perf_counter() - start
        after = set(client.scheduler_info(n_workers=-1)["workers"]) if client else set()
        peaks = client.run(peak_rss) if client else {}
        inputs, dtype = pass_inputs([scores], key)
        need = engine._task_memory(inputs, dtype, 1 << pass1_bins.default_coarse_bits(1),
                                   engine.DEFAULT_SPLIT_EVERY)  # fmt: skip
    return ds, wall, peaks, before != after, need


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads-per-worker", type=int, default=1)
    parser.add_argument("--memory-limit", default="1GB")
    parser.add_argument("--compare", action="store_true", help="also run with threads")
    args = parser.parse_args(argv)

    ds, wall, peaks, replaced, need = run(
        args.workdir, "local", workers=args.workers,
        threads_per_worker=args.threads_per_worker, memory_limit=args.memory_limit,
    )  # fmt: skip
    trials = int(ds.n_target.sum() + ds.n_nontarget.sum())
    print(f"{trials:.3g} trials on {args.workers} workers x {args.threads_per_worker} threads, "
          f"memory limit {args.memory_limit} each")  # fmt: skip
    print(f"  evaluation {wall:.1f} s, {ds.attrs['passes']} passes")
    print(f"  engine's estimate per task: {need.describe()}")
    for address, peak in sorted(peaks.items()):
        print(f"  worker {address}: peak RSS {peak / MB:,.0f} MB")
    print(f"  workers replaced (killed): {'YES' if replaced else 'no'}")
    if args.compare:
        threads, *_ = run(args.workdir, "threads")
        same = all(
            np.array_equal(ds[v].values, threads[v].values)
            for v in ("act_dcf", "min_dcf", "eer", "prbep", "cllr", "min_cllr", "rocch_pfa")
        )
        print(f"  equal to the threaded run: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
