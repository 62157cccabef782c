"""Each subcommand's parser: its description, its options and the function that runs it.

The option groups several subcommands share are in :mod:`bosaris_dask.cli.options`, the value
types and their checks in :mod:`bosaris_dask.cli.values`; the rules every subcommand follows in
:mod:`bosaris_dask.cli.parser`.

Examples
--------
>>> import argparse
>>> sub = argparse.ArgumentParser(prog="bosaris-dask").add_subparsers(dest="command")
>>> add_subcommands(sub)
>>> sorted(sub.choices)[:4]
['apply', 'calibrate', 'convert', 'demo']
"""

from __future__ import annotations

import argparse
from typing import Any

from bosaris_dask.cli import options, values
from bosaris_dask.cli.data import cmd_convert, cmd_demo, cmd_info, cmd_simulate
from bosaris_dask.cli.embeddings import add_embedding_arguments, add_score_parser
from bosaris_dask.cli.examples import epilog
from bosaris_dask.cli.scoring import cmd_evaluate, cmd_plot
from bosaris_dask.cli.spoof import cmd_spoof
from bosaris_dask.cli.training import cmd_apply, cmd_calibrate, cmd_fuse


def add_subcommands(sub: Any) -> None:
    """Add every subcommand's parser to ``sub`` (the ``add_subparsers`` of the main parser)."""
    for add in (_convert, _info, _simulate, _evaluate, _plot, _calibrate, _fuse, _apply,
                _spoof, _demo):  # fmt: skip
        add(sub)
    add_score_parser(sub, _add, _finish)


def _finish(parser: argparse.ArgumentParser, func: Any) -> None:
    """The options every subcommand shares, and the function that runs it."""
    from bosaris_dask.cluster import add_cluster_arguments

    if func in (cmd_evaluate, cmd_plot, cmd_calibrate, cmd_fuse, cmd_apply):
        options.llr_base_argument(parser, from_model=func is cmd_apply)
    options.common_arguments(parser)
    add_cluster_arguments(parser)
    parser.set_defaults(func=func)


def _add(sub: Any, name: str, help: str, description: str) -> argparse.ArgumentParser:
    return sub.add_parser(
        name, help=help, description=description, epilog=epilog(name), allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip


def _convert(sub: Any) -> None:
    from bosaris_dask.cli.choices import TEXT_SUFFIXES

    p = _add(sub, "convert", "convert a key, ndx or scores between text, HDF5, MAT, zarr",
             "Convert a Key, Ndx or Scores between formats, chosen by extension: .zarr "
             "(directory store), .h5/.hdf5 (BOSARIS layout), .mat (MATLAB), text for no "
             f"extension or {', '.join(TEXT_SUFFIXES[1:])}; any other is an error.")  # fmt: skip
    p.add_argument("input", help="file or store to read")
    p.add_argument("output", help="file or store to write (replaced atomically)")
    p.add_argument("--kind", choices=["key", "ndx", "scores"],
                   help="what the input holds (default: detected from the content)")  # fmt: skip
    options.output_arguments(p)
    options.format_argument(p)
    _finish(p, cmd_convert)


def _info(sub: Any) -> None:
    p = _add(sub, "info", "describe a key, ndx, scores, quality, embeddings or condition table",
             "Print kind, shape, ids, trial and target counts, chunking; of a condition table "
             "its side, ids and columns' values.")  # fmt: skip
    p.add_argument("path", help="file or store to describe")
    p.add_argument("--kind", choices=["key", "ndx", "scores", "conditions"],
                   help="what it holds (default: detected from the content; an Ndx stored "
                   "with a signed mask, as SIDEKIT writes it, needs ndx)")  # fmt: skip
    p.add_argument(
        "--key",
        help="with scores: also count the key's trials with and without a score, and the "
        "scores of trials not in the key (which evaluate ignores); with a condition table: "
        "whether it has every id (or trial) of the key",
    )
    options.format_arguments(p)
    _finish(p, cmd_info)


def _simulate(sub: Any) -> None:
    p = _add(sub, "simulate", "write a synthetic key and K systems' scores as zarr",
             "Write DIR/key.zarr (a label-derived key) and DIR/system-1.zarr ... "
             "DIR/system-K.zarr: K correlated, mis-calibrated synthetic systems, chunk by chunk "
             "(bounded memory at 1e9 trials).")  # fmt: skip
    _grid_options(p)
    p.add_argument("--out-dir", required=True, metavar="DIR", help="directory to write into")
    p.add_argument(
        "--systems",
        metavar="N",
        type=values.positive,
        default=3,
        help="systems to simulate, each DIR/system-K.zarr (default 3)",
    )
    p.add_argument(
        "--target-rate", type=float, default=0.005,
        help="fraction of target trials, made 1/n for n = round(1/RATE) speakers, so rates above "
             "2/3 are refused and others may come out near, not at, RATE (said with a warning; "
             "default 0.005)",
    )  # fmt: skip
    p.add_argument(
        "--dtype",
        choices=["float32", "float64"],
        default="float32",
        help="the scores' dtype (default float32)",
    )
    _finish(p, cmd_simulate)


def _grid_options(p: argparse.ArgumentParser, models: int | None = None,
                  segments: int | None = None) -> None:  # fmt: skip
    """``--n-models`` and ``--n-segments`` (required without a default; counts, where
    ``score --models`` is a model map) and ``--seed`` of the commands that simulate."""
    for flag, default, what in (
        ("--n-models", models, "how many enrolment models: the rows of the trial grid"),
        ("--n-segments", segments, "how many test segments, its columns: each model x "
                                   "segment is a trial"),
    ):  # fmt: skip
        said = "" if default is None else f" (default {default})"
        p.add_argument(flag, metavar="N", type=values.positive, required=default is None,
                       default=default, help=what + said)  # fmt: skip
    p.add_argument(
        "--seed",
        type=values.seed,
        default=0,
        help="seed of the simulation: the same seed, the same data (default 0)",
    )


def _systems_and_operating_points(p: argparse.ArgumentParser, priors: str, rates: str = "") -> None:
    """What evaluate and plot share: the key and the systems (files or embeddings), and the
    operating points (``priors``: what they are for; ``rates``: what a plot does with
    ``--fmr``/``--fnmr``)."""
    options.key_and_systems(p, "scores of one system; repeat for several systems (or, or "
                            "also, --enrol and --test)", own_key=True,
                            scores_required=False)  # fmt: skip
    add_embedding_arguments(p, required=False)
    options.prior_argument(p, priors)
    options.operating_point_argument(p)
    options.fixed_rate_arguments(p, rates)


def _evaluate(sub: Any) -> None:
    p = _add(sub, "evaluate", "exact DCF, EER, Cllr, ... of one or more systems",
             "Evaluate systems against a key: actDCF and minDCF at each prior, ROCCH-EER, "
             "PRBEP, Cllr, minCllr (exact, any scale).")  # fmt: skip
    _systems_and_operating_points(p, "at which to report actDCF and minDCF")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    p.add_argument(
        "--ece", action="store_true",
        help="also the empirical cross-entropy (raw, PAV-calibrated, neutral LLRs, in bits): "
        "in the table at each operating point's prior log-odds, in the JSON as \"ece\" on 41 "
        "prior log-odds from -10 to 10 (or --ece-plo) and those; with --by, per condition too; "
        "summed in pass 1 (no extra pass) at the cost of one softplus per trial per grid point",
    )  # fmt: skip
    options.ece_plo_argument(p, "implies --ece")
    p.add_argument(
        "--exact-auc", action="store_true",
        help="make the AUC exact at any scale: in the evaluation's own passes when every "
        "system's targets fit bosaris_dask.auc-limit, else one or two more passes when the "
        "smaller class of the score bins holding both classes fits it (else its bounds, and a "
        "warning); with --by, per condition too, from the same passes",
    )  # fmt: skip
    p.add_argument(
        "--plots-dir", metavar="DIR",
        help="also write DET, low-false-alarm DET, NBE and APE plots (PNG) into DIR, of the "
        "pooled trials (per condition: 'bosaris-dask plot ... --by')",
    )  # fmt: skip
    p.add_argument(
        "--allow-missing",
        action="store_true",
        help="drop key trials without a score (and report how many)",
    )
    options.condition_arguments(p)
    options.bootstrap_arguments(p)
    _finish(p, cmd_evaluate)


def _plot(sub: Any) -> None:
    p = _add(sub, "plot", "draw a DET, NBE, APE, Cllr, ECE or Tippett plot of one or more systems",
             "Evaluate systems against a key and draw one plot; the format follows the "
             "extension of --out (.png, .pdf, .svg).")  # fmt: skip
    p.add_argument(
        "kind",
        choices=["det", "nbe", "ape", "cllr", "ece", "tippett"],
        help="det: DET curves; nbe: normalized Bayes error rate vs prior log-odds; "
        "ape: Bayes error-rate curves; cllr: Cllr = minCllr + calibration loss; "
        "ece: empirical cross-entropy of the raw, PAV-calibrated and neutral LLRs vs prior "
        "log-odds (log10 with --llr-base 10); tippett: proportions of target and non-target "
        "LLRs at or above each threshold (log10 LR with --llr-base 10)",
    )
    _systems_and_operating_points(p, "marked on the plot", "det: mark each system's exact "
                                  "(FMR, FNMR) point there, the legend saying e.g. 'FMR 1e-3: "
                                  "FNMR 4.21%%'")  # fmt: skip
    options.ece_plo_argument(p, "ece: the plot's grid")
    p.add_argument(
        "--window",
        help="DET axes window: classic (0.05-50%%), low_fa, wide, auto, the toolkit's old, new, "
        "big, sre10, or PFA_MIN:PFA_MAX:PMISS_MIN:PMISS_MAX (probabilities, joined by ':' "
        "as in --operating-point)",
    )
    p.add_argument("--dr30", choices=["both", "miss", "fa", "none"], default="both",
                   help="DR30 marks: for misses, false alarms, both (default) or none")  # fmt: skip
    p.add_argument("--eval-key", help="an eval key: draw dev (--key) and eval in one plot")
    p.add_argument(
        "--eval-scores",
        action="append",
        help="eval scores of one system (same order as --scores); with --eval-key. Curves "
        "are named after their files: 'NAME [dev]' for --scores, 'NAME [eval]' for these",
    )
    p.add_argument("--contributions", action="store_true",
                   help="nbe: also draw the miss and false-alarm parts of each curve (always "
                   "with --eval-key)")  # fmt: skip
    p.add_argument("--ymax", type=values.axis_top, metavar="Y",
                   help="nbe: the top of the y axis (normalized DCF; default 1.2, as BOSARIS). "
                   "A curve above the top is clipped, its legend entry and a note saying how "
                   "high it goes")  # fmt: skip
    p.add_argument("--allow-missing", action="store_true",
                   help="drop key trials without a score (and report how many)")  # fmt: skip
    options.condition_arguments(p, cprimary=False)
    p.add_argument("--out", required=True, metavar="FILE", help="the image file to write")
    _finish(p, cmd_plot)


def _calibrate(sub: Any) -> None:
    p = _add(sub, "calibrate", "train a calibration (linear or PAV), optionally apply",
             "Train a score-to-LLR calibration on a supervised set (KEY + SCORES) and write it "
             "as JSON; with --apply, calibrate other scores.")  # fmt: skip
    p.add_argument(
        "--method",
        choices=["linear", "pav"],
        default="linear",
        help="linear (default): LLR = a + b*score (logistic regression); pav: monotone PAV map",
    )
    p.add_argument("--key", help="the key of the training set (or --enrol-classes and "
                   "--test-classes)")  # fmt: skip
    p.add_argument("--scores", help="the training scores (or --enrol and --test)")
    options.format_arguments(p)
    add_embedding_arguments(p, required=False)
    options.training_arguments(p, "scores to calibrate with the trained model (one system)",
                               one_system=True)  # fmt: skip
    _finish(p, cmd_calibrate)


def _fuse(sub: Any) -> None:
    p = _add(sub, "fuse", "train a linear (or quality) fusion of systems, optionally apply",
             "Train a logistic-regression fusion of several systems on a supervised set and "
             "write it as JSON; with quality measures, a quality fusion. With --apply, fuse "
             "the eval systems (same order).")  # fmt: skip
    options.key_and_systems(p, "training scores of one system; repeat for each system (the "
                            "scores from --enrol and --test are one more, the last)",
                            scores_required=False, key_required=False)  # fmt: skip
    options.format_arguments(p)
    add_embedding_arguments(p, required=False)
    options.quality_arguments(p)
    p.add_argument("--apply-quality", help="quality store of the eval set (default: --quality)")
    p.add_argument(
        "--qtrans",
        metavar="MATRIX.txt",
        help="quality fusion: a text matrix (r rows, one column per quality measure) mapping "
        "both sides' quality vectors before fusion (the toolkit's Qtrans)",
    )
    options.training_arguments(p, "eval scores of one system; repeat for each system, in the "
                               "order of --scores")  # fmt: skip
    _finish(p, cmd_fuse)


def _apply(sub: Any) -> None:
    p = _add(sub, "apply", "apply a saved calibration or fusion model to scores",
             "Apply MODEL.json (from calibrate or fuse) to scores, lazily, chunk by chunk, and "
             "write the result. Text scores (and scores from embeddings of a text --ndx) "
             "written as text keep the line order of --ndx, else of the first file (quality "
             "measures too), unless a store or a file over 1 GiB makes it a grid (then a note "
             "says so).")  # fmt: skip
    p.add_argument("--model", required=True, metavar="MODEL.json",
                   help="a model written by calibrate or fuse --model-out")  # fmt: skip
    p.add_argument(
        "--scores", action="append", metavar="SCORES",
        help="scores of one system; repeat for each fused system, in training order (the "
        "scores from --enrol and --test, of the --ndx trials, come last)",
    )  # fmt: skip
    options.format_arguments(p)
    add_embedding_arguments(p, required=False, class_tables=False)
    options.quality_arguments(p)
    p.add_argument("--ndx", help="keep only these trials")
    options.fill_missing_argument(p)
    p.add_argument("--out", required=True, metavar="STORE", help="file or store to write")
    options.output_arguments(p)
    _finish(p, cmd_apply)


def _spoof(sub: Any) -> None:
    p = _add(sub, "spoof", "ASVspoof 5 metrics: CM EER/DCF/Cllr, a-DCF, t-DCF, t-EER",
             "Read ASVspoof 5 key and score files (the evaluation package's formats) or zarr "
             "stores, and print the challenge's metrics with its costs, exact at any scale. cm "
             "(track 1): minDCF, actDCF, the package's EER, ROCCH-EER, Cllr. sasv (track 2): "
             "min a-DCF, min t-DCF, exact t-EER (in memory up to 2e7 trials, from the passes "
             "beyond). --out-dir DIR "
             "converts the files to zarr stores instead; --set-dir DIR reads them.")  # fmt: skip
    p.add_argument("task", choices=["cm", "sasv"],
                   help="cm: 'filename cm-label' key and 'filename cm-score' scores; sasv: "
                   "'spk filename cm-label asv-label' key and 'spk filename cm-score asv-score "
                   "sasv-score' scores")  # fmt: skip
    p.add_argument(
        "--key",
        help="the protocol (key) file (.gz is read as gzip); cm: or a key "
        "store (bona fide +1, spoof -1)",
    )
    p.add_argument("--scores", help="the score file (.gz is read as gzip); cm: or a Scores store")
    p.add_argument(
        "--set-dir",
        metavar="DIR",
        help="read a set of zarr stores (key.zarr, cm.zarr; sasv: asv.zarr, "
        "sasv.zarr) instead of --key and --scores",
    )
    p.add_argument(
        "--out-dir",
        metavar="DIR",
        help="write the key and scores as such a set of zarr stores into DIR and stop",
    )
    p.add_argument("--asv-rates", choices=["fixed", "given"],
                   help="sasv: the ASV rates of the t-DCF: the package's fixed ones (default) "
                   "or counted from the asv-score column at the ASV EER threshold")  # fmt: skip
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    p.add_argument("--allow-missing", action="store_true",
                   help="drop key trials without a score (and report how many)")  # fmt: skip
    _finish(p, cmd_spoof)


def _demo(sub: Any) -> None:
    p = _add(sub, "demo", "simulate a small example and evaluate it",
             "Generate a small realistic example (3 systems), evaluate it and say where the "
             "outputs are.")  # fmt: skip
    p.add_argument("--out-dir", default="bosaris-demo", metavar="DIR",
                   help="directory to write into (default bosaris-demo)")  # fmt: skip
    _grid_options(p, models=200, segments=500)
    _finish(p, cmd_demo)
