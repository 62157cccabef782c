"""Pass 1's bins: the top key bits, or maps fitted to a sample of the scores.

Pass 1 (:func:`bosaris_dask.engine.summarize`, and the grouped pass 1 of
:mod:`bosaris_dask.passes.grouped_histograms`) counts trials per key bin
(:class:`~bosaris_dask.passes.binmap.BinMap`). Which bins it uses is decided here, before any pass:

- the top ``coarse_bits`` of each key (:func:`default_coarse_bits`: 20 for one or two systems);
- for more trials than the kept-trials budget (``bosaris_dask.keep-limit``) can hold, an
  adaptive map per system (``bosaris_dask.adaptive-bins``), fitted to a sample of its scores
  read in one small pass (:func:`fitted_bin_maps`), with about 1,024 trials per bin
  (:func:`adaptive_bits`), so that the candidate bins left after pass 1 hold few trials.

Examples
--------
>>> default_coarse_bits(1), adaptive_bits(10**9, 20), is_adaptive(1, 10**9, 2**24, None)
(20, 20, True)
>>> m = BinMap.uniform(32, 20)
>>> kernel_shift(m), kernel_map(m) is None  # a uniform map: the kernels shift the keys
(12, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import dask.array as da
import numpy as np

from bosaris_dask import config
from bosaris_dask.errors import OptionError
from bosaris_dask.passes import subgrids
from bosaris_dask.passes.binmap import MIN_ADAPTIVE_BITS, BinMap
from bosaris_dask.passes.keys import key_bits, order_keys
from bosaris_dask.progress import compute

__all__ = [
    "MAX_COARSE_BITS", "SAMPLE_TRIALS", "default_coarse_bits", "adaptive_bits", "is_adaptive",
    "adaptive_budget", "fitted_bin_maps", "system_maps", "check_maps", "kernel_shift",
    "kernel_map",
]  # fmt: skip

#: The most key-prefix bits pass 1 may use (a 256 MB histogram per system and chunk).
MAX_COARSE_BITS = 24
#: About how many trials the sample read before an adaptive pass 1 holds (whole rows).
SAMPLE_TRIALS = 1 << 21


def default_coarse_bits(n_systems: int) -> int:
    """Key-prefix bits of pass 1: 16 MB of histogram per system and chunk at 20 bits, halved
    for 3-4 systems and quartered beyond, so a chunk's result grows slower than the systems."""
    return 20 if n_systems <= 2 else 19 if n_systems <= 4 else 18


def adaptive_bits(cells: int, bits: int) -> int:
    """The bin budget (bits) of adaptive pass-1 bins: about 1,024 trials per bin, 2**16 bins
    at least, ``2**bits`` at most (17 bits at 1e8 trials, 20 at 1e9). Finer bins leave fewer
    candidate trials but cost pass 1 cache misses: at 1e8, 2**20 bins spread over the whole
    histogram made pass 1 23% slower per trial than the fixed bins, 2**16-2**18 3-8%.

    >>> adaptive_bits(10**8, 20), adaptive_bits(10**9, 20), adaptive_bits(10**6, 20)
    (17, 20, 16)
    """
    return min(bits, max(16, round(math.log2(max(cells, 1) / 1024))))


def is_adaptive(mode: int, cells: int, keep_limit: int, coarse_bits: int | None) -> bool:
    """Whether pass 1 fits its bins to the scores (``bosaris_dask.adaptive-bins``: 0 never;
    1 when the trials could overflow the kept-trials budget and ``coarse_bits`` is not given;
    2 always)."""
    if mode == 2:
        return True
    return mode == 1 and coarse_bits is None and 0 < keep_limit < cells


def adaptive_budget(cells: int, bits: int) -> int | None:
    """The bin budget (bits) of :func:`system_maps`' adaptive bins for ``cells`` trials and at
    most ``2**bits`` bins when ``bosaris_dask.adaptive-bins`` fits them to the scores and no
    ``coarse_bits`` is given; ``None`` when it keeps the fixed bins."""
    mode, keep_limit = config.get("adaptive-bins"), config.get("keep-limit")
    if not is_adaptive(mode, cells, keep_limit, None):
        return None
    return adaptive_bits(cells, bits)


def _sample_keys(
    inputs: list[da.Array], n_sys: int, size: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per system, the keys and target flags of the scored trials among about ``size`` trials
    of a sixteenth of the chunks (one at least), spread over the chunk grid: every few rows (and
    columns) of each, read in one small pass (a memory-mapped store reads only those rows;
    scores from embeddings compute only those pairs, :mod:`bosaris_dask.passes.subgrids`)."""
    nbi, nbj = inputs[0].numblocks
    picks = np.unique(np.linspace(0, nbi * nbj - 1, max(1, nbi * nbj // 16)).round())
    per = max(1, size // len(picks))
    parts = []
    for f in picks.astype(int).tolist():
        i, j = divmod(f, nbj)
        r, c = inputs[0].chunks[0][i], inputs[0].chunks[1][j]
        rstep = min(r, math.ceil(r * c / per))
        cstep = max(1, math.ceil(math.ceil(r / rstep) * c / per))
        parts.append(tuple(subgrids.strided(a, i, j, rstep, cstep).reshape(-1) for a in inputs))
    got = compute(parts)
    cls = np.concatenate([np.asarray(p[0]) for p in got])
    out = []
    for k in range(n_sys):
        s = np.concatenate([np.asarray(p[1 + 2 * k]) for p in got])
        m = np.concatenate([np.asarray(p[2 + 2 * k]) for p in got])
        valid = (cls != 0) & m.astype(bool) & np.isfinite(s)
        out.append((order_keys(s[valid]), cls[valid] > 0))
    return out


def fitted_bin_maps(
    inputs: list[da.Array], dtype: np.dtype, budgets: Sequence[int]
) -> list[list[BinMap]]:
    """Per budget (bits), per system, pass-1 bins fitted to one sample of each system's scores
    (uniform bins for a budget under :data:`~bosaris_dask.passes.binmap.MIN_ADAPTIVE_BITS` bits).

    ``inputs`` are :func:`bosaris_dask.inputs.pass_inputs`'s: the same inputs give the same
    sample, so a budget that :func:`system_maps` would use gives, system by system, the maps it
    uses (the grouped passes of :mod:`bosaris_dask.conditions` fit their pooled and their
    per-condition bins this way, from one sample read).
    """
    n_sys = (len(inputs) - 1) // 2
    width = key_bits(dtype)
    samples = None
    out = []
    for bits in budgets:
        if bits < MIN_ADAPTIVE_BITS:  # too few bins to share out: no sample
            out.append([BinMap.uniform(width, bits)] * n_sys)
            continue
        if samples is None:
            samples = _sample_keys(inputs, n_sys, SAMPLE_TRIALS)
        out.append([BinMap.from_sample(keys, width, bits, tar) for keys, tar in samples])
    return out


def system_maps(
    inputs: list[da.Array],
    dtype: np.dtype,
    *,
    coarse_bits: int | None,
    bin_maps: Sequence[BinMap] | None,
    knobs: dict[str, int],
) -> list[BinMap]:
    """Pass 1's bins of each system of :func:`bosaris_dask.engine.summarize`: ``bin_maps`` if
    given (checked), else the top ``coarse_bits`` (default :func:`default_coarse_bits`) key
    bits, or adaptive maps (:func:`is_adaptive`, with the engine's ``knobs``)."""
    n_sys = (len(inputs) - 1) // 2
    if bin_maps is not None:
        return check_maps(bin_maps, n_sys, key_bits(dtype), "bin_maps")
    bits = coarse_bits or default_coarse_bits(n_sys)
    cells = int(np.prod(inputs[0].shape))
    if not is_adaptive(knobs["adaptive_bins"], cells, knobs["keep_limit"], coarse_bits):
        return [BinMap.uniform(key_bits(dtype), bits)] * n_sys
    return fitted_bin_maps(inputs, dtype, [coarse_bits or adaptive_bits(cells, bits)])[0]


def check_maps(maps: Sequence[BinMap], n_sys: int, width: int, what: str) -> list[BinMap]:
    """``maps`` as a list, if there is one per system, each bins ``width``-bit keys and has at
    most ``2**MAX_COARSE_BITS`` bins; else an OptionError naming the argument ``what``."""
    maps = list(maps)
    if len(maps) != n_sys or any(m.key_bits != width for m in maps):
        raise OptionError(f"{what}: need one map of {width}-bit keys per system ({n_sys}), "
                          f"got {len(maps)}")  # fmt: skip
    if any(m.nbins > 1 << MAX_COARSE_BITS for m in maps):
        raise OptionError(f"{what}: at most 2**{MAX_COARSE_BITS} bins per map")
    return maps


def kernel_shift(binmap: BinMap) -> int:
    """The shift of a uniform map (what the kernels and plans take), 0 for an adaptive one."""
    return 0 if binmap.adaptive else binmap.shift


def kernel_map(binmap: BinMap | None) -> BinMap | None:
    """The map for a kernel: ``None`` for a uniform one (the kernel shifts the keys)."""
    return binmap if binmap is not None and binmap.adaptive else None
