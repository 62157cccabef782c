"""Ids that look alike but differ, so their trials miss each other when matched by id: ``'café'``
written as one code point (NFC, as most editors save it) in one file and as ``e`` plus a
combining accent (NFD, as macOS file names come) in the other; bytes ``b'spk1'`` (as h5py
reads strings) against ``'spk1'``; an id with a space around it. (An integer id ``0`` of a
Dataset built in Python is the string ``'0'``: ids are matched as text.)
:func:`warn_id_twins` says so where :func:`~bosaris_dask.trials.align` meets them.
"""

from __future__ import annotations

import unicodedata
import warnings
from collections.abc import Sequence
from typing import Any

import pandas as pd

__all__ = ["IdWarning", "id_twins", "warn_id_twins"]


class IdWarning(UserWarning):
    """Ids of two trial objects that look alike but differ."""


def _plain(i: Any) -> bool:
    """Whether an id is its own canonical form: an ASCII string without edge whitespace."""
    return isinstance(i, str) and i.isascii() and i == i.strip()


def _text(i: Any) -> str:
    return i.decode("utf-8", "replace") if isinstance(i, bytes) else str(i)  # (h5py's ids)


def _canonical(i: Any) -> str:
    return unicodedata.normalize("NFC", _text(i)).strip()


def id_twins(wanted: Sequence[Any], given: Sequence[Any]) -> list[tuple[Any, Any]]:
    """Pairs ``(w, g)`` of an id of ``wanted`` missing from ``given`` and an id of ``given``
    with the same text once both are strings, NFC-normalized and stripped of edge whitespace.
    Ids are matched as text, as :func:`~bosaris_dask.trials.reindex_ids` matches them: ``0``
    and ``'0'`` are one id, not twins.

    Examples
    --------
    >>> twins = id_twins(["caf\\u00e9", "tea", "0"], ["cafe\\u0301", "tea", 0])
    >>> [(ascii(w), ascii(g)) for w, g in twins]
    [("'caf\\\\xe9'", "'cafe\\\\u0301'")]
    >>> id_twins(["a", "b"], ["a"])  # missing, but no twin
    []
    """
    given_index = given if isinstance(given, pd.Index) else pd.Index(given)
    wanted_index = wanted if isinstance(wanted, pd.Index) else pd.Index(wanted)
    missing = wanted_index.difference(given_index, sort=False)
    if missing.empty:
        return []
    if wanted_index.inferred_type != "string" or given_index.inferred_type != "string":
        as_text = {str(g) for g in given}  # ids are matched as text (``reindex_ids``): 0 is '0'
        missing = pd.Index([w for w in missing if str(w) not in as_text], dtype=object)
        if missing.empty:
            return []
    odd_given = {}
    if not _all_plain(given_index):  # (a loop over every id only where some are not plain)
        for g in given:
            if not _plain(g):
                odd_given.setdefault(_canonical(g), g)
    twins = []
    for w in missing:
        if _plain(w):
            if w in odd_given:
                twins.append((w, odd_given[w]))
            continue
        c = _canonical(w)
        if c in odd_given:
            twins.append((w, odd_given[c]))
        elif c in given_index and _plain(c):
            twins.append((w, c))
    return twins


def _all_plain(ids: pd.Index) -> bool:
    """Whether every id is an ASCII string without edge whitespace, found by string operations
    on all of them at once (a Python loop took a second per million ids)."""
    if len(ids) == 0:
        return True
    if ids.inferred_type != "string":
        return False
    try:  # (pandas calls ids with a None or NaN among strings "string" too)
        joined = "\x00" + "\x00".join(ids.to_numpy(dtype=object).tolist()) + "\x00"
    except TypeError:  # an id that is no string
        return False
    if not joined.isascii():
        return False
    spaced = joined.translate(_ONE_SPACE)
    return " \x00" not in spaced and "\x00 " not in spaced


#: The ASCII characters ``str.strip`` removes, as one space.
_ONE_SPACE = str.maketrans({chr(i): " " for i in range(128) if chr(i).isspace()})


def _how(w: Any, g: Any) -> str:
    if type(w) is not type(g) and not (isinstance(w, str) and isinstance(g, str)):
        return f"as text ({type(w).__name__} and {type(g).__name__} ids)"
    if _text(w).strip() != _text(w) or _text(g).strip() != _text(g):
        return "without the whitespace around them"
    return "after Unicode normalization"


def warn_id_twins(wanted: Sequence[Any], given: Sequence[Any], side: str,
                  kinds: tuple[str, str]) -> None:  # fmt: skip
    """An :class:`IdWarning` when ids of ``wanted`` (the ``side`` ids of a ``kinds[0]``) are
    missing from ``given`` (those of a ``kinds[1]``) only for looking alike but differing."""
    twins = id_twins(wanted, given)
    if twins:
        w, g = (x.item() if hasattr(x, "item") else x for x in twins[0])  # (numpy scalars)
        warnings.warn(
            f"{len(twins):,} {side} id(s) of the {kinds[0]} match an id of the {kinds[1]} only "
            f"{_how(w, g)}, e.g. {ascii(w)} and {ascii(g)}, so their trials do not match: "
            "give both objects the same ids",
            IdWarning,
            stacklevel=3,
        )
