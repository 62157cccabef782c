"""The engine's knobs: block sizes and budgets, as dask config keys ``bosaris_dask.*``.

Every knob has its default registered here, in one place, with :func:`dask.config.update_defaults`;
set one for a block of code with :func:`dask.config.set` (or in a dask YAML file, or through an
environment variable such as ``DASK_BOSARIS_DASK__BLOCK=4096``). The engine reads the knobs when
it builds a graph (:func:`get`) and passes them to the kernels as arguments, so the tasks carry
the values they were built with, on any worker.

=====================  ==========  ==============================================================
key                    default     meaning
=====================  ==========  ==============================================================
``block``              65536       elements per step of the kernels' element-wise work (kept in
                                   the CPU cache); at most 65536, as the exact Cllr sums need
``slice``              4194304     elements per histogram update (one ``bincount``)
``dense-budget``       524288      sub-bins of a dense refinement histogram, per system
``raw-limit``          4194304     pull exact keys instead of sub-histogramming when the
                                   candidate bins hold at most this many trials (0: never)
``keep-limit``         16777216    keep the candidate trials in memory between refinement
                                   rounds when all systems' hold at most this many (0: never)
``auc-limit``          16777216    the most trials whose exact keys the exact AUC pulls (8 bytes
                                   each): a system's targets in pass 1 (the AUC then takes no
                                   extra pass), else the smaller class of the mixed score bins
                                   (all systems together) in passes after the evaluation:
                                   :mod:`bosaris_dask.passes.exact_auc`; beyond, bounds only
``skip-chunks``        1           refinement passes read only the chunks whose pass-1 bins hold
                                   a candidate trial (pass 1 notes which bins each chunk holds): a
                                   chunk of an embedding source skipped is a block product saved;
                                   0: read every chunk
``screen``             1           a refinement pass reads a score source's *screen* where it
                                   has one (exact scores only near the candidate bins: scores
                                   from embeddings, :mod:`bosaris_dask.passes.screening`); 0: the
                                   exact scores everywhere
``adaptive-bins``      1           pass 1's bins fitted to a sample of the scores (finer where
                                   they are dense, :mod:`bosaris_dask.passes.binmap`): 0 never, 1
                                   when the trials outnumber ``keep-limit`` (and ``coarse_bits`` is
                                   not given), 2 always; per condition too
                                   (:mod:`bosaris_dask.conditions.summaries`)
``bootstrap-bins``     256         the most coarse score bins per system of the bootstrap's
                                   resample histograms (:mod:`bosaris_dask.bootstrap`)
``bootstrap-budget``   536870912   bytes a bootstrap task may hold (its resample histograms,
                                   weights and merges): fewer bins beyond, an error below 16
``bootstrap-chunk``    1073741824  the bootstrap pass merges row chunks into chunks of up to
                                   this many bytes of input when that splits fewer groups (on
                                   the threaded scheduler; a cluster keeps the chunks)
``trial-cells``        134217728   the most cells of a grid whose trials' own conditions
                                   (``--by trial.COL``) are held in memory, 2 bytes a cell
                                   (:mod:`bosaris_dask.conditions.cells`); a larger grid is
                                   refused (a sparse text list, read packed, has no grid)
``worker-malloc``      1           a worker process started with distributed's
                                   ``MALLOC_TRIM_THRESHOLD_=65536`` raises glibc's mmap and trim
                                   thresholds at its first pass task
                                   (:mod:`bosaris_dask.passes.malloc`); 0: leave malloc alone
``parse-threads``      0           threads that parse a text file's blocks ahead of the reader
                                   (:mod:`bosaris_dask.io.text.parse`; the parsers release the
                                   GIL); 0: as many as the CPUs, at most 4
``fsync``              1           an output's files and folders are flushed to disk (``fsync``)
                                   before it is renamed into place, so that a crash of the
                                   machine cannot leave a renamed but incomplete output
                                   (:mod:`bosaris_dask.io.atomic`); 0: leave it to the OS
=====================  ==========  ==============================================================

Examples
--------
>>> import dask
>>> get("block")
65536
>>> with dask.config.set({"bosaris_dask.block": 8}):
...     get("block")
8
>>> with dask.config.set({"bosaris_dask.block": 0}):
...     get("block")
Traceback (most recent call last):
...
bosaris_dask.errors.OptionError: bosaris_dask.block must be an integer from 1 to 65536, got 0
"""

from __future__ import annotations

import numbers
from typing import Any

import dask

from bosaris_dask.errors import OptionError

__all__ = ["KNOBS", "get", "check_int"]

#: Each knob's default and allowed range (inclusive).
KNOBS: dict[str, tuple[int, int, int]] = {
    "block": (1 << 16, 1, 1 << 16),
    "slice": (1 << 22, 1, 1 << 30),
    "dense-budget": (1 << 19, 1, 1 << 26),
    "raw-limit": (1 << 22, 0, 1 << 40),
    "keep-limit": (1 << 24, 0, 1 << 40),
    "auc-limit": (1 << 24, 0, 1 << 40),
    "adaptive-bins": (1, 0, 2),
    "skip-chunks": (1, 0, 1),
    "screen": (1, 0, 1),
    "bootstrap-bins": (256, 4, 1 << 16),
    "bootstrap-budget": (1 << 29, 1 << 20, 1 << 42),
    "bootstrap-chunk": (1 << 30, 1 << 10, 1 << 40),
    "trial-cells": (1 << 27, 0, 1 << 40),
    "worker-malloc": (1, 0, 1),
    "parse-threads": (0, 0, 64),
    "fsync": (1, 0, 1),
}

dask.config.update_defaults({"bosaris_dask": {name: d for name, (d, _, _) in KNOBS.items()}})


def check_int(name: str, value: Any, lo: int, hi: int) -> int:
    """``value`` as an ``int`` if it is an integer from ``lo`` to ``hi``, else OptionError.

    :class:`~bosaris_dask.errors.OptionError` is a :class:`ValueError`; its one line names
    the knob and its allowed range.

    Examples
    --------
    >>> check_int("coarse_bits", 12, 1, 24)
    12
    >>> check_int("coarse_bits", 2.5, 1, 24)
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.OptionError: coarse_bits must be an integer from 1 to 24, got 2.5
    """
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if not ok or not lo <= int(value) <= hi:
        raise OptionError(f"{name} must be an integer from {lo} to {hi}, got {value!r}")
    return int(value)


def get(name: str) -> int:
    """The current value of knob ``bosaris_dask.<name>``, checked against its range.

    A knob missing from dask's config reads as its default: a ``dask.config.set`` block
    around this package's first use restores the config as it found it, defaults included.
    """
    default, lo, hi = KNOBS[name]
    value = dask.config.get(f"bosaris_dask.{name}", default=default)
    return check_int(f"bosaris_dask.{name}", value, lo, hi)
