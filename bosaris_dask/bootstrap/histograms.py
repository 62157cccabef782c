"""The bootstrap pass: every resample's weighted coarse histogram and Cllr sums, in one pass.

For a system with coarse bins (:mod:`~bosaris_dask.bootstrap.bins`), resample ``b`` needs, per
class ``c`` (target, non-target) and bin ``k``, ``W_b[c, k] = sum over trials t of class c in
bin k of m_b[gm(t)] * s_b[gs(t)]``, where ``m_b``/``s_b`` are the model-side and segment-side
group multiplicities (:mod:`~bosaris_dask.bootstrap.resample`). With ``H[p, c, k]`` the exact
count of trials of the group pair ``p = (gm, gs)``, that is ``W_b = sum_p w_b[p] H[p]`` with
``w_b[p] = m_b[gm] s_b[gs]``: one matrix product ``w @ H`` for all resamples at once.

Each chunk task does this for the group pairs it holds: it counts ``H`` for the pairs present
(in blocks of whole groups whose pair histogram fits ``BLOCK_BYTES``) and multiplies a model
group at a time, ``W[sel] += m[gm, sel] * (s[:, sel]^T @ H[gm])`` over the resamples ``sel``
that draw the group (~63% of them for multinomial draws), where a model group has at least
``_MIN_RUN`` pairs on average; otherwise it builds ``w`` for 4096 pairs at a time and
multiplies. All values are integers: a product runs in float32 where a bound on its sums (the
largest weight times the largest column sum, or a bound on that) is below ``2**24``, in float64
otherwise, so it is exact in any order; the chunks' results merge by float64 sums of integers
below ``2**53`` (the sum of the bounds is checked: :func:`check_exact`), exact in any merge
tree, on any scheduler. The Cllr sums are made the same way: each trial's term
``log(1 + exp(-s))`` (targets) or ``log(1 + exp(s))`` (non-targets) is rounded to a multiple of
``2**-57`` as in :mod:`bosaris_dask.passes.exact_sum`, summed exactly per pair as integers, split
into 4-bit limbs and multiplied by ``w`` with the counts: every resample's Cllr sums are exact sums
of those rounded terms, whatever the chunking or the scheduler (a term of ``2**17`` or more,
a target scored at or below ``-131072`` or a non-target at or above ``+131072``, is refused
with a one-line error).

With conditions, the cells are (condition, group pair): each condition gets its own histograms
from the same products (a pair's trials are split between its conditions), and the pooled ones
are their sums.

Cost: ``(1 + B) * P * (bins + ~22)`` multiply-adds for the ``P`` (group pair, class) cells with
trials in a chunk, summed over chunks (about ``0.63`` times that a model group at a time, bins
without trials left out): ``P`` is at most ``G_model * G_segment * 2`` overall when the ids of a
group are contiguous in the key, more when a group's ids are spread over many chunks.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.bootstrap.bins import Binning
>>> binning = Binning.from_edges(np.array([0.0]), np.float64)
>>> m, s = np.array([[1, 1], [2, 0]]), np.array([[1], [1]])
>>> classes = np.array([[1, -1], [-1, 1]], dtype=np.int8)
>>> scores = np.array([[1.0, -1.0], [0.5, 2.0]])
>>> out = chunk_histograms(m, s, np.array([0, 1]), np.array([0, 0]), classes, scores,
...                        np.ones((2, 2), bool), system=0, binning=binning)
>>> cells = out[:-1].reshape(2, 2, -1)  # (non-target/target, data/resample 1, bins + limbs)
>>> cells[0, :, :2].tolist(), cells[1, :, :2].tolist()
([[1.0, 1.0], [2.0, 0.0]], [[0.0, 2.0], [0.0, 2.0]])
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import dask.array as da
import dask.system
import numpy as np

from bosaris_dask.bootstrap import fast_block
from bosaris_dask.bootstrap.bins import Binning
from bosaris_dask.bootstrap.blocks import (
    _TRIALS,
    BLOCK_BYTES,
    cell_limit,
    cut_runs,
    grid_blocks,
    run_blocks,
)
from bosaris_dask.errors import OptionError, ScoreError
from bosaris_dask.passes import memory
from bosaris_dask.passes.keys import order_keys
from bosaris_dask.passes.runner import Aggregation, run_pass

__all__ = ["chunk_histograms", "resample_histograms", "ResampleHistograms", "LIMBS",
           "check_exact", "check_multiplicities", "BLOCK_BYTES", "task_memory"]  # fmt: skip

#: Cllr sums per (pair, class) travel as 4-bit limbs: 16 of the high part, 16 of the low part.
LIMBS = 32
_NIBBLES = LIMBS // 2
_PAIRS = 4096  # pairs per matrix product (batched)
_MIN_RUN = 32  # pairs per model group from which the products go a model group at a time
_SUB = 1 << 16  # terms per float bincount: sums of < 2**37 integers stay exact
_HI, _LO = 20, 37  # a term t < 2**17 is hi * 2**-20 + lo * 2**-57, hi and lo < 2**37
_BIG = 2.0**17
_F32 = 2.0**24  # float32 adds integers below this exactly


def _terms(s: np.ndarray, tar: np.ndarray) -> np.ndarray:
    z = np.where(tar, -s, s).astype(np.float64)
    return np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z)))


def _refuse(term: float) -> None:
    raise ScoreError(
        f"the bootstrap's exact Cllr sums need each trial's Cllr term below {_BIG:.0f} nats "
        f"(a target above -{_BIG:.0f}, a non-target below +{_BIG:.0f}); found a term of "
        f"{term:.6g}"
    )


def _pair_sums(compact: np.ndarray, terms: np.ndarray, n_pairs: int) -> np.ndarray:
    """``(2, n_pairs)`` int64: exact per-pair sums of the terms' high and low parts."""
    if len(terms) and terms.max() >= _BIG:
        _refuse(terms.max())
    scaled = terms * 2.0**_HI
    hi = np.floor(scaled)
    lo = np.rint((scaled - hi) * 2.0**_LO)
    sums = np.zeros((2, n_pairs), dtype=np.int64)
    for a in range(0, len(terms), _SUB):
        b = slice(a, a + _SUB)
        sums[0] += np.bincount(compact[b], weights=hi[b], minlength=n_pairs).astype(np.int64)
        sums[1] += np.bincount(compact[b], weights=lo[b], minlength=n_pairs).astype(np.int64)
    return sums


def _nibbles(values: np.ndarray) -> np.ndarray:
    """``(n, k)`` 4-bit limbs (least first) of non-negative int64 ``values``, as few as needed."""
    k = max(1, (int(values.max(initial=0)).bit_length() + 3) // 4)
    return np.stack([(values >> (4 * j)) & 15 for j in range(k)], axis=1)


def _per_trial(classes, score, mask, cond, gm_l, gs_l, n_gs, n_cells, binning, nb,
               max_cells=None):  # fmt: skip
    """The numpy path of :func:`bosaris_dask.bootstrap.fast_block.per_trial` (the reference
    its compiled loops equal bit for bit)."""
    valid = mask & (classes != 0)
    pair = (gm_l.reshape(-1, 1).astype(np.int64) * n_gs + gs_l.reshape(1, -1))[valid]
    if cond is not None:
        pair += cond[valid].astype(np.int64) * n_cells
    tar = classes[valid] == 1
    counts = [np.bincount(pair[tar if c else ~tar], minlength=n_cells) for c in (0, 1)]
    occupied = [np.flatnonzero(n) for n in counts]
    crowd = len(occupied[0]) + len(occupied[1])
    if max_cells is not None and crowd > max_cells:
        raise fast_block.CrowdedBlock(crowd)
    sc = score[valid]
    bins = binning.bins(order_keys(sc))
    terms = _terms(sc, tar)
    out = []
    for c, occ in enumerate(occupied):
        sel = tar if c else ~tar
        if not len(occ):
            out.append((np.zeros(0, np.intp), None, None, 0.0))
            continue
        p = pair[sel]
        remap = np.zeros(len(counts[c]), dtype=np.intp)
        remap[occ] = np.arange(len(occ))
        compact = remap[p]
        n_pairs = len(occ)
        hist = np.bincount(compact * nb + bins[sel], minlength=n_pairs * nb).reshape(n_pairs, nb)
        table = np.zeros((n_pairs, nb + LIMBS), dtype=np.float32 if len(p) < _F32 else np.float64)
        table[:, :nb] = hist  # exact: float32 below 2**24
        out.append((occ, table, _pair_sums(compact, terms[sel], n_pairs), 0.0))
    return out


def _block(m, s, mcode, scode, ri, cj, classes, score, mask, cond, binning, nb, out, guard):
    """Add the weighted histograms of the block of rows ``ri`` and columns ``cj`` (slices or
    indices) of the chunk's arrays to ``out`` (``(G, 2, 1 + B, nb + LIMBS)``, ``G``
    conditions; ``cond``: each cell's condition, or ``None`` for one); ``m`` and ``s`` are
    ``(groups, 1 + B)`` float32 multiplicities whose products are exact.  The per-trial work is
    :mod:`~bosaris_dask.bootstrap.fast_block`'s where numba is there, else :func:`_per_trial`.

    A block whose trials' conditions split its group pairs into more cells than
    :func:`~bosaris_dask.bootstrap.blocks.cell_limit` is cut into blocks of fewer model (or
    segment) groups, as many as the count needs, and each is done in turn."""
    gm_u, gm_l = np.unique(mcode[ri], return_inverse=True)
    gs_u, gs_l = np.unique(scode[cj], return_inverse=True)
    n_gs = len(gs_u)
    n_cells = len(gm_u) * n_gs  # (group pair, condition): the condition most significant
    splits = cond is not None and n_cells > 1
    limit = cell_limit(nb + LIMBS) if splits else None
    rows, cols = np.arange(classes.shape[0])[ri], np.arange(classes.shape[1])[cj]
    index = (ri, cj) if isinstance(ri, slice) and isinstance(cj, slice) else np.ix_(rows, cols)
    try:
        per_class = fast_block.per_trial(classes, score, mask, cond, rows, cols, gm_l, gs_l,
                                         n_gs, n_cells, n_cells * out.shape[0], binning,
                                         limit)  # fmt: skip
        if per_class is None:
            per_class = _per_trial(classes[index], score[index], mask[index],
                                   None if cond is None else cond[index], gm_l, gs_l, n_gs,
                                   n_cells, binning, nb, limit)  # fmt: skip
    except fast_block.CrowdedBlock as crowded:
        parts = -(-crowded.cells // limit)
        cuts = ([(r, cj) for r in cut_runs(ri, gm_l, parts)] if len(gm_u) > 1 else
                [(ri, c) for c in cut_runs(cj, gs_l, parts)])  # fmt: skip
        for r, c in cuts:
            _block(m, s, mcode, scode, r, c, classes, score, mask, cond, binning, nb, out, guard)
        return
    if per_class[0][3] >= _BIG:
        _refuse(per_class[0][3])
    cells = np.arange(n_cells)
    _products(m, s, per_class, gm_u[cells // n_gs], cells % n_gs, gs_u, n_cells, nb, out, guard)


def _products(m, s, per_class, cell_model, cell_segment, gs_u, n_cells, nb, out, guard) -> None:
    """Add a block's weighted histograms to ``out``, from ``per_class`` (per class: the occupied
    (condition, cell) indices, their count tables and exact Cllr sums) where cell ``p`` is the
    group pair ``(cell_model[p], gs_u[cell_segment[p]])``, the cells in ascending order of
    both."""
    for c, (occupied, table, sums) in enumerate(cl[:3] for cl in per_class):
        if not len(occupied):
            continue
        hi, lo = (_nibbles(v) for v in sums)
        k_hi, k_lo = hi.shape[1], lo.shape[1]
        table[:, nb : nb + k_hi] = hi  # the limbs used, after the counts (float32: exact)
        table[:, nb + k_hi : nb + k_hi + k_lo] = lo
        x32 = table[:, : nb + k_hi + k_lo]
        cols = np.r_[0 : nb + k_hi, nb + _NIBBLES : nb + _NIBBLES + k_lo]
        within = occupied % n_cells
        mg, sg_l, gc = cell_model[within], cell_segment[within], occupied // n_cells
        # runs of one (condition, model group): the cells are sorted by it
        new_run = (np.diff(gc) != 0) | (np.diff(mg) != 0)
        starts = np.r_[0, np.flatnonzero(new_run) + 1, len(occupied)]
        if len(occupied) >= _MIN_RUN * (len(starts) - 1):
            _per_model_group(m, s, x32, nb, cols, starts, mg, sg_l, gs_u, gc, out[:, c], guard)
        else:
            _batched(m, s, x32, cols, mg, gs_u[sg_l], gc, out[:, c], guard)


def _per_model_group(m, s, x32, nb, cols, starts, mg, sg_l, gs_u, gc, out, guard) -> None:
    """The products of one class's pairs, a model group (of one condition) at a time: ``T =
    s_sel @ H`` over the group's pairs ``H`` for the resamples ``sel`` that draw the model group
    (about 63% of them: a multinomial resample leaves a group out with probability ~1/e), then
    ``out[sel] += m[sel] * T``: no pair weights to build, and a third fewer multiply-adds than
    :func:`_batched`. ``s_sel`` holds the segment multiplicities of up to ``_PAIRS`` of the
    block's segment groups (a model group's pairs with more are done in pieces); ``T`` is float32
    where a bound on its sums (the largest segment multiplicity times the piece's trials, or 15
    per pair for the limb columns) is below ``2**24``, float64 otherwise; ``m * T`` is float64
    (exact)."""
    used = x32.sum(axis=0) > 0  # the block's columns with a trial (all others add zeros)
    xu = x32 if used.all() else x32.take(np.flatnonzero(used), axis=1)
    # pieces of runs: the block's segment groups in slices of _PAIRS (their multiplicities,
    # transposed, are one slice at a time in memory), run by run within a slice
    piece = sg_l // _PAIRS
    run = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    bounds = np.r_[0, np.flatnonzero(np.diff(run * (int(piece.max()) + 1) + piece)) + 1, len(run)]
    # a bound on a piece's column sums: its trials (count columns), 15 per pair (limb columns);
    # a pair's trials in the table's dtype are exact (float32 tables hold < 2**24 trials)
    per_pair = x32[:, :nb].sum(axis=1).astype(np.float64)
    trials = np.add.reduceat(per_pair, bounds[:-1])
    col_max = np.maximum(trials, 15.0 * np.diff(bounds))
    accs: dict[int, np.ndarray] = {}
    current = -1
    for i in np.argsort(piece[bounds[:-1]], kind="stable"):
        a, e = int(bounds[i]), int(bounds[i + 1])
        mrow = m[mg[a]]
        sel = np.flatnonzero(mrow)
        if not len(sel):
            continue
        if piece[a] != current:  # (1 + B, the slice's segment groups)
            current = int(piece[a])
            s_blk = np.ascontiguousarray(s[gs_u[current * _PAIRS : (current + 1) * _PAIRS]].T)
            s_max = float(s_blk.max())
            everyone = np.arange(len(s_blk))
        whole = len(sel) == len(mrow)
        sel = everyone if whole else sel
        wt = s_blk if whole else s_blk[sel]  # (resamples drawing the group, segment groups)
        idx = sg_l[a:e] - current * _PAIRS
        if len(idx) != wt.shape[1] or idx[0] != 0 or idx[-1] != len(idx) - 1:
            wt = wt[:, idx]  # the piece's segment groups, when not all of the slice's
        bound = s_max * float(col_max[i])
        if bound < _F32:  # float32 is exact: every partial sum is an integer below 2**24
            t = wt @ xu[a:e]
        else:
            t = wt.astype(np.float64) @ xu[a:e].astype(np.float64)
        weight = mrow[sel].astype(np.float64)[:, None]
        acc = accs.get(int(gc[a]))
        if acc is None:
            acc = accs[int(gc[a])] = np.zeros((len(mrow), xu.shape[1]))
        if whole:
            acc += weight * t
        else:
            acc[sel] += weight * t
        guard[0] += float(mrow.max()) * bound
    for g, acc in accs.items():
        out[g][:, cols[used]] += acc


def _batched(m, s, x32, cols, mg, sg, gc, out, guard) -> None:
    """The products of one class's pairs in batches of ``_PAIRS``: ``w.T @ H`` with ``w`` every
    resample's pair weights (for pairs of few per model group, where
    :func:`_per_model_group`'s products would be too thin)."""
    n_pairs = len(mg)
    starts = np.r_[np.flatnonzero(np.r_[True, gc[1:] != gc[:-1]]), n_pairs]
    batches = [(a, min(a + _PAIRS, e)) for s0, e in zip(starts[:-1], starts[1:], strict=True)
               for a in range(s0, e, _PAIRS)]  # fmt: skip
    for a, e in batches:
        b = slice(a, e)
        g = int(gc[a])
        wt = s[sg[b]]  # (pairs, 1 + B): the resamples' pair weights, the pairs of one
        runs = np.flatnonzero(np.diff(mg[b])) + 1  # model group in a row: one multiply
        for lo_, hi_ in zip(np.r_[0, runs], np.r_[runs, len(wt)], strict=True):
            wt[lo_:hi_] *= m[mg[a + lo_]]
        sums = x32[b].sum(axis=0, dtype=np.float64)
        bound = float(wt.max()) * float(sums.max())
        used = sums > 0  # the batch's columns with a trial (all others add zeros)
        xb = x32[b] if used.all() else x32[b][:, used]
        if bound < _F32:  # float32 is exact: every partial sum is an integer below 2**24
            out[g][:, cols[used]] += wt.T @ xb
        else:
            out[g][:, cols[used]] += wt.T.astype(np.float64) @ xb.astype(np.float64)
        guard[0] += bound


def chunk_histograms(
    m: np.ndarray, s: np.ndarray, mcode: np.ndarray, scode: np.ndarray, classes: np.ndarray,
    *blocks: np.ndarray, system: int, binning: Binning, pin_blas: bool = True,
    n_conditions: int = 0,
) -> np.ndarray:  # fmt: skip
    """One chunk's contribution: ``[non-target (1 + B, bins + LIMBS), target (...), bound]``
    flattened, for system ``system`` of the ``blocks`` (scores, mask, scores, mask, ...); with
    ``n_conditions``, the last block is each cell's condition and the histograms are per
    condition (``G`` times the layout above, then the bound).

    The chunk is cut into blocks of whole groups (its rows ordered by model group, its columns
    by segment group), so each group pair of the chunk is in one block whatever the ids' order,
    each block within :func:`~bosaris_dask.bootstrap.blocks.block_fits` (its histograms,
    indices and trials bounded, whatever the number of conditions). Without
    ``pin_blas`` (fewer tasks than cores), the blocks run in as many threads as cores, each
    with its own sums (integers: the same sums in any order).
    """
    score, mask = blocks[2 * system], blocks[2 * system + 1]
    cond = blocks[-1] if n_conditions else None
    nb = binning.n_bins
    # checked on the client before the pass (check_multiplicities): only an internal guard here
    assert float(m.max()) * float(s.max()) < _F32, "multiplicities not checked before the pass"
    m, s = m.T.astype(np.float32), s.T.astype(np.float32)  # rows: groups
    shape = (max(1, n_conditions), 2, m.shape[1], nb + LIMBS)
    cuts = grid_blocks(mcode, scode, width=nb + LIMBS, n_conditions=n_conditions)
    return run_blocks(
        cuts, lambda cut, out, guard: _block(m, s, mcode, scode, *cut, classes, score, mask,
                                             cond, binning, nb, out, guard),
        shape, pin_blas,
    )  # fmt: skip


class ResampleHistograms:
    """One system's totals: ``tar``/``non`` ``(1 + B, bins)`` weighted counts (int64) and
    ``sp_tar``/``sp_non`` ``(1 + B,)`` Cllr sums (natural log, exact sums of the rounded
    terms). Row 0 is the data itself."""

    def __init__(self, total: np.ndarray, n_rows: int, nb: int, name: str, n_conditions: int = 0):
        check_exact(total[-1], name)
        cells = total[:-1].reshape(max(1, n_conditions), 2, n_rows, nb + LIMBS)
        #: per condition (``None`` without): the condition's own ResampleHistograms
        self.conditions = None
        if n_conditions:
            self.conditions = [
                ResampleHistograms(np.r_[cells[g].reshape(-1), total[-1]], n_rows, nb, name)
                for g in range(n_conditions)
            ]
        pooled = cells.sum(axis=0)  # the conditions partition the trials: exact integer sums
        self.non = pooled[0, :, :nb].astype(np.int64)
        self.tar = pooled[1, :, :nb].astype(np.int64)
        self.sp_non, self.sp_tar = (_limb_sums(pooled[c, :, nb:]) for c in (0, 1))


def _limb_sums(limbs: np.ndarray) -> np.ndarray:
    """Each row's Cllr sum (float64, correctly rounded) from its ``LIMBS`` columns: the high
    part's 4-bit limbs, then the low part's, each column a sum below ``2**53``.

    >>> row = np.zeros(LIMBS)
    >>> row[0], row[_NIBBLES] = 3, 5  # hi = 3 (3 * 2**-20), lo = 5 (5 * 2**-57)
    >>> float(_limb_sums(row[None])[0]) == 3 * 2.0**-20 + 5 * 2.0**-57
    True
    """
    ints = limbs.astype(np.int64)
    hi, lo = _nibble_totals(ints[:, :_NIBBLES]), _nibble_totals(ints[:, _NIBBLES:])
    scale = 1 << (_HI + _LO)
    return np.array([t / scale for t in ((hi << _LO) + lo).tolist()], dtype=np.float64)


_WORD = (1 << 32) - 1


def _nibble_totals(nibbles: np.ndarray) -> np.ndarray:
    """``sum_k nibbles[:, k] * 16**k`` per row, exactly (an object array of Python ints), for
    columns below ``2**53``: the terms are added as 32-bit words in int64 (each word's sum stays
    below ``2**40``), the carries propagated, and only the few words made Python ints (a Python
    loop over every term took 3 s for 100 conditions x 1,001 resamples)."""
    rows, n = nibbles.shape
    words = np.zeros((rows, (4 * (n - 1) + 53) // 32 + 3), dtype=np.int64)
    for k in range(n):
        at, shift = divmod(4 * k, 32)
        for part, offset in ((nibbles[:, k] & _WORD, 0), (nibbles[:, k] >> 32, 1)):
            shifted = part << shift  # below 2**60
            words[:, at + offset] += shifted & _WORD
            words[:, at + offset + 1] += shifted >> 32
    for j in range(words.shape[1] - 1):  # carries: every word below 2**32 after
        words[:, j + 1] += words[:, j] >> 32
        words[:, j] &= _WORD
    total = np.zeros(rows, dtype=object)
    for j in np.flatnonzero(words.any(axis=0)).tolist():
        total = total + (words[:, j].astype(object) << (32 * j))
    return total


def check_exact(bound: float, name: str) -> None:
    """Raise OptionError if the weighted sums could have left float64's exact integers
    (``bound`` is the chunks' sum of their bounds on any product's entries)."""
    if bound >= 2.0**53:
        raise OptionError(
            f"{name}: the resamples' weighted sums could exceed 2**53 (float64's exact "
            f"integers; bound {bound:.3g}): resample fewer or coarser groups"
        )


def check_multiplicities(m: np.ndarray, s: np.ndarray) -> None:
    """Raise OptionError, on the client before any pass, if a model-side times a segment-side
    multiplicity could leave float32's exact integers (``2**24``) in the tasks' products.

    >>> check_multiplicities(np.full((3, 2), 64), np.full((3, 4), 4096))  # fine: 2**18
    >>> check_multiplicities(np.full((3, 2), 4096), np.full((3, 4), 4096))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.OptionError: ... (largest model 4096 x segment 4096 >= 2**24): ...
    """
    big_m = float(m.max()) if m.size else 0.0
    big_s = float(s.max()) if s.size else 0.0
    if big_m * big_s >= _F32:
        raise OptionError(
            f"bootstrap multiplicities too large for exact float32 products (largest model "
            f"{big_m:.0f} x segment {big_s:.0f} >= 2**24): resample fewer groups"
        )


def resample_histograms(
    inputs: Sequence[da.Array], m: np.ndarray, s: np.ndarray, model_codes: np.ndarray,
    segment_codes: np.ndarray, binnings: Sequence[Binning], names: Sequence[str], *,
    split_every: int, progress: bool | None, pin_blas: bool = True,
    conditions: da.Array | None = None, n_conditions: int = 0,
    cells: tuple[da.Array, da.Array] | None = None,
) -> list[ResampleHistograms]:  # fmt: skip
    """The bootstrap pass over ``inputs`` (key classes, then scores and mask per system), per
    condition too when given each cell's condition (``conditions``, ``n_conditions`` of them):
    the pooled histograms are then the sums of the conditions' (they partition the trials).
    With ``cells``, each cell's model-side and segment-side groups (a packed list's: its trials'
    own, :mod:`~bosaris_dask.bootstrap.cells`) instead of each row's ``model_codes`` and each
    column's ``segment_codes`` (:mod:`~bosaris_dask.bootstrap.cell_blocks`).
    The multiplicities are checked here, before the pass (:func:`check_multiplicities`)."""
    check_multiplicities(m, s)
    if conditions is not None:
        inputs = [*inputs, conditions.rechunk(inputs[0].chunks)]
    n_cond = n_conditions if conditions is not None else 0
    chunks = inputs[0].chunks
    lead = [da.from_array(m, chunks=-1), "ab", da.from_array(s, chunks=-1), "cd"]
    kernel = chunk_histograms
    if cells is None:
        lead += [da.from_array(model_codes, chunks=(chunks[0],)), "i",
                 da.from_array(segment_codes, chunks=(chunks[1],)), "j"]  # fmt: skip
    else:  # (the conditions' cells, then the groups')
        from bosaris_dask.bootstrap import cell_blocks

        inputs = [*inputs, *(c.rechunk(chunks) for c in cells)]
        kernel = cell_blocks.cell_chunk_histograms
    n_rows = m.shape[0]
    need = task_memory(inputs, n_rows, max(b.n_bins for b in binnings),
                       len(binnings) * max(1, n_cond), split_every,
                       threads=1 if pin_blas else dask.system.CPU_COUNT)  # fmt: skip
    aggs = [
        Aggregation(
            f"bootstrap of {name}",
            partial(kernel, system=k, binning=binning, pin_blas=pin_blas, n_conditions=n_cond),
            max(1, n_cond) * 2 * n_rows * (binning.n_bins + LIMBS) + 1,
            finalize=partial(
                ResampleHistograms, n_rows=n_rows, nb=binning.n_bins, name=name, n_conditions=n_cond
            ),
        )  # fmt: skip
        for k, (binning, name) in enumerate(zip(binnings, names, strict=True))
    ]
    return run_pass("bootstrap pass", aggs, inputs, lead=lead, split_every=split_every,
                    progress=progress, need=need)  # fmt: skip


def task_memory(
    inputs: Sequence[da.Array], n_rows: int, nb: int, n_systems: int, split_every: int,
    threads: int = 1,
) -> memory.TaskMemory:  # fmt: skip
    """The peak memory of a bootstrap task, for the workers' memory check before the pass:
    one chunk of the inputs, a block's per-trial temporaries (~64 bytes a cell), its pair
    histograms (three copies), weights (or multiplicities, twice) and float64 accumulators, and
    the resamples' histograms of every system; a block and a copy of the histograms per thread
    when the task runs its blocks in ``threads`` threads."""
    cells = int(np.prod([max(c) for c in inputs[0].chunks]))
    chunk = sum(cells * a.dtype.itemsize for a in inputs)
    result = n_systems * 2 * n_rows * (nb + LIMBS) * 8
    # the pair weights or a slice of segment multiplicities and its gathered rows, the
    # float64 accumulators of a class
    block = min(cells, _TRIALS) * 64 + 3 * BLOCK_BYTES + 2 * _PAIRS * n_rows * 4 + result // 2
    buffers = threads * block + (threads - 1) * result
    return memory.TaskMemory(inputs=chunk, buffers=buffers, results=result,
                             merge=(split_every + 1) * result, held=2 * result)  # fmt: skip
