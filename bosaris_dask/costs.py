"""Operating points as users state them: a target prior and the two error costs.

An application's operating point is ``(P_target, C_miss, C_fa)``. The Bayes decision and the
normalized DCF depend on it only through the *effective prior*

    ``p = P_target·C_miss / (P_target·C_miss + (1 − P_target)·C_fa)``,

so ``DCF(t) / min(P_target·C_miss, (1 − P_target)·C_fa)`` equals the unit-cost normalized DCF at
``p`` (Brümmer & de Villiers 2011, section 2.3). The Bayes threshold for scores that are
natural-log likelihood ratios is

    ``act_threshold = −logit(p) = ln(C_fa / C_miss) − logit(P_target)
    = ln((1 − P_target)·C_fa / (P_target·C_miss))``

(accept iff ``score >= act_threshold``).

(This module was ``bosaris_dask.operating_points``, a name that now means only the function
:func:`bosaris_dask.operating_points`; ``from bosaris_dask.operating_points import ...`` still
works for one release, with a ``FutureWarning``.)

Examples
--------
>>> op = OperatingPoint.parse("0.01:10:1")      # SRE'08-style: Ptar 0.01, Cmiss 10, Cfa 1
>>> round(op.effective_prior, 6), round(op.act_threshold, 6)
(0.091743, 2.292535)
>>> OperatingPoint.from_prior(0.05)
OperatingPoint(p_target=0.05, c_miss=1.0, c_fa=1.0)
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from fractions import Fraction

from bosaris_dask._deprecation import renamed_module
from bosaris_dask.errors import OptionError

__all__ = ["OperatingPoint", "merge_operating_points"]


@dataclass(frozen=True)
class OperatingPoint:
    """A target prior and the costs of a miss and of a false alarm.

    Raises
    ------
    OptionError
        If ``p_target`` is not strictly between 0 and 1 or a cost is not positive and finite.
    """

    p_target: float
    c_miss: float = 1.0
    c_fa: float = 1.0
    #: The non-target prior as stated (:meth:`from_nontarget_prior`; ``p_target`` is then
    #: ``1 - p_nontarget``, rounded); ``None``: ``p_target`` is the stated one.
    p_nontarget: float | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        values = []
        for name in ("p_target", "c_miss", "c_fa"):
            raw = getattr(self, name)
            try:
                value = float(raw)
            except (TypeError, ValueError):
                raise OptionError(f"{name} must be a number, got {raw!r}") from None
            values.append(value)
            object.__setattr__(self, name, value)
        p, c_miss, c_fa = values
        if not 0 < p < 1:
            raise OptionError(f"target prior {p:g} is not strictly between 0 and 1")
        for name, cost in (("c_miss", c_miss), ("c_fa", c_fa)):
            if not 0 < cost < math.inf:
                raise OptionError(f"{name} must be a positive finite cost, got {cost:g}")
        if not 0 < self.effective_prior < 1:
            raise OptionError(
                f"operating point {p:g}:{c_miss:g}:{c_fa:g} has an effective prior of 0 or 1 "
                "in floating point"
            )
        tiny = sys.float_info.min  # below it, p and the DCFs lose digits (NaN at 1e-320)
        if min(self.effective_prior, 1 - self.effective_prior, p, 1 - p) < tiny:
            raise OptionError(
                f"operating point {p:g}:{c_miss:g}:{c_fa:g} has a prior below {tiny:.3g}, "
                "float64's smallest normal number: its costs cannot be computed"
            )

    @classmethod
    def parse(cls, text: str) -> OperatingPoint:
        """``"Ptar:Cmiss:Cfa"`` (e.g. ``"0.05:1:1"``), as ``--operating-point`` takes it."""
        parts = text.split(":")
        if len(parts) != 3:
            raise OptionError(
                f"operating point {text!r} is not Ptar:Cmiss:Cfa (e.g. 0.01:10:1 or 0.05:1:1)"
            )
        try:
            numbers = [float(x) for x in parts]
        except ValueError:
            raise OptionError(
                f"operating point {text!r}: not three numbers Ptar:Cmiss:Cfa"
            ) from None
        return cls(*numbers)

    @classmethod
    def from_nontarget_prior(cls, p_nontarget: float, c_miss: float = 1.0,
                             c_fa: float = 1.0) -> OperatingPoint:  # fmt: skip
        """The operating point of a stated non-target prior (e.g. ASVspoof 5's spoof prior
        0.05), ``p_target = 1 − p_nontarget``. Its :attr:`plo` comes from ``p_nontarget``
        itself: the float ``1 − 0.05`` is not 19/20 (its log-odds fall 9e-16 short of ``ln 19``,
        8 units in the last place of the threshold ``−ln 1.9``), so a score at the Bayes
        threshold the costs state (``−ln 1.9`` for ASVspoof 5's countermeasure) is accepted.

        >>> op = OperatingPoint.from_nontarget_prior(0.05, 1.0, 10.0)
        >>> op.act_threshold == -math.log(1.9), op.p_target
        (True, 0.95)
        """
        q = float(p_nontarget)
        return cls(1.0 - q, c_miss, c_fa, p_nontarget=q)

    @classmethod
    def from_prior(cls, prior: float) -> OperatingPoint:
        """An effective prior as an operating point with unit costs."""
        return cls(prior, 1.0, 1.0)

    @property
    def effective_prior(self) -> float:
        """``P_target·C_miss / (P_target·C_miss + (1 − P_target)·C_fa)`` (``P_target`` itself
        when the costs are equal)."""
        if self.c_miss == self.c_fa:
            return self.p_target
        a, b = self.p_target * self.c_miss, (1 - self.p_target) * self.c_fa
        return a / (a + b)

    @property
    def plo(self) -> float:
        """The prior log-odds of the effective prior, ``ln(P_target·C_miss / ((1 − P_target)·
        C_fa))`` of the numbers as stated, rounded down to a float: ``−plo`` is then the least
        float at or above the exact Bayes threshold, so a float score is accepted (``score >=
        −plo``) exactly when it is at or above the exact threshold. (``logit`` of the effective
        prior rounds to nearest, half the time below the threshold, and loses digits to
        ``1 − p`` where the costs are far apart: at ``0.5:1e6:1``, 28,000 units in the last
        place.) Each number counts as written, its float's shortest decimal: ``0.1:9:1`` is
        even odds, as ``0.5`` is (the float 0.1 is a little above 1/10: its binary value would
        put the threshold 6e-17 above 0, and the two points would be two results).

        >>> OperatingPoint(0.5, 1e6, 1).plo == math.log(1e6), OperatingPoint(0.5).plo
        (True, 0.0)
        >>> OperatingPoint(0.1, 9, 1).plo
        0.0
        """
        if self.p_nontarget is None:
            p = _as_written(self.p_target)
            q = 1 - p
        else:
            q = _as_written(self.p_nontarget)
            p = 1 - q
        return _log_rounded_down(p * _as_written(self.c_miss) / (q * _as_written(self.c_fa)))

    @property
    def act_threshold(self) -> float:
        """The Bayes threshold ``−plo = ln((1 − P_target)·C_fa / (P_target·C_miss))`` for
        natural-log LLR scores (accept iff ``score >= act_threshold``), as the evaluation
        applies it."""
        return -self.plo


def _as_written(x: float) -> Fraction:
    """A float as the decimal written for it (its shortest repr): ``0.1`` is 1/10.

    >>> _as_written(0.1), Fraction(0.1) == Fraction(1, 10)
    (Fraction(1, 10), False)
    """
    return Fraction(repr(float(x)))


def _log_rounded_down(r: Fraction) -> float:
    """The largest float at or below ``ln r``, for a positive rational ``r``: a float within a
    unit in the last place, then moved to the right side of ``ln r`` computed to 60 digits.

    >>> _log_rounded_down(Fraction(19, 10)), math.log(1.9)  # ln 1.9 = 0.6418538861723947760
    (0.6418538861723947, 0.6418538861723947)
    >>> _log_rounded_down(Fraction(3)), math.log(3)  # ln 3 = 1.0986122886681096914
    (1.0986122886681096, 1.0986122886681098)
    """
    if r == 1:
        return 0.0
    with localcontext() as ctx:
        ctx.prec = 60
        exact = (Decimal(r.numerator) / Decimal(r.denominator)).ln()
    x = float(exact)
    while Decimal(x) > exact:
        x = math.nextafter(x, -math.inf)
    while Decimal(math.nextafter(x, math.inf)) <= exact:
        x = math.nextafter(x, math.inf)
    return x


def merge_operating_points(
    priors: Iterable[float], points: Iterable[OperatingPoint] = ()
) -> list[OperatingPoint]:
    """Effective priors (unit costs) followed by stated operating points, one per effective prior.

    The results are indexed by prior log-odds (:attr:`OperatingPoint.plo`), so points that share
    it share one result: a repeat is dropped, a stated point replaces a bare prior of its
    effective prior (its DCF in cost units is then reported), and two stated points with other
    costs are refused (their normalized DCFs are one number, their costs in cost units are not).

    Raises
    ------
    OptionError
        Two stated operating points of one effective prior and different costs.

    Examples
    --------
    >>> [op.p_target for op in merge_operating_points([0.5, 0.01], [OperatingPoint(0.01, 1, 1)])]
    [0.5, 0.01]
    >>> merge_operating_points([0.5, 0.1], [OperatingPoint(0.5, 2, 2)])[0]
    OperatingPoint(p_target=0.5, c_miss=2.0, c_fa=2.0)
    >>> merge_operating_points([0.01], [OperatingPoint(0.01, 1, 1), OperatingPoint(0.01, 2, 2)])
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.OptionError: operating points 0.01:1:1 and 0.01:2:2 have one effective \
prior (0.01): an evaluation reports one result per effective prior (their normalized DCFs are \
equal, their DCFs in cost units are not); ask for one
    """
    out: list[OperatingPoint] = []
    seen: dict[float, tuple[int, bool]] = {}  # plo -> (index in out, stated)
    bare = [(OperatingPoint.from_prior(p), False) for p in priors]
    for op, stated in bare + [(op, True) for op in points]:
        if op.plo not in seen:
            seen[op.plo] = (len(out), stated)
            out.append(op)
            continue
        k, kept_stated = seen[op.plo]
        kept = out[k]
        if (kept.p_target, kept.c_miss, kept.c_fa) == (op.p_target, op.c_miss, op.c_fa):
            seen[op.plo] = (k, kept_stated or stated)  # a stated point equal to a bare prior
            continue
        if stated and not kept_stated:
            out[k], seen[op.plo] = op, (k, True)
            continue
        if not stated:  # two priors a rounding apart (0.1 and the float after it): a repeat
            continue
        first, second = _spec(kept), _spec(op)
        if first == second:  # apart in the last digits only
            first, second = _spec(kept, repr), _spec(op, repr)
        raise OptionError(
            f"operating points {first} and {second} have one effective prior "
            f"({op.effective_prior:.6g}): an evaluation reports one result per effective prior "
            "(their normalized DCFs are equal, their DCFs in cost units are not); ask for one"
        )
    return out


def _spec(op: OperatingPoint, shown: Callable[[float], str] = "{:g}".format) -> str:
    return ":".join(shown(float(x)) for x in (op.p_target, op.c_miss, op.c_fa))


# the old module name, which hid the function bosaris_dask.operating_points once imported
renamed_module("bosaris_dask.operating_points", sys.modules[__name__])
