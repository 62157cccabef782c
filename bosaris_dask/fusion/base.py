"""What every fitted score model shares about its inputs and outputs: applying it chunk by
chunk, and the trials it is given.

:func:`apply_block` is the per-chunk kernel of every linear ``transform`` (a trial of a
non-finite score named by its ids: :func:`with_ids`); :func:`wanted_trials` and
:func:`_output_mask` say which trials an output holds; :func:`scores_and_key` takes ``fit``'s
arguments in the order ``(scores, key)`` (that of ``evaluate``) and, for one release, swaps the
order of earlier releases with a ``FutureWarning``. The models' parameters and JSON files are
:mod:`bosaris_dask.fusion.json_model`'s.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask._deprecation import warn_swapped
from bosaris_dask.errors import (
    OptionError,
    ScoreError,
    TrialError,
    have,
)
from bosaris_dask.objectives.cells import quality_terms
from bosaris_dask.trials import trial_classes


def apply_block(
    *blocks: np.ndarray,
    n_systems: int,
    weights: np.ndarray,
    offset: float,
    W: np.ndarray | None = None,
    ids: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """The fused LLRs of one chunk (0.0 where a trial has no score in some system).

    ``blocks`` are ``K`` score blocks, ``K`` mask blocks and, with ``W``, the chunk's
    model-side and segment-side quality vectors: its rows' and its columns' (2-D) or, for
    packed trials, each cell's own (3-D, ``(rows, columns, Q)``:
    :func:`~bosaris_dask.objectives.cells.quality_terms`). ``ids``: the chunk's model and segment
    ids, which an error names (:func:`with_ids` hands them to a block function).

    Raises
    ------
    ScoreError
        If a scored trial's fused value is not finite (a non-finite input score).

    Examples
    --------
    >>> apply_block(np.array([[1.0, np.nan]]), np.array([[True, False]]), n_systems=1,
    ...             weights=np.array([2.0]), offset=-1.0).tolist()
    [[1.0, 0.0]]
    """
    k = n_systems
    scores, masks = blocks[:k], blocks[k : 2 * k]
    mask = masks[0].copy()
    for m in masks[1:]:
        mask &= m
    with np.errstate(invalid="ignore", over="ignore"):
        llr = np.full(mask.shape, float(offset))
        for w, s in zip(weights, scores, strict=True):
            llr += float(w) * s.astype(np.float64, copy=False)
        if W is not None:
            qm, qs = blocks[2 * k], blocks[2 * k + 1]
            llr += quality_terms(qm, W, qs)
    bad = mask & ~np.isfinite(llr)
    if bad.any():
        raise nonfinite_error(bad, ids)
    return np.where(mask, llr, 0.0)


def nonfinite_error(
    bad: np.ndarray, ids: tuple[np.ndarray, np.ndarray] | None, *, fused: bool = True
) -> ScoreError:
    """The error of a chunk's scored trials whose output is not finite (``bad``: a
    non-finite input score, or, ``fused``, an LLR that overflows), naming the first by its
    ``ids`` (the chunk's model and segment ids) where they are known.

    Examples
    --------
    >>> bad = np.array([[False, True], [False, True]])
    >>> str(nonfinite_error(bad, (np.array(["m1", "m2"]), np.array(["s1", "s2"]))))
    '2 scored trials of a chunk have a non-finite score (or their LLR overflows), e.g. (m1, s2)'
    """
    n = int(np.count_nonzero(bad))
    if ids is None:
        return ScoreError(f"{have(n, 'scored trial')} a non-finite score")
    r, c = (int(i) for i in np.argwhere(bad)[0][:2])
    why = " (or their LLR overflows)" if fused else ""
    return ScoreError(f"{n} scored trials of a chunk have a non-finite score{why}, e.g. "
                      f"({ids[0][r]}, {ids[1][c]})")  # fmt: skip


def with_ids(block: Callable[..., np.ndarray], like: xr.Dataset, chunks: Any) -> tuple[Any, list]:
    """``block`` (a block function taking ``ids=``) for ``da.blockwise`` over ``"ij"`` chunks
    of ``like``'s grid, and the leading blockwise arguments that hand each chunk its model
    and segment ids (so that its errors name a trial)."""
    models = da.from_array(np.asarray(like.model.values, dtype=object), chunks=(chunks[0],))
    segments = da.from_array(np.asarray(like.segment.values, dtype=object), chunks=(chunks[1],))
    return partial(_named, block), [models, "i", segments, "j"]


def _named(block: Callable[..., np.ndarray], models: np.ndarray, segments: np.ndarray,
           *blocks: np.ndarray, **options: Any) -> np.ndarray:  # fmt: skip
    return block(*blocks, ids=(models, segments), **options)


def _output_mask(aligned: Sequence[xr.Dataset], ndx: xr.Dataset | None) -> da.Array:
    mask = aligned[0].score_mask.data
    for s in aligned[1:]:
        mask = mask & s.score_mask.data
    if ndx is not None:
        mask = mask & (trial_classes(ndx, chunks=mask.chunks) != 0)
    return mask


def wanted_trials(ndx: xr.Dataset | None, like: xr.Dataset) -> xr.Dataset:
    """``transform``'s output grid: ``ndx`` (an Ndx, or a Key's trials), or ``like`` without it.

    Examples
    --------
    >>> from bosaris_dask.trials import make_scores
    >>> s = make_scores(["m"], ["s"], [[0.5]])
    >>> wanted_trials(s, s)
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.TrialError: ndx must be an Ndx or a Key (the trials wanted), not scores
    """
    if ndx is None:
        return like
    kind = _kind(ndx)
    if kind not in ("ndx", "key"):
        raise TrialError(f"ndx must be an Ndx or a Key (the trials wanted), not {kind}")
    return ndx


def _as_list(scores: xr.Dataset | Sequence[xr.Dataset]) -> list[xr.Dataset]:
    return [scores] if isinstance(scores, xr.Dataset) else list(scores)


def _kind(obj: Any) -> str | None:
    if isinstance(obj, xr.Dataset):
        return obj.attrs.get("bosaris_kind")
    if isinstance(obj, list | tuple) and obj and isinstance(obj[0], xr.Dataset):
        return _kind(obj[0])
    return None


def check_system_order(trained: list[str] | None, given: list[str], model: str) -> None:
    """Refuse the systems of a fusion given in another order than it was trained on: the same
    names permuted, or names that differ from the trained ones only by a part all of them
    share (``devA``, ``devB`` against ``evalB``, ``evalA``), permuted: each weight would
    multiply another system's scores.

    Examples
    --------
    >>> check_system_order(["a", "b"], ["b", "a"], "fusion.json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.OptionError: fusion.json: the fusion's systems are a, b in that order...
    >>> check_system_order(["dev/a", "dev/b"], ["eval/a", "eval/b"], "fusion.json")  # other sets
    >>> check_system_order(["devA", "devB"], ["evalB", "evalA"], "f.json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.OptionError: f.json: the fusion's systems are devA, devB in that order...
    """
    for first, second in _same_names(trained, given):
        if first != second:
            order, wrong = ", ".join(trained or []), ", ".join(given)
            raise OptionError(f"{model}: the fusion's systems are {order} in that order, not "
                              f"{wrong}: give them in the training order")  # fmt: skip


def order_checkable(trained: list[str] | None, given: list[str]) -> bool:
    """Whether :func:`check_system_order` could check ``given`` against ``trained``: the same
    names, or the same once the part each set's names share is left out.

    >>> order_checkable(["devA", "devB"], ["evalA", "evalB"])
    True
    >>> order_checkable(["a", "b"], ["x", "y"])
    False
    """
    return bool(_same_names(trained, given))


def _same_names(trained: list[str] | None, given: list[str]) -> list[tuple[list[str], list[str]]]:
    """The forms of the two lists of names (as they are; without the part each list's names
    share) in which they hold the same names, in any order."""
    if not trained or len(trained) != len(given):
        return []
    forms = ((trained, given), (distinct_parts(trained), distinct_parts(given)))
    return [(a, b) for a, b in forms if sorted(a) == sorted(b)]


def distinct_parts(names: Sequence[str]) -> list[str]:
    """Each name without the prefix and the suffix all the names share (a set's tag such as
    ``dev``/``eval``, a common extension).

    >>> distinct_parts(["dev/sysA.v1", "dev/sysB.v1"]), distinct_parts(["a"])
    (['A', 'B'], ['a'])
    """
    if len(names) < 2:
        return list(names)
    head = len(os.path.commonprefix(list(names)))
    rests = [name[head:] for name in names]
    tail = len(os.path.commonprefix([r[::-1] for r in rests]))
    return [r[: len(r) - tail] for r in rests]


def check_systems(systems: Sequence[Any], n_systems: int) -> None:
    """A TrialError unless ``systems`` are ``n_systems`` Scores objects (a key among them is
    named as such, not counted as a system short).

    Examples
    --------
    >>> from bosaris_dask.trials import make_key
    >>> check_systems([make_key(["m"], ["s"], [[1]])], 2)
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.TrialError: system 1 is a key, not Scores
    """
    for k, system in enumerate(systems):
        kind = _kind(system)
        if kind != "scores":
            shown = f"a {kind}" if kind else f"a {type(system).__name__}"
            raise TrialError(f"system {k + 1} is {shown}, not Scores")
    if len(systems) != n_systems:
        raise TrialError(f"expected {n_systems} Scores, got {len(systems)}")


def scores_and_key(first: Any, second: Any, method: str, *, stacklevel: int = 3) -> tuple[Any, Any]:
    """``fit``'s first two arguments as ``(scores, key)``.

    A key first and scores second is the order of earlier releases: it is swapped, with a
    ``FutureWarning`` (``stacklevel`` is that of the user's call; the default fits a call
    from the public method that called this).

    Examples
    --------
    >>> from bosaris_dask.trials import kind_of, make_key, make_scores
    >>> key, scores = make_key(["m"], ["s"], [[1]]), make_scores(["m"], ["s"], [[0.5]])
    >>> s, k = scores_and_key(scores, key, "fit")
    >>> kind_of(s), kind_of(k)
    ('scores', 'key')
    """
    if _kind(first) == "key" and _kind(second) == "scores":
        warn_swapped(method, stacklevel=stacklevel + 1)
        return second, first
    return first, second
