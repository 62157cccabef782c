"""ASVspoof 5 metrics at scale: passes and wall time against a plain evaluation of the same
stores, measured in the same run.

Usage::

    python benchmarks/bench_spoofing.py [--models 2000] [--segments 4000] [--repeat 1]
        [--store-dir DIR] [--run NAME ...]

Simulates a dense SASV set (``bosaris_dask.simulate``, float32, 0.5% targets): a label-derived
key (no stored mask) whose segments are spoofed with probability 0.3 (``segment_spoof``), and
three correlated systems as the ``cm``, ``asv`` and ``sasv`` score columns (spoofed segments'
scores shifted by -4, +3 and -1: spoofs fool the ASV system, not the CM). Writes the set as
zarr stores (:func:`bosaris_dask.spoofing.stores.write_set`) in a temporary directory and runs,
each the median of ``--repeat`` runs, interleaved:

* ``plain``: :func:`bosaris_dask.metrics.evaluate` of the CM scores against the CM key (bona
  fide vs spoof) at one prior;
* ``cm``: :func:`bosaris_dask.spoofing.scale.evaluate_cm` (track 1: minDCF, actDCF, the
  package's EER, ROCCH-EER, Cllr);
* ``sasv``: :func:`~bosaris_dask.spoofing.scale.evaluate_sasv` with the fixed ASV rates (min
  a-DCF over 2 member summaries of the SASV score, min t-DCF over the CM score);
* ``sasv-given``: the same with the ASV rates counted from the ASV score (2 more members);
* ``t-eer-memory``: ``sasv-given`` plus the t-EER, gathered into memory (one more read of the
  CM and ASV columns, :func:`~bosaris_dask.spoofing.metrics.t_eer`);
* ``t-eer-engine``: the same, the t-EER from the engine's refined summaries
  (``t_eer_max_trials=0``: what every key above ``T_EER_MAX_TRIALS`` cells gets); both must
  give the same t-EER and thresholds, which is checked.
 Prints passes and wall time of each (``t-eer-memory``: the engine's passes ``+1``, the
gather); the claim checked is
that no spoofing row takes more passes than ``plain`` (the SASV members skip their own ROC
hulls, which nothing reads, so they can take fewer). The class ``Spoofing`` follows the asv
convention (``setup``, ``time_*``, ``teardown``) so a test can run every body once.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bosaris_dask.metrics import evaluate
from bosaris_dask.simulate import simulate
from bosaris_dask.spoofing import scale, stores

NAMES = ("plain", "cm", "sasv", "sasv-given", "t-eer-memory", "t-eer-engine")


class Spoofing:
    """asv-style benchmark bodies over one simulated SASV set."""

    def setup(
        self, models: int = 2000, segments: int = 4000, store_dir: Path | None = None
    ) -> None:
        self.keep = store_dir is not None
        self.results: dict[str, dict] = {}
        if store_dir is not None and (Path(store_dir) / "key.zarr").exists():
            self.dir = Path(store_dir)  # a set an earlier run kept
            return
        self.dir = Path(store_dir or tempfile.mkdtemp(prefix="bench-spoof-"))
        key, systems = simulate(models, segments, systems=3, seed=7)
        spoof = np.random.default_rng(7).random(segments) < 0.3
        shifts = {"cm": -4.0, "asv": 3.0, "sasv": -1.0}  # spoofs fool the ASV, not the CM
        columns = {
            name: s.assign(score=s.score + np.where(spoof, shifts[name], 0).astype(np.float32))
            for name, s in zip(stores.COLUMNS, systems, strict=True)
        }
        stores.write_set(self.dir, scale.sasv_key(key, spoof), columns)

    def teardown(self, *args: object) -> None:
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _open(self):
        return stores.read_key(self.dir / "key.zarr"), stores.read_scores(self.dir)

    def time_plain(self) -> None:
        key, cols = self._open()
        ds = evaluate(cols["cm"], scale.cm_key(key), priors=[0.5])
        self.results["plain"] = {"passes": ds.attrs["passes"]}

    def time_cm(self) -> None:
        key, cols = self._open()
        self.results["cm"] = scale.evaluate_cm(cols["cm"], scale.cm_key(key))

    def time_sasv(self) -> None:
        key, cols = self._open()
        self.results["sasv"] = scale.evaluate_sasv(key, sasv=cols["sasv"], cm=cols["cm"],
                                                   t_eer=False)  # fmt: skip

    def time_sasv_given(self) -> None:
        key, cols = self._open()
        self.results["sasv-given"] = scale.evaluate_sasv(key, **cols, asv_rates="given",
                                                         t_eer=False)  # fmt: skip

    def _t_eer(self, name: str, limit: int) -> None:
        key, cols = self._open()
        self.results[name] = scale.evaluate_sasv(
            key, cm=cols["cm"], asv=cols["asv"], asv_rates="given", t_eer_max_trials=limit
        )

    def time_t_eer_memory(self) -> None:
        self._t_eer("t-eer-memory", 1 << 62)

    def time_t_eer_engine(self) -> None:
        self._t_eer("t-eer-engine", 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=2000)
    parser.add_argument("--segments", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--store-dir", type=Path, metavar="DIR",
                        help="write the set into DIR and keep it; reuse it if DIR holds one "
                             "(--models/--segments are then ignored)")  # fmt: skip
    parser.add_argument("--run", action="append", choices=NAMES,
                        help="run only these (plain always); repeatable; default all")  # fmt: skip
    args = parser.parse_args(argv)
    names = [n for n in NAMES if n == "plain" or not args.run or n in args.run]
    bench = Spoofing()
    bench.setup(args.models, args.segments, args.store_dir)
    try:
        walls: dict[str, list[float]] = {name: [] for name in names}
        for _ in range(args.repeat):  # interleaved repeats: the same cache state for each
            for name in names:
                start = time.perf_counter()
                getattr(bench, f"time_{name.replace('-', '_')}")()
                walls[name].append(time.perf_counter() - start)
                passes, load = bench.results[name]["passes"], os.getloadavg()[0]
                print(f"# {name}: {walls[name][-1]:.2f} s, {passes} passes (load {load:.2f})",
                      file=sys.stderr, flush=True)  # fmt: skip
        key = stores.read_key(bench.dir / "key.zarr")
        print(f"{key.sizes['model']:,} x {key.sizes['segment']:,} trials, median of "
              f"{args.repeat}; load average {os.getloadavg()[0]:.2f} after")  # fmt: skip
        print(f"{'':<12}{'passes':>8}{'wall (s)':>10}")
        for name in names:
            passes = bench.results[name]["passes"]
            passes = f"{passes}+1" if name == "t-eer-memory" else str(passes)  # + the gather
            print(f"{name:<12}{passes:>8}{float(np.median(walls[name])):>10.2f}")
        if set(names) != set(NAMES):
            return 0
        r = bench.results["sasv-given"]
        mem, eng = bench.results["t-eer-memory"], bench.results["t-eer-engine"]
        fields = ("t_eer", "t_eer_asv_threshold", "t_eer_cm_threshold")
        if any(mem[f] != eng[f] for f in fields):
            raise AssertionError(f"t-EER differs: {[mem[f] for f in fields]} in memory, "
                                 f"{[eng[f] for f in fields]} from the engine")  # fmt: skip
        print(
            f"t-EER {100 * eng['t_eer']:.4f} % (ASV threshold {eng['t_eer_asv_threshold']!r}"
            f", CM threshold {eng['t_eer_cm_threshold']!r}): equal in memory and at scale"
        )
        print(f"min a-DCF {r['min_a_dcf']:.4f}, min t-DCF {r['min_t_dcf']:.4f}, "
              f"CM EER (package) {100 * bench.results['cm']['eer']:.3f} %")  # fmt: skip
    finally:
        bench.teardown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
