"""The one place that finds the active dask client and computes dask graphs.

:func:`current_client` answers "does ``dask.compute`` run on a distributed client now, and
which?" the way dask itself decides (:func:`dask.base.get_scheduler`: an explicit
``dask.config.set(scheduler=...)`` first, then the default client). :func:`compute` and
:func:`compute_and_keep` run graphs on that client when there is one, else on the threaded
scheduler (dask's default), optionally with a progress bar.

Without a client the threads are a pool of this call's own, drained before returning or
raising: when one task fails dask raises at once while the others keep running, and a
straggler could then write into a temporary store the caller has already removed. So when
:func:`compute` returns or raises, no task of it is still running.

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
>>> [int(v) for v in compute([da.ones(4, chunks=2).sum(), da.arange(4, chunks=2).sum()])]
[4, 6]
>>> current_client() is None
True
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from contextvars import ContextVar
from typing import Any

import dask
import dask.base
import dask.system
from dask.threaded import ContextAwareThreadPoolExecutor

_log = logging.getLogger("bosaris_dask")

__all__ = [
    "compute", "compute_and_keep", "persist", "current_client", "showing_progress", "shows_bar",
]  # fmt: skip

_SHOW: ContextVar[bool] = ContextVar("bosaris_dask_progress", default=False)


@contextmanager
def showing_progress(show: bool = True) -> Iterator[None]:
    """Show (or not) a progress bar for the passes of every computation inside the block that
    does not say otherwise, e.g. those of a fuser's or a calibration's fit.

    Examples
    --------
    >>> import dask.array as da
    >>> with showing_progress(False):
    ...     int(compute(da.ones(4, chunks=2).sum()))
    4
    """
    token = _SHOW.set(bool(show))
    try:
        yield
    finally:
        _SHOW.reset(token)


def shows_bar(progress: bool | None) -> bool:
    """Whether a computation given ``progress`` shows a bar (``None``: as the innermost
    :func:`showing_progress` block says).

    >>> shows_bar(None), shows_bar(True)
    (False, True)
    """
    return bool(_SHOW.get() if progress is None else progress)


def current_client() -> Any | None:
    """The running ``distributed.Client`` that ``dask.compute`` uses now, or ``None``.

    ``None`` without a client, after it closed, and where ``dask.config`` names a local
    scheduler (``dask.config.set(scheduler="threads")``) even though a client exists: dask
    would not use the client there, and neither do :func:`compute` and the package's other
    code. A client made with ``set_as_default=False`` is not the active one either.

    Examples
    --------
    >>> current_client() is None
    True
    """
    try:
        scheduler = dask.base.get_scheduler()
    except RuntimeError:  # scheduler="distributed" in the config but no client left
        return None
    owner = getattr(scheduler, "__self__", None)
    if owner is None:
        return None
    from distributed import Client

    if isinstance(owner, Client) and owner.status == "running":
        return owner
    return None


def _named_on_the_workers(x: Any, client: Any) -> Any:
    """``x`` naming the in-memory data already sent to ``client``'s workers
    (:mod:`bosaris_dask.io.scattered`) instead of holding them."""
    from bosaris_dask.io.scattered import named

    return named(x, client)


def local_threads() -> int:
    """The threads of a computation without a client: dask's ``num_workers``, else the CPUs
    this process may use (``dask.system.CPU_COUNT``: the affinity mask and cgroup quota of a
    batch job's share of a node, not the node's cores)."""
    return dask.config.get("num_workers", None) or dask.system.CPU_COUNT


def _run_here(run: Any, objs: tuple[Any, ...]) -> tuple[Any, ...]:
    """``run(*objs)`` (``dask.compute`` or ``dask.persist``) without a client: the threads are
    a pool of this call's own (:func:`local_threads` of them), drained
    before returning or raising. A local scheduler named in dask's config (``"sync"``,
    ``"processes"``) is kept."""
    if dask.config.get("scheduler", None) not in (None, "threads", "threading"):
        return tuple(run(*objs))
    pool = ContextAwareThreadPoolExecutor(local_threads())
    try:
        return tuple(run(*objs, scheduler="threads", pool=pool))
    except KeyboardInterrupt:  # a thread cannot be stopped mid-task: say why the wait
        _log.warning("interrupted: waiting for the tasks that are running to end")
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _compute_here(objs: tuple[Any, ...]) -> tuple[Any, ...]:
    """``dask.compute(*objs)`` without a client, on threads drained before returning."""
    return _run_here(dask.compute, objs)


def compute(x: Any, *, progress: bool | None = False) -> Any:
    """Compute a dask collection (or a list or tuple of them), with a progress bar on stderr
    when ``progress``.

    Runs on :func:`current_client` when there is one, else on threads that have all finished
    when this returns or raises. ``progress=None`` follows the innermost
    :func:`showing_progress` block (default: no bar).

    Examples
    --------
    >>> import dask.array as da
    >>> total, count = compute((da.arange(5, chunks=2).sum(), da.ones(3, chunks=2).sum()))
    >>> int(total), int(count)
    (10, 3)
    """
    if progress is None:
        progress = _SHOW.get()
    client = current_client()
    if client is None:
        if not progress:
            return _compute_here((x,))[0]
        from dask.diagnostics import ProgressBar

        with ProgressBar(out=sys.stderr, dt=0.5):
            return _compute_here((x,))[0]
    x = _named_on_the_workers(x, client)
    if not progress:
        return dask.compute(x)[0]
    from distributed import progress as distributed_progress

    future = client.compute(x)
    with redirect_stdout(sys.stderr):  # the text bar prints to stdout
        distributed_progress(future, multi=False, notebook=False)
    sys.stderr.write("\n")
    return client.gather(future)


def compute_and_keep(keep: Any, x: Any, *, progress: bool | None = False) -> tuple[Any, Any]:
    """Compute ``x`` and keep ``keep`` (a dask array ``x`` depends on) for later graphs.

    With a distributed client, ``keep`` and ``x`` (or each graph of a tuple ``x``) are
    persisted on the workers in one go, as one optimized graph, and ``x`` is then gathered:
    the tasks they share run once. With the local schedulers
    both are computed together and ``keep`` comes back as a dask array over the in-memory
    blocks (one block per element of its chunk grid, as object arrays of shape ``(1, 1)``
    are).
    """
    if progress is None:
        progress = _SHOW.get()
    client = current_client()
    if client is not None:
        # persisted with keep in one go, then gathered: one graph, optimized as one, so the
        # tasks they share run once. (Persisting keep alone, then computing x, fused keep's
        # tasks into x's under other keys: every chunk was read and selected twice.)
        keep, x = _named_on_the_workers((keep, x), client)
        parts = x if isinstance(x, tuple) else (x,)
        kept, *rest = client.persist([keep, *parts])
        value = compute(tuple(rest), progress=progress)
        return kept, value if isinstance(x, tuple) else value[0]
    import dask.array as da  # here: the module is imported by --help, which needs no arrays

    blocks, value = compute((keep, x), progress=progress)
    return da.from_array(blocks, chunks=1, name=False), value  # name=False: no hashing of the data


def persist(*xs: Any) -> tuple[Any, ...]:
    """``dask.persist(*xs)`` on :func:`current_client` when there is one (the data stay on the
    workers), else on threads of this call's own that have all finished when this returns or
    raises, as :func:`compute` runs them.

    Examples
    --------
    >>> import dask.array as da
    >>> (kept,) = persist(da.arange(4, chunks=2) + 1)
    >>> kept.chunks, int(kept.sum().compute(scheduler="sync"))
    (((2, 2),), 10)
    """
    client = current_client()
    if client is not None:
        return tuple(dask.persist(*_named_on_the_workers(xs, client)))
    return _run_here(dask.persist, xs)
