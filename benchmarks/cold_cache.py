"""Run a command on stores evicted from the page cache, and measure the disk's sequential rate.

Usage::

    python benchmarks/cold_cache.py --store DIR/key.zarr --store DIR/system-1.zarr \
        [--repeat 3] -- bosaris-dask evaluate --key DIR/key.zarr --scores DIR/system-1.zarr

Before each run, every file under each ``--store`` is flushed and dropped from the page cache
with ``posix_fadvise(POSIX_FADV_DONTNEED)`` (no root needed; the kernel drops clean pages of
the file on request), and the resident fraction is checked with util-linux ``fincore`` when it
is installed. Then, per repeat:

* ``cold``: the command on the evicted stores (wall time, and the stores' bytes / wall);
* ``disk``: the stores evicted again and read once sequentially (``cat``-like, 16 MiB reads),
  the floor any reader of these files meets on this disk;
* ``warm``: the command again, stores now in the page cache.

It prints each run and the medians, so the cold figure can be read against the disk floor and
the warm figure of the same run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

READ = 16 << 20


def store_files(stores: list[Path]) -> list[Path]:
    """Every regular file under the stores (a store may also be one file, e.g. HDF5)."""
    out: list[Path] = []
    for store in stores:
        if store.is_file():
            out.append(store)
        else:
            out.extend(p for p in sorted(store.rglob("*")) if p.is_file() and not p.is_symlink())
    return out


def evict(files: list[Path]) -> None:
    """Drop the files' pages from the page cache (after writing back any dirty ones)."""
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def resident_bytes(files: list[Path]) -> int | None:
    """Bytes of the files held in the page cache, from ``fincore`` (None if not installed)."""
    if shutil.which("fincore") is None or not files:
        return None
    total = 0
    for start in range(0, len(files), 500):
        out = subprocess.run(
            ["fincore", "--bytes", "--noheadings", "--raw", "--output", "RES",
             *map(str, files[start : start + 500])],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        total += sum(int(x) for x in out.split())
    return total


def read_sequentially(files: list[Path]) -> int:
    """Read every file once in 16 MiB pieces; returns the bytes read."""
    n = 0
    buf = bytearray(READ)
    for path in files:
        with open(path, "rb", buffering=0) as f:
            while got := f.readinto(buf):
                n += got
    return n


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        raise SystemExit("usage: cold_cache.py --store PATH [--store PATH ...] -- COMMAND ...")
    split = argv.index("--")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, action="append", required=True)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    files = store_files(args.store)
    size = sum(p.stat().st_size for p in files)
    print(f"stores: {len(files)} files, {size / 1e6:,.0f} MB")

    def run() -> None:
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)

    rows: dict[str, list[float]] = {"cold": [], "disk": [], "warm": []}
    for i in range(args.repeat):
        evict(files)
        left = resident_bytes(files)
        rows["cold"].append(timed(run))
        evict(files)
        rows["disk"].append(timed(lambda: read_sequentially(files)))
        rows["warm"].append(timed(run))
        cached = "" if left is None else f", {left / 1e6:.1f} MB resident after eviction"
        print(
            f"run {i + 1}: cold {rows['cold'][-1]:.2f} s, disk read {rows['disk'][-1]:.2f} s, "
            f"warm {rows['warm'][-1]:.2f} s{cached}"
        )
    for name, values in rows.items():
        median = statistics.median(values)
        print(f"{name:>5}: median {median:.2f} s, {size / median / 1e6:,.0f} MB/s of store bytes")


if __name__ == "__main__":
    main()
