"""HDF5 files in the layout of the BOSARIS Toolkit (Key, Ndx, Scores, segment quality).

See ``reference/HDF5_LAYOUT.md``. Rows are models (``/ID/row_ids``), columns segments
(``/ID/column_ids``); no transpose is needed in a C-order reader.

=======  ==========================================================================
kind     datasets
=======  ==========================================================================
key      ``/trial_mask`` int8 (+1 target, -1 non-target, 0 no trial), ``/file_format``
         ``'2.0'``; the old format has ``/target_mask`` and ``/nontarget_mask`` instead
ndx      ``/trial_mask`` uint8 0/1
scores   ``/scores`` double, ``/score_mask`` uint8 0/1 (scores are 0 where the mask is 0)
quality  ``/values`` double (q measures x n ids), ``/ids``
=======  ==========================================================================

Reading is liberal about ids (fixed or variable-length strings, NUL-padded or not, 1-D or
(n, 1)/(1, n)) and strict about everything else: ids must be unique strings and their numbers
must match the matrix; matrices hold little-endian IEEE 754 floats or integers, and integer
masks only 0 and 1 (-1, 0, 1 for a key). A file is read from itself only: external links,
external raw storage and virtual datasets are refused, never followed (soft links are resolved
inside the file). Files are written in the HDF5 1.8 format, whose metadata carry checksums; raw
data have none (in any BOSARIS file), so a corrupted score reads as another number.

Matrices are read lazily: each dask task reopens the file through a picklable
:class:`xarray.backends.CachingFileManager` (pickling drops the open file, a worker reopens it),
so a file is read in parallel under ``distributed``. Writing streams the blocks of
the dask arrays to the client, which alone writes the file (h5py writes are not thread-safe),
into a temporary file renamed into place at the end.

Examples
--------
>>> import tempfile
>>> from bosaris_dask.trials import make_key
>>> path = tempfile.mkdtemp() + "/key.h5"
>>> _ = write_hdf5(make_key(["m1", "m2"], ["s1"], [[1], [-1]]), path)
>>> import h5py
>>> with h5py.File(path) as f:
...     sorted(f), f["trial_mask"].dtype, f["ID/row_ids"].asstr()[()].tolist()
(['ID', 'file_format', 'trial_mask'], dtype('int8'), ['m1', 'm2'])
>>> read_hdf5(path).trial_mask.values.tolist()
[[1], [-1]]
"""

from bosaris_dask.io.hdf5.quality import read_quality_hdf5, write_quality_hdf5
from bosaris_dask.io.hdf5.read import detect_hdf5_kind, read_hdf5
from bosaris_dask.io.hdf5.write import write_hdf5

__all__ = [
    "read_hdf5",
    "write_hdf5",
    "read_quality_hdf5",
    "write_quality_hdf5",
    "detect_hdf5_kind",
]
