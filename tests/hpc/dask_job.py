"""A tiny stand-in for ``bosaris-dask evaluate``, structured as the CLI must be for every cluster.

Usage::

    python tests/hpc/dask_job.py --out result.json [--n N] [--min-workers K] [cluster options]
    mpirun -n 3 python tests/hpc/dask_job.py --out result.json --cluster mpi --interface lo

It parses its arguments (every MPI rank does this), enters :func:`connect_from_args` (under MPI
only rank 1 gets past it), computes ``sum(3*i + 1 for i in range(n))`` with dask, and writes
what it saw as JSON to ``--out`` (once, from the client). The hpc tests run it as a command, so
the computed thing can be swapped for the real CLI (``bosaris-dask evaluate ...``) by changing the
command and the check, not the launch machinery.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import dask.array as da

from bosaris_dask.cluster import add_cluster_arguments, connect_from_args


def _worker_info() -> dict:
    return {
        "pid": os.getpid(),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "mpi_rank": os.environ.get("OMPI_COMM_WORLD_RANK"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="JSON file to write the result to")
    parser.add_argument("--n", type=int, default=2_000_000, help="number of terms")
    parser.add_argument("--min-workers", type=int, default=1, help="workers to wait for")
    add_cluster_arguments(parser)
    args = parser.parse_args(argv)

    # Nothing but argument parsing above this line: with --cluster mpi every rank runs it.
    with connect_from_args(args) as client:
        if client is not None and args.min_workers > 1:
            client.wait_for_workers(args.min_workers, timeout=args.worker_timeout or 120)
        x = da.arange(args.n, chunks=max(args.n // 16, 1), dtype="int64")
        total = int((x * 3 + 1).sum(split_every=2).compute())
        workers = {} if client is None else client.run(_worker_info)
        result = {
            "total": total,
            "expected": 3 * (args.n * (args.n - 1) // 2) + args.n,
            "client": _worker_info(),
            "workers": sorted(workers.values(), key=lambda w: w["pid"]),
            "scheduler": None if client is None else client.scheduler.address,
        }
    tmp = f"{args.out}.tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
    os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
