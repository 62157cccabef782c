"""Where an evaluation's time goes, pass by pass: task time by stage, and the client between passes.

Usage::

    python benchmarks/profile_passes.py --side 10000 [--workdir DIR]
    python benchmarks/profile_passes.py --store /work/stores/1e8

Simulates a ``side x side`` float32 store with a label-derived key (or reuses
``DIR/side-N``, or reads ``key.zarr`` and ``system-1.zarr`` of ``--store``), then runs
:func:`bosaris_dask.metrics.evaluate` on the threaded scheduler with a dask callback that
records every task's duration. It prints, for each ``compute`` (pass):

* its wall time;
* the summed task time per stage, grouped by the task name (dask's ``key_split``). dask's
  graph optimization fuses each chunk's read, its kernel and the first merge of the results
  into one task (named after the reduction, e.g. ``combine-aggregate-identity``), so that
  name is "read + kernel + first merge"; later merges and the finalize keep their own names.
  Task time is summed over the worker threads, so on 2 threads a pass's tasks can add up to
  about twice its wall;
* the kernels' ns per trial per thread, to read against ``benchmarks/floors.py``;

and the client's time outside passes (opening, planning refinement between passes, building
the result), so the per-stage profile of benchmarks/README.md can be reproduced.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from dask.callbacks import Callback
from dask.utils import key_split


class StageTimer(Callback):
    """Per-compute wall time and task time summed by task name."""

    def __init__(self) -> None:
        super().__init__()
        self.passes: list[dict] = []
        self._t: dict = {}

    def _start(self, dsk) -> None:
        self.passes.append({"start": time.perf_counter(), "stages": defaultdict(float)})

    def _pretask(self, key, dsk, state) -> None:
        self._t[key] = time.perf_counter()

    def _posttask(self, key, result, dsk, state, worker_id) -> None:
        dt = time.perf_counter() - self._t.pop(key)
        self.passes[-1]["stages"][key_split(key)] += dt

    def _finish(self, dsk, state, errored) -> None:
        self.passes[-1]["end"] = time.perf_counter()


def make_store(side: int, workdir: Path) -> tuple[Path, Path]:
    """A ``side x side`` simulated float32 system and its key, written once per ``side``."""
    from bosaris_dask import io
    from bosaris_dask.simulate import simulate

    out = workdir / f"side-{side}"
    key_path, score_path = out / "key.zarr", out / "system-1.zarr"
    if not score_path.exists():
        out.mkdir(parents=True, exist_ok=True)
        key, (scores,) = simulate(side, side, systems=1, seed=1)
        io.write(key, key_path)
        io.write(scores, score_path)
    return key_path, score_path


def profile(key_path: Path, score_path: Path) -> tuple[float, StageTimer, int]:
    from bosaris_dask import io
    from bosaris_dask.metrics import evaluate

    timer = StageTimer()
    t0 = time.perf_counter()
    with timer:
        ds = evaluate(io.read(score_path), io.read(key_path))
    wall = time.perf_counter() - t0
    return wall, timer, int(ds.n_target[0] + ds.n_nontarget[0])


def report(wall: float, timer: StageTimer, n_trials: int, threads: int) -> None:
    inside = 0.0
    print(f"evaluate(): {wall:.2f} s, {len(timer.passes)} computes, {n_trials:,} trials")
    for i, p in enumerate(timer.passes, 1):
        pass_wall = p["end"] - p["start"]
        inside += pass_wall
        stages = sorted(p["stages"].items(), key=lambda kv: -kv[1])
        print(f"compute {i}: wall {pass_wall:.2f} s")
        for name, t in stages[:6]:
            per = t / n_trials * 1e9
            print(f"    {name:<40} {t:7.2f} s of task time ({per:5.2f} ns/trial)")
    print(f"client outside computes: {wall - inside:.2f} s (opening, planning, result)")
    print(f"(task time is summed over {threads} threads)")


def main(argv: list[str] | None = None) -> int:
    import os

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=10_000)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--store", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or Path(tmp)
        if args.store is not None:
            key_path, score_path = args.store / "key.zarr", args.store / "system-1.zarr"
        else:
            key_path, score_path = make_store(args.side, workdir)
        profile(key_path, score_path)  # warm the page cache and imports
        wall, timer, n = profile(key_path, score_path)
        report(wall, timer, n, os.cpu_count() or 1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
