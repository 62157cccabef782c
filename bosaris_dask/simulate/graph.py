""":func:`simulate`: check the arguments, choose the chunks, and lay the per-chunk kernel of
:mod:`bosaris_dask.simulate.model` out as a lazy key and lazy Scores.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
from dask.base import tokenize

from bosaris_dask.errors import TrialError
from bosaris_dask.simulate.model import (
    SystemSpec,
    _offsets,
    _population,
    _score_block,
    _speakers,
    default_systems,
)
from bosaris_dask.trials import key_from_labels, make_scores

#: Default fraction of target trials: 1 in 200, between SRE-style dense lists (1/1000 and less)
#: and sets small enough for a demo to still have thousands of targets.
DEFAULT_TARGET_RATE = 0.005

#: Default bytes of score per chunk (full rows of segments when one row fits).
CHUNK_BYTES = 64 * 2**20


def simulate(
    models: int,
    segments: int,
    *,
    systems: int | Sequence[SystemSpec] = 3,
    target_rate: float = DEFAULT_TARGET_RATE,
    seed: int = 0,
    dtype: Any = np.float32,
    chunks: Any = None,
) -> tuple[xr.Dataset, list[xr.Dataset]]:
    """A dense label-derived key and the lazy scores of ``K`` correlated systems.

    Parameters
    ----------
    models, segments
        Numbers of models (rows; ids ``m000001``...) and segments (columns; ``s000001``...).
    systems
        The number ``K`` of systems (the first ``K`` of :func:`default_systems`, best first),
        or a sequence of :class:`SystemSpec`.
    target_rate
        Fraction of target trials. There are ``n = round(1 / target_rate)`` speakers
        (``spk00001``...); models and segments are dealt to them in turn and shuffled, so each
        speaker has ``models / n`` models and ``segments / n`` segments (up to one) and the
        fraction is exactly ``target_rate`` when ``n`` divides both. With fewer models or
        segments than speakers, each model has about ``segments / n`` targets (at least one when
        ``segments >= n``; otherwise the first ``segments`` speakers have one each).
    seed
        Non-negative integer; the same seed (and chunks and dtype) gives identical values.
    dtype
        ``float32`` (default) or ``float64``: the dtype of the scores and of their generation.
    chunks
        Dask chunks of the key and of every score matrix. Default: about :data:`CHUNK_BYTES`
        of score per chunk, in full rows when a row fits.

    Returns
    -------
    key, scores
        The key (``trials.key_from_labels``; its mask is never stored) and a list of ``K``
        Scores (``trials.make_scores``) whose ``score`` is generated chunk by chunk and whose
        ``score_mask`` is all true. Building them computes nothing.

    Raises
    ------
    TrialError
        For non-positive sizes, a target rate outside ``(0, 1]``, a negative seed or a dtype
        other than float32/float64.

    Examples
    --------
    >>> key, scores = simulate(6, 8, systems=2, target_rate=0.5, dtype="float64")
    >>> len(scores), scores[1].score.dtype, int((key.trial_mask == 1).sum())
    (2, dtype('float64'), 24)
    """
    n_models = _count(models, "models")
    n_segments = _count(segments, "segments")
    specs = _specs(systems)
    seed = _seed(seed)
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TrialError(f"simulated scores are float32 or float64, not {dt}")
    if not isinstance(target_rate, Real) or not 0.0 < target_rate <= 1.0:
        raise TrialError(f"target_rate must be in (0, 1], got {target_rate!r}")
    shape = (n_models, n_segments)
    chunks = _chunks(shape, dt, chunks)

    mspk, sspk = _speakers(n_models, n_segments, target_rate, seed)
    speakers = np.unique(np.r_[mspk, sspk])
    if target_rate < 1.0 and len(speakers) == 1:
        why = (f"{n_models} x {n_segments} trials of one speaker" if round(1 / target_rate) > 1
               else f"round(1/{target_rate!r}) = 1 speaker, as for any rate above 2/3")  # fmt: skip
        raise TrialError(f"target_rate {target_rate!r}: every trial would be a target, with no "
                         f"non-target to evaluate: {why}")  # fmt: skip
    width = max(5, len(str(max(int(mspk.max()), int(sspk.max())) + 1)))
    model_ids = [f"m{i:06d}" for i in range(1, n_models + 1)]
    segment_ids = [f"s{j:06d}" for j in range(1, n_segments + 1)]
    key = key_from_labels(
        model_ids,
        [f"spk{c + 1:0{width}d}" for c in mspk],
        segment_ids,
        [f"spk{c + 1:0{width}d}" for c in sspk],
        chunks=chunks,
    )

    pop = _population(n_models, n_segments, seed)
    rows = {
        "index": da.arange(n_models, chunks=(chunks[0],)),
        "code": mspk,
        "scale": pop["model_scale"],
        "goat": pop["goat"],
    }
    cols = {
        "index": da.arange(n_segments, chunks=(chunks[1],)),
        "code": sspk,
        "scale": pop["segment_scale"],
    }
    rows = {k: _lazy1d(v, chunks[0]) for k, v in rows.items()}
    cols = {k: _lazy1d(v, chunks[1]) for k, v in cols.items()}

    out = []
    for k, spec in enumerate(specs):
        moff, soff = _offsets(pop, seed, k)
        name = "simulate-score-" + tokenize(shape, chunks, dt.str, seed, target_rate, k, spec)
        score = da.blockwise(
            _score_block,
            "ij",
            rows["index"],
            "i",
            rows["code"],
            "i",
            rows["scale"],
            "i",
            rows["goat"],
            "i",
            _lazy1d(moff, chunks[0]),
            "i",
            cols["index"],
            "j",
            cols["code"],
            "j",
            cols["scale"],
            "j",
            _lazy1d(soff, chunks[1]),
            "j",
            name=name,
            dtype=dt,
            meta=np.empty((0, 0), dtype=dt),
            seed=seed,
            system=k,
            spec=spec,
            out_dtype=dt.str,
        )
        out.append(make_scores(model_ids, segment_ids, score))
    return key, out


def _count(n: Any, what: str) -> int:
    if isinstance(n, bool) or not isinstance(n, Integral) or n < 1:
        raise TrialError(f"the number of {what} must be a positive integer, got {n!r}")
    return int(n)


def _seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, Integral) or seed < 0:
        raise TrialError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def _specs(systems: int | Sequence[SystemSpec]) -> list[SystemSpec]:
    if isinstance(systems, Integral) and not isinstance(systems, bool):
        return default_systems(_count(systems, "systems"))
    specs = list(systems)  # type: ignore[arg-type]
    if not specs or not all(isinstance(s, SystemSpec) for s in specs):
        raise TrialError("systems must be a positive integer or a non-empty list of SystemSpec")
    return specs


def _chunks(shape: tuple[int, int], dtype: np.dtype, chunks: Any) -> tuple[tuple[int, ...], ...]:
    """Normalized 2-D chunks; by default ~CHUNK_BYTES per chunk, full rows when a row fits."""
    if chunks is None:
        per_chunk = max(1, CHUNK_BYTES // dtype.itemsize)
        n_models, n_segments = shape
        if n_segments <= per_chunk:
            chunks = (min(n_models, max(1, per_chunk // n_segments)), n_segments)
        else:
            rows = min(n_models, math.isqrt(per_chunk))
            chunks = (rows, min(n_segments, per_chunk // rows))
    try:
        return da.core.normalize_chunks(chunks, shape, dtype=dtype)
    except (ValueError, TypeError) as err:
        raise TrialError(f"bad chunks {chunks!r} for a {shape} score matrix: {err}") from None


def _lazy1d(values: Any, chunks: tuple[int, ...]) -> da.Array:
    return values if isinstance(values, da.Array) else da.from_array(values, chunks=(chunks,))
