"""The prior-weighted logistic objective of calibration and fusion, as passes over chunks.

Calibration and fusion minimize the prior-weighted cross-entropy of the fused LLR
``l = a + sum_k b_k s_k (+ q_m' W q_s)`` (DESIGN section 2)::

    C(theta) = [ p/T * sum_tar softplus(-(l + logit p)) + (1-p)/N * sum_non softplus(l + logit p) ]
               / H(p)  +  l2/2 * ||theta without the offset||^2

with ``H(p) = -p log p - (1-p) log(1-p)``, so that at ``p = 0.5`` the data term is Cllr in bits.
Its value, gradient, Hessian (full, diagonal, or times a vector) are sums over trials. Each is
computed by **one pass**: one fused kernel per chunk (:func:`block_sums`) returns a small packed
float64 vector (per class: value, gradient, Hessian upper triangle; and the trial counts),
``da.blockwise`` lays these out as an ``(n_row_blocks, n_col_blocks, L)`` array and dask sums it
with an explicit ``split_every``. Target and non-target sums are kept apart in the packed vector,
so the very first pass also counts ``T`` and ``N`` (the class weights need them) and finds
non-finite scores, with no extra pass.

Parameters ``theta`` are laid out as ``[b_1 .. b_K, a, w_1 .. w_M]``: the system weights, the
offset, then the upper triangle (row-major, ``i <= j``) of the symmetric ``Q x Q`` quality matrix
``W`` (``Q`` = measures + 1) **without its last diagonal entry**: ``W[Q-1, Q-1]`` multiplies the
product of the two appended constants, i.e. it duplicates the offset ``a`` on every trial with
quality, and is fixed to 0 so that the optimum is unique. Per-trial features are built only for
slabs of rows of one chunk at a time (at most :data:`SLAB` trials).

Examples
--------
>>> import numpy as np
>>> tar, non = np.array([[1.0], [2.0]]), np.array([[-1.0], [0.5], [-2.0]])
>>> obj = FusionObjective(fusion_data_from_arrays(tar, non), prior=0.5)
>>> ev = obj.evaluate(np.array([1.0, 0.0]), "fgH")
>>> brute = (np.mean(np.logaddexp(0, -tar)) + np.mean(np.logaddexp(0, non))) / 2 / np.log(2)
>>> bool(np.isclose(ev.f, brute)), obj.passes, obj.counts["n_target"], obj.counts["n_nontarget"]
(True, 1, 2, 3)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Literal

import dask
import dask.array as da
import numpy as np
import xarray as xr
from scipy.special import expit

from bosaris_dask.errors import OptionError, ScoreError, TrialError
from bosaris_dask.optimize import Evaluation
from bosaris_dask.trials import align_with, kind_of, trial_classes, validate

__all__ = [
    "SLAB",
    "FusionData",
    "FusionObjective",
    "fusion_data",
    "fusion_data_from_arrays",
    "align_inputs",
    "quality_sides",
    "quality_pairs",
    "quality_matrix",
    "quality_params",
    "n_quality_params",
    "check_prior",
    "prior_entropy",
    "block_sums",
]

#: Trials per slab inside a chunk kernel: bounds the per-trial feature matrix of a task.
SLAB = 1 << 16

Mode = Literal["f", "fg", "fgd", "fgH", "hv"]
_COUNTS = ("n_target", "n_nontarget", "n_missing", "n_nonfinite")


# --------------------------------------------------------------------------------------------
# parameter layout
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# the aligned inputs of a fit
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FusionData:
    """The aligned lazy inputs of a fit: everything a pass reads.

    Attributes
    ----------
    scores, masks
        ``K`` score matrices and their score masks, all in the same 2-D chunks.
    classes
        The key's signed trial mask (+1 target, -1 non-target, 0 no trial), same chunks.
    model_quality, segment_quality
        ``(n_models, Q)`` and ``(n_segments, Q)`` dask arrays (chunked like the rows and the
        columns) of quality vectors with a constant 1 appended, zero rows where quality is
        missing; ``None`` without quality.
    """

    scores: tuple[da.Array, ...]
    masks: tuple[da.Array, ...]
    classes: da.Array
    model_quality: da.Array | None = None
    segment_quality: da.Array | None = None

    @property
    def n_systems(self) -> int:
        """``K``, the number of systems."""
        return len(self.scores)

    @property
    def n_measures(self) -> int:
        """Quality measures per side (0 without quality)."""
        return 0 if self.model_quality is None else int(self.model_quality.shape[1]) - 1

    def persist(self) -> FusionData:
        """Persist every array (one read of the stores; afterwards passes read memory)."""
        arrays = [*self.scores, *self.masks, self.classes]
        arrays = list(dask.persist(*arrays))
        k = self.n_systems
        return replace(
            self,
            scores=tuple(arrays[:k]),
            masks=tuple(arrays[k : 2 * k]),
            classes=arrays[2 * k],
        )


def align_inputs(scores: Sequence[xr.Dataset], like: xr.Dataset) -> list[xr.Dataset]:
    """Align each Scores to the ids of ``like`` and rechunk them all to the first one's chunks.

    Raises
    ------
    TrialError
        If an input is not a Scores object (or its ids are not unique).
    ScoreError
        If its scores are not real numbers.
    """
    if not len(scores):
        raise TrialError("at least one Scores object is needed")
    aligned = []
    for s in scores:
        if kind_of(s) != "scores":
            raise TrialError(f"expected scores, got {kind_of(s)}")
        aligned.append(align_with(validate(s), like))
    chunks = aligned[0].score.data.chunks
    out = []
    for s in aligned:
        if s.score.data.chunks != chunks:
            s = s.copy()
            s["score"] = s.score.chunk(dict(zip(("model", "segment"), chunks, strict=True)))
            s["score_mask"] = s.score_mask.chunk(
                dict(zip(("model", "segment"), chunks, strict=True))
            )
        out.append(s)
    return out


def _side(table: xr.DataArray, dim: str, ids: np.ndarray) -> np.ndarray:
    values = table.reindex({dim: ids}).values.astype(np.float64)
    missing = np.isnan(values).any(axis=1)
    if np.isinf(values).any():
        raise ScoreError(f"{dim} quality measures contain infinite values")
    out = np.zeros((len(ids), values.shape[1] + 1))
    out[~missing, :-1] = values[~missing]
    out[~missing, -1] = 1.0
    return out


def quality_sides(
    quality: xr.Dataset, models: np.ndarray, segments: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Model-side and segment-side quality vectors ``q~`` (a constant 1 appended) per id.

    Ids absent from a table, and rows with a NaN, get the zero vector: their trials have no
    quality term and fall back to the linear fusion.

    Raises
    ------
    TrialError
        If a table is missing or the two sides have different numbers of measures (``W`` is
        symmetric, so both sides must carry the same measures).
    ScoreError
        If a quality measure is infinite.

    Examples
    --------
    >>> from bosaris_dask.trials import make_quality, quality_table
    >>> q = make_quality(quality_table(["m1"], [[0.5]]), quality_table(["s1", "s2"], [[1], [2]]))
    >>> qm, qs = quality_sides(q, np.array(["m1", "m2"]), np.array(["s2"]))
    >>> qm.tolist(), qs.tolist()
    ([[0.5, 1.0], [0.0, 0.0]], [[2.0, 1.0]])
    """
    if kind_of(quality) != "quality":
        raise TrialError(f"expected quality, got {kind_of(quality)}")
    if "model_quality" not in quality or "segment_quality" not in quality:
        raise TrialError("quality fusion needs both a model-side and a segment-side table")
    mq, sq = quality.model_quality, quality.segment_quality
    if mq.sizes["model_measure"] != sq.sizes["segment_measure"]:
        raise TrialError(
            f"{mq.sizes['model_measure']} model-side and {sq.sizes['segment_measure']} "
            "segment-side quality measures: W is symmetric, so both sides need the same number"
        )
    return _side(mq, "model", np.asarray(models)), _side(sq, "segment", np.asarray(segments))


def fusion_data(
    key: xr.Dataset,
    scores: Sequence[xr.Dataset],
    quality: xr.Dataset | None = None,
    *,
    persist: bool = False,
) -> FusionData:
    """The inputs of a fit: Scores aligned to the key's ids, its classes, quality vectors.

    Parameters
    ----------
    key
        The supervision (a Key; a label-derived key's mask is generated in the scores' chunks).
    scores
        ``K`` Scores objects (the systems to fuse; one for calibration).
    quality
        Optional Quality object (both sides, same number of measures).
    persist
        Persist the aligned scores, masks and classes (see :meth:`FusionData.persist`): the
        stores are read once instead of once per pass, at the price of holding every score
        matrix in the cluster's memory (``K * (4 or 8) + K + 1`` bytes per trial). Worth it
        when the data fit in memory: a fit costs about 5-10 passes with ``method="exact"`` and
        tens with ``"cg"``.

    Examples
    --------
    >>> from bosaris_dask.trials import make_key, make_scores
    >>> key = make_key(["m1", "m2"], ["s1"], [[1], [-1]])
    >>> s = make_scores(["m2", "m1"], ["s1"], [[0.5], [2.0]])
    >>> data = fusion_data(key, [s])
    >>> data.scores[0].compute().tolist(), data.classes.compute().tolist()
    ([[2.0], [0.5]], [[1], [-1]])
    """
    if kind_of(key) != "key":
        raise TrialError(f"expected a key, got {kind_of(key)}")
    aligned = align_inputs(scores, key)
    chunks = aligned[0].score.data.chunks
    classes = trial_classes(key, chunks=chunks)
    qm = qs = None
    if quality is not None:
        qm_np, qs_np = quality_sides(quality, key.model.values, key.segment.values)
        qm = da.from_array(qm_np, chunks=(chunks[0], qm_np.shape[1]))
        qs = da.from_array(qs_np, chunks=(chunks[1], qs_np.shape[1]))
    data = FusionData(
        scores=tuple(s.score.data for s in aligned),
        masks=tuple(s.score_mask.data for s in aligned),
        classes=classes,
        model_quality=qm,
        segment_quality=qs,
    )
    return data.persist() if persist else data


def fusion_data_from_arrays(
    tar: np.ndarray, non: np.ndarray, *, chunk: int = 1 << 20
) -> FusionData:
    """The inputs of a fit from plain arrays of target and non-target scores (small data).

    ``tar`` is ``(T,)`` or ``(T, K)`` and ``non`` is ``(N,)`` or ``(N, K)``: one column per
    system. The trials are laid out as one row of ``T + N`` entries in chunks of ``chunk``.

    Examples
    --------
    >>> d = fusion_data_from_arrays(np.array([1.0, 2.0]), np.array([0.0]), chunk=2)
    >>> d.n_systems, d.scores[0].chunks, d.classes.compute().tolist()
    (1, ((1,), (2, 1)), [[1, 1, -1]])
    """
    tar = np.asarray(tar, dtype=np.float64)
    non = np.asarray(non, dtype=np.float64)
    tar = tar[:, None] if tar.ndim == 1 else tar
    non = non[:, None] if non.ndim == 1 else non
    if tar.ndim != 2 or non.ndim != 2 or tar.shape[1] != non.shape[1]:
        raise TrialError(
            f"target scores {tar.shape} and non-target scores {non.shape} must be (n, K) "
            "with the same number K of systems"
        )
    both = np.concatenate([tar, non])
    n = len(both)
    chunks = (1, max(1, min(chunk, n)))
    cls = np.concatenate([np.ones(len(tar), np.int8), -np.ones(len(non), np.int8)])[None, :]
    scores = tuple(da.from_array(both[:, k][None, :], chunks=chunks) for k in range(both.shape[1]))
    masks = tuple(da.ones((1, n), dtype=bool, chunks=chunks) for _ in scores)
    return FusionData(scores=scores, masks=masks, classes=da.from_array(cls, chunks=chunks))


# --------------------------------------------------------------------------------------------
# the per-chunk kernel
# --------------------------------------------------------------------------------------------


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
        QM = qm.T[:, flat // n_cols]  # (Q, m)
        QS = qs.T[:, flat % n_cols]
        for p, (a, b) in enumerate(zip(*quality_pairs(QM.shape[0]), strict=True)):
            X[k + 1 + p] = QM[a] * QS[b] if a == b else QM[a] * QS[b] + QM[b] * QS[a]
    return X


def _class_sums(X: np.ndarray, y: float, theta: np.ndarray, plo: float, mode: Mode, v) -> list:
    """Sums over one class of the loss ``softplus(-y (x'theta + plo))`` and its derivatives.

    ``X`` is feature-major ``(n, m)``.
    """
    yz = theta @ X
    yz += plo
    yz *= y
    if mode == "hv":
        h = expit(-yz)
        h *= expit(yz)
        h *= v @ X
        return [X @ h]
    parts = [np.array([np.logaddexp(0.0, -yz).sum()])]
    if mode == "f":
        return parts
    err = expit(-yz)  # probability of the wrong class
    parts.append(X @ err * -y)
    h = expit(yz)
    h *= err
    if mode == "fgd":
        parts.append((X * X) @ h)
    elif mode == "fgH":
        H = (X * h) @ X.T
        parts.append(H[np.triu_indices(len(theta))])
    return parts


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
    with ``quality``, the model-side and segment-side quality rows of the chunk. Returns a
    ``(1, 1, L)`` float64 array: for targets then non-targets, what ``mode`` asks for (value,
    gradient, Hessian diagonal or upper triangle, or Hessian times ``v``), then the counts of
    targets, non-targets, trials without a score (dropped) and non-finite scores (an error).

    Examples
    --------
    >>> out = block_sums(np.array([[1.0, -1.0, 9.0]]), np.array([[True, True, False]]),
    ...                  np.array([[1, -1, 1]], dtype=np.int8), n_systems=1, quality=False,
    ...                  mode="f", theta=np.array([1.0, 0.0]), plo=0.0)
    >>> np.allclose(out[0, 0], [np.logaddexp(0, -1), np.logaddexp(0, -1), 1, 1, 1, 0])
    True
    """
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
        for which, y in ((0, 1.0), (1, -1.0)):
            flat = np.flatnonzero(finite & (c == (1 if y > 0 else -1)))
            counts[which] += len(flat)
            if not len(flat):
                continue
            X = _features(slab, flat, n_cols, q_rows, qs, n)
            sums = np.concatenate(_class_sums(X, y, theta, plo, mode, v))
            out[which * length : (which + 1) * length] += sums
    return out[None, None, :]


# --------------------------------------------------------------------------------------------
# the objective
# --------------------------------------------------------------------------------------------


class FusionObjective:
    """The normalized prior-weighted cross-entropy of a fusion, evaluated by passes over data.

    Implements :class:`bosaris_dask.optimize.Objective`: each :meth:`evaluate` or
    :meth:`hessp` is exactly one ``dask.compute`` over the data, counted in :attr:`passes`.

    Parameters
    ----------
    data
        The aligned inputs (:func:`fusion_data`, :func:`fusion_data_from_arrays`).
    prior
        The target prior ``p`` in ``(0, 1)`` at which the cross-entropy is weighted.
    l2
        L2 penalty ``l2/2 * ||theta||^2`` on everything but the offset (0: none).
    quality
        Fit the quality matrix too (default: whenever ``data`` has quality).
    split_every
        Passed to the dask sum that merges the per-chunk vectors (``None``: dask's default).

    Attributes
    ----------
    n_params
        ``K + 1`` (+ the free entries of ``W`` with quality).
    passes
        Passes so far.
    counts
        After the first pass: ``n_target``, ``n_nontarget``, ``n_missing`` (trials of the key
        without a score in every system: dropped) and ``n_nonfinite``.
    """

    def __init__(
        self,
        data: FusionData,
        prior: float,
        *,
        l2: float = 0.0,
        quality: bool | None = None,
        split_every: int | dict | None = None,
    ) -> None:
        prior = check_prior(prior)
        if l2 < 0:
            raise OptionError(f"l2 must be non-negative, got {l2!r}")
        self.data = data
        self.prior = prior
        self.plo = math.log(prior) - math.log1p(-prior)
        self.l2 = float(l2)
        self.quality = data.model_quality is not None if quality is None else bool(quality)
        if self.quality and data.model_quality is None:
            raise TrialError("quality fusion needs quality measures")
        self.split_every = split_every
        self.n_params = data.n_systems + 1 + (n_quality_params(data.n_measures) * self.quality)
        self.passes = 0
        self.counts: dict[str, int] | None = None
        self._entropy = prior_entropy(prior)
        self._regularized = np.ones(self.n_params)
        self._regularized[data.n_systems] = 0.0

    # -- one pass ------------------------------------------------------------------------------

    def _graph(self, mode: Mode, theta: np.ndarray, v: np.ndarray | None) -> da.Array:
        d = self.data
        args: list[Any] = []
        for a in (*d.scores, *d.masks, d.classes):
            args += [a, "ij"]
        if self.quality:
            args += [d.model_quality, "ia", d.segment_quality, "jb"]
        kernel = partial(
            block_sums,
            n_systems=d.n_systems,
            quality=self.quality,
            mode=mode,
            theta=np.asarray(theta, dtype=np.float64),
            plo=self.plo,
            v=None if v is None else np.asarray(v, dtype=np.float64),
        )
        blocks = da.blockwise(
            kernel,
            "ijl",
            *args,
            new_axes={"l": packed_length(self.n_params, mode)},
            adjust_chunks={"i": 1, "j": 1},
            concatenate=True,
            dtype=np.float64,
            meta=np.empty((0, 0, 0)),
        )
        return blocks.sum(axis=(0, 1), split_every=self.split_every)

    def _pass(self, mode: Mode, theta: np.ndarray, v: np.ndarray | None = None) -> np.ndarray:
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.n_params,):
            raise ValueError(f"expected {self.n_params} parameters, got shape {theta.shape}")
        (packed,) = dask.compute(self._graph(mode, theta, v))
        self.passes += 1
        length = _class_length(self.n_params, mode)
        counts = {k: int(round(c)) for k, c in zip(_COUNTS, packed[2 * length :], strict=True)}
        if counts["n_nonfinite"]:
            raise ScoreError(f"{counts['n_nonfinite']} trials have a non-finite score")
        if counts["n_target"] == 0 or counts["n_nontarget"] == 0:
            raise ScoreError(
                f"fitting needs target and non-target trials with scores; found "
                f"{counts['n_target']} targets and {counts['n_nontarget']} non-targets"
            )
        self.counts = counts
        return packed

    def _weights(self) -> tuple[float, float]:
        c = self.counts
        return (
            self.prior / c["n_target"] / self._entropy,
            (1.0 - self.prior) / c["n_nontarget"] / self._entropy,
        )

    # -- the Objective protocol ----------------------------------------------------------------

    def evaluate(self, x: np.ndarray, order: Literal["f", "fg", "fgd", "fgH"]) -> Evaluation:
        """Value (and gradient, Hessian diagonal or full Hessian) at ``x``: one pass."""
        packed = self._pass(order, x)
        n, length = self.n_params, _class_length(self.n_params, order)
        wt, wn = self._weights()
        comb = wt * packed[:length] + wn * packed[length : 2 * length]
        reg = self._regularized * np.asarray(x, dtype=np.float64)
        f = float(comb[0] + 0.5 * self.l2 * (reg @ reg))
        if order == "f":
            return Evaluation(f)
        g = comb[1 : 1 + n] + self.l2 * reg
        if order == "fgd":
            return Evaluation(f, g, diag=comb[1 + n :] + self.l2 * self._regularized)
        if order == "fg":
            return Evaluation(f, g)
        H = np.zeros((n, n))
        H[np.triu_indices(n)] = comb[1 + n :]
        H = H + np.triu(H, 1).T + self.l2 * np.diag(self._regularized)
        return Evaluation(f, g, H, np.diag(H).copy())

    def hessp(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The Hessian at ``x`` times ``v``: one pass."""
        packed = self._pass("hv", x, v)
        n = self.n_params
        wt, wn = self._weights()
        return wt * packed[:n] + wn * packed[n : 2 * n] + self.l2 * self._regularized * v

    # -- conveniences (scipy drivers, reporting) -----------------------------------------------

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """``(f, g)`` in one pass, in the form ``scipy.optimize.minimize(jac=True)`` wants."""
        ev = self.evaluate(x, "fg")
        return ev.f, ev.g

    def data_term(self, f: float, x: np.ndarray) -> float:
        """The normalized cross-entropy alone: ``f`` minus the L2 penalty at ``x``."""
        reg = self._regularized * np.asarray(x, dtype=np.float64)
        return float(f - 0.5 * self.l2 * (reg @ reg))
