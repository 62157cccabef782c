"""Run a command and report its wall time and the peak RSS summed over its whole process tree.

Usage::

    python benchmarks/peak_memory.py -- bosaris-dask simulate --n-models 31623 \
        --n-segments 31623 --out-dir DIR

``ru_maxrss`` only sees one process; a LocalCluster's workers are separate processes, so this
samples the tree (every 0.1 s) with psutil and prints ``wall_s`` and ``peak_tree_rss_mb``.
"""

from __future__ import annotations

import subprocess
import sys
import time

import psutil


def tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def main(argv: list[str]) -> int:
    command = argv[argv.index("--") + 1 :] if "--" in argv else argv
    start = time.perf_counter()
    child = subprocess.Popen(command)
    proc = psutil.Process(child.pid)
    peak = 0
    while child.poll() is None:
        try:
            peak = max(peak, tree_rss(proc))
        except psutil.Error:
            pass
        time.sleep(0.1)
    wall = time.perf_counter() - start
    print(f"wall_s={wall:.1f} peak_tree_rss_mb={peak / 2**20:.0f} exit={child.returncode}")
    return child.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
