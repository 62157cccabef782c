"""The ``bosaris-dask`` command.

Every subcommand has ``--help``. Errors caused by input (a bad line, a missing id, a corrupt
store) print one line, ``bosaris-dask: error: ...``, and exit with status 1; ``--debug`` shows
the traceback instead. Progress bars go to stderr when it is a terminal (``-q`` silences them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bosaris_dask import __version__
from bosaris_dask.errors import BosarisError

__all__ = ["main", "build_parser"]


# --------------------------------------------------------------------------------------------
# subcommands
# --------------------------------------------------------------------------------------------


def _progress(args: argparse.Namespace) -> bool:
    return not args.quiet and sys.stderr.isatty()


def _say(args: argparse.Namespace, message: str) -> None:
    if not args.quiet:
        print(message, file=sys.stderr)


def cmd_convert(args: argparse.Namespace) -> int:
    from bosaris_dask import io

    obj = io.read(args.input, args.kind)
    io.write(obj, args.output, progress=_progress(args))
    _say(args, f"wrote {obj.attrs['bosaris_kind']} {dict(obj.sizes)} to {args.output}")
    return 0


def _count_label_targets(obj: Any) -> int:
    import pandas as pd

    m = pd.Series(obj.model_label.values).value_counts()
    s = pd.Series(obj.segment_label.values).value_counts()
    return int((m * s.reindex(m.index).fillna(0)).sum())


def cmd_info(args: argparse.Namespace) -> int:
    from bosaris_dask import io
    from bosaris_dask.trials import is_label_key, kind_of

    obj = io.read(args.path)
    kind = kind_of(obj)
    if args.key and kind != "scores":
        raise BosarisError(f"--key compares scores with a key, but {args.path} holds a {kind}")
    print(f"path:        {args.path} ({io.detect_format(args.path)})")
    print(f"kind:        {kind}{' (derived from class labels)' if is_label_key(obj) else ''}")
    if kind == "quality":
        print(obj)
        return 0
    n_m, n_s = obj.sizes["model"], obj.sizes["segment"]
    print(f"shape:       {n_m:,} models x {n_s:,} segments ({n_m * n_s:,} cells)")
    for dim in ("model", "segment"):
        ids = obj[dim].values
        more = f", ... ({len(ids):,} ids)" if len(ids) > 4 else ""
        print(f"{dim + ' ids:':<13}{', '.join(map(str, ids[:4]))}{more}")
    var = obj["score" if kind == "scores" else "trial_mask"]
    chunks = var.data.chunksize
    print(
        f"chunks:      {chunks[0]:,} x {chunks[1]:,} ({var.data.npartitions} chunks, {var.dtype})"
    )
    if kind == "key" and is_label_key(obj):
        n_tar = _count_label_targets(obj)
        print(f"trials:      {n_m * n_s:,} ({n_tar:,} targets, {n_m * n_s - n_tar:,} non-targets)")
    elif kind == "key":
        mask = obj.trial_mask.data
        n_tar, n_non = (int(v) for v in np.asarray(
            [(mask == 1).sum().compute(), (mask == -1).sum().compute()]))  # fmt: skip
        print(f"trials:      {n_tar + n_non:,} ({n_tar:,} targets, {n_non:,} non-targets)")
    else:
        name = "trial_mask" if kind == "ndx" else "score_mask"
        print(f"trials:      {int(obj[name].data.sum().compute()):,}")
    if args.key:
        _print_coverage(obj, args.key)
    return 0


def _print_coverage(scores: Any, key_path: str) -> None:
    """What ``evaluate`` would use of these scores: key trials with and without a score, and
    scores of trials not in the key (which it ignores)."""
    from bosaris_dask import io
    from bosaris_dask.trials import coverage

    c = coverage(scores, io.read(key_path))
    print(f"key trials:  {c['trials']:,} in {key_path} ({c['scored']:,} with a score, "
          f"{c['missing']:,} without)")  # fmt: skip
    print(f"not in key:  {c['unused']:,} of {c['scores']:,} scores (evaluate ignores them)")


def _write_simulation(key: Any, systems: list[Any], out: Path, progress: bool) -> list[Path]:
    """Write ``key.zarr`` and ``system-K.zarr`` into ``out``; all of them appear together.

    Every store is written under a hidden temporary name first; all are renamed into place
    together once complete (:func:`~bosaris_dask.io.atomic.atomic_paths`), so a run killed while
    writing leaves the previous set whole, never a new key next to the previous run's scores.
    """
    from bosaris_dask.io import write_zarr
    from bosaris_dask.io.atomic import atomic_paths

    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "key.zarr", *(out / f"system-{k}.zarr" for k in range(1, len(systems) + 1))]
    with atomic_paths(paths) as tmps:
        write_zarr(key, tmps[0])
        for tmp, scores in zip(tmps[1:], systems, strict=True):
            write_zarr(scores, tmp, progress=progress)
    return paths


def cmd_simulate(args: argparse.Namespace) -> int:
    from bosaris_dask.simulate import simulate

    with _cluster(args, size_hint=args.models * args.segments):
        start = time.perf_counter()
        key, systems = simulate(
            args.models, args.segments, systems=args.systems, target_rate=args.target_rate,
            seed=args.seed, dtype=np.dtype(args.dtype),
        )  # fmt: skip
        paths = _write_simulation(key, systems, Path(args.out), _progress(args))
        _say(args, f"wrote {', '.join(str(p) for p in paths)} "
                   f"in {time.perf_counter() - start:.1f} s")  # fmt: skip
    return 0


def _load(key_path: str, score_paths: Sequence[str]) -> tuple[Any, list[Any]]:
    """Open the key and the systems' scores (lazily: nothing is computed yet)."""
    from bosaris_dask import io

    return io.read(key_path, "key"), [io.read(p, "scores") for p in score_paths]


def _evaluate(args: argparse.Namespace, key: Any, systems: list[Any], score_paths: Sequence[str]):
    from bosaris_dask.metrics import evaluate

    return evaluate(
        systems, key, priors=args.prior, names=[_system_name(p) for p in score_paths],
        allow_missing=args.allow_missing, progress=_progress(args),
    )  # fmt: skip


def _system_name(path: str) -> str:
    name = Path(path.rstrip("/")).name
    for suffix in (".zarr", ".hdf5", ".h5", ".txt", ".tsv", ".scores"):
        name = name.removesuffix(suffix)
    return name


def _flatten_priors(args: argparse.Namespace) -> None:
    if args.prior is None:
        from bosaris_dask.metrics import DEFAULT_PRIORS

        args.prior = list(DEFAULT_PRIORS)
    else:
        args.prior = [p for group in args.prior for p in group]


def _write_json(path: str, document: dict[str, Any]) -> None:
    from bosaris_dask.io.atomic import atomic_path

    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(document, indent=2) + "\n")


def cmd_evaluate(args: argparse.Namespace) -> int:
    from bosaris_dask.report import format_table, to_json_dict

    _flatten_priors(args)
    # Under MPI every rank runs this function: inputs are opened only on the client rank.
    # Elsewhere they are opened first, so a wrong path fails before a cluster starts, and the
    # matrix size tells connect() whether worker processes are worth starting.
    loaded = None if args.cluster == "mpi" else _load(args.key, args.scores)
    size = None if loaded is None else loaded[0].sizes["model"] * loaded[0].sizes["segment"]
    with _cluster(args, size_hint=size):
        start = time.perf_counter()
        key, systems = loaded or _load(args.key, args.scores)
        results = _evaluate(args, key, systems, args.scores)
        elapsed = time.perf_counter() - start
        print(format_table(results))
        _say(args, f"\n{results.attrs['passes']} passes over the data in {elapsed:.1f} s")
        if args.json:
            _write_json(args.json, to_json_dict(results))
            _say(args, f"wrote {args.json}")
        if args.plots:
            from bosaris_dask.plots import save_standard_plots

            written = save_standard_plots(results, args.plots)
            _say(args, f"wrote {', '.join(str(p) for p in written)}")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from bosaris_dask.plots import save_plot

    _flatten_priors(args)
    loaded = _load(args.key, args.scores)
    with _cluster(args, size_hint=loaded[0].sizes["model"] * loaded[0].sizes["segment"]):
        results = _evaluate(args, *loaded, args.scores)
    options = {"window": args.window} if args.kind == "det" and args.window else {}
    save_plot(results, args.kind, args.out, **options)
    _say(args, f"wrote {args.out}")
    return 0


def _cluster(args: argparse.Namespace, size_hint: int | None = None):
    from bosaris_dask.cluster import connect_from_args

    quiet = {"announce": None} if args.quiet else {}
    return connect_from_args(args, size_hint=size_hint, **quiet)


def _read_quality(args: argparse.Namespace, path: str | None) -> Any:
    """A Quality object from a zarr quality store, or from model/segment quality tables."""
    from bosaris_dask import io
    from bosaris_dask.trials import make_quality

    if path is not None:
        return io.read(path)
    if args.model_quality is None and args.segment_quality is None:
        return None
    return make_quality(
        io.read_quality(args.model_quality) if args.model_quality else None,
        io.read_quality(args.segment_quality) if args.segment_quality else None,
    )


def _fit_and_apply(args: argparse.Namespace, model: Any, systems: list[Any], quality: Any) -> int:
    from bosaris_dask import io
    from bosaris_dask.calibration import apply_model

    key = io.read(args.key, "key")
    with _cluster(args, size_hint=key.sizes["model"] * key.sizes["segment"]):
        start = time.perf_counter()
        if quality is None:
            model.fit(key, systems if len(systems) > 1 or args.command == "fuse" else systems[0])
        else:
            model.fit(key, systems, quality)
        model.save_json(args.model_out)
        doc = model.to_dict()
        elapsed = time.perf_counter() - start
        if "iterations" in doc:
            fitted = (f"objective {doc['objective']:.6g} after {doc['iterations']} iterations, "
                      f"{doc['passes']} passes over the data")  # fmt: skip
        else:
            fitted = f"{len(doc['score_bounds']) // 2} PAV blocks"
        _say(args, f"{doc['kind']}: {fitted} ({elapsed:.1f} s); wrote {args.model_out}")
        if args.apply:
            if args.out is None:
                raise BosarisError("--apply needs --out (where to write the calibrated scores)")
            targets = [io.read(p, "scores") for p in args.apply]
            eval_quality = _read_quality(args, args.apply_quality) if quality is not None else None
            ndx = io.read(args.ndx) if args.ndx else None
            out = apply_model(model, targets, quality=eval_quality or quality, ndx=ndx)
            io.write(out, args.out, progress=_progress(args))
            _say(args, f"wrote {args.out}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from bosaris_dask import io
    from bosaris_dask.calibration import LinearCalibrator, PAVCalibrator

    model = LinearCalibrator(args.prior) if args.method == "linear" else PAVCalibrator()
    args.ndx = getattr(args, "ndx", None)
    return _fit_and_apply(args, model, [io.read(args.scores, "scores")], None)


def cmd_fuse(args: argparse.Namespace) -> int:
    from bosaris_dask import io
    from bosaris_dask.fusion import LinearFuser, QualityFuser

    quality = _read_quality(args, args.quality)
    if args.apply and len(args.apply) != len(args.scores):
        raise BosarisError(
            f"--apply takes the eval scores of the same {len(args.scores)} systems, in the same "
            f"order; got {len(args.apply)}"
        )
    model = QualityFuser(args.prior) if quality is not None else LinearFuser(args.prior)
    systems = [io.read(p, "scores") for p in args.scores]
    return _fit_and_apply(args, model, systems, quality)


def cmd_apply(args: argparse.Namespace) -> int:
    from bosaris_dask import io
    from bosaris_dask.calibration import apply_model, load_model

    model = load_model(args.model)
    systems = [io.read(p, "scores") for p in args.scores]
    quality = _read_quality(args, args.quality)
    ndx = io.read(args.ndx) if args.ndx else None
    with _cluster(args):
        io.write(apply_model(model, systems, quality=quality, ndx=ndx), args.out,
                 progress=_progress(args))  # fmt: skip
    _say(args, f"wrote {args.out}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from bosaris_dask.report import format_table, to_json_dict
    from bosaris_dask.simulate import simulate

    out = Path(args.out)
    _say(args, f"simulating {args.models} models x {args.segments} segments, 3 systems ...")
    key, systems = simulate(args.models, args.segments, systems=3, seed=args.seed)
    paths = _write_simulation(key, systems, out, progress=False)
    args.prior, args.allow_missing = None, False
    _flatten_priors(args)
    score_paths = [str(p) for p in paths[1:]]
    results = _evaluate(args, *_load(str(paths[0]), score_paths), score_paths)
    print(format_table(results))
    _write_json(str(out / "results.json"), to_json_dict(results))
    print(
        f"\nOutputs in {out}/: key.zarr (a label-derived key), "
        f"{', '.join(p.name for p in paths[1:])} (scores), results.json (the metrics)."
    )
    print(f"Try: bosaris-dask info {paths[1]}")
    print(f"     bosaris-dask evaluate --key {paths[0]} --scores {paths[1]} --prior 0.01")
    return 0


# --------------------------------------------------------------------------------------------
# the parser
# --------------------------------------------------------------------------------------------


def _prior(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"effective prior {text} is not strictly between 0 and 1")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return value


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress or status output")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")


def _quality_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quality", help="a quality store (zarr) with model and segment quality")
    parser.add_argument("--model-quality", help="model-side quality table (text or HDF5)")
    parser.add_argument("--segment-quality", help="segment-side quality table (text or HDF5)")


def _training_arguments(parser: argparse.ArgumentParser, nargs: int | str, what: str) -> None:
    """What calibrate and fuse share: the objective's prior, the model file, --apply."""
    parser.add_argument(
        "--prior",
        type=_prior,
        default=0.5,
        help="effective prior of the training objective (default 0.5)",
    )
    parser.add_argument("--model-out", required=True, metavar="MODEL.json")
    parser.add_argument("--apply", nargs=nargs, metavar="SCORES",
                        help=f"{what} to apply the trained model to")  # fmt: skip
    parser.add_argument("--ndx", help="with --apply: keep only these trials")
    parser.add_argument("--out", help="with --apply: where to write the resulting scores")


def _key_and_systems(parser: argparse.ArgumentParser, scores_help: str) -> None:
    parser.add_argument("--key", required=True, help="the key (text, HDF5 or zarr)")
    parser.add_argument("--scores", required=True, action="append", help=scores_help)


def _finish(parser: argparse.ArgumentParser, func: Any, *, cluster: bool = True) -> None:
    """The options every subcommand shares, and the function that runs it."""
    from bosaris_dask.cluster import add_cluster_arguments

    _common(parser)
    if cluster:
        add_cluster_arguments(parser)
    parser.set_defaults(func=func)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``bosaris-dask`` (all subcommands)."""

    parser = argparse.ArgumentParser(
        prog="bosaris-dask",
        description="Exact BOSARIS-style evaluation, calibration and fusion of classifier "
        "scores, out of core with dask.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("convert", help="convert a key, ndx or scores between text, HDF5, zarr",
                       description="Convert a Key, Ndx or Scores between formats, chosen by "
                       "extension: .zarr (directory store), .h5/.hdf5 (BOSARIS layout), "
                       "anything else is text.")  # fmt: skip
    p.add_argument("input", help="file or store to read")
    p.add_argument("output", help="file or store to write (replaced atomically)")
    p.add_argument("--kind", choices=["key", "ndx", "scores"],
                   help="what the input holds (default: detected from the content)")  # fmt: skip
    _finish(p, cmd_convert, cluster=False)

    p = sub.add_parser(
        "info",
        help="describe a key, ndx, scores or quality store",
        description="Print kind, shape, ids, trial and target counts, chunking.",
    )
    p.add_argument("path")
    p.add_argument(
        "--key",
        help="with scores: also count the key's trials with and without a score, and the "
        "scores of trials not in the key (which evaluate ignores)",
    )
    _finish(p, cmd_info, cluster=False)

    p = sub.add_parser(
        "simulate",
        help="write a synthetic key and K systems' scores as zarr",
        description="Write DIR/key.zarr (a label-derived key) and "
        "DIR/system-1.zarr ... DIR/system-K.zarr: K correlated, mis-calibrated "
        "synthetic systems, chunk by chunk (bounded memory at 1e9 trials).",
    )
    p.add_argument("--models", type=_positive, required=True)
    p.add_argument("--segments", type=_positive, required=True)
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--systems", type=_positive, default=3)
    p.add_argument(
        "--target-rate", type=float, default=0.005, help="fraction of target trials (default 0.005)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    _finish(p, cmd_simulate)

    p = sub.add_parser(
        "evaluate",
        help="exact DCF, EER, Cllr, ... of one or more systems",
        description="Evaluate systems against a key: actDCF and minDCF at each "
        "prior, ROCCH-EER, PRBEP, Cllr, minCllr (exact, any scale).",
    )
    _key_and_systems(p, "scores of one system; repeat for several systems")
    p.add_argument(
        "--prior",
        type=_prior,
        nargs="+",
        action="append",
        help="effective priors (default 0.5 0.1 0.01 0.001); may be repeated",
    )
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    p.add_argument(
        "--plots",
        metavar="DIR",
        help="also write DET, low-false-alarm DET, NBE and APE plots (PNG) into DIR",
    )
    p.add_argument(
        "--allow-missing",
        action="store_true",
        help="drop key trials without a score (and report how many)",
    )
    _finish(p, cmd_evaluate)

    p = sub.add_parser(
        "plot",
        help="draw a DET, NBE, APE or Cllr plot of one or more systems",
        description="Evaluate systems against a key and draw one plot; the "
        "format follows the extension of --out (.png, .pdf, .svg).",
    )
    p.add_argument(
        "kind",
        choices=["det", "nbe", "ape", "cllr"],
        help="det: DET curves; nbe: normalized Bayes error rate vs prior log-odds; "
        "ape: Bayes error-rate curves; cllr: Cllr = minCllr + calibration loss",
    )
    _key_and_systems(p, "scores of one system; repeat for several systems")
    p.add_argument(
        "--prior",
        type=_prior,
        nargs="+",
        action="append",
        help="operating points marked on the plot (default 0.5 0.1 0.01 0.001)",
    )
    p.add_argument("--window", help="DET axes window: classic (0.05-50%%), low_fa, wide, auto")
    p.add_argument("--allow-missing", action="store_true")
    p.add_argument("--out", required=True, metavar="FILE")
    _finish(p, cmd_plot)

    p = sub.add_parser(
        "calibrate",
        help="train a calibration (linear or PAV), optionally apply",
        description="Train a score-to-LLR calibration on a supervised set (KEY + "
        "SCORES) and write it as JSON; with --apply, calibrate other scores.",
    )
    p.add_argument(
        "--method",
        choices=["linear", "pav"],
        default="linear",
        help="linear: LLR = a + b*score (logistic regression); pav: monotone PAV map",
    )
    p.add_argument("--key", required=True)
    p.add_argument("--scores", required=True, help="the training scores")
    _training_arguments(p, 1, "scores")
    _finish(p, cmd_calibrate)

    p = sub.add_parser(
        "fuse",
        help="train a linear (or quality) fusion of systems, optionally apply",
        description="Train a logistic-regression fusion of several systems on a "
        "supervised set and write it as JSON; with quality measures, a quality "
        "fusion. With --apply, fuse the eval systems (same order).",
    )
    _key_and_systems(p, "training scores of one system; repeat for each system")
    _quality_arguments(p)
    p.add_argument("--apply-quality", help="quality store of the eval set (default: --quality)")
    _training_arguments(p, "+", "eval scores of the same systems, in the same order,")
    _finish(p, cmd_fuse)

    p = sub.add_parser(
        "apply",
        help="apply a saved calibration or fusion model to scores",
        description="Apply MODEL.json (from calibrate or fuse) to scores, lazily, "
        "chunk by chunk, and write the result.",
    )
    p.add_argument("--model", required=True, metavar="MODEL.json")
    p.add_argument(
        "--scores",
        required=True,
        action="append",
        help="scores of one system; repeat for each fused system, in training order",
    )
    _quality_arguments(p)
    p.add_argument("--ndx", help="keep only these trials")
    p.add_argument("--out", required=True)
    _finish(p, cmd_apply)

    p = sub.add_parser(
        "demo",
        help="simulate a small example and evaluate it",
        description="Generate a small realistic example (3 systems), evaluate it "
        "and say where the outputs are.",
    )
    p.add_argument("--out", default="bosaris-demo", metavar="DIR")
    p.add_argument("--models", type=_positive, default=200)
    p.add_argument("--segments", type=_positive, default=500)
    p.add_argument("--seed", type=int, default=0)
    _finish(p, cmd_demo, cluster=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``bosaris-dask``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (BosarisError, FileNotFoundError, PermissionError) as error:
        if args.debug:
            raise
        print(f"bosaris-dask: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bosaris-dask: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. piped into `head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
