"""The trial codes of a key (+1 target, -1 non-target, 0 no trial), checked as they are read,
and the ids of offending trials for error messages.

A key read lazily from a store is checked block by block inside its read
(:func:`checked_codes`), so a bad value costs no pass of its own and its error names the trial.
"""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np
from dask.base import tokenize

from bosaris_dask.errors import TrialError
from bosaris_dask.progress import compute

__all__ = ["check_signs", "checked_codes", "locate", "raise_conflicts"]


def check_signs(mask: Any, models: np.ndarray, segments: np.ndarray) -> Any:
    """A key mask, checked to hold only -1, 0 and +1.

    In memory every value is checked now. A dask array (e.g. read from a store) is returned with
    a check of each block fused into its read (:func:`checked_codes`): no extra pass.
    """
    arr = mask if isinstance(mask, da.Array) else np.asarray(mask)
    if arr.dtype.kind == "b":  # a targets mask would lose every non-target
        raise TrialError("a key's trial_mask holds -1, 0 and +1, got True/False: for boolean "
                         "target and non-target masks, use key_from_masks(models, segments, "
                         "targets, nontargets)")  # fmt: skip
    if arr.dtype.kind not in "iuf":
        raise TrialError(f"a key's trial_mask must hold -1, 0 and +1, got dtype {arr.dtype}")
    if isinstance(arr, da.Array):
        return checked_codes(arr, models, segments)
    _check_code_block(arr, models, segments)
    return mask


def _bad_codes(block: np.ndarray) -> np.ndarray | None:
    """Where ``block`` holds something else than -1, 0, +1 (None when nothing can be bad)."""
    if block.dtype.kind == "b":
        return None
    if block.dtype == np.int8:  # -1, 0, 1 -> 0, 1, 2 as bytes; everything else is above 2
        return (block + np.int8(1)).view(np.uint8) > 2
    if block.dtype.kind == "u":
        return block > 1
    return (block != 1) & (block != 0) & (block != -1)


def _check_code_block(
    block: np.ndarray, models: np.ndarray, segments: np.ndarray, where: str = ""
) -> np.ndarray:
    """``block`` unchanged, or a TrialError naming its first cell outside {-1, 0, +1}."""
    if (
        block.size
        and block.dtype.kind in "iu"
        and (np.minimum.reduce(block, axis=None) >= -1 and np.maximum.reduce(block, axis=None) <= 1)
    ):
        return block  # two reductions, no temporaries: the common case
    bad = _bad_codes(block)
    if bad is not None and bad.any():
        i, j = (int(x[0]) for x in np.nonzero(bad))
        others = int(bad.sum()) - 1
        raise TrialError(
            f"{where}a key's trial_mask holds only -1 (non-target), 0 (no trial) and +1 "
            f"(target); found {block[i, j].item()!r} at ({models[i]}, {segments[j]})"
            + (f" and {others} more bad values" if others else "")
        )
    return block


def checked_codes(mask: da.Array, models: Any, segments: Any, *, where: str = "") -> da.Array:
    """``mask`` with a check fused into each block's read: codes outside {-1, 0, +1} raise.

    The error (a :class:`TrialError`) names the first bad trial of the block by its ids,
    prefixed by ``where`` (e.g. the store). Each block receives only its own slice of the ids.
    Checking an already checked array returns it unchanged.

    Examples
    --------
    >>> import dask.array as da
    >>> bad = da.from_array(np.array([[1, 0], [7, -1]], dtype=np.int8), chunks=1)
    >>> checked = checked_codes(bad, ["m1", "m2"], ["s1", "s2"])
    >>> checked[0].compute().tolist()
    [1, 0]
    >>> try:
    ...     checked.compute()
    ... except TrialError as exc:
    ...     print(str(exc).split("; ")[1])
    found 7 at (m2, s1)
    """
    if mask.name.startswith(_CHECKED):
        return mask
    m = np.asarray(models, dtype=object)
    s = np.asarray(segments, dtype=object)
    # the ids are named cheaply (tokenizing a million strings would cost more than the check)
    token = tokenize(mask.name, len(m), len(s), m[:1], m[-1:], s[:1], s[-1:], where)
    mids = da.from_array(m, chunks=(mask.chunks[0],), name=f"model-ids-{token}")
    sids = da.from_array(s, chunks=(mask.chunks[1],), name=f"segment-ids-{token}")
    return da.blockwise(
        *(_check_code_block, "ij", mask, "ij", mids, "i", sids, "j"),
        where=where,
        dtype=mask.dtype,
        name=f"{_CHECKED}{token}",
        meta=mask._meta,
    )


_CHECKED = "checked-codes-"


def raise_conflicts(bad: da.Array, models: np.ndarray, segments: np.ndarray, what: str) -> None:
    """A :class:`TrialError` counting the trials where the lazy boolean ``bad`` is true (``what``
    they are) and naming a few (:func:`locate`); nothing when there is none."""
    count = int(compute(bad.sum(), progress=None))
    if count:
        raise TrialError(f"{count} {what}, e.g. {locate(bad, models, segments)}")


def locate(condition: da.Array, models: np.ndarray, segments: np.ndarray, limit: int = 3) -> str:
    """A few ``(model, segment)`` ids where a lazy boolean matrix is true, for error messages.

    Computes blocks in order until ``limit`` cells are found (only run when reporting an error).

    Examples
    --------
    >>> import dask.array as da
    >>> bad = da.from_array(np.array([[False, True], [True, True]]), chunks=1)
    >>> locate(bad, np.array(["m1", "m2"]), np.array(["s1", "s2"]), limit=2)
    '(m1, s2), (m2, s1)'
    """
    found: list[tuple[int, int]] = []
    row_starts = np.cumsum((0,) + condition.chunks[0])
    col_starts = np.cumsum((0,) + condition.chunks[1])
    for (bi, bj), block in np.ndenumerate(condition.to_delayed()):
        for i, j in np.argwhere(np.asarray(compute(block)))[: limit - len(found)]:
            found.append((int(row_starts[bi] + i), int(col_starts[bj] + j)))
        if len(found) >= limit:
            break
    return ", ".join(f"({models[i]}, {segments[j]})" for i, j in found)
