"""Per-chunk kernels of pass 1 and their building blocks: pure numpy, one call per chunk.

:mod:`bosaris_dask.engine` builds the dask graphs that run these and merges their results.
Pass 1 (:func:`coarse_kernel`) counts targets and non-targets per key prefix and sums the Cllr
terms; the refinement passes' kernels, which sub-histogram or pull the exact keys of the
candidate bins chosen on the client, are in :mod:`bosaris_dask.passes.refine_kernels`; the Cllr
and cross-entropy sums in :mod:`bosaris_dask.passes.softplus`; the buffers and block loops every
kernel uses (one :class:`~bosaris_dask.passes.workspace.Workspace` per thread) in
:mod:`bosaris_dask.passes.workspace`.

Examples
--------
>>> import numpy as np
>>> classes = np.array([[1, -1, -1, 0]], dtype=np.int8)
>>> scores = np.array([[2.0, 0.5, -1.0, np.inf]])
>>> rows, cols = np.arange(1), np.arange(4)
>>> out = coarse_kernel(rows, cols, classes, scores, np.ones((1, 4), bool), shift=60, nbins=16,
...                     n_cols=4, block=2, slice_size=4)[0, 0, 2:]
>>> int(out[:16].sum()), int(out[16:32].sum())  # non-targets, targets (inf is no trial)
(2, 1)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bosaris_dask.passes import compact, exact_sum, fast_pass1
from bosaris_dask.passes.binmap import BinMap
from bosaris_dask.passes.softplus import softplus_sums
from bosaris_dask.passes.workspace import (
    Workspace,
    blocked_bincount,
    classes_of,
    keys_into,
    slices,
    workspace,
)

__all__ = [
    "bad_codes",
    "key_codes_kernel",
    "merge_key_codes",
    "system_kernel",
    "coarse_kernel",
    "object_block",
    "coarse_length",
    "bins_note",
    "pack_bins",
]

# Block sizes (``bosaris_dask.block`` and ``bosaris_dask.slice``): a histogram update is one
# ``bincount`` over a slice of prefix indices; the element-wise work steps through blocks whose
# temporaries stay in the CPU cache. Streaming 4M-element temporaries through memory made pass 1
# memory-bound (21 ns per trial on one core, 11 on two); blocks of 64K elements take it to 8 and
# 4.5 (benchmarks/README.md).


def _numpy_block(
    s: np.ndarray,
    key_cls: np.ndarray,
    scored: np.ndarray,
    idx: np.ndarray,
    nbins: int,
    ws: Workspace,
    binmap: BinMap,
) -> tuple[int, int, int, int]:
    """Pass 1 on one block, in numpy: each trial's histogram index into ``idx`` (its bin times
    2, plus 1 for a target; ``2 * nbins`` for a cell that is no trial or has no score).

    Returns the trials without a score, the trials with a non-finite score (counted as 0.0),
    and the exact non-target and target sums of the Cllr terms (:func:`softplus_sums`), as
    :func:`~bosaris_dask.passes.fast_pass1.block_into` does for the compiled path.
    """
    n = s.size
    missing = bad = 0
    c = key_cls if scored.all() else classes_of(key_cls, scored)
    if c is not key_cls:
        missing = int(np.count_nonzero((key_cls != 0) & ~scored))
    finite = np.isfinite(s, out=ws.flag[:n])
    if not finite.all():
        bad = int(np.count_nonzero(~finite & (c != 0)))
        s = np.where(finite, s, s.dtype.type(0))
    key = keys_into(s, ws)
    if binmap.adaptive:
        binmap.bins_into(key, idx, ws.pos[:n], ws.signs[:n])
        np.left_shift(idx, 1, out=idx)
    else:
        np.right_shift(key, binmap.shift, out=key)
        np.left_shift(key, 1, out=idx, casting="unsafe")
    is_tar = np.greater(c, 0, out=ws.flag[:n])
    np.add(idx, is_tar, out=idx, casting="unsafe")
    all_trials = np.count_nonzero(c) == n
    if not all_trials:
        idx[c == 0] = 2 * nbins  # the last bin collects non-trials
    non, tar = softplus_sums(c, s, ws, all_trials)
    return missing, bad, non, tar


def _coarse_system(
    cls_flat: np.ndarray,
    s_flat: np.ndarray,
    m_flat: np.ndarray,
    shift: int,
    nbins: int,
    ws: Workspace,
    binmap: BinMap | None = None,
    compiled: bool = True,
    encoded: bool = False,
) -> np.ndarray | compact.Encoded:
    """Pass 1 for one system's scores of a chunk (see :func:`coarse_kernel`); the bins are
    ``key >> shift``, or ``binmap``'s (its :attr:`~bosaris_dask.passes.binmap.BinMap.nbins` is
    ``nbins``). ``compiled``: use the loops of :mod:`~bosaris_dask.passes.fast_pass1` where numba is
    installed (the same bits). ``encoded``: the result may come as its
    :func:`~bosaris_dask.passes.compact.encode` form, as it does for a chunk with fewer trials than
    half the bins: their bins are counted by ``np.unique``, without the two million-element
    histogram (most of a small evaluation's time).

    Both paths walk the chunk in blocks of ``ws.block`` trials; a block is binned, counted and
    summed by :func:`_numpy_block` (with one ``bincount`` per slice of ``ws.slice_size``) or by
    :func:`~bosaris_dask.passes.fast_pass1.block_into`.
    """
    if binmap is None:
        bits = ws.key.dtype.itemsize * 8
        binmap = BinMap.uniform(bits, bits - shift)
    totals = [0, 0, 0, 0]  # missing, non-finite, non-target units, target units

    def add(block: tuple[int, ...]) -> None:
        for k, v in enumerate(block):
            totals[k] += v

    kernel = fast_pass1.block_kernel() if compiled else None
    if kernel is None and encoded and s_flat.size * SPARSE_BINS <= nbins:
        idx = np.empty(s_flat.size, dtype=np.intp)
        for b in slices(s_flat.size, ws.block):
            add(_numpy_block(s_flat[b], cls_flat[b], m_flat[b], idx[b], nbins, ws, binmap))
        found, counts = np.unique(idx, return_counts=True)
        counts, found = counts[found < 2 * nbins], found[found < 2 * nbins]  # trials only
        missing, bad, non, tar = totals
        tail = np.concatenate([exact_sum.to_limbs(tar), exact_sum.to_limbs(non), [missing, bad]])
        at = np.concatenate([(found >> 1) + (found & 1) * nbins, 2 * nbins + np.arange(tail.size)])
        return compact.encode_sparse(coarse_length(nbins), at, np.r_[counts, tail])
    if kernel is None:
        h = blocked_bincount(
            s_flat.size, 2 * nbins + 1, ws,
            lambda b, idx: add(_numpy_block(s_flat[b], cls_flat[b], m_flat[b], idx, nbins, ws,
                                            binmap)),
        )[:-1].reshape(nbins, 2)  # fmt: skip
    else:
        # uint32 counts (below 2**32 trials per chunk), the rare targets apart: the non-targets
        # of a bin share cache lines with their neighbours only (half the cache footprint)
        h = np.zeros(2 * nbins + 1, dtype=np.uint32 if s_flat.size < 2**32 else np.int64)
        low = np.zeros(h.size, dtype=np.uint8)  # the counts modulo 256, added at the end
        args = fast_pass1.block_args(binmap)
        for b in slices(s_flat.size, ws.block):
            out = fast_pass1.block_into(kernel, cls_flat[b], s_flat[b], m_flat[b], args, h,
                                        ws.e[: b.stop - b.start], low)  # fmt: skip
            add((out[0], out[1], out[4], out[5]))
        h += low
        h = h[:-1].reshape(2, nbins).T  # non-targets, then targets
    missing, bad, non, tar = totals
    limbs = [exact_sum.to_limbs(tar), exact_sum.to_limbs(non)]
    return np.concatenate([h[:, 0], h[:, 1], *limbs, [missing, bad]])


#: A chunk of fewer trials than the pass-1 bins over this is counted sparsely (``np.unique``):
#: faster than the dense histogram up to half as many trials as bins (one chunk, 2**20 bins,
#: numpy path: 26 against 43 ms at 2**19 trials, 2 against 28 ms at 2**14).
SPARSE_BINS = 2


def coarse_length(nbins: int) -> int:
    """The length of one system's part of a pass-1 result (see :func:`coarse_kernel`)."""
    return 2 * nbins + 2 * exact_sum.LIMBS + 2


def bins_note(
    contribution: np.ndarray | compact.Encoded,
    rows: np.ndarray,
    cols: np.ndarray,
    *blocks: Any,
    nbins: int,
    coarse: int = 0,
) -> tuple[int, int, np.ndarray]:
    """Which pass-1 bins of one system a chunk's trials fall in, from its :func:`system_kernel`
    ``contribution`` (the vector, or its sparse :class:`~bosaris_dask.passes.compact.Encoded`
    form): ``(first row, first column, packed bits)``, bit ``g`` (``np.packbits``
    order) set iff a bin of group ``g`` (bins ``g * 2**coarse`` to ``(g + 1) * 2**coarse - 1``)
    holds a trial of the chunk. A refinement pass reads only the chunks holding a candidate bin
    (:class:`bosaris_dask.passes.refinement.ChunkBins`).

    >>> v = np.zeros(coarse_length(10)); v[3] = 2; v[10 + 9] = 1  # non-targets, then targets
    >>> r, c, bits = bins_note(v, np.arange(4, 6), np.arange(2), nbins=10)
    >>> r, c, np.flatnonzero(np.unpackbits(bits)).tolist()
    (4, 0, [3, 9])
    >>> np.flatnonzero(np.unpackbits(bins_note(v, [0], [0], nbins=10, coarse=2)[2])).tolist()
    [0, 2]
    """
    if isinstance(contribution, compact.Encoded):  # sparse: the bins of its counts
        held = np.zeros(nbins, dtype=bool)
        at = contribution.positions
        held[at[at < 2 * nbins] % nbins] = True
    else:
        # (counts are never negative; a sum could wrap in the narrow integers they come in)
        held = (contribution[:nbins] > 0) | (contribution[nbins : 2 * nbins] > 0)
    first = (int(rows[0]) if len(rows) else 0), (int(cols[0]) if len(cols) else 0)
    return first[0], first[1], pack_bins(held, coarse)


def pack_bins(held: np.ndarray, coarse: int) -> np.ndarray:
    """``np.packbits`` of whether each group of ``2**coarse`` bins holds a trial (``held``:
    per bin).

    >>> pack_bins(np.array([0, 0, 1, 0, 0, 0], bool), 1).tolist()  # groups 0-1, 2-3, 4-5
    [64]
    """
    if coarse:
        n = len(held)
        groups = -(-n // (1 << coarse))
        held = np.pad(held, (0, groups * (1 << coarse) - n)).reshape(groups, -1).any(axis=1)
    return np.packbits(held)


def bad_codes(classes: np.ndarray, ws: Workspace) -> tuple[int, int]:
    """How many class codes of a chunk lie outside {-1, 0, +1}, and the flat index of the first.

    One cheap pass over the (cache-resident, one byte per trial) codes, block by block: a key
    read from a store is checked here, inside pass 1, not by a pass of its own. The index is -1
    when every code is valid.

    Examples
    --------
    >>> bad_codes(np.array([[1, -1], [7, 0]], dtype=np.int8), workspace(np.float32, 2, 4))
    (1, 2)
    """
    flat = classes.reshape(-1)
    if flat.dtype != np.int8:
        bad = (flat < -1) | (flat > 1)
        count = int(np.count_nonzero(bad))
        return count, int(np.argmax(bad)) if count else -1
    codes = flat.view(np.uint8)
    count, first = 0, -1
    for b in slices(codes.size, ws.block):
        n = b.stop - b.start
        shifted = np.add(codes[b], np.uint8(1), out=ws.u8[:n])  # -1, 0, 1 -> 0, 1, 2
        bad = np.greater(shifted, 2, out=ws.flag[:n])
        k = int(np.count_nonzero(bad))
        if k and first < 0:
            first = b.start + int(np.argmax(bad))
        count += k
    return count, first


def key_codes_kernel(
    rows: np.ndarray,
    cols: np.ndarray,
    classes: np.ndarray,
    *pairs: np.ndarray,
    n_cols: int,
    block: int,
    slice_size: int,
) -> np.ndarray:
    """Pass 1's check of a chunk's key codes: ``[bad codes, first bad trial]``.

    The count of class codes outside {-1, 0, +1} and the flat row-major index (in the whole
    matrix of ``n_cols`` columns; ``rows`` and ``cols`` are the chunk's row and column numbers)
    of the first, ``inf`` if none: merged by adding the counts and taking the ``min`` index.
    """
    n_bad, first = bad_codes(classes, workspace(np.dtype(np.float32), block, slice_size))
    where = np.inf
    if n_bad:
        i, j = divmod(first, classes.shape[1])
        where = float(int(rows[i]) * n_cols + int(cols[j]))
    return np.array([n_bad, where], dtype=np.float64)


def merge_key_codes(rows: np.ndarray) -> np.ndarray:
    """Merge :func:`key_codes_kernel` rows: add the counts, keep the smallest index."""
    return np.array([rows[:, 0].sum(), rows[:, 1].min()])


def system_kernel(
    rows: np.ndarray,
    cols: np.ndarray,
    classes: np.ndarray,
    *pairs: np.ndarray,
    system: int,
    shift: int,
    nbins: int,
    block: int,
    slice_size: int,
    binmap: BinMap | None = None,
    compiled: bool = True,
    encoded: bool = False,
) -> np.ndarray | compact.Encoded:
    """Pass 1 for one system: its scores and mask are ``pairs[2 * system]`` and the next;
    its bins are ``key >> shift`` or, if given, ``binmap``'s (``nbins`` of them).
    ``compiled``: count the trials with :mod:`~bosaris_dask.passes.fast_pass1` where numba is
    installed (the same counts; loading numba costs a process about 0.4 s). ``encoded``: the
    result may come encoded (:mod:`~bosaris_dask.passes.compact`; a chunk with few trials).

    Returns :func:`coarse_length` float64 values: ``[non-target counts (nbins), target counts
    (nbins), softplus_tar limbs, softplus_non limbs, missing, non-finite]`` (counts are exact in
    float64, the softplus sums are :mod:`~bosaris_dask.passes.exact_sum` limbs). All merge by
    adding.
    """
    s, m = pairs[2 * system], pairs[2 * system + 1]
    ws = workspace(np.dtype(s.dtype), block, slice_size)
    flat = (a.reshape(-1) for a in (classes, s, m))
    return _coarse_system(*flat, shift, nbins, ws, binmap, compiled, encoded)


def object_block(value: Any) -> np.ndarray:
    """``value`` as a dask block of one object (a ``(1, 1)`` object array): how a chunk task
    hands a merge task a result that is not an array.

    >>> object_block({"n": 3})[0, 0]
    {'n': 3}
    """
    out = np.empty((1, 1), dtype=object)
    out[0, 0] = value
    return out


def coarse_kernel(
    rows: np.ndarray,
    cols: np.ndarray,
    classes: np.ndarray,
    *pairs: np.ndarray,
    shift: int,
    nbins: int,
    n_cols: int,
    block: int,
    slice_size: int,
) -> np.ndarray:
    """Pass 1 on one chunk: :func:`key_codes_kernel`, then :func:`system_kernel` of each system.

    ``block`` and ``slice_size`` are the :class:`Workspace` sizes. Returns a ``(1, 1, L)``
    float64 array (the engine runs the two kernels as :mod:`~bosaris_dask.passes.runner` specs).
    """
    sizes = {"block": block, "slice_size": slice_size}
    out = [key_codes_kernel(rows, cols, classes, *pairs, n_cols=n_cols, **sizes)] + [
        system_kernel(rows, cols, classes, *pairs, system=k, shift=shift, nbins=nbins, **sizes)
        for k in range(len(pairs) // 2)
    ]
    return np.concatenate(out)[None, None, :]
