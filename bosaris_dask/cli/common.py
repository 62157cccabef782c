"""What the subcommands share: status output, the cluster, reading inputs, writing results."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from bosaris_dask.cli.choices import TEXT_SUFFIXES
from bosaris_dask.errors import BosarisError, OptionError

T = TypeVar("T")


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


@contextlib.contextmanager
def _opened(
    args: argparse.Namespace, open_inputs: Callable[[], T], size: Callable[[T], int]
) -> Iterator[T]:
    """Open the inputs (lazily), connect to where the work runs, and yield the inputs.

    Outside MPI the inputs are opened first, so that a wrong path fails before a cluster starts
    and their size tells :func:`~bosaris_dask.cluster.connect` whether worker processes are
    worth starting. Under MPI every rank runs the command: the inputs are opened only on the
    client rank, inside the cluster.
    """
    from bosaris_dask.io.scattered import forget, recorded
    from bosaris_dask.io.staging import on_the_workers

    loaded = None if args.cluster == "mpi" else open_inputs()
    with _cluster(args, size_hint=None if loaded is None else size(loaded)) as client:
        # in-memory inputs (text, MAT, npz) go to the workers once, not with every pass's graph;
        # a client that was there before keeps what its user sent
        before = recorded(client) if client is not None else frozenset()
        try:
            yield on_the_workers(open_inputs() if loaded is None else loaded, client)
        finally:
            if client is not None:
                forget(client, keep=before)


def _load(
    key_path: str | None,
    score_paths: Sequence[str] | None,
    formats: tuple[str | None, str | None] = (None, None),
    llr_base: str = "e",
    args: argparse.Namespace | None = None,
    packing: argparse.Namespace | None = None,
) -> tuple[Any, list[Any]]:
    """Open the key and the systems' scores (lazily: nothing is computed yet).

    ``formats`` are the layouts of a text key and of the text score files
    (:func:`_text_formats`; ``None``: detected from the file's first lines).

    Without a key, the key comes from the labels of the first scores file (a wespeaker or
    3D-Speaker score file, or a NIST table with a label column): where the command reads text
    lists (:func:`~bosaris_dask.cli.packed_inputs._may_pack`) it is parsed once for both,
    else twice, once for its labels and once for its scores, each streamed. With
    ``--enrol``/``--test`` in ``args``, the scores from embeddings are the last system
    (:mod:`bosaris_dask.cli.embeddings`), and
    ``--enrol-classes``/``--test-classes`` may give the key instead of ``key_path``. Sparse text
    lists are read packed where the command (``packing``, default ``args``) allows it
    (:func:`~bosaris_dask.cli.packed_inputs._may_pack`).
    """
    from bosaris_dask import io
    from bosaris_dask.errors import OptionError
    from bosaris_dask.io.text.scratch import _is_stream

    key_format, text_format = formats
    score_paths = list(score_paths or [])
    packing = packing if packing is not None else args
    if packing is not None:
        packing.trial_conditions = None  # set where the lists are packed with --by
        packing.trial_resample = None  # ... and with --bootstrap --resample
    if args is not None and _uses_class_tables(args):  # an error with --key
        key = _key(args)
        return key, _systems(args, key, score_paths, text_format, llr_base)
    if key_path is None and not score_paths:
        from bosaris_dask.cli.embeddings import uses_embeddings

        if args is not None and uses_embeddings(args):
            raise OptionError("--key is needed: it selects the trials to score from embeddings")
        raise OptionError("nothing to read: give --scores (a file with a label column is its "
                          "own key; else --key too), or --enrol and --test with --key")  # fmt: skip
    if key_path is None:
        from bosaris_dask.io.text import text_has_labels

        key_path = score_paths[0]
        if _is_stream(key_path):
            raise OptionError(f"--key is needed: {key_path} is a pipe, and a file that is its "
                              "own key is read twice (as labels, then scores)")  # fmt: skip
        if io.detect_format(key_path) != "text" or not text_has_labels(
            key_path, format=text_format
        ):
            raise OptionError(
                f"--key is needed: {key_path} carries no labels (only text files with both a "
                "score and a label column, e.g. wespeaker's 'enrol test score label', can be "
                "their own key)"
            )
        key_format = text_format  # the same file
    _one_column_twice(key_path, score_paths, text_format)
    from bosaris_dask.cli.packed_inputs import _may_pack, _pairs_from_embeddings, _text_inputs

    embeddings = args is not None and _pairs_from_embeddings(args)  # (not an eval set's)
    if _may_pack(packing, key_path, score_paths, embeddings):
        return _text_inputs(packing, key_path, score_paths, (key_format, text_format), llr_base,
                            embeddings)  # fmt: skip
    key = io.read(key_path, "key", text_format=key_format)  # first: a wrong key path is the
    return key, _systems(args, key, score_paths, text_format, llr_base, key_path)  # first error


def _key_and_systems(
    args: argparse.Namespace, score_paths: Sequence[str], llr_base: str = "e"
) -> tuple[Any, list[Any]]:
    """The key of ``--key`` (or of class tables) and the systems of ``score_paths`` a fit
    trains on: packed where they are sparse text lists
    (:func:`~bosaris_dask.cli.packed_inputs._may_pack`)."""
    from bosaris_dask.cli.packed_inputs import _may_pack, _pairs_from_embeddings, _text_inputs

    if (
        args.key is not None
        and not _uses_class_tables(args)
        and _may_pack(args, args.key, score_paths, _pairs_from_embeddings(args))
    ):
        return _text_inputs(args, args.key, score_paths, _text_formats(args), llr_base,
                            _pairs_from_embeddings(args))  # fmt: skip
    key_format, text_format = _text_formats(args)
    key = _key(args, key_format)
    return key, _systems(args, key, score_paths, text_format, llr_base, args.key)


def _text_formats(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """The text layouts of ``--key`` (and ``--ndx``) and of the score files:
    ``--key-format`` (else ``--format``) and ``--format``; ``None``: detected."""
    text_format = getattr(args, "format", None)
    return getattr(args, "key_format", None) or text_format, text_format


def same_file(a: str, b: str) -> bool:
    """Do paths ``a`` and ``b`` name one existing file (False where either cannot be read)?"""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _one_column_twice(key_path: str, score_paths: Sequence[str], text_format: str | None) -> None:
    """Refuse a text file given as key and as scores whose one value column would be read as
    labels by the one and as scores by the other (``m s 1`` lines: EER 0, the labels
    separating themselves); a file with a score and a label column may be both."""
    from bosaris_dask import io
    from bosaris_dask.errors import OptionError
    from bosaris_dask.io.text import text_has_labels

    for path in score_paths:
        if (
            same_file(key_path, path)  # (a missing file is named where it is read)
            and io.detect_format(path) == "text"
            and not text_has_labels(path, format=text_format)
        ):
            raise OptionError(
                f"--key and --scores are the same file, {path}, which has one value column: it "
                "would be read as labels by --key and as scores by --scores; give the scores' "
                "own file to --scores"
            )


def _uses_class_tables(args: argparse.Namespace) -> bool:
    from bosaris_dask.cli.embeddings import uses_class_tables

    return uses_class_tables(args)


def _key(args: argparse.Namespace, text_format: str | None = None) -> Any:
    """The key of ``--key`` (a text one in layout ``text_format``, ``None``: detected), or the
    label-derived one of ``--enrol-classes``/``--test-classes``."""
    from bosaris_dask import io
    from bosaris_dask.errors import OptionError

    if _uses_class_tables(args):
        from bosaris_dask.cli.embeddings import class_table_key

        return class_table_key(args)
    if args.key is None:
        raise OptionError("--key is needed (or, with --enrol and --test, --enrol-classes and "
                          "--test-classes)")  # fmt: skip
    return io.read(args.key, "key", text_format=text_format)


def _systems(
    args: argparse.Namespace | None,
    trials: Any,
    score_paths: Sequence[str],
    text_format: str | None = None,
    llr_base: str = "e",
    key_path: str | None = None,
) -> list[Any]:
    """The systems' scores as natural-log LLRs (``--llr-base``): each file of ``score_paths``,
    then, with ``--enrol``/``--test`` in ``args``, the lazy scores from embeddings of the
    trials of ``trials`` (a key or ndx; ``None``: all of them) as the last system. A text
    score file with a label column is checked against the key read from ``key_path``
    (:func:`_scores_of`).

    The scores from embeddings go through the same ``--llr-base`` conversion as a file: a
    command given ``--enrol E --test T`` gives what it gives with ``score --out S`` and then
    ``--scores S``.
    """
    systems = [_scores_of(p, trials, text_format, key_path) for p in score_paths]
    return _in_natural(_with_embeddings(args, trials, systems), llr_base)


def _scores_of(path: str, trials: Any, text_format: str | None, key_path: str | None) -> Any:
    """The scores of a file; where it is a text file with a label column other than the key's
    own, read with its labels in the same parse, and a
    :class:`~bosaris_dask.cli.label_agreement.LabelWarning` where they contradict the key's
    (a list beyond the key's grid put on it, as an evaluation reads it)."""
    from bosaris_dask import io
    from bosaris_dask.cli.packed_inputs import _regular_text_file, has_labels, labelled_scores
    from bosaris_dask.io.text.packed import TrialList, on_grid
    from bosaris_dask.trials import kind_of

    if (key_path is None or trials is None or kind_of(trials) != "key"
            or same_file(path, key_path) or not _regular_text_file(path)
            or not has_labels(path, text_format)):  # fmt: skip
        return io.read(path, "scores", text_format=text_format)
    scores = labelled_scores(path, text_format, trials, key_path)
    return on_grid(scores, trials) if isinstance(scores, TrialList) else scores


def _in_natural(systems: list[Any], llr_base: str) -> list[Any]:
    """The systems' scores as natural-log LLRs (``--llr-base``)."""
    from bosaris_dask.llr_base import to_natural

    return systems if llr_base == "e" else [to_natural(s, llr_base) for s in systems]


def _read_scores(args: argparse.Namespace, path: str) -> Any:
    """Scores from a file, as natural-log LLRs (``--llr-base``)."""
    from bosaris_dask import io
    from bosaris_dask.llr_base import to_natural

    return to_natural(io.read(path, "scores", text_format=getattr(args, "format", None)),
                      getattr(args, "llr_base", "e"))  # fmt: skip


def _in_user_base(args: argparse.Namespace, scores: Any) -> Any:
    """Natural-log LLRs as LLRs in the base of ``--llr-base`` (what is written)."""
    from bosaris_dask.llr_base import from_natural

    return from_natural(scores, getattr(args, "llr_base", "e"))


def _with_embeddings(args: argparse.Namespace | None, key: Any, systems: list[Any]) -> list[Any]:
    """``systems`` and, with ``--enrol``/``--test``, the lazy scores from embeddings."""
    from bosaris_dask.cli.embeddings import embedding_scores, uses_embeddings

    if args is not None and uses_embeddings(args):
        systems = [*systems, embedding_scores(args, key)]
    if not systems:
        raise BosarisError("no scores: give --scores, or --enrol and --test")
    return systems


#: The suffixes a system's name leaves out: the stores', the text lists' and gzip's.
_NAMELESS_SUFFIXES = (".zarr", ".hdf5", ".h5", ".mat", ".csv", *TEXT_SUFFIXES[1:])


def _system_name(path: str) -> str:
    """A file's name without its suffixes (``scores.txt.gz`` -> ``scores``); a pipe's
    (``--scores <(zcat f)``, ``/dev/stdin``) says it is one.

    >>> [_system_name(p) for p in ("a/sys1.txt.gz", "b.mat", "/dev/fd/63", "/dev/stdin")]
    ['sys1', 'b', 'pipe-63', 'stdin']
    """
    parts = Path(path.rstrip("/")).parts
    if parts[:-1] in (("/", "dev", "fd"), ("/", "proc", "self", "fd")):
        return f"pipe-{parts[-1]}"
    name = parts[-1] if parts else path
    name = name.removesuffix(".gz")
    for suffix in _NAMELESS_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name.removesuffix(suffix)
    return name


def system_names(paths: Sequence[str], more: Sequence[str] = ()) -> list[str]:
    """One name per system: each file's name without its suffix (``more``: names of systems
    that have no file, e.g. scored from embeddings), a repeated one told apart by its folders
    (``exp1/scores``, ``exp2/scores``), and the same file given twice by ``#2``, ``#3``, ...

    >>> system_names(["exp1/scores.txt", "exp2/scores.txt", "b.h5", "b.h5"], ["test"])
    ['exp1/scores', 'exp2/scores', 'b', 'b#2', 'test']
    """
    names = [_system_name(p) for p in paths]
    folders = [[q for q in Path(p.rstrip("/")).parts[:-1] if q != "/"] for p in paths]
    for depth in range(1, max(map(len, folders), default=0) + 1):
        files: dict[str, set[str]] = {}
        for name, path in zip(names, paths, strict=True):
            files.setdefault(name, set()).add(os.path.normpath(path))
        clash = {name for name, found in files.items() if len(found) > 1}  # distinct files
        if not clash:
            break
        for k, name in enumerate(names):
            if name in clash and len(folders[k]) >= depth:
                names[k] = "/".join([*folders[k][-depth:], _system_name(paths[k])])
    out, seen = [], Counter()
    for name in [*names, *more]:  # the same file twice, or a file named as a scored system
        seen[name] += 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out


def _default_priors(args: argparse.Namespace) -> None:
    """``--prior`` not given: the default operating points (none when only
    ``--operating-point`` is given)."""
    if args.prior is None and getattr(args, "operating_point", None):
        args.prior = []  # only the operating points asked for
    elif args.prior is None:
        from bosaris_dask.metrics import DEFAULT_PRIORS

        args.prior = list(DEFAULT_PRIORS)


def _size(obj: Any) -> int:
    """The number of cells of a trial object (the ``size_hint`` that picks a scheduler)."""
    return int(obj.sizes.get("model", 0) * obj.sizes.get("segment", 0))


def _bootstrap_options(args: argparse.Namespace) -> dict[str, Any]:
    """``evaluate``'s bootstrap keywords from the command line (none when not asked for)."""
    names = ("ci", "bootstrap", "resample", "seed", "compare", "bootstrap_method")
    given = {n: getattr(args, n, None) for n in names}
    if given["ci"] is None and not any(given[n] for n in ("bootstrap", "resample", "compare")):
        for name in ("seed", "bootstrap_method"):  # said, not silently ignored
            if given[name] is not None and hasattr(args, "bootstrap"):  # (demo's own --seed)
                flag = "--" + name.replace("_", "-")
                raise OptionError(f"{flag} needs --bootstrap B (the number of resamples)")
        return {}
    given["resample"] = given["resample"] or ()
    given["compare"] = bool(given["compare"])
    given["bootstrap_method"] = given["bootstrap_method"] or "multinomial"
    return given


def _evaluate(args: argparse.Namespace, key: Any, systems: list[Any], score_paths: Sequence[str]):
    from bosaris_dask.llr_base import thresholds_from_natural
    from bosaris_dask.metrics import evaluate

    more = []
    if len(score_paths or []) < len(systems):  # the last system is scored from embeddings
        from bosaris_dask.cli.embeddings import embedding_system_name

        more.append(embedding_system_name(args))
    names = system_names(score_paths or [], more)
    with warnings.catch_warnings():
        from bosaris_dask.passes.exact_auc import ExactAucWarning

        warnings.simplefilter("ignore", ExactAucWarning)  # said once, in one line, below
        results = _run_evaluate(evaluate, args, key, systems, names)
    for note in results.attrs.get("auc_notes", []):
        print(f"warning: {note}", file=sys.stderr)
    return thresholds_from_natural(results, getattr(args, "llr_base", "e"))


def _run_evaluate(evaluate: Any, args: argparse.Namespace, key: Any, systems: list[Any],
                      names: list[str]) -> Any:  # fmt: skip
    return evaluate(
        systems, key, priors=args.prior, names=names,
        operating_points=getattr(args, "operating_point", None) or (),
        allow_missing=args.allow_missing, progress=_progress(args),
        conditions=getattr(args, "trial_conditions", None) or getattr(args, "conditions", None)
        or (), by=getattr(args, "by", None) or (),
        cprimary_priors=getattr(args, "cprimary_priors", None) or (),
        equalize=getattr(args, "equalize", False),
        fmr=getattr(args, "fmr", None) or (), fnmr=getattr(args, "fnmr", None) or (),
        ece_plo=getattr(args, "ece_plo", None), exact_auc=getattr(args, "exact_auc", False),
        **_bootstrap_options(args)
        | ({"resample": [args.trial_resample]} if getattr(args, "trial_resample", None) else {}),
    )  # fmt: skip


def _write_json(path: str, document: dict[str, Any]) -> None:
    from bosaris_dask.io.atomic import atomic_path

    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(document, indent=2) + "\n")


def _count_systems(args: argparse.Namespace, score_paths: list[str] | None) -> int:
    """The number of systems: the ``--scores`` files, and one more with ``--enrol``/``--test``
    (scored last)."""
    from bosaris_dask.cli.embeddings import uses_embeddings

    return len(score_paths or []) + int(uses_embeddings(args))
