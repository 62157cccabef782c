"""Text score files: write and read throughput (MB/s of text) and peak memory.

Run as a script: ``python benchmarks/bench_text_convert.py [N]`` writes a dense N-line scores
file (about sqrt(N) models x sqrt(N) segments, float64 scores) in a temporary directory with
:func:`~bosaris_dask.io.text.write_text`, reads it back with
:func:`~bosaris_dask.io.text.read_text` in a fresh process, checks the round trip, and prints the
times, MB/s and the peak resident memory of each process (``resource.getrusage``). N defaults
to 1e6.

The class follows the asv convention (``setup``, ``time_*``, ``teardown``) so a test can run every
benchmark body once.
"""

from __future__ import annotations

import math
import os
import resource
import subprocess
import sys
import tempfile
import time

import dask.array as da
import numpy as np

from bosaris_dask.io.text import read_text, write_text
from bosaris_dask.trials import make_scores


def _scores(n: int):
    ns = max(1, int(math.sqrt(n)))
    nm = max(1, n // ns)
    score = da.random.default_rng(0).normal(size=(nm, ns), chunks=(max(1, 2**22 // ns), ns))
    models = [f"model_{i:06d}" for i in range(nm)]
    segments = [f"segment_{j:07d}" for j in range(ns)]
    return make_scores(models, segments, score)


class TextConvert:
    """Write then read a dense scores file of ``n`` lines."""

    params = [10**5]

    def setup(self, n: int) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "scores.txt")
        self.scores = _scores(n)
        write_text(self.scores, self.path)

    def teardown(self, n: int) -> None:
        self.dir.cleanup()

    def time_write(self, n: int) -> None:
        write_text(self.scores, self.path)

    def time_read(self, n: int) -> None:
        read_text(self.path)


def _peak_rss_mb() -> float:
    """Peak resident memory of this process in MB.

    Linux's VmHWM (reset by exec, unlike ``getrusage``'s ``ru_maxrss``, which a child started by
    fork + exec inherits from its parent); ``resource.getrusage`` elsewhere.
    """
    try:
        with open("/proc/self/status") as f:
            return next(int(x.split()[1]) for x in f if x.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _read(path: str, n: int) -> None:
    """Time read_text in this (fresh) process, so that its peak RSS is its own."""
    base = _peak_rss_mb()
    mb = os.path.getsize(path) / 1e6
    t0 = time.perf_counter()
    back = read_text(path, scratch_dir=os.path.dirname(path))
    t_read = time.perf_counter() - t0
    rate = n / t_read / 1e6
    print(f"read_text:  {t_read:.2f} s, {mb / t_read:.0f} MB/s ({rate:.2f} M lines/s)")
    peak = _peak_rss_mb()
    print(f"peak RSS of the reading process: {peak:.0f} MB (imports: {base:.0f} MB)")
    rows = min(100, back.sizes["model"])
    same = np.array_equal(back.score.data[:rows].compute(), _scores(n).score.data[:rows].compute())
    print(f"round trip exact (first {rows} rows): {same}")


def main(n: int) -> None:
    scores = _scores(n)
    print(f"{scores.sizes['model']} models x {scores.sizes['segment']} segments = {n:.3g} lines")
    base = _peak_rss_mb()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "scores.txt")
        t0 = time.perf_counter()
        write_text(scores, path)
        t_write = time.perf_counter() - t0
        mb = os.path.getsize(path) / 1e6
        print(f"write_text: {t_write:.2f} s, {mb:.0f} MB, {mb / t_write:.0f} MB/s")
        peak = _peak_rss_mb()
        print(f"peak RSS of the writing process: {peak:.0f} MB (imports: {base:.0f} MB)")
        subprocess.run([sys.executable, __file__, "--read", path, str(n)], check=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--read":
        _read(sys.argv[2], int(sys.argv[3]))
    else:
        main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 10**6)
