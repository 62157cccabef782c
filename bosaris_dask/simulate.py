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

import math
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
from dask.base import tokenize

from bosaris_dask.errors import TrialError
from bosaris_dask.trials import key_from_labels, make_scores

__all__ = ["DEFAULT_TARGET_RATE", "CHUNK_BYTES", "SystemSpec", "default_systems", "simulate"]

#: Default fraction of target trials: 1 in 200, between SRE-style dense lists (1/1000 and less)
#: and sets small enough for a demo to still have thousands of targets.
DEFAULT_TARGET_RATE = 0.005

#: Default bytes of score per chunk (full rows of segments when one row fits).
CHUNK_BYTES = 64 * 2**20

# Purposes of the random streams; SeedSequence(seed, spawn_key=(purpose, ...)) keeps them apart.
_LABELS, _POPULATION, _SYSTEM_TABLES, _SHARED_NOISE, _SYSTEM_NOISE = range(1, 6)

# Population effects, shared by all systems (log-sd of multiplicative, sd of additive effects).
_MODEL_SCALE_SD = 0.2
_SEGMENT_SCALE_SD = 0.25
_GOAT_SD = 0.15
_MODEL_OFFSET_SD = 0.25
_SEGMENT_OFFSET_SD = 0.3
_OFFSET_SHARED = 0.8  # weight of the part of an offset common to all systems


@dataclass(frozen=True)
class SystemSpec:
    """How one simulated system scores trials (see the module docstring for the model).

    Parameters
    ----------
    separation
        d': the mean target shift, in units of the non-target noise (larger is better).
    shared
        Weight ``w`` in ``[0, 1]`` of the trial noise shared with the other systems.
    target_width
        Standard deviation of target noise relative to non-target noise.
    scale, offset
        The affine map from the latent evidence to the score (mis-calibration).
    decimals
        Round scores to this many decimals (ties, like scores printed by a tool), or ``None``.
    outlier_rate, outlier_scale
        Fraction of trials whose noise is multiplied by ``outlier_scale``.
    """

    separation: float
    shared: float = 0.7
    target_width: float = 1.25
    scale: float = 1.0
    offset: float = 0.0
    decimals: int | None = None
    outlier_rate: float = 0.001
    outlier_scale: float = 4.0

    def __post_init__(self) -> None:
        finite = ("separation", "target_width", "scale", "offset", "outlier_scale")
        for name in finite:
            value = getattr(self, name)
            if not isinstance(value, Real) or not math.isfinite(value):
                raise TrialError(f"SystemSpec.{name} must be a finite number, got {value!r}")
        if not 0.0 <= self.shared <= 1.0:
            raise TrialError(f"SystemSpec.shared must be in [0, 1], got {self.shared!r}")
        if not 0.0 <= self.outlier_rate <= 1.0:
            raise TrialError(
                f"SystemSpec.outlier_rate must be in [0, 1], got {self.outlier_rate!r}"
            )
        if self.target_width <= 0 or self.scale <= 0 or self.outlier_scale <= 0:
            raise TrialError("SystemSpec.target_width, scale and outlier_scale must be positive")
        if self.decimals is not None and (
            not isinstance(self.decimals, Integral) or not 0 <= self.decimals <= 9
        ):
            raise TrialError(f"SystemSpec.decimals must be None or 0..9, got {self.decimals!r}")


def default_systems(n: int) -> list[SystemSpec]:
    """The specs of the first ``n`` default systems, best first.

    d' is ``2.6 + 2 * 0.7**k`` (4.6, 4.0, 3.58, ...); the calibration style cycles with
    ``k % 3``: 0 an over-confident LLR-like score (``scale = 1.3 d'``, shifted by -1.5),
    1 a cosine-similarity-like score (``scale = 0.08``), 2 a raw score rounded to 3 decimals.

    Examples
    --------
    >>> [(round(s.separation, 2), s.decimals) for s in default_systems(3)]
    [(4.6, None), (4.0, None), (3.58, 3)]
    """
    specs = []
    for k in range(n):
        d = 2.6 + 2.0 * 0.7**k
        style = k % 3
        if style == 0:
            spec = SystemSpec(d, scale=1.3 * d, offset=-1.3 * d * d / 2 - 1.5)
        elif style == 1:
            spec = SystemSpec(d, scale=0.08, offset=0.02)
        else:
            spec = SystemSpec(d, scale=1.0, offset=-0.5, decimals=3)
        specs.append(spec)
    return specs


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


# --------------------------------------------------------------------------------------------
# argument checks and small (per model / per segment) tables
# --------------------------------------------------------------------------------------------


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


def _rng(seed: int, *key: int) -> np.random.Generator:
    """An independent random stream for ``(seed, *key)`` (SFC64: the fastest normals here)."""
    return np.random.Generator(np.random.SFC64(np.random.SeedSequence(seed, spawn_key=key)))


def _speakers(
    n_models: int, n_segments: int, target_rate: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Speaker codes of models and segments, dealt in turn to ``round(1/rate)`` speakers."""
    n = max(1, round(1.0 / target_rate))
    rng = _rng(seed, _LABELS)
    mspk = rng.permutation(np.arange(n_models, dtype=np.int64) % n)
    sspk = rng.permutation(np.arange(n_segments, dtype=np.int64) % n)
    return mspk, sspk


def _population(n_models: int, n_segments: int, seed: int) -> dict[str, np.ndarray]:
    """Per-model and per-segment effects shared by all systems (each from its own stream)."""

    def normal(what: int, n: int) -> np.ndarray:
        return _rng(seed, _POPULATION, what).standard_normal(n)

    return {
        "model_scale": np.exp(_MODEL_SCALE_SD * normal(0, n_models)),
        "segment_scale": np.exp(_SEGMENT_SCALE_SD * normal(1, n_segments)),
        "goat": np.exp(_GOAT_SD * normal(2, n_models)),
        "model_common": normal(3, n_models),
        "segment_common": normal(4, n_segments),
    }


def _offsets(pop: dict[str, np.ndarray], seed: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Model and segment offsets of system ``k``: a common part plus a private part."""
    private = math.sqrt(1.0 - _OFFSET_SHARED**2)
    out = []
    for what, sd in (("model", _MODEL_OFFSET_SD), ("segment", _SEGMENT_OFFSET_SD)):
        common = pop[f"{what}_common"]
        own = _rng(seed, _SYSTEM_TABLES, k, len(out)).standard_normal(len(common))
        out.append(sd * (_OFFSET_SHARED * common + private * own))
    return out[0], out[1]


def _lazy1d(values: Any, chunks: tuple[int, ...]) -> da.Array:
    return values if isinstance(values, da.Array) else da.from_array(values, chunks=(chunks,))


# --------------------------------------------------------------------------------------------
# the per-chunk kernel
# --------------------------------------------------------------------------------------------


def _target_pairs(mcode: np.ndarray, scode: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the pairs with equal codes, without an ``r x c`` temporary.

    Rows come out in increasing order, columns increasing within a row.
    """
    order = np.argsort(scode, kind="stable")
    ordered = scode[order]
    lo = np.searchsorted(ordered, mcode, side="left")
    counts = np.searchsorted(ordered, mcode, side="right") - lo
    rows = np.repeat(np.arange(len(mcode)), counts)
    before = np.cumsum(counts) - counts  # pairs of the earlier rows
    cols = order[np.repeat(lo - before, counts) + np.arange(int(counts.sum()))]
    return rows, cols


def _score_block(
    rows: np.ndarray,
    mcode: np.ndarray,
    mscale: np.ndarray,
    goat: np.ndarray,
    moff: np.ndarray,
    cols: np.ndarray,
    scode: np.ndarray,
    sscale: np.ndarray,
    soff: np.ndarray,
    *,
    seed: int,
    system: int,
    spec: SystemSpec,
    out_dtype: str,
) -> np.ndarray:
    """Scores of one chunk, from the chunk's own random streams.

    Works in place on the ``r x c`` result plus one ``r x c`` noise temporary; everything else
    is per row, per column or per target pair.
    """
    dtype = np.dtype(out_dtype)
    r, c = len(rows), len(cols)
    if r == 0 or c == 0:
        return np.empty((r, c), dtype=dtype)
    origin = (int(rows[0]), int(cols[0]))
    own = _rng(seed, _SYSTEM_NOISE, system, *origin)
    shared, private = spec.shared, math.sqrt(max(0.0, 1.0 - spec.shared**2))
    if shared > 0:  # x = shared * (u + (private / shared) * v): fold ``shared`` into the rows
        x = _rng(seed, _SHARED_NOISE, 0, *origin).standard_normal((r, c), dtype=dtype)
        if private > 0:
            v = own.standard_normal((r, c), dtype=dtype)
            v *= dtype.type(private / shared)
            x += v
            del v
        weight = shared
    else:
        x = own.standard_normal((r, c), dtype=dtype)
        weight = 1.0
    if spec.outlier_rate > 0 and spec.outlier_scale != 1:
        where = own.integers(0, r * c, own.binomial(r * c, spec.outlier_rate))
        x.reshape(-1)[where] *= dtype.type(spec.outlier_scale)
    x *= (spec.scale * weight * mscale).astype(dtype)[:, None]
    x *= sscale.astype(dtype)[None, :]
    ti, tj = _target_pairs(mcode, scode)
    shift = (spec.scale * spec.separation * goat).astype(dtype)
    x[ti, tj] = x[ti, tj] * dtype.type(spec.target_width) + shift[ti]
    x += (spec.scale * moff + spec.offset).astype(dtype)[:, None]
    x += (spec.scale * soff).astype(dtype)[None, :]
    if spec.decimals is not None:
        q = dtype.type(10**spec.decimals)
        x *= q
        np.rint(x, out=x)
        x /= q
    return x
