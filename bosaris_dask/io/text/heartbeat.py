"""A line on the ``bosaris_dask.io`` logger every :data:`PROGRESS_S` seconds of a long text read
or write (how far, how many lines), and one when it ends, so a long parse or write is not
silent; short ones say nothing. The CLI shows these lines unless ``-q``. A pipe read through
a scratch copy is named as the user gave it (:func:`shown_as`).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import time
from collections.abc import Iterator

__all__ = ["Heartbeat", "PROGRESS_S", "shown_as", "shown_path"]

_SHOWN: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar(
    "bosaris_dask_text_shown", default=None
)


@contextlib.contextmanager
def shown_as(copy: str | os.PathLike[str], given: str | os.PathLike[str]) -> Iterator[None]:
    """In the block, messages about ``copy`` (a pipe's scratch copy) name ``given``."""
    token = _SHOWN.set((os.fspath(copy), os.fspath(given)))
    try:
        yield
    finally:
        _SHOWN.reset(token)


def shown_path(path: str | os.PathLike[str]) -> str:
    """The name of ``path`` in a message: the pipe it copies, inside :func:`shown_as`.

    Examples
    --------
    >>> with shown_as("/tmp/bosaris-text-1.dat", "/dev/fd/63"):
    ...     shown_path("/tmp/bosaris-text-1.dat"), shown_path("key.txt")
    ('/dev/fd/63', 'key.txt')
    """
    path, pair = os.fspath(path), _SHOWN.get()
    return pair[1] if pair is not None and pair[0] == path else path


#: Seconds between the lines of a long text read or write.
PROGRESS_S = 10.0
_log = logging.getLogger("bosaris_dask.io")


class Heartbeat:
    """Progress lines of one long piece of text work on ``path``: ``verb`` (``"read"``,
    ``"written"``) names what is done, ``total`` the units of :meth:`advance` in all (0: none
    said).

    Examples
    --------
    >>> beat = Heartbeat("scores.txt", "written", total=4)
    >>> beat.advance(2, "10 lines")  # (after PROGRESS_S seconds: 'scores.txt: 50% written, ...')
    >>> beat.finish("20 lines")  # (a line only where progress lines were said)
    """

    def __init__(self, path: str | os.PathLike[str], verb: str, total: int = 0):
        self.path, self.verb, self.total = shown_path(path), verb, total
        self.start = time.perf_counter()
        self.next = self.start + PROGRESS_S
        self.said = False

    def advance(self, done: int, detail: str) -> None:
        """Say how far the work is (``done`` units of ``total``), at most every PROGRESS_S s."""
        now = time.perf_counter()
        if now >= self.next:
            self.next, self.said = now + PROGRESS_S, True
            share = f"{100 * done / self.total:.0f}% " if self.total else ""
            _log.info("%s: %s%s, %s, %.0f s", self.path, share, self.verb, detail,
                      now - self.start)  # fmt: skip

    def finish(self, detail: str) -> None:
        """Say that a long piece of work (one that said how far it was) is done."""
        if self.said:
            _log.info("%s: %s, %s in %.0f s", self.path, self.verb, detail,
                      time.perf_counter() - self.start)  # fmt: skip
