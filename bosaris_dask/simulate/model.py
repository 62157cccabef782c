"""The generative model of the simulated scores, as numpy: per-model and per-segment tables, and
the per-chunk kernel that draws one chunk of one system from its own random streams.

See :mod:`bosaris_dask.simulate` for the model itself; :class:`SystemSpec` holds one system's
parameters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from bosaris_dask.errors import TrialError

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
    out: list[np.ndarray] = []
    for what, sd in (("model", _MODEL_OFFSET_SD), ("segment", _SEGMENT_OFFSET_SD)):
        common = pop[f"{what}_common"]
        own = _rng(seed, _SYSTEM_TABLES, k, len(out)).standard_normal(len(common))
        out.append(sd * (_OFFSET_SHARED * common + private * own))
    return out[0], out[1]


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
