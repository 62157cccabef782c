"""Cold and warm reads of a store's chunk files by several threads, one way against another.

Usage::

    python benchmarks/chunk_reads.py --store DIR/system-1.zarr [--threads 2] [--repeat 2]

Every file of the store (metadata files left out) is read whole by a pool of ``--threads``
threads, each file then reduced once (an XOR of its 8-byte words, so that every page is
touched), in these ways:

* ``memmap``: ``np.memmap`` of the file, as the zarr reader maps uncompressed chunks;
* ``readinto``: one ``readinto`` into a new array (a copy out of the page cache);
* ``populate``: a memory map with ``madvise(MADV_POPULATE_READ)`` (the kernel fills the page
  tables in one call; Linux 5.14 and later, else skipped);
* ``sequential``: a memory map with ``madvise(MADV_SEQUENTIAL)`` (aggressive read-ahead);

each once ``cold`` (the files dropped from the page cache first, as ``cold_cache.py`` does)
and once ``warm``, interleaved per repeat; plus ``disk``: one thread reading the evicted files
in 16 MiB pieces (the disk's sequential rate). Prints every run and the medians, in seconds and
in MB/s of the store's bytes.
"""

from __future__ import annotations

import argparse
import importlib.util
import mmap
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

METADATA = {"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"}


def _cold_cache():
    spec = importlib.util.spec_from_file_location(
        "chunk_reads_cold_cache", Path(__file__).with_name("cold_cache.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _touch(data) -> int:
    """XOR of the 8-byte words of ``data`` (a buffer or an array of bytes)."""
    words = np.frombuffer(data, np.uint8)
    words = words[: len(words) // 8 * 8].view(np.uint64)
    return int(np.bitwise_xor.reduce(words)) if len(words) else 0


def via_memmap(path: Path) -> int:
    return _touch(np.memmap(path, np.uint8, "r")) if path.stat().st_size else 0


def via_readinto(path: Path) -> int:
    buf = np.empty(path.stat().st_size, np.uint8)
    with open(path, "rb", buffering=0) as f:
        view, got = memoryview(buf), 0
        while got < len(buf) and (n := f.readinto(view[got:])):
            got += n
    return _touch(buf[:got])


def _advised(path: Path, advice: int) -> int:
    with open(path, "rb") as f:
        if not os.fstat(f.fileno()).st_size:
            return 0
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    m.madvise(advice)
    return _touch(m)


def via_populate(path: Path) -> int:
    return _advised(path, mmap.MADV_POPULATE_READ)


def via_sequential(path: Path) -> int:
    return _advised(path, mmap.MADV_SEQUENTIAL)


WAYS = {"memmap": via_memmap, "readinto": via_readinto, "sequential": via_sequential}
if hasattr(mmap, "MADV_POPULATE_READ"):
    WAYS["populate"] = via_populate


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Run every way ``--repeat`` times cold and warm; return (and print) the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, action="append", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    cold = _cold_cache()
    files = [p for p in cold.store_files(args.store) if p.name not in METADATA]
    size = sum(p.stat().st_size for p in files)
    print(f"{len(files)} files, {size / 1e6:,.0f} MB; {args.threads} threads; "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    runs: dict[str, list[float]] = {}

    def timed(name: str, fn) -> None:
        t0 = time.perf_counter()
        fn()
        runs.setdefault(name, []).append(time.perf_counter() - t0)

    def pooled(way):
        def run() -> None:
            with ThreadPoolExecutor(args.threads) as pool:
                list(pool.map(way, files))

        return run

    for i in range(args.repeat):
        for name, way in WAYS.items():
            cold.evict(files)
            timed(f"{name} cold", pooled(way))
            timed(f"{name} warm", pooled(way))
        cold.evict(files)
        timed("disk", lambda: cold.read_sequentially(files))
        print(f"repeat {i + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in runs.items()))
    medians = {name: statistics.median(values) for name, values in runs.items()}
    for name, median in medians.items():
        print(f"{name:>16}: median {median:6.2f} s, {size / median / 1e6:7,.0f} MB/s")
    print(f"load at the end {os.getloadavg()[0]:.1f}")
    return medians


if __name__ == "__main__":
    main()
