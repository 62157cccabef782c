"""SIGKILL the real ``bosaris-dask`` commands at random times while they write; count outcomes.

Usage::

    python benchmarks/kill_campaign.py [--kills 20] [--seed 0] [--case convert-zarr ...]
        [--scale 1000x4000] [--from-start] [--json FILE]

For each case of ``tests/_interrupt.py`` (convert to zarr, HDF5 and text, convert from text,
simulate, calibrate and fuse with ``--apply --out``), every kill starts the command as a
subprocess, half the time over the outputs of a different previous run, and SIGKILLs it at a
random time: uniformly in the write phase of its output (from the moment a hidden temporary of
it first holds bytes to the moment an uninterrupted run had renamed all its outputs into place,
measured once per case; with the run's own jitter some kills land after the renames), or with
``--from-start`` uniformly over the whole uninterrupted run (start-up and training included).

Then it records, for every output, whether it is the previous one byte for byte, absent (none
before), the complete new one (the kill came after the rename), or anything else (``corrupt``:
must never happen); whether anything but hidden temporaries was left beside the outputs, or in
the command's ``TMPDIR`` (scratch files of the text reader); whether a rerun (in this process)
succeeds and writes exactly what an uninterrupted run writes; and whether
:func:`~bosaris_dask.io.atomic.remove_stale` then leaves only the outputs.

Prints one Markdown row per case (``fault | inputs tried | outcome``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests._interrupt

from bosaris_dask.cli import main as cli_main  # noqa: E402
from bosaris_dask.io import atomic  # noqa: E402
from tests._interrupt import (  # noqa: E402
    CASES,
    CLI,
    EXTRA_CASES,
    Case,
    Inputs,
    check_complete,
    is_temporary_of,
    kill_when,
    make_inputs,
    snapshot,
    writing,
)


def timing(case: Case, data: Inputs, root: Path) -> tuple[float, float, float]:
    """Seconds from the start of an uninterrupted run of ``case`` until a temporary of its
    watched output holds bytes, until all its outputs are in place, and until it exits."""
    out = root / f"timing-{case.name}"
    out.mkdir()
    with subprocess.Popen(
        [*CLI, *case.command(data, out)], stderr=subprocess.PIPE, text=True
    ) as proc:
        start, ready, done = time.monotonic(), None, None
        while proc.poll() is None:
            if ready is None and writing(out, case.watched):
                ready = time.monotonic() - start
            if done is None and all((out / n).exists() for n in case.outputs):
                done = time.monotonic() - start
            time.sleep(0.002)
        total = time.monotonic() - start
        if proc.returncode != 0 or ready is None:
            raise RuntimeError(f"{case.name}: exit {proc.returncode}, {proc.stderr.read()}")
    shutil.rmtree(out)
    return ready, done or total, total


def _outcome(before, after, new_ok: bool) -> str:
    if after == before:
        return "previous" if before is not None else "absent"
    return "new" if new_ok else "corrupt"


def one_kill(case: Case, data: Inputs, out: Path, previous: bool, delay: float, from_start: bool):
    """Kill one run; return what every output became and how the rerun went."""
    names = (*case.outputs, *case.models)
    if previous:
        assert cli_main(case.previous(data, out)) == 0
    before = {n: snapshot(out / n) for n in names}
    ready = (lambda: True) if from_start else (lambda: writing(out, case.watched))
    scratch = out.parent / f"{out.name}-tmpdir"  # the command's TMPDIR
    scratch.mkdir()
    args = case.command(data, out)
    kill = kill_when(args, ready, delay_s=delay, env={**os.environ, "TMPDIR": str(scratch)})
    if not kill.killed and kill.returncode != 0:
        raise RuntimeError(f"{case.name} failed on its own: {kill.stderr}")
    after = {n: snapshot(out / n) for n in names}
    entries = [p.name for p in out.iterdir() if p.name not in names]
    record = {
        "previous": previous,
        "delay_s": round(delay, 3),
        "killed": kill.killed,
        "hidden_leftovers": sum(is_temporary_of(e, names) for e in entries),
        "stray": [e for e in entries if not is_temporary_of(e, names)],
        "tmpdir_files": sorted(p.name for p in scratch.iterdir()),
    }
    shutil.rmtree(scratch)
    changed = [n for n in case.outputs if after[n] != before[n]]
    try:
        check_complete(case, data, out, tuple(changed))
        new_ok = True
    except Exception:  # anything unreadable or different is corrupt
        new_ok = False
    record["outputs"] = {n: _outcome(before[n], after[n], new_ok) for n in case.outputs}
    record["set"] = "whole" if not changed or len(changed) == len(case.outputs) else "mixed"
    # the rerun, over whatever the kill left
    rerun_ok = cli_main(case.command(data, out)) == 0
    try:
        check_complete(case, data, out, case.outputs)
    except AssertionError:
        rerun_ok = False
    rerun_models = {n: snapshot(out / n) for n in case.models}
    record["models"] = {
        n: "previous" if after[n] == before[n] and before[n] is not None
        else "absent" if after[n] is None
        else "new" if after[n] == rerun_models[n] else "corrupt"
        for n in case.models
    }  # fmt: skip
    record["rerun_ok"] = rerun_ok
    for n in names:
        atomic.remove_stale(out / n, min_age_s=0)
    record["clean_after_remove_stale"] = sorted(os.listdir(out)) == sorted(names)
    return record


def _state(record: dict) -> str:
    """What a kill left of all the outputs of a run together."""
    states = set(record["outputs"].values())
    if "corrupt" in states:
        return "corrupt"
    return states.pop() if len(states) == 1 else "mixed"


CASE_TITLES = {
    "convert-zarr": "convert → zarr",
    "convert-h5": "convert → HDF5",
    "convert-txt": "convert → text",
    "convert-from-txt": "convert text → zarr",
    "simulate": "simulate (key + 2 systems, zarr)",
    "calibrate": "calibrate --apply --out (zarr) --model-out (JSON)",
    "fuse": "fuse --apply --out (HDF5) --model-out (JSON)",
}


def summarize(case: Case, records: list[dict], scale: tuple[int, int], mode: str) -> str:
    """One Markdown row: fault | inputs tried | outcome."""
    n = len(records)
    over = {True: Counter(), False: Counter()}
    for r in records:
        over[r["previous"]][_state(r)] += 1
    models = Counter(v for r in records for v in r["models"].values())
    killed = sum(r["killed"] for r in records)
    leftovers = sum(r["hidden_leftovers"] > 0 for r in records)
    stray = sum(bool(r["stray"]) for r in records)
    scratch = sum(bool(r["tmpdir_files"]) for r in records)
    reruns = sum(r["rerun_ok"] for r in records)
    clean = sum(r["clean_after_remove_stale"] for r in records)
    fault = f"SIGKILL of `{CASE_TITLES[case.name]}`"
    inputs = (
        f"{n} kills at uniformly random times of its {mode}, {scale[0]:,}×{scale[1]:,} trials; "
        f"{sum(over[True].values())} over a previous output, {sum(over[False].values())} over none"
    )
    p, a = over[True], over[False]
    outputs = "previous outputs" if len(case.outputs) > 1 else "a previous output"
    parts = [
        f"over {outputs}: {p['previous']} byte-identical, {p['new']} complete new "
        f"(the rename came first)",
        f"over none: {a['absent']} nothing under the name, {a['new']} complete new",
        f"{p['mixed'] + a['mixed']} mixed old/new sets, {p['corrupt'] + a['corrupt']} corrupt",
    ]
    if case.models:
        parts.append(
            f"model JSON: {models['previous']} previous, {models['absent']} absent, "
            f"{models['new']} complete new, {models['corrupt']} corrupt"
        )
    parts += [
        f"{killed} killed, {n - killed} exited first",
        f"hidden `.NAME.tmp-*` left by {leftovers} (remove_stale cleared {clean}/{n})",
        f"other files beside the outputs: {stray}, in TMPDIR: {scratch}",
        f"rerun OK {reruns}/{n}",
    ]
    return f"| {fault} | {inputs} | {'; '.join(parts)} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--case", action="append", choices=[c.name for c in CASES + EXTRA_CASES])
    parser.add_argument("--scale", default="1000x4000", help="MODELSxSEGMENTS of the big set")
    parser.add_argument(
        "--from-start",
        action="store_true",
        help="kill at a random time of the whole run, not of its write phase",
    )
    parser.add_argument("--json", help="also write every record here")
    args = parser.parse_args(argv)
    scale = tuple(int(v) for v in args.scale.split("x"))
    rng = random.Random(args.seed)
    mode = "whole run" if args.from_start else "write phase"
    root = Path(tempfile.mkdtemp(prefix="kill-campaign-"))
    results, rows = {}, []
    try:
        data = make_inputs(root, scale)  # type: ignore[arg-type]
        for case in CASES + EXTRA_CASES:
            if args.case and case.name not in args.case:
                continue
            ready, done, total = timing(case, data, root)
            window = total if args.from_start else done - ready
            print(f"{case.name}: writes from {ready:.2f} s, renamed at {done:.2f} s, "
                  f"exits at {total:.2f} s", file=sys.stderr)  # fmt: skip
            records = []
            for i in range(args.kills):
                out = root / f"{case.name}-{i}"
                out.mkdir()
                delay = rng.uniform(0, window)
                records.append(one_kill(case, data, out, i % 2 == 0, delay, args.from_start))
                shutil.rmtree(out)
                print(f"  {i}: {records[-1]}", file=sys.stderr)
            results[case.name] = {
                "ready_s": ready, "renamed_s": done, "total_s": total, "records": records
            }  # fmt: skip
            rows.append(summarize(case, records, scale, mode))  # type: ignore[arg-type]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("| fault | inputs tried | outcome |\n|---|---|---|")
    print("\n".join(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
