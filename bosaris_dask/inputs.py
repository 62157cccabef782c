"""An evaluation's inputs: checked, laid out for the kernels, and the errors their trials call for.

One place for what :func:`bosaris_dask.engine.summarize` and the grouped pass 1
(:mod:`bosaris_dask.passes.grouped_histograms`) require of the scores and the key, and how they say
it:

- :func:`check_inputs`: the cheap structural checks before any graph is built (kinds, dims,
  dtypes, unique ids, names: :func:`check_names`, which fits use too);
- :func:`pass_inputs`: the arrays the kernels read (the key's trial classes, then each system's
  scores and mask, in one chunking and one score dtype);
- :func:`key_codes_check`: pass 1's check of the key's codes (only -1, 0 and +1);
- :func:`raise_trial_errors` and :func:`check_both_classes`: the error a system's pass-1 counts
  call for (non-finite scores, key trials without a score, no targets or no non-targets), each
  naming a trial or the counts, worded by :func:`trial_cells_error` (as fits and ``apply``
  word them too).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask.errors import MissingTrialsError, OptionError, ScoreError, TrialError, have
from bosaris_dask.passes import inline_blocks, kernels, runner
from bosaris_dask.trials import align, is_label_key, kind_of, locate, trial_classes, validate
from bosaris_dask.trials.construction import exact_in_float64

if TYPE_CHECKING:  # pragma: no cover
    from bosaris_dask.passes.score_summary import ScoreSummary

__all__ = [
    "check_inputs",
    "check_key",
    "check_names",
    "names_or_default",
    "pass_inputs",
    "key_codes_check",
    "raise_trial_errors",
    "trial_cells_error",
    "check_both_classes",
]


def check_inputs(
    scores: Sequence[xr.Dataset], key: xr.Dataset, names: Sequence[str] | None
) -> None:
    """Cheap structural checks (kinds, dims, dtypes, unique ids, names); computes nothing."""
    check_key(scores, key)
    validate(key)
    if len(scores) == 0:
        raise TrialError("no systems to evaluate (an empty list of Scores)")
    for k, s in enumerate(scores):
        if kind_of(s) != "scores":
            raise TrialError(f"system {k + 1} is a {kind_of(s)}, not Scores")
        validate(s)
    check_names(names, len(scores))


def check_key(scores: Sequence[Any], key: Any) -> None:
    """A TrialError unless ``key`` is a Key; one that says so where the arguments came in the
    order ``(key, scores)``.

    Examples
    --------
    >>> from bosaris_dask.trials import make_key, make_scores
    >>> key, scores = make_key(["m"], ["s"], [[1]]), make_scores(["m"], ["s"], [[0.5]])
    >>> check_key([key], scores)
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.TrialError: the scores come first: (scores, key), not (key, scores)
    """
    kind = _kind(key)
    if kind == "key":
        return
    if kind == "scores" and any(_kind(s) == "key" for s in scores):
        raise TrialError("the scores come first: (scores, key), not (key, scores)")
    shown = kind or f"a {type(key).__name__}, not a trial object"
    if kind is None and isinstance(key, xr.Dataset):
        given = key.attrs.get("bosaris_kind")
        shown += _LOST_KIND if given is None else (
            f" (attrs['bosaris_kind'] is {given!r}: one of 'key', 'ndx', 'scores', 'quality')"
        )  # fmt: skip
    raise TrialError(f"evaluation needs a key, got {shown}")


#: Why a Dataset that was a trial object is no longer one.
_LOST_KIND = (" (attrs['bosaris_kind'] is not set: an xarray operation may have dropped the "
              "attrs; xr.set_options(keep_attrs=True) keeps them)")  # fmt: skip


def _kind(obj: Any) -> str | None:
    """The trial kind of ``obj``, ``None`` for anything else."""
    try:
        return kind_of(obj)
    except TrialError:
        return None


def names_or_default(names: Sequence[str] | None, n_systems: int) -> list[str]:
    """``names`` as a list, else ``system-1``, ..., ``system-N``: how every result and error
    names systems not given names.

    >>> names_or_default(None, 2), names_or_default(("a",), 1)
    (['system-1', 'system-2'], ['a'])
    """
    return list(names) if names is not None else [f"system-{k + 1}" for k in range(n_systems)]


def check_names(names: Sequence[str] | None, n_systems: int) -> None:
    """An :class:`OptionError` unless ``names`` (if given) name ``n_systems`` systems apart.

    Examples
    --------
    >>> check_names(["a"], 2)
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.OptionError: 1 names for 2 systems
    >>> check_names("sys", 1)
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.OptionError: names must be a list of names, one per system, not the \
string 'sys' (give ['sys'])
    """
    if names is None:
        return
    if isinstance(names, str):
        raise OptionError(f"names must be a list of names, one per system, not the string "
                          f"{names!r} (give [{names!r}])")  # fmt: skip
    if len(names) != n_systems:
        raise OptionError(f"{len(names)} names for {n_systems} systems")
    if len(set(map(str, names))) < len(names):
        twice = next(n for k, n in enumerate(names) if str(n) in map(str, names[:k]))
        raise OptionError(f"system name {str(twice)!r} is given twice: names must tell the "
                          "systems apart")  # fmt: skip


def pass_inputs(scores: Sequence[xr.Dataset], key: xr.Dataset) -> tuple[list[da.Array], np.dtype]:
    """The kernels' inputs (key classes, then each system's scores and mask) and score dtype."""
    if not is_label_key(key) and key.trial_mask.dtype != np.int8:
        # keep codes outside -1/0/+1 outside them when the kernels' int8 conversion wraps
        key = key.assign(trial_mask=key.trial_mask.clip(-2, 2))
    # passes: realign once; the kernels drop non-trials by the key classes, so the score
    # masks need no AND with the key (which cost two temporaries and a classes_of per block)
    aligned = [align(s, key, once=True, restrict=False) for s in scores]
    dtypes = {np.dtype(s.score.dtype) for s in aligned}
    chunks = aligned[0].score.data.chunks
    inputs = [trial_classes(key, chunks=chunks)]
    for s in aligned:  # (int64 and longdouble scores checked to be exact in float64)
        score = exact_in_float64(s.score.data.rechunk(chunks), "scores")
        inputs += [score, s.score_mask.data.rechunk(chunks)]
    dtype = np.dtype(np.float32) if dtypes == {np.dtype(np.float32)} else np.dtype(np.float64)
    if dtype == np.float64:
        inputs = [a.astype(np.float64) if i % 2 == 1 else a for i, a in enumerate(inputs)]
    return inputs, dtype


def key_codes_check(
    classes: da.Array, key: xr.Dataset, blocks: dict[str, int]
) -> tuple[list[Any], runner.Aggregation]:
    """The pass-1 check of the key's codes: the ``lead`` arrays (trial row and column
    positions) for :func:`bosaris_dask.passes.runner.run_pass` and the aggregation that counts codes
    outside -1/0/+1 and raises :class:`TrialError` naming the first."""
    n_rows, n_cols = classes.shape
    positions = [inline_blocks.per_block(np.arange(n_rows), classes.chunks[0]), "i",
                 inline_blocks.per_block(np.arange(n_cols), classes.chunks[1]), "j"]  # fmt: skip
    codes = runner.Aggregation(
        "key codes", partial(kernels.key_codes_kernel, n_cols=n_cols, **blocks), 2,
        combine=kernels.merge_key_codes, finalize=partial(_raise_bad_codes, key=key, n_cols=n_cols),
    )  # fmt: skip
    return positions, codes


def _raise_bad_codes(head: np.ndarray, *, key: xr.Dataset, n_cols: int) -> None:
    """Raise :class:`TrialError` naming a trial if pass 1 found key codes outside -1/0/+1."""
    count, first = head
    if not count:
        return
    i, j = divmod(int(first), n_cols)
    code = key.trial_mask.data[i, j]
    # one element of the key, for the error message: no pass, no progress bar
    code = int(code.compute() if isinstance(code, da.Array) else code)
    raise TrialError(
        "a key's trial_mask holds only -1 (non-target), 0 (no trial) and +1 (target); "
        f"found {code} at ({key.model.values[i]}, {key.segment.values[j]})"
        + (f" and {int(count) - 1} more bad values" if count > 1 else "")
    )


def raise_trial_errors(
    name: str,
    bad: int,
    missing: int,
    classes: da.Array,
    scores: da.Array,
    mask: da.Array,
    key: xr.Dataset,
    allow_missing: bool,
) -> None:
    """The error a system's pass-1 counts call for, naming a trial: ``bad`` scored trials with
    non-finite scores (ScoreError), ``missing`` key trials without a score (MissingTrialsError,
    unless ``allow_missing``). ``classes`` are the key's trial classes, ``mask`` the scores'."""
    ids = key.model.values, key.segment.values
    if bad:
        raise trial_cells_error(name, ~da.isfinite(scores) & (classes != 0) & mask, *ids, bad)
    if missing and not allow_missing:
        raise trial_cells_error(name, (classes != 0) & ~mask, *ids, missing, missing=True)


def trial_cells_error(
    name: str,
    cells: da.Array,
    models: np.ndarray,
    segments: np.ndarray,
    count: int | None = None,
    *,
    missing: bool = False,
) -> ScoreError | MissingTrialsError:
    """The error of a system's trials at the lazy boolean ``cells``: non-finite scores
    (ScoreError), or with ``missing`` key trials without a score (MissingTrialsError), with
    their ``count`` (computed if not given) and a few of them by ``models`` and ``segments``:
    how every command words them (found by one more look at the data, on an error path only).

    Examples
    --------
    >>> cells = da.from_array(np.array([[False, True]]))
    >>> str(trial_cells_error("sys", cells, np.array(["m"]), np.array(["s1", "s2"])))
    'sys: 1 trial has a non-finite score, e.g. (m, s2)'
    """
    from bosaris_dask.progress import compute

    where = locate(cells, models, segments)
    n = int(compute(cells.sum(), progress=None)) if count is None else count
    if missing:
        return MissingTrialsError(
            f"{name}: {have(n, 'key trial')} no score, e.g. {where} (allow_missing drops them)"
        )
    return ScoreError(f"{name}: {have(n, 'trial')} a non-finite score, e.g. {where}")


def check_both_classes(summary: ScoreSummary) -> ScoreSummary:
    """``summary``, or the ScoreError of a system whose scored key trials lack a class (the
    key's doing, or the scores' where they miss a class's trials: both counts are said)."""
    if summary.n_target == 0 or summary.n_nontarget == 0:
        n = summary.n_missing
        missing = f" ({n:,} key trial{'s' * (n != 1)} without a score)" if n else ""
        raise ScoreError(
            f"{summary.name}: need both targets and non-targets, found {summary.n_target} "
            f"targets and {summary.n_nontarget} non-targets among the key's scored trials"
            f"{missing}"
        )
    return summary
