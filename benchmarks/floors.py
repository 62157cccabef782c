"""The floor of each stage of an evaluation pass on this machine, in ns per trial on one core.

Usage::

    python benchmarks/floors.py [--n 16777216] [--repeat 5]

Each stage is the cheapest numpy operation that does that stage's work on a chunk of ``n``
float32 scores (a 64 MiB chunk by default, the engine's default chunk), in one thread:

* ``read``: summing the chunk (streams it from memory once; a page-cache read of a stored
  chunk through a memory map costs about this);
* ``copy``: copying the chunk (read + write of 4 bytes per trial);
* ``keys``: the order-preserving integer keys of the scores and their top 20 bits;
  element-wise stages run on 64K-element blocks, as the engine's kernels do;
* ``bincount``: counting 20-bit bin indices into 2**20 bins;
* ``softplus``: ``log1p(exp(-|s|))`` in float64, the per-trial Cllr term;
* ``sort``: ``np.sort`` of the chunk (what a sort-based evaluation pays per trial and pass).

Prints the median of ``--repeat`` runs per stage, so the per-stage profile of a pass can be
read against them (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

try:
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
    threadpool_limits = None


def _keys(s: np.ndarray) -> np.ndarray:
    """Top 20 bits of the order-preserving key of float32 scores (sign flips all bits)."""
    u = s.view(np.uint32)
    k = (u.view(np.int32) >> 31).view(np.uint32)  # all ones where negative
    k |= np.uint32(0x80000000)
    k ^= u
    k >>= np.uint32(12)
    return k


BLOCK = 1 << 16


def _blocked(fn):
    """``fn`` over cache-sized blocks of the chunk, as the engine's kernels run element-wise work
    (whole-chunk temporaries would measure memory traffic, not the stage)."""

    def run(s: np.ndarray, b: np.ndarray) -> None:
        for i in range(0, len(s), BLOCK):
            fn(s[i : i + BLOCK])

    return run


STAGES = {
    "read": lambda s, b: s.sum(dtype=np.float32),
    "copy": lambda s, b: s.copy(),
    "keys": _blocked(_keys),
    "bincount": lambda s, b: np.bincount(b, minlength=1 << 20),
    "softplus": _blocked(lambda x: np.log1p(np.exp(-np.abs(x.astype(np.float64))))),
    "sort": lambda s, b: np.sort(s),
}


def measure(n: int, repeat: int, seed: int = 0) -> dict[str, float]:
    """Median ns per trial of every stage over ``repeat`` runs on ``n`` normal float32 scores."""
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal(n, dtype=np.float32) * 3
    bins = _keys(scores).astype(np.intp)
    out = {}
    for name, stage in STAGES.items():
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            stage(scores, bins)
            times.append(time.perf_counter() - t0)
        out[name] = statistics.median(times) / n * 1e9
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 24)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    if threadpool_limits is not None:
        with threadpool_limits(1):
            floors = measure(args.n, args.repeat)
    else:  # pragma: no cover
        floors = measure(args.n, args.repeat)
    print(f"{'stage':<10} {'ns/trial':>9}  (one core, {args.n:,} float32 trials, median)")
    for name, ns in floors.items():
        print(f"{name:<10} {ns:>9.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
