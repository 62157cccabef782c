"""Keys derived from class labels: one label per model and per segment, a trial a target iff
the two are equal. The mask is never stored: each block is computed from its rows' and
columns' labels (and a strided part of a block, for the sampled passes, from theirs).

Examples
--------
>>> key = key_from_labels(["m1", "m2"], ["a", "b"], ["s1", "s2", "s3"], ["b", None, "a"])
>>> key.trial_mask.values.tolist()  # a missing label: no trial
[[-1, 0, 1], [1, 0, -1]]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any

import dask.array as da
import numpy as np
import pandas as pd
import xarray as xr

from bosaris_dask.errors import TrialError
from bosaris_dask.passes import inline_blocks, subgrids
from bosaris_dask.trials.construction import _dataset, _ids

__all__ = ["key_from_labels", "label_mask"]


def _label_codes(model_labels: Any, segment_labels: Any) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of two label arrays over their union; missing labels (NaN/None) give -1."""
    ml, sl = pd.Series(np.asarray(model_labels)), pd.Series(np.asarray(segment_labels))
    codes, _ = pd.factorize(pd.concat([ml, sl], ignore_index=True).astype(object))
    return codes[: len(ml)].astype(np.int64), codes[len(ml) :].astype(np.int64)


def _mask_from_codes(mcodes: np.ndarray, scodes: np.ndarray) -> np.ndarray:
    same = mcodes[:, None] == scodes[None, :]
    mask = same.view(np.int8) * np.int8(2) - np.int8(1)  # +1 target, -1 non-target
    if mcodes.min(initial=0) < 0 or scodes.min(initial=0) < 0:  # a missing label: no trial
        mask[(mcodes < 0)[:, None] | (scodes < 0)[None, :]] = 0
    return mask


def label_mask(model_labels: Any, segment_labels: Any, chunks: Any) -> da.Array:
    """The lazy signed trial mask of a label-derived key, in the given 2-D ``chunks``.

    Each block is computed from the labels alone (target iff the labels are equal, no trial
    where a label is missing), so the mask is never stored; a strided part of a block, from
    its rows' and columns' labels alone (:mod:`bosaris_dask.passes.subgrids`).
    """
    mcodes, scodes = _label_codes(model_labels, segment_labels)
    shape = (len(mcodes), len(scodes))
    chunks = da.core.normalize_chunks(chunks, shape, dtype=np.int8)
    mask = _outer_mask(mcodes, scodes, chunks)
    subgrids.register_reader(mask, partial(_strided_mask, mcodes, scodes, chunks))
    return mask


def _outer_mask(mcodes: np.ndarray, scodes: np.ndarray, chunks: tuple[tuple[int, ...], ...]
                ) -> da.Array:  # fmt: skip
    # the codes ride inside the mask's tasks (no task per block of codes: inline_blocks)
    return inline_blocks.blockwise(
        _mask_from_codes, "ij", inline_blocks.per_block(mcodes, chunks[0]), "i",
        inline_blocks.per_block(scodes, chunks[1]), "j", dtype=np.int8, concatenate=True,
    )  # fmt: skip


def _strided_mask(mcodes: np.ndarray, scodes: np.ndarray, chunks: tuple[tuple[int, ...], ...],
                  i: int, j: int, rs: int, cs: int) -> da.Array:  # fmt: skip
    rows = mcodes[sum(chunks[0][:i]) : sum(chunks[0][: i + 1]) : rs]
    cols = scodes[sum(chunks[1][:j]) : sum(chunks[1][: j + 1]) : cs]
    return _outer_mask(rows, cols, ((len(rows),), (len(cols),)))


def _check_label_types(model_labels: np.ndarray, segment_labels: np.ndarray) -> None:
    """A TrialError where the two sides' labels share no value but share text: labels are
    compared as values (``'1'`` is not ``1``), where ids are compared as text, so a key of
    text model labels and integer segment labels would have no target."""
    ml, sl = (pd.unique(pd.Series(x).dropna()) for x in (model_labels, segment_labels))
    if len(pd.Index(ml).intersection(pd.Index(sl))):
        return
    shared = set(map(str, ml)) & set(map(str, sl))
    if shared:
        label = sorted(shared)[0]
        kinds = sorted({type(v).__name__ for v in (*ml, *sl) if str(v) == label})
        raise TrialError(f"the model and segment labels share no value, but both hold {label!r} "
                         f"(as {' and '.join(kinds)}): labels are compared as values; give both "
                         "sides' labels as text")  # fmt: skip


def key_from_labels(
    models: Iterable[Any],
    model_labels: Sequence[Any] | np.ndarray,
    segments: Iterable[Any],
    segment_labels: Sequence[Any] | np.ndarray,
    *,
    chunks: Any = "auto",
) -> xr.Dataset:
    """Build a dense Key from one class label per model and per segment (target iff equal).

    The key costs no storage: its ``trial_mask`` is computed block by block from the labels,
    which are kept as the coordinates ``model_label`` and ``segment_label``.

    Examples
    --------
    >>> key = key_from_labels(["m1", "m2"], ["spk1", "spk2"], ["s1", "s2"], ["spk2", "spk2"])
    >>> key.trial_mask.values.tolist()
    [[-1, -1], [1, 1]]
    """
    m, s = _ids(models, "model"), _ids(segments, "segment")
    ml, sl = np.asarray(model_labels, dtype=object), np.asarray(segment_labels, dtype=object)
    if ml.shape != m.shape or sl.shape != s.shape:
        raise TrialError(
            f"{ml.size if ml.ndim else 'one string of'} model labels for {len(m)} models, "
            f"{sl.size if sl.ndim else 'one string of'} segment labels for {len(s)} segments "
            "(one label per id)"
        )
    _check_label_types(ml, sl)
    key = _dataset("key", m, s, trial_mask=label_mask(ml, sl, chunks))
    return key.assign_coords(model_label=("model", ml), segment_label=("segment", sl))
