"""Two-way bootstrap confidence intervals and paired comparisons, from two passes over the data.

- :mod:`~bosaris_dask.bootstrap.resample`: ``--resample`` specs, side groups, multiplicities;
- :mod:`~bosaris_dask.bootstrap.bins`: the coarse score bins of each system;
- :mod:`~bosaris_dask.bootstrap.histograms`: the pass that makes every resample's exact weighted
  histogram and Cllr sums at once (matrix products over group pairs);
- :mod:`~bosaris_dask.bootstrap.replicates`: the metrics of every resample;
- :mod:`~bosaris_dask.bootstrap.variables`: the resamples' metrics as intervals and paired
  comparisons (Dataset variables, per condition too);
- :mod:`~bosaris_dask.bootstrap.evaluation`: the passes, and their variables into the result
  Dataset (:func:`~bosaris_dask.metrics.evaluate` with ``bootstrap=B``).
"""

from bosaris_dask.bootstrap.bins import Binning, choose_edges
from bosaris_dask.bootstrap.evaluation import (
    BOUNDS,
    add_intervals,
    check_options,
    evaluate_with_intervals,
)
from bosaris_dask.bootstrap.replicates import replicate_metrics
from bosaris_dask.bootstrap.resample import (
    ResampleSpec,
    SideGroups,
    multiplicities,
    parse_resample,
    resample_groups,
)

__all__ = [
    "BOUNDS",
    "Binning",
    "ResampleSpec",
    "SideGroups",
    "add_intervals",
    "check_options",
    "evaluate_with_intervals",
    "choose_edges",
    "multiplicities",
    "parse_resample",
    "replicate_metrics",
    "resample_groups",
]
