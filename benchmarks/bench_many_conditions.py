"""Thousands of conditions: the evaluation, its peak memory, and the report read per condition.

Usage::

    python benchmarks/bench_many_conditions.py [--models 60] [--segments 150] [--views 300]

Writes ``bosaris-dask demo`` data (``--models`` x ``--segments`` trials, a speaker per id) in a
temporary directory and evaluates system 1 with ``--by model.speaker --by segment.speaker``:
one condition per pair of speakers (about 9,000 at the defaults, 40,000 with ``--models 200
--segments 500``, the demo's own size). It prints

* the evaluation's wall time and passes, and the peak RSS of a process that runs only it (the
  CLI; ``os.wait4``'s usage of that child);
* the report (``format_table`` and ``to_json_dict``), read from the conditions' numpy columns
  (:mod:`bosaris_dask.report_columns`), against the same report functions given each
  condition's own Dataset (``condition_result``: xarray selections, the way before the
  columns), timed on the first ``--views`` conditions and given per condition; the two
  agree block for block (checked).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dask

import bosaris_dask as bd
from bosaris_dask.conditions.evaluation import condition_result
from bosaris_dask.report import format_table, to_json_dict


def _evaluate_in_a_child(out: Path) -> tuple[float, float]:
    """Wall time and peak RSS (GB) of ``bosaris-dask evaluate`` with the conditions."""
    command = [sys.executable, "-c", "from bosaris_dask.cli import main; main()", "evaluate",
               "--key", "key.zarr", "--scores", "system-1.zarr", "--conditions", "models.tsv",
               "--conditions", "segments.tsv", "--by", "model.speaker", "--by",
               "segment.speaker", "--json", str(out / "r.json"), "-q"]  # fmt: skip
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=out, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)  # this child's own peak, not the demo's
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"evaluate failed: {command}")
    return wall, usage.ru_maxrss / 2**20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=60)
    parser.add_argument("--segments", type=int, default=150)
    parser.add_argument("--views", type=int, default=300)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "demo"
        subprocess.run([sys.executable, "-c", "from bosaris_dask.cli import main; main()",
                        "demo", "-q", "--out-dir", str(out), "--n-models", str(args.models),
                        "--n-segments", str(args.segments)], check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        wall, rss = _evaluate_in_a_child(out)
        passes = json.loads((out / "r.json").read_text())["passes"]
        key, system = bd.read(out / "key.zarr"), bd.read(out / "system-1.zarr")
        with dask.config.set(scheduler="threads"):
            ds = bd.evaluate([system], key, conditions=[out / "models.tsv", out / "segments.tsv"],
                             by=["model.speaker", "segment.speaker"])  # fmt: skip
    n = ds.sizes["condition"]
    print(f"{args.models} x {args.segments} trials, {n:,} conditions")
    print(f"evaluate (CLI, JSON written): {wall:.1f} s, {passes} passes, peak RSS {rss:.2f} GB")
    start = time.perf_counter()
    table, doc = format_table(ds), to_json_dict(ds)
    columns = (time.perf_counter() - start) / n
    views = min(args.views, n)
    blocks = table.split("\n== condition ")[1:]
    start = time.perf_counter()
    for g in range(views):
        view = condition_result(ds, g)
        own_table, own_doc = format_table(view), to_json_dict(view)
        assert blocks[g].split(" ==\n", 1)[1].startswith(own_table), g
        assert own_doc["systems"][0]["eer"] == doc["systems"][0]["conditions"][g]["eer"], g
    per_view = (time.perf_counter() - start) / views
    print(f"report per condition: columns {1e3 * columns:.2f} ms, views {1e3 * per_view:.2f} ms "
          f"(first {views}), ratio {per_view / columns:.1f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
