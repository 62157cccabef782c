"""Runs whose workers are all lost end instead of waiting forever: dask's
``distributed.scheduler.no-workers-timeout`` for a scheduler started here
(:func:`failing_without_workers`), and the same setting for the run's duration on someone
else's scheduler when asked (:func:`theirs_failing_without_workers`).
"""

from __future__ import annotations

import contextlib
import logging
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
    runs: hence only when asked (``--worker-timeout``). A scheduler that refuses to run
    functions (``distributed.scheduler.pickle: false``) is left as it is, with a warning.
    """

    def set_timeout(dask_scheduler: Any, value: float | None, when: float | None) -> Any:
        # the scheduler's no_workers_timeout set to value where it is when; the value it had
        # (defined here so that it is sent by value: their scheduler need not have this package)
        before = dask_scheduler.no_workers_timeout
        if before == when:
            dask_scheduler.no_workers_timeout = value
        return before

    try:
        before = client.run_on_scheduler(set_timeout, value=wait, when=None)
    except Exception as exc:  # noqa: BLE001  (what it raises is the remote scheduler's)
        _log.warning("%s keeps its own no-workers-timeout (--worker-timeout %g not set there: "
                     "%s)", where, wait, exc)  # fmt: skip
        yield
        return
    if before is not None:
        _log.info("%s fails tasks after %g s without workers: its own setting", where, before)
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(Exception):  # (a scheduler already gone keeps nothing)
            client.run_on_scheduler(set_timeout, value=None, when=wait)
