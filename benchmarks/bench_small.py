"""Small evaluations: the fixed cost a notebook cell, a CLI call on a small list or a test pays,
against another checkout, in one run.

Usage::

    python benchmarks/bench_small.py [--code NAME=PATH ...] [--repeat 15] [--json FILE]

For each code version (``--code before=/tmp/base``: a checkout whose package is imported through
``PYTHONPATH``; default: this checkout) a fresh process evaluates each case once to warm up, then
``--repeat`` times, and reports the median wall time of ``evaluate()``:

* ``tiny``: 6 x 20 trials in 2 x 2 chunks, two priors (a unit test's size);
* ``demo``: the demo's size, 200 x 500 trials of three systems in 4 x 4 chunks, four priors
  and a 201-point sweep;
* ``conditions``: 70 x 90 trials in 3 x 3 chunks, two priors, four conditions (``--by
  model.g --by same.l``).

Versions run interleaved (each version's process once per round, ``--repeat`` evaluations per
case in it), so a noisy minute on a shared machine hits all of them alike. It prints each case's
median per version, the ratio to the first version, and checks that every version gives the
same metrics, bit for bit.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CASES = ("tiny", "demo", "conditions")


def _inputs(case: str):
    import numpy as np

    from bosaris_dask.conditions import condition_table
    from bosaris_dask.trials import make_key, make_scores

    rng = np.random.default_rng(7)
    shape, chunks, systems = {
        "tiny": ((6, 20), (3, 10), 1),
        "demo": ((200, 500), (50, 125), 3),
        "conditions": ((70, 90), (24, 30), 1),
    }[case]
    mids = [f"m{i}" for i in range(shape[0])]
    sids = [f"s{j}" for j in range(shape[1])]
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=shape, p=[0.9, 0.1])
    mask[0, 0], mask[-1, -1] = 1, -1
    scores = [
        make_scores(mids, sids, (rng.normal(size=shape) + 2.5 * (mask == 1)).astype(np.float32),
                    chunks=chunks)
        for _ in range(systems)
    ]  # fmt: skip
    key = make_key(mids, sids, mask, chunks=chunks)
    kwargs: dict = {"priors": [0.5, 0.01]}
    if case == "demo":
        kwargs = {"priors": [0.5, 0.1, 0.01, 0.001], "sweep": np.linspace(-10, 10, 201)}
    if case == "conditions":
        tables = [
            condition_table("model", mids, {"g": rng.choice(["f", "m"], shape[0]).tolist(),
                                            "l": rng.choice(["a", "b"], shape[0]).tolist()}),
            condition_table("segment", sids, {"l": rng.choice(["a", "b"], shape[1]).tolist()}),
        ]  # fmt: skip
        kwargs.update(conditions=tables, by=["model.g", "same.l"])
    return scores, key, kwargs


def _child(repeat: int) -> None:
    from bosaris_dask.metrics import evaluate

    out: dict = {}
    for case in CASES:
        scores, key, kwargs = _inputs(case)
        ds = evaluate(scores, key, **kwargs)  # warm-up: imports, compiled kernels
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            ds = evaluate(scores, key, **kwargs)
            times.append(time.perf_counter() - start)
        out[case] = {"times": times, "metrics": [ds.eer.values.tolist(), ds.cllr.values.tolist(),
                                                 ds.act_dcf.values.tolist()]}  # fmt: skip
    print(json.dumps(out))


def _pair(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected NAME=PATH, got {text!r}")
    return name, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=_pair, action="append")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=1, help="interleaved processes per version")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.repeat)
        return 0
    codes = dict(args.code or [("this", str(Path(__file__).resolve().parents[1]))])
    runs: dict[str, list[dict]] = {name: [] for name in codes}
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    for _ in range(args.rounds):
        for name, path in codes.items():
            env = dict(os.environ, PYTHONPATH=path)
            out = subprocess.run(
                [sys.executable, __file__, "--child", "--repeat", str(args.repeat)],
                capture_output=True, text=True, env=env,
            )  # fmt: skip
            if out.returncode:
                raise SystemExit(f"{name} failed:\n{out.stderr[-3000:]}")
            runs[name].append(json.loads(out.stdout.splitlines()[-1]))
    first = next(iter(codes))
    print(f"{started}, load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores; median "
          f"of {args.repeat} x {args.rounds} evaluations per case; ratios to {first}")  # fmt: skip
    summary: dict = {}
    for case in CASES:
        medians = {
            name: statistics.median(t for r in rs for t in r[case]["times"])
            for name, rs in runs.items()
        }
        summary[case] = medians
        cells = "  ".join(
            f"{name} {m * 1e3:7.1f} ms (x{m / medians[first]:.2f})" for name, m in medians.items()
        )
        print(f"  {case:<11} {cells}")
    same = all(
        r[case]["metrics"] == runs[first][0][case]["metrics"]
        for rs in runs.values() for r in rs for case in CASES
    )  # fmt: skip
    print(f"  every version's metrics identical: {same}")
    if args.json:
        args.json.write_text(json.dumps({"date": started, "summary": summary, "runs": runs}))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
