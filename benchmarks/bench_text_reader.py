"""Text score files: the package's reader against a plain pandas-chunked reader (measure only).

Issue 15 asks whether the text reader (``bosaris_dask.io.text``: blocks of whole lines, each
parsed by pandas' C parser, a checked path for the rest, spill files) could be rebuilt on a
well-kept streaming reader. This script measures the candidate before any rewrite:

- ``ours``: :func:`bosaris_dask.io.text.read_text`, then the dense score matrix and mask in
  memory;
- ``pandas``: ``pandas.read_csv(path, sep=r"\\s+", header=None, chunksize=C, engine="c")``, each
  chunk's ids factorized and mapped to global codes (first-appearance order, as ours), the
  scores placed into the same dense matrix and mask. It checks what ours checks only where
  pandas does (a malformed line raises pandas' own error); duplicate trials are counted.

- ``pyarrow`` (only where pyarrow is installed; it is not a dependency):
  ``pyarrow.csv.open_csv`` (a streaming, multi-threaded reader; one-space delimiter, so it
  cannot read files with doubled separators: ``--spaces`` leaves it out), each record batch's ids
  dictionary-encoded and mapped to global codes, the scores placed as ``pandas``'s are.
- ``before`` (with ``--before DIR``): ``read_text`` of the package found in ``DIR`` (e.g. an
  older commit unpacked with ``git archive COMMIT bosaris_dask | tar -x -C DIR``), to compare
  two versions of the reader in one run.

Run as a script: ``python benchmarks/bench_text_reader.py [N] [--repeat R] [--chunksize C]
[--before DIR] [--only ours,before] [--spaces] [--sparse]`` writes a dense N-line ``model
segment score`` file (about sqrt(N) x sqrt(N) trials, float64 scores, with
:func:`~bosaris_dask.io.text.write_text`; ``--spaces``: then every separator doubled, a valid
but non-canonical file) in a temporary directory, reads it once to warm the page cache, then
runs each contender R times in a fresh process, interleaved, and prints wall time, MB/s, peak
RSS of each child, and whether all give identical matrices and ids (a checksum of the ids, the
mask and the scores' bytes). N defaults to 1e6.

``--sparse`` writes a VoxCeleb-like list instead: N distinct trials over about N/10 x N/10
random ``id1xxxx/vidxxxxxxx/xxxxx.wav`` ids (a sparse list's blocks hold about as many distinct
ids as lines), which ``ours``/``before`` read as :class:`~bosaris_dask.io.text.TrialList`
(what an evaluation of such a list reads) and the others as codes and values, no dense fill;
the checksum is then of the ids and each line's codes and score.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

CONTENDERS = ("ours", "pandas", "pyarrow", "before")


def _peak_rss_mb() -> float:
    try:
        with open("/proc/self/status") as f:
            return next(int(x.split()[1]) for x in f if x.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _checksum(models, segments, score: np.ndarray, mask: np.ndarray) -> tuple[str, int]:
    """The checksum of the ids, the mask and the scores, and the number of trials."""
    h = hashlib.sha256()
    h.update("\n".join(map(str, models)).encode())
    h.update(b"\0" + "\n".join(map(str, segments)).encode())
    h.update(np.ascontiguousarray(mask).tobytes())
    h.update(np.ascontiguousarray(np.where(mask, score, 0.0)).tobytes())
    return h.hexdigest()[:16], int(mask.sum())


def read_ours(path: str) -> tuple[list, list, np.ndarray, np.ndarray]:
    import dask

    from bosaris_dask.io.text import read_text

    back = read_text(path, kind="scores", scratch_dir=os.path.dirname(path))
    score, mask = dask.compute(back.score.data, back.score_mask.data, scheduler="threads")
    return list(back.model.values), list(back.segment.values), score, mask


def _packed_checksum(models, segments, m: np.ndarray, s: np.ndarray, v: np.ndarray):
    """The checksum of the ids and each line's codes and score, and the number of lines."""
    h = hashlib.sha256()
    h.update("\n".join(map(str, models)).encode())
    h.update(b"\0" + "\n".join(map(str, segments)).encode())
    for a in (m.astype(np.int64), s.astype(np.int64), v.astype(np.float64)):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16], len(v)


def read_ours_sparse(path: str) -> tuple[str, int]:
    from bosaris_dask.io.text.packed import TrialList

    back = TrialList.read(path, "scores")
    return _packed_checksum(back.models, back.segments, back.model_codes,
                            back.segment_codes, back.values)  # fmt: skip


def _finish(path: str, tables: dict, codes: dict, values: list, sparse: bool):
    """The checksum of the lines' codes and scores (``sparse``), else of the dense score
    matrix and mask, from per-chunk global codes and values."""
    m, s, v = (np.concatenate(x) for x in (codes["m"], codes["s"], values))
    if sparse:
        return _packed_checksum(list(tables["m"]), list(tables["s"]), m, s, v)
    score = np.zeros((len(tables["m"]), len(tables["s"])))
    mask = np.zeros(score.shape, dtype=bool)
    score[m, s] = v
    mask[m, s] = True
    if int(mask.sum()) != len(v):
        raise ValueError(f"{path}: {len(v) - int(mask.sum())} duplicate trials")
    return _checksum(list(tables["m"]), list(tables["s"]), score, mask)


def read_pandas(path: str, chunksize: int = 2_000_000, sparse: bool = False) -> tuple[str, int]:
    """The candidate: pandas' chunked C reader, ids to global codes, a dense fill."""
    import pandas as pd

    tables: dict[str, dict[str, int]] = {"m": {}, "s": {}}
    codes: dict[str, list[np.ndarray]] = {"m": [], "s": []}
    values = []
    reader = pd.read_csv(
        path, sep=r"\s+", header=None, names=["m", "s", "v"],
        dtype={"m": object, "s": object, "v": np.float64}, chunksize=chunksize, engine="c",
    )  # fmt: skip
    with reader:
        for chunk in reader:
            for col in ("m", "s"):
                local, uniques = pd.factorize(chunk[col].to_numpy())
                table = tables[col]
                glob = np.fromiter((table.setdefault(u, len(table)) for u in uniques),
                                   dtype=np.int64, count=len(uniques))  # fmt: skip
                codes[col].append(glob[local].astype(np.int32))
            values.append(chunk["v"].to_numpy(dtype=np.float64))
    return _finish(path, tables, codes, values, sparse)


def read_pyarrow(path: str, block_size: int = 1 << 24, sparse: bool = False) -> tuple[str, int]:
    """The other candidate: pyarrow's streaming CSV reader, ids to global codes, a dense fill."""
    import pyarrow as pa
    from pyarrow import csv

    tables: dict[str, dict[str, int]] = {"m": {}, "s": {}}
    codes: dict[str, list[np.ndarray]] = {"m": [], "s": []}
    values = []
    reader = csv.open_csv(
        path,
        read_options=csv.ReadOptions(column_names=["m", "s", "v"], block_size=block_size),
        parse_options=csv.ParseOptions(delimiter=" "),
        convert_options=csv.ConvertOptions(
            column_types={"m": pa.string(), "s": pa.string(), "v": pa.float64()}
        ),
    )
    for batch in reader:
        for i, col in enumerate(("m", "s")):
            encoded = batch.column(i).dictionary_encode()
            table = tables[col]
            uniques = encoded.dictionary.to_pylist()
            glob = np.fromiter((table.setdefault(u, len(table)) for u in uniques),
                               dtype=np.int32, count=len(uniques))  # fmt: skip
            codes[col].append(glob[encoded.indices.to_numpy()])
        values.append(batch.column(2).to_numpy())
    return _finish(path, tables, codes, values, sparse)


def _child(contender: str, path: str, chunksize: int, sparse: bool) -> dict:
    if contender in ("ours", "before"):  # imports are not timed
        import dask  # noqa: F401

        import bosaris_dask.io.text  # noqa: F401
    elif contender == "pyarrow":
        import pyarrow.csv  # noqa: F401
    else:
        import pandas  # noqa: F401
    base = _peak_rss_mb()
    t0 = time.perf_counter()
    if contender in ("ours", "before"):
        checksum, trials = read_ours_sparse(path) if sparse else _checksum(*read_ours(path))
    elif contender == "pyarrow":
        checksum, trials = read_pyarrow(path, sparse=sparse)
    else:
        checksum, trials = read_pandas(path, chunksize, sparse)
    wall = time.perf_counter() - t0
    return {
        "contender": contender, "wall_s": wall, "peak_rss_mb": _peak_rss_mb(),
        "imports_rss_mb": base, "trials": trials, "checksum": checksum,
        "package": os.path.dirname(sys.modules["bosaris_dask"].__file__)
        if "bosaris_dask" in sys.modules else None,
    }  # fmt: skip


def _write(path: str, n: int) -> float:
    import math

    import dask.array as da

    from bosaris_dask.io.text import write_text
    from bosaris_dask.trials import make_scores

    ns = max(1, int(math.sqrt(n)))
    nm = max(1, n // ns)
    score = da.random.default_rng(0).normal(size=(nm, ns), chunks=(max(1, 2**22 // ns), ns))
    scores = make_scores([f"model_{i:06d}" for i in range(nm)],
                         [f"segment_{j:07d}" for j in range(ns)], score)  # fmt: skip
    t0 = time.perf_counter()
    write_text(scores, path)
    return time.perf_counter() - t0


def _write_sparse(path: str, n: int) -> float:
    """N distinct trials over about N/10 x N/10 VoxCeleb-like ids, drawn at random."""
    rng = np.random.default_rng(0)
    ids = max(n // 10, int(np.sqrt(4 * n)) + 2)
    draws = rng.integers(0, ids * ids, size=n + n // 8 + 16)
    pairs = draws[np.sort(np.unique(draws, return_index=True)[1])][:n]
    names = [f"id1{k % 1251:04d}/vid{k:07d}/{k % 99991:05d}.wav" for k in range(ids)]
    t0 = time.perf_counter()
    with open(path, "w") as f:
        for lo in range(0, n, 1 << 20):
            part = pairs[lo : lo + (1 << 20)]
            rows = zip((part // ids).tolist(), (part % ids).tolist(),
                       rng.normal(size=len(part)).round(6).tolist(), strict=True)  # fmt: skip
            f.writelines(f"{names[m]} {names[s]} {v}\n" for m, s, v in rows)
    return time.perf_counter() - t0


def _double_spaces(path: str) -> None:
    """Rewrite ``path`` with every space doubled (``m  s  0.5``): valid, not canonical."""
    with open(path, "rb") as source, open(path + ".tmp", "wb") as target:
        while block := source.read(1 << 24):
            target.write(block.replace(b" ", b"  "))
    os.replace(path + ".tmp", path)


def _warm(path: str) -> None:
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("n", nargs="?", type=float, default=1e6, help="lines (default 1e6)")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--chunksize", type=int, default=2_000_000, help="pandas rows per chunk")
    p.add_argument("--before", help="a directory holding the package to compare with")
    p.add_argument("--only", help="comma-separated contenders (default: all that apply)")
    p.add_argument("--spaces", action="store_true", help="double every separator")
    p.add_argument("--sparse", action="store_true", help="a VoxCeleb-like sparse list")
    args = p.parse_args(argv)
    contenders = [c for c in CONTENDERS if c != "before" or args.before]
    if args.spaces or importlib.util.find_spec("pyarrow") is None:
        contenders.remove("pyarrow")
    if args.only:
        contenders = [c for c in contenders if c in args.only.split(",")]
    n = int(args.n)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "scores.txt")
        t_write = (_write_sparse if args.sparse else _write)(path, n)
        if args.spaces:
            _double_spaces(path)
        mb = os.path.getsize(path) / 1e6
        _warm(path)
        print(f"{n:.3g} lines, {mb:.1f} MB written in {t_write:.1f} s; page cache: warm"
              + ("; separators doubled" if args.spaces else "")
              + ("; sparse, ids drawn at random" if args.sparse else ""))  # fmt: skip
        print(f"machine: {platform.machine()}, {os.cpu_count()} cores, "
              f"load average before {os.getloadavg()[0]:.1f}")  # fmt: skip
        runs: list[dict] = []
        for _ in range(args.repeat):
            for contender in contenders:
                env = dict(os.environ)
                if contender == "before":
                    env["PYTHONPATH"] = os.path.abspath(args.before)
                out = subprocess.run(
                    [sys.executable, __file__, "--child", contender, path, str(args.chunksize),
                     str(int(args.sparse))],
                    check=True, capture_output=True, text=True, env=env,
                )  # fmt: skip
                runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        load_after = os.getloadavg()[0]
    summary: dict = {"lines": n, "mb": mb, "write_s": t_write, "load_after": load_after,
                     "runs": runs, "contenders": {}}  # fmt: skip
    for c in contenders:
        mine = [r for r in runs if r["contender"] == c]
        wall = statistics.median(r["wall_s"] for r in mine)
        summary["contenders"][c] = {
            "wall_s": wall, "mb_per_s": mb / wall, "lines_per_s": n / wall,
            "peak_rss_mb": max(r["peak_rss_mb"] for r in mine),
            "median_peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in mine),
            "checksum": mine[0]["checksum"], "package": mine[0]["package"],
        }  # fmt: skip
        print(f"{c:7s} median {wall:6.2f} s  {mb / wall:6.0f} MB/s  {n / wall / 1e6:5.2f} M lines/s"
              f"  peak RSS {max(r['peak_rss_mb'] for r in mine):5.0f} MB (median"
              f" {statistics.median(r['peak_rss_mb'] for r in mine):4.0f})"
              f"  walls {[round(r['wall_s'], 2) for r in mine]}"
              f"  {mine[0]['package'] or ''}")  # fmt: skip
    sums = {v["checksum"] for v in summary["contenders"].values()}
    summary["identical"] = len(sums) == 1
    print(f"identical ids, masks and scores: {summary['identical']}; "
          f"load average after {load_after:.1f}")  # fmt: skip
    return summary


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(_child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "1")))
    else:
        main()
