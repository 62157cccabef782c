"""Reading a table of trials (``--conditions``, header ``model<TAB>segment<TAB>...``): the
package's reader against plain pandas and against its own line-by-line reader.

``python benchmarks/bench_condition_tables.py [N] [--repeat R]`` writes a table of ``N`` trials
(default 1e6; four columns: model, segment, two attributes) to a temporary folder and reads it
in fresh child processes, the readers interleaved, ``R`` rounds (default 3):

- ``bosaris_dask``: :func:`bosaris_dask.conditions.read_condition_table` (pandas' C parser for
  a plain file, with the package's checks and its table object);
- ``line-by-line``: the reader every irregular file and every error goes through (the one
  used before the C parser), on the same bytes;
- ``pandas``: ``pd.read_csv(sep="\\t", dtype=str, na_filter=False)``, the baseline a competent
  engineer would write (no check of duplicate trials, empty values or line numbers).

Prints each reader's median wall time of the read and its peak resident memory above a child
that only imports the package, and the ratios to pandas. Page cache warm (the file is read once
before the rounds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

READERS = ("bosaris_dask", "line-by-line", "pandas")

_CHILD = r"""
import json, resource, sys, time
from pathlib import Path
import pandas as pd
import bosaris_dask.conditions.table_files as tables
path, reader = Path(sys.argv[1]), sys.argv[2]
t = time.perf_counter()
if reader == "bosaris_dask":
    n = len(tables.read_condition_table(path).ids)
elif reader == "line-by-line":
    n = len(tables._parsed_checked(path.read_bytes(), path).ids)
elif reader == "pandas":
    n = len(pd.read_csv(path, sep="\t", dtype=str, na_filter=False))
else:
    n = 0
wall = time.perf_counter() - t
print(json.dumps({"n": n, "wall": wall,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def write_table(path: Path, n: int, seed: int = 0) -> None:
    """``n`` distinct trials of 2% of n models x n segments ids, two attribute columns."""
    rng = np.random.default_rng(seed)
    n_ids = max(2, n // 50)
    cells = np.unique(rng.integers(0, n_ids, 2 * n) * n + rng.integers(0, n, 2 * n))[:n]
    m, s = cells // n, cells % n
    with open(path, "w") as f:
        f.write("model\tsegment\tphone\tlang\n")
        f.writelines(f"m{a}\ts{b}\t{'YN'[b % 2]}\t{'abc'[a % 3]}\n"
                     for a, b in zip(m.tolist(), s.tolist(), strict=True))  # fmt: skip


def _child(path: Path, reader: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path), reader],
                         capture_output=True, text=True, check=True)  # fmt: skip
    return json.loads(out.stdout)


def main(n: int = 1_000_000, repeat: int = 3) -> dict[str, dict[str, float]]:
    """Time the readers; returns each one's median wall, peak above the import, rows read."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trials.tsv"
        write_table(path, n)
        path.read_bytes()  # warm the page cache
        runs: dict[str, list[dict]] = {r: [] for r in (*READERS, "import")}
        for _ in range(repeat):
            for reader in (*READERS, "import"):
                runs[reader].append(_child(path, reader))
    base = statistics.median(r["peak_mb"] for r in runs["import"])
    result = {}
    for reader in READERS:
        rows = {r["n"] for r in runs[reader]}
        result[reader] = {
            "rows": rows.pop() if len(rows) == 1 else -1,
            "wall": statistics.median(r["wall"] for r in runs[reader]),
            "peak_mb": statistics.median(r["peak_mb"] for r in runs[reader]) - base,
        }
    print(f"a table of {n:,} trials, 4 columns; medians of {repeat} fresh processes each")
    print(f"{'reader':<14}{'rows':>12}{'read (s)':>10}{'vs pandas':>11}{'peak MB':>9}")
    for reader, r in result.items():
        ratio = r["wall"] / result["pandas"]["wall"]
        print(f"{reader:<14}{r['rows']:>12,}{r['wall']:>10.2f}{ratio:>10.2f}x"
              f"{r['peak_mb']:>9.0f}")  # fmt: skip
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    main(args.n, args.repeat)
