"""Scores from embeddings on the command line: the ``score`` subcommand, the ``--enrol E --test
T`` options that every command taking ``--scores`` also takes (``evaluate``, ``plot``,
``calibrate``, ``fuse``, ``apply``), the key from two ``id class`` tables
(``--enrol-classes``/``--test-classes``), and ``info`` of an embedding file.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bosaris_dask.cli.common import _opened, _progress, _say
from bosaris_dask.cli.options import output_arguments, output_options
from bosaris_dask.errors import BosarisError, TrialError

#: The options of scores from embeddings, and their values when not given.
_EMBEDDING_DEFAULTS = {
    "models": None, "backend": "cosine", "center": None, "norm": "none", "cohort": None,
    "top_n": None, "block": 4096, "device": "cpu",
}  # fmt: skip


def _block(text: str) -> int:
    value = int(text) if text.strip().isdigit() else 0  # "abc" was "invalid _block value"
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer: {text}")
    return value


def _top_n(text: str) -> int:
    value = int(text) if text.strip().lstrip("-").isdigit() else 0
    if value < 2:
        raise argparse.ArgumentTypeError(f"must be an integer of at least 2: {text}")
    return value


def add_embedding_arguments(
    parser: argparse.ArgumentParser, *, required: bool, class_tables: bool = True
) -> None:
    """The options that turn two embedding files into scores (``score``, and every command
    that takes ``--scores``); with ``class_tables``, also the two ``id class`` tables that
    make a label-derived key."""
    from bosaris_dask.cli.choices import BACKENDS, NORMS

    g = parser.add_argument_group(
        "scores from embeddings",
        "score every enrolment model against every test embedding (or the trials of the key) "
        "by blocked matrix products, without writing the score matrix",
    )
    formats = ".npy (+ NAME.ids), .npz, .h5, .zarr, Kaldi .scp/.ark"
    g.add_argument("--enrol", required=required, metavar="E",
                   help=f"enrolment embeddings ({formats})")  # fmt: skip
    g.add_argument("--test", required=required, metavar="T", help="test embeddings")
    g.add_argument("--models", metavar="MAP",
                   help="model map, 'model segment' lines: each model is the mean of its "
                   "segments' embeddings (with cosine: of the normalized ones, normalized "
                   "again)")  # fmt: skip
    g.add_argument("--backend", choices=BACKENDS, default=_EMBEDDING_DEFAULTS["backend"],
                   help="cosine (default): length-normalize, then dot product; "
                   "dot: the raw dot product")  # fmt: skip
    g.add_argument("--center", metavar="MEAN",
                   help="subtract a mean first: a .npy holding a 1-D vector, a Kaldi .vec "
                   "(ivector-mean's mean.vec), or an embedding file (its mean)")  # fmt: skip
    g.add_argument("--norm", choices=NORMS, default=_EMBEDDING_DEFAULTS["norm"],
                   help="cohort score normalization: z, t, s = (z + t) / 2, or as "
                   "(adaptive S-norm over the top-N cohort scores of each side)")  # fmt: skip
    g.add_argument("--cohort", metavar="C",
                   help="cohort embeddings (with --norm), kept apart from the scored ones: an "
                   "id in both meets itself among its cohort scores (warned)")  # fmt: skip
    g.add_argument("--top-n", type=_top_n, metavar="N",
                   help="AS-norm cohort size, and that of score's --quality-out top-N "
                   "statistics (at least 2: the statistics take a std)")  # fmt: skip
    g.add_argument("--block", type=_block, default=_EMBEDDING_DEFAULTS["block"], metavar="ROWS",
                   help="score block size, ROWS x ROWS (default 4096)")  # fmt: skip
    g.add_argument("--device", default=_EMBEDDING_DEFAULTS["device"],
                   help="where the block products run and are rounded: cpu (default, numpy), or a "
                   "PyTorch device with float64 products such as cuda or cuda:1 (needs torch); the "
                   "scores are the same bits on any device")  # fmt: skip
    if not class_tables:
        return
    g.add_argument("--enrol-classes", metavar="TABLE",
                   help="instead of --key: 'id class' lines for the enrolment ids (the model "
                   "map's models with --models); with --test-classes, the key is every "
                   "enrolment id against every test id, a target iff same class (an id "
                   "on both sides is no trial against itself)")  # fmt: skip
    g.add_argument("--test-classes", metavar="TABLE",
                   help="'id class' lines for the test ids (with --enrol-classes)")  # fmt: skip


def uses_embeddings(args: argparse.Namespace) -> bool:
    """Whether ``--enrol``/``--test`` were given (both are needed)."""
    enrol, test = getattr(args, "enrol", None), getattr(args, "test", None)
    if (enrol is None) != (test is None):
        raise BosarisError("scores from embeddings need both --enrol and --test")
    if enrol is None:
        idle = [f"--{name.replace('_', '-')}" for name, default in _EMBEDDING_DEFAULTS.items()
                if getattr(args, name, default) != default]  # fmt: skip
        if idle:
            verb = "applies" if len(idle) == 1 else "apply"
            raise BosarisError(f"{', '.join(idle)} only {verb} to scores from embeddings: give "
                               "--enrol and --test, or leave them out")  # fmt: skip
    return enrol is not None


def uses_class_tables(args: argparse.Namespace) -> bool:
    """Whether the key comes from ``--enrol-classes``/``--test-classes`` (both are needed,
    with ``--enrol``/``--test`` and without ``--key``)."""
    from bosaris_dask.errors import OptionError

    e, t = getattr(args, "enrol_classes", None), getattr(args, "test_classes", None)
    if e is None and t is None:
        return False
    if e is None or t is None:
        raise OptionError("a key from class tables needs both --enrol-classes and --test-classes")
    if not uses_embeddings(args):
        raise OptionError("--enrol-classes and --test-classes label the ids of --enrol and "
                          "--test: give those too")  # fmt: skip
    if getattr(args, "key", None) is not None:
        raise OptionError("give --key, or --enrol-classes and --test-classes, not both")
    return True


def class_table_key(args: argparse.Namespace) -> Any:
    """The all-vs-all key of the enrolment ids (the model map's models with ``--models``) and
    the test ids, labelled by ``--enrol-classes`` and ``--test-classes``."""
    import pandas as pd

    from bosaris_dask.embeddings import read, read_model_map
    from bosaris_dask.embeddings.classes import key_from_class_tables

    if args.models is not None:
        enrol_ids = pd.unique(read_model_map(args.models)["model"])
    else:
        enrol_ids = read(args.enrol).id.values  # ids only: cheap
    test_ids = read(args.test).id.values
    return key_from_class_tables(enrol_ids, args.enrol_classes, test_ids, args.test_classes)


def embedding_system_name(args: argparse.Namespace) -> str:
    """The system name of scores from embeddings: the test file's name without extension."""
    return Path(str(args.test).rstrip("/")).stem


def embedding_scores(
    args: argparse.Namespace, trials: Any | None, quality: bool = False,
    enrol: Any = None, test: Any = None,
) -> Any:  # fmt: skip
    """The lazy Scores of ``args.enrol`` against ``args.test`` (restricted to ``trials``); with
    ``quality``, also the cohort statistics as a Quality object. ``enrol``/``test``: the sets
    already opened from those paths."""
    from bosaris_dask.embeddings import scores_from_embeddings, scores_with_cohort_quality

    options = {"backend": args.backend, "center": args.center, "models": args.models,
               "trials": trials, "norm": args.norm, "cohort": args.cohort, "top_n": args.top_n,
               "chunks": (args.block, args.block), "device": args.device}  # fmt: skip
    e = args.enrol if enrol is None else enrol
    t = args.test if test is None else test
    try:
        if quality:
            return scores_with_cohort_quality(e, t, **options)
        return scores_from_embeddings(e, t, **options)
    except TrialError as exc:  # --allow-missing is about scores, not embeddings: say so
        if getattr(args, "allow_missing", False) and "has no embedding" in str(exc):
            raise TrialError(f"{exc} (--allow-missing drops key trials without a score, not "
                             "ids without an embedding)") from None  # fmt: skip
        raise


def cmd_score(args: argparse.Namespace) -> int:
    from bosaris_dask import io
    from bosaris_dask.embeddings import read

    if args.quality_out:
        if args.cohort is None:
            raise BosarisError("--quality-out writes cohort statistics: it needs --cohort")
        if io.detect_format(args.quality_out) != "zarr":
            raise BosarisError(f"--quality-out is a quality store: {args.quality_out} should "
                               "end in .zarr")  # fmt: skip
        if args.out and os.path.abspath(args.quality_out) == os.path.abspath(args.out):
            raise BosarisError(f"--quality-out and --out are both {args.out}: the scores "
                               "would replace the quality store")  # fmt: skip

    def open_inputs() -> tuple[Any, Any, Any]:
        trials = None
        if uses_class_tables(args):
            if args.ndx:
                raise BosarisError("give --ndx, or --enrol-classes and --test-classes, not both")
            trials = class_table_key(args)
        elif args.key or args.ndx:
            trials = io.read(args.key, "key") if args.key else io.read(args.ndx, "ndx")
        return trials, read(args.enrol), read(args.test)  # ids only: cheap

    def size(inputs: tuple[Any, Any, Any]) -> int:
        trials, enrol, test = inputs
        if trials is not None:
            return int(trials.sizes["model"] * trials.sizes["segment"])
        return int(enrol.sizes["id"] * test.sizes["id"])

    written = output_options(args, args.out)  # refused before any work
    start = time.perf_counter()
    if _scores_listed(args):
        return _score_list(args, start, written)
    # The inputs are opened first (a wrong path fails before a cluster starts); the checks,
    # cohort statistics and scores then run where the cluster is.
    with _opened(args, open_inputs, size) as (trials, enrol, test):
        if args.quality_out:
            scores, quality = embedding_scores(args, trials, True, enrol, test)
            io.write(quality, args.quality_out)
            _say(args, f"wrote the cohort statistics of {scores.sizes['model']:,} models and "
                       f"{scores.sizes['segment']:,} segments to {args.quality_out}")  # fmt: skip
        else:
            scores = embedding_scores(args, trials, False, enrol, test)
        # The store keeps the score blocks as its chunks, so reading it back gives an
        # evaluation the same chunks as scoring on the fly.
        chunked = "chunk_mb" in io._WRITE_OPTIONS[io._write_format(args.out, None)]
        options = {"chunk_mb": args.block**2 * 4 / 2**20} if chunked else {}
        io.write(scores, args.out, progress=_progress(args), **options, **written)
    ids = f"{scores.sizes['model']:,} x {scores.sizes['segment']:,}"
    what = f"{ids} scores" if trials is None else f"the scores of the trials of {ids} ids"
    _say(args, f"wrote {what} to {args.out} in {time.perf_counter() - start:.1f} s")
    return 0


def _scores_listed(args: argparse.Namespace) -> bool:
    """Whether ``score`` writes the trials of a text ``--key``/``--ndx`` to a text ``--out``
    pair by pair, in the list's order (no class tables, no ``--quality-out``)."""
    from bosaris_dask.cli.in_order import listed

    trials = args.key or args.ndx
    if trials is None or uses_class_tables(args) or not listed(args, [trials]):
        return False
    if not args.quality_out:
        return True
    _say(args, f"{args.out}: lines written model by model, not in the order of {trials}'s "
               "lines (--quality-out takes the cohort statistics of the matrix's ids)")  # fmt: skip
    return False


def _score_list(args: argparse.Namespace, start: float, written: dict[str, Any]) -> int:
    """``score`` of a text trial list into a text file, line for line in its order (a Kaldi
    recipe pastes it beside the list): each trial's score as in any block of the matrix
    (:func:`~bosaris_dask.embeddings.scoring.trial_scores`); ``written``: the writer's options
    (:func:`~bosaris_dask.cli.options.output_options`)."""
    import numpy as np

    from bosaris_dask.cli.in_order import trial_list
    from bosaris_dask.cli.packed_inputs import _trial_scores
    from bosaris_dask.io.text.write import write_score_lines

    trials = trial_list(args.key or args.ndx, "--key" if args.key else "--ndx")
    scores = _trial_scores(args, trials)
    n = write_score_lines(trials, scores, np.ones(len(scores), dtype=bool), args.out, **written)
    _say(args, f"wrote the scores of the {n:,} trials of {Path(trials.path).name}, in its "
               f"order, to {args.out} in {time.perf_counter() - start:.1f} s")  # fmt: skip
    return 0


def add_score_parser(sub: Any, add: Callable[..., Any], finish: Callable[..., None]) -> None:
    """The ``score`` subcommand (``add`` makes a subparser with its examples, ``finish`` adds
    the shared options and the function)."""
    p = add(sub, "score",
            "score embeddings (cosine, centering, model maps, Z/T/S/AS-norm) into a store",
            "Score enrolment against test embeddings by blocked matrix products and write the "
            "scores (a .zarr store is the default choice; .h5 and text work too). --key or "
            "--ndx restricts the scores to its ids and trials.")  # fmt: skip
    add_embedding_arguments(p, required=True)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--key", help="score only this key's trials")
    which.add_argument("--ndx", help="score only this trial list")
    p.add_argument("--out", required=True, metavar="STORE",
                   help="file or store for the scores (replaced atomically)")  # fmt: skip
    output_arguments(p)
    p.add_argument(
        "--quality-out",
        metavar="QUALITY.zarr",
        help="also write each model's and segment's cohort score statistics (mean, "
        "std; top-N mean, std with --top-n) as a quality store for fuse --quality",
    )
    finish(p, cmd_score)


def write_demo_embeddings(out: Path, seed: int = 0) -> list[Path]:
    """Write ``enrol.npz``, ``test.npz``, ``cohort.npz``, their key ``embeddings-key.zarr`` and
    the ``id class`` tables it is derived from, ``enrol.classes`` and ``test.classes``
    (synthetic speakers, :func:`bosaris_dask.embeddings.simulate.simulate_embeddings`)."""
    from bosaris_dask import io
    from bosaris_dask.embeddings import write
    from bosaris_dask.embeddings.simulate import simulate_embeddings
    from bosaris_dask.io.atomic import atomic_path

    enrol, test, cohort, key = simulate_embeddings(seed=seed)
    paths = [out / "enrol.npz", out / "test.npz", out / "cohort.npz"]
    for emb, path in zip((enrol, test, cohort), paths, strict=True):
        write(emb, path)
    io.write(key, out / "embeddings-key.zarr")
    tables = [out / "enrol.classes", out / "test.classes"]
    for dim, path in zip(("model", "segment"), tables, strict=True):
        pairs = zip(key[dim].values, key[f"{dim}_label"].values, strict=True)
        with atomic_path(path) as tmp:
            Path(tmp).write_text("".join(f"{i} {c}\n" for i, c in pairs))
    return [*paths, out / "embeddings-key.zarr", *tables]


def is_embedding_file(path: str) -> bool:
    """Whether ``path`` holds embeddings: by extension, or an HDF5/zarr store that the
    embedding readers take (:func:`~bosaris_dask.embeddings.formats.holds_embeddings`)."""
    from bosaris_dask.io import EMBEDDING_ONLY_SUFFIXES

    p = Path(path.rstrip("/"))
    suffix = p.suffix.lower()
    if suffix in EMBEDDING_ONLY_SUFFIXES or suffix in (".pkl", ".pickle", ".pt", ".pth"):
        return True  # (pickles: for the embedding reader's message on them)
    if suffix != ".zarr" and p.is_dir():  # a folder of .npy vectors
        return any(p.rglob("*.npy"))
    if suffix not in (".h5", ".hdf5", ".zarr"):
        return False
    from bosaris_dask.embeddings.formats import hdf5_per_id, holds_embeddings

    try:
        if suffix in (".h5", ".hdf5") and p.is_file():
            import h5py

            with h5py.File(p, "r") as f:
                return hdf5_per_id(f, read=False, first=64) is not None or holds_embeddings(f)
        if suffix == ".zarr" and p.is_dir():
            import zarr

            group = zarr.open_group(str(p), mode="r")
            return "bosaris_kind" not in group.attrs and holds_embeddings(dict(group.arrays()))
    except (OSError, ValueError):
        return False
    return False


def cmd_embedding_info(args: argparse.Namespace) -> int:
    """``info`` of an embedding file: count, dimension, dtype and a summary of the norms."""
    from bosaris_dask.embeddings import info, read

    d = info(read(args.path))
    print(f"path:        {d['source']} ({d['format']} embeddings)")
    print(f"embeddings:  {d['count']:,} of dimension {d['dimension']} ({d['dtype']})")
    print(f"norms:       min {d['norm_min']:.6g}, mean {d['norm_mean']:.6g}, "
          f"max {d['norm_max']:.6g}")  # fmt: skip
    if d["non_finite"]:
        print(f"non-finite:  {d['non_finite']:,} embeddings hold NaN or infinity")
    return 0
