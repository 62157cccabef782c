"""Before/after and store-against-store timings of the full evaluation, interleaved in one run.

Usage::

    python benchmarks/ab_evaluate.py --workdir DIR [--code NAME=PATH ...]
        [--case NAME=KEY,SCORES ...] [--cluster threads --cluster local] [--repeat 3]
        [--warm] [--json FILE]

Every combination of code version (``--code before=/tmp/base``: a checkout whose package is
imported, through ``PYTHONPATH``; default: this checkout), store case (``--case
explicit=key-explicit.zarr,system-1-masked.zarr``: a key and a scores store in ``DIR``;
default: ``key.zarr,system-1.zarr``) and scheduler (``threads``; ``local``: the 2-process
``LocalCluster`` of ``--cluster local``; ``local-1x2``: that LocalCluster with one worker
process of two threads (``--workers 1 --threads-per-worker 2``); ``user``: a plain
``distributed.LocalCluster(n_workers=2, threads_per_worker=1)`` as a notebook user starts one,
with distributed's malloc setting, which the first pass tunes (:mod:`bosaris_dask.passes.malloc`);
``user-untuned``: the same with ``bosaris_dask.worker-malloc`` 0; a cluster's start-up is in
the wall time, not in ``evaluate()``) runs
``--repeat`` times in a fresh process, interleaved so that a noisy minute on a shared machine
hits all of them alike. It prints medians of the wall time and of ``evaluate()`` alone, each
combination's ratio to the first one (per repeat, then the median), the CPU time
of ``evaluate()`` (all threads of the driver process, which runs a LocalCluster's scheduler,
plus the worker processes: less sensitive to other jobs on a shared machine than wall time),
the driver's peak RSS, and checks that every combination gives the same metrics, bit for bit.
``--warm`` runs one evaluation first in each process (its cluster started, the workers' imports
and compiled loops loaded) and measures the second: the steady state of a notebook or a batch
job that evaluates several systems.
The evaluation is ``bench_evaluate.py``'s: 4 priors, a 201-point NBE sweep, EER, PRBEP, Cllr,
minCllr.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PRIORS = (0.5, 0.1, 0.01, 0.001)


def _workers_cpu(client) -> float:
    """CPU seconds the worker processes of a distributed client have used (0 without one)."""
    if client is None or not hasattr(client, "run"):
        return 0.0
    return float(sum(client.run(time.process_time).values()))


@contextlib.contextmanager
def _users_cluster(tuned: bool) -> Iterator[Any]:
    """A plain 2-process LocalCluster with distributed's defaults, as a user starts one."""
    import dask
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster) as client,
        dask.config.set({"bosaris_dask.worker-malloc": int(tuned)}),
    ):
        yield client


def _child(workdir: Path, key: str, scores: str, cluster: str, warm: bool) -> None:
    import numpy as np

    from bosaris_dask import io
    from bosaris_dask.cluster import connect
    from bosaris_dask.metrics import evaluate, operating_points, sweep_points

    start = time.perf_counter()
    k, s = io.read(workdir / key), io.read(workdir / scores)
    if cluster.startswith("user"):
        session = _users_cluster(tuned=cluster == "user")
    elif cluster == "local-1x2":  # one worker process computing on two threads
        session = connect(cluster="local", workers=1, threads_per_worker=2, dashboard=False,
                          announce=None)  # fmt: skip
    else:
        session = connect(cluster=cluster, dashboard=False, announce=None)
    with session as client:
        if warm:
            evaluate(s, k, priors=PRIORS, sweep=np.linspace(-10, 10, 201))
        workers_cpu0 = _workers_cpu(client)
        t0, cpu0 = time.perf_counter(), time.process_time()
        ds = evaluate(s, k, priors=PRIORS, sweep=np.linspace(-10, 10, 201))
        evaluate_s, cpu_s = time.perf_counter() - t0, time.process_time() - cpu0
        cpu_s += _workers_cpu(client) - workers_cpu0
    ds = ds.isel(system=0)
    ops, sweep = operating_points(ds), sweep_points(ds)
    print(json.dumps({
        "wall_s": time.perf_counter() - start, "evaluate_s": evaluate_s, "cpu_s": cpu_s,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "passes": int(ds.attrs["passes"]),
        "metrics": [float(ds.eer), float(ds.prbep), float(ds.cllr), float(ds.min_cllr),
                    *ops.act_dcf_raw.values.tolist(), *sweep.act_dcf_raw.values.tolist(),
                    *ops.min_dcf_raw.values.tolist(), *sweep.min_dcf_raw.values.tolist()],
    }))  # fmt: skip


def _pair(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def main(argv: list[str] | None = None) -> dict:
    """Run every combination ``--repeat`` times; return (and print) the medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--code", type=_pair, action="append")
    parser.add_argument("--case", type=_pair, action="append")
    clusters = ["threads", "local", "local-1x2", "user", "user-untuned"]
    parser.add_argument("--cluster", action="append", choices=clusters)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--warm", action="store_true", help="measure a second evaluation")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.workdir, *args.child, warm=args.warm)
        return {}
    here = str(Path(__file__).resolve().parents[1])
    codes = dict(args.code or [("this", here)])
    cases = dict(args.case or [("label", "key.zarr,system-1.zarr")])
    combos = list(itertools.product(codes, cases, args.cluster or ["threads"]))
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = os.getloadavg()
    runs: dict[str, list[dict]] = {"/".join(c): [] for c in combos}
    for _ in range(args.repeat):
        for code, case, cluster in combos:
            key, scores = cases[case].split(",")
            env = dict(os.environ, PYTHONPATH=codes[code])
            out = subprocess.run(
                [sys.executable, __file__, "--workdir", str(args.workdir), "--child", key,
                 scores, cluster, *(["--warm"] if args.warm else [])], capture_output=True,
                text=True, env=env,
            )  # fmt: skip
            if out.returncode:
                raise SystemExit(f"{code}/{case}/{cluster} failed:\n{out.stderr[-3000:]}")
            runs["/".join((code, case, cluster))].append(json.loads(out.stdout.splitlines()[-1]))
    first = next(iter(runs))
    print(f"{started}, load average at start {load[0]:.1f} / end {os.getloadavg()[0]:.1f}, "
          f"{os.cpu_count()} cores; medians of {args.repeat}; ratios to {first}")  # fmt: skip
    summary = {}
    for name, rs in runs.items():
        per = [r["wall_s"] / b["wall_s"] for r, b in zip(rs, runs[first], strict=True)]
        per_eval = [r["evaluate_s"] / b["evaluate_s"] for r, b in zip(rs, runs[first], strict=True)]
        row = {
            "wall_s": statistics.median(r["wall_s"] for r in rs),
            "evaluate_s": statistics.median(r["evaluate_s"] for r in rs),
            "ratio_wall": statistics.median(per), "ratio_evaluate": statistics.median(per_eval),
            "peak_rss_mb": max(r["peak_rss_mb"] for r in rs), "passes": rs[0]["passes"],
            "cpu_s": statistics.median(r["cpu_s"] for r in rs),
            "ratio_cpu": statistics.median(
                r["cpu_s"] / b["cpu_s"] for r, b in zip(rs, runs[first], strict=True)),
        }  # fmt: skip
        summary[name] = row
        print(f"  {name:<32} wall {row['wall_s']:6.2f} s (x{row['ratio_wall']:.2f})  "
              f"evaluate() {row['evaluate_s']:6.2f} s (x{row['ratio_evaluate']:.2f}; per repeat "
              f"{', '.join(f'{x:.2f}' for x in per_eval)})  CPU {row['cpu_s']:6.2f} s "
              f"(x{row['ratio_cpu']:.2f})  driver peak RSS {row['peak_rss_mb']:5.0f} MB  "
              f"{row['passes']} passes")  # fmt: skip
    reference = runs[first][0]["metrics"]
    same = all(r["metrics"] == reference for rs in runs.values() for r in rs)
    print(f"  every run's metrics identical to the first's: {same}")
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "runs": runs, "date": started,
                                         "load": load}, indent=1))  # fmt: skip
    if not same:
        raise SystemExit("metrics differ between runs")
    return summary


if __name__ == "__main__":
    main()
