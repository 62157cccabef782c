"""Matching an ASVspoof 5 key with its score file (:mod:`bosaris_dask.spoofing.files` reads
both): each key trial's row in the score file, found by filename (track 1) or by speaker and
filename (track 2), as numpy arrays by class (:func:`cm_arrays`, :func:`sasv_arrays`) or as
BOSARIS Key and Scores datasets for the engine (:func:`cm_key_and_scores`,
:func:`sasv_key_and_scores`).

A key trial without a score is a :class:`~bosaris_dask.errors.MissingTrialsError` naming a
few, unless ``allow_missing`` leaves such trials out, as if the key did not list them; a class
emptied by that is a :class:`~bosaris_dask.errors.TrialError` saying how many were dropped.
Scores of trials the key does not list are ignored.

Examples
--------
>>> import numpy as np
>>> key = CMKey("key.tsv", np.array(["E1", "E2"], dtype=object), np.array([True, False]))
>>> scores = CMScores("cm.tsv", np.array(["E2", "E1"], dtype=object), np.array([-1.5, 2.0]))
>>> cm_arrays(scores, key)  # (bona fide, spoof) scores
(array([2.]), array([-1.5]))
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import TypeVar

import numpy as np
import xarray as xr

from bosaris_dask._deprecation import warn_swapped
from bosaris_dask.errors import MissingTrialsError, ParseError, TrialError
from bosaris_dask.spoofing.files import (
    NONTARGET,
    SPOOF,
    TARGET,
    CMKey,
    CMScores,
    SASVKey,
    SASVScores,
)

T = TypeVar("T")

__all__ = ["cm_arrays", "sasv_arrays", "cm_key_and_scores", "sasv_key_and_scores"]


def _positions(key_names: np.ndarray, key_path: str, names: np.ndarray, path: str,
               key_speakers: np.ndarray | None = None, speakers: np.ndarray | None = None,
               allow_missing: bool = False) -> np.ndarray:  # fmt: skip
    """Row of each key trial (filename, or speaker and filename) in the score file; a key
    trial without a score is an error naming a few, or, with ``allow_missing``, row -1."""
    if key_speakers is None:
        key_trials, trials = key_names.tolist(), names.tolist()
    else:
        key_trials = list(zip(key_speakers.tolist(), key_names.tolist(), strict=True))
        trials = list(zip(speakers.tolist(), names.tolist(), strict=True))
    where = {trial: i for i, trial in enumerate(trials)}
    rows = np.array([where.get(trial, -1) for trial in key_trials], dtype=np.int64)
    missing = np.flatnonzero(rows < 0)
    if missing.size and not allow_missing:
        what = "filename(s)" if key_speakers is None else "trial(s) (speaker filename)"
        few = ", ".join(repr(n if key_speakers is None else " ".join(n))
                        for n in (key_trials[i] for i in missing[:3]))  # fmt: skip
        raise MissingTrialsError(f"{missing.size} {what} of {key_path} have no score in {path}: "
                                 f"{few}{' ...' if missing.size > 3 else ''} (allow_missing "
                                 "drops them)")  # fmt: skip
    return rows


def _scored(key: CMKey | SASVKey, rows: np.ndarray) -> tuple[CMKey | SASVKey, np.ndarray]:
    """The key without its trials of row -1 (no score), and the rows of the others."""
    kept = rows >= 0
    if kept.all():
        return key, rows
    arrays = {f.name: getattr(key, f.name)[kept] for f in dataclasses.fields(key)
              if f.name != "path"}  # fmt: skip
    return dataclasses.replace(key, **arrays), rows[kept]


def _dropped(key: CMKey | SASVKey, kept: CMKey | SASVKey, scores: CMScores | SASVScores) -> str:
    """What a class error adds when key trials without a score were left out."""
    n = key.filename.size - kept.filename.size
    return f" with a score in {scores.path} ({n} key trials without one dropped)" if n else ""


def _cm_rows(key: CMKey, scores: CMScores, allow_missing: bool) -> tuple[CMKey, np.ndarray]:
    """The key (without its trials that have no score, where allowed) and their rows; an
    ASVspoof 2019 score file's own key must agree with the key file's."""
    rows = _positions(key.filename, key.path, scores.filename, scores.path,
                      allow_missing=allow_missing)  # fmt: skip
    kept, rows = _scored(key, rows)
    if scores.bonafide is not None and scores.line is not None:
        differ = np.flatnonzero(scores.bonafide[rows] != kept.bonafide)
        if differ.size:
            i = differ[0]
            said = "bonafide" if kept.bonafide[i] else "spoof"
            raise ParseError(
                f"the key column says {'spoof' if said == 'bonafide' else 'bonafide'} for "
                f"{kept.filename[i]}, where {key.path} says {said} ({differ.size:,} such row"
                f"{'s' * (differ.size > 1)}): is this the score file of that key?",
                scores.path, int(scores.line[rows[i]]),
            )  # fmt: skip
    return kept, rows  # type: ignore[return-value]


def _scores_then_key(
    scores_type: type, key_type: type
) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Make a function of ``(scores, key)`` (the order of ``evaluate``) take the order
    ``(key, scores)`` of earlier releases too, swapped with a ``FutureWarning``, and refuse
    other objects with a :class:`~bosaris_dask.errors.TrialError` naming what it takes."""

    def wrap(func: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(func)
        def ordered(scores: object, key: object, *, allow_missing: bool = False) -> T:
            name = func.__name__
            if isinstance(scores, key_type) and isinstance(key, scores_type):
                warn_swapped(name)
                scores, key = key, scores
            if not (isinstance(scores, scores_type) and isinstance(key, key_type)):
                given = f"{type(scores).__name__}, {type(key).__name__}"
                raise TrialError(f"{name} takes ({scores_type.__name__}, {key_type.__name__}), "
                                 f"not ({given})")  # fmt: skip
            return func(scores, key, allow_missing=allow_missing)

        return ordered

    return wrap


@_scores_then_key(CMScores, CMKey)
def cm_arrays(
    scores: CMScores, key: CMKey, *, allow_missing: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """``(bona fide scores, spoof scores)``; scores of filenames not in the key are ignored.
    A key filename without a score is an error, unless ``allow_missing`` (then it is left
    out). The order ``(key, scores)`` of earlier releases still works, with a
    ``FutureWarning``."""
    kept, rows = _cm_rows(key, scores, allow_missing)
    score = scores.score[rows]
    _both_classes(key, kept, scores)
    return score[kept.bonafide], score[~kept.bonafide]


def _both_classes(key: CMKey, kept: CMKey, scores: CMScores) -> None:
    """Bona fide and spoof trials both among the key's trials with a score, or an error
    (saying how many were dropped for want of one)."""
    n_bona = int(np.count_nonzero(kept.bonafide))
    n_spoof = kept.bonafide.size - n_bona
    if not n_bona or not n_spoof:
        raise TrialError(f"{key.path}: need bona fide and spoof trials, found {n_bona} bona "
                         f"fide and {n_spoof} spoof{_dropped(key, kept, scores)}")  # fmt: skip


def _sasv_rows(
    key: SASVKey, scores: SASVScores, allow_missing: bool = False
) -> tuple[SASVKey, np.ndarray]:
    """The key (without its trials that have no score, where allowed) and the row of each
    of its trials in the score file; every class present."""
    rows = _positions(key.filename, key.path, scores.filename, scores.path, key.speaker,
                      scores.speaker, allow_missing)  # fmt: skip
    kept, rows = _scored(key, rows)
    classes = {"target": TARGET, "nontarget": NONTARGET, "spoof": SPOOF}
    for name, code in classes.items():
        if not np.any(kept.asv_class == code):
            raise TrialError(f"{key.path}: no {name} trial{_dropped(key, kept, scores)}")
    return kept, rows  # type: ignore[return-value]


@_scores_then_key(SASVScores, SASVKey)
def sasv_arrays(
    scores: SASVScores, key: SASVKey, *, allow_missing: bool = False
) -> dict[str, dict[str, np.ndarray]]:
    """Scores by column and class: ``out[column][cls]``, column ``cm``/``asv``/``sasv`` (those
    given), class ``target``/``nontarget``/``spoof``; trials are matched on speaker and
    filename. A key trial without a score is an error, unless ``allow_missing`` (then it is
    left out). The order ``(key, scores)`` of earlier releases still works, with a
    ``FutureWarning``."""
    key, rows = _sasv_rows(key, scores, allow_missing)
    classes = {"target": TARGET, "nontarget": NONTARGET, "spoof": SPOOF}
    return {
        column: {name: values[rows][key.asv_class == code] for name, code in classes.items()}
        for column, values in scores.columns().items()
    }


@_scores_then_key(CMScores, CMKey)
def cm_key_and_scores(
    scores: CMScores, key: CMKey, *, allow_missing: bool = False
) -> tuple[xr.Dataset, xr.Dataset]:
    """A BOSARIS Key and Scores (in that order) of a track-1 set, for
    :func:`bosaris_dask.metrics.evaluate`.

    One model, ``"cm"``; one segment per key filename; bona fide trials are targets, spoofs
    non-targets (the challenge's convention: a CM accepts bona fide speech). A key filename
    without a score is an error, unless ``allow_missing``: then it is left out of both (the
    key's segments are the scored filenames; the difference in size is the count dropped).
    The order ``(key, scores)`` of earlier releases still works, with a ``FutureWarning``.

    Examples
    --------
    >>> key = CMKey("k", np.array(["a", "b"], dtype=object), np.array([True, False]))
    >>> kd, sd = cm_key_and_scores(CMScores("s", key.filename, np.array([1.0, -1.0])), key)
    >>> kd.trial_mask.values.tolist(), sd.score.values.tolist()
    ([[1, -1]], [[1.0, -1.0]])
    """
    from bosaris_dask.trials.construction import make_key, make_scores

    kept, rows = _cm_rows(key, scores, allow_missing)
    if kept is not key:  # trials dropped: an emptied class says so (the engine would not)
        _both_classes(key, kept, scores)
    key, score = kept, scores.score[rows]
    segments = key.filename.astype(str)
    mask = np.where(key.bonafide, 1, -1).astype(np.int8)[None, :]
    return make_key(["cm"], segments, mask), make_scores(["cm"], segments, score[None, :])


@_scores_then_key(SASVScores, SASVKey)
def sasv_key_and_scores(
    scores: SASVScores, key: SASVKey, *, allow_missing: bool = False
) -> tuple[xr.Dataset, dict[str, xr.Dataset]]:
    """An SASV key and the score columns given (in that order) of a track-2 set, for
    :func:`bosaris_dask.spoofing.scale.evaluate_sasv`; the arguments in the order of
    ``evaluate`` (``(key, scores)``, of earlier releases, with a ``FutureWarning``).

    One model, ``"sasv"``; one segment per key trial, named ``"speaker filename"`` (a blank
    cannot occur inside a field, so the pair reads back unambiguously). The key is a BOSARIS
    Key (targets +1, non-targets and spoofs -1) with the coordinate ``segment_spoof``
    (:func:`bosaris_dask.spoofing.keys.sasv_key`); the scores are those of ``{"cm", "asv",
    "sasv"}`` the file gives. A key trial without a score is an error, unless
    ``allow_missing``: then it is left out of both, as in :func:`cm_key_and_scores`.

    Examples
    --------
    >>> names = np.array(["a", "b", "a"], dtype=object)  # file "a" trialled for two speakers
    >>> speakers = np.array(["s", "s", "t"], dtype=object)
    >>> key = SASVKey("k", speakers, names, np.array([TARGET, SPOOF, NONTARGET], dtype=np.int8))
    >>> one = np.array([1.0, 0.0, -1.0])
    >>> kd, sd = sasv_key_and_scores(SASVScores("s", speakers, names, None, None, one), key)
    >>> kd.segment.values.tolist(), kd.trial_mask.values.tolist(), sorted(sd)
    (['s a', 's b', 't a'], [[1, -1, -1]], ['sasv'])
    """
    from bosaris_dask.spoofing.keys import sasv_key
    from bosaris_dask.trials.construction import make_key, make_scores

    key, rows = _sasv_rows(key, scores, allow_missing)
    segments = np.char.add(np.char.add(key.speaker.astype(str), " "), key.filename.astype(str))
    mask = np.where(key.asv_class == TARGET, 1, -1).astype(np.int8)[None, :]
    out = sasv_key(make_key(["sasv"], segments, mask), key.asv_class == SPOOF)
    columns = {name: make_scores(["sasv"], segments, values[rows][None, :])
               for name, values in scores.columns().items()}  # fmt: skip
    return out, columns
