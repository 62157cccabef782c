"""The option groups several subcommands share (operating points, conditions, the bootstrap,
training, the LLR base ...): one definition each, so an option means the same everywhere.

Examples
--------
>>> import argparse
>>> parser = argparse.ArgumentParser()
>>> prior_argument(parser, "at which to report actDCF")
>>> parser.parse_args(["--prior", "0.1", "--prior", "0.01"]).prior
[0.1, 0.01]
"""

from __future__ import annotations

import argparse
from typing import Any

from bosaris_dask.cli import values
from bosaris_dask.errors import OptionError


def fixed_rate_arguments(parser: argparse.ArgumentParser, plot: str = "") -> None:
    """``--fmr`` and ``--fnmr``; ``plot``: what a plot does with them (evaluate: the DET
    files of --plots-dir mark them)."""
    plot = plot or "--plots-dir: the DET plots mark them"
    fnmr_plot = plot.replace("'FMR 1e-3: FNMR 4.21%%'", "'FNMR 5e-2: FMR 3.85%%'")
    parser.add_argument(
        "--fmr", type=values.rate, action="append", metavar="F",
        help="report FNMR and TAR at false-match rate F (ISO/IEC 19795-1): the threshold is "
        "the smallest score with FMR <= F (exact; ties can make the actual FMR lower, which "
        "is reported; F below 1/non-targets is n/a: no threshold has a non-zero FMR that low); "
        f"repeat, e.g. --fmr 1e-4 --fmr 1e-3; {plot}",
    )  # fmt: skip
    parser.add_argument(
        "--fnmr", type=values.rate, action="append", metavar="F",
        help="report FMR at false-non-match rate F: the threshold is the largest score with "
        f"FNMR <= F (F below 1/targets is n/a, as for --fmr); repeatable; {fnmr_plot}",
    )  # fmt: skip


def ece_plo_argument(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--ece-plo", type=values.ece_plo, action="append", metavar="A|LO:HI:N",
        help="a prior log-odds of the ECE grid (natural, log10 with --llr-base 10), or LO:HI:N "
        "for N evenly spaced from LO to HI (write --ece-plo=-10:10:81 when LO is negative); "
        f"repeatable; {what} (default grid: 41 points, natural log-odds -10 to 10, every 0.25 "
        "within +-3)",
    )  # fmt: skip


def operating_point_argument(parser: argparse.ArgumentParser) -> None:
    from bosaris_dask.profiles import PROFILES

    parser.add_argument(
        "--profile", choices=list(PROFILES),
        help="a published cost profile (sre18, sre21: Cprimary; voxsrc; asvspoof5-cm; ijbc: "
        "TAR at FMR 1e-6..1e-1; "
        "asvspoof5-sasv: see the spoof command); "
        "it sets the operating points unless --prior or --operating-point is given",
    )  # fmt: skip
    parser.add_argument(
        "--operating-point", type=values.operating_point, action="append", metavar="PTAR:CMISS:CFA",
        help="an operating point as target prior and costs, e.g. 0.01:10:1 or 0.05:1:1 "
        "(reported at its effective prior, with its Bayes and minDCF thresholds); repeatable",
    )  # fmt: skip


def condition_arguments(parser: argparse.ArgumentParser, cprimary: bool = True) -> None:
    parser.add_argument(
        "--conditions", action="append", metavar="TABLE",
        help="a condition table (tab-separated, header 'model' or 'segment' then attribute "
        "columns, or 'model', 'segment' then columns of each trial; or zarr/HDF5); repeat for "
        "several tables",
    )  # fmt: skip
    parser.add_argument(
        "--by", action="append", metavar="SPEC",
        help="model.COL, segment.COL, same.COL or trial.COL: also report every condition of "
        "COL; repeat for the Cartesian product of several",
    )  # fmt: skip
    if not cprimary:  # plot: a curve per (system, condition)
        parser.add_argument(
            "--max-curves", type=values.positive, metavar="N",
            help="with --by: draw the curves of at most N (system, condition) pairs, those of "
            "the conditions with the most targets (default 20; how many are left out is said)",
        )  # fmt: skip
        return
    parser.add_argument(
        "--equalize", action="store_true",
        help="also the NIST partition-equalized EER, actDCF and minDCF over the --by "
        "conditions (each class's trials weighted so every condition counts the same)",
    )  # fmt: skip
    parser.add_argument(
        "--cprimary-priors", action="append", type=values.prior, metavar="P",
        help="an effective prior of Cprimary (the mean normalized actDCF and minDCF over "
        "them); repeat, e.g. --cprimary-priors 0.01 --cprimary-priors 0.05 (SRE21)",
    )  # fmt: skip


def bootstrap_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap", type=values.resamples, metavar="B",
                        help="B bootstrap resamples (two-way with --resample on both sides): "
                        "confidence intervals of every metric (needs --conditions and "
                        "--resample)")  # fmt: skip
    parser.add_argument("--resample", action="append", metavar="SPEC",
                        help="model.COL or segment.COL of a condition table: the groups (e.g. "
                        "speakers) resampled on that side; repeat for both sides")  # fmt: skip
    parser.add_argument("--ci", type=float, metavar="LEVEL",
                        help="the intervals' level (default 0.95)")  # fmt: skip
    parser.add_argument("--seed", type=values.seed, metavar="S",
                        help="the resamples' random seed (an integer >= 0)")  # fmt: skip
    parser.add_argument("--compare", action="store_true",
                        help="paired bootstrap comparison of every pair of systems")  # fmt: skip
    parser.add_argument("--bootstrap-method", choices=("multinomial", "poisson"),
                        help="how a side's group multiplicities are drawn: as many groups as "
                        "it has, with replacement (multinomial, the default), or each from "
                        "Poisson(1)")  # fmt: skip


def llr_base_argument(parser: argparse.ArgumentParser, from_model: bool = False) -> None:
    from bosaris_dask.llr_base import LLR_BASES

    default = "the base the model was trained with" if from_model else "e"
    parser.add_argument(
        "--llr-base", choices=LLR_BASES, default=None if from_model else "e",
        help=f"base of the LLRs read and written (default {default}; 10 for log10 LRs: scores "
        "are multiplied by ln 10 on input and written LLRs divided by it)",
    )  # fmt: skip


def common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress or status output")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")


def prior_argument(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--prior", type=values.prior, action="append", metavar="P",
        help=f"an effective prior (operating point) {what}; repeat for several "
        "(default: 0.5, 0.1, 0.01, 0.001)",
    )  # fmt: skip


def quality_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quality", help="a quality store (zarr) with model and segment quality "
                        "(bd.write of make_quality(...), or score --quality-out)")  # fmt: skip
    parser.add_argument("--model-quality", help="model-side quality table (text, HDF5 or MAT)")
    parser.add_argument("--segment-quality",
                        help="segment-side quality table (text, HDF5 or MAT)")  # fmt: skip


def training_arguments(
    parser: argparse.ArgumentParser, apply_help: str, *, one_system: bool = False
) -> None:
    """What calibrate and fuse share: the objective's prior, the model file, --apply (one
    input given twice refused by the parser where ``one_system``, else repeatable)."""
    parser.add_argument(
        "--train-prior", type=values.prior, default=None, metavar="P",
        help="effective prior of the logistic training objective (default 0.5; not for "
        "calibrate --method pav)",
    )  # fmt: skip
    parser.add_argument("--model-out", required=True, metavar="MODEL.json",
                        help="where to write the trained model (JSON)")  # fmt: skip
    parser.add_argument(
        "--l2", type=values.penalty, default=0.0, metavar="LAMBDA",
        help="L2 penalty LAMBDA/2 * ||weights||^2 on the logistic objective (not on the "
        "offset; default 0: none, as BOSARIS): a best fit where the classes are separable or "
        "a system is constant or repeated. The weights apply to scores in natural-log units: "
        "--llr-base 10 multiplies the scores by ln 10 first, so one LAMBDA fits differently "
        "in another base",
    )  # fmt: skip
    parser.add_argument(
        "--max-iter", type=values.positive, default=None, metavar="N",
        help="at most N trust-region iterations, one pass each (default 100); a fit that stops "
        "before its minimum says so",
    )  # fmt: skip
    parser.add_argument("--apply", action=None if one_system else "append", metavar="SCORES",
                        help=apply_help)  # fmt: skip
    parser.add_argument(
        "--allow-missing", action="store_true",
        help="drop key trials without a score from training (and report how many)",
    )  # fmt: skip
    parser.add_argument("--ndx", help="with --apply: keep only these trials")
    fill_missing_argument(parser)
    parser.add_argument("--out", metavar="STORE",
                        help="with --apply: file or store for the resulting scores")  # fmt: skip
    output_arguments(parser)


def output_arguments(parser: argparse.ArgumentParser) -> None:
    """``--mat-version`` and ``--header``: how a .mat or a text trial output is written (every
    command that writes one: convert, calibrate, fuse, apply, score)."""
    parser.add_argument("--mat-version", choices=["5", "7.3"],
                        help="version of a .mat output: 5 (default; at most 2 GiB a matrix) or "
                        "7.3 (HDF5 underneath, written block by block)")  # fmt: skip
    parser.add_argument("--header", action="store_true",
                        help="a text output as a NIST table: tab-separated, with a header line "
                        "(modelid, segmentid, then LLR or targettype)")  # fmt: skip


def output_options(args: argparse.Namespace, path: str | None) -> dict[str, Any]:
    """The writer's options of :func:`output_arguments` for the output ``path``, refused where
    they do not apply to it (``path`` ``None``: nothing is written)."""
    from bosaris_dask import io

    mat_version, header = getattr(args, "mat_version", None), getattr(args, "header", False)
    out_format = io._write_format(path, None) if path is not None else None
    if mat_version and out_format != "mat":
        raise OptionError(f"--mat-version is for a .mat output, not {path}")
    if header and out_format != "text":
        raise OptionError(f"--header is for a text output, not {path}")
    return {**({"mat_version": mat_version} if mat_version else {}),
            **({"header": True} if header else {})}  # fmt: skip


def fill_missing_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fill-missing",
        type=float,
        metavar="VALUE",
        help="give the --ndx trials without a score this score in the output (after "
        "calibration 0 means no information)",
    )


def key_and_systems(
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
        format_argument(parser, key_apart=True)
        key_format_argument(parser)


def format_argument(parser: argparse.ArgumentParser, key_apart: bool = False) -> None:
    from bosaris_dask.cli.choices import TEXT_FORMATS

    parser.add_argument(
        "--format", choices=TEXT_FORMATS,
        help="layout of the text inputs (default: detected from their first lines"
        + ("; a key of another layout: --key-format" if key_apart else "")
        + "): bosaris "
        "(model segment score|label), nist (header), voxceleb (label enrol test), wespeaker "
        "(enrol test score label), 3dspeaker (enrol test label score)",
    )  # fmt: skip


def key_format_argument(parser: argparse.ArgumentParser) -> None:
    from bosaris_dask.cli.choices import TEXT_FORMATS

    parser.add_argument(
        "--key-format", choices=TEXT_FORMATS,
        help="layout of a text --key (--ndx, plot's --eval-key) when it differs from the "
        "scores' --format, e.g. a voxceleb trial list with wespeaker scores (default: --format, "
        "else detected)",
    )  # fmt: skip


def format_arguments(parser: argparse.ArgumentParser) -> None:
    """``--format`` (the text score files') and ``--key-format`` (a text key's or trial
    list's), for the commands whose key is not one of their score files."""
    format_argument(parser, key_apart=True)
    key_format_argument(parser)
