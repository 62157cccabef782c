"""Two-way bootstrap intervals vs a plain evaluation of the same trials, in one run.

Usage::

    python benchmarks/bench_bootstrap.py [--side N] [--per-group K] [--resamples B [B ...]]
        [--layout sorted|shuffled] [--by C] [--repeat R] [--workdir DIR] [--cold]

Writes ``N x N`` float32 scores of one system to a zarr store (uncompressed, as the README
recommends) with a label-derived key: ``N / K`` speakers, each with ``K`` models and ``K``
segments, so there are ``N / K`` model-side and ``N / K`` segment-side groups. ``sorted``: ids
grouped by speaker (a group's trials in few chunks); ``shuffled``: speakers dealt at random (every
chunk holds many groups: more group pairs per chunk, more work). Then, ``R`` times each,
alternating, in this process:

* ``plain``: :func:`bosaris_dask.metrics.evaluate` (4 priors, 201-point NBE sweep, EER, Cllr,
  minCllr; threads);
* ``bootstrap``: the same call with ``conditions``/``bootstrap=B``/``resample=[model.spk,
  segment.spk]``/``compare=False``: the plain evaluation plus the two bootstrap passes.

With ``--by C``, both are per condition too: ``C`` segment-side conditions (``segment.cond``,
segment ``j`` in condition ``j mod C``, so every speaker pair's trials fall in several), whose
bootstrap histograms are ``C`` times the pooled ones. Peak memory: run the script under
``benchmarks/peak_memory.py`` with one ``--resamples`` (the process's peak is the bootstrap's).

Prints the machine, whether the store was in the page cache, the median times and the ratio
``bootstrap / plain`` (the target: at most 5 at 1e8 trials, 1,000 x 1,000 groups, B = 1000).
Defaults (``--side 3000 --per-group 10 --resamples 1000``: 9e6 trials, 300 x 300 groups) run in
well under a minute on two cores; ``--side 10000`` is the 1e8 target. ``--side 60 --per-group 6
--resamples 20 --repeat 1`` is the smoke test of ``tests/test_benchmarks.py``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

PRIORS = (0.5, 0.1, 0.01, 0.001)


def make_data(workdir: Path, side: int, per_group: int, layout: str, seed: int = 0):
    """Write the key labels, the condition tables and the zarr score store; return paths."""
    import dask.array as da

    from bosaris_dask import io
    from bosaris_dask.trials import make_scores

    n_spk = side // per_group
    rng = np.random.default_rng(seed)
    mlab = np.arange(side) % n_spk
    slab = np.arange(side) % n_spk
    if layout == "sorted":
        mlab, slab = np.sort(mlab), np.sort(slab)
    else:
        rng.shuffle(mlab)
        rng.shuffle(slab)
    mids = np.array([f"m{i:06d}" for i in range(side)])
    sids = np.array([f"s{j:06d}" for j in range(side)])
    rows = max(1, min(side, (40 << 20) // (4 * side)))  # ~40 MB float32 chunks, full rows

    def gen(block_info=None):
        (r0, r1), (c0, c1) = block_info[None]["array-location"]
        g = np.random.default_rng([seed, r0, c0])
        target = mlab[r0:r1, None] == slab[None, c0:c1]
        # a speaker effect on each side makes trials of a group dependent
        x = g.standard_normal((r1 - r0, c1 - c0), dtype=np.float32)
        return x + np.float32(3.0) * target + 0.5 * np.float32(np.sin(mlab[r0:r1, None]))

    score = da.map_blocks(gen, chunks=((rows,) * (side // rows) + ((side % rows,) if side % rows
                                       else ()), (side,)), dtype=np.float32)  # fmt: skip
    io.write(make_scores(mids, sids, score), workdir / "system.zarr")
    np.save(workdir / "mlab.npy", mlab)
    np.save(workdir / "slab.npy", slab)
    (workdir / "models.tsv").write_text(
        "model\tspk\n" + "".join(f"{m}\tspk{g}\n" for m, g in zip(mids, mlab, strict=True))
    )
    (workdir / "segments.tsv").write_text(
        "segment\tspk\tcond\n"
        + "".join(f"{s}\tspk{g}\t{j}\n" for j, (s, g) in enumerate(zip(sids, slab, strict=True)))
    )


def _inputs(workdir: Path):
    from bosaris_dask import io
    from bosaris_dask.trials import key_from_labels

    scores = io.read(workdir / "system.zarr")
    chunks = scores.score.data.chunks
    key = key_from_labels(scores.model.values, np.load(workdir / "mlab.npy"),
                          scores.segment.values, np.load(workdir / "slab.npy"),
                          chunks=chunks)  # fmt: skip
    return key, scores


def _evict(workdir: Path) -> None:
    for path in (workdir / "system.zarr").rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)


def _with_conditions(workdir: Path, n_conditions: int) -> None:
    """Rewrite the segments' ``cond`` column as ``j mod n_conditions``."""
    lines = (workdir / "segments.tsv").read_text().splitlines()
    rows = [line.split("\t") for line in lines[1:]]
    (workdir / "segments.tsv").write_text(
        lines[0] + "\n" + "".join(f"{s}\t{g}\tc{j % n_conditions}\n" for j, (s, g, _) in
                                  enumerate(rows))
    )  # fmt: skip


def run(workdir: Path, resamples: int, mode: str, cold: bool, by: int = 0) -> tuple[float, object]:
    from bosaris_dask import metrics

    if cold:
        _evict(workdir)
    key, scores = _inputs(workdir)
    tables = [str(workdir / "models.tsv"), str(workdir / "segments.tsv")]
    extra: dict = {"conditions": tables, "by": ["segment.cond"]} if by else {}
    if mode == "bootstrap":
        extra |= {"conditions": tables, "bootstrap": resamples, "seed": 0,
                  "resample": ["model.spk", "segment.spk"]}  # fmt: skip
    start = time.perf_counter()
    ds = metrics.evaluate(scores, key, priors=PRIORS, **extra)
    return time.perf_counter() - start, ds


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--side", type=int, default=3000)
    parser.add_argument("--per-group", type=int, default=10)
    parser.add_argument(
        "--resamples",
        type=int,
        nargs="+",
        default=[1000],
        help="one or more B (each measured against the same plain runs)",
    )
    parser.add_argument("--layout", choices=["sorted", "shuffled"], default="sorted")
    parser.add_argument("--by", type=int, default=0, metavar="C",
                        help="also per condition: C segment-side conditions")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--workdir")
    parser.add_argument("--cold", action="store_true", help="evict the store before each run")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        workdir = Path(tmp)
        make_data(workdir, args.side, args.per_group, args.layout)
        if args.by:
            _with_conditions(workdir, args.by)
        n_groups = args.side // args.per_group
        cache = "cold (evicted before each run)" if args.cold else "warm (page cache)"
        print(f"machine: {platform.node()} {platform.processor() or platform.machine()}, "
              f"{os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}; commit {_commit()}; "
              f"{cache}")  # fmt: skip
        print(
            f"{args.side:,} x {args.side:,} = {args.side**2:.2g} float32 trials, "
            f"{n_groups:,} x {n_groups:,} groups ({args.layout}), B = "
            f"{', '.join(str(b) for b in args.resamples)}"
            + (f", {args.by} segment-side conditions (--by segment.cond)" if args.by else "")
        )
        modes = ["plain"] + [f"bootstrap B={b}" for b in args.resamples]
        times: dict[str, list[float]] = {mode: [] for mode in modes}
        ds = None
        for _ in range(args.repeat):
            for mode, b in zip(modes, [0, *args.resamples], strict=True):
                t, out = run(workdir, b, "plain" if not b else "bootstrap", args.cold, args.by)
                times[mode].append(t)
                ds = out if b else ds
        med = {mode: statistics.median(v) for mode, v in times.items()}
        for mode, values in times.items():
            ratio = med[mode] / med["plain"]
            print(f"{mode:>16}: median {med[mode]:.2f} s  ({', '.join(f'{v:.2f}' for v in values)})"
                  f"  ratio {ratio:.2f}")  # fmt: skip
        med["bootstrap"] = med[modes[-1]]
        ratio = med["bootstrap"] / med["plain"]
        print(f"ratio bootstrap / plain: {ratio:.2f}  (passes {ds.attrs['passes']}, pair factor "
              f"{ds.attrs['bootstrap_pair_factor']:.2f}, bins "
              f"{ds.attrs['bootstrap_bins'][0]}; EER {float(ds.eer[0]):.5f} in "
              f"[{ds.eer_ci.values[0][0]:.5f}, {ds.eer_ci.values[0][1]:.5f}], binned "
              f"{float(ds.eer_binned[0]):.5f})")  # fmt: skip
        return {"plain": med["plain"], "bootstrap": med["bootstrap"], "ratio": ratio}


if __name__ == "__main__":
    main()
