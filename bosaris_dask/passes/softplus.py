"""The Cllr and cross-entropy sums of pass 1: softplus terms per trial, added exactly.

``log(1 + exp(-s))`` for targets and ``log(1 + exp(s))`` for non-targets, in float64, each
rounded to a multiple of ``2**-57`` and added exactly (:mod:`bosaris_dask.passes.exact_sum`): the
same trials give the same sums in any chunking, and an in-memory evaluation
(:func:`softplus_units`) the same bits as one over chunks.
"""

from __future__ import annotations

import numpy as np

from bosaris_dask.passes import exact_sum, fast_ece
from bosaris_dask.passes.workspace import Workspace, classes_of, slices, workspace

__all__ = [
    "softplus_terms",
    "softplus_sums",
    "softplus_units",
    "cross_entropy_kernel",
    "cross_entropy_units",
]


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
