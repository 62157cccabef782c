"""Full evaluation (4 priors, a 201-point NBE sweep, EER, PRBEP, Cllr, minCllr): ours vs a sort.

Usage::

    python benchmarks/bench_evaluate.py --side 10000 [--repeat 3] [--workdir DIR]

Simulates ``side x side`` float32 trials once (``bosaris-dask simulate``, one system), then runs
each contender ``--repeat`` times in a fresh subprocess and prints the median wall time, the
peak resident memory (of the driver process: ``ru_maxrss``; for the LocalCluster run, measure the
whole tree with ``benchmarks/peak_memory.py``), and the ratio against the baseline measured in the
same run:

* ``reference``: the in-memory sort-based numpy evaluation a user would write: load the matrix,
  split targets and non-targets, ``argsort`` everything, cumulative counts at every distinct
  threshold, the ROC convex hull of those points, DCFs by ``searchsorted``, Cllr by summing.
* ``bosaris (threads)``: :func:`bosaris_dask.metrics.evaluate` on the zarr stores with dask's
  threaded scheduler (what the API does for small jobs);
* ``bosaris (2 procs)``: the same on a 2-process ``LocalCluster`` (what ``bosaris-dask
  evaluate`` starts for 1e8 trials and more); its start-up time is included.

Both give the same numbers (checked at the end to 1e-9).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PRIORS = (0.5, 0.1, 0.01, 0.001)


def run_reference(workdir: Path) -> dict:
    from scipy.special import expit, logit

    from bosaris_dask import io, roc
    from bosaris_dask.trials import trial_classes

    key = io.read(workdir / "key.zarr")
    scores = io.read(workdir / "system-1.zarr")
    mask = np.asarray(trial_classes(key).compute())
    values = np.asarray(scores.score.data.compute()).astype(np.float64)
    tar, non = values[mask == 1], values[mask == -1]
    del values, mask
    both = np.concatenate([tar, non])
    order = np.argsort(both, kind="stable")
    is_tar = order < len(tar)
    sorted_scores = both[order]
    edges = np.flatnonzero(np.diff(sorted_scores)) + 1  # pool ties: one threshold per value
    cum_tar = np.concatenate([[0], np.cumsum(is_tar)[np.append(edges, len(both)) - 1]])
    cum_non = np.concatenate([[0], np.arange(1, len(both) + 1)[np.append(edges, len(both)) - 1]])
    cum_non = cum_non - cum_tar
    hull = roc.Hull(
        *(lambda v: (v, cum_tar[v], len(non) - cum_non[v]))(roc.convex_minorant(cum_non, cum_tar)),
        n_target=len(tar),
        n_nontarget=len(non),
    )
    plo = np.concatenate([logit(np.array(PRIORS)), np.linspace(-10, 10, 201)])
    tar_sorted, non_sorted = np.sort(tar), np.sort(non)
    pmiss = np.searchsorted(tar_sorted, -plo, side="left") / len(tar)
    pfa = 1 - np.searchsorted(non_sorted, -plo, side="left") / len(non)
    act = expit(plo) * pmiss + expit(-plo) * pfa
    mindcf = roc.min_bayes_error(hull, plo)[0]
    cllr = (np.logaddexp(0, -tar).mean() + np.logaddexp(0, non).mean()) / 2 / np.log(2)
    return {
        "eer": roc.rocch_eer(hull), "prbep": roc.prbep(hull), "cllr": float(cllr),
        "min_cllr": roc.min_cllr(hull), "act": act.tolist(), "min": mindcf.tolist(),
    }  # fmt: skip


def _load_tar_non(workdir: Path) -> tuple[np.ndarray, np.ndarray]:
    from bosaris_dask import io
    from bosaris_dask.trials import trial_classes

    key = io.read(workdir / "key.zarr")
    mask = np.asarray(trial_classes(key).compute())
    values = np.asarray(io.read(workdir / "system-1.zarr").score.data.compute())
    return values[mask == 1].astype(np.float64), values[mask == -1].astype(np.float64)


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
    from scipy.special import logit

    tar, non = _load_tar_non(workdir)
    scores = np.concatenate([tar, non])
    labels = np.concatenate([np.ones(len(tar)), np.zeros(len(non))])
    plo = np.concatenate([logit(np.array(PRIORS)), np.linspace(-10, 10, 201)])
    pav = PAV(scores, labels)
    rocch = ROCCH(pav)
    return {
        "eer": float(rocch.EER()), "cllr": float(cllr(tar, non)), "min_cllr": float(min_cllr(pav)),
        "act": _unsorted(lambda x: fast_Bayes_error_rate(scores, labels, x), plo),
        "min": np.asarray(rocch.Bayes_error_rate(plo)).tolist(),
    }  # fmt: skip


def run_sklearn(workdir: Path) -> dict:
    """The scikit-learn recipe: roc_curve, then EER and minDCF from its points."""
    from scipy.special import expit, logit
    from sklearn.metrics import roc_curve

    tar, non = _load_tar_non(workdir)
    scores = np.concatenate([tar, non])
    labels = np.concatenate([np.ones(len(tar)), np.zeros(len(non))])
    fpr, tpr, _ = roc_curve(labels, scores)
    fnr = 1 - tpr
    plo = np.concatenate([logit(np.array(PRIORS)), np.linspace(-10, 10, 201)])
    mindcf = [float(np.min(expit(p) * fnr + expit(-p) * fpr)) for p in plo]
    i = np.nanargmin(np.abs(fnr - fpr))
    return {"eer": float((fnr[i] + fpr[i]) / 2), "min": mindcf}  # a steppy EER, not ROCCH


def run_ours(workdir: Path, cluster: str = "threads") -> dict:
    from bosaris_dask import io
    from bosaris_dask.cluster import connect
    from bosaris_dask.metrics import evaluate

    key = io.read(workdir / "key.zarr")
    scores = io.read(workdir / "system-1.zarr")
    with connect(cluster=cluster, dashboard=False, announce=None):
        ds = evaluate(scores, key, priors=PRIORS, sweep=np.linspace(-10, 10, 201))
    ds = ds.isel(system=0)
    return {
        "eer": float(ds.eer), "prbep": float(ds.prbep), "cllr": float(ds.cllr),
        "min_cllr": float(ds.min_cllr), "passes": int(ds.attrs["passes"]),
        "act": np.concatenate([ds.act_dcf_raw, ds.sweep_act_dcf_raw]).tolist(),
        "min": np.concatenate([ds.min_dcf_raw, ds.sweep_min_dcf_raw]).tolist(),
    }  # fmt: skip


def _child(mode: str, workdir: Path) -> None:
    start = time.perf_counter()
    if mode in PEERS:
        result = PEERS[mode](workdir)
    else:
        result = run_ours(workdir, "threads" if mode == "ours" else "local")
    result["wall_s"] = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result["peak_rss_mb"] = usage.ru_maxrss / 1024
    print(json.dumps(result))


PEERS = {"reference": run_reference, "llreval": run_llreval, "sklearn": run_sklearn}
LABELS = {
    "ours": "bosaris (threads)",
    "ours-local": "bosaris (2 procs)",
    "reference": "sort reference",
    "llreval": "llreval",
    "sklearn": "sklearn roc_curve",
}


def _measure(mode: str, workdir: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--workdir", str(workdir)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument(
        "--skip-reference",
        action="store_true",
        help="only time bosaris-dask (for sizes the reference cannot hold)",
    )
    parser.add_argument(
        "--peers",
        action="store_true",
        help="also time llreval and a scikit-learn recipe (pip install 'bosaris-dask[benchmarks]')",
    )
    parser.add_argument("--child", choices=["ours", "ours-local", *PEERS], help=argparse.SUPPRESS)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.gettempdir()) / f"bosaris-bench-{args.side}"
    if args.child:
        _child(args.child, workdir)
        return
    if not (workdir / "system-1.zarr").exists():
        print(f"simulating {args.side} x {args.side} float32 trials into {workdir} ...")
        subprocess.run(
            ["bosaris-dask", "simulate", "--models", str(args.side), "--segments", str(args.side),
             "--systems", "1", "--out-dir", str(workdir), "--cluster", "threads", "-q"],
            check=True,
        )  # fmt: skip
    modes = ["ours", "ours-local"]
    if not args.skip_reference:
        modes.insert(0, "reference")
    if args.peers:
        modes += ["llreval", "sklearn"]
    runs = {m: [_measure(m, workdir) for _ in range(args.repeat)] for m in modes}
    trials = args.side**2
    print(f"\n{trials:.2g} trials (float32), median of {args.repeat} runs each")
    base = statistics.median(r["wall_s"] for r in runs[modes[0]])
    for mode in modes:
        wall = statistics.median(r["wall_s"] for r in runs[mode])
        peak = max(r["peak_rss_mb"] for r in runs[mode])
        label = LABELS[mode]
        print(f"  {label:<18} {wall:8.2f} s  {trials / wall / 1e6:8.1f} M trials/s  "
              f"peak RSS {peak:8.0f} MB  speed-up x{base / wall:.2f}")  # fmt: skip
    ours = runs["ours"][0]
    if "reference" in runs:
        a = runs["reference"][0]
        for name in ("eer", "prbep", "cllr", "min_cllr", "act", "min"):
            np.testing.assert_allclose(ours[name], a[name], rtol=1e-9)
        print("  results agree (rtol 1e-9); passes over the data:", ours["passes"])
    for peer in ("llreval", "sklearn"):
        if peer in runs:
            diffs = {
                k: float(np.max(np.abs(np.subtract(runs[peer][0][k], ours[k]))))
                for k in ("eer", "cllr", "min_cllr", "act", "min")
                if k in runs[peer][0]
            }
            print(f"  {peer}: largest absolute difference from ours per metric: {diffs}")


if __name__ == "__main__":
    main()
