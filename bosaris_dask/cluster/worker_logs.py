"""What our local clusters' workers log on the terminal they share with the command."""

from __future__ import annotations

import logging
from typing import Any

from distributed import WorkerPlugin

__all__ = ["TaskErrorsToTheClient"]


class TaskErrorsToTheClient(WorkerPlugin):
    """Drop two of a local worker's log records, noise on the terminal it shares with the
    command: "Compute Failed" (the task's exception reaches the client, which words it in one
    line, ``bosaris-dask: error: ...``; the record printed seven lines of it first) and a
    heartbeat that found the scheduler gone (a local cluster's scheduler lives in the
    command's process: gone, it is closing, and the worker printed a 30-line traceback after
    the error, in one run of four). Other worker records (memory, ...) are kept.

    Examples
    --------
    >>> record = logging.LogRecord("distributed.worker", logging.ERROR, "", 0,
    ...                            "Compute Failed", None, None)
    >>> _kept(record)
    False
    """

    name = "bosaris-dask-task-errors"

    def setup(self, worker: Any) -> None:
        worker_log = logging.getLogger("distributed.worker")
        if _kept not in worker_log.filters:
            worker_log.addFilter(_kept)


_NOISE = ("Compute Failed", "Failed to communicate with scheduler during heartbeat")


def _kept(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith(_NOISE)
