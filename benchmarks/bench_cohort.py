"""Cohort statistics of AS-norm: the float32 screen against the streaming selection and the
sgemm floor.

Usage::

    python benchmarks/bench_cohort.py --rows 10000 --cohort 20000 --top-n 300 --repeat 3 \
        [--modes screen,streaming,sgemm]

Two sides (enrolment and test) of ``--rows`` embeddings each and a cohort of ``--cohort``,
drawn like ``bench_embeddings.py`` (speaker centres plus noise, d = ``--dim``). Each mode runs
in its own child process after a warm-up (numba compilation, BLAS start-up), rounds
interleaved, medians printed:

* ``screen``: :func:`bosaris_dask.embeddings.cohort.side_statistics` of both sides with
  ``top_n`` (the default method: moments for the full statistics, the float32 screen for the
  top-N);
* ``streaming``: the same with ``method="streaming"`` (every cohort score exact, the previous
  implementation);
* ``sgemm``: the float32 products alone, ``a @ c.T`` in tiles of 4,096 x 2,048 on two BLAS
  threads (the floor of any screen by matrix products).

The children print a hash of the top-N statistics: ``screen`` and ``streaming`` must agree bit
for bit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

MODES = ("screen", "streaming", "sgemm")


def _draw(rows: int, cohort: int, dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    speakers = max(2, rows // 20)
    centres = rng.normal(size=(speakers, dim))

    def side(n: int) -> np.ndarray:
        labels = rng.integers(0, speakers, size=n)
        return (centres[labels] + rng.normal(size=(n, dim))).astype(np.float32)

    return side(rows), side(rows), side(cohort)


def _child(args: argparse.Namespace) -> dict:
    from bosaris_dask.embeddings.cohort import side_statistics
    from bosaris_dask.embeddings.prepare import prepare
    from bosaris_dask.embeddings.store import from_arrays

    def sides(e, t, c):
        return [prepare(from_arrays([f"e{i}" for i in range(len(e))], e)),
                prepare(from_arrays([f"t{i}" for i in range(len(t))], t))], prepare(
            from_arrays([f"c{i}" for i in range(len(c))], c))  # fmt: skip

    warm = sides(*_draw(300, 700, 16))
    side_statistics(*warm, top_n=5, method=args.child if args.child != "sgemm" else "screen")
    e, t, c = _draw(args.rows, args.cohort, args.dim)
    result: dict = {}
    start = time.perf_counter()
    if args.child == "sgemm":
        from threadpoolctl import threadpool_limits

        with threadpool_limits(2, user_api="blas"):
            buf = np.empty((4096, 2048), dtype=np.float32)
            for x in (e, t):
                for i in range(0, len(x), 4096):
                    for j in range(0, len(c), 2048):
                        a, b = x[i : i + 4096], c[j : j + 2048]
                        np.matmul(a, b.T, out=buf[: len(a), : len(b)])
    else:
        s, co = sides(e, t, c)
        prepared = time.perf_counter()
        stats = side_statistics(s, co, top_n=args.top_n, method=args.child)
        top = np.concatenate([x[:, 2:] for x in stats])
        result["top_hash"] = hashlib.sha256(top.tobytes()).hexdigest()[:16]
        result["prepare_s"] = prepared - start
    result["wall_s"] = time.perf_counter() - start
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10000)
    parser.add_argument("--cohort", type=int, default=20000)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--top-n", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args)))
        return 0
    modes = [m for m in args.modes.split(",") if m]
    count = 2 * args.rows * args.cohort
    print(
        f"2 x {args.rows:,} rows x {args.cohort:,} cohort = {count:.3g} cohort scores "
        f"(d = {args.dim}, top-{args.top_n}), median of {args.repeat} interleaved rounds"
    )
    print(f"load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    runs: dict[str, list[dict]] = {m: [] for m in modes}
    for _ in range(args.repeat):
        for m in modes:
            command = [sys.executable, __file__, "--child", m, "--rows", str(args.rows),
                       "--cohort", str(args.cohort), "--dim", str(args.dim),
                       "--top-n", str(args.top_n)]  # fmt: skip
            out = subprocess.run(command, check=True, capture_output=True, text=True)
            runs[m].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(f"  {m}: {runs[m][-1]}", flush=True)
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    wall = {m: float(np.median([r["wall_s"] for r in runs[m]])) for m in modes}
    print(f"{'':<12}{'wall (s)':>10}{'M scores/s':>12}{'vs sgemm':>10}{'peak MB':>9}")
    for m in modes:
        vs = f"{wall['sgemm'] / wall[m]:>10.2f}" if "sgemm" in wall else f"{'':>10}"
        peak = max(r["peak_rss_mb"] for r in runs[m])
        print(f"{m:<12}{wall[m]:>10.2f}{count / wall[m] / 1e6:>12.1f}{vs}{peak:>9.0f}")
    hashes = {r["top_hash"] for m in ("screen", "streaming") if m in runs for r in runs[m]}
    if hashes:
        print(f"top-N statistics identical across runs and methods: {len(hashes) == 1}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
