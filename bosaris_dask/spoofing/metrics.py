"""ASVspoof 5 metrics, exact: the package's CM EER, min a-DCF, min t-DCF and the t-EER.

Definitions: ``FIELD_METRICS.md`` section 4 (the ASVspoof 5 evaluation package,
``asvspoof-challenge/asvspoof5``). Every curve here is counted over **every** distinct score
with one rule: a trial is accepted iff ``score >= t``, for ``t`` each distinct score and
``+inf`` (reject all) — so results do not depend on the order of tied scores. Each class is
sorted once; rates at all thresholds come from :func:`numpy.searchsorted`.

Where ours differs from the package, and why:

- **ties**: the package's curves count a score equal to the threshold as rejected but its
  actDCF and ASV rates as accepted, and with tied scores its results depend on their order. We
  use one rule everywhere. On data without ties the numbers coincide.
- **t-EER**: the package decimates both curves to about 3,000 points and searches around a
  rough optimum; we run the same rule over every ASV threshold, and for each find the best CM
  threshold by bisection (the tandem miss-minus-false-alarm difference is monotone in the CM
  threshold), so it is exact at 1e6 trials.
- **t-DCF with given ASV scores**: the package passes ``Pmiss,spoof,asv`` where
  ``Pfa,spoof,asv`` belongs; we implement the published definition (``C2`` uses the spoof
  false-alarm rate of the ASV system).

Examples
--------
>>> import numpy as np
>>> bona, spoof = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.0, 1.5, -2.0])
>>> round(cm_eer(bona, spoof), 6)  # at t = 1.5: Pmiss 1/3, Pfa 1/4
0.291667
>>> costs = CostModel()
>>> round(costs.cm_effective_prior, 6), costs.a_dcf_normalizer
(0.655172, 0.595)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from bosaris_dask.errors import ScoreError

__all__ = [
    "CostModel",
    "ASVSPOOF5",
    "FIXED_ASV_RATES",
    "AsvRates",
    "thresholds",
    "miss_fa",
    "cm_eer",
    "a_dcf",
    "min_a_dcf",
    "asv_rates",
    "asv_rates_at",
    "a_dcf_of_rates",
    "t_dcf_constants",
    "t_dcf_of_rates",
    "min_t_dcf",
    "t_eer",
]


@dataclass(frozen=True)
class CostModel:
    """The costs and priors of spoofing-aware verification (the ASVspoof 5 challenge's).

    ``p_target + p_nontarget + p_spoof`` is 1, ``p_target`` strictly between 0 and 1 (else the
    a-DCF's normalizer is 0: a ScoreError); the defaults are the challenge's:
    Ptar = 0.95 · 0.99, Pnon = 0.95 · 0.01, Pspoof 0.05, Cmiss 1, Cfa 10, Cfa,spoof 10. (The
    package's ``a_dcf.CostModel()`` defaults — Ptar 0.9, Pnon 0.05, Cfa,cm 20 — are not what
    the challenge uses.)
    """

    p_target: float = 0.9405
    p_nontarget: float = 0.0095
    p_spoof: float = 0.05
    c_miss: float = 1.0
    c_fa: float = 10.0
    c_fa_spoof: float = 10.0

    def __post_init__(self) -> None:
        priors = (self.p_target, self.p_nontarget, self.p_spoof)
        if not (all(math.isfinite(p) and p >= 0 for p in priors) and abs(sum(priors) - 1) <= 1e-9):
            raise ScoreError(f"priors {priors} must be non-negative and sum to 1")
        costs = (self.c_miss, self.c_fa, self.c_fa_spoof)
        if not all(math.isfinite(c) and c > 0 for c in costs):
            raise ScoreError(f"costs {costs} must be positive finite numbers")
        if not self.a_dcf_normalizer > 0:  # Ptar 0 or 1: every a-DCF would be 0/0
            raise ScoreError(f"priors {priors} leave the a-DCF undefined: its normalizer "
                             "min(Cfa·Pnon + Cfa,spoof·Pspoof, Cmiss·Ptar) is 0, so Ptar must "
                             "be strictly between 0 and 1")  # fmt: skip

    @property
    def cm_effective_prior(self) -> float:
        """The BOSARIS effective prior of the CM task (bona fide vs spoof): 0.95/1.45."""
        bona = (self.p_target + self.p_nontarget) * self.c_miss
        return bona / (bona + self.p_spoof * self.c_fa_spoof)

    @property
    def a_dcf_normalizer(self) -> float:
        """``min(Cfa·Pnon + Cfa,spoof·Pspoof, Cmiss·Ptar)``: the a-DCF of the better default."""
        fa = self.c_fa * self.p_nontarget + self.c_fa_spoof * self.p_spoof
        return min(fa, self.c_miss * self.p_target)

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


#: The challenge's cost model.
ASVSPOOF5 = CostModel()


@dataclass(frozen=True)
class AsvRates:
    """ASV error rates for the t-DCF: ``pmiss``, ``pfa`` (non-targets), ``pfa_spoof``, each a
    fraction in ``[0, 1]`` (a ScoreError otherwise: 46.07 is a percentage).

    >>> AsvRates(0.02, 0.02, 46.07)
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.ScoreError: ASV rate pfa_spoof must be a fraction in [0, 1], got 46.07
    """

    pmiss: float
    pfa: float
    pfa_spoof: float
    threshold: float | None = None

    def __post_init__(self) -> None:
        for name in ("pmiss", "pfa", "pfa_spoof"):
            value = getattr(self, name)
            if not 0 <= value <= 1:  # (False for NaN)
                raise ScoreError(f"ASV rate {name} must be a fraction in [0, 1], got {value!r}")


#: The package's fixed ASV rates (used when no ASV scores are given).
FIXED_ASV_RATES = AsvRates(
    pmiss=0.01880141010575793, pfa=0.01881016557566423, pfa_spoof=0.4607082907604729
)


def _scores(x: Any, what: str) -> np.ndarray:
    a = np.sort(np.asarray(x, dtype=np.float64).ravel())
    if a.size == 0:
        raise ScoreError(f"no {what} score")
    if not np.isfinite(a).all():
        raise ScoreError(f"a {what} score is not finite")
    return a


def _threshold(value: float) -> np.ndarray:
    """A given threshold as a one-element array; a ScoreError for NaN (every comparison with
    it is false: it rejected every trial). ``±inf`` accept or reject all."""
    t = np.array([value], dtype=np.float64)
    if np.isnan(t[0]):
        raise ScoreError("the threshold is NaN")
    return t


def thresholds(*classes: np.ndarray) -> np.ndarray:
    """Every distinct score of the classes, ascending, then ``+inf`` (reject all)."""
    return np.append(np.unique(np.concatenate(classes)), np.inf)


def _below(sorted_scores: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Fraction of scores rejected at each threshold (``score < t``)."""
    return np.searchsorted(sorted_scores, t, side="left") / sorted_scores.size


def _above(sorted_scores: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Fraction of scores accepted at each threshold (``score >= t``), counted, not ``1 - x``."""
    n = sorted_scores.size
    return (n - np.searchsorted(sorted_scores, t, side="left")) / n


def miss_fa(pos: Any, neg: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(t, Pmiss(t), Pfa(t))`` over :func:`thresholds`, accepting iff ``score >= t``.

    Examples
    --------
    >>> t, pmiss, pfa = miss_fa([1.0, 2.0], [1.0, 0.0])
    >>> t.tolist(), pmiss.tolist(), pfa.tolist()
    ([0.0, 1.0, 2.0, inf], [0.0, 0.0, 0.5, 1.0], [1.0, 0.5, 0.0, 0.0])
    """
    pos, neg = _scores(pos, "positive"), _scores(neg, "negative")
    t = thresholds(pos, neg)
    return t, _below(pos, t), _above(neg, t)


def cm_eer(bonafide: Any, spoof: Any) -> float:
    """The package's countermeasure EER (not the ROCCH-EER).

    The mean of Pmiss and Pfa at the threshold where ``|Pmiss - Pfa|`` is least; of several
    such thresholds, the lowest. The differences are compared in floating point, as the
    evaluation package compares them: two equal in exact arithmetic can round apart, and the
    lower one is taken. Bona fide is the positive class.
    """
    _, pmiss, pfa = miss_fa(bonafide, spoof)
    i = int(np.argmin(np.abs(pmiss - pfa)))  # argmin: the first (lowest threshold) on ties
    return float((pmiss[i] + pfa[i]) / 2)


def a_dcf_of_rates(pmiss: Any, pfa: Any, pfa_spoof: Any, costs: CostModel = ASVSPOOF5) -> Any:
    """The normalized a-DCF of given rates (the one float formula, in memory and at scale)."""
    return (
        costs.c_miss * costs.p_target * pmiss
        + costs.c_fa * costs.p_nontarget * pfa
        + costs.c_fa_spoof * costs.p_spoof * pfa_spoof
    ) / costs.a_dcf_normalizer


def _a_dcf(tar, non, spf, t: np.ndarray, costs: CostModel) -> np.ndarray:
    return a_dcf_of_rates(_below(tar, t), _above(non, t), _above(spf, t), costs)


def a_dcf(
    target: Any, nontarget: Any, spoof: Any, threshold: float, costs: CostModel = ASVSPOOF5
) -> float:
    """The normalized a-DCF of a single SASV score at a threshold (accept iff ``score >= t``).

    Examples
    --------
    >>> round(a_dcf([2.0, 3.0], [0.0], [1.0], 1.0), 6)  # accepts the spoof: 10 * 0.05 / 0.595
    0.840336
    """
    tar, non = _scores(target, "target"), _scores(nontarget, "non-target")
    spf = _scores(spoof, "spoof")
    t = _threshold(threshold)
    return float(_a_dcf(tar, non, spf, t, costs)[0])


def min_a_dcf(
    target: Any, nontarget: Any, spoof: Any, costs: CostModel = ASVSPOOF5
) -> tuple[float, float]:
    """``(min a-DCF, threshold)`` of a single SASV score over three classes.

    ``a-DCF(t) = (Cmiss·Ptar·Pmiss(t) + Cfa·Pnon·Pfa,non(t) + Cfa,spoof·Pspoof·Pfa,spoof(t))``
    divided by :attr:`CostModel.a_dcf_normalizer`; the threshold is the lowest attaining it.

    Examples
    --------
    >>> min_a_dcf([2.0, 3.0], [0.0], [1.0])  # t = 2 makes no error
    (0.0, 2.0)
    """
    tar, non = _scores(target, "target"), _scores(nontarget, "non-target")
    spf = _scores(spoof, "spoof")
    t = thresholds(tar, non, spf)
    dcf = _a_dcf(tar, non, spf, t, costs)
    i = int(np.argmin(dcf))
    return float(dcf[i]), float(t[i])


def asv_rates(target: Any, nontarget: Any, spoof: Any) -> AsvRates:
    """ASV rates at the ASV system's EER threshold, as the ASVspoof 5 package takes it.

    The EER point is the first threshold where ``|Pmiss - Pfa|`` is least (target vs
    non-target, in floating point, the rule of :func:`cm_eer`). The package's threshold is the
    highest target or non-target score that its EER curve *rejects* there, and the rates are
    then counted accepting iff ``score >= threshold`` (:func:`asv_rates_at`), that score
    included: ``pmiss`` is the fraction of targets below it, ``pfa``/``pfa_spoof`` the fractions
    of non-targets/spoofs at or above it. (Where the least ``|Pmiss - Pfa|`` accepts every
    trial, the threshold is the lowest target or non-target score.) Ties cannot make the answer
    depend on the order of the scores: the curve is evaluated between distinct scores only.

    Examples
    --------
    >>> asv_rates([1.0, 3.0], [0.0, 2.0], [1.5, 1.6, -1.0])  # EER point: reject 0 and 1
    AsvRates(pmiss=0.0, pfa=0.5, pfa_spoof=0.6666666666666666, threshold=1.0)
    """
    t, pmiss, pfa = miss_fa(target, nontarget)
    i = int(np.argmin(np.abs(pmiss - pfa)))
    return asv_rates_at(target, nontarget, spoof, float(t[max(i - 1, 0)]))


def asv_rates_at(target: Any, nontarget: Any, spoof: Any, threshold: float) -> AsvRates:
    """ASV rates at a given threshold, accepting iff ``score >= threshold``.

    Examples
    --------
    >>> asv_rates_at([1.0, 2.0], [0.0, 1.0], [1.0, 3.0, -1.0, 0.5], 1.0)
    AsvRates(pmiss=0.0, pfa=0.5, pfa_spoof=0.5, threshold=1.0)
    """
    tar, non = _scores(target, "target"), _scores(nontarget, "non-target")
    spf = _scores(spoof, "spoof")
    t = _threshold(threshold)
    pmiss, pfa, pfa_spoof = _below(tar, t)[0], _above(non, t)[0], _above(spf, t)[0]
    return AsvRates(float(pmiss), float(pfa), float(pfa_spoof), float(threshold))


def t_dcf_constants(asv: AsvRates, costs: CostModel = ASVSPOOF5) -> tuple[float, float, float]:
    """``(C0, C1, C2)`` of the t-DCF (see :func:`min_t_dcf`); ScoreError where undefined: a
    negative ``C1`` or ``C2``, or a zero normalizer ``C0 + min(C1, C2)``. ``C2 = 0`` (an ASV
    that accepts no spoof) leaves it defined where ``C0 > 0``.

    Examples
    --------
    >>> t_dcf_constants(AsvRates(pmiss=0.1, pfa=0.01, pfa_spoof=0.0))[2]
    0.0
    """
    c0 = costs.p_target * costs.c_miss * asv.pmiss + costs.p_nontarget * costs.c_fa * asv.pfa
    c1 = costs.p_target * costs.c_miss - c0
    c2 = costs.p_spoof * costs.c_fa_spoof * asv.pfa_spoof
    if c1 < 0 or c2 < 0 or not c0 + min(c1, c2) > 0:
        raise ScoreError(f"t-DCF undefined for these ASV rates (C0 = {c0}, C1 = {c1}, "
                         f"C2 = {c2})")  # fmt: skip
    return c0, c1, c2


def t_dcf_of_rates(pmiss: Any, pfa: Any, c: tuple[float, float, float]) -> Any:
    """The normalized t-DCF of CM rates, given :func:`t_dcf_constants` (one float formula)."""
    c0, c1, c2 = c
    return (c0 + c1 * pmiss + c2 * pfa) / (c0 + min(c1, c2))


def min_t_dcf(
    bonafide: Any, spoof: Any, asv: AsvRates = FIXED_ASV_RATES, costs: CostModel = ASVSPOOF5
) -> tuple[float, float]:
    """``(min normalized t-DCF, CM threshold)``, the ASVspoof 5 form, on CM scores.

    ``C0 = Ptar·Cmiss·Pmiss,asv + Pnon·Cfa·Pfa,asv``, ``C1 = Ptar·Cmiss - C0``,
    ``C2 = Pspoof·Cfa,spoof·Pfa,spoof,asv``;
    ``t-DCF(s) = (C0 + C1·Pmiss,cm(s) + C2·Pfa,cm(s)) / (C0 + min(C1, C2))``, minimized over the
    CM threshold ``s``. Bona fide (target and non-target trials) is the CM's positive class.
    """
    c = t_dcf_constants(asv, costs)
    t, pmiss, pfa = miss_fa(bonafide, spoof)
    tdcf = t_dcf_of_rates(pmiss, pfa, c)
    i = int(np.argmin(tdcf))
    return float(tdcf[i]), float(t[i])


def _tandem_rates(a, b, c, m, f):
    """``(Pmiss,tdm, Pfa,tdm)`` (see :func:`t_eer`) from the ASV rates ``a, b, c`` (miss,
    false alarms on non-targets and on spoofs) and the CM rates ``m, f`` (miss, false alarm)."""
    return m + (1.0 - m) * a, 0.5 * (1.0 - m) * b + 0.5 * f * c


def _tandem_diff(a, b, c, m, f):
    """``Pmiss,tdm - Pfa,tdm`` (see :func:`t_eer`): nondecreasing in the CM threshold."""
    pmiss, pfa = _tandem_rates(a, b, c, m, f)
    return pmiss - pfa


def t_eer_point(a, b, c, m, f, asv_threshold, cm_threshold, margin) -> dict[str, float]:
    """:func:`t_eer`'s answer at the chosen thresholds: the t-EER, both thresholds, the
    criterion's ``margin`` and the tandem rates ``pmiss_tdm``, ``pfa_tdm`` there (which the
    definition does not make equal: a chance-level system's t-EER is 1, its rates 0 and 1)."""
    pmiss, pfa = _tandem_rates(a, b, c, m, f)
    return {"t_eer": float(c * f), "asv_threshold": float(asv_threshold),
            "cm_threshold": float(cm_threshold), "margin": float(margin),
            "pmiss_tdm": float(pmiss), "pfa_tdm": float(pfa)}  # fmt: skip


#: :func:`t_eer`'s answer where no ASV threshold qualifies.
NAN_RESULT = dict.fromkeys(
    ("t_eer", "asv_threshold", "cm_threshold", "margin", "pmiss_tdm", "pfa_tdm"), np.nan
)


def _first_at_least(a, b, c, pmiss_cm, pfa_cm, value: float) -> np.ndarray:
    """For each ASV threshold, the first CM index whose tandem difference is ``>= value``
    (bisection, all ASV thresholds at once; ``pmiss_cm.size`` where none is)."""
    lo = np.zeros(a.size, dtype=np.int64)
    hi = np.full(a.size, pmiss_cm.size, dtype=np.int64)
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        j = np.minimum(mid, pmiss_cm.size - 1)
        ok = _tandem_diff(a, b, c, pmiss_cm[j], pfa_cm[j]) >= value
        active = lo < hi
        hi = np.where(active & ok, mid, hi)
        lo = np.where(active & ~ok, mid + 1, lo)
    return lo


def t_eer(
    cm_target: Any,
    cm_nontarget: Any,
    cm_spoof: Any,
    asv_target: Any,
    asv_nontarget: Any,
    asv_spoof: Any,
) -> dict[str, float]:
    """The concurrent t-EER (ρ = 0.5) of a CM and an ASV system, over every threshold pair.

    For each ASV threshold ``τ`` with ``Pmiss,asv < (Pfa,non + Pfa,spoof)/2``, take the CM
    threshold minimizing ``|Pmiss,tdm - Pfa,tdm|`` (the lowest on ties), where
    ``Pmiss,tdm = Pmiss,cm + (1 - Pmiss,cm)·Pmiss,asv`` and
    ``Pfa,tdm = ½(1 - Pmiss,cm)·Pfa,non + ½·Pfa,cm·Pfa,spoof``; then choose the ``τ``
    minimizing ``|Pfa,non/Pfa,spoof - Pfa,cm/(1 - Pmiss,cm)|`` (the lowest on ties; a
    division by zero counts as infinitely far); t-EER is ``Pfa,spoof·Pfa,cm`` there. Both
    minimizations compare floats, as :func:`cm_eer` and the evaluation package do: two CM
    thresholds (or two ``τ``) tied in exact arithmetic can round apart, and the lower float
    wins, which on a handful of trials can change the t-EER (two targets, one non-target and
    three spoofs: 1/3 where exact ties would give 2/3). The CM
    positive class is bona fide (target and non-target trials), its negative class spoofs.

    Returns
    -------
    dict
        ``t_eer``, ``asv_threshold``, ``cm_threshold``, the criterion ``margin`` and the
        tandem miss and false-alarm rates ``pmiss_tdm``, ``pfa_tdm`` there (the rule does not
        make them equal: see :func:`t_eer_point`); all NaN when no ASV threshold qualifies.
    """
    tar, non, spf = (_scores(x, w) for x, w in
                     ((asv_target, "ASV target"), (asv_nontarget, "ASV non-target"),
                      (asv_spoof, "ASV spoof")))  # fmt: skip
    bona = np.concatenate([_scores(cm_target, "CM target"), _scores(cm_nontarget, "CM nontarget")])
    t_cm, pmiss_cm, pfa_cm = miss_fa(bona, cm_spoof)
    t_asv = thresholds(tar, non, spf)
    a, b, c = _below(tar, t_asv), _above(non, t_asv), _above(spf, t_asv)
    keep = a < (b + c) / 2
    t_asv, a, b, c = t_asv[keep], a[keep], b[keep], c[keep]
    if not t_asv.size:
        return dict(NAN_RESULT)
    last = pmiss_cm.size - 1
    j0 = _first_at_least(a, b, c, pmiss_cm, pfa_cm, 0.0)  # first with difference >= 0
    above = np.minimum(j0, last)
    d_above = np.abs(_tandem_diff(a, b, c, pmiss_cm[above], pfa_cm[above]))
    below = np.maximum(j0 - 1, 0)
    v_below = _tandem_diff(a, b, c, pmiss_cm[below], pfa_cm[below])
    # where Pfa,spoof > 0 (elsewhere the criterion below is infinite) the difference is
    # strictly increasing in the CM threshold: the nearest to zero is one of these two
    use_below = (j0 > 0) & ((j0 > last) | (np.abs(v_below) <= d_above))
    j = np.where(use_below, below, above)
    m, f = pmiss_cm[j], pfa_cm[j]
    with np.errstate(divide="ignore", invalid="ignore"):
        crit = np.abs(b / c - f / (1.0 - m))
    crit = np.where(np.isnan(crit), np.inf, crit)
    i = int(np.argmin(crit))
    if not np.isfinite(crit[i]):
        return dict(NAN_RESULT)
    return t_eer_point(a[i], b[i], c[i], m[i], f[i], t_asv[i], t_cm[j[i]], crit[i])
