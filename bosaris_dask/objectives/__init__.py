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

from bosaris_dask.objectives.cells import TrialQuality, trial_quality
from bosaris_dask.objectives.data import (
    FusionData,
    align_inputs,
    fusion_data,
    fusion_data_from_arrays,
    measure_names,
    quality_sides,
)
from bosaris_dask.objectives.kernel import (
    SLAB,
    block_sums,
    check_prior,
    n_quality_params,
    prior_entropy,
    quality_matrix,
    quality_pairs,
    quality_params,
)
from bosaris_dask.objectives.objective import FusionObjective, Rescale

__all__ = [
    "SLAB",
    "FusionData",
    "TrialQuality",
    "trial_quality",
    "FusionObjective",
    "Rescale",
    "fusion_data",
    "fusion_data_from_arrays",
    "align_inputs",
    "quality_sides",
    "measure_names",
    "quality_pairs",
    "quality_matrix",
    "quality_params",
    "n_quality_params",
    "check_prior",
    "prior_entropy",
    "block_sums",
]
