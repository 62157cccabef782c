"""Linear and quality-measure fusion of K systems into one calibrated LLR, as fit/apply objects.

The fused LLR of a trial is ``l = a + sum_k b_k s_k`` (:class:`LinearFuser`), plus
``q~_m' W q~_s`` with quality vectors of the model and the segment (a constant 1 appended) and a
symmetric ``W`` (:class:`QualityFuser`). The parameters minimize the prior-weighted
cross-entropy of :mod:`bosaris_dask.objectives` by the trust-region Newton method of
:mod:`bosaris_dask.optimize`; every evaluation is one pass over the trials.

Workflows (the paper's two variants):

- dev/eval: ``fuser.fit(dev_scores, dev_key)``, then ``fuser.transform(eval_scores,
  ndx=eval_ndx)``;
- "cheating" (train and apply on the same set): ``fuser.fit_transform(scores, key)``.

The models follow scikit-learn's conventions where they fit: ``get_params``/``set_params``,
fitted attributes with a trailing underscore, :class:`~bosaris_dask.errors.NotFittedError`
before ``fit``; ``save(path)``/``load(path)`` write and read JSON.

``transform`` is lazy: it returns a new Scores object (float64 LLRs, ``score_mask`` the AND of the
inputs' masks after aligning them to the first input's ids, or to ``ndx``) whose chunks are
computed only when written or evaluated, so a fused billion-trial store is written out of core.

A fitted fuser serializes to a JSON-friendly dict (:meth:`LinearFuser.to_dict`, the CLI's
``MODEL.json``)::

    {"format": "bosaris_dask.model/1", "kind": "linear_fusion", "train_prior": 0.5,
     "weights": [...], "offset": a, "objective": C, "iterations": n, "passes": n, ...}

plus, for quality fusion, ``"quality_matrix"`` (the full symmetric ``W``), ``"linear"`` (the
first-stage linear fusion that trials without quality back off to) and ``"qtrans"`` if any.
:func:`posterior_report` gives the target proportions and posterior KL divergences the toolkit
prints after fusion.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> tar, non = rng.normal(2, 1, (200, 2)), rng.normal(0, 1, (2000, 2))
>>> fuser = LinearFuser(train_prior=0.5).fit_arrays(tar, non)
>>> fuser.converged_, fuser.weights_.shape, bool(fuser.objective_ < 1)
(True, (2,), True)
>>> llr = fuser.transform_arrays(np.array([[2.0, 2.0], [0.0, 0.0]]))
>>> bool(llr[0] > 0 > llr[1])
True
"""

from __future__ import annotations

from bosaris_dask.fusion.base import apply_block
from bosaris_dask.fusion.diagnostics import format_posterior_report, posterior_report
from bosaris_dask.fusion.json_model import MODEL_FORMAT
from bosaris_dask.fusion.json_model import JsonModel as JsonModel  # not in __all__; a base class
from bosaris_dask.fusion.linear import LinearFuser, linear_fuse
from bosaris_dask.fusion.quality import (
    QualityBackoffWarning,
    QualityFuser,
    UncheckedMeasuresWarning,
    transform_quality,
)

__all__ = [
    "MODEL_FORMAT",
    "LinearFuser",
    "QualityFuser",
    "QualityBackoffWarning",
    "UncheckedMeasuresWarning",
    "linear_fuse",
    "apply_block",
    "transform_quality",
    "posterior_report",
    "format_posterior_report",
]
