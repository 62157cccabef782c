"""Synthetic speaker embeddings for examples and tests: enrolment, test and cohort sets with a
label-derived key.

Each speaker has a random centre on the unit sphere; an embedding is its speaker's centre plus
isotropic Gaussian noise (``noise`` per component, relative to ``1 / sqrt(dim)``), plus a common
offset (``offset``), so centering with the cohort's mean helps, as with real embeddings. Cohort
speakers are disjoint from the evaluation speakers.

Examples
--------
>>> enrol, test, cohort, key = simulate_embeddings(speakers=5, per_speaker=2, dim=8, seed=0)
>>> dict(enrol.sizes), dict(test.sizes)["id"], dict(key.sizes)
({'id': 5, 'component': 8}, 10, {'model': 5, 'segment': 10})
>>> int((key.trial_mask.values == 1).sum())
10
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bosaris_dask.embeddings.store import from_arrays
from bosaris_dask.trials import key_from_labels

__all__ = ["simulate_embeddings"]


def simulate_embeddings(
    speakers: int = 50,
    per_speaker: int = 4,
    *,
    cohort_speakers: int = 40,
    dim: int = 32,
    noise: float = 1.0,
    offset: float = 0.5,
    seed: int = 0,
) -> tuple[xr.Dataset, xr.Dataset, xr.Dataset, xr.Dataset]:
    """One enrolment embedding per speaker, ``per_speaker`` test embeddings per speaker, one
    cohort embedding per cohort speaker (all float32), and the all-vs-all key.

    Returns
    -------
    tuple
        ``(enrol, test, cohort, key)``: three embedding sets and a label-derived Key (enrolment
        ids as models, test ids as segments; target iff the same speaker).
    """
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(speakers + cohort_speakers, dim))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    shift = offset * rng.normal(size=dim) / np.sqrt(dim)
    scale = noise / np.sqrt(dim)

    def draw(labels: np.ndarray) -> np.ndarray:
        x = centres[labels] + scale * rng.normal(size=(len(labels), dim)) + shift
        return x.astype(np.float32)

    e_lab = np.arange(speakers)
    t_lab = np.repeat(np.arange(speakers), per_speaker)
    c_lab = speakers + np.arange(cohort_speakers)
    e_ids = [f"spk{s:03d}-enrol" for s in e_lab]
    t_ids = [f"spk{s:03d}-test{k}" for k, s in enumerate(t_lab)]
    c_ids = [f"cohort{s:03d}" for s in c_lab]
    enrol = from_arrays(e_ids, draw(e_lab), source="enrol")
    test = from_arrays(t_ids, draw(t_lab), source="test")
    cohort = from_arrays(c_ids, draw(c_lab), source="cohort")
    key = key_from_labels(e_ids, [f"spk{s:03d}" for s in e_lab], t_ids,
                          [f"spk{s:03d}" for s in t_lab])  # fmt: skip
    return enrol, test, cohort, key
