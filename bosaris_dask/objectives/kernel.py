"""The parameter layout of a fusion and the one-pass chunk kernel of its objective.

``theta`` is ``[b_1 .. b_K, a, w_1 .. w_M]`` (see :mod:`bosaris_dask.objectives`); the functions
here map it to and from the quality matrix ``W``, check the prior, and compute, for one chunk of
trials, the packed vector of per-class sums (value, gradient, Hessian, counts) that a pass adds up.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from bosaris_dask.errors import OptionError
from bosaris_dask.passes.blas import pinned_blas

#: Trials per slab inside a chunk kernel: bounds the per-trial feature matrix of a task.
SLAB = 1 << 16

Mode = Literal["f", "fg", "fgd", "fgH", "hv"]

_COUNTS = ("n_target", "n_nontarget", "n_missing", "n_nonfinite")


def quality_pairs(n_q: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column of each free entry of ``W`` (``n_q x n_q``): upper triangle minus the last.

    Examples
    --------
    >>> [a.tolist() for a in quality_pairs(2)]
    [[0, 0], [0, 1]]
    """
    i, j = np.triu_indices(n_q)
    return i[:-1], j[:-1]


def n_quality_params(n_measures: int) -> int:
    """How many free entries ``W`` has for ``n_measures`` quality measures (0 -> 0).

    Examples
    --------
    >>> [n_quality_params(m) for m in range(4)]
    [0, 2, 5, 9]
    """
    n_q = n_measures + 1
    return 0 if n_measures == 0 else n_q * (n_q + 1) // 2 - 1


def quality_matrix(w: np.ndarray, n_measures: int) -> np.ndarray:
    """The symmetric ``(n_measures+1)^2`` matrix ``W`` from its free entries.

    Examples
    --------
    >>> quality_matrix(np.array([1.0, 2.0]), 1).tolist()
    [[1.0, 2.0], [2.0, 0.0]]
    """
    n_q = n_measures + 1
    W = np.zeros((n_q, n_q))
    i, j = quality_pairs(n_q)
    W[i, j] = w
    W[j, i] = w
    return W


def quality_params(W: np.ndarray) -> np.ndarray:
    """The free entries of a symmetric ``W`` (the inverse of :func:`quality_matrix`)."""
    W = np.asarray(W, dtype=np.float64)
    i, j = quality_pairs(W.shape[0])
    return W[i, j].copy()


def check_prior(prior: Any) -> float:
    """The training prior as a float; anything not strictly between 0 and 1 is an error.

    Raises
    ------
    OptionError
        Naming the value.
    """
    try:
        value = float(prior)
    except (TypeError, ValueError):
        value = math.nan
    if not 0.0 < value < 1.0:
        raise OptionError(f"the prior must lie strictly between 0 and 1, got {prior!r}")
    return value


def prior_entropy(prior: float) -> float:
    """``H(p) = -p log p - (1-p) log(1-p)`` in nats (``log 2`` at ``p = 0.5``)."""
    return float(-prior * math.log(prior) - (1.0 - prior) * math.log1p(-prior))


def _class_length(n: int, mode: Mode) -> int:
    return {"f": 1, "fg": 1 + n, "fgd": 1 + 2 * n, "fgH": 1 + n + n * (n + 1) // 2, "hv": n}[mode]


def packed_length(n: int, mode: Mode) -> int:
    """Length of the packed vector: two classes (target, non-target) and four counts."""
    return 2 * _class_length(n, mode) + len(_COUNTS)


def _features(
    scores: Sequence[np.ndarray],
    flat: np.ndarray,
    n_cols: int,
    qm: np.ndarray | None,
    qs: np.ndarray | None,
    n_params: int,
) -> np.ndarray:
    """Features ``[s_1 .. s_K, 1, phi_W]`` of the selected trials of one slab, one per row.

    ``flat`` are the trials' flat indices in the slab (``row * n_cols + col``); the result is
    ``(n_params, m)`` (feature-major, so that every product below is a contiguous BLAS call).
    ``qm`` and ``qs`` are the slab's rows' and the chunk's columns' quality vectors, or (3-D,
    packed trials) the slab's cells' own: the same products of the same vectors either way.
    """
    k = len(scores)
    X = np.empty((n_params, len(flat)))
    for i, s in enumerate(scores):
        if s.dtype == np.float64:
            np.take(s.reshape(-1), flat, out=X[i])
        else:
            X[i] = np.take(s.reshape(-1), flat)
    X[k] = 1.0
    if n_params > k + 1:
        if qm is None or qs is None:
            raise ValueError("the quality parameters need both quality sides")
        if qm.ndim == 3:  # each cell's own vectors
            row, col = np.divmod(flat, n_cols)
            QM, QS = qm[row, col].T, qs[row, col].T  # (Q, m)
        else:
            QM = qm.T[:, flat // n_cols]  # (Q, m)
            QS = qs.T[:, flat % n_cols]
        for p, (a, b) in enumerate(zip(*quality_pairs(QM.shape[0]), strict=True)):
            X[k + 1 + p] = QM[a] * QS[b] if a == b else QM[a] * QS[b] + QM[b] * QS[a]
    return X


def _logistic_terms(yz: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``exp(-|yz|)``, ``expit(-yz)`` and ``expit(yz) * expit(-yz)`` from one ``exp``.

    With ``e = exp(-|z|)`` and ``u = 1 / (1 + e)``: ``expit(-|z|) = e u``, ``expit(|z|) = u``
    and their product ``e u**2``, each without cancellation, so one exponential serves the
    loss, the gradient and the Hessian weights (numpy's ``logaddexp`` and two ``expit`` took
    three).
    """
    e = np.abs(yz)
    np.negative(e, out=e)
    np.exp(e, out=e)
    u = e + 1.0
    np.reciprocal(u, out=u)
    small = e * u  # expit(-|yz|)
    err = np.where(yz > 0, small, u)  # expit(-yz): the probability of the wrong class
    small *= u  # expit(yz) * expit(-yz)
    return e, err, small


def _class_sums(X: np.ndarray, y: float, theta: np.ndarray, plo: float, mode: Mode, v) -> list:
    """Sums over one class of the loss ``softplus(-y (x'theta + plo))`` and its derivatives.

    ``X`` is feature-major ``(n, m)``. ``softplus(-z) = max(-z, 0) + log1p(exp(-|z|))``.
    """
    yz = theta @ X
    yz += plo
    yz *= y
    if mode == "f":
        e = np.exp(-np.abs(yz))
        return [np.array([np.maximum(-yz, 0.0).sum() + np.log1p(e).sum()])]
    e, err, h = _logistic_terms(yz)
    if mode == "hv":
        h *= v @ X
        return [X @ h]
    parts = [np.array([np.maximum(-yz, 0.0).sum() + np.log1p(e).sum()])]
    parts.append(X @ err * -y)
    if mode == "fgd":
        parts.append((X * X) @ h)
    elif mode == "fgH":
        H = (X * h) @ X.T
        parts.append(H[np.triu_indices(len(theta))])
    return parts


def class_ranges(*blocks: np.ndarray, n_systems: int) -> np.ndarray:
    """Each system's lowest and highest target and non-target score in one chunk, over the
    trials :func:`block_sums` counts (scored in every system, finite): ``(1, 1, 4K)``, per
    system ``min tar, -max tar, min non, -max non`` (``inf`` where a class is absent), so that
    the minimum over chunks merges them.

    Examples
    --------
    >>> out = class_ranges(np.array([[1.0, -1.0, 3.0, 9.0]]),
    ...                    np.array([[True, True, True, False]]),
    ...                    np.array([[1, -1, 1, 1]], dtype=np.int8), n_systems=1)
    >>> out[0, 0].tolist()  # targets 1 and 3 (9 has no score), the non-target -1
    [1.0, -3.0, -1.0, 1.0]
    """
    k = n_systems
    scores, masks, cls = blocks[:k], blocks[k : 2 * k], blocks[2 * k]
    out = np.full(4 * k, np.inf)
    step = max(1, SLAB // max(cls.shape[1], 1))
    for r0 in range(0, cls.shape[0], step):
        sl = slice(r0, r0 + step)
        ok = cls[sl] != 0
        for m, s in zip(masks, scores, strict=True):
            ok &= m[sl] & np.isfinite(s[sl])
        for which, label in ((0, 1), (2, -1)):
            sel = ok & (cls[sl] == label)
            if not sel.any():
                continue
            for j, s in enumerate(scores):
                vals = s[sl][sel]
                lo = 4 * j + which
                out[lo] = min(out[lo], float(vals.min()))
                out[lo + 1] = min(out[lo + 1], -float(vals.max()))
    return out[None, None, :]


def block_sums(
    *blocks: np.ndarray,
    n_systems: int,
    quality: bool,
    mode: Mode,
    theta: np.ndarray,
    plo: float,
    v: np.ndarray | None = None,
) -> np.ndarray:
    """The fused kernel of one chunk: packed sums of the objective's pieces.

    ``blocks`` are the chunk's ``K`` score blocks, ``K`` mask blocks, the class block and,
    with ``quality``, the model-side and segment-side quality rows of the chunk (or, 3-D,
    of each of its cells: :attr:`~bosaris_dask.objectives.FusionData.per_cell`). Returns a
    ``(1, 1, L)`` float64 array: for targets then non-targets, what ``mode`` asks for (value,
    gradient, Hessian diagonal or upper triangle, or Hessian times ``v``), then the counts of
    targets, non-targets, trials without a score (dropped) and non-finite scores (an error).
    The BLAS runs on one thread inside (:func:`~bosaris_dask.passes.blas.pinned_blas`):
    the sums are then the same bits on the threaded scheduler and on worker processes (whose
    BLAS distributed starts with one thread).

    Examples
    --------
    >>> out = block_sums(np.array([[1.0, -1.0, 9.0]]), np.array([[True, True, False]]),
    ...                  np.array([[1, -1, 1]], dtype=np.int8), n_systems=1, quality=False,
    ...                  mode="f", theta=np.array([1.0, 0.0]), plo=0.0)
    >>> np.allclose(out[0, 0], [np.logaddexp(0, -1), np.logaddexp(0, -1), 1, 1, 1, 0])
    True
    """
    with pinned_blas():  # a BLAS of several threads adds the products in another order
        return _block_sums(blocks, n_systems, quality, mode, theta, plo, v)


def _block_sums(
    blocks: tuple[np.ndarray, ...],
    n_systems: int,
    quality: bool,
    mode: Mode,
    theta: np.ndarray,
    plo: float,
    v: np.ndarray | None,
) -> np.ndarray:
    k = n_systems
    scores, masks, cls = blocks[:k], blocks[k : 2 * k], blocks[2 * k]
    qm, qs = (blocks[2 * k + 1], blocks[2 * k + 2]) if quality else (None, None)
    n = len(theta)
    length = _class_length(n, mode)
    out = np.zeros(packed_length(n, mode))
    counts = out[2 * length :]
    n_rows, n_cols = cls.shape
    step = max(1, SLAB // max(n_cols, 1))
    for r0 in range(0, n_rows, step):
        sl = slice(r0, r0 + step)
        c = cls[sl]
        trial = c != 0
        scored = trial.copy()
        for m in masks:
            scored &= m[sl]
        counts[2] += np.count_nonzero(trial) - np.count_nonzero(scored)
        finite = scored.copy()
        for s in scores:
            finite &= np.isfinite(s[sl])
        counts[3] += np.count_nonzero(scored) - np.count_nonzero(finite)
        slab = [s[sl] for s in scores]
        q_rows = None if qm is None else qm[sl]
        q_cols = qs[sl] if qs is not None and qs.ndim == 3 else qs
        for which, y in ((0, 1.0), (1, -1.0)):
            flat = np.flatnonzero(finite & (c == (1 if y > 0 else -1)))
            counts[which] += len(flat)
            if not len(flat):
                continue
            X = _features(slab, flat, n_cols, q_rows, q_cols, n)
            sums = np.concatenate(_class_sums(X, y, theta, plo, mode, v))
            out[which * length : (which + 1) * length] += sums
    return out[None, None, :]
