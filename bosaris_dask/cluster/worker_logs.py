"""What our local clusters' workers log on the terminal they share with the command."""

from __future__ import annotations

import logging
from typing import Any

from distributed import WorkerPlugin

__all__ = ["TaskErrorsToTheClient"]


class TaskErrorsToTheClient(WorkerPlugin):
    """Drop a worker's "Compute Failed" log record: the task's exception reaches the client,
    which words it in one line (``bosaris-dask: error: ...``), and the record printed seven
    lines of it first, on the same terminal. Other worker records (memory, lost connections)
    are kept.

    Examples
    --------
    >>> record = logging.LogRecord("distributed.worker", logging.ERROR, "", 0,
    ...                            "Compute Failed", None, None)
    >>> _not_a_compute_failure(record)
    False
    """

    name = "bosaris-dask-task-errors"

    def setup(self, worker: Any) -> None:
        worker_log = logging.getLogger("distributed.worker")
        if _not_a_compute_failure not in worker_log.filters:
            worker_log.addFilter(_not_a_compute_failure)


def _not_a_compute_failure(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith("Compute Failed")
