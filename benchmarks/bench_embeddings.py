"""Scores from embeddings: a full evaluation from embeddings against the same evaluation from a
zarr store of the same matrix, and both against the sgemm floor, measured in one run.

Usage::

    python benchmarks/bench_embeddings.py [--side 4096] [--dim 256] [--block 4096] [--repeat 3]
        [--modes sgemm,dgemm,scores,embeddings,zarr] [--cohort 0] [--top-n 300]
        [--norm none] [--workdir DIR] [--device cuda]
        # modes also: unscreened, auc, auc-unscreened, sample, sample-blocks,
        # scores-device, embeddings-device

Draws ``side`` enrolment and ``side`` test embeddings (float32, ``side // 20`` speakers, so a
label-derived key has about 5% targets; seed 0) and times, each in a fresh child process (so
its peak RSS is its own; the threaded scheduler keeps the whole run in that one process), the
median of ``--repeat`` rounds interleaved mode by mode (so a change of the machine's load hits
every mode alike):

* ``sgemm``: the float32 product of the two sets in ``block x block`` tiles (one numpy call per
  tile into a reused buffer, BLAS threads as configured): the floor no scorer can beat here;
* ``dgemm``: the same in float64 (what the exact kernel multiplies);
* ``scores``: every block of :func:`scores_from_embeddings` (float64 product rounded to
  float32, BLAS pinned to one thread per task, dask threads over the blocks), summed per block
  so nothing is stored: one pass of the score source;
* ``embeddings``: :func:`bosaris_dask.metrics.evaluate` of those lazy scores against the
  label-derived key (pass 1 computes every exact block; the refinement passes screen each
  block with a float32 product and recompute exactly only the pairs near a candidate bin,
  :mod:`bosaris_dask.embeddings.screen`; the fraction recomputed is printed);
* ``scores-device`` and ``embeddings-device`` (not run by default): ``scores`` and
  ``embeddings`` with the block products on ``--device`` (PyTorch; default ``cuda``;
  :mod:`bosaris_dask.embeddings.device`: products and rounding there, the few uncertain
  scores and the passes on the host);
* ``unscreened`` (not run by default): the same with the screen off (knob
  ``bosaris_dask.screen`` 0: every pass computes every exact block), for an A/B;
* ``sample`` and ``sample-blocks`` (not run by default): the sample of the lazy scores that an
  adaptive pass 1 fits its bins to (:func:`bosaris_dask.passes.pass1_bins.fitted_bin_maps`), read
  through the scores' strided reader (only the sampled pairs computed,
  :mod:`bosaris_dask.passes.subgrids`), and by slicing whole blocks (every sampled block computed);
* ``zarr``: the same evaluation of the same matrix read from a zarr store (written once, before
  the rounds, by ``score``'s writer; the write time is printed; the store is deleted at the
  end unless ``--workdir`` is given). Both evaluations are checked to give the same EER and
  minDCF bit for bit.
* ``cohort`` (with ``--cohort N`` and no ``--norm``): the cohort statistics of AS-norm
  (:func:`bosaris_dask.embeddings.cohort.cohort_stats`, top-``--top-n``) of the ``side``
  enrolment embeddings against ``N`` cohort embeddings (drawn like the test side).

With ``--norm z|t|s|as`` (and ``--cohort N``) the scores of every mode but the products are
normalized against that cohort (:mod:`bosaris_dask.embeddings.normalization`; the cohort
statistics are computed in each timed call).

Prints wall time, scores per second, the ratio to sgemm and to the zarr evaluation, and the
peak RSS of each child. The issue's 1e9 and 1e10-pair runs are ``--side 31623`` and ``--side
100000`` (minutes, not for CI; mind the disk: a zarr store is ``4 * side**2`` bytes).

The class ``Embeddings`` follows the asv convention (``setup``, ``time_*``) so a test can run
every benchmark body once.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bosaris_dask.embeddings import from_arrays, scores_from_embeddings
from bosaris_dask.metrics import evaluate
from bosaris_dask.trials import key_from_labels

MODES = ("sgemm", "dgemm", "scores", "embeddings", "zarr")


class Embeddings:
    """asv-style benchmark bodies over one random embedding set."""

    def setup(self, side: int = 1024, dim: int = 64, block: int = 512, cohort: int = 0,
              norm: str = "none", top_n: int = 300) -> None:  # fmt: skip
        rng = np.random.default_rng(0)
        speakers = max(2, side // 20)
        centres = rng.normal(size=(speakers, dim))
        labels_e = np.arange(side) % speakers
        labels_t = rng.integers(0, speakers, size=side)
        self.a = (centres[labels_e] + rng.normal(size=(side, dim))).astype(np.float32)
        self.b = (centres[labels_t] + rng.normal(size=(side, dim))).astype(np.float32)
        e_ids = [f"e{i}" for i in range(side)]
        t_ids = [f"t{i}" for i in range(side)]
        self.enrol, self.test = from_arrays(e_ids, self.a), from_arrays(t_ids, self.b)
        self.key = key_from_labels(e_ids, labels_e, t_ids, labels_t, chunks=(block, block))
        self.block = block
        self.cohort = None
        self.norm = {"norm": norm, "top_n": top_n if norm == "as" else None}
        if cohort:
            labels_c = rng.integers(0, speakers, size=cohort)
            c = (centres[labels_c] + rng.normal(size=(cohort, dim))).astype(np.float32)
            self.cohort = from_arrays([f"c{i}" for i in range(cohort)], c)

    def _tiles(self, a: np.ndarray, b: np.ndarray) -> None:
        block = self.block
        buf = np.empty((block, block), dtype=a.dtype)
        for i in range(0, a.shape[0], block):
            for j in range(0, b.shape[0], block):
                x, y = a[i : i + block], b[j : j + block]
                np.matmul(x, y.T, out=buf[: x.shape[0], : y.shape[0]])

    def time_sgemm(self) -> None:
        self._tiles(self.a, self.b)

    def time_dgemm(self) -> None:
        self._tiles(self.a.astype(np.float64), self.b.astype(np.float64))

    def lazy_scores(self, device: str = "cpu"):
        norm = self.norm if self.norm["norm"] != "none" else {}
        cohort = {"cohort": self.cohort} if norm else {}
        return scores_from_embeddings(self.enrol, self.test, chunks=(self.block, self.block),
                                      device=device, **norm, **cohort)  # fmt: skip

    def time_scores(self, device: str = "cpu") -> None:
        self.lazy_scores(device).score.data.sum(dtype=np.float64).compute()

    def time_evaluate(self, device: str = "cpu") -> None:
        self.results = evaluate(self.lazy_scores(device), self.key)

    def time_unscreened(self) -> None:
        import dask

        with dask.config.set({"bosaris_dask.screen": 0}):
            self.time_evaluate()

    def time_auc(self) -> None:
        """The evaluation with the exact AUC (its count rides the first refinement pass)."""
        self.results = evaluate(self.lazy_scores(), self.key, exact_auc=True)

    def time_auc_unscreened(self) -> None:
        import dask

        with dask.config.set({"bosaris_dask.screen": 0}):
            self.time_auc()

    def time_sample(self, whole_blocks: bool = False) -> None:
        from bosaris_dask.inputs import pass_inputs
        from bosaris_dask.passes import pass1_bins, subgrids

        inputs, _ = pass_inputs([self.lazy_scores()], self.key)
        strided = subgrids.strided
        if whole_blocks:
            subgrids.strided = lambda a, i, j, r, c: a.blocks[i, j][::r, ::c]
        try:
            ((self.sample, _),) = pass1_bins._sample_keys(inputs, 1, pass1_bins.SAMPLE_TRIALS)
        finally:
            subgrids.strided = strided

    def time_zarr(self, store: str | os.PathLike[str]) -> None:
        from bosaris_dask import io

        self.results = evaluate(io.read(store), self.key)

    def write_zarr(self, store: str | os.PathLike[str]) -> None:
        from bosaris_dask import io

        io.write(self.lazy_scores(), store)

    def time_cohort(self, top_n: int = 300) -> None:
        from bosaris_dask.embeddings.cohort import cohort_stats

        self.stats = cohort_stats(self.enrol, self.cohort, top_n=top_n)


def _warm_up(device: str = "cpu") -> None:
    """One tiny evaluation from embeddings and from zarr: imports, BLAS and thread start-up
    (and a device's start: its context, its libraries' handles in each thread) are paid here,
    outside the timed call (they are seconds' worth at small sizes)."""
    tiny = Embeddings()
    tiny.setup(side=256 if device == "cpu" else 2048, dim=16, block=128)  # every thread's start
    tiny.time_evaluate(device)
    with tempfile.TemporaryDirectory() as tmp:
        tiny.write_zarr(Path(tmp) / "s.zarr")
        tiny.time_zarr(Path(tmp) / "s.zarr")


def _child(args: argparse.Namespace) -> None:
    _warm_up(args.device if args.child.endswith("-device") else "cpu")
    bench = Embeddings()
    bench.setup(args.side, args.dim, min(args.block, args.side), args.cohort, args.norm,
                args.top_n)  # fmt: skip
    run = {
        "sgemm": bench.time_sgemm,
        "dgemm": bench.time_dgemm,
        "scores": bench.time_scores,
        "embeddings": bench.time_evaluate,
        "scores-device": lambda: bench.time_scores(args.device),
        "embeddings-device": lambda: bench.time_evaluate(args.device),
        "unscreened": bench.time_unscreened,
        "auc": bench.time_auc,
        "auc-unscreened": bench.time_auc_unscreened,
        "sample": bench.time_sample,
        "sample-blocks": lambda: bench.time_sample(whole_blocks=True),
        "zarr": lambda: bench.time_zarr(args.store),
        "write": lambda: bench.write_zarr(args.store),
        "cohort": lambda: bench.time_cohort(args.top_n),
    }[args.child]
    from bosaris_dask.embeddings import screen

    screen.reset_counts()
    start = time.perf_counter()
    run()
    result = {"wall_s": time.perf_counter() - start,
              "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}  # fmt: skip
    if args.child in _EVALUATIONS:
        r = bench.results.isel(system=0)
        result.update(passes=int(bench.results.attrs["passes"]), eer=float(r.eer),
                      min_dcf=r.min_dcf.values.tolist(), screen=screen.counts(),
                      auc=float(r.auc))  # fmt: skip
    print(json.dumps(result))


#: The modes that evaluate (their results are compared).
_EVALUATIONS = ("embeddings", "embeddings-device", "unscreened", "zarr", "auc", "auc-unscreened")


def _measure(mode: str, args: argparse.Namespace, store: Path) -> dict:
    command = [sys.executable, __file__, "--child", mode, "--store", str(store),
               "--side", str(args.side), "--dim", str(args.dim), "--block", str(args.block),
               "--cohort", str(args.cohort), "--top-n", str(args.top_n),
               "--norm", args.norm, "--device", args.device]  # fmt: skip
    out = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{cpu}, {os.cpu_count()} cores, {platform.python_version()}, load average {load}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--side", type=int, default=4096)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--block", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--cohort", type=int, default=0, help="cohort size (0: no cohort run)")
    parser.add_argument("--top-n", type=int, default=300)
    parser.add_argument("--norm", default="none", choices=("none", "z", "t", "s", "as"))
    parser.add_argument(
        "--device",
        default="cuda",
        help="the device of the modes scores-device and embeddings-device",
    )
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--store", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args)
        return 0
    modes = [m for m in args.modes.split(",") if m]
    if args.norm != "none" and not args.cohort:
        parser.error("--norm needs --cohort N")
    if args.cohort and args.norm == "none":
        modes.append("cohort")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench_embeddings_"))
    store = workdir / "scores.zarr"
    n = args.side**2
    normed = f", {args.norm}-norm (cohort {args.cohort:,})" if args.norm != "none" else ""
    print(f"{args.side:,} x {args.side:,} = {n:.3g} pairs (d = {args.dim}){normed}, blocks of "
          f"{min(args.block, args.side)}, median of {args.repeat} interleaved rounds")  # fmt: skip
    print(f"machine: {_machine()}")
    try:
        if "zarr" in modes and not store.exists():
            free = shutil.disk_usage(workdir).free
            if free < 1.2 * 4 * n:
                raise SystemExit(f"{workdir}: {free / 1e9:.1f} GB free, the store needs "
                                 f"{4 * n / 1e9:.1f} GB")  # fmt: skip
            w = _measure("write", args, store)
            print(f"zarr store written in {w['wall_s']:.1f} s ({4 * n / 1e9:.2f} GB, "
                  f"peak RSS {w['peak_rss_mb']:.0f} MB)")  # fmt: skip
        runs: dict[str, list[dict]] = {m: [] for m in modes}
        for _ in range(args.repeat):
            for m in modes:
                runs[m].append(_measure(m, args, store))
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    wall = {m: float(np.median([r["wall_s"] for r in runs[m]])) for m in modes}
    print(f"load average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'':<18}{'wall (s)':>10}{'M scores/s':>12}{'vs sgemm':>10}{'vs zarr':>9}"
          f"{'peak MB':>9}")  # fmt: skip
    for m in modes:
        count = args.side * args.cohort if m == "cohort" else n
        vs_s = f"{wall['sgemm'] * count / n / wall[m]:>10.2f}" if "sgemm" in wall else f"{'':>10}"
        vs_z = f"{wall['zarr'] / wall[m]:>9.2f}" if "zarr" in wall and m != "cohort" else ""
        peak = max(r["peak_rss_mb"] for r in runs[m])
        print(f"{m:<18}{wall[m]:>10.2f}{count / wall[m] / 1e6:>12.1f}{vs_s}{vs_z:>9}"
              f"{peak:>9.0f}")  # fmt: skip
    done = [m for m in _EVALUATIONS if m in modes]
    for m in done:
        c = runs[m][0]["screen"]
        frac = f", {c['recomputed'] / c['pairs']:.2e} of them recomputed" if c["pairs"] else ""
        print(f"{m}: passes {runs[m][0]['passes']}, EER {runs[m][0]['eer']!r}; screened "
              f"{c['blocks']} blocks, {c['pairs']:,} pairs{frac}")  # fmt: skip
    if len(done) >= 2:
        first = runs[done[0]][0]
        same = all((r["eer"], r["min_dcf"]) == (first["eer"], first["min_dcf"])
                   for m in done for r in runs[m])  # fmt: skip
        print(f"{' == '.join(done)} (EER, minDCF bit for bit): {same}")
    aucs = [m for m in ("auc", "auc-unscreened") if m in modes]
    if len(aucs) == 2:
        same = len({r["auc"] for m in aucs for r in runs[m]}) == 1
        print(f"auc == auc-unscreened (exact AUC bit for bit): {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
