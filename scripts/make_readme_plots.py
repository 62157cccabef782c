"""Regenerate the README's plots (``docs/images/*.png``) from a simulated evaluation.

Three simulated systems (``bosaris_dask.simulate``: an over-confident LLR-like system, a
cosine-similarity-like one and one printed with 3 decimals) on 2,000 models x 3,000 segments
(6 million trials, 30,000 targets), evaluated exactly; then the standard plots of
``bosaris_dask.plots`` are written, and a low-false-alarm DET with the fixed-FMR operating points
1e-4, 1e-3 and 1e-2 marked (``det_fmr.png``), the ECE plot, and the Tippett plot of the three
systems calibrated (logistic regression on the same trials). Runs in about 20 s; the output is
the same on every run.

Usage::

    python scripts/make_readme_plots.py  # docs/images/*.png
    # (det, det_low_fa, nbe, ape, ece, tippett, det_fmr)
    python scripts/make_readme_plots.py --out-dir /tmp/plots --models 500 --segments 800
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from bosaris_dask.calibration import LinearCalibrator  # noqa: E402
from bosaris_dask.ece import DEFAULT_ECE_PLO  # noqa: E402
from bosaris_dask.metrics import evaluate  # noqa: E402
from bosaris_dask.plots import save_figure, save_plot, standard_figures  # noqa: E402
from bosaris_dask.simulate import simulate  # noqa: E402

NAMES = ["llr-like", "cosine", "3-decimals"]
FMR = [1e-4, 1e-3, 1e-2]
ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=ROOT / "docs" / "images")
    parser.add_argument("--models", type=int, default=2000)
    parser.add_argument("--segments", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    start = time.perf_counter()
    key, systems = simulate(args.models, args.segments, systems=len(NAMES), seed=args.seed)
    results = evaluate(systems, key, names=NAMES, ece_plo=DEFAULT_ECE_PLO, fmr=FMR)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    fixed = [v for v in results.variables if "fmr" in str(v)]
    for name, figure in standard_figures(results.drop_vars(fixed)).items():
        path = save_figure(figure, args.out_dir / f"{name}.png", dpi=110)
        print(f"wrote {path}")
    print(f"wrote {save_plot(results, 'ece', args.out_dir / 'ece.png', dpi=110)}")
    # a Tippett plot shows LLRs: the three systems calibrated on themselves (logistic regression)
    calibrated = [LinearCalibrator().fit(s, key).transform(s) for s in systems]
    llrs = evaluate(calibrated, key, names=[f"{n}, calibrated" for n in NAMES])
    print(f"wrote {save_plot(llrs, 'tippett', args.out_dir / 'tippett.png', dpi=110)}")
    det_fmr = save_plot(results, "det", args.out_dir / "det_fmr.png", dpi=110, window="low_fa")
    print(f"wrote {det_fmr}")
    print(f"{time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
