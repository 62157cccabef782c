"""Realistic synthetic score sets: a label-derived key and K correlated systems of unequal quality.

:func:`simulate` returns a dense key (every model against every segment, target iff the model and
the segment share a speaker label) and ``K`` lazy score matrices that look like the output of
real speaker-verification systems evaluated on the same trials. Nothing is computed until a pass
runs: each chunk of scores is generated on its own, from a random stream seeded by
``(seed, system, first row, first column)`` of the chunk, so a 31623 x 31623 (1e9-trial) system
costs no memory up front and gives the same values under any scheduler and in any task order.

The generative model, per trial ``(i, j)`` of model ``i`` and segment ``j`` and per system ``k``
(in units of the non-target noise; ``t`` is 1 for a target trial, 0 otherwise)::

    noise_k  = w_k * u_ij + sqrt(1 - w_k**2) * v_kij     u shared by all systems, v private
    noise_k *= 4 on a random fraction (0.1%) of trials    outliers (heavy tails)
    x_k      = sigma_i * tau_j * noise_k * (1 + t * (target_width_k - 1))
               + t * separation_k * goat_i               + model_offset_ik + segment_offset_jk
    score_k  = scale_k * x_k + offset_k                  (optionally rounded to ``decimals``)

- ``u`` (shared by all systems) is the *evidence* the systems agree on, so systems are correlated
  but not identical; the private weight ``sqrt(1 - w_k**2)`` is what fusion can average out.
- ``sigma_i``, ``tau_j`` (log-normal per model, per segment: clean and noisy recordings) make the
  pooled scores a scale mixture, heavier-tailed than a Gaussian; the rare outliers add more.
- ``goat_i`` (log-normal, per model, shared by all systems) makes some speakers hard for every
  system (Doddington's goats); ``model_offset`` and ``segment_offset`` (correlated across
  systems) shift every score of a model or a segment (lambs and wolves: what score normalization
  corrects).
- ``scale_k`` and ``offset_k`` make the scores mis-calibrated, each system in its own way: the
  defaults cycle through an over-confident LLR-like system, a cosine-similarity-like system
  (scores around 0..0.5) and a system whose scores are printed with 3 decimals (many ties).
- ``separation_k`` (d') decreases with ``k``: system 0 is the best.

Values are generated in the requested dtype, so float32 and float64 sets differ (beyond rounding);
they depend on the chunking (same seed and chunks give identical values; other chunks give other,
equally distributed, values). Model-level and segment-level effects do not depend on the chunking.

Examples
--------
>>> key, (s1, s2, s3) = simulate(40, 50, target_rate=0.02, seed=1)
>>> dict(key.sizes), s1.score.dtype, key.model.values[:2].tolist()
({'model': 40, 'segment': 50}, dtype('float32'), ['m000001', 'm000002'])
>>> float((key.trial_mask == 1).mean()), str(key.model_label.values[0])[:3]
(0.02, 'spk')
>>> tar = key.trial_mask.values == 1
>>> [bool(s.score.values[tar].mean() > s.score.values[~tar].mean()) for s in (s1, s2, s3)]
[True, True, True]
"""

from __future__ import annotations

from bosaris_dask.simulate.graph import CHUNK_BYTES, DEFAULT_TARGET_RATE, simulate
from bosaris_dask.simulate.model import SystemSpec, default_systems

__all__ = ["DEFAULT_TARGET_RATE", "CHUNK_BYTES", "SystemSpec", "default_systems", "simulate"]
