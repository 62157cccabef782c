"""The value types of the command line's options: each turns one argument into a value or
raises ``argparse.ArgumentTypeError`` with a one-line reason, which argparse shows as
``argument --prior: ...``.

Examples
--------
>>> prior("0.01")
0.01
>>> prior("1.5")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: effective prior 1.5 is not strictly between 0 and 1
>>> ece_plo("-1:1:3")
[-1.0, 0.0, 1.0]
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def number(text: str) -> float:
    """``text`` as a float; an argparse error ``not a number`` else."""
    try:
        return float(text)
    except ValueError:
        several = "," in text and all(_is_float(t) for t in text.split(","))
        hint = " (one value per flag: repeat the flag for several)" if several else ""
        raise argparse.ArgumentTypeError(f"not a number: {text!r}{hint}") from None


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _integer(text: str, low: int, must: str) -> int:
    """``text`` as an integer of at least ``low``; an argparse error ``must ...: text`` else."""
    try:
        value = int(text)
    except ValueError:
        value = low - 1
    if value < low:
        raise argparse.ArgumentTypeError(f"must be {must}: {text}")
    return value


def prior(text: str) -> float:
    value = number(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"effective prior {text} is not strictly between 0 and 1")
    if value < sys.float_info.min:
        raise argparse.ArgumentTypeError(f"effective prior {text} is below float64's smallest "
                                         f"normal number ({sys.float_info.min:.3g})")  # fmt: skip
    return value


def penalty(text: str) -> float:
    value = number(text)
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"the L2 penalty {text} is not a finite number >= 0")
    return value


def axis_top(text: str) -> float:
    value = number(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"the top of the axis {text} is not a finite number > 0")
    return value


def rate(text: str) -> float:
    value = number(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"target rate {text} is not in (0, 1]")
    return value


def ece_plo(text: str) -> list[float]:
    """One ``--ece-plo`` value: a prior log-odds, or ``LO:HI:N`` (N evenly spaced, both ends)."""
    import numpy as np

    parts = text.split(":")
    try:
        if len(parts) == 1:
            values = [float(text)]
        elif len(parts) == 3:
            lo, hi, n = float(parts[0]), float(parts[1]), int(parts[2])
            if n < 2 or not lo < hi:
                raise argparse.ArgumentTypeError(f"{text}: LO:HI:N needs LO < HI and N >= 2 points")
            values = np.linspace(lo, hi, n).tolist()
        else:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a prior log-odds or LO:HI:N range: {text!r}"
        ) from None
    if not all(np.isfinite(values)):
        raise argparse.ArgumentTypeError(f"prior log-odds must be finite: {text!r}")
    return values


def operating_point(text: str) -> Any:
    from bosaris_dask.costs import OperatingPoint
    from bosaris_dask.errors import OptionError

    try:
        return OperatingPoint.parse(text)
    except OptionError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def seed(text: str) -> int:
    return _integer(text, 0, "an integer >= 0")


def positive(text: str) -> int:
    return _integer(text, 1, "a positive integer")


def resamples(text: str) -> int:
    """A bootstrap's resample count: the library's range (its check says the same)."""
    value = _integer(text, 2, "an integer from 2 to 1048576")
    if value > 1 << 20:
        raise argparse.ArgumentTypeError(f"must be an integer from 2 to 1048576: {text}")
    return value
