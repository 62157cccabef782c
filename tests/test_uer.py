"""UER(r), the paper's unequal-error-rate: identities with EER and PRBEP, and a brute force
``max over priors of min over thresholds`` of the raw DCF with Cmiss = r, Cfa = 1."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask import metrics

from . import reference as ref

_scores = st.lists(st.integers(-6, 6).map(float), min_size=1, max_size=25)


def _brute_uer(tar: np.ndarray, non: np.ndarray, r: float) -> float:
    """max over a fine prior grid of min over every threshold of pi*r*Pmiss + (1-pi)*Pfa."""
    thresholds = np.concatenate([np.unique(np.concatenate([tar, non])), [np.inf]])
    pmiss = (tar[None, :] < thresholds[:, None]).mean(axis=1)
    pfa = (non[None, :] >= thresholds[:, None]).mean(axis=1)
    pi = np.linspace(0.0, 1.0, 20001)[:, None]
    return float(np.max(np.min(pi * r * pmiss + (1 - pi) * pfa, axis=1)))


@settings(max_examples=60, deadline=None)
@given(tar=_scores, non=_scores, r=st.sampled_from([0.01, 0.3, 1.0, 2.5, 100.0]))
def test_uer_is_the_max_over_priors_of_min_dcf(tar, non, r):
    tar, non = np.array(tar), np.array(non)
    value = metrics.uer(tar, non, r)
    brute = _brute_uer(tar, non, r)
    # the grid max approaches the exact value from below, within the grid step times the slope
    assert brute - 1e-12 <= value <= brute + 1e-4 * (1 + r)


@settings(max_examples=60, deadline=None)
@given(tar=_scores, non=_scores)
def test_uer_at_one_is_the_eer_and_scaled_it_is_the_prbep(tar, non):
    tar, non = np.array(tar), np.array(non)
    assert metrics.uer(tar, non, 1.0) == pytest.approx(ref.eer(tar, non), abs=1e-12)
    t, n = len(tar), len(non)
    assert n * metrics.uer(tar, non, t / n) == pytest.approx(ref.prbep(tar, non), abs=1e-9)


def test_uer_hand_worked():
    # targets {1, 3}, non-targets {0, 2}: hull vertices (Pfa, Pmiss) = (1, 0), (0.5, 0), (0, 0.5)?
    # thresholds 0,1,2,3,inf give (Pfa, Pmiss) = (1,0), (.5,0), (.5,.5), (0,.5), (0,1); the hull
    # runs (1,0) -> (.5,0) -> (0,.5) -> (0,1). Pfa = r*Pmiss on the segment Pfa = .5 - Pmiss:
    # Pmiss = .5/(1+r), so UER(r) = .5r/(1+r): 1/4 at r = 1, 1/3 at r = 2.
    assert metrics.uer([1.0, 3.0], [0.0, 2.0], 1.0) == pytest.approx(0.25)
    assert metrics.uer([1.0, 3.0], [0.0, 2.0], 2.0) == pytest.approx(1 / 3)


@pytest.mark.parametrize("r", [0.0, -1.0, np.inf, np.nan])
def test_uer_ratio_must_be_positive_and_finite(r):
    with pytest.raises(ValueError, match="UER ratio"):
        metrics.uer([1.0], [0.0], r)
