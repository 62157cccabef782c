"""SIGTERM handled as a Ctrl-C: a batch job's walltime or ``scancel``, ``timeout`` or ``kill``
unwinds the command, so that its temporaries and scratch files are removed and its worker
processes closed, instead of ending the process where it stands.

From either signal on, the asyncio and distributed loggers are quiet: the dask client's gathers
cut short end, in its event-loop thread, with "Task exception was never retrieved ... AllExit"
and a traceback, and a local cluster stopped while it starts says how its worker processes
ended, before the command's one line.

Python delivers a signal by raising in the main thread at its next check, which can fall inside
a ``__del__``, a weakref or a garbage-collector callback (distributed registers one): there the
exception is only printed ("Exception ignored in ...") and the run went on to the end. Such a
:class:`Terminated` is delivered again, at the next check, instead. A second SIGTERM from
outside ends the process at once.

Examples
--------
>>> with sigterm_unwinds():
...     try:
...         signal.raise_signal(signal.SIGTERM)
...     except Terminated:
...         print("unwound")
unwound
>>> signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
True
"""

from __future__ import annotations

import _thread
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["Terminated", "sigterm_unwinds"]


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where a Ctrl-C would be."""


class _Delivery:
    """The state of one command's SIGTERM: raised once, delivered again where it was lost."""

    def __init__(self) -> None:
        self.raised = False
        self.again = False
        self.previous_hook = sys.unraisablehook

    def handle(self, signum: int, frame: Any) -> None:
        if self.raised and not self.again:  # a second SIGTERM from outside: end now
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        self.raised, self.again = True, False
        _quiet()
        raise Terminated

    def unraisable(self, unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, Terminated):  # raised where it is only printed
            self.again = True  # our handler again, from another thread: not in this hook
            threading.Timer(0.01, _thread.interrupt_main, (signal.SIGTERM,)).start()
            return
        self.previous_hook(unraisable)


#: The loggers quiet from a SIGTERM or Ctrl-C on (their levels come back after the block).
_QUIET = ("asyncio", "distributed")


def _quiet() -> None:
    for name in _QUIET:
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _interrupt(signum: int, frame: Any) -> None:
    _quiet()
    signal.default_int_handler(signum, frame)


@contextlib.contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` in the main thread while the block runs, and SIGINT
    its ``KeyboardInterrupt``, both with the :data:`_QUIET` loggers quiet from then on; where a
    handler of the caller's is installed, it is left alone (and outside the main thread, both
    are)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    levels = {name: logging.getLogger(name).level for name in _QUIET}
    ours = {}
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        delivery = _Delivery()
        ours[signal.SIGTERM] = (delivery.handle, signal.SIG_DFL)
        sys.unraisablehook = delivery.unraisable
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        ours[signal.SIGINT] = (_interrupt, signal.default_int_handler)
    for sig, (handler, _) in ours.items():
        signal.signal(sig, handler)
    try:
        yield
    finally:
        if signal.SIGTERM in ours:
            sys.unraisablehook = delivery.previous_hook
        for sig, (_, previous) in ours.items():
            signal.signal(sig, previous)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
