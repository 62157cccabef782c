r"""Cohort score normalization: Z-, T-, S-norm and adaptive S-norm (AS-norm).

With ``s`` the raw (float32) score of enrolment embedding ``e`` against test embedding ``t``,
and ``mu``, ``sigma`` the mean and population standard deviation of an embedding's scores
against the cohort (:mod:`bosaris_dask.embeddings.cohort`):

=========  ===============================================================================
``"z"``    ``z = (s - mu_e) / sigma_e``: statistics of the **enrolment** side's cohort scores
``"t"``    ``t = (s - mu_t) / sigma_t``: statistics of the **test** side's cohort scores
``"s"``    ``(z + t) / 2`` (S-norm, the constant 1/2 as in wespeaker; hyperion uses 1/sqrt(2))
``"as"``   ``(z' + t') / 2`` (AS-norm), where ``z'`` and ``t'`` use ``mu`` and ``sigma`` over
           only the ``top_n`` highest cohort scores of each side
=========  ===============================================================================

The arithmetic is float64 on the float32 raw score, rounded once to float32. The cohort
statistics are computed once per embedding when the Scores object is built
(:mod:`bosaris_dask.embeddings.cohort`): ``mu`` and ``sigma`` over the whole cohort are those of
the exact cohort dot products (from the cohort's mean and covariance, within ``2^-24`` of the
cosine scale of the float32 cohort scores' statistics), over the top N those of the N largest
float32 cohort scores; every block then
only rescales its product. The engine's refinement passes read the matrix screened
(:mod:`bosaris_dask.embeddings.normalized_screen`): exact normalized scores only where they can
lie in a candidate bin. An embedding whose (top-N) cohort scores have zero spread makes the
normalized score undefined, and one whose spread is so small that its normalized scores would
overflow float32 makes them infinite: each is an error naming it.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.embeddings import from_arrays, scores_from_embeddings
>>> e = from_arrays(["m"], [[1.0, 0.0]])
>>> t = from_arrays(["t"], [[0.6, 0.8]])
>>> c = from_arrays(["c1", "c2"], [[1.0, 0.0], [0.0, 1.0]])
>>> s = scores_from_embeddings(e, t, norm="z", cohort=c).score.values  # (0.6 - 0.5) / 0.5
>>> s.dtype, round(float(s[0, 0]), 6)
(dtype('float32'), 0.2)
"""

from __future__ import annotations

from functools import partial

import dask.array as da
import numpy as np

from bosaris_dask.embeddings.cohort import side_statistics
from bosaris_dask.embeddings.normalized_screen import normalized_block, screened_normalized
from bosaris_dask.embeddings.prepare import Side
from bosaris_dask.embeddings.scoring import outer_blocks
from bosaris_dask.errors import OptionError, ScoreError
from bosaris_dask.passes import screening

__all__ = ["NORMS", "normalize", "side_norms"]

NORMS = ("none", "z", "t", "s", "as")


#: A spread of cohort scores at or below this fraction of their root mean square is no spread:
#: the float32 scores and the statistics hold the cohort's scores to about ``2**-24`` of it, so
#: dividing by such a spread gives noise (a cohort of one vector at several scales gave
#: z-normalized scores of 1.6e8).
SPREAD_RESOLUTION = 2.0**-24


#: The largest float32: a normalized score beyond it would be infinite.
FLOAT32_MAX = float(np.finfo(np.float32).max)


def _check_spread(mu: np.ndarray, sd: np.ndarray, side: Side, what: str, reach: float) -> None:
    """Refuse a row whose spread makes its normalized scores undefined: none above the float32
    rounding, or so small that ``(s - mu) / sd`` of a raw score ``|s| <= reach`` (the product of
    the sides' largest norms) would overflow float32."""
    bad = ~(sd > SPREAD_RESOLUTION * np.hypot(mu, sd))
    if bad.any():
        raise ScoreError(
            f"{side.source}: id {side.ids[np.flatnonzero(bad)[0]]!r}: its {what}"
            "cohort scores have zero spread (none above their float32 rounding), so its "
            "normalized scores are undefined"
        )
    huge = ~(sd * FLOAT32_MAX > reach + np.abs(mu))
    if huge.any():
        i = np.flatnonzero(huge)[0]
        raise ScoreError(f"{side.source}: id {side.ids[i]!r}: its {what}cohort scores' spread "
                         f"({sd[i]:.3g}) is so small against its scores (up to {reach:.3g}) "
                         "that its normalized scores would overflow float32")  # fmt: skip


def normalize(
    enrol: Side, test: Side, cohort: Side | None, *, norm: str, top_n: int | None = None,
    both_sides: bool = False, device: str = "cpu",
) -> tuple[da.Array, np.ndarray | None, np.ndarray | None]:  # fmt: skip
    """The normalized matrix and the ``(n, 4)`` cohort statistics of each side (``None`` for a
    side the normalization does not use, unless ``both_sides``). ``device``: where the
    matrix's block products run (as :func:`~bosaris_dask.embeddings.scoring.score_matrix`;
    screened for refinement passes on the CPU only).

    Raises
    ------
    OptionError
        An unknown ``norm``, no cohort, ``top_n`` missing for ``"as"`` (or given for another
        without ``both_sides``, whose statistics use it).
    ScoreError
        A zero standard deviation of an embedding's cohort scores.
    """
    (mu_e, sd_e, mu_t, sd_t), e_found, t_found = side_norms(
        enrol, test, cohort, norm=norm, top_n=top_n, both_sides=both_sides
    )

    def lazy(values: np.ndarray, like: da.Array) -> da.Array:
        return da.from_array(values, chunks=(like.chunks[0],))

    stats = (lazy(mu_e, enrol.values), "i", lazy(sd_e, enrol.values), "i",
             lazy(mu_t, test.values), "j", lazy(sd_t, test.values), "j")  # fmt: skip
    on = {} if device == "cpu" else {"device": device}
    matrix = outer_blocks(normalized_block, enrol.values, test.values, *stats, norm=norm, **on)
    if device == "cpu":
        screening.register(matrix, partial(_screened, enrol.values, test.values, stats, norm))
    return matrix, e_found, t_found


def check_top_n_used(norm: str, top_n: int | None, statistics: bool) -> None:
    """Refuse a ``top_n`` that nothing would use: only AS-norm and the cohort statistics
    (``statistics``: ``--quality-out``) take it."""
    if top_n is None or norm == "as" or statistics:
        return
    what = "scores without a normalization" if norm == "none" else f"{norm}-norm"
    raise OptionError(f"top_n (--top-n) only applies to AS-norm (norm='as', --norm as) and to "
                      f"cohort statistics (--quality-out), not to {what}")  # fmt: skip


def side_norms(
    enrol: Side, test: Side, cohort: Side | None, *, norm: str, top_n: int | None = None,
    both_sides: bool = False,
) -> tuple[tuple[np.ndarray, ...], np.ndarray | None, np.ndarray | None]:  # fmt: skip
    """``(mu_e, sd_e, mu_t, sd_t)``, the statistics ``norm`` divides each row's scores by (1
    and 1 where a side is not used), and the ``(n, 4)`` cohort statistics of each side as
    :func:`normalize` returns them; the same checks."""
    if norm not in NORMS:
        raise OptionError(f"norm must be one of {', '.join(NORMS)}, got {norm!r}")
    if norm == "none":
        raise OptionError("a cohort is only used with a normalization (norm z, t, s or as)")
    if cohort is None:
        raise OptionError(f"{norm}-norm needs a cohort (cohort=, --cohort)")
    if norm == "as" and top_n is None:
        raise OptionError("AS-norm needs top_n (--top-n): how many of the highest cohort scores "
                          "of each embedding it uses")  # fmt: skip
    check_top_n_used(norm, top_n, both_sides)
    use_e, use_t = norm != "t", norm != "z"
    sides = [enrol] * (use_e or both_sides) + [test] * (use_t or both_sides)
    if len(sides) == 2 and sides[0] is sides[1]:  # one side twice: its statistics once
        sides = sides[:1]
    stats = side_statistics(sides, cohort, top_n=top_n)
    cols = (2, 3) if norm == "as" else (0, 1)
    what = f"top-{top_n} " if norm == "as" else ""
    e_found = stats[0] if use_e or both_sides else None
    t_found = stats[-1] if use_t or both_sides else None
    e_stats = e_found if use_e else np.ones((enrol.values.shape[0], 4))
    t_stats = t_found if use_t else np.ones((test.values.shape[0], 4))
    reach = enrol.max_norm * test.max_norm  # |raw score| at most (Cauchy-Schwarz)
    if use_e:
        _check_spread(e_stats[:, cols[0]], e_stats[:, cols[1]], enrol, what, reach)
    if use_t:
        _check_spread(t_stats[:, cols[0]], t_stats[:, cols[1]], test, what, reach)
    found = (e_stats[:, cols[0]], e_stats[:, cols[1]], t_stats[:, cols[0]], t_stats[:, cols[1]])
    return found, e_found, t_found


def _screened(rows: da.Array, cols: da.Array, stats: tuple, norm: str, lo: np.ndarray,
              hi: np.ndarray) -> da.Array:  # fmt: skip
    """The normalized matrix screened for the score ranges ``[lo[k], hi[k]]``
    (:mod:`bosaris_dask.embeddings.normalized_screen`), chunked as the exact one."""
    return outer_blocks(screened_normalized, rows, cols, *stats, norm=norm, lo=lo, hi=hi)
