"""Computing dask graphs with an optional progress bar, on whatever scheduler is active.

With a distributed client the bar is distributed's text bar (it follows tasks on the workers),
also in Jupyter, where distributed would otherwise build an ``ipywidgets`` widget (an optional
package); with the local schedulers it is :class:`dask.diagnostics.ProgressBar`. Both write to
stderr (distributed's bar writes to stdout, which is redirected while it runs), so they never
mix with a command's printed results.

Examples
--------
>>> import dask.array as da
>>> int(compute(da.ones(10, chunks=5).sum()))
10
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from contextvars import ContextVar
from typing import Any

import dask
import dask.array as da

__all__ = ["compute", "compute_and_keep", "current_client", "showing_progress"]

_SHOW: ContextVar[bool] = ContextVar("bosaris_dask_progress", default=False)


@contextmanager
def showing_progress(show: bool = True) -> Iterator[None]:
    """Show (or not) a progress bar for the passes of every computation inside the block that
    does not say otherwise, e.g. those of a fuser's or a calibration's fit.

    Examples
    --------
    >>> with showing_progress(False):
    ...     int(compute(da.ones(4, chunks=2).sum()))
    4
    """
    token = _SHOW.set(bool(show))
    try:
        yield
    finally:
        _SHOW.reset(token)


def current_client() -> Any | None:
    """The running default ``distributed.Client`` of this process, or None."""
    try:
        from distributed import default_client
    except ImportError:  # pragma: no cover - distributed is a dependency
        return None
    try:
        client = default_client()
    except ValueError:
        return None
    return client if client.status == "running" else None


def compute(x: Any, *, progress: bool | None = False) -> Any:
    """Compute one dask collection, showing a progress bar on stderr when ``progress``.

    ``progress=None`` follows the innermost :func:`showing_progress` block (default: no bar).
    """
    if progress is None:
        progress = _SHOW.get()
    if not progress:
        return dask.compute(x)[0]
    client = current_client()
    if client is not None:
        from distributed import progress as distributed_progress

        future = client.compute(x)
        with redirect_stdout(sys.stderr):  # the text bar prints to stdout
            distributed_progress(future, multi=False, notebook=False)
        sys.stderr.write("\n")
        return future.result()
    from dask.diagnostics import ProgressBar

    with ProgressBar(out=sys.stderr, dt=0.5):
        return dask.compute(x)[0]


def compute_and_keep(keep: Any, x: Any, *, progress: bool | None = False) -> tuple[Any, Any]:
    """Compute ``x`` and keep ``keep`` (a dask array ``x`` depends on) for later graphs.

    With a distributed client, ``keep`` is persisted on the workers and ``x`` computed in the
    same go (shared tasks run once). With the local schedulers both are computed together and
    ``keep`` comes back as a dask array over the in-memory blocks (one block per element of its
    chunk grid, as object arrays of shape ``(1, 1)`` are).
    """
    if progress is None:
        progress = _SHOW.get()
    client = current_client()
    if client is not None:
        kept = client.persist(keep)
        return kept, compute(x, progress=progress)
    if progress:
        from dask.diagnostics import ProgressBar

        with ProgressBar(out=sys.stderr, dt=0.5):
            blocks, value = dask.compute(keep, x)
    else:
        blocks, value = dask.compute(keep, x)
    return da.from_array(blocks, chunks=1, name=False), value  # name=False: no hashing of the data
