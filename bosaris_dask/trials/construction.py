"""Building trial objects (Ndx, Key, Scores, Quality) and checking what one is.

Every constructor returns a validated :class:`xarray.Dataset` with lazy dask data (see
:mod:`bosaris_dask.trials` for the layout of each kind); :func:`validate`, :func:`kind_of` and
:func:`trial_classes` are what the rest of the package uses to accept one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import dask.array as da
import numpy as np
import pandas as pd
import xarray as xr

from bosaris_dask.errors import ScoreError, TrialError
from bosaris_dask.trials.key_codes import check_signs, raise_conflicts

KINDS = ("ndx", "key", "scores", "quality")

DIMS = ("model", "segment")


def _id_text(i: Any, what: str) -> str:
    """An id as text: bytes (as h5py reads strings) decoded as UTF-8, anything else ``str``
    (``str(b'm1')`` is ``"b'm1'"``, which no other id matches)."""
    if isinstance(i, bytes):
        try:
            return i.decode("utf-8")
        except UnicodeDecodeError:
            raise TrialError(f"{what} id {i[:60]!r} is bytes that are not UTF-8") from None
    if i is None or i is pd.NA or i is pd.NaT or (isinstance(i, (float, np.floating)) and i != i):
        raise TrialError(f"a {what} id is missing ({i!r}, e.g. a gap in a pandas column): "
                         "every id must be given")  # fmt: skip
    return str(i)


def _ids(ids: Iterable[Any], what: str) -> np.ndarray:
    """Ids as a 1-D object array of ``str`` (bytes decoded as UTF-8); duplicates are an error
    naming the first one.

    >>> _ids([b"m1", "m2", 3], "model").tolist()
    ['m1', 'm2', '3']
    """
    if isinstance(ids, (str, bytes)):  # one id, not its characters
        raise TrialError(f"the {what} ids are a list, not one string ({ids!r}): give [{ids!r}]")
    arr = np.asarray([_id_text(i, what) for i in ids], dtype=object)
    index = pd.Index(arr)
    if not index.is_unique:
        dup = index[index.duplicated()][0]
        raise TrialError(f"duplicate {what} id {dup!r}")
    return arr


def _lazy(x: Any, chunks: Any, dtype: Any) -> da.Array:
    if isinstance(x, da.Array):
        arr = x if chunks is None else x.rechunk(chunks)
    else:
        arr = da.from_array(np.asarray(x), chunks="auto" if chunks is None else chunks)
    return arr.astype(dtype, copy=False) if arr.dtype != dtype else arr


def _check_shape(name: str, arr: Any, models: np.ndarray, segments: np.ndarray) -> None:
    shape = np.shape(arr)
    if any(n != n for n in shape):  # a dask array after boolean indexing
        raise TrialError(f"{name} has unknown chunk sizes (shape {tuple(shape)}): call "
                         "its .compute_chunk_sizes() first")  # fmt: skip
    if tuple(shape) != (len(models), len(segments)):
        raise TrialError(
            f"{name} has shape {tuple(shape)} but there are {len(models)} model ids "
            f"and {len(segments)} segment ids"
        )


def _dataset(kind: str, models: np.ndarray, segments: np.ndarray, **variables: Any) -> xr.Dataset:
    data_vars = {name: (DIMS, arr) for name, arr in variables.items()}
    return xr.Dataset(
        data_vars, coords={"model": models, "segment": segments}, attrs={"bosaris_kind": kind}
    )


def make_ndx(
    models: Iterable[Any],
    segments: Iterable[Any],
    trial_mask: Any | None = None,
    *,
    chunks: Any = None,
) -> xr.Dataset:
    """Build an Ndx (a trial list) from ids and a boolean mask.

    Parameters
    ----------
    models, segments
        Model (row) and segment (column) ids; converted to ``str``, must be unique.
    trial_mask
        Boolean ``(n_models, n_segments)`` array (numpy or dask). ``None`` means every
        model-segment pair is a trial (a dense trial list), built lazily.
    chunks
        Dask chunks for numpy input (default: dask's ``"auto"``) or a rechunk of dask input.

    Examples
    --------
    >>> ndx = make_ndx(["m1"], ["s1", "s2"])
    >>> int(ndx.trial_mask.sum())
    2
    """
    m, s = _ids(models, "model"), _ids(segments, "segment")
    if trial_mask is None:
        mask = da.ones((len(m), len(s)), dtype=bool, chunks="auto" if chunks is None else chunks)
    else:
        _check_shape("trial_mask", trial_mask, m, s)
        mask = _lazy(trial_mask, chunks, bool)
    return _dataset("ndx", m, s, trial_mask=mask)


def make_key(
    models: Iterable[Any], segments: Iterable[Any], trial_mask: Any, *, chunks: Any = None
) -> xr.Dataset:
    """Build a Key from ids and a signed mask: +1 target, -1 non-target, 0 no trial.

    This is the BOSARIS HDF5 ``/trial_mask`` convention (``int8(tar) - int8(non)``).

    Examples
    --------
    >>> key = make_key(["m1"], ["s1", "s2"], [[1, -1]])
    >>> key.trial_mask.values.tolist()
    [[1, -1]]
    """
    m, s = _ids(models, "model"), _ids(segments, "segment")
    _check_shape("trial_mask", trial_mask, m, s)
    trial_mask = check_signs(trial_mask, m, s)
    dtype = np.int8
    if isinstance(trial_mask, da.Array) and trial_mask.dtype.kind == "i":
        dtype = trial_mask.dtype  # codes are checked per block and in pass 1: never wrap them
    return _dataset("key", m, s, trial_mask=_lazy(trial_mask, chunks, dtype))


def key_from_masks(
    models: Iterable[Any],
    segments: Iterable[Any],
    targets: Any,
    nontargets: Any,
    *,
    chunks: Any = None,
) -> xr.Dataset:
    """Build a Key from two boolean masks; a trial marked as both is an error.

    Examples
    --------
    >>> key_from_masks(["m"], ["a", "b"], [[True, False]], [[False, True]]).trial_mask.values
    array([[ 1, -1]], dtype=int8)
    """
    m, s = _ids(models, "model"), _ids(segments, "segment")
    _check_shape("targets", targets, m, s)
    _check_shape("nontargets", nontargets, m, s)
    tar = _lazy(_boolean(targets, "targets"), chunks, bool)
    non = _lazy(_boolean(nontargets, "nontargets"), tar.chunks, bool)
    raise_conflicts(tar & non, m, s, "trials are marked both target and non-target")
    mask = tar.astype(np.int8) - non.astype(np.int8)
    return _dataset("key", m, s, trial_mask=mask)


def make_scores(
    models: Iterable[Any],
    segments: Iterable[Any],
    score: Any,
    score_mask: Any | None = None,
    *,
    chunks: Any = None,
) -> xr.Dataset:
    """Build Scores from ids, a float score matrix and an optional boolean mask.

    ``score_mask=None`` means every entry is a score. float32 stays float32 (half the I/O of a
    billion-trial matrix); anything else becomes float64.

    Examples
    --------
    >>> s = make_scores(["m"], ["a", "b"], [[0.5, -1.0]])
    >>> s.score.dtype, bool(s.score_mask.all())
    (dtype('float64'), True)
    """
    m, s = _ids(models, "model"), _ids(segments, "segment")
    _check_shape("score", score, m, s)
    _check_score_dtype(score if isinstance(score, da.Array) else np.asarray(score))
    score = exact_in_float64(score, "scores")
    dtype = np.float32 if getattr(score, "dtype", None) == np.float32 else np.float64
    values = _lazy(score, chunks, dtype)
    if score_mask is None:
        mask = da.ones(values.shape, dtype=bool, chunks=values.chunks)
    else:
        _check_shape("score_mask", score_mask, m, s)
        mask = _lazy(_boolean(score_mask, "score_mask"), values.chunks, bool)
    return _dataset("scores", m, s, score=values, score_mask=mask)


def _boolean(mask: Any, name: str) -> Any:
    """``mask`` if it is boolean, or numbers that are 0 or 1 (checked here unless it is a
    dask array); else a TrialError (a -1 or a NaN was cast to True: a non-target a target).

    >>> _boolean([[1, 0]], "targets")
    [[1, 0]]
    >>> _boolean([[1, -1]], "targets")
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.TrialError: targets is a mask: True/False or 1/0, found -1
    """
    arr = mask if isinstance(mask, da.Array) else np.asarray(mask)
    if arr.dtype == bool:
        return mask
    if arr.dtype.kind not in "iuf":
        raise TrialError(f"{name} is a mask: True/False or 1/0, not dtype {arr.dtype}")
    if isinstance(arr, da.Array) or not arr.size:
        return mask
    if arr.dtype.kind in "iu" and arr.min() >= 0 and arr.max() <= 1:
        return mask  # (two reductions, no temporaries)
    bad = arr[(arr != 0) & (arr != 1)]  # NaN too
    if bad.size:
        raise TrialError(f"{name} is a mask: True/False or 1/0, found {bad[0]}")
    return mask


def _check_score_dtype(score: Any, what: str = "scores") -> None:
    """Scores are real numbers (float, or integers made float); strings, complex numbers,
    booleans and Python objects are an error rather than a silent conversion."""
    if score.dtype.kind not in "iuf":
        raise ScoreError(
            f"{what} must be real numbers (floats or integers), got dtype {score.dtype}"
        )


#: Integers up to this magnitude are exact in float64; beyond it some round into ties.
EXACT_INTEGERS = 2**53


def _checked_dtype(dtype: np.dtype) -> bool:
    """Whether scores of ``dtype`` may hold values float64 does not: int64/uint64 (beyond
    :data:`EXACT_INTEGERS`) and floats wider than float64 (``numpy.longdouble``)."""
    return dtype.kind in "iu" and dtype.itemsize >= 8 or dtype.kind == "f" and dtype.itemsize > 8


def check_exact_in_float64(values: np.ndarray, what: str) -> np.ndarray:
    """``values``, after checking that float64, in which scores are evaluated, holds them
    exactly: a ScoreError naming ``what`` for an integer beyond :data:`EXACT_INTEGERS` or a
    ``longdouble`` that float64 rounds, where distinct scores would become ties.

    >>> check_exact_in_float64(np.array([2**53, -3]), "s").tolist()
    [9007199254740992, -3]
    >>> try:
    ...     check_exact_in_float64(np.array([2**60 + 1, 2**60]), "s")
    ... except ScoreError as exc:
    ...     print(str(exc)[:51])
    s: integer scores reach 1152921504606846977, beyond
    """
    if not (_checked_dtype(values.dtype) and values.size):
        return values
    if values.dtype.kind == "f":
        rounded = values.astype(np.float64)
        lost = np.flatnonzero((rounded != values) & ~np.isnan(values))
        if lost.size:
            value = np.format_float_positional(values.flat[lost[0]], unique=True)
            raise ScoreError(f"{what}: the {values.dtype} score {value} is not a float64, in "
                             f"which scores are evaluated (it rounds to {rounded.flat[lost[0]]}"
                             "), where distinct scores may become ties: give float64")  # fmt: skip
        return values
    big = max(abs(int(values.min())), abs(int(values.max())))
    if big > EXACT_INTEGERS:
        raise ScoreError(f"{what}: integer scores reach {big}, beyond 2**53, where float64 "
                         "misses integers: give floats")  # fmt: skip
    return values


def exact_in_float64(score: Any, what: str) -> Any:
    """:func:`check_exact_in_float64` of a dask array's blocks as they are computed (the array
    itself where its dtype cannot hold a value float64 does not)."""
    if not isinstance(score, da.Array):
        return check_exact_in_float64(np.asarray(score), what)
    if not _checked_dtype(score.dtype):
        return score
    return score.map_blocks(check_exact_in_float64, what, dtype=score.dtype)


def quality_table(ids: Iterable[Any], values: Any, *, measures: Iterable[Any] | None = None):
    """A quality table: one row of ``q`` quality measures per model or segment id.

    Returns a :class:`xarray.DataArray` named ``quality`` with dims ``("id", "measure")``.

    Examples
    --------
    >>> t = quality_table(["s1", "s2"], [[0.1, 3.0], [0.2, 4.0]])
    >>> t.dims, t.sel(id="s2").values.tolist()
    (('id', 'measure'), [0.2, 4.0])
    """
    i = _ids(ids, "quality")
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2 or v.shape[0] != len(i):
        raise TrialError(f"quality values have shape {v.shape} for {len(i)} ids")
    meas = np.arange(v.shape[1]) if measures is None else np.asarray(list(measures))
    return xr.DataArray(
        v, dims=("id", "measure"), coords={"id": i, "measure": meas}, name="quality"
    )


def make_quality(
    model_quality: xr.DataArray | None = None, segment_quality: xr.DataArray | None = None
) -> xr.Dataset:
    """Combine a model-side and a segment-side quality table into a Quality object.

    Examples
    --------
    >>> q = make_quality(segment_quality=quality_table(["s1"], [[1.0, 2.0]]))
    >>> q.segment_quality.dims
    ('segment', 'segment_measure')
    """
    if model_quality is None and segment_quality is None:
        raise TrialError("a Quality object needs a model-side or a segment-side table")
    parts = []
    for side, table in (("model", model_quality), ("segment", segment_quality)):
        if table is not None:
            renamed = table.rename({"id": side, "measure": f"{side}_measure"})
            parts.append(renamed.rename(f"{side}_quality").to_dataset())
    ds = xr.merge(parts, compat="override", join="outer")
    ds.attrs["bosaris_kind"] = "quality"
    return ds


def kind_of(obj: xr.Dataset) -> str:
    """The kind of a trial object: ``"ndx"``, ``"key"``, ``"scores"`` or ``"quality"``."""
    if not isinstance(obj, xr.Dataset):
        got = f"{type(obj).__module__}.{type(obj).__qualname__}"
        raise TrialError(
            f"expected a bosaris trial object (an xarray Dataset: Scores, Key, Ndx or Quality), "
            f"got {got}; the array metrics (bosaris_dask.metrics.eer, ...) take score arrays"
        )
    kind = obj.attrs.get("bosaris_kind")
    if kind is None and "plo" in obj.dims and "operating_point" in obj.coords:
        raise TrialError("got an evaluation's result where a trial object (Scores, Key, Ndx or "
                         "Quality) was expected")  # fmt: skip
    if kind not in KINDS:
        why = (" (an xarray operation may have dropped the attrs; "
               "xr.set_options(keep_attrs=True) keeps them)" if kind is None else "")  # fmt: skip
        raise TrialError(f"not a bosaris trial object (attrs['bosaris_kind'] = {kind!r}){why}")
    return kind


def is_label_key(obj: xr.Dataset) -> bool:
    """Whether ``obj`` is a key derived from class labels (its mask is never stored): it has
    both sides' labels, and its ``trial_mask`` is still the one they give. A mask restricted
    (``align`` to an Ndx), edited or loaded into memory is the key's trials from then on, and
    the labels only ride along: the engine reads that mask, never the labels behind it.

    Examples
    --------
    >>> from bosaris_dask.trials import key_from_labels
    >>> key = key_from_labels(["m1", "m2"], ["a", "b"], ["s1", "s2"], ["a", "a"])
    >>> is_label_key(key), is_label_key(key.assign(trial_mask=key.trial_mask.where(
    ...     key.segment != "s2", 0)))
    (True, False)
    """
    if kind_of(obj) != "key" or not {"model_label", "segment_label"} <= set(obj.coords):
        return False
    mask = obj.trial_mask.data
    if not isinstance(mask, da.Array):
        return False
    from bosaris_dask.trials.labels import label_mask  # (labels builds on this module)

    labels = obj.model_label.values, obj.segment_label.values
    return mask.name == label_mask(*labels, mask.chunks).name


_REQUIRED = {
    "ndx": {"trial_mask": "b"},
    "key": {"trial_mask": "i"},
    "scores": {"score": "f", "score_mask": "b"},
}


def validate(obj: xr.Dataset) -> xr.Dataset:
    """Check the structure of a trial object and return it unchanged.

    Checks the kind, the dimensions, the dtypes and that ids are unique; computes nothing.

    Raises
    ------
    TrialError
        Naming what is wrong.
    ScoreError
        If the scores are not real numbers.
    """
    kind = kind_of(obj)
    for dim in ("model", "segment") if kind != "quality" else ():
        if dim not in obj.coords:
            raise TrialError(f"{kind} has no {dim!r} ids")
        if dim not in obj.dims and obj[dim].ndim:  # a level of a stacked index
            along = obj[dim].dims[0]
            raise TrialError(f"{kind}: its {dim} ids lie along {along!r}, not a {dim!r} dimension "
                             f"(stacked): unstack it first, {kind}.unstack({along!r})")  # fmt: skip
        if dim not in obj.dims:
            raise TrialError(
                f"{kind} has one {dim} and no {dim!r} dimension (a selection of one id, "
                f"{kind}.sel({dim}='x'), drops it: select a list, {kind}.sel({dim}=['x']))"
            )
        index = obj.indexes[dim]
        if not index.is_unique:
            raise TrialError(f"duplicate {dim} id {index[index.duplicated()][0]!r} in {kind}")
    for name, dtype_kind in _REQUIRED.get(kind, {}).items():
        if name not in obj.data_vars:
            raise TrialError(f"{kind} has no {name!r} variable")
        var = obj[name]
        if var.dims != DIMS:
            turned = (f": transpose it ({kind}.transpose{DIMS})"
                      if set(var.dims) == set(DIMS) else "")  # fmt: skip
            raise TrialError(f"{kind}.{name} has dims {var.dims}, expected {DIMS}{turned}")
        if name == "score":
            _check_score_dtype(var, "scores.score")
        elif var.dtype.kind != dtype_kind:
            raise TrialError(f"{kind}.{name} has dtype {var.dtype}{_WHOLE_DATASET_HINT[kind]}")
    return obj


#: Why a mask may have become numbers: xarray applies an operation on a Dataset to every
#: variable (``scores * 2``, ``.where``, ``.fillna``, ``.astype``).
_WHOLE_DATASET_HINT = {
    "scores": " (an operation on the whole Dataset, e.g. scores * 2, applies to score_mask too: "
    "operate on the scores alone, e.g. scores.assign(score=scores.score * 2))",
    "key": " (expected integer codes -1, 0, +1: an operation on the whole Dataset, e.g. "
    ".where or .reindex, may have made them floats)",
    "ndx": " (expected booleans: an operation on the whole Dataset, e.g. .where or .reindex, "
    "may have made them numbers)",
}


def trial_classes(trials: xr.Dataset, chunks: Any = None) -> da.Array:
    """The signed trial mask of a Key (+1/-1/0) or an Ndx (+1/0) as a dask array.

    For a label-derived key with ``chunks`` given, the mask is generated directly in those chunks
    (no rechunking of a stored mask).
    """
    kind = kind_of(trials)
    validate(trials)  # (a transposed square mask would read as a swapped one)
    if kind == "key" and is_label_key(trials) and chunks is not None:
        from bosaris_dask.trials.labels import label_mask

        return label_mask(trials.model_label.values, trials.segment_label.values, chunks)
    mask = trials.trial_mask.data
    if not isinstance(mask, da.Array):
        mask = da.from_array(mask, chunks="auto")
    mask = mask.astype(np.int8)
    if kind not in ("key", "ndx"):
        raise TrialError(f"expected a key or an ndx, got {kind}")
    return mask if chunks is None else mask.rechunk(chunks)
