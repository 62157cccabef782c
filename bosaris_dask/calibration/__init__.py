"""Score calibration: affine (logistic regression) and non-parametric (PAV), as fit/apply objects.

- :class:`LinearCalibrator`: ``llr = scale * s + offset`` trained by the prior-weighted logistic
  regression of :mod:`bosaris_dask.fusion` (a fusion of one system).
- :class:`PAVCalibrator`: the monotone map given by the PAV solution on a supervised set.

**The PAV map.** PAV on the supervised scores sorted ascending (ties pooled) pools them into
blocks of strictly increasing target posterior. Each block ``k``, spanning the scores
``[lo_k, hi_k]`` with ``t_k`` targets and ``n_k`` non-targets, gets the LLR
``llr_k = log(t_k / n_k) - log(T / N)`` (posterior log-odds minus prior log-odds). To make the map
finite everywhere, two pseudo-observations are added first (``pseudo_counts=True``): one target
at or below every score and one non-target at or above every score, at ``-bound`` and ``+bound``
(``bound = 1e6``; where scores lie beyond, at the extreme score, tied with it and so pooled into
its block); ``T`` and ``N`` then count them too. The lowest block
then holds a non-target and the highest a target, so every ``llr_k`` is finite, and the map's
outer knots are where the pseudo-observations sit. The map is piecewise linear through the knots
``(lo_k, llr_k - d_k)`` and ``(hi_k, llr_k + d_k)`` (``score_bounds`` and ``llr_bounds``): linear
interpolation between blocks, a gentle ramp of half-height ``d_k = small_val`` inside each block,
which makes it strictly increasing; beyond the outer knots it goes on rising (falling) at
the outer ramp's slope, then bends, never by more than another ``d_k``: the ramps are no
evidence (continuing their slope mapped a score of 1e12 to about 2,000 nats). Where two
neighbouring blocks' LLRs differ by ``2 * small_val`` or less, their ramps shrink to a third of
the difference, so that they never meet. With ``small_val=0`` each block is flat (exactly the
PAV LLRs on the training scores). This is the construction of the BOSARIS reference
(``reference/gauss1`` ``pav_calibration``, reproduced to 1e-13 for ``small_val`` 0 and 0.001).

On its own training set, with ``pseudo_counts=False`` and ``small_val=0`` (the pure PAV LLRs,
infinite in pure end blocks), actual DCF equals minimum DCF at every operating point (the
paper's property). The pseudo-counts (and the ramps) trade that exactness, by a hair, for a
finite, strictly increasing map that ranks unseen scores like the raw scores.

Fitting on trial objects uses :func:`bosaris_dask.engine.score_bins` (exact per-bin counts
around the PAV block boundaries, coarse elsewhere), so it scales like evaluation.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.calibration import PAVCalibrator
>>> cal = PAVCalibrator(small_val=0.0).fit_arrays(np.array([1.0, 2.0, 3.0]),
...                                                np.array([0.0, 1.5, 0.5]))
>>> cal.score_bounds_.tolist()
[-1000000.0, 0.5, 1.0, 1.5, 2.0, 1000000.0]
>>> np.round(cal.transform_arrays(np.array([-5.0, 1.25, 10.0])), 6).tolist()
[-0.693147, 0.0, 0.693147]
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

# knots at once: light, and it registers the old module name bosaris_dask.calibration.pav_map
from bosaris_dask.calibration.knots import interpolate_map, pav_map

# The names are imported on first use (PEP 562): the ECE of every evaluation needs only
# ``optimal``, and the models would import fusion, its optimizer and scipy.linalg with it.
_LAZY = {
    "LinearCalibrator": "models",
    "apply_model": "models",
    "linear_calibrate": "models",
    "load_model": "models",
    "optimal_llrs": "optimal",
    "optimal_llrs_arrays": "optimal",
    "PAVCalibrator": "pav",
    "pav_calibrate": "pav",
}

if TYPE_CHECKING:
    from bosaris_dask.calibration.models import (
        LinearCalibrator,
        apply_model,
        linear_calibrate,
        load_model,
    )
    from bosaris_dask.calibration.optimal import optimal_llrs, optimal_llrs_arrays
    from bosaris_dask.calibration.pav import PAVCalibrator, pav_calibrate

__all__ = [
    "LinearCalibrator",
    "PAVCalibrator",
    "linear_calibrate",
    "pav_calibrate",
    "pav_map",
    "optimal_llrs",
    "optimal_llrs_arrays",
    "interpolate_map",
    "load_model",
    "apply_model",
]


def __getattr__(name: str) -> Any:
    """The public names, imported from their modules on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:  # a submodule, as an attribute of the package
        if importlib.util.find_spec(f"bosaris_dask.calibration.{name}") is None:
            raise AttributeError(f"module 'bosaris_dask.calibration' has no attribute {name!r}")
        return importlib.import_module(f"bosaris_dask.calibration.{name}")
    value = getattr(importlib.import_module(f"bosaris_dask.calibration.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The package's names, the lazily imported public ones included."""
    return sorted({*globals(), *__all__})
