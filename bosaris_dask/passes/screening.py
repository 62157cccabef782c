"""Screened score sources: cheaper arrays for the refinement passes of the engine.

A refinement pass (:mod:`bosaris_dask.engine`) needs the exact score only of the trials inside
its candidate bins: every other trial is dropped by the refinement kernels
(:mod:`bosaris_dask.passes.refine_kernels`), whatever its score, as long as that score is outside
every candidate bin. A score source that can compute, more cheaply than its exact scores, an array
that holds

- the exact score of every cell whose exact score lies in one of given score ranges, and
- elsewhere a value that lies outside every range (any such value),

registers a *screen* for its dask array (:func:`register`): a function of the ranges that
returns that array, chunked as the original. The engine asks for it (:func:`screened_inputs`)
in every refinement pass that reads the data, with the candidate bins of that pass as score
ranges (:func:`spec_ranges`; with work riding along the pass, such as the exact AUC's count
of its mixed bins, their ranges too, :class:`~bosaris_dask.passes.riders.RiderPass`), and the
kernels then select exactly the trials, with exactly the scores, that they would select from the
exact array. Scores from embeddings screen with a
float32 product and an error bound (:mod:`bosaris_dask.embeddings.screen`; normalized ones
through the normalization's monotonicity, :mod:`bosaris_dask.embeddings.normalized_screen`).

The registry is keyed by the dask array's name: an array transformed on its way to the engine
(aligned to a key in another order, rechunked, converted to float64) has another name and is
read exact, as is any array with no screen; the knob ``bosaris_dask.screen`` (0) turns screens
off. Correctness never depends on a screen being found. An entry lives as long as the array
object it was registered with.

Examples
--------
>>> import dask.array as da
>>> x = da.from_array(np.array([[0.5, 2.0], [3.0, -1.0]], dtype=np.float32), chunks=1)
>>> def screen(lo, hi):  # keep values inside the ranges, put the others at a value outside
...     def block(b):
...         inside = ((b[..., None] >= lo) & (b[..., None] <= hi)).any(axis=-1)
...         return np.where(inside, b, np.float32(-9.0))
...     return x.map_blocks(block)
>>> register(x, screen)
>>> (y,) = screened_inputs([x], [(np.array([1.0]), np.array([2.5]))], first=0,
...                        dtype=np.dtype(np.float32))
>>> y.compute().tolist()
[[-9.0, 2.0], [-9.0, -9.0]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import dask.array as da
import numpy as np

from bosaris_dask import config
from bosaris_dask.passes.array_registry import ArrayRegistry
from bosaris_dask.passes.keys import keys_to_values

__all__ = [
    "Ranges", "register", "screen_of", "spec_ranges", "key_ranges", "merge_ranges",
    "screened_inputs",
]  # fmt: skip

#: Score ranges: ascending float64 lower and upper ends (inclusive), disjoint.
Ranges = tuple[np.ndarray, np.ndarray]
Screen = Callable[[np.ndarray, np.ndarray], da.Array]

_SCREENS: ArrayRegistry[Screen] = ArrayRegistry()


def register(array: da.Array, screen: Screen) -> None:
    """Register ``screen(lo, hi)`` for ``array`` (see the module docstring), for as long as the
    ``array`` object lives."""
    _SCREENS.add(array, screen)


def screen_of(array: da.Array) -> Screen | None:
    """The screen registered for an array of ``array``'s name, or ``None``."""
    return _SCREENS.get(array)


def merge_ranges(lo: np.ndarray, hi: np.ndarray) -> Ranges:
    """Sorted, disjoint ranges covering the ranges ``[lo[k], hi[k]]``.

    >>> merge_ranges(np.array([3.0, 0.0, 1.0]), np.array([4.0, 2.0, 1.5]))
    (array([0., 3.]), array([2., 4.]))
    """
    order = np.argsort(lo, kind="stable")
    lo, hi = np.asarray(lo, dtype=np.float64)[order], np.asarray(hi, dtype=np.float64)[order]
    if not len(lo):
        return lo, hi
    reach = np.maximum.accumulate(hi)
    start = np.concatenate([[True], lo[1:] > reach[:-1]])
    groups = np.cumsum(start) - 1
    out_hi = np.full(int(groups[-1]) + 1, -np.inf)
    np.maximum.at(out_hi, groups, hi)
    return lo[start], out_hi


def spec_ranges(spec, dtype: np.dtype) -> Ranges:
    """The score ranges of a :class:`~bosaris_dask.passes.refine_kernels.RefineSpec`'s candidate
    bins (keys ``[cand_lo, cand_lo + 2**cand_bits)``) for scores of ``dtype``; none for ``None``.

    >>> from bosaris_dask.passes.keys import order_keys
    >>> from bosaris_dask.passes.refine_kernels import RefineSpec
    >>> lo = order_keys(np.array([0.5, -2.0], dtype=np.float32)).astype(np.uint64)
    >>> spec = RefineSpec(0, 32, np.sort(lo), np.array([0, 0]), np.array([0, 0]), True)
    >>> spec_ranges(spec, np.dtype(np.float32))
    (array([-2. ,  0.5]), array([-2. ,  0.5]))
    >>> top = order_keys(np.array([np.inf], dtype=np.float32)).astype(np.uint64)
    >>> spec_ranges(RefineSpec(0, 32, top, np.array([4]), np.array([0]), True), np.float32)
    (array([inf]), array([inf]))
    """
    if spec is None:
        return np.empty(0), np.empty(0)
    lo = np.asarray(spec.cand_lo, dtype=np.uint64)
    hi = lo + ((np.uint64(1) << spec.cand_bits.astype(np.uint64)) - np.uint64(1))
    return key_ranges(lo, hi, dtype)


def key_ranges(lo: np.ndarray, hi: np.ndarray, dtype: np.dtype) -> Ranges:
    """The score ranges of the order keys ``[lo[k], hi[k]]`` (inclusive) of scores of
    ``dtype``.

    >>> from bosaris_dask.passes.keys import order_keys
    >>> lo, hi = order_keys(np.array([-1.0, 2.0], dtype=np.float32))
    >>> key_ranges(np.array([lo]), np.array([hi]), np.dtype(np.float32))
    (array([-1.]), array([2.]))
    """
    with np.errstate(invalid="ignore"):
        low, high = (keys_to_values(np.asarray(k, dtype=np.uint64), dtype).astype(np.float64)
                     for k in (lo, hi))  # fmt: skip
    # keys beyond the infinities are NaN patterns: the range reaches the infinity
    return merge_ranges(
        np.where(np.isnan(low), -np.inf, low), np.where(np.isnan(high), np.inf, high)
    )


def screened_inputs(
    inputs: Sequence[da.Array], ranges: Sequence[Ranges | None], *, first: int, dtype: np.dtype
) -> list[da.Array]:
    """The engine's pass inputs with each system's score array replaced by its screen for
    ``ranges[k]`` (``None``: no trial of the system is read this pass) where it has one.

    ``inputs[first + 2 * k]`` is system ``k``'s score array. Only float32 scores are screened
    (the ranges are float32 values), and only with the knob ``bosaris_dask.screen`` on.
    """
    out = list(inputs)
    if not config.get("screen") or np.dtype(dtype) != np.float32:
        return out
    for k, r in enumerate(ranges):
        arr = out[first + 2 * k]
        screen = screen_of(arr) if arr.dtype == np.float32 else None
        if screen is None:
            continue
        lo, hi = (np.empty(0), np.empty(0)) if r is None else r
        screened = screen(np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64))
        if screened.chunks == arr.chunks and screened.dtype == arr.dtype:
            out[first + 2 * k] = screened
    return out
