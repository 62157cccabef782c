"""Numeric arguments checked in one place: each domain rule and its one-line message.

Priors, target rates, prior log-odds grids: every option that takes a list of numbers goes
through :func:`float_vector`, so the same mistake reads the same wherever it is made.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from bosaris_dask.errors import OptionError

__all__ = ["RULES", "float_vector", "one_or_many"]

#: rule name -> (element-wise test, what a failing value "is")
RULES: dict[str, tuple[Callable[[np.ndarray], np.ndarray], str]] = {
    "probability": (lambda v: (v > 0) & (v < 1), "is not strictly between 0 and 1"),
    "rate": (lambda v: (v > 0) & (v <= 1), "is not in (0, 1]"),
    "finite": (np.isfinite, "is not finite"),
}


def float_vector(values: Any, what: str, rule: str, *, empty_ok: bool = True) -> np.ndarray:
    """``values`` as a 1-D float64 array whose every element satisfies ``RULES[rule]``.

    Parameters
    ----------
    values
        A number or a 1-D sequence of numbers.
    what
        The name of one element, for the message (``"effective prior"``, ``"target FMR"``).
    rule
        A key of :data:`RULES`.
    empty_ok
        Whether an empty list is allowed.

    Raises
    ------
    OptionError
        Naming the first offending value.

    Examples
    --------
    >>> float_vector([0.01, 0.5], "effective prior", "probability").tolist()
    [0.01, 0.5]
    >>> float_vector(1.0, "effective prior", "probability")
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.OptionError: effective prior 1.0 is not strictly between 0 and 1
    """
    whats = what if what.endswith("s") else f"{what}s"  # (log-odds is plural already)
    try:
        v = np.atleast_1d(np.asarray(values, dtype=np.float64))
    except (TypeError, ValueError):
        raise OptionError(f"{whats} must be numbers, got {values!r}") from None
    if v.ndim != 1:
        raise OptionError(f"{whats} must be a number or a 1-D list, got shape {v.shape}")
    if not empty_ok and not len(v):
        raise OptionError(f"at least one {what} is needed")
    ok, says = RULES[rule]
    bad = ~ok(v)
    if bad.any():
        raise OptionError(f"{what} {v[bad][0]} {says}")
    return v


def one_or_many(value: Any) -> list[Any]:
    """A list of what an argument takes one or several of: a string or path is one (``by=
    "model.gender"`` is one spec, ``conditions="models.tsv"`` one table, not a sequence of
    characters), as is any object that is not iterable (a condition table) and a pandas
    DataFrame (a condition table, not a sequence of column names).

    Examples
    --------
    >>> one_or_many("model.g"), one_or_many(["model.g", "same.l"]), one_or_many(None)
    (['model.g'], ['model.g', 'same.l'], [])
    """
    if value is None:
        return []
    if isinstance(value, str | os.PathLike) or not isinstance(value, Iterable):
        return [value]
    if hasattr(value, "columns") and hasattr(value, "index"):  # a DataFrame: one table
        return [value]
    return list(value)
