"""Operations on trial objects: align, filter, merge, coverage, and the scores of one class.

All are lazy where the inputs are: aligning adds fill values (:data:`_FILL`) where rows or
columns are new, merging checks for conflicting trials in one pass.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterable
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask._deprecation import warn_renamed
from bosaris_dask.errors import MissingTrialsError, TrialError, have
from bosaris_dask.progress import compute
from bosaris_dask.trials.construction import (
    _dataset,
    _ids,
    is_label_key,
    kind_of,
    trial_classes,
    validate,
)
from bosaris_dask.trials.id_twins import warn_id_twins
from bosaris_dask.trials.key_codes import raise_conflicts
from bosaris_dask.trials.labels import key_from_labels

#: The fill value of each data variable where an alignment adds rows or columns.
_FILL = {"trial_mask": 0, "score": 0.0, "score_mask": False}

#: A trial object of at most this many cells is reindexed from memory, a gather per block of
#: the result: xarray's lazy reindex of a small matrix onto a large grid of mostly other ids
#: splits the result into a chunk per run of indices (2 x 2 scores on a 508 x 500 key: 250
#: times the chunks, and a fit's pass took 2 minutes instead of a second).
SMALL_SOURCE_CELLS = 1 << 20


def _gathered(
    obj: xr.Dataset, rows: np.ndarray, cols: np.ndarray, m: Any, s: Any, chunks: Any
) -> xr.Dataset:
    """``obj`` (small) on the ids ``m`` x ``s`` (``rows``/``cols``: their positions in ``obj``,
    -1 for new ids), lazily in ``chunks``, each block gathered from the in-memory matrices."""
    import dask

    r = da.from_array(rows[:, None], chunks=(chunks[0], 1))
    c = da.from_array(cols[None, :], chunks=(1, chunks[1]))
    data = {}
    for name in (n for n in _FILL if n in obj.data_vars):
        values = obj[name].data
        # one task holds the whole (small) source: lazily, as an alignment stays lazy
        source = dask.delayed(values if isinstance(values, da.Array) else np.asarray(values))
        data[name] = (("model", "segment"), da.map_blocks(
            _gather, r, c, source=source, fill=_FILL[name], dtype=values.dtype,
            chunks=chunks, meta=np.empty((0, 0), dtype=values.dtype)))  # fmt: skip
    return xr.Dataset(data, coords={"model": m, "segment": s}, attrs=dict(obj.attrs))


def _gather(rows: np.ndarray, cols: np.ndarray, source: np.ndarray, fill: Any) -> np.ndarray:
    """The cells ``source[rows, cols]`` of one block (``fill`` where either is -1)."""
    r, c = rows[:, 0], cols[0]
    out = source[np.ix_(np.maximum(r, 0), np.maximum(c, 0))] if source.size else np.zeros(
        (len(r), len(c)), dtype=source.dtype)  # fmt: skip
    out[(r < 0)[:, None] | (c < 0)[None, :]] = fill
    return out


def _shuffles(obj: xr.Dataset, rows: np.ndarray, cols: np.ndarray) -> bool:
    """Whether reindexing ``obj`` lazily would move cells between its chunks: ids in another
    order along an axis of several chunks (a dask shuffle, repeated in every pass)."""
    data = [obj[n].data for n in _FILL if n in obj.data_vars]
    if not data or not all(isinstance(d, da.Array) for d in data):
        return False
    for index, nchunks in ((rows, len(data[0].chunks[0])), (cols, len(data[0].chunks[1]))):
        kept = index[index >= 0]
        if nchunks > 1 and len(kept) > 1 and (np.diff(kept) < 0).any():
            return True
    return False


def _chunks_of(
    like: Any, shape: tuple[int, int], plan: tuple[int, int]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``like``'s chunks when they fit ``shape`` and are no bigger than ``plan``'s (a key's
    int8 chunks hold more cells than a score chunk should), else chunks of the ``plan`` shape."""
    if like is not None and tuple(sum(c) for c in like) == shape:
        if max(like[0]) * max(like[1]) <= plan[0] * plan[1]:
            return like
    return tuple(
        tuple(min(c, n - k) for k in range(0, n, c)) if n else (0,)
        for n, c in zip(shape, plan, strict=True)
    )


def _ids_as_text(obj: xr.Dataset) -> xr.Dataset:
    """``obj`` with ids that are not all strings (an integer id set in Python) as text, as the
    wanted ids are (:func:`reindex_ids`); two ids of one text (``0`` and ``'0'``) are an error."""
    text = {}
    for side in ("model", "segment"):
        index = obj.indexes[side]
        if index.inferred_type != "string" or not all(isinstance(i, str) for i in index[:1]):
            text[side] = _ids(index, side)
    return obj.assign_coords(text) if text else obj


def reindex_ids(
    obj: xr.Dataset,
    models: Iterable[Any],
    segments: Iterable[Any],
    *,
    once: bool = False,
    like_chunks: Any = None,
) -> xr.Dataset:
    """Reorder and resize a trial object to the given ids (:func:`align` to another object's).

    Ids not in ``obj`` become empty rows/columns (no trial, no score); ids of ``obj`` not listed
    are dropped. A label-derived key stays label-derived.

    When the ids are in another order along an axis that spans several chunks, reindexing
    lazily is a shuffle of every chunk with every other, repeated in every computation. With
    ``once=True`` (what evaluation and fitting use: several passes over the data) the matrices
    are then realigned now, once, through scratch files (:func:`bosaris_dask.io.staging.realign`,
    in ``like_chunks`` when given), and a message says so on the ``bosaris_dask.io`` logger;
    otherwise nothing is computed.

    Examples
    --------
    >>> from bosaris_dask.trials import make_ndx
    >>> ndx = make_ndx(["m1", "m2"], ["s1"])
    >>> reindex_ids(ndx, ["m2", "m3"], ["s1"]).trial_mask.values.tolist()
    [[True], [False]]
    """
    validate(obj)  # (a transposed square matrix would be read as a swapped one)
    m, s = _ids(models, "model"), _ids(segments, "segment")
    obj = _ids_as_text(obj)  # ids are matched as text on both sides: 0 is '0'
    if is_label_key(obj):
        ml = obj.model_label.to_series().reindex(m).to_numpy(dtype=object)
        sl = obj.segment_label.to_series().reindex(s).to_numpy(dtype=object)
        return key_from_labels(m, ml, s, sl, chunks=obj.trial_mask.data.chunksize)
    rows = obj.indexes["model"].get_indexer(m)
    cols = obj.indexes["segment"].get_indexer(s)
    shuffle = once and _shuffles(obj, rows, cols)
    gather = (obj.sizes["model"] * obj.sizes["segment"] <= SMALL_SOURCE_CELLS
              and set(obj.coords) == {"model", "segment"})  # fmt: skip
    if shuffle or gather:
        from bosaris_dask.io.compute import plan_chunks

        itemsize = max(obj[n].dtype.itemsize for n in _FILL if n in obj.data_vars)
        shape = (len(m), len(s))
        chunks = _chunks_of(like_chunks, shape, plan_chunks(shape, itemsize))
        if not shuffle:
            return _gathered(obj, rows, cols, m, s, chunks)
        from bosaris_dask.io.staging import realign

        return realign(obj, rows, cols, chunks, models=m, segments=s)
    fill = {k: v for k, v in _FILL.items() if k in obj.data_vars}
    out = obj.reindex(model=m, segment=s, fill_value=fill)
    for name in fill:  # reindexing with a fill value may upcast; restore dtypes
        out[name] = out[name].astype(obj[name].dtype)
    return out


def align(
    obj: xr.Dataset,
    like: xr.Dataset = None,  # type: ignore[assignment]  # None only in deprecated calls
    *deprecated_args: Any,
    log_missing: bool = False,
    once: bool = False,
    restrict: bool = True,
    **deprecated_kwargs: Any,
) -> xr.Dataset:
    """Align ``obj`` (typically Scores) to the ids of ``like`` and restrict it to its trials.

    The result has the model and segment ids of ``like`` in its order. When ``like`` is a Key
    or an Ndx, ``obj`` keeps only its trials (lazily; nothing is computed): Scores by ANDing
    their ``score_mask`` (a score of a pair that is not a trial is not a score any more), a Key
    or an Ndx by clearing its other cells (a label-derived key then holds the restricted mask,
    which is what is evaluated).
    With ``log_missing=True`` one pass counts what ``like`` has and ``obj`` lacks
    (:func:`bosaris_dask.trials.alignment_report`) and logs it at INFO on the
    ``"bosaris_dask"`` logger, as the toolkit prints it. ``once``: realign ids in another
    order now, once, rather than lazily in every pass (see :func:`reindex_ids`). ``restrict=False``
    keeps the score mask as it is, for callers that drop non-trials themselves (the engine's
    kernels do, by the key's classes: ANDing the mask would read the key twice per chunk).

    The ``align(obj, models, segments)`` of earlier releases (now :func:`reindex_ids`) and
    ``align_with(obj, like)`` (now this) still work for one release, with a ``FutureWarning``.

    Examples
    --------
    >>> from bosaris_dask.trials import make_ndx, make_scores
    >>> ndx = make_ndx(["m1", "m2"], ["s1", "s2"], [[True, False], [False, True]])
    >>> scores = make_scores(["m1"], ["s1", "s2"], [[1.0, 2.0]])
    >>> align(scores, ndx).score_mask.values.tolist()
    [[True, False], [False, False]]
    """
    if like is None and "models" in deprecated_kwargs:  # align(obj, models=..., segments=...)
        like = deprecated_kwargs.pop("models")
    if like is None:
        raise TypeError("align() missing 1 required positional argument: 'like'")
    if not isinstance(like, xr.Dataset):  # align(obj, models, segments) of earlier releases
        warn_renamed("align(obj, models, segments)", "reindex_ids(obj, models, segments)")
        return reindex_ids(obj, like, *deprecated_args, once=once, **deprecated_kwargs)
    if deprecated_args or deprecated_kwargs:
        raise TypeError("align(obj, like) takes no other positional or keyword arguments than "
                        "log_missing, once and restrict")  # fmt: skip
    obj = _chunked(validate(obj))
    validate(like)
    same = obj.indexes["model"].equals(like.indexes["model"]) and obj.indexes["segment"].equals(
        like.indexes["segment"]
    )
    if same:
        out = obj
    else:
        from bosaris_dask.trials.id_twins import warn_id_twins

        for side in ("model", "segment"):
            kinds = (kind_of(like), kind_of(obj))
            warn_id_twins(like.indexes[side], obj.indexes[side], side, kinds)  # (hashed once)
        chunks = None
        if "trial_mask" in like.data_vars and isinstance(like.trial_mask.data, da.Array):
            chunks = like.trial_mask.data.chunks
        out = reindex_ids(
            obj, like.model.values, like.segment.values, once=once, like_chunks=chunks
        )
    if restrict and kind_of(obj) in ("key", "ndx") and kind_of(like) in ("key", "ndx"):
        mask = out.trial_mask.data
        if not isinstance(mask, da.Array):
            mask = da.from_array(mask, chunks="auto")
        out = out.copy()
        trials = trial_classes(like, chunks=mask.chunks) != 0
        out["trial_mask"] = (out.trial_mask.dims, da.where(trials, mask, 0).astype(mask.dtype))
    if restrict and kind_of(obj) == "scores" and kind_of(like) in ("key", "ndx"):
        mask = out.score_mask.data
        out = out.copy()
        out["score_mask"] = (
            out.score_mask.dims,
            mask & (trial_classes(like, chunks=mask.chunks) != 0),
        )
        if log_missing:
            from bosaris_dask.trials.missing import alignment_report

            logging.getLogger("bosaris_dask").info("%s", alignment_report(obj, like))
    return out


def _signature_without_deprecated(func: Any) -> inspect.Signature:
    """``func``'s signature without its ``*deprecated_args, **deprecated_kwargs`` (for help())."""
    sig = inspect.signature(func)
    kinds = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return sig.replace(parameters=[p for p in sig.parameters.values() if p.kind not in kinds])


align.__signature__ = _signature_without_deprecated(align).replace(  # type: ignore[attr-defined]
    parameters=[
        p.replace(default=inspect.Parameter.empty) if p.name == "like" else p
        for p in _signature_without_deprecated(align).parameters.values()
    ]
)


def _chunked(obj: xr.Dataset) -> xr.Dataset:
    """``obj`` with its matrices as dask arrays (a trial object loaded into memory, e.g. by
    ``.compute()``, in the chunks a store of it would have), as every pass expects."""
    matrices = [v for v in obj.data_vars.values() if v.dims == ("model", "segment")]
    if all(isinstance(v.data, da.Array) for v in matrices):
        return obj
    from bosaris_dask.io.compute import plan_chunks

    itemsize = max((v.dtype.itemsize for v in matrices), default=1)
    rows, cols = plan_chunks((obj.sizes["model"], obj.sizes["segment"]), itemsize)
    return obj.chunk({"model": rows, "segment": cols})


def align_with(
    obj: xr.Dataset, like: xr.Dataset, *, log_missing: bool = False, once: bool = False
) -> xr.Dataset:
    """Deprecated name of :func:`align` (removed in the next release)."""
    warn_renamed("align_with(obj, like)", "align(obj, like)")
    return align(obj, like, log_missing=log_missing, once=once)


def filter_trials(
    obj: xr.Dataset,
    models: Iterable[Any] | None = None,
    segments: Iterable[Any] | None = None,
    *,
    keep: bool = True,
) -> xr.Dataset:
    """Keep (``keep=True``) or drop (``keep=False``) lists of models and/or segments.

    ``None`` leaves that dimension as it is. Listed ids that are absent are ignored.

    Examples
    --------
    >>> from bosaris_dask.trials import make_key, make_ndx
    >>> ndx = make_ndx(["m1", "m2", "m3"], ["s1", "s2"])
    >>> filter_trials(ndx, models=["m2"], keep=False).model.values.tolist()
    ['m1', 'm3']
    """
    out = obj
    for dim, ids in (("model", models), ("segment", segments)):
        if ids is None:
            continue
        if isinstance(ids, (str, bytes)):  # one id, not its characters
            ids = [ids]
        listed = out.indexes[dim].isin([str(i) for i in ids])
        out = out.isel({dim: np.flatnonzero(listed if keep else ~listed)})
    return out


def merge(first: xr.Dataset, second: xr.Dataset) -> xr.Dataset:
    """Merge two trial objects of the same kind over the union of their ids.

    A trial present in both must agree: the same label (Key) — a trial scored twice (Scores) is
    an error too. Checking this computes one pass over both objects.

    Raises
    ------
    TrialError
        When the kinds differ or the two objects conflict.

    Examples
    --------
    >>> from bosaris_dask.trials import make_key
    >>> a = make_key(["m1"], ["s1"], [[1]])
    >>> b = make_key(["m2"], ["s1"], [[-1]])
    >>> merge(a, b).trial_mask.values.tolist()
    [[1], [-1]]
    """
    kind = kind_of(first)
    if kind_of(second) != kind or kind == "quality":
        raise TrialError(f"cannot merge {kind} with {kind_of(second)}")
    for side in ("model", "segment"):  # 'café' twice, NFC and NFD: two ids, said
        warn_id_twins(second[side].values, first[side].values, side,
                      (f"second {kind}", f"first {kind}"))  # fmt: skip
    models = first.indexes["model"].union(second.indexes["model"], sort=False)
    segments = first.indexes["segment"].union(second.indexes["segment"], sort=False)
    a = reindex_ids(first, models, segments)
    b = reindex_ids(second, models, segments)
    if kind == "scores":
        both = a.score_mask.data & b.score_mask.data
        raise_conflicts(
            both, a.model.values, a.segment.values, "trials have a score in both inputs"
        )
        mask = a.score_mask.data | b.score_mask.data
        score = da.where(a.score_mask.data, a.score.data, b.score.data)
        return _dataset("scores", a.model.values, a.segment.values, score=score, score_mask=mask)
    ma, mb = a.trial_mask.data, b.trial_mask.data
    if kind == "key":
        conflict = (ma != 0) & (mb != 0) & (ma != mb)
        raise_conflicts(
            conflict, a.model.values, a.segment.values,
            "trials are target in one key and non-target in the other",
        )  # fmt: skip
        return _dataset(
            "key", a.model.values, a.segment.values, trial_mask=da.where(ma != 0, ma, mb)
        )
    return _dataset("ndx", a.model.values, a.segment.values, trial_mask=ma | mb)


def key_to_ndx(key: xr.Dataset) -> xr.Dataset:
    """The trial list of a key (its targets and non-targets)."""
    if kind_of(key) != "key":
        raise TrialError(f"expected a key, got {kind_of(key)}")
    return _dataset("ndx", key.model.values, key.segment.values, trial_mask=trial_classes(key) != 0)


def coverage(scores: xr.Dataset, trials: xr.Dataset) -> dict[str, int]:
    """How the scores of one system cover the trials of a Key (or Ndx), in one pass.

    :func:`~bosaris_dask.metrics.evaluate` raises for key trials without a score (unless
    ``allow_missing``) and ignores, as BOSARIS does, scores of trials that are not in the key
    (ids the key does not have, or pairs it does not list). This counts both.

    Returns
    -------
    dict
        ``trials``: trials of the key; ``scored``: those with a score; ``missing``: those
        without; ``scores``: entries of ``scores``; ``unused``: scores of trials not in the key.

    Examples
    --------
    >>> from bosaris_dask.trials import make_key, make_scores
    >>> key = make_key(["m1", "m2"], ["s1"], [[1], [-1]])
    >>> scores = make_scores(["m1", "m3"], ["s1", "s2"], [[1.0, 2.0], [3.0, 4.0]])
    >>> coverage(scores, key)
    {'trials': 2, 'scored': 1, 'missing': 1, 'scores': 4, 'unused': 3}
    """
    if kind_of(scores) != "scores":
        raise TrialError(f"expected Scores, got a {kind_of(scores)}")
    if kind_of(trials) not in ("key", "ndx"):
        raise TrialError(f"coverage counts the trials of a Key or an Ndx, not of "
                         f"{kind_of(trials)}")  # fmt: skip
    aligned = align(scores, trials)
    in_key = trial_classes(trials, chunks=aligned.score_mask.data.chunks) != 0
    n_trials, n_scored, n_scores = (
        int(n)
        for n in compute(
            (in_key.sum(), (in_key & aligned.score_mask.data).sum(), scores.score_mask.data.sum()),
            progress=None,
        )
    )
    return {
        "trials": n_trials,
        "scored": n_scored,
        "missing": n_trials - n_scored,
        "scores": n_scores,
        "unused": n_scores - n_scored,
    }


def _scores_of_class(
    scores: xr.Dataset, key: xr.Dataset, sign: int, allow_missing: bool
) -> np.ndarray:
    kinds = (kind_of(scores), kind_of(key))
    if kinds != ("scores", "key"):
        name = "target_scores" if sign > 0 else "nontarget_scores"
        raise TrialError(f"{name} takes (scores, key), not ({kinds[0]}, {kinds[1]})")
    s = align(scores, key)
    classes = trial_classes(key, chunks=s.score.data.chunks)
    wanted = classes == sign
    missing = int(compute((wanted & ~s.score_mask.data).sum(), progress=None))
    if missing and not allow_missing:
        raise MissingTrialsError(f"{have(missing, 'key trial')} no score")
    return np.asarray(compute(s.score.data[wanted & s.score_mask.data], progress=None))


def target_scores(scores: xr.Dataset, key: xr.Dataset, *, allow_missing: bool = False):
    """The scores of the key's target trials as a numpy array (row-major trial order).

    For small data and notebooks; the evaluation engine never materializes these.
    """
    return _scores_of_class(scores, key, 1, allow_missing)


def nontarget_scores(scores: xr.Dataset, key: xr.Dataset, *, allow_missing: bool = False):
    """The scores of the key's non-target trials as a numpy array (row-major trial order)."""
    return _scores_of_class(scores, key, -1, allow_missing)
