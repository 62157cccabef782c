"""What the subcommands share: status output, the cluster, reading inputs, writing results."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _progress(args: argparse.Namespace) -> bool:
    return not args.quiet and sys.stderr.isatty()


def _say(args: argparse.Namespace, message: str) -> None:
    if not args.quiet:
        print(message, file=sys.stderr)


def _cluster(args: argparse.Namespace, size_hint: int | None = None):
    from bosaris_dask.cluster import connect_from_args

    quiet = {"announce": None} if args.quiet else {}
    return connect_from_args(args, size_hint=size_hint, **quiet)


def _load(
    key_path: str | None,
    score_paths: Sequence[str],
    text_format: str | None = None,
    llr_base: str = "e",
) -> tuple[Any, list[Any]]:
    """Open the key and the systems' scores (lazily: nothing is computed yet).

    Without a key, the key comes from the labels of the first scores file (a wespeaker or
    3D-Speaker score file, or a NIST table with a label column): it is read twice, once for its
    labels and once for its scores, each streamed.
    """
    from bosaris_dask import io

    if key_path is None:
        from bosaris_dask.errors import OptionError
        from bosaris_dask.io.text import text_has_labels

        key_path = score_paths[0]
        if io.detect_format(key_path) != "text" or not text_has_labels(
            key_path, format=text_format
        ):
            raise OptionError(
                f"--key is needed: {key_path} carries no labels (only text files with both a "
                "score and a label column, e.g. wespeaker's 'enrol test score label', can be "
                "their own key)"
            )
    key = io.read(key_path, "key", text_format=text_format)
    systems = [io.read(p, "scores", text_format=text_format) for p in score_paths]
    if llr_base != "e":
        from bosaris_dask.llr_base import to_natural

        systems = [to_natural(s, llr_base) for s in systems]
    return key, systems


def _read_scores(args: argparse.Namespace, path: str) -> Any:
    """Scores from a file, as natural-log LLRs (``--llr-base``)."""
    from bosaris_dask import io
    from bosaris_dask.llr_base import to_natural

    return to_natural(io.read(path, "scores"), getattr(args, "llr_base", "e"))


def _write_scores(args: argparse.Namespace, scores: Any, path: str) -> None:
    """Write LLRs in the base of ``--llr-base``."""
    from bosaris_dask import io
    from bosaris_dask.llr_base import from_natural

    io.write(from_natural(scores, getattr(args, "llr_base", "e")), path, progress=_progress(args))


def _system_name(path: str) -> str:
    name = Path(path.rstrip("/")).name
    for suffix in (".zarr", ".hdf5", ".h5", ".txt", ".tsv", ".scores", ".score"):
        name = name.removesuffix(suffix)
    return name


def _flatten_priors(args: argparse.Namespace) -> None:
    if args.prior is None and getattr(args, "operating_point", None):
        args.prior = []  # only the operating points asked for
    elif args.prior is None:
        from bosaris_dask.metrics import DEFAULT_PRIORS

        args.prior = list(DEFAULT_PRIORS)
    else:
        args.prior = [p for group in args.prior for p in group]


def _evaluate(args: argparse.Namespace, key: Any, systems: list[Any], score_paths: Sequence[str]):
    from bosaris_dask.llr_base import thresholds_from_natural
    from bosaris_dask.metrics import evaluate

    results = evaluate(
        systems, key, priors=args.prior, names=[_system_name(p) for p in score_paths],
        operating_points=getattr(args, "operating_point", None) or (),
        allow_missing=args.allow_missing, progress=_progress(args),
    )  # fmt: skip
    return thresholds_from_natural(results, getattr(args, "llr_base", "e"))


def _write_json(path: str, document: dict[str, Any]) -> None:
    from bosaris_dask.io.atomic import atomic_path

    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(document, indent=2) + "\n")
