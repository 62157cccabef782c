"""Pass 1's cross-entropy sums per group (the ECE of each condition): each trial's softplus
terms at every prior log-odds, rounded as :func:`bosaris_dask.passes.softplus.cross_entropy_kernel`
rounds them and added exactly per ``(group, class)``, so a group's sums are the integers a plain
evaluation of its trials alone gives.

Examples
--------
>>> cross_entropy_length(n_plo=3, n_groups=2) == 3 * 2 * 2 * exact_sum.LIMBS
True
"""

from __future__ import annotations

import numpy as np

from bosaris_dask.passes import exact_sum, fast_ece
from bosaris_dask.passes.grouped_kernels import check_group_codes
from bosaris_dask.passes.softplus import softplus_terms
from bosaris_dask.passes.workspace import classes_of, slices, workspace

__all__ = ["cross_entropy_length", "grouped_cross_entropy_kernel", "split_cross_entropy"]


def cross_entropy_length(n_plo: int, n_groups: int) -> int:
    """The length of :func:`grouped_cross_entropy_kernel`'s result."""
    return n_plo * 2 * n_groups * exact_sum.LIMBS


def grouped_cross_entropy_kernel(
    rows: np.ndarray,
    cols: np.ndarray,
    classes: np.ndarray,
    groups: np.ndarray,
    *pairs: np.ndarray,
    system: int,
    plo: np.ndarray,
    n_groups: int,
    block: int,
    slice_size: int,
    compiled: bool = False,
) -> np.ndarray:
    """Pass 1's cross-entropy sums of one system per group, at prior log-odds ``plo`` (the ECE
    of each condition).

    :func:`bosaris_dask.passes.softplus.cross_entropy_kernel` per group: for each ``a`` of ``plo``,
    ``sum log(1 + exp(-(s + a)))`` over a group's targets and ``sum log(1 + exp(s + a))`` over
    its non-targets, each term computed and rounded as there and added exactly, so a group's
    sums are the integers a plain evaluation of its trials alone gives. Returns
    :func:`cross_entropy_length` float64 values: per ``a``, per group, the targets' then the
    non-targets' :mod:`~bosaris_dask.passes.exact_sum` limbs. Costs ``len(plo)`` softplus
    evaluations per trial. ``compiled``: sum with the loops of :mod:`~bosaris_dask.passes.fast_ece`
    where numba is installed (the same bits).

    Examples
    --------
    >>> classes = np.array([[1, -1, -1, 1]], dtype=np.int8)
    >>> groups = np.array([[0, 0, 1, 1]], dtype=np.int16)
    >>> scores, mask = np.array([[2.0, 0.5, -1.0, 3.0]]), np.ones((1, 4), bool)
    >>> out = grouped_cross_entropy_kernel(
    ...     np.arange(1), np.arange(4), classes, groups, scores, mask, system=0,
    ...     plo=np.array([0.0]), n_groups=2, block=2, slice_size=4)
    >>> limbs = out.reshape(2, 2, exact_sum.LIMBS)  # (group, target/non-target)
    >>> got = [exact_sum.to_float(exact_sum.from_limbs(x)) for x in limbs.reshape(4, -1)]
    >>> want = np.logaddexp(0, [-2.0, 0.5, -3.0, -1.0])  # softplus(-s) of targets, (s) of non
    >>> np.allclose(got, want, rtol=1e-15)
    True
    """
    check_group_codes(groups, n_groups)
    s_all, m_all = pairs[2 * system].reshape(-1), pairs[2 * system + 1].reshape(-1)
    cls_all, grp_all = classes.reshape(-1), groups.reshape(-1)
    ws = workspace(np.dtype(s_all.dtype), block, slice_size)
    n_slots = 2 * n_groups  # slot 2g: group g's non-targets, 2g + 1: its targets
    units = [[0] * n_slots for _ in plo]
    m = min(ws.block, s_all.size)
    x, xa = np.empty(m, dtype=np.float64), np.empty(m, dtype=np.float64)
    kernel = fast_ece.loops() if compiled else None
    for b in slices(s_all.size, ws.block):
        n = b.stop - b.start
        key_cls, scored, g = cls_all[b], m_all[b], grp_all[b]
        c = key_cls if scored.all() else classes_of(key_cls, scored)
        slot = ws.pos[:n]
        np.copyto(slot, g, casting="unsafe")
        np.left_shift(slot, 1, out=slot)
        np.add(slot, np.greater(c, 0, out=ws.flag[:n]), out=slot, casting="unsafe")
        # the block sorted by slot once, for every grid point: each slot's terms are then
        # one run, summed like the plain kernel's (two plain sums per run)
        order = np.argsort(slot, kind="stable")
        counts = np.bincount(slot, minlength=n_slots)
        filled = np.flatnonzero(counts)
        starts = (np.cumsum(counts) - counts)[filled]
        cs = c.take(order)
        xb, xab = x[:n], xa[:n]
        np.copyto(xb, s_all[b].take(order), casting="unsafe")
        np.copyto(xb, 0.0, where=~np.isfinite(xb))  # pass 1 reports non-finite scores
        all_trials = np.count_nonzero(cs) == n
        largest = float(np.max(np.abs(xb))) if kernel is not None and n else 0.0
        for k, a in enumerate(plo):
            if kernel is not None and fast_ece.fits(largest, a):
                run = fast_ece.run_sums(kernel, xb, cs, starts, a, xab, ws.e)
            else:
                np.add(xb, a, out=xab)
                terms = softplus_terms(cs, xab, ws, all_trials)
                run = _run_units(terms, starts, ws.e[:n])
            for j, v in zip(filled.tolist(), run, strict=True):
                units[k][j] += v
    out = []
    for total in units:
        out += [exact_sum.to_limbs(total[2 * g + t]) for g in range(n_groups) for t in (1, 0)]
    return np.concatenate(out)


def _run_units(terms: np.ndarray, starts: np.ndarray, hi: np.ndarray) -> list[int]:
    """Exact sums, in units of ``2**-GRID_BITS``, of the runs of non-negative ``terms`` that
    begin at ``starts`` (ascending, each run non-empty): each term rounded exactly as
    :func:`bosaris_dask.passes.exact_sum.block_units` rounds it. ``terms`` (at most ``MAX_BLOCK``)
    is overwritten; ``hi`` is a float64 buffer as long."""
    out = [0] * len(starts)
    if np.maximum.reduce(terms) >= exact_sum._BIG:  # rare: the exact path
        big = np.flatnonzero(terms >= exact_sum._BIG)
        run = np.searchsorted(starts, big, side="right") - 1
        for r in np.unique(run).tolist():
            out[r] += exact_sum._exact_units(terms[big[run == r]])
        terms[big] = 0.0
    exact_sum.split_units(terms, hi)
    # sums of at most 2**16 integers below 2**37: below 2**53, exact in any order
    his, los = np.add.reduceat(hi, starts), np.add.reduceat(terms, starts)
    for r, (h, lo) in enumerate(zip(his.tolist(), los.tolist(), strict=True)):
        out[r] += (int(h) << exact_sum._LO_BITS) + int(lo)
    return out


def split_cross_entropy(row: np.ndarray, n_plo: int, n_groups: int) -> list[list[list[int]]]:
    """A merged :func:`grouped_cross_entropy_kernel` result: per ``plo``, per group, the
    ``[target, non-target]`` sums in exact units."""
    limbs = np.asarray(row).reshape(n_plo, n_groups, 2, exact_sum.LIMBS)
    return exact_sum.from_limbs_array(limbs).tolist()
