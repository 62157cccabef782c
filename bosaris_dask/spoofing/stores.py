"""ASVspoof sets as zarr stores: what ``bosaris-dask spoof --out-dir DIR`` writes and
``--set-dir DIR`` reads.

A set is a directory of ordinary bosaris_dask zarr stores (:func:`bosaris_dask.io.write_zarr`):

- ``key.zarr``: track 1, a Key with bona fide +1 and spoof -1; track 2, the SASV key
  (:func:`~bosaris_dask.spoofing.keys.sasv_key`): a Key with targets +1 and non-targets and
  spoofs -1, plus the 1-D boolean array ``segment_spoof`` (one per segment). Any reader of
  Keys reads it (a plain evaluation then counts spoofs as non-targets);
  :func:`read_key` adds ``segment_spoof`` back;
- ``cm.zarr`` (both tracks), ``asv.zarr`` and ``sasv.zarr`` (track 2): Scores.

All stores of a set appear together (:func:`~bosaris_dask.io.atomic.atomic_paths`). Converted
challenge files have one model (``"cm"`` or ``"sasv"``) and one segment per filename; a
dense set can be built with :func:`~bosaris_dask.trials.key_from_labels` (no stored mask).

Examples
--------
>>> import tempfile
>>> import numpy as np
>>> from bosaris_dask.spoofing.keys import sasv_key
>>> from bosaris_dask.trials import make_key, make_scores
>>> key = sasv_key(make_key(["m"], ["a", "b", "c"], [[1, -1, -1]]), [False, False, True])
>>> s = make_scores(["m"], ["a", "b", "c"], [[1.0, 0.0, -1.0]])
>>> d = tempfile.mkdtemp()
>>> paths = write_set(d, key, {"sasv": s})
>>> sorted(p.name for p in paths)
['key.zarr', 'sasv.zarr']
>>> read_key(f"{d}/key.zarr").segment_spoof.values.tolist()
[False, False, True]
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import xarray as xr
import zarr

from bosaris_dask.errors import StoreError
from bosaris_dask.spoofing.keys import SPOOF_COORD, sasv_key

__all__ = ["COLUMNS", "write_set", "read_key", "read_scores"]

#: The score stores of a set, in order.
COLUMNS = ("cm", "asv", "sasv")


def write_set(
    directory: str | os.PathLike[str],
    key: xr.Dataset,
    scores: dict[str, xr.Dataset],
    *,
    progress: bool = False,
) -> list[Path]:
    """Write ``key.zarr`` and ``<column>.zarr`` (``cm``, ``asv``, ``sasv``) into
    ``directory``, all appearing together; ``segment_spoof`` of an SASV key is kept.

    The score stores of an earlier set in ``directory`` that this one does not have are
    removed first (:func:`read_scores` reads every one it finds: a CM store left there would
    give this set's t-DCF the earlier set's CM scores). A directory of that name that is not a
    zarr store is an error, never deleted.
    """
    from bosaris_dask.io import write_zarr
    from bosaris_dask.io.atomic import atomic_paths, is_zarr_store, refuse_inside_store, remove_path

    bad = sorted(set(scores) - set(COLUMNS))
    if bad:
        raise StoreError(f"unknown score column(s) {bad}: expected some of {list(COLUMNS)}")
    out = Path(directory)
    refuse_inside_store(out / "key.zarr", out)  # before the folder is made in it
    out.mkdir(parents=True, exist_ok=True)
    names = [c for c in COLUMNS if c in scores]
    earlier = [out / f"{c}.zarr" for c in COLUMNS if c not in scores]
    for path in (p for p in earlier if p.exists() or p.is_symlink()):
        if not is_zarr_store(path):
            raise StoreError(f"cannot write the set into {out}: {path.name} is there and is no "
                             "score store of an earlier set (not deleted): remove it or write "
                             "elsewhere")  # fmt: skip
        remove_path(path)  # before the new stores: an interrupted write leaves no stale one
    paths = [out / "key.zarr", *(out / f"{c}.zarr" for c in names)]
    with atomic_paths(paths) as tmps:
        plain = key.drop_vars(SPOOF_COORD) if SPOOF_COORD in key.coords else key
        write_zarr(plain, tmps[0], progress=progress)
        if SPOOF_COORD in key.coords:
            group = zarr.open_group(tmps[0], mode="r+")
            flags = np.asarray(key[SPOOF_COORD].values, dtype=bool)
            arr = group.create_array(SPOOF_COORD, shape=flags.shape, dtype=bool,
                                     dimension_names=["segment"])  # fmt: skip
            arr[:] = flags
        for tmp, name in zip(tmps[1:], names, strict=True):
            write_zarr(scores[name], tmp, progress=progress)
    return paths


def read_key(path: str | os.PathLike[str]) -> xr.Dataset:
    """A key store; with its ``segment_spoof`` array, the SASV key
    (:func:`~bosaris_dask.spoofing.keys.sasv_key`)."""
    from bosaris_dask.io import read

    key = read(path, "key")
    group = zarr.open_group(os.fspath(path), mode="r")
    if SPOOF_COORD not in group:
        return key
    flags = np.asarray(group[SPOOF_COORD][:])
    if flags.dtype != bool or flags.shape != (key.sizes["segment"],):
        raise StoreError(f"{path}: {SPOOF_COORD} has {flags.dtype} {flags.shape}, expected "
                         f"{key.sizes['segment']} booleans")  # fmt: skip
    return sasv_key(key, flags)


def read_scores(directory: str | os.PathLike[str]) -> dict[str, xr.Dataset]:
    """The score stores of a set directory (those present of ``cm``, ``asv``, ``sasv``)."""
    from bosaris_dask.io import read

    d = Path(directory)
    found = {c: read(d / f"{c}.zarr", "scores") for c in COLUMNS if (d / f"{c}.zarr").exists()}
    if not found:
        raise StoreError(f"{d}: no cm.zarr, asv.zarr or sasv.zarr in this directory")
    return found
