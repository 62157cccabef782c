"""What the subcommands share: status output, the cluster, reading inputs, writing results."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any


def _progress(args: argparse.Namespace) -> bool:
    return not args.quiet and sys.stderr.isatty()


def _say(args: argparse.Namespace, message: str) -> None:
    if not args.quiet:
        print(message, file=sys.stderr)


@contextlib.contextmanager
def _cluster(args: argparse.Namespace, size_hint: int | None = None) -> Iterator[Any]:
    from bosaris_dask.cluster import connect_from_args
    from bosaris_dask.io.staging import check_staged_readable

    quiet = {"announce": None} if args.quiet else {}
    with connect_from_args(args, size_hint=size_hint, **quiet) as client:
        check_staged_readable(client)  # inputs opened before: can its workers read them?
        yield client


def _load(key_path: str, score_paths: Sequence[str]) -> tuple[Any, list[Any]]:
    """Open the key and the systems' scores (lazily: nothing is computed yet)."""
    from bosaris_dask import io

    return io.read(key_path, "key"), [io.read(p, "scores") for p in score_paths]


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

    return evaluate(
        systems, key, priors=args.prior, names=[_system_name(p) for p in score_paths],
        allow_missing=args.allow_missing, progress=_progress(args),
    )  # fmt: skip


def _write_json(path: str, document: dict[str, Any]) -> None:
    from bosaris_dask.io.atomic import atomic_path

    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(document, indent=2) + "\n")
