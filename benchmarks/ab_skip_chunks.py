"""Refinement passes reading every chunk against reading only the chunks holding candidates
(``bosaris_dask.skip-chunks`` 0 and 1), interleaved in one process.

Usage::

    python benchmarks/ab_skip_chunks.py --store DIR [--repeat 2] [--consumer evaluate]
    python benchmarks/ab_skip_chunks.py --side 10000 [--block 4096] [--structured] [--repeat 2]
        [--consumer evaluate|pav]

The scores are ``DIR/system-1.zarr`` against ``DIR/key.zarr`` (``bosaris-dask simulate``), or
the lazy scores of ``side`` x ``side`` random embeddings (``d = 256``, the draw of
``bench_embeddings.py``; blocks of ``block``). ``--structured`` draws two groups of speakers
(think: genders) whose embeddings share a group direction of opposite sign, both sides sorted by
group: the blocks across the groups hold only low non-target scores. The consumer is
:func:`bosaris_dask.metrics.evaluate` (default priors and 201-point sweep) or PAV calibration's
bins (:func:`bosaris_dask.engine.score_bins`: hull and PAV block bounds, no thresholds).

Each repeat runs the consumer once with each setting (the order alternating), after one warm-up
run; it prints the wall and CPU time (all threads of the process), the passes, the chunks each
refinement pass read, the load average, the medians and their ratios, and checks that both give
the same results, bit for bit.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import dask
import numpy as np


def _embeddings(side: int, block: int, structured: bool):
    from bosaris_dask.embeddings import from_arrays, scores_from_embeddings
    from bosaris_dask.trials import key_from_labels

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_embeddings import Embeddings

    bench = Embeddings()
    bench.setup(side=side, dim=256, block=block)
    if not structured:
        return bench.lazy_scores(), bench.key
    rng = np.random.default_rng(0)
    speakers = max(4, side // 20)
    group = np.where(np.arange(speakers) < speakers // 2, 1.0, -1.0)
    axis = np.zeros(256)
    axis[0] = 3.0
    centres = rng.normal(size=(speakers, 256)) + group[:, None] * axis
    labels_e = np.sort(np.arange(side) % speakers)
    labels_t = np.sort(rng.integers(0, speakers, size=side))
    a = (centres[labels_e] + rng.normal(size=(side, 256))).astype(np.float32)
    b = (centres[labels_t] + rng.normal(size=(side, 256))).astype(np.float32)
    e_ids, t_ids = [f"e{i}" for i in range(side)], [f"t{i}" for i in range(side)]
    key = key_from_labels(e_ids, labels_e, t_ids, labels_t, chunks=(block, block))
    enrol, test = from_arrays(e_ids, a), from_arrays(t_ids, b)
    return scores_from_embeddings(enrol, test, chunks=(block, block)), key


def _consumer(name: str):
    from bosaris_dask import engine
    from bosaris_dask.metrics import evaluate

    if name == "evaluate":

        def run(scores, key):
            ds = evaluate(scores, key)
            out = tuple(ds[v].values.tobytes() for v in ("eer", "min_dcf", "act_dcf", "cllr"))
            return out, int(ds.attrs["passes"])

        return run

    def pav(scores, key):
        bins = engine.score_bins(scores, key)
        return tuple(b.tobytes() for b in bins), "-"

    return pav


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, default=None)
    parser.add_argument("--side", type=int, default=2048)
    parser.add_argument("--block", type=int, default=4096)
    parser.add_argument("--structured", action="store_true")
    parser.add_argument("--consumer", choices=("evaluate", "pav"), default="evaluate")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)

    from bosaris_dask.passes import refinement

    if args.store is not None:
        from bosaris_dask import io

        key, scores = io.read(args.store / "key.zarr"), io.read(args.store / "system-1.zarr")
        what = f"{args.store}/system-1.zarr"
    else:
        block = min(args.block, args.side)
        scores, key = _embeddings(args.side, block, args.structured)
        what = f"embeddings {args.side}^2, blocks of {block}, structured={args.structured}"
    run = _consumer(args.consumer)
    print(f"{what}, consumer {args.consumer}, {scores.score.data.npartitions} chunks")
    reads: list[str] = []
    subset = refinement.chunk_subset

    def counted(inputs, picks):
        reads.append(f"{len(picks)}/{inputs[0].npartitions}")
        return subset(inputs, picks)

    refinement.chunk_subset = counted
    try:
        run(scores, key)  # warm-up: numba, page cache, thread pools
        times: dict[int, list[float]] = {1: [], 0: []}
        cpus: dict[int, list[float]] = {1: [], 0: []}
        first = None
        for r in range(args.repeat):
            for skip in (1, 0) if r % 2 == 0 else (0, 1):
                reads.clear()
                with dask.config.set({"bosaris_dask.skip-chunks": skip}):
                    start, cpu = time.perf_counter(), time.process_time()
                    out, passes = run(scores, key)
                    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
                times[skip].append(wall)
                cpus[skip].append(cpu)
                first = out if first is None else first
                read = ", ".join(reads) or "every chunk"
                print(f"round {r} skip-chunks={skip}: {wall:.2f} s (CPU {cpu:.2f} s), passes "
                      f"{passes}, refinement reads {read}, same results: {out == first}, "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
                assert out == first, "skipping chunks changed the results"
    finally:
        refinement.chunk_subset = subset
    on, off = statistics.median(times[1]), statistics.median(times[0])
    c_on, c_off = statistics.median(cpus[1]), statistics.median(cpus[0])
    print(
        f"median skip-chunks=1 {on:.2f} s (CPU {c_on:.2f} s), skip-chunks=0 {off:.2f} s "
        f"(CPU {c_off:.2f} s), ratio {on / off:.3f} (CPU {c_on / c_off:.3f})"
    )
    return {"on": on, "off": off, "cpu_on": c_on, "cpu_off": c_off}


if __name__ == "__main__":
    main()
