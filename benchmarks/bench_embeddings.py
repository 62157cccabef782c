"""Scores from embeddings: throughput of the block kernel and of a full evaluation, against the
plain sgemm floor measured in the same run.

Usage::

    python benchmarks/bench_embeddings.py [--side 4096] [--dim 256] [--block 4096] [--repeat 3]

Draws ``side`` enrolment and ``side`` test embeddings (float32, ``side // 20`` speakers, so a
label-derived key has about 5% targets) and times, each as the median of ``--repeat`` runs:

* ``sgemm``: ``a @ b.T`` of the float32 matrices in one numpy call (BLAS threads as configured):
  the floor no scorer can beat on this machine;
* ``dgemm``: the same product in float64 (what the exact kernel multiplies);
* ``scores``: computing every block of :func:`scores_from_embeddings` (float64 product rounded to
  float32, BLAS pinned to one thread per task, dask threads over the blocks), summed per block
  so nothing is stored;
* ``evaluate``: :func:`bosaris_dask.metrics.evaluate` of those lazy scores against the key (all
  passes included).

Prints scores per second and the ratio to the sgemm floor. The default size runs in seconds; the
issue's 1e9 and 1e10-pair runs are ``--side 31623`` and ``--side 100000`` (minutes, not for CI).

The class ``Embeddings`` follows the asv convention (``setup``, ``time_*``) so a test can run
every benchmark body once.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bosaris_dask.embeddings import from_arrays, scores_from_embeddings
from bosaris_dask.metrics import evaluate
from bosaris_dask.trials import key_from_labels


class Embeddings:
    """asv-style benchmark bodies over one random embedding set."""

    def setup(self, side: int = 1024, dim: int = 64, block: int = 512) -> None:
        rng = np.random.default_rng(0)
        speakers = max(2, side // 20)
        centres = rng.normal(size=(speakers, dim))
        labels_e = np.arange(side) % speakers
        labels_t = rng.integers(0, speakers, size=side)
        self.a = (centres[labels_e] + rng.normal(size=(side, dim))).astype(np.float32)
        self.b = (centres[labels_t] + rng.normal(size=(side, dim))).astype(np.float32)
        e_ids = [f"e{i}" for i in range(side)]
        t_ids = [f"t{i}" for i in range(side)]
        self.enrol, self.test = from_arrays(e_ids, self.a), from_arrays(t_ids, self.b)
        self.key = key_from_labels(e_ids, labels_e, t_ids, labels_t, chunks=(block, block))
        self.block = block

    def time_sgemm(self) -> None:
        self.a @ self.b.T

    def time_dgemm(self) -> None:
        self.a.astype(np.float64) @ self.b.astype(np.float64).T

    def time_scores(self) -> None:
        s = scores_from_embeddings(self.enrol, self.test, chunks=(self.block, self.block))
        s.score.data.sum(dtype=np.float64).compute()

    def time_evaluate(self) -> None:
        s = scores_from_embeddings(self.enrol, self.test, trials=self.key,
                                   chunks=(self.block, self.block))  # fmt: skip
        self.results = evaluate(s, self.key)


def _median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--side", type=int, default=4096)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--block", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    bench = Embeddings()
    bench.setup(args.side, args.dim, min(args.block, args.side))
    n = args.side**2
    rows = []
    for name in ("sgemm", "dgemm", "scores", "evaluate"):
        rows.append((name, _median(getattr(bench, f"time_{name}"), args.repeat)))
    floor = rows[0][1]
    print(f"{args.side:,} x {args.side:,} pairs (d = {args.dim}), blocks of {args.block}, "
          f"median of {args.repeat}")  # fmt: skip
    print(f"{'':<10}{'wall (s)':>10}{'M scores/s':>12}{'vs sgemm':>10}")
    for name, t in rows:
        print(f"{name:<10}{t:>10.3f}{n / t / 1e6:>12.1f}{floor / t:>10.2f}")
    print(f"passes of the evaluation: {bench.results.attrs['passes']}")


if __name__ == "__main__":
    main()
