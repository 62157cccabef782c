"""Plots of evaluations: DET (steppy and ROCCH), normalized Bayes error rate, APE, Cllr, ECE and
Tippett.

Every plot function takes an evaluation Dataset (:func:`bosaris_dask.metrics.evaluate`), or a
mapping of them by name (``{"dev": ..., "eval": ...}``), draws on a matplotlib Axes (a new
pyplot figure when ``ax`` is None, so notebooks show it) and returns the Axes. Nothing needs a
display: save with :func:`save_figure`, draw and save one plot with :func:`save_plot` (what
``bosaris-dask plot`` does), or write the standard set of files with
:func:`save_standard_plots` (what ``bosaris-dask evaluate --plots-dir DIR`` does).

- :func:`det_plot`: DET curves (ROCCH-DET and/or steppy) on probit axes, ticks in percent,
  preset windows (:data:`DET_WINDOWS`) or custom limits, minDCF/actDCF points, EER, DR30 lines.
- :func:`nbe_plot`: normalized actDCF and minDCF against prior log-odds, miss/false-alarm
  contributions, DR30 marks, operating-point lines, dev and eval together.
- :func:`ape_plot`, :func:`cllr_plot`: Bayes error-rate (APE) curves, whose areas are Cllr and
  minCllr, and the bars ``Cllr = minCllr + calibration loss``.
- :func:`ece_plot`: empirical cross-entropy of the raw, PAV-calibrated and neutral LLRs against
  prior log-odds (the forensic ECE plot; results of ``evaluate(..., ece_plo=...)``).
- :func:`tippett_plot`: the proportions of target and non-target LLRs at or above each threshold
  (the forensic Tippett plot), with the line LLR = 0.

Examples
--------
>>> import numpy as np, matplotlib, tempfile, pathlib
>>> matplotlib.use("Agg")
>>> from bosaris_dask.metrics import evaluate_arrays
>>> rng = np.random.default_rng(0)
>>> ds = evaluate_arrays(rng.normal(3, 1, 500), rng.normal(0, 1, 5000), name="demo")
>>> ax = det_plot(ds, window="classic")
>>> [t.get_text() for t in ax.get_yticklabels()][-3:]
['10', '20', '50']
>>> save_figure(ax, pathlib.Path(tempfile.mkdtemp()) / "det.pdf").suffix
'.pdf'
"""

from bosaris_dask.plots._common import save_figure
from bosaris_dask.plots.ape import ape_plot, cllr_plot
from bosaris_dask.plots.axes import DET_WINDOWS, probit, set_det_axes
from bosaris_dask.plots.det import auto_window, det_plot, rocch_det_points
from bosaris_dask.plots.ece import ece_plot
from bosaris_dask.plots.nbe import nbe_plot
from bosaris_dask.plots.standard import (
    PLOT_KINDS,
    STANDARD_PLOTS,
    save_plot,
    save_standard_plots,
    standard_figures,
)
from bosaris_dask.plots.tippett import tippett_plot

__all__ = [
    "DET_WINDOWS",
    "PLOT_KINDS",
    "STANDARD_PLOTS",
    "ape_plot",
    "auto_window",
    "cllr_plot",
    "det_plot",
    "ece_plot",
    "nbe_plot",
    "probit",
    "rocch_det_points",
    "save_figure",
    "save_plot",
    "save_standard_plots",
    "set_det_axes",
    "standard_figures",
    "tippett_plot",
]
