"""Zarr v3 stores of trial objects: the default store of bosaris_dask.

Layout of a store (a directory; every array has ``dimension_names``):

==================================  =====================================================
array                               content
==================================  =====================================================
``model``, ``segment``              the ids, variable-length UTF-8 strings (readable by any
                                    zarr v3 reader, no fixed-length unicode extension)
``score``                           float32 or float64, **uncompressed**, large chunks, NaN
                                    fill value (a chunk that is somehow never read back as a
                                    score cannot pass as one)
``score_mask``, ``trial_mask``      bool (ndx, scores) or int8 (key), zstd-compressed, the
                                    same chunk grid as ``score``
``model_label``, ``segment_label``  a key derived from labels stores only these (no mask)
==================================  =====================================================

Root attributes: ``bosaris_kind``, ``bosaris_store_version`` and ``bosaris_all_true`` (the mask
variables that were all true and therefore not stored).

Writing streams chunk by chunk from dask into a hidden temporary directory renamed into place
at the end (:func:`~bosaris_dask.io.atomic.atomic_path`), every chunk included. Reading is lazy
and checks the layout and the chunk files: an uncompressed chunk of the wrong size is an error,
and a compressed one that cannot be decoded is an error naming it when it is read. A chunk file
that is absent is read as the fill value, as zarr defines it, in stores written by other tools
(zarr v3 and ``xarray.Dataset.to_zarr`` skip chunks holding only the fill value: a key block
with no trials); in a store written here (it has ``bosaris_store_version``) every chunk was
written, so a missing one is damage and an error.
Before zarr reads a local store, the store is checked not to reach outside itself (a symbolic
link resolving elsewhere, a FIFO) nor to ask for unpickling (numcodecs' ``pickle`` codec; zarr
refuses object arrays too); consolidated metadata, a second copy, is ignored.

Examples
--------
>>> import tempfile, numpy as np
>>> from bosaris_dask.trials import make_scores
>>> path = tempfile.mkdtemp() + "/scores.zarr"
>>> _ = write_zarr(make_scores(["m1", "m2"], ["s1"], np.array([[0.5], [-1.0]])), path)
>>> back = read_zarr(path)
>>> back.score.values.tolist(), back.model.values.tolist(), back.attrs["bosaris_kind"]
([[0.5], [-1.0]], ['m1', 'm2'], 'scores')
"""

from bosaris_dask.io.compute import plan_chunks
from bosaris_dask.io.zarr_store.layout import STORE_VERSION
from bosaris_dask.io.zarr_store.read import is_url as is_url
from bosaris_dask.io.zarr_store.read import read_zarr
from bosaris_dask.io.zarr_store.read import store_location as store_location
from bosaris_dask.io.zarr_store.write import write_zarr

__all__ = ["write_zarr", "read_zarr", "plan_chunks", "STORE_VERSION"]
