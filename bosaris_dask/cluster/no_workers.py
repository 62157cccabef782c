"""Runs whose workers are all lost end instead of waiting forever: dask's
``distributed.scheduler.no-workers-timeout`` for a scheduler started here
(:func:`failing_without_workers`), and the same setting for the run's duration on someone
else's scheduler when asked (:func:`theirs_failing_without_workers`).
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Iterator
from typing import Any

_log = logging.getLogger("bosaris_dask.cluster")


@contextlib.contextmanager
def failing_without_workers(wait: float) -> Iterator[None]:
    """dask's config for a scheduler started in this block: tasks that wait ``wait`` seconds
    with no worker to run them fail (``distributed.scheduler.no-workers-timeout``), so a run
    whose workers are all lost ends instead of waiting forever; a value the user configured
    is kept. The scheduler's log line per failed task is left out (:func:`connect` says it
    once)."""
    import dask
    import distributed  # noqa: F401  (its config defaults first: set() would drop them after)

    def not_a_timed_out_task(record: logging.LogRecord) -> bool:
        return "marked as failed because it timed out waiting" not in record.getMessage()

    key = "distributed.scheduler.no-workers-timeout"
    logger = logging.getLogger("distributed.scheduler")
    logger.addFilter(not_a_timed_out_task)
    try:
        if dask.config.get(key, None) is not None:
            yield
        else:
            with dask.config.set({key: f"{wait}s"}):
                yield
    finally:
        logger.removeFilter(not_a_timed_out_task)


@contextlib.contextmanager
def theirs_failing_without_workers(client: Any, wait: float, where: str) -> Iterator[None]:
    """Someone else's scheduler fails this block's tasks after ``wait`` seconds without any
    worker, where it has no ``no-workers-timeout`` of its own; put back as it was after.

    The setting is the scheduler's, so other clients' tasks are under it too while the block
    runs: hence only when asked (``--worker-timeout``). Runs that overlap on one scheduler each
    hold the setting (the largest of their ``wait`` applies) and the last to end puts it back.
    A scheduler that refuses to run functions (``distributed.scheduler.pickle: false``) is
    left as it is, with a warning.
    """
    # (defined here so that they are sent by value: their scheduler need not have this package)

    def hold(dask_scheduler: Any, token: str, value: float) -> float | None:
        # the holds of runs like this one, by token; None: the scheduler's own setting, returned
        held = getattr(dask_scheduler, "_bosaris_dask_worker_timeouts", None)
        if held is None:
            if dask_scheduler.no_workers_timeout is not None:
                return dask_scheduler.no_workers_timeout
            held = dask_scheduler._bosaris_dask_worker_timeouts = {}
        held[token] = value
        dask_scheduler.no_workers_timeout = max(held.values())
        return None

    def release(dask_scheduler: Any, token: str) -> None:
        held = getattr(dask_scheduler, "_bosaris_dask_worker_timeouts", None)
        if held is None:
            return
        held.pop(token, None)
        if held:
            dask_scheduler.no_workers_timeout = max(held.values())
        else:
            dask_scheduler.no_workers_timeout = None
            del dask_scheduler._bosaris_dask_worker_timeouts

    token = uuid.uuid4().hex
    refused = None
    try:
        own = client.run_on_scheduler(hold, token=token, value=wait)
    except Exception as exc:  # noqa: BLE001  (what it raises is the remote scheduler's)
        refused = exc  # (the run goes on outside this handler: its errors carry no context)
    if refused is not None:
        _log.warning("%s keeps its own no-workers-timeout (--worker-timeout %g not set there: "
                     "%s)", where, wait, refused)  # fmt: skip
        yield
        return
    if own is not None:
        _log.info("%s fails tasks after %g s without workers: its own setting", where, own)
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(Exception):  # (a scheduler already gone keeps nothing)
            client.run_on_scheduler(release, token=token)
