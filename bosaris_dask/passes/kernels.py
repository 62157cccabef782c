"""Per-chunk kernels of pass 1 and their building blocks: pure numpy, one call per chunk.

:mod:`bosaris_dask.engine` builds the dask graphs that run these and merges their results.
Pass 1 (:func:`coarse_kernel`) counts targets and non-targets per key prefix and sums the Cllr
terms; the refinement passes' kernels, which sub-histogram or pull the exact keys of the
candidate bins chosen on the client, are in :mod:`bosaris_dask.passes.refine_kernels`. Every kernel
works in cache-sized blocks of ``block`` elements with buffers reused through ``out=``
arguments: each thread keeps one
:class:`Workspace` for all the chunks it processes (:func:`workspace`). The block sizes are
arguments of the kernels, which the engine reads from the dask config
(:mod:`bosaris_dask.config`) when it builds a graph.

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

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from bosaris_dask.passes import compact, exact_sum, fast_ece, fast_pass1
from bosaris_dask.passes.binmap import BinMap
from bosaris_dask.passes.keys import key_dtype

__all__ = [
    "Workspace",
    "workspace",
    "bad_codes",
    "key_codes_kernel",
    "merge_key_codes",
    "system_kernel",
    "coarse_kernel",
    "object_block",
    "coarse_length",
    "bins_note",
    "pack_bins",
    "softplus_units",
]

# Block sizes (``bosaris_dask.block`` and ``bosaris_dask.slice``): a histogram update is one
# ``bincount`` over a slice of prefix indices; the element-wise work steps through blocks whose
# temporaries stay in the CPU cache. Streaming 4M-element temporaries through memory made pass 1
# memory-bound (21 ns per trial on one core, 11 on two); blocks of 64K elements take it to 8 and
# 4.5 (benchmarks/README.md).


def slices(n: int, size: int, start: int = 0):
    """Consecutive slices of ``size`` elements covering ``range(start, n)``."""
    for lo in range(start, n, size):
        yield slice(lo, min(lo + size, n))


def classes_of(classes: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return np.where(mask, classes, 0).astype(np.int8)


def blocked_bincount(
    n: int, length: int, ws: Workspace, fill: Callable[[slice, np.ndarray], None]
) -> np.ndarray:
    """Counts of the bin indices ``fill`` writes, block by block, for elements ``0..n-1``.

    ``fill(block, idx)`` writes the bin (``0 <= bin < length``) of each element of ``block``
    into ``idx``; the indices of a slice (``ws.slice_size``) are counted with one ``bincount``.
    """
    hist = np.zeros(length, dtype=np.int64)
    for sl in slices(n, ws.slice_size):
        idx_slice = ws.idx[: sl.stop - sl.start]
        for b in slices(sl.stop, ws.block, sl.start):
            fill(b, idx_slice[b.start - sl.start : b.stop - sl.start])
        hist += np.bincount(idx_slice, minlength=length)
    return hist


class Workspace:
    """Buffers reused across the blocks of a kernel call, and across the calls of one thread.

    The element-wise temporaries are ``block`` long (cache-resident); only the prefix
    indices of one histogram update are ``slice_size`` long. Fresh temporaries for every numpy
    operation cost page faults that serialize threads; reusing these through ``out=``
    arguments, one set per thread (:func:`workspace`), makes the kernels scale with cores.
    """

    def __init__(self, dtype: np.dtype, block: int, slice_size: int):
        kdt = key_dtype(dtype)
        self.block = block
        self.slice_size = slice_size
        self.key = np.empty(block, dtype=kdt)
        self.signs = np.empty(block, dtype=kdt)
        self.flag = np.empty(block, dtype=bool)
        self.flag2 = np.empty(block, dtype=bool)
        self.u8 = np.empty(block, dtype=np.uint8)
        self.z = np.empty(block, dtype=np.float64)
        self.e = np.empty(block, dtype=np.float64)
        self.pos = np.empty(block, dtype=np.intp)
        self.w = np.empty(block, dtype=np.float64)
        self.w2 = np.empty(block, dtype=np.float64)
        self.idx = np.empty(max(slice_size, block), dtype=np.intp)  # touched only as far as used

    @staticmethod
    def nbytes(elements: int, dtype: np.dtype, block: int, slice_size: int) -> int:
        """Bytes a workspace touches for a chunk of ``elements`` (for memory estimates)."""
        per_block = 2 * key_dtype(dtype).itemsize + 3 + 5 * 8
        itemsize = np.dtype(np.intp).itemsize
        return min(elements, block) * per_block + min(elements, max(slice_size, block)) * itemsize


_thread_local = threading.local()


def workspace(dtype: np.dtype, block: int, slice_size: int) -> Workspace:
    """This thread's :class:`Workspace` for ``dtype`` scores (kept between calls, ~40 MB)."""
    cache = _thread_local.__dict__.setdefault("workspaces", {})
    which = (key_dtype(dtype), block, slice_size)
    if which not in cache:
        cache[which] = Workspace(dtype, block, slice_size)
    return cache[which]


def keys_into(s: np.ndarray, ws: Workspace) -> np.ndarray:
    """:func:`~bosaris_dask.passes.keys.order_keys` of ``s`` into the workspace (no allocation)."""
    n = s.size
    key, signs = ws.key[:n], ws.signs[:n]
    bits = s.dtype.itemsize * 8
    np.add(s, s.dtype.type(0), out=key.view(s.dtype))  # -0.0 becomes +0.0
    np.right_shift(key.view(signs.dtype.str.replace("u", "i")), bits - 1,
                   out=signs.view(signs.dtype.str.replace("u", "i")))  # fmt: skip
    np.bitwise_or(signs, signs.dtype.type(1 << (bits - 1)), out=signs)
    np.bitwise_xor(key, signs, out=key)
    return key


_SIGN = np.int64(-(2**63))  # the sign bit of a float64


def softplus_terms(c: np.ndarray, s: np.ndarray, ws: Workspace, all_trials: bool) -> np.ndarray:
    """The per-trial terms softplus(-c * s) in float64 (0 where ``c`` is 0), in ``ws.z``;
    ``ws.e`` is scratch. ``all_trials``: no code of ``c`` is 0."""
    n = s.size
    z, e = ws.z[:n], ws.e[:n]
    # -c * s, exact: one negation of the one-byte codes instead of one of the float64 products
    np.multiply(np.negative(c, out=ws.u8.view(np.int8)[:n], casting="unsafe"), s, out=z,
                dtype=np.float64)  # fmt: skip
    np.bitwise_or(z.view(np.int64), _SIGN, out=e.view(np.int64))  # -|z|: set the sign bit
    np.exp(e, out=e)
    np.log1p(e, out=e)
    np.maximum(z, 0.0, out=z)
    np.add(z, e, out=z)
    if not all_trials:
        np.copyto(z, 0.0, where=np.equal(c, 0, out=ws.flag2[:n]))
    return z


def softplus_sums(c: np.ndarray, s: np.ndarray, ws: Workspace, all_trials: bool) -> list[int]:
    """Non-target and target sums of softplus(-c * s), exact in units of ``2**-57``.

    That is ``log(1 + exp(-s))`` for targets and ``log(1 + exp(s))`` for non-targets, in
    float64, accurate to ~1e-16 absolute per trial, each rounded to a multiple of ``2**-57``
    and added exactly (:mod:`bosaris_dask.passes.exact_sum`): the same trials give the same sums in
    any chunking. ``all_trials``: no code of ``c`` is 0.
    """
    n = s.size
    z, e = softplus_terms(c, s, ws, all_trials), ws.e[:n]
    is_tar = np.greater(c, 0, out=ws.flag2[:n])
    # gathers of the few targets, or plain sums of products: they release the GIL (a weighted
    # bincount does not) and are ten times faster than masked sums
    trials, tar = exact_sum.block_units_subset(z, is_tar, e, ws.w2[:n], ws.w[:n])
    return [trials - tar, tar]


def softplus_units(tar: np.ndarray, non: np.ndarray) -> tuple[int, int]:
    """The exact softplus sums of in-memory target and non-target scores, as pass 1 makes them
    (integers in :mod:`~bosaris_dask.passes.exact_sum` units).

    The same per-trial terms and the same exact summation as :func:`coarse_kernel`, so an
    in-memory evaluation reports the same Cllr, bit for bit, as one over chunks.

    Examples
    --------
    >>> t, n = softplus_units(np.array([0.0, 2.0]), np.array([-1.0]))
    >>> round(exact_sum.to_float(t), 12), round(exact_sum.to_float(n), 12)
    (0.820075191603, 0.313261687518)
    """
    ws = workspace(np.dtype(np.float64), exact_sum.MAX_BLOCK, exact_sum.MAX_BLOCK)
    out = []
    for code, scores in ((1, tar), (-1, non)):
        flat = np.asarray(scores, dtype=np.float64).reshape(-1)
        units = 0
        for b in slices(flat.size, ws.block):
            c = np.full(b.stop - b.start, code, dtype=np.int8)
            non_units, tar_units = softplus_sums(c, flat[b], ws, True)
            units += tar_units if code > 0 else non_units
        out.append(units)
    return out[0], out[1]


def cross_entropy_kernel(
    rows: np.ndarray,
    cols: np.ndarray,
    classes: np.ndarray,
    *pairs: np.ndarray,
    system: int,
    plo: np.ndarray,
    block: int,
    slice_size: int,
    compiled: bool = False,
) -> np.ndarray:
    """Pass 1's cross-entropy sums of one system at prior log-odds ``plo`` (the ECE plot).

    For each ``a`` of ``plo``: ``sum log(1 + exp(-(s + a)))`` over targets and
    ``sum log(1 + exp(s + a))`` over non-targets, ``s + a`` in float64, each term rounded and
    added exactly as :func:`softplus_sums` does (``a = 0`` gives Cllr's sums, bit for bit).
    Returns ``len(plo) * 2`` :mod:`~bosaris_dask.passes.exact_sum` limb vectors: per ``a``, targets
    then non-targets. Costs ``len(plo)`` softplus evaluations per trial. ``compiled``: sum
    with the loops of :mod:`~bosaris_dask.passes.fast_ece` where numba is installed (the same bits).
    """
    s, m = pairs[2 * system], pairs[2 * system + 1]
    ws = workspace(np.dtype(s.dtype), block, slice_size)
    cls_flat, s_flat, m_flat = classes.reshape(-1), s.reshape(-1), m.reshape(-1)
    sums = [[0, 0] for _ in plo]
    x = np.empty(min(ws.block, s_flat.size), dtype=np.float64)
    kernel = fast_ece.loops() if compiled else None
    xa = np.empty_like(x) if kernel is not None else x
    for b in slices(s_flat.size, ws.block):
        n = b.stop - b.start
        key_cls, scored = cls_flat[b], m_flat[b]
        c = key_cls if scored.all() else classes_of(key_cls, scored)
        xb = x[:n]
        np.copyto(xb, s_flat[b], casting="unsafe")
        np.copyto(xb, 0.0, where=~np.isfinite(xb))  # pass 1 reports non-finite scores
        all_trials = np.count_nonzero(c) == n
        largest = float(np.max(np.abs(xb))) if kernel is not None and n else 0.0
        codes = np.ascontiguousarray(c, dtype=np.int8) if kernel is not None else c
        for g, a in enumerate(plo):
            if kernel is not None and fast_ece.fits(largest, a):
                non, tar = fast_ece.two_sums(kernel, xb, codes, a, xa, ws.e)
            else:
                non, tar = softplus_sums(c, xb + a, ws, all_trials)
            sums[g][0] += tar
            sums[g][1] += non
    return np.concatenate([exact_sum.to_limbs(v) for pair in sums for v in pair])


def cross_entropy_units(tar: np.ndarray, non: np.ndarray, plo: np.ndarray) -> list[tuple[int, int]]:
    """:func:`cross_entropy_kernel`'s exact (target, non-target) sums of in-memory scores, one
    pair per prior log-odds.

    Examples
    --------
    >>> t = cross_entropy_units(np.array([0.0, 2.0]), np.array([-1.0]), np.array([0.0]))
    >>> t == [softplus_units(np.array([0.0, 2.0]), np.array([-1.0]))]
    True
    """
    tar = np.asarray(tar, dtype=np.float64).reshape(-1)
    non = np.asarray(non, dtype=np.float64).reshape(-1)
    return [softplus_units(tar + a, non + a) for a in np.asarray(plo, np.float64)]


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
