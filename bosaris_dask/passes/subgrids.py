"""Score arrays that compute a strided part of a chunk without computing the whole chunk.

Before an adaptive pass 1, the engine reads a sample of the scores: every few rows and
columns of a few chunks (:func:`bosaris_dask.passes.pass1_bins.fitted_bin_maps`). Slicing a stored
array reads little, but slicing a computed one computes the whole chunk first: from
embeddings, a whole block product for a few hundred of its scores. A score source whose chunk
is a function of its rows and columns (:func:`bosaris_dask.embeddings.scoring.outer_blocks`)
registers a *strided reader* (:func:`register_reader`): ``read(i, j, row_step, col_step)`` returns
``array.blocks[i, j][::row_step, ::col_step]``, the same values, from those rows and columns
alone. :func:`strided` uses it where there is one, and slices otherwise.

As with :mod:`bosaris_dask.passes.screening`, readers are kept by the dask array's name
(:mod:`bosaris_dask.passes.array_registry`): an array transformed on its way to the engine is
sliced, an entry lives as long as the array object it was registered with, and no result depends on
a reader being found.

Examples
--------
>>> import dask.array as da
>>> import numpy as np
>>> x = da.from_array(np.arange(16.0).reshape(4, 4), chunks=2)
>>> strided(x, 1, 0, 2, 1).compute().tolist()  # no reader: a slice
[[8.0, 9.0]]
>>> register_reader(x, lambda i, j, rs, cs: x.blocks[i, j][::rs, ::cs] * 0)
>>> strided(x, 1, 0, 2, 1).compute().tolist()
[[0.0, 0.0]]
"""

from __future__ import annotations

from collections.abc import Callable

import dask.array as da

from bosaris_dask.passes.array_registry import ArrayRegistry

__all__ = ["register_reader", "reader_of", "strided"]

Reader = Callable[[int, int, int, int], da.Array]

_READERS: ArrayRegistry[Reader] = ArrayRegistry()


def register_reader(array: da.Array, reader: Reader) -> None:
    """Register ``reader(i, j, row_step, col_step)`` for ``array`` (see the module docstring),
    for as long as the ``array`` object lives."""
    _READERS.add(array, reader)


def reader_of(array: da.Array) -> Reader | None:
    """The strided reader registered for an array of ``array``'s name, or ``None``."""
    return _READERS.get(array)


def strided(array: da.Array, i: int, j: int, row_step: int, col_step: int) -> da.Array:
    """``array.blocks[i, j][::row_step, ::col_step]``, through the array's strided reader
    where it has one (and it gives an array of that shape and dtype)."""
    reader = _READERS.get(array)
    part = array.blocks[i, j][::row_step, ::col_step]
    if reader is None:
        return part
    out = reader(i, j, row_step, col_step)
    return out if out.shape == part.shape and out.dtype == part.dtype else part
