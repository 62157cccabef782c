"""A score file's own labels against the key's.

A score file may carry a label column (wespeaker's ``enrol test score label``, ASVspoof's
tables): the first such file is the key when no ``--key`` is given, and every other file's
labels are not used. Where they contradict the key on trials both hold (a score file of another
list's version, a key whose label words were read the other way round), the evaluation is of the
key's labels, and a :class:`LabelWarning` says so, with the count and the first few such trials.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.trials import make_key
>>> key = make_key(["a", "b"], ["x"], [[1], [-1]])
>>> theirs = make_key(["b", "a"], ["x"], [[1], [1]])
>>> disagreement(key, theirs)
(1, 2, '(b, x)')
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import xarray as xr

from bosaris_dask.io.text.packed import TrialList, joined
from bosaris_dask.progress import compute
from bosaris_dask.trials.id_twins import IdWarning
from bosaris_dask.trials.key_codes import locate

__all__ = ["LabelWarning", "disagreement", "warn_disagreeing_labels"]


class LabelWarning(UserWarning):
    """A score file's own labels contradict the key's on some trials (the key's are used)."""


def disagreement(key: Any, theirs: Any) -> tuple[int, int, str]:
    """How many trials both ``key`` and ``theirs`` label carry opposite labels, how many both
    label, and the first few of the former (their ids, and their line in ``theirs``'s file
    where it is a list). ``key``: a :class:`~bosaris_dask.io.text.packed.TrialList` of a key or a
    Key; ``theirs``: a list of a key or a Key (a list where ``key`` is one)."""
    if isinstance(theirs, TrialList):
        if isinstance(key, TrialList):
            with warnings.catch_warnings():  # (look-alike ids: said where the scores are packed)
                warnings.simplefilter("ignore", IdWarning)
                key_labels, shared = joined(theirs, key)  # the key's label of each of their lines
        else:
            m, s = theirs.positions_in(key.model.values, key.segment.values)
            shared = (m >= 0) & (s >= 0)
            key_labels = np.zeros(len(m), dtype=np.float64)
            if shared.any():
                cells = key.trial_mask.isel(model=xr.DataArray(m[shared]),
                                            segment=xr.DataArray(s[shared]))  # fmt: skip
                key_labels[shared] = compute(cells.data)
        shared &= key_labels != 0
        bad = np.flatnonzero(shared & (np.sign(key_labels) != np.sign(theirs.values)))
        where = ", ".join(f"({theirs.models[theirs.model_codes[k]]}, "
                          f"{theirs.segments[theirs.segment_codes[k]]}) at line "
                          f"{theirs.line_of(int(k))}" for k in bad[:3])  # fmt: skip
        return len(bad), int(shared.sum()), where
    a, b = xr.align(key.trial_mask, theirs.trial_mask, join="inner")
    if not a.size:
        return 0, 0, ""
    bad = a.data.astype(np.int8) * b.data.astype(np.int8) < 0
    both = (a.data != 0) & (b.data != 0)
    n_bad, n_shared = compute((bad.sum(), both.sum()))
    where = locate(bad, a.model.values, a.segment.values) if n_bad else ""
    return int(n_bad), int(n_shared), where


def warn_disagreeing_labels(key: Any, theirs: Any, path: str, key_path: str) -> None:
    """A :class:`LabelWarning` where the labels of the score file ``path`` (``theirs``)
    contradict those of the key read from ``key_path``."""
    n_bad, n_shared, where = disagreement(key, theirs)
    if n_bad:
        warnings.warn(
            f"{path}: its labels contradict the key's ({key_path}) on {n_bad:,} of the "
            f"{n_shared:,} trials both label, e.g. {where}; the key's are used",
            LabelWarning,
            stacklevel=2,
        )
