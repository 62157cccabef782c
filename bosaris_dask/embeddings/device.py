"""Block products on an accelerator: the float64 matrix products of the exact block kernel
computed by PyTorch on a device with float64 products (a CUDA or ROCm GPU: ``"cuda"``,
``"cuda:1"``), an optional dependency (``pip install torch``).

Only the products run on the device. Each strip of products is copied back and rounded to
float32 on the host by :func:`bosaris_dask.embeddings.rounding.round_products`, whose
certificate holds for any float64 evaluation of a dot product (any summation order, blocking
or fused multiply-add: the error bound of :func:`~bosaris_dask.embeddings.rounding
.product_bound`). So a block scored on a GPU has the same bits as on the CPU, and refinement
passes recomputing it elsewhere find the same scores.

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

from bosaris_dask.errors import OptionError

__all__ = ["check_device", "device_strips"]


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
    a: np.ndarray, b: np.ndarray, rows: int, device: str
) -> Iterator[tuple[int, int, np.ndarray]]:
    """``(start, stop, a[start:stop] @ b.T)`` for strips of ``rows`` rows of the float64
    ``a``, the products computed by PyTorch on ``device`` (any device type, ``"cpu"``
    included: the tests' way to run this path without a GPU) and returned as float64 host
    arrays.

    Raises
    ------
    OptionError
        PyTorch missing, or the device unavailable here or without float64 products.

    Examples
    --------
    >>> import numpy as np
    >>> a, b = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[1.0, 0.0]])
    >>> import importlib.util
    >>> if importlib.util.find_spec("torch") is not None:  # PyTorch's CPU device
    ...     strips = [(lo, hi, p.tolist()) for lo, hi, p in device_strips(a, b, 1, "cpu")]
    ... else:
    ...     strips = [(0, 1, [[1.0]]), (1, 2, [[3.0]])]
    >>> strips
    [(0, 1, [[1.0]]), (1, 2, [[3.0]])]
    """
    torch = _torch(device)
    try:
        on = torch.device(device)
        ta = torch.from_numpy(_writable(a)).to(on)
        tb_t = torch.from_numpy(_writable(b)).to(on).T
        for start in range(0, a.shape[0], rows):
            stop = min(start + rows, a.shape[0])
            products = (ta[start:stop] @ tb_t).cpu().numpy()
            yield start, stop, products
    except _DEVICE_ERRORS as exc:  # no driver, a bad ordinal, no float64, out of memory
        raise OptionError(
            f"device {device!r} cannot compute the float64 block products here: {exc}"
        ) from None


#: What PyTorch raises for a device it cannot use (CUDA errors are RuntimeErrors).
_DEVICE_ERRORS = (RuntimeError, TypeError, AssertionError, NotImplementedError)


def _writable(x: np.ndarray) -> np.ndarray:
    """``torch.from_numpy`` warns about read-only arrays (dask's chunks may be)."""
    return x if x.flags.writeable else x.copy()
