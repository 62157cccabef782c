"""Text trial lists read as lists: a sparse key list and its score files packed
(:mod:`bosaris_dask.io.text.packed`), the scores from embeddings of its trials pair by pair,
and its ``--by`` conditions and ``--resample`` groups from each trial's own ids, for the
commands whose results do not depend on the matrix's ids (:data:`_PACKING`)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bosaris_dask.cli.common import (
    _bootstrap_options,
    _in_natural,
    _say,
    _with_embeddings,
    system_names,
)
from bosaris_dask.errors import OptionError


def _text_inputs(
    args: argparse.Namespace,
    key_path: str,
    score_paths: Sequence[str],
    formats: tuple[str | None, str | None],
    llr_base: str,
    embeddings: bool,
) -> tuple[Any, list[Any]]:
    """A text key and text scores, each parsed once (with ``embeddings``, the scores from
    ``--enrol``/``--test`` the last system): packed when the key is sparse; else the key's
    grid, with a sparse score file (trials beyond the key's ids) put on that grid. A first
    score file that is the key itself (its labels) is parsed once for both.
    ``formats``: the text layouts of the key and of the scores (``None``: detected)."""
    from bosaris_dask.io.text import text_has_labels
    from bosaris_dask.io.text.packed import TrialList, on_grid, read_key_and_scores, read_trials

    key_format, text_format = formats
    own_key = (bool(score_paths) and score_paths[0] == key_path and key_format == text_format
               and text_has_labels(key_path, format=key_format))  # fmt: skip
    if own_key:  # a wrong path is the first error
        key, first = read_key_and_scores(key_path, format=key_format)
    else:
        key, first = read_trials(key_path, "key", format=key_format), None
    if isinstance(key, TrialList):
        return _packed(args, key, score_paths, text_format, llr_base, embeddings, first)
    systems = [] if first is None else [first]
    for path in score_paths[len(systems) :]:
        scores = checked_scores(path, text_format, key, key_path)
        systems.append(on_grid(scores, key) if isinstance(scores, TrialList) else scores)
    return key, _in_natural(_with_embeddings(args if embeddings else None, key, systems),
                            llr_base)  # fmt: skip


#: The commands that may take sparse text lists packed: what they compute does not depend on
#: the matrix's ids (calibrate and fuse train on them; --by conditions come from each trial's
#: own ids).
_PACKING = ("evaluate", "plot", "calibrate", "fuse")


def _may_pack(
    args: argparse.Namespace | None,
    key_path: str,
    score_paths: Sequence[str],
    embeddings: bool = False,
) -> bool:
    """Whether an evaluation or a fit may pack sparse text lists
    (:mod:`bosaris_dask.io.text.packed`): text files (regular files) and scores from
    embeddings (scored pair by pair). The bootstrap's groups, like ``--by`` conditions, come
    from each trial's own ids (:mod:`bosaris_dask.bootstrap.cells`), and so do quality
    measures (:func:`packed_quality`)."""
    if args is None or getattr(args, "command", None) not in _PACKING:
        return False
    if not (score_paths or embeddings):
        return False
    # (anything else: the readers of the grid say what it is)
    return all(_regular_text_file(p) for p in (key_path, *score_paths))


def _regular_text_file(path: str) -> bool:
    """Whether ``path`` is a regular file read as a text trial list (not a store, a pipe or
    an embedding file): what can be read as a list (:mod:`bosaris_dask.io.text.packed`)."""
    from bosaris_dask import io
    from bosaris_dask.io.text.scratch import _is_stream

    return (
        io.detect_format(path) == "text"
        and Path(path).is_file()
        and not _is_stream(path)
        and Path(path).suffix.lower() not in io.EMBEDDING_ONLY_SUFFIXES
    )


def _pairs_from_embeddings(args: argparse.Namespace) -> bool:
    """Whether ``--enrol``/``--test`` score the key's trials (then a sparse key's trials are
    scored pair by pair: :func:`~bosaris_dask.embeddings.scoring.trial_scores`)."""
    from bosaris_dask.cli.embeddings import uses_embeddings

    return uses_embeddings(args)


def say_packed(args: argparse.Namespace, trials: Any) -> None:
    """Say that a sparse list (a :class:`~bosaris_dask.io.text.packed.TrialList`) is read as
    packed trial lists, as every command reading one does."""
    n_m, n_s, n = len(trials.models), len(trials.segments), len(trials.values)
    _say(args, f"{trials.path}: {n:,} trials over {n_m:,} x {n_s:,} ids: read as packed "
               "trial lists, not as the ids' grid")  # fmt: skip


def _packed(
    args: argparse.Namespace,
    key: Any,
    score_paths: Sequence[str],
    text_format: str | None,
    llr_base: str,
    embeddings: bool,
    first: Any = None,
) -> tuple[Any, list[Any]]:
    """The packed key and systems of a sparse key list, text score files and (``embeddings``)
    the scores from ``--enrol``/``--test`` of its trials; errors in the grid's order: the
    key's, the files', the embeddings', then missing scores. ``first``: the first file's list,
    read with the key (the file is its own key)."""
    from bosaris_dask.io.text.packed import as_packed, pack

    key.refuse_duplicates()  # the key's errors first, as when it is read whole
    lists = score_lists(score_paths, text_format, first, key=key)
    say_packed(args, key)
    from_embeddings = _trial_scores(args, key) if embeddings else None
    allow_missing = bool(getattr(args, "allow_missing", False))
    packed_key, systems = pack(
        key, lists, names=system_names(list(score_paths)), allow_missing=allow_missing
    )
    if from_embeddings is not None:  # the last system, as on the grid
        systems.append(as_packed(key, from_embeddings))
    resample = getattr(args, "resample", None) and _bootstrap_options(args)
    if resample or getattr(args, "by", None):  # the tables read once, for both
        tables = _condition_tables(args)
    if resample:  # the groups made in the bootstrap
        from bosaris_dask.bootstrap.cells import TrialResample

        args.trial_resample = TrialResample(tuple(args.resample), tables, key.listed())
    if getattr(args, "by", None):  # each trial's condition, from its own ids
        args.trial_conditions = _trial_conditions(args, key, tables)
    if any(getattr(args, name, None) for name in ("quality", "model_quality", "segment_quality")):
        args.packed_list = key  # each trial's quality, from its own ids (packed_quality)
    return packed_key, _in_natural(systems, llr_base)


def _trial_scores(args: argparse.Namespace, key: Any) -> Any:
    """The scores from ``--enrol``/``--test`` of a key list's trials, pair by pair."""
    from bosaris_dask.embeddings import trial_scores

    return trial_scores(args.enrol, args.test, key.models, key.segments, key.model_codes,
                        key.segment_codes, backend=args.backend, center=args.center,
                        models=args.models, norm=args.norm, cohort=args.cohort,
                        top_n=args.top_n, device=args.device,
                        what="trial list" if key.kind == "ndx" else "key")  # fmt: skip


def _condition_tables(args: argparse.Namespace) -> tuple[Any, ...]:
    """The ``--conditions`` tables, read (the packed list's ``--resample`` groups are made
    from them in the bootstrap, :mod:`bosaris_dask.bootstrap.cells`)."""
    from bosaris_dask.conditions import read_condition_table

    return tuple(read_condition_table(p) for p in getattr(args, "conditions", None) or ())


def _trial_conditions(args: argparse.Namespace, key: Any, tables: Sequence[Any]) -> Any:
    """The ``--by`` conditions of a packed key list's trials (``--conditions`` tables)."""
    from bosaris_dask.conditions.cells import trial_conditions

    if not tables:
        raise OptionError("condition tables (--conditions) and --by specs go together")
    return trial_conditions(key.listed(), tables, args.by)


def packed_quality(args: argparse.Namespace, quality: Any) -> Any:
    """The quality of the trials of a key list read packed (:func:`_packed`): each cell
    gets its trial's model's and segment's vectors (:func:`list_quality`); ``quality`` itself
    (a Quality object of the grid's ids, or ``None``) where the key was read as the grid."""
    key = getattr(args, "packed_list", None)
    return quality if key is None else list_quality(quality, key)


def list_quality(quality: Any, order: Any) -> Any:
    """The quality of the trials of ``order`` (a TrialList) packed in its records' order: each
    cell its trial's model's and segment's vectors
    (:class:`~bosaris_dask.objectives.cells.TrialQuality`); ``None`` without ``quality``.

    Examples
    --------
    >>> import numpy as np
    >>> from bosaris_dask.io.text.packed import TrialList
    >>> from bosaris_dask.trials import make_quality, quality_table
    >>> ids = np.array(["a", "b"], dtype=object)
    >>> order = TrialList("o", ids, ids, np.array([1, 0]), np.array([0, 0]), np.ones(2), float)
    >>> q = make_quality(quality_table(["a", "b"], [[1.0], [2.0]]),
    ...                  quality_table(["a"], [[5.0]]))
    >>> qm, qs = list_quality(q, order).cells()
    >>> qm.tolist(), qs.tolist()  # trial 1 is (b, a), trial 2 (a, a)
    ([[[2.0, 1.0], [1.0, 1.0]]], [[[5.0, 1.0], [5.0, 1.0]]])
    """
    if quality is None:
        return None
    from bosaris_dask.objectives import trial_quality

    return trial_quality(quality, order.listed())


def score_lists(
    score_paths: Sequence[str], text_format: str | None, first: Any = None, key: Any = None
) -> list[Any]:
    """The text score files as lists, each refusing a trial given twice (at its lines);
    ``first``: the first file's, read already; ``key``: a key list, which the labels of a file
    with a label column are checked against (:func:`checked_scores`)."""
    from bosaris_dask.io.text.packed import TrialList

    lists = [] if first is None else [first]
    for path in score_paths[len(lists) :]:
        if key is None:
            lists.append(TrialList.read(path, "scores", format=text_format))
        else:
            lists.append(checked_scores(path, text_format, key, key.path, as_lists=True))
    for scores in lists:
        scores.refuse_duplicates()
    return lists


def checked_scores(
    path: str, text_format: str | None, key: Any, key_path: str, *, as_lists: bool = False
) -> Any:
    """The scores of a text file in one parse (a list where ``as_lists`` or it is sparse:
    :func:`~bosaris_dask.io.text.packed.read_trials`); where the file has a label column too,
    a :class:`~bosaris_dask.cli.label_agreement.LabelWarning` if its labels contradict those of
    ``key`` (read from ``key_path``)."""
    from bosaris_dask.io.text.packed import TrialList, read_trials

    if not has_labels(path, text_format):
        if as_lists:
            return TrialList.read(path, "scores", format=text_format)
        return read_trials(path, "scores", format=text_format, like=key)
    return labelled_scores(path, text_format, key, key_path, as_lists=as_lists)


def has_labels(path: str, text_format: str | None) -> bool:
    """Whether a text score file has a label column too (False where its first lines do not
    read: its read as scores then names what is wrong as a score)."""
    from bosaris_dask.errors import ParseError
    from bosaris_dask.io.text import text_has_labels

    try:
        return text_has_labels(path, format=text_format)
    except ParseError:
        return False


def labelled_scores(
    path: str, text_format: str | None, key: Any, key_path: str, *, as_lists: bool = False
) -> Any:
    """The scores of a text file with a label column, its labels read in the same parse and
    checked against those of ``key`` (:func:`checked_scores`)."""
    from bosaris_dask.cli.label_agreement import warn_disagreeing_labels
    from bosaris_dask.io.text.packed import read_key_and_scores

    like = None if as_lists else key
    labels, scores = read_key_and_scores(path, format=text_format, like=like, as_lists=as_lists)
    warn_disagreeing_labels(key, labels, path, key_path)
    return scores
