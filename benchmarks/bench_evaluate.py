"""Full evaluation (4 priors, a 201-point NBE sweep, EER, PRBEP, Cllr, minCllr): ours vs a sort.

Usage::

    python benchmarks/bench_evaluate.py --side 10000 [--repeat 3] [--workdir DIR] [--json FILE]
        [--mode baseline --mode ours ...]

Simulates ``side x side`` float32 trials once (``python -m bosaris_dask.cli simulate``, one
system, a label-derived key), then runs each contender ``--repeat`` times in a fresh subprocess
and prints the median wall time, the peak resident memory (of the driver process:
``ru_maxrss``; for the LocalCluster run, measure the whole tree with
``benchmarks/peak_memory.py``), and each contender's time relative to ours, all measured in the
same run:

* ``baseline``: the in-memory evaluation a competent engineer would write with numpy: load the
  float32 matrix and the classes, pack each score's order-preserving bits and its label into one
  ``uint64`` (``float32 -> uint32`` so that unsigned order is score order, shifted left, OR the
  target bit), **one** ``np.sort`` (numpy's SIMD sort), cumulative counts at the end of each run
  of equal scores, the ROC convex hull of the few points where a non-target is followed by a
  target (vectorized pruning of points that do not turn left: a monotone-chain hull, written
  here, independent of :mod:`bosaris_dask.roc`), DCFs at the hull vertices and by
  ``searchsorted`` on the distinct scores, Cllr in float64 blocks. No argsort, no second sort,
  no float64 copy of the scores.
* ``ours``: :func:`bosaris_dask.metrics.evaluate` on the zarr stores with dask's threaded
  scheduler (what the API does for small jobs);
* ``ours-local``: the same on a 2-process ``LocalCluster`` (what ``bosaris-dask evaluate``
  starts for 1e8 trials and more); its start-up time is included.
* ``llreval`` (the peer a BOSARIS user would pick in Python; used when ``import llreval``
  works), and with ``--mode sklearn`` a scikit-learn ``roc_curve`` recipe.

Every contender pays for reading the stores and importing its stack. Ours and the baseline must
agree to 1e-9 (checked at the end); for the peers the largest differences are printed.
``--side 40 --repeat 1`` runs every contender once in a few seconds
(``tests/test_benchmarks.py``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PRIORS = (0.5, 0.1, 0.01, 0.001)
SWEEP = np.linspace(-10, 10, 201)
BLOCK = 1 << 20  # elements per float64 block of the baseline's Cllr sums


def _plo() -> np.ndarray:
    p = np.array(PRIORS)
    return np.concatenate([np.log(p / (1 - p)), SWEEP])


def _load(workdir: Path) -> tuple[np.ndarray, np.ndarray]:
    """The float32 score matrix and the int8 classes (+1 target, -1 non-target, 0 no trial)."""
    from bosaris_dask import io
    from bosaris_dask.trials import trial_classes

    classes = np.asarray(trial_classes(io.read(workdir / "key.zarr")).compute())
    values = np.asarray(io.read(workdir / "system-1.zarr").score.data.compute())
    return values, classes


# ------------------------------------------------------------------------------------------
# the baseline: one packed sort in float32, written without bosaris_dask.roc
# ------------------------------------------------------------------------------------------


def sortable_bits(values: np.ndarray) -> np.ndarray:
    """float32 -> uint32 whose unsigned order is the scores' order (-0.0 ties with +0.0).

    Examples
    --------
    >>> x = np.array([-np.inf, -2.0, -0.0, 0.0, 1e-45, 3.0], np.float32)
    >>> b = sortable_bits(x)
    >>> bool((np.diff(b.astype(np.int64)) >= 0).all()), int(b[2]) == int(b[3])
    (True, True)
    """
    bits = values.view(np.uint32)
    bits = np.where(bits == 0x80000000, np.uint32(0), bits)
    return np.where(bits >> 31 == 1, ~bits, bits | np.uint32(0x80000000))


def _float_of_bits(bits: np.ndarray) -> np.ndarray:
    """Inverse of :func:`sortable_bits`, as float64."""
    bits = bits.astype(np.uint32)
    raw = np.where(bits >> 31 == 1, bits ^ np.uint32(0x80000000), ~bits)
    return raw.view(np.float32).astype(np.float64)


def lower_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the greatest convex minorant's vertices of integer points sorted by ``x``.

    A monotone chain done in bulk: each round drops, all at once, every interior point that does
    not turn strictly left between its current neighbours (such a point lies on or above a chord
    of two other points, so it is no vertex); when no point drops, the chain is convex. Both
    ends always stay.

    Examples
    --------
    >>> lower_hull(np.array([0, 1, 2, 3]), np.array([0, 5, 1, 6])).tolist()
    [0, 2, 3]
    """
    keep = np.arange(len(x))
    while len(keep) > 2:
        o, a, b = keep[:-2], keep[1:-1], keep[2:]
        cross = (x[a] - x[o]) * (y[b] - y[o]) - (y[a] - y[o]) * (x[b] - x[o])
        drop = cross <= 0
        if not drop.any():
            break
        keep = keep[np.r_[True, ~drop, True]]
    return keep


def _crossing(u: np.ndarray, v: np.ndarray) -> float:
    """Where the polyline through ``(u, v)`` (u falling, v rising) meets ``v = u``."""
    d = v - u
    i = int(np.argmax(d >= 0))
    if d[i] == 0:
        return float(u[i])
    w = -d[i - 1] / (d[i] - d[i - 1])
    return float(u[i - 1] + w * (u[i] - u[i - 1]))


def baseline_arrays(values: np.ndarray, classes: np.ndarray) -> dict:
    """The baseline's metrics of float32 ``values`` with int8 ``classes`` (any equal shapes)."""
    values, classes = values.ravel(), classes.ravel()
    if not (classes != 0).all():
        values, classes = values[classes != 0], classes[classes != 0]
    n = len(values)
    key = sortable_bits(values).astype(np.uint64)
    key <<= np.uint64(1)
    key |= classes == 1
    key.sort()  # the one sort: numpy's SIMD quicksort on uint64
    targets = np.flatnonzero(key & np.uint64(1))  # positions of the targets, in score order
    key >>= np.uint64(1)
    ends = np.flatnonzero(key[1:] != key[:-1])  # the last trial of each run of equal scores
    ends = np.append(ends, n - 1)
    distinct = _float_of_bits(key[ends])
    del key
    T, N = len(targets), n - len(targets)
    # (x, y) = (non-targets, targets) at or below each distinct score, from (0, 0)
    y = np.concatenate([[0], np.searchsorted(targets, ends, side="right")])
    x = np.concatenate([[0], ends + 1]) - y
    # a hull vertex can only sit where a run with a non-target meets a run with a target
    corner = np.flatnonzero((np.diff(x)[:-1] > 0) & (np.diff(y)[1:] > 0)) + 1
    candidates = np.concatenate([[0], corner, [len(x) - 1]])
    vertices = candidates[lower_hull(x[candidates], y[candidates])]
    misses, fas = y[vertices], N - x[vertices]
    plo = _plo()
    p_tar, p_non = 1 / (1 + np.exp(-plo)), 1 / (1 + np.exp(plo))
    cost = p_tar[:, None] * (misses / T) + p_non[:, None] * (fas / N)
    below = np.searchsorted(distinct, -plo, side="left")  # runs with a score < -plo
    act = p_tar * y[below] / T + p_non * (N - x[below]) / N
    dt, dn = np.diff(misses).astype(np.float64), -np.diff(fas).astype(np.float64)
    mixed = (dt > 0) & (dn > 0)
    dt, dn = dt[mixed], dn[mixed]
    min_cllr = (dt * np.log1p(dn * T / (dt * N))).sum() / T + (
        dn * np.log1p(dt * N / (dn * T))
    ).sum() / N
    tar_sum = non_sum = 0.0
    for start in range(0, n, BLOCK):
        s = values[start : start + BLOCK].astype(np.float64)
        c = classes[start : start + BLOCK]
        tar_sum += np.logaddexp(0, -s[c == 1]).sum()
        non_sum += np.logaddexp(0, s[c == -1]).sum()
    return {
        "eer": _crossing(fas / N, misses / T),
        "prbep": _crossing(fas.astype(np.float64), misses.astype(np.float64)),
        "cllr": (tar_sum / T + non_sum / N) / (2 * np.log(2)),
        "min_cllr": float(min_cllr / (2 * np.log(2))),
        "act": act.tolist(),
        "min": cost.min(axis=1).tolist(),
        "n_target": T, "n_nontarget": N,
    }  # fmt: skip


def run_baseline(workdir: Path) -> dict:
    return baseline_arrays(*_load(workdir))


# ------------------------------------------------------------------------------------------
# peers and ours
# ------------------------------------------------------------------------------------------


def _load_tar_non(workdir: Path) -> tuple[np.ndarray, np.ndarray]:
    values, classes = _load(workdir)
    return values[classes == 1].astype(np.float64), values[classes == -1].astype(np.float64)


def _unsorted(f, plo: np.ndarray) -> list[float]:
    """``f`` on sorted prior log-odds (as llreval requires), returned in the original order."""
    order = np.argsort(plo)
    out = np.empty(len(plo))
    out[order] = np.asarray(f(plo[order]))
    return out.tolist()


def run_llreval(workdir: Path) -> dict:
    """The peer a BOSARIS user would pick in Python: llreval (PAV via scikit-learn)."""
    from llreval.bayes_error_rate import fast_Bayes_error_rate
    from llreval.cllr import cllr, min_cllr
    from llreval.pav_rocch import PAV, ROCCH

    tar, non = _load_tar_non(workdir)
    scores = np.concatenate([tar, non])
    labels = np.concatenate([np.ones(len(tar)), np.zeros(len(non))])
    plo = _plo()
    pav = PAV(scores, labels)
    rocch = ROCCH(pav)
    return {
        "eer": float(rocch.EER()), "cllr": float(cllr(tar, non)), "min_cllr": float(min_cllr(pav)),
        "act": _unsorted(lambda x: fast_Bayes_error_rate(scores, labels, x), plo),
        "min": np.asarray(rocch.Bayes_error_rate(plo)).tolist(),
    }  # fmt: skip


def run_sklearn(workdir: Path) -> dict:
    """The scikit-learn recipe: roc_curve, then a steppy EER and minDCF from its points."""
    from scipy.special import expit
    from sklearn.metrics import roc_curve

    tar, non = _load_tar_non(workdir)
    scores = np.concatenate([tar, non])
    labels = np.concatenate([np.ones(len(tar)), np.zeros(len(non))])
    fpr, tpr, _ = roc_curve(labels, scores)
    fnr = 1 - tpr
    mindcf = [float(np.min(expit(p) * fnr + expit(-p) * fpr)) for p in _plo()]
    i = np.nanargmin(np.abs(fnr - fpr))
    return {"eer": float((fnr[i] + fpr[i]) / 2), "min": mindcf}  # a steppy EER, not ROCCH


def run_ours(workdir: Path, cluster: str = "threads") -> dict:
    from bosaris_dask import io
    from bosaris_dask.cluster import connect
    from bosaris_dask.metrics import evaluate, operating_points, sweep_points

    key = io.read(workdir / "key.zarr")
    scores = io.read(workdir / "system-1.zarr")
    with connect(cluster=cluster, dashboard=False, announce=None):
        start = time.perf_counter()
        ds = evaluate(scores, key, priors=PRIORS, sweep=SWEEP)
        evaluate_s = time.perf_counter() - start
    ds = ds.isel(system=0)
    ops, sweep = operating_points(ds), sweep_points(ds)
    return {
        "eer": float(ds.eer), "prbep": float(ds.prbep), "cllr": float(ds.cllr),
        "min_cllr": float(ds.min_cllr), "passes": int(ds.attrs["passes"]),
        "evaluate_s": evaluate_s,
        "act": np.concatenate([ops.act_dcf_raw, sweep.act_dcf_raw]).tolist(),
        "min": np.concatenate([ops.min_dcf_raw, sweep.min_dcf_raw]).tolist(),
    }  # fmt: skip


RUNNERS = {
    "baseline": run_baseline,
    "ours": run_ours,
    "ours-local": lambda workdir: run_ours(workdir, "local"),
    "llreval": run_llreval,
    "sklearn": run_sklearn,
}
LABELS = {
    "baseline": "numpy baseline (1 packed sort)",
    "ours": "bosaris-dask (threads)",
    "ours-local": "bosaris-dask (2 procs)",
    "llreval": "llreval",
    "sklearn": "sklearn roc_curve",
}


def _child(mode: str, workdir: Path) -> None:
    start = time.perf_counter()
    result = RUNNERS[mode](workdir)
    result["wall_s"] = time.perf_counter() - start
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def _measure(mode: str, workdir: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--workdir", str(workdir)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def _machine() -> str:
    """CPU model (from /proc/cpuinfo), cores, memory and the load when the run started."""
    cpu = platform.processor() or "unknown CPU"
    info = Path("/proc/cpuinfo")
    if info.exists():
        names = [ln.split(":", 1)[1].strip() for ln in info.read_text().splitlines()
                 if ln.startswith("model name")]  # fmt: skip
        cpu = names[0] if names else cpu
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB, load {os.getloadavg()[0]:.1f}"


def set_cache(workdir: Path, cold: bool) -> None:
    """Put the stores' files in the page cache (read them), or evict them (``cold``).

    Eviction is ``posix_fadvise(POSIX_FADV_DONTNEED)`` on each file: it needs no privileges
    and touches no other file's pages (``fincore FILE`` shows what stayed resident).
    """
    for path in sorted(p for p in workdir.rglob("*") if p.is_file()):
        with open(path, "rb") as f:
            if cold:
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
            else:
                while f.read(1 << 24):
                    pass


def main(argv: list[str] | None = None) -> dict:
    """Run the benchmark; return the medians and ratios (also printed)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument(
        "--mode",
        action="append",
        choices=list(RUNNERS),
        help="a contender to time (repeat the flag; default: baseline, ours, ours-local, and "
        "llreval when it is installed)",
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="evict the stores from the page cache before every run (default: read them into "
        "it first, so every run starts warm)",
    )
    parser.add_argument("--json", type=Path, help="also write every run's record here")
    parser.add_argument("--child", choices=list(RUNNERS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.gettempdir()) / f"bosaris-bench-{args.side}"
    if args.child:
        _child(args.child, workdir)
        return {}
    if not (workdir / "system-1.zarr").exists():
        print(f"simulating {args.side} x {args.side} float32 trials into {workdir} ...")
        subprocess.run(
            [sys.executable, "-m", "bosaris_dask.cli", "simulate", "--n-models", str(args.side),
             "--n-segments", str(args.side), "--systems", "1", "--out-dir", str(workdir),
             "--cluster", "threads", "-q"],
            check=True,
        )  # fmt: skip
    modes = args.mode or ["baseline", "ours", "ours-local"]
    if not args.mode and importlib.util.find_spec("llreval") is not None:
        modes.append("llreval")
    machine = _machine()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    commit = subprocess.run(
        ["git", "-C", str(Path(__file__).parent), "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True,
    ).stdout.strip() or "unknown"  # fmt: skip
    runs: dict[str, list[dict]] = {m: [] for m in modes}
    for _ in range(args.repeat):  # interleaved, so that a noisy minute hits every contender
        for m in modes:
            set_cache(workdir, cold=args.cold)
            runs[m].append(_measure(m, workdir))
    trials = args.side**2
    wall = {m: statistics.median(r["wall_s"] for r in runs[m]) for m in modes}
    cache = "cold (evicted before each run)" if args.cold else "warm (in the page cache)"
    print(f"\n{trials:.3g} trials (float32), median of {args.repeat} run(s) each, stores {cache}")
    print(f"  machine: {machine}; started {started} at commit {commit}")
    for m in modes:
        peak = max(r["peak_rss_mb"] for r in runs[m])
        rel = f"  {wall[m] / wall['ours']:6.2f} x ours' time" if "ours" in wall else ""
        print(f"  {LABELS[m]:<31} {wall[m]:8.2f} s  {trials / wall[m] / 1e6:7.1f} M trials/s  "
              f"peak RSS {peak:7.0f} MB{rel}")  # fmt: skip
    ours = runs.get("ours", runs.get("ours-local", [{}]))[0]
    if ours and "baseline" in runs:
        base = runs["baseline"][0]
        for name in ("eer", "prbep", "cllr", "min_cllr", "act", "min"):
            np.testing.assert_allclose(ours[name], base[name], rtol=1e-9, err_msg=name)
        print(f"  ours and the baseline agree (rtol 1e-9); ours took {ours['passes']} passes")
    if "ours" in runs:
        inner = statistics.median(r["evaluate_s"] for r in runs["ours"])
        print(f"  evaluate() alone (threads; no imports, no store opening): {inner:.2f} s")
    for peer in ("llreval", "sklearn"):
        if peer in runs and ours:
            diffs = {
                k: float(np.max(np.abs(np.subtract(runs[peer][0][k], ours[k]))))
                for k in ("eer", "cllr", "min_cllr", "act", "min")
                if k in runs[peer][0]
            }
            print(f"  {peer}: largest absolute difference from ours per metric: {diffs}")
    summary = {
        "trials": trials, "repeat": args.repeat, "machine": machine, "cache": cache,
        "date": started, "commit": commit,
        "median_wall_s": wall, "passes": ours.get("passes"),
        "evaluate_s": statistics.median(r["evaluate_s"] for r in runs["ours"])
        if "ours" in runs else None,
        "ratio_to_ours": {m: wall[m] / wall["ours"] for m in modes} if "ours" in wall else {},
    }  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "runs": runs}, indent=1))
    return summary


if __name__ == "__main__":
    main()
