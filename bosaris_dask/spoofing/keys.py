"""SASV keys: a BOSARIS Key whose boolean coordinate ``segment_spoof`` marks the spoofed
segments (their trials are spoofs, whatever their mask sign), and the countermeasure key
derived from one (bona fide +1, spoof -1), lazily.

Examples
--------
>>> from bosaris_dask.trials import make_key
>>> key = sasv_key(make_key(["m"], ["a", "b", "c"], [[1, -1, 1]]), [False, False, True])
>>> cm_key(key).trial_mask.values.tolist()
[[1, 1, -1]]
"""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask.errors import TrialError
from bosaris_dask.trials import kind_of, make_key, trial_classes

#: The coordinate of an SASV key that marks spoofed segments.
SPOOF_COORD = "segment_spoof"


def sasv_key(key: xr.Dataset, spoof_segments: Any) -> xr.Dataset:
    """An SASV key: ``key`` (a BOSARIS Key, +1 target, -1 non-target) with the boolean
    coordinate ``segment_spoof`` marking the spoofed segments (their trials are spoofs).

    Examples
    --------
    >>> k = sasv_key(make_key(["m"], ["a", "b"], [[1, -1]]), [False, True])
    >>> k.segment_spoof.values.tolist()
    [False, True]
    """
    if kind_of(key) != "key":
        raise TrialError(f"an SASV key is built on a key, got {kind_of(key)}")
    flags = np.asarray(spoof_segments)
    if flags.dtype != bool or flags.shape != (key.sizes["segment"],):
        raise TrialError(f"segment_spoof must be {key.sizes['segment']} booleans (one per "
                         f"segment), got {flags.dtype} of shape {flags.shape}")  # fmt: skip
    return key.assign_coords({SPOOF_COORD: ("segment", flags)})


def spoof_flags(key: xr.Dataset) -> np.ndarray:
    if kind_of(key) != "key" or SPOOF_COORD not in key.coords:
        raise TrialError("not an SASV key: a key with the coordinate segment_spoof is needed "
                         "(bosaris_dask.spoofing.sasv_key)")  # fmt: skip
    return np.asarray(key[SPOOF_COORD].values, dtype=bool)


def asv_classes(key: xr.Dataset, chunks: Any) -> tuple[da.Array, da.Array]:
    """The ASV codes (+1/-1/0) and the spoof flags broadcast, both in ``chunks``."""
    codes = trial_classes(key, chunks=chunks)
    flags = da.from_array(spoof_flags(key)[None, :], chunks=(1, chunks[1]))
    spoof = da.broadcast_to(flags, codes.shape, chunks=chunks)
    return codes, spoof


def cm_key(key: xr.Dataset, chunks: Any = None) -> xr.Dataset:
    """The countermeasure key of an SASV key, lazily: bona fide trials +1, spoofs -1.

    Examples
    --------
    >>> k = sasv_key(make_key(["m"], ["a", "b", "c"], [[1, -1, 1]]), [False, False, True])
    >>> cm_key(k).trial_mask.values.tolist()
    [[1, 1, -1]]
    """
    chunks = chunks or trial_classes(key).chunks
    codes, spoof = asv_classes(key, chunks)
    mask = da.where(codes != 0, da.where(spoof, -1, 1), 0).astype(np.int8)
    return make_key(key.model.values, key.segment.values, mask)
