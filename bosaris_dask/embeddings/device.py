"""Block scores on an accelerator: the float64 matrix products of the exact block kernel
computed by PyTorch on a device with float64 products (a CUDA or ROCm GPU: ``"cuda"``,
``"cuda:1"``), an optional dependency (``pip install torch``), and rounded to float32 there.

The device certifies its roundings as the host does (:func:`bosaris_dask.embeddings.rounding
.round_certified`): a score is kept where both ends of the error bound of
:func:`~bosaris_dask.embeddings.rounding.product_bound` (which holds for any float64 evaluation
of a dot product: any summation order, blocking or fused multiply-add) round to the same
float32. Only the float32 scores and the indices of the few uncertain ones (near a float32
rounding boundary, or below float32's normal range) come back; the host settles those exactly
(:func:`~bosaris_dask.embeddings.rounding.settle_uncertain`). A device is used only once it has
rounded a set of probes to nearest, ties to even, as numpy does. So a block scored on a GPU has
the same bits as on the CPU, and refinement passes recomputing it elsewhere find the same scores.

``"cpu"`` (the default everywhere) means numpy's BLAS, without PyTorch.

Examples
--------
>>> check_device("cpu")
'cpu'
>>> check_device(3)
Traceback (most recent call last):
...
bosaris_dask.errors.OptionError: device must be a string such as 'cpu' or 'cuda:0', got 3
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from bosaris_dask.embeddings.rounding import max_row_norm, product_bound
from bosaris_dask.errors import OptionError

__all__ = ["check_device", "device_strips", "uncertain_roundings"]


def _torch(device: str) -> Any:
    try:
        import torch
    except ImportError:
        raise OptionError(
            f"device {device!r} needs PyTorch (pip install torch); device 'cpu' uses numpy"
        ) from None
    return torch


def check_device(device: Any) -> str:
    """``device`` as the kernels take it: ``"cpu"`` (numpy), or a PyTorch device string of
    another type (``"cuda"``, ``"cuda:1"``), checked for its form only, as the device may exist
    only on the workers. An :class:`~bosaris_dask.errors.OptionError` for anything else, or
    when PyTorch is missing.
    """
    if not isinstance(device, str):
        raise OptionError(f"device must be a string such as 'cpu' or 'cuda:0', got {device!r}")
    if device == "cpu":
        return device
    torch = _torch(device)
    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError) as exc:
        raise OptionError(f"unknown device {device!r} ({exc})") from None
    return "cpu" if parsed.type == "cpu" else str(parsed)


def device_strips(
    a: np.ndarray, b: np.ndarray, rows: int, device: str, b_norm: float | None = None
) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
    """``(start, stop, scores, uncertain)`` for strips of ``rows`` rows of the float64 ``a``:
    the products ``a[start:stop] @ b.T`` computed by PyTorch on ``device`` (any device type,
    ``"cpu"`` included: the tests' way to run this path without a GPU) and rounded to float32
    there, and the flat indices into ``scores`` of the roundings the device could not certify
    (to be settled on the host: :func:`~bosaris_dask.embeddings.rounding.settle_uncertain`).
    ``scores`` is a reused host buffer: copy it before taking the next strip. ``b_norm``: an
    upper bound on the norms of ``b``'s rows (computed when not given).

    Raises
    ------
    OptionError
        PyTorch missing, or the device unavailable here, without float64 products, or not
        rounding float64 to float32 to nearest, ties to even.

    Examples
    --------
    >>> import numpy as np
    >>> a, b = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[1.0, 0.0]])
    >>> import importlib.util
    >>> if importlib.util.find_spec("torch") is not None:  # PyTorch's CPU device
    ...     strips = [(lo, hi, s.tolist(), u.tolist()) for lo, hi, s, u
    ...               in device_strips(a, b, 1, "cpu")]
    ... else:
    ...     strips = [(0, 1, [[1.0]], []), (1, 2, [[3.0]], [])]
    >>> strips
    [(0, 1, [[1.0]], []), (1, 2, [[3.0]], [])]
    """
    torch = _torch(device)
    b_norm = max_row_norm(b) if b_norm is None else b_norm
    strips = [(start, min(start + rows, a.shape[0])) for start in range(0, a.shape[0], rows)]
    bounds = [product_bound(a.shape[1], max_row_norm(a[lo:hi]), b_norm) for lo, hi in strips]
    try:
        on = torch.device(device)
        _check_rounding(torch, on, device)
        ta = torch.from_numpy(_writable(a)).to(on)
        tb_t = torch.from_numpy(_writable(b)).to(on).T
        # pinned host memory: the copies back run at the bus's rate, not through a bounce buffer
        pinned = on.type == "cuda"
        buffer = torch.empty((min(rows, a.shape[0]), b.shape[0]), dtype=torch.float32,
                             pin_memory=pinned)  # fmt: skip
        for (start, stop), bound in zip(strips, bounds, strict=True):
            products = ta[start:stop] @ tb_t
            scores = products.float()
            uncertain = uncertain_roundings(products, scores, bound, lambda x: x.float())
            (flat,) = torch.nonzero(uncertain.flatten(), as_tuple=True)
            flat = flat.cpu().numpy()
            host = buffer[: stop - start]
            host.copy_(scores)
            yield start, stop, host.numpy(), flat
    except _DEVICE_ERRORS as exc:  # no driver, a bad ordinal, no float64, out of memory
        raise OptionError(
            f"device {device!r} cannot compute the float64 block products here: {exc}"
        ) from None


def uncertain_roundings(products: Any, scores: Any, bound: float, to_float32: Any) -> Any:
    """Where the float32 ``scores`` (``products`` rounded to nearest) are not certified by the
    error ``bound`` of the float64 ``products`` (:func:`~bosaris_dask.embeddings.rounding
    .round_certified`'s test), or lie below float32's normal range (a device may flush those to
    zero): a boolean array of any array library, ``to_float32`` its rounding cast.

    >>> p = np.array([[0.25, 1e-20, 2.0**-130]])
    >>> uncertain_roundings(p, p.astype(np.float32), 1e-17, lambda x: x.astype(np.float32))
    array([[False,  True,  True]])
    """
    uncertain = (to_float32(products - bound) != scores) | (to_float32(products + bound) != scores)
    return uncertain | (abs(scores) < _MIN_NORMAL32)


#: float64 values on both sides of float32 rounding boundaries and on them (ties): a device
#: must round them to float32 as numpy does (to nearest, ties to even) to certify its scores.
_PROBES = np.array(
    [1 + 2.0**-24, 1 + 3 * 2.0**-24, 1 + 2.0**-24 + 2.0**-50, 1 + 2.0**-24 - 2.0**-50,
     -(1 + 2.0**-24 + 2.0**-50), -(1 + 3 * 2.0**-24), 0.1, -0.7, 3.4e38]
)  # fmt: skip
_MIN_NORMAL32 = 2.0**-126
_ROUNDING_CHECKED: set[str] = set()


def _check_rounding(torch: Any, on: Any, device: str) -> None:
    if str(on) in _ROUNDING_CHECKED:
        return
    got = torch.from_numpy(_PROBES).to(on).float().cpu().numpy()
    expected = _PROBES.astype(np.float32)
    if not np.array_equal(got.view(np.uint32), expected.view(np.uint32)):
        raise OptionError(
            f"device {device!r} does not round float64 to float32 to nearest (ties to even), "
            "so its scores cannot be certified; use device 'cpu'"
        )
    _ROUNDING_CHECKED.add(str(on))


#: What PyTorch raises for a device it cannot use (CUDA errors are RuntimeErrors).
_DEVICE_ERRORS = (RuntimeError, TypeError, AssertionError, NotImplementedError)


def _writable(x: np.ndarray) -> np.ndarray:
    """``torch.from_numpy`` warns about read-only arrays (dask's chunks may be)."""
    return x if x.flags.writeable else x.copy()
