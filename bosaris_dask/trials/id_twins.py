"""Ids that differ only in their Unicode normalization: ``'café'`` written as one code point
(NFC, as most editors save it) in one file and as ``e`` plus a combining accent (NFD, as macOS
file names come) in the other look alike, yet miss each other when trials are matched by id.
:func:`warn_normalization_twins` says so where :func:`~bosaris_dask.trials.align` meets them.
"""

from __future__ import annotations

import unicodedata
import warnings
from collections.abc import Sequence
from typing import Any

import pandas as pd

__all__ = ["IdWarning", "normalization_twins", "warn_normalization_twins"]


class IdWarning(UserWarning):
    """Ids of two trial objects that look alike but differ (their Unicode normalization)."""


def normalization_twins(wanted: Sequence[Any], given: Sequence[Any]) -> list[tuple[str, str]]:
    """Pairs ``(w, g)`` of an id of ``wanted`` missing from ``given`` and an id of ``given``
    that is the same text in another Unicode normalization (equal once both are NFC).

    Examples
    --------
    >>> twins = normalization_twins(["caf\\u00e9", "tea"], ["cafe\\u0301", "tea"])
    >>> [(ascii(w), ascii(g)) for w, g in twins]
    [("'caf\\\\xe9'", "'cafe\\\\u0301'")]
    >>> normalization_twins(["a", "b"], ["a"])  # missing, but no twin
    []
    """
    missing = pd.Index(wanted).difference(pd.Index(given), sort=False)
    odd = [i for i in missing if isinstance(i, str) and not i.isascii()]
    if not odd:  # (ASCII ids have one normalization: the common case stops here)
        return []
    forms = {}
    for i in given:
        if isinstance(i, str) and not i.isascii():
            forms.setdefault(unicodedata.normalize("NFC", i), i)
    return [(i, forms[n]) for i in odd if (n := unicodedata.normalize("NFC", i)) in forms]


def warn_normalization_twins(
    wanted: Sequence[Any], given: Sequence[Any], side: str, kinds: tuple[str, str]
) -> None:
    """An :class:`IdWarning` when ids of ``wanted`` (the ``side`` ids of a ``kinds[0]``) are
    missing from ``given`` (those of a ``kinds[1]``) only for their Unicode normalization."""
    twins = normalization_twins(wanted, given)
    if twins:
        w, g = twins[0]
        warnings.warn(
            f"{len(twins):,} {side} id(s) of the {kinds[0]} match an id of the {kinds[1]} only "
            f"after Unicode normalization, e.g. {ascii(w)} and {ascii(g)}, so their trials do "
            "not match: write both files' ids in one normalization (e.g. NFC)",
            IdWarning,
            stacklevel=3,
        )
