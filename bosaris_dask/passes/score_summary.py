"""The summary of one system's scores against a key: what every metric is computed from.

A :class:`ScoreSummary` holds ascending, non-empty key bins with target and non-target counts,
exact (single keys) wherever a metric could depend on it, and the exact Cllr sums.
:func:`bosaris_dask.engine.summarize` makes them from scores and a key;
:func:`bosaris_dask.metrics.summary_from_arrays` from arrays.

Examples
--------
>>> from bosaris_dask.engine import summarize
>>> from bosaris_dask.trials import make_key, make_scores
>>> key = make_key(["m"], ["a", "b", "c"], [[1, -1, -1]])
>>> s = summarize(make_scores(["m"], ["a", "b", "c"], [[2.0, 0.0, 5.0]]), key)[0]
>>> s.n_target, s.n_nontarget, s.values().tolist()
(1, 2, [0.0, 2.0, 5.0])
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from bosaris_dask import roc
from bosaris_dask.errors import TrialError
from bosaris_dask.passes import exact_sum
from bosaris_dask.passes.keys import keys_to_values, threshold_keys

__all__ = ["ScoreSummary"]


def _same_value(a: Any, b: Any) -> bool:
    """``a == b``, arrays by value."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    return bool(a == b)


@dataclass(eq=False, repr=False)
class ScoreSummary:
    """Exact-where-it-matters summary of one system's scores against a key.

    Attributes
    ----------
    dtype
        The score dtype (float32 or float64).
    lo, bits
        Each non-empty bin covers the keys ``[lo, lo + 2**bits)``; ascending, disjoint. A bin
        with ``bits == 0`` is one exact score value.
    n_tar, n_non
        Target and non-target counts per bin.
    softplus_units
        ``sum log(1 + exp(-s))`` over targets and ``sum log(1 + exp(s))`` over non-targets
        (natural log), as exact integers in units of ``2**-57``: Cllr without a second pass.
        Each term is rounded to a multiple of ``2**-57`` and the terms are added exactly
        (:mod:`bosaris_dask.passes.exact_sum`), so the sums are the same, bit for bit, in any
        chunking, merge tree and scheduler, and their means are finite even where the sums
        exceed float64. :attr:`softplus_tar` and :attr:`softplus_non` are them as floats.
    n_missing
        Key trials without a score (dropped; non-zero only with ``allow_missing``).
    cross_entropy_plo, cross_entropy
        Prior log-odds ``a`` (asked for with :func:`~bosaris_dask.engine.summarize`'s
        ``cross_entropy_plo``) and, per ``a``, the exact sums ``sum log(1 + exp(-(s + a)))`` over
        targets and ``sum log(1 + exp(s + a))`` over non-targets, a (target, non-target) pair of
        integers in the units of ``softplus_units``: the empirical cross-entropy of the scores as
        LLRs at every ``a`` (:mod:`bosaris_dask.ece`).
    passes
        Passes over the data this summary took (shared by all systems of one call).
    """

    dtype: np.dtype
    lo: np.ndarray
    bits: np.ndarray
    n_tar: np.ndarray
    n_non: np.ndarray
    softplus_units: tuple[int, int]
    n_missing: int = 0
    passes: int = 1
    name: str = ""
    cross_entropy_plo: np.ndarray | None = None
    cross_entropy: list[tuple[int, int]] | None = None
    _hull: roc.Hull | None = field(default=None, repr=False, compare=False)

    def __eq__(self, other: object) -> bool:
        """Equal fields, arrays compared by value (a dataclass's ``==`` of arrays raised).

        Examples
        --------
        >>> from bosaris_dask.engine import summarize
        >>> from bosaris_dask.trials import make_key, make_scores
        >>> key = make_key(["m"], ["a", "b"], [[1, -1]])
        >>> scores = make_scores(["m"], ["a", "b"], [[2.0, 0.0]])
        >>> summarize(scores, key)[0] == summarize(scores, key)[0]
        True
        """
        if not isinstance(other, ScoreSummary):
            return NotImplemented
        return all(_same_value(getattr(self, f.name), getattr(other, f.name))
                   for f in fields(self) if f.compare)  # fmt: skip

    __hash__ = None  # type: ignore[assignment]  # mutable, as a dataclass with eq

    def __repr__(self) -> str:
        """What a user looks at: counts and bins, not the bins' arrays.

        Examples
        --------
        >>> from bosaris_dask.engine import summarize
        >>> from bosaris_dask.trials import make_key, make_scores
        >>> key = make_key(["m"], ["a", "b", "c"], [[1, -1, -1]])
        >>> summarize(make_scores(["m"], ["a", "b", "c"], [[2.0, 0.0, 5.0]]), key)[0]
        ScoreSummary('system-1', float64, 1 targets, 2 non-targets, 3 bins, 1 pass)
        """
        missing = f", {self.n_missing} missing" if self.n_missing else ""
        return (f"ScoreSummary({self.name!r}, {np.dtype(self.dtype)}, {self.n_target} targets, "
                f"{self.n_nontarget} non-targets, {len(self.lo)} bins{missing}, "
                f"{self.passes} pass{'es' if self.passes != 1 else ''})")  # fmt: skip

    @property
    def n_target(self) -> int:
        """Number of target trials."""
        return int(self.n_tar.sum())

    @property
    def n_nontarget(self) -> int:
        """Number of non-target trials."""
        return int(self.n_non.sum())

    @property
    def softplus_tar(self) -> float:
        """The targets' softplus sum as a float (``inf`` beyond float64's range)."""
        return exact_sum.to_float(self.softplus_units[0])

    @property
    def softplus_non(self) -> float:
        """The non-targets' softplus sum as a float (``inf`` beyond float64's range)."""
        return exact_sum.to_float(self.softplus_units[1])

    def values(self) -> np.ndarray:
        """The lowest score value of each bin (the exact value where ``bits == 0``)."""
        return keys_to_values(self.lo, self.dtype)

    def upper_values(self) -> np.ndarray:
        """The highest score value each bin can hold (exact where ``bits == 0``)."""
        hi = self.lo + ((np.uint64(1) << self.bits.astype(np.uint64)) - np.uint64(1))
        return keys_to_values(hi, self.dtype)

    @property
    def hull(self) -> roc.Hull:
        """The ROC convex hull (exact: no vertex lies inside an unrefined bin)."""
        if self._hull is None:
            self._hull = roc.hull_from_counts(self.n_tar, self.n_non)
        return self._hull

    def error_counts(self, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Misses (targets below) and false alarms (non-targets at or above) at thresholds.

        Exact for the thresholds the summary was refined for (and any between exact bins).
        """
        kappa = threshold_keys(np.asarray(thresholds, dtype=np.float64), self.dtype)
        pos = np.searchsorted(self.lo, kappa.astype(np.uint64), side="left")
        cum_tar = np.concatenate([[0], np.cumsum(self.n_tar)])
        cum_non = np.concatenate([[0], np.cumsum(self.n_non)])
        return cum_tar[pos], cum_non[-1] - cum_non[pos]

    @classmethod
    def given_to(cls, function: str, obj: Any) -> ScoreSummary:
        """``obj``, or the error of a ``function`` of summaries given something else."""
        if not isinstance(obj, cls):
            raise TrialError(f"{function} takes a score summary (bd.summarize(scores, key), or "
                             "metrics.summary_from_arrays(tar, non) for arrays), not "
                             f"{type(obj).__name__}")  # fmt: skip
        return obj
