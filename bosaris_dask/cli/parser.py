"""The argument parser of ``bosaris-dask``: every subcommand, its options and their checks.

The rules every subcommand follows (issue 15; ``tests/test_cli_consistency.py`` checks them):

- an option that takes several values is a repeatable flag with one value each
  (``--scores A --scores B``, ``--prior 0.1 --prior 0.01``, ``fuse --apply A --apply B``);
- ``--prior`` is an evaluation operating point; the prior of a training objective is
  ``--train-prior``;
- ``--out`` is a file or store; a directory is ``--out-dir`` (or ``--plots-dir``);
- every subcommand takes the options that choose where the work runs (``--cluster`` ...);
- every ``--help`` ends with examples that run on the demo's data
  (:mod:`bosaris_dask.cli.examples`).

Spellings of earlier releases (``--prior 0.1 0.01``, ``fuse --apply A B``, ``calibrate
--prior``, ``simulate --out DIR``) fail with a one-line error that shows the new spelling.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from bosaris_dask import __version__
from bosaris_dask.cli.data import cmd_convert, cmd_demo, cmd_info, cmd_simulate
from bosaris_dask.cli.embeddings import add_embedding_arguments, add_score_parser
from bosaris_dask.cli.examples import epilog
from bosaris_dask.cli.scoring import cmd_apply, cmd_calibrate, cmd_evaluate, cmd_fuse, cmd_plot
from bosaris_dask.cli.spoof import cmd_spoof

#: Options renamed in issue 15: ``{(command, old): new}``.
RENAMED = {
    ("calibrate", "--prior"): "--train-prior",
    ("fuse", "--prior"): "--train-prior",
    ("simulate", "--out"): "--out-dir",
    ("demo", "--out"): "--out-dir",
    ("evaluate", "--plots"): "--plots-dir",
}


class _StoreOnce(argparse._StoreAction):
    """``store``, refusing an input option given twice: a second file silently replaced the
    first (``calibrate --scores a --scores b`` trained on ``b``, where ``fuse`` takes both).
    Other one-value options keep argparse's last-wins, which job scripts use to override a
    default (``... --worker-timeout 3600 $EXTRA_ARGS``)."""

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[override]
        given = namespace.__dict__.setdefault(_GIVEN, set())
        is_input = self.dest in _INPUTS and self.type is None  # a path (simulate's --models: N)
        if option_string is not None and is_input and self.dest in given:
            parser.error(f"{option_string} was given twice: it takes one input here")
        given.add(self.dest)
        setattr(namespace, self.dest, values)


_GIVEN = "_options_given"

#: Options that name an input: given twice, one of the two would be silently dropped.
_INPUTS = frozenset({
    "key", "scores", "ndx", "model", "enrol", "test", "models", "cohort", "center", "quality",
    "apply_quality", "model_quality", "segment_quality", "eval_key", "enrol_classes",
    "test_classes", "set_dir",
})  # fmt: skip


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors show the new spelling of an option that changed, and
    that refuses a one-value option given twice."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._argv = list(sys.argv[1:] if args is None else args)
        parsed, rest = super().parse_known_args(self._argv, namespace)
        parsed.__dict__.pop(_GIVEN, None)
        return parsed, rest

    def error(self, message: str) -> NoReturn:
        argv = getattr(self, "_argv", [])
        command = self.prog.split()[-1]  # a subcommand's parser: "bosaris-dask evaluate"
        if command not in _COMMANDS:
            command = next((a for a in argv if a in _COMMANDS), "")
        hint = _old_spelling(argv, command, message)
        super().error(hint or message)


def _old_spelling(argv: list[str], command: str, message: str) -> str | None:
    """The one-line error for an option spelled as in an earlier release, else ``None``."""
    for old in argv:
        new = RENAMED.get((command, old))
        if new is not None:
            return f"{command} {old} is now {new} ({_WHY[new]})"
    prefix = "unrecognized arguments: "
    if not message.startswith(prefix):
        return None
    unknown = message[len(prefix) :].split()
    for i, option in enumerate(argv):
        if not option.startswith("--"):
            continue
        values = []
        for value in argv[i + 1 :]:
            if value.startswith("-"):
                break
            values.append(value)
        if len(values) > 1 and values[1] in unknown:
            spelled = " ".join(f"{option} {v}" for v in values)
            return f"argument {option}: one value per flag; repeat the flag: {spelled}"
    return None


_WHY = {
    "--train-prior": "--prior means evaluation operating points",
    "--out-dir": "--out is always a file or store",
    "--plots-dir": "a directory",
}


def _number(text: str) -> float:
    """``text`` as a float; an argparse error ``not a number`` else."""
    try:
        return float(text)
    except ValueError:
        several = "," in text and all(_is_float(t) for t in text.split(","))
        hint = " (one value per flag: repeat the flag for several)" if several else ""
        raise argparse.ArgumentTypeError(f"not a number: {text!r}{hint}") from None


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _integer(text: str, low: int, must: str) -> int:
    """``text`` as an integer of at least ``low``; an argparse error ``must ...: text`` else."""
    try:
        value = int(text)
    except ValueError:
        value = low - 1
    if value < low:
        raise argparse.ArgumentTypeError(f"must be {must}: {text}")
    return value


def _prior(text: str) -> float:
    value = _number(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"effective prior {text} is not strictly between 0 and 1")
    if value < sys.float_info.min:
        raise argparse.ArgumentTypeError(f"effective prior {text} is below float64's smallest "
                                         f"normal number ({sys.float_info.min:.3g})")  # fmt: skip
    return value


def _penalty(text: str) -> float:
    value = _number(text)
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"the L2 penalty {text} is not a finite number >= 0")
    return value


def _axis_top(text: str) -> float:
    value = _number(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"the top of the axis {text} is not a finite number > 0")
    return value


def _rate(text: str) -> float:
    value = _number(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"target rate {text} is not in (0, 1]")
    return value


def _fixed_rate_arguments(parser: argparse.ArgumentParser, plot: str = "") -> None:
    """``--fmr`` and ``--fnmr``; ``plot``: what a plot does with them (evaluate: the DET
    files of --plots-dir mark them)."""
    plot = plot or "--plots-dir: the DET plots mark them"
    fnmr_plot = plot.replace("'FMR 1e-3: FNMR 4.21%%'", "'FNMR 5e-2: FMR 3.85%%'")
    parser.add_argument(
        "--fmr", type=_rate, action="append", metavar="F",
        help="report FNMR and TAR at false-match rate F (ISO/IEC 19795-1): the threshold is "
        "the smallest score with FMR <= F (exact; ties can make the actual FMR lower, which "
        f"is reported); repeat, e.g. --fmr 1e-4 --fmr 1e-3; {plot}",
    )  # fmt: skip
    parser.add_argument(
        "--fnmr", type=_rate, action="append", metavar="F",
        help="report FMR at false-non-match rate F: the threshold is the largest score with "
        f"FNMR <= F; repeatable; {fnmr_plot}",
    )  # fmt: skip


def _ece_plo(text: str) -> list[float]:
    """One ``--ece-plo`` value: a prior log-odds, or ``LO:HI:N`` (N evenly spaced, both ends)."""
    import numpy as np

    parts = text.split(":")
    try:
        if len(parts) == 1:
            values = [float(text)]
        elif len(parts) == 3:
            lo, hi, n = float(parts[0]), float(parts[1]), int(parts[2])
            if n < 2 or not lo < hi:
                raise argparse.ArgumentTypeError(f"{text}: LO:HI:N needs LO < HI and N >= 2 points")
            values = np.linspace(lo, hi, n).tolist()
        else:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a prior log-odds or LO:HI:N range: {text!r}"
        ) from None
    if not all(np.isfinite(values)):
        raise argparse.ArgumentTypeError(f"prior log-odds must be finite: {text!r}")
    return values


def _ece_plo_argument(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--ece-plo", type=_ece_plo, action="append", metavar="A|LO:HI:N",
        help="a prior log-odds of the ECE grid (natural, log10 with --llr-base 10), or LO:HI:N "
        "for N evenly spaced from LO to HI (write --ece-plo=-10:10:81 when LO is negative); "
        f"repeatable; {what} (default grid: 41 points, natural log-odds -10 to 10, every 0.25 "
        "within +-3)",
    )  # fmt: skip


def _operating_point(text: str) -> Any:
    from bosaris_dask.costs import OperatingPoint
    from bosaris_dask.errors import OptionError

    try:
        return OperatingPoint.parse(text)
    except OptionError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _operating_point_argument(parser: argparse.ArgumentParser) -> None:
    from bosaris_dask.profiles import PROFILES

    parser.add_argument(
        "--profile", choices=list(PROFILES),
        help="a published cost profile (sre18, sre21: Cprimary; voxsrc; asvspoof5-cm; ijbc: "
        "TAR at FMR 1e-6..1e-1; "
        "asvspoof5-sasv: see the spoof command); "
        "it sets the operating points unless --prior or --operating-point is given",
    )  # fmt: skip
    parser.add_argument(
        "--operating-point", type=_operating_point, action="append", metavar="PTAR:CMISS:CFA",
        help="an operating point as target prior and costs, e.g. 0.01:10:1 or 0.05:1:1 "
        "(reported at its effective prior, with its Bayes and minDCF thresholds); repeatable",
    )  # fmt: skip


def _condition_arguments(parser: argparse.ArgumentParser, cprimary: bool = True) -> None:
    parser.add_argument(
        "--conditions", action="append", metavar="TABLE",
        help="a condition table (tab-separated, header 'model' or 'segment' then attribute "
        "columns; or zarr/HDF5); repeat for several tables",
    )  # fmt: skip
    parser.add_argument(
        "--by", action="append", metavar="SPEC",
        help="model.COL, segment.COL or same.COL: also report every condition of COL; repeat "
        "for the Cartesian product of several",
    )  # fmt: skip
    if not cprimary:
        return
    parser.add_argument(
        "--equalize", action="store_true",
        help="also the NIST partition-equalized EER, actDCF and minDCF over the --by "
        "conditions (each class's trials weighted so every condition counts the same)",
    )  # fmt: skip
    parser.add_argument(
        "--cprimary-priors", action="append", type=_prior, metavar="P",
        help="an effective prior of Cprimary (the mean normalized actDCF and minDCF over "
        "them); repeat, e.g. --cprimary-priors 0.01 --cprimary-priors 0.05 (SRE21)",
    )  # fmt: skip


def _bootstrap_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap", type=_positive, metavar="B",
                        help="B two-way bootstrap resamples: confidence intervals of every "
                        "metric (needs --conditions and --resample)")  # fmt: skip
    parser.add_argument("--resample", action="append", metavar="SPEC",
                        help="model.COL or segment.COL of a condition table: the groups (e.g. "
                        "speakers) resampled on that side; repeat for both sides")  # fmt: skip
    parser.add_argument("--ci", type=float, metavar="LEVEL",
                        help="the intervals' level (default 0.95)")  # fmt: skip
    parser.add_argument("--seed", type=_seed, metavar="S",
                        help="the resamples' random seed (an integer >= 0)")  # fmt: skip
    parser.add_argument("--compare", action="store_true",
                        help="paired bootstrap comparison of every pair of systems")  # fmt: skip
    parser.add_argument("--bootstrap-method", choices=("multinomial", "poisson"),
                        help="how a side's group multiplicities are drawn: as many groups as "
                        "it has, with replacement (multinomial, the default), or each from "
                        "Poisson(1)")  # fmt: skip


def _llr_base_argument(parser: argparse.ArgumentParser, from_model: bool = False) -> None:
    from bosaris_dask.llr_base import LLR_BASES

    default = "the base the model was trained with" if from_model else "e"
    parser.add_argument(
        "--llr-base", choices=LLR_BASES, default=None if from_model else "e",
        help=f"base of the LLRs read and written (default {default}; 10 for log10 LRs: scores "
        "are multiplied by ln 10 on input and written LLRs divided by it)",
    )  # fmt: skip


def _seed(text: str) -> int:
    return _integer(text, 0, "an integer >= 0")


def _positive(text: str) -> int:
    return _integer(text, 1, "a positive integer")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress or status output")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")


def _operating_points(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--prior", type=_prior, action="append", metavar="P",
        help=f"an effective prior (operating point) {what}; repeat for several "
        "(default: 0.5, 0.1, 0.01, 0.001)",
    )  # fmt: skip


def _quality_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quality", help="a quality store (zarr) with model and segment quality")
    parser.add_argument("--model-quality", help="model-side quality table (text or HDF5)")
    parser.add_argument("--segment-quality", help="segment-side quality table (text or HDF5)")


def _training_arguments(parser: argparse.ArgumentParser, apply_help: str) -> None:
    """What calibrate and fuse share: the objective's prior, the model file, --apply."""
    parser.add_argument(
        "--train-prior", type=_prior, default=None, metavar="P",
        help="effective prior of the logistic training objective (default 0.5; not for PAV)",
    )  # fmt: skip
    parser.add_argument("--model-out", required=True, metavar="MODEL.json",
                        help="where to write the trained model (JSON)")  # fmt: skip
    parser.add_argument(
        "--l2", type=_penalty, default=0.0, metavar="LAMBDA",
        help="L2 penalty LAMBDA/2 * ||weights||^2 on the logistic objective (not on the "
        "offset; default 0: none, as BOSARIS): a best fit where the classes are separable or "
        "a system is constant or repeated",
    )  # fmt: skip
    parser.add_argument(
        "--max-iter", type=_positive, default=None, metavar="N",
        help="at most N trust-region iterations, one pass each (default 100); a fit that stops "
        "before its minimum says so",
    )  # fmt: skip
    parser.add_argument("--apply", action="append", metavar="SCORES", help=apply_help)
    parser.add_argument(
        "--allow-missing", action="store_true",
        help="drop key trials without a score from training (and report how many)",
    )  # fmt: skip
    parser.add_argument("--ndx", help="with --apply: keep only these trials")
    _fill_missing_argument(parser)
    parser.add_argument("--out", metavar="STORE",
                        help="with --apply: file or store for the resulting scores")  # fmt: skip


def _fill_missing_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fill-missing",
        type=float,
        metavar="VALUE",
        help="give the --ndx trials without a score this score in the output (after "
        "calibration 0 means no information)",
    )


def _key_and_systems(
    parser: argparse.ArgumentParser, scores_help: str, *, own_key: bool = False,
    scores_required: bool = True, key_required: bool = True,
) -> None:  # fmt: skip
    if not own_key:
        parser.add_argument("--key", required=key_required,
                            help="the key (text, HDF5 or zarr)" + ("" if key_required else
                            "; or --enrol-classes and --test-classes"))  # fmt: skip
    else:
        parser.add_argument("--key", help="the key (text, HDF5 or zarr); without it, the labels "
                            "of the first --scores file (enrol test score label)")  # fmt: skip
    parser.add_argument("--scores", required=scores_required, action="append",
                        metavar="SCORES", help=scores_help)  # fmt: skip
    if own_key:
        _format_argument(parser)


def _format_argument(parser: argparse.ArgumentParser) -> None:
    from bosaris_dask.io.text import TEXT_FORMATS

    parser.add_argument(
        "--format", choices=TEXT_FORMATS,
        help="layout of the text inputs (default: detected from their first lines): bosaris "
        "(model segment score|label), nist (header), voxceleb (label enrol test), wespeaker "
        "(enrol test score label), 3dspeaker (enrol test label score)",
    )  # fmt: skip


def _finish(parser: argparse.ArgumentParser, func: Any) -> None:
    """The options every subcommand shares, and the function that runs it."""
    from bosaris_dask.cluster import add_cluster_arguments

    if func in (cmd_evaluate, cmd_plot, cmd_calibrate, cmd_fuse, cmd_apply):
        _llr_base_argument(parser, from_model=func is cmd_apply)
    _common(parser)
    add_cluster_arguments(parser)
    parser.set_defaults(func=func)


def _add(sub: Any, name: str, help: str, description: str) -> argparse.ArgumentParser:
    return sub.add_parser(
        name, help=help, description=description, epilog=epilog(name), allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``bosaris-dask`` (all subcommands).

    Examples
    --------
    >>> args = build_parser().parse_args(["evaluate", "--key", "k", "--scores", "a",
    ...                                   "--scores", "b", "--prior", "0.1", "--prior", "0.01"])
    >>> args.scores, args.prior
    (['a', 'b'], [0.1, 0.01])
    """
    from bosaris_dask.io import TEXT_SUFFIXES

    parser = _Parser(
        prog="bosaris-dask", allow_abbrev=False,
        description="Exact BOSARIS-style evaluation, calibration and fusion of classifier "
        "scores, out of core with dask.",
        epilog="Every command has --help, ending with examples; start with 'bosaris-dask demo'.",
    )  # fmt: skip
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = _add(sub, "convert", "convert a key, ndx or scores between text, HDF5, MAT, zarr",
             "Convert a Key, Ndx or Scores between formats, chosen by extension: .zarr "
             "(directory store), .h5/.hdf5 (BOSARIS layout), .mat (MATLAB), text for no "
             f"extension or {', '.join(TEXT_SUFFIXES[1:])}; any other is an error.")  # fmt: skip
    p.add_argument("input", help="file or store to read")
    p.add_argument("output", help="file or store to write (replaced atomically)")
    p.add_argument("--kind", choices=["key", "ndx", "scores"],
                   help="what the input holds (default: detected from the content)")  # fmt: skip
    _format_argument(p)
    _finish(p, cmd_convert)

    p = _add(sub, "info", "describe a key, ndx, scores or quality store",
             "Print kind, shape, ids, trial and target counts, chunking.")  # fmt: skip
    p.add_argument("path", help="file or store to describe")
    p.add_argument("--kind", choices=["key", "ndx", "scores"],
                   help="what it holds (default: detected from the content; an Ndx stored "
                   "with a signed mask, as SIDEKIT writes it, needs ndx)")  # fmt: skip
    p.add_argument(
        "--key",
        help="with scores: also count the key's trials with and without a score, and the "
        "scores of trials not in the key (which evaluate ignores)",
    )
    _finish(p, cmd_info)

    p = _add(sub, "simulate", "write a synthetic key and K systems' scores as zarr",
             "Write DIR/key.zarr (a label-derived key) and DIR/system-1.zarr ... "
             "DIR/system-K.zarr: K correlated, mis-calibrated synthetic systems, chunk by chunk "
             "(bounded memory at 1e9 trials).")  # fmt: skip
    p.add_argument("--models", type=_positive, required=True)
    p.add_argument("--segments", type=_positive, required=True)
    p.add_argument("--out-dir", required=True, metavar="DIR", help="directory to write into")
    p.add_argument("--systems", type=_positive, default=3)
    p.add_argument(
        "--target-rate", type=float, default=0.005, help="fraction of target trials (default 0.005)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    _finish(p, cmd_simulate)

    p = _add(sub, "evaluate", "exact DCF, EER, Cllr, ... of one or more systems",
             "Evaluate systems against a key: actDCF and minDCF at each prior, ROCCH-EER, "
             "PRBEP, Cllr, minCllr (exact, any scale).")  # fmt: skip
    _key_and_systems(p, "scores of one system; repeat for several systems (or, or also, "
                     "--enrol and --test)", own_key=True, scores_required=False)  # fmt: skip
    add_embedding_arguments(p, required=False)
    _operating_points(p, "at which to report actDCF and minDCF")
    _operating_point_argument(p)
    _fixed_rate_arguments(p)
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    p.add_argument(
        "--ece", action="store_true",
        help="also the empirical cross-entropy (raw, PAV-calibrated, neutral LLRs, in bits): "
        "in the table at each operating point's prior log-odds, in the JSON as \"ece\" on 41 "
        "prior log-odds from -10 to 10 (or --ece-plo) and those; with --by, per condition too; "
        "summed in pass 1 (no extra pass) at the cost of one softplus per trial per grid point",
    )  # fmt: skip
    _ece_plo_argument(p, "implies --ece")
    p.add_argument(
        "--exact-auc", action="store_true",
        help="make the AUC exact at any scale: in the evaluation's own passes when every "
        "system's targets fit bosaris_dask.auc-limit, else one or two more passes when the "
        "smaller class of the score bins holding both classes fits it (else its bounds, and a "
        "warning); with --by, per condition too, from the same passes",
    )  # fmt: skip
    p.add_argument(
        "--plots-dir", metavar="DIR",
        help="also write DET, low-false-alarm DET, NBE and APE plots (PNG) into DIR",
    )  # fmt: skip
    p.add_argument(
        "--allow-missing",
        action="store_true",
        help="drop key trials without a score (and report how many)",
    )
    _condition_arguments(p)
    _bootstrap_arguments(p)
    _finish(p, cmd_evaluate)

    p = _add(sub, "plot", "draw a DET, NBE, APE, Cllr or ECE plot of one or more systems",
             "Evaluate systems against a key and draw one plot; the format follows the "
             "extension of --out (.png, .pdf, .svg).")  # fmt: skip
    p.add_argument(
        "kind",
        choices=["det", "nbe", "ape", "cllr", "ece"],
        help="det: DET curves; nbe: normalized Bayes error rate vs prior log-odds; "
        "ape: Bayes error-rate curves; cllr: Cllr = minCllr + calibration loss; "
        "ece: empirical cross-entropy of the raw, PAV-calibrated and neutral LLRs vs prior "
        "log-odds (log10 with --llr-base 10)",
    )
    _key_and_systems(p, "scores of one system; repeat for several systems (or, or also, "
                     "--enrol and --test)", own_key=True, scores_required=False)  # fmt: skip
    add_embedding_arguments(p, required=False)
    _operating_points(p, "marked on the plot")
    _operating_point_argument(p)
    _fixed_rate_arguments(p, "det: mark each system's exact (FMR, FNMR) point there, the "
                          "legend saying e.g. 'FMR 1e-3: FNMR 4.21%%'")  # fmt: skip
    _ece_plo_argument(p, "ece: the plot's grid")
    p.add_argument(
        "--window",
        help="DET axes window: classic (0.05-50%%), low_fa, wide, auto, the toolkit's old, new, "
        "big, sre10, or PFA_MIN,PFA_MAX,PMISS_MIN,PMISS_MAX (probabilities)",
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
    p.add_argument("--ymax", type=_axis_top, metavar="Y",
                   help="nbe: the top of the y axis (normalized DCF; default 1.2, as BOSARIS). "
                   "A curve above the top is clipped, its legend entry and a note saying how "
                   "high it goes")  # fmt: skip
    p.add_argument("--allow-missing", action="store_true",
                   help="drop key trials without a score (and report how many)")  # fmt: skip
    _condition_arguments(p, cprimary=False)
    p.add_argument("--out", required=True, metavar="FILE", help="the image file to write")
    _finish(p, cmd_plot)

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
    add_embedding_arguments(p, required=False)
    _training_arguments(p, "scores to calibrate with the trained model (one system)")
    _finish(p, cmd_calibrate)

    p = _add(sub, "fuse", "train a linear (or quality) fusion of systems, optionally apply",
             "Train a logistic-regression fusion of several systems on a supervised set and "
             "write it as JSON; with quality measures, a quality fusion. With --apply, fuse "
             "the eval systems (same order).")  # fmt: skip
    _key_and_systems(p, "training scores of one system; repeat for each system (the scores "
                     "from --enrol and --test are one more, the last)", scores_required=False,
                     key_required=False)  # fmt: skip
    add_embedding_arguments(p, required=False)
    _quality_arguments(p)
    p.add_argument("--apply-quality", help="quality store of the eval set (default: --quality)")
    p.add_argument(
        "--qtrans",
        metavar="MATRIX.txt",
        help="quality fusion: a text matrix (r rows, one column per quality measure) mapping "
        "both sides' quality vectors before fusion (the toolkit's Qtrans)",
    )
    _training_arguments(p, "eval scores of one system; repeat for each system, in the order "
                           "of --scores")  # fmt: skip
    _finish(p, cmd_fuse)

    p = _add(sub, "apply", "apply a saved calibration or fusion model to scores",
             "Apply MODEL.json (from calibrate or fuse) to scores, lazily, chunk by chunk, and "
             "write the result. Text scores (and scores from embeddings of a text --ndx) "
             "written as text keep the line order of --ndx, else of the first file, unless a "
             "store or quality measures make it a grid (then a note says so).")  # fmt: skip
    p.add_argument("--model", required=True, metavar="MODEL.json",
                   help="a model written by calibrate or fuse --model-out")  # fmt: skip
    p.add_argument(
        "--scores", action="append", metavar="SCORES",
        help="scores of one system; repeat for each fused system, in training order (the "
        "scores from --enrol and --test, of the --ndx trials, come last)",
    )  # fmt: skip
    add_embedding_arguments(p, required=False, class_tables=False)
    _quality_arguments(p)
    p.add_argument("--ndx", help="keep only these trials")
    _fill_missing_argument(p)
    p.add_argument("--out", required=True, metavar="STORE", help="file or store to write")
    _finish(p, cmd_apply)

    p = _add(sub, "spoof", "ASVspoof 5 metrics: CM EER/DCF/Cllr, a-DCF, t-DCF, t-EER",
             "Read ASVspoof 5 key and score files (the evaluation package's formats) or zarr "
             "stores, and print the challenge's metrics with its costs, exact at any scale. cm "
             "(track 1): minDCF, actDCF, the package's EER, ROCCH-EER, Cllr. sasv (track 2): "
             "min a-DCF, min t-DCF, exact t-EER (in memory, up to 2e7 trials). --convert-dir DIR "
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
        "--convert-dir",
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

    p = _add(sub, "demo", "simulate a small example and evaluate it",
             "Generate a small realistic example (3 systems), evaluate it and say where the "
             "outputs are.")  # fmt: skip
    p.add_argument("--out-dir", default="bosaris-demo", metavar="DIR",
                   help="directory to write into (default bosaris-demo)")  # fmt: skip
    p.add_argument("--models", type=_positive, default=200)
    p.add_argument("--segments", type=_positive, default=500)
    p.add_argument("--seed", type=int, default=0)
    _finish(p, cmd_demo)

    add_score_parser(sub, _add, _finish)
    return parser


_COMMANDS = ("convert", "info", "simulate", "evaluate", "plot", "calibrate", "fuse", "apply",
             "score", "spoof", "demo")  # fmt: skip
