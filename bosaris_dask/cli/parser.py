"""The argument parser of ``bosaris-dask``: every subcommand, its options and their checks."""

from __future__ import annotations

import argparse
from typing import Any

from bosaris_dask import __version__
from bosaris_dask.cli.data import cmd_convert, cmd_demo, cmd_info, cmd_simulate
from bosaris_dask.cli.embeddings import add_embedding_arguments, add_score_parser
from bosaris_dask.cli.scoring import cmd_apply, cmd_calibrate, cmd_evaluate, cmd_fuse, cmd_plot


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


def _key_and_systems(
    parser: argparse.ArgumentParser, scores_help: str, scores_required: bool = True
) -> None:
    parser.add_argument("--key", required=True, help="the key (text, HDF5 or zarr)")
    parser.add_argument("--scores", required=scores_required, action="append", help=scores_help)


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
    _key_and_systems(p, "scores of one system; repeat for several systems (or, or also, "
                        "--enrol and --test)", scores_required=False)  # fmt: skip
    add_embedding_arguments(p, required=False)
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

    add_score_parser(sub, _finish)
    return parser
