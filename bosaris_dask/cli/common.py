"""What the subcommands share: status output, the cluster, reading inputs, writing results."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bosaris_dask.errors import BosarisError


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
    key_path: str, score_paths: Sequence[str] | None, args: argparse.Namespace | None = None
) -> tuple[Any, list[Any]]:
    """Open the key and the systems' scores (lazily: nothing is computed yet); with
    ``--enrol``/``--test`` in ``args``, the scores from embeddings are the last system."""
    from bosaris_dask import io
    from bosaris_dask.cli.embeddings import embedding_scores, uses_embeddings

    key = io.read(key_path, "key")
    systems = [io.read(p, "scores") for p in score_paths or []]
    if args is not None and uses_embeddings(args):
        systems.append(embedding_scores(args, key))
    if not systems:
        raise BosarisError("no scores: give --scores, or --enrol and --test")
    return key, systems


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


def _evaluate(args: argparse.Namespace, key: Any, systems: list[Any], score_paths: Sequence[str]):
    from bosaris_dask.metrics import evaluate

    names = [_system_name(p) for p in score_paths or []]
    if len(names) < len(systems):  # the last system is scored from embeddings
        from bosaris_dask.cli.embeddings import embedding_system_name

        names.append(embedding_system_name(args))
    return evaluate(
        systems, key, priors=args.prior, names=names,
        allow_missing=args.allow_missing, progress=_progress(args),
    )  # fmt: skip


def _write_json(path: str, document: dict[str, Any]) -> None:
    from bosaris_dask.io.atomic import atomic_path

    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(document, indent=2) + "\n")
