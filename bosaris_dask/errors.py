"""Exception types raised by bosaris_dask.

Every error a user can cause by giving us bad input derives from :class:`BosarisError`, so the CLI
can print it as one line (no traceback) and exit non-zero, and API users can catch exactly what we
raise. Each class also derives from the builtin that best describes it (``ValueError``,
``OSError``), so generic ``except ValueError`` handlers keep working.

Examples
--------
>>> from bosaris_dask.errors import ParseError
>>> str(ParseError("bad score 'x1'", path="scores.txt", line=12))
"scores.txt:12: bad score 'x1'"
"""

from __future__ import annotations

import os

__all__ = [
    "BosarisError",
    "ParseError",
    "StoreError",
    "StoreNotFoundError",
    "QualityTableError",
    "TrialError",
    "ScoreError",
    "NoClassError",
    "MissingTrialsError",
    "NotFittedError",
    "OptionError",
    "ClusterError",
    "MemoryLimitError",
    "PlotError",
    "quality_object_refused",
    "InconsistentPassesError",
    "MissingPackageError",
    "option",
]


class BosarisError(Exception):
    """Base class of every error bosaris_dask raises for bad input or bad state."""


class ParseError(BosarisError, ValueError):
    """A text file (or a dataset of a store) could not be parsed.

    Parameters
    ----------
    message
        What is wrong, e.g. ``"expected 3 fields, found 2"``.
    path
        The file (or store) in which the problem was found.
    line
        The 1-based line number in a text file, if known.
    """

    def __init__(
        self, message: str, path: str | os.PathLike[str] | None = None, line: int | None = None
    ):
        self.message = message
        self.path = None if path is None else os.fspath(path)
        self.line = line
        super().__init__(message)

    def __str__(self) -> str:
        where = self.path or ""
        if self.line is not None:
            where = f"{where}:{self.line}"
        return f"{where}: {self.message}" if where else self.message

    def __reduce__(self):  # keep path and line when pickled between dask workers
        return (type(self), (self.message, self.path, self.line))


class StoreError(BosarisError, OSError):
    """A store (zarr, HDF5) is missing, truncated, corrupt or of an unexpected layout."""

    @classmethod
    def wrong_kind(cls, path: object, found: str, kind: str) -> StoreError:
        """The error for a file holding a ``found`` where a ``kind`` was asked for, with the
        likely cause where there is one (a text key of 1/0 labels reads as scores unless told).

        Examples
        --------
        >>> str(StoreError.wrong_kind("k.h5", "ndx", "scores"))
        'k.h5: holds an ndx, expected scores'
        """
        hint = ""
        if found == "scores" and kind in ("key", "ndx"):
            hint = (f"; if it was converted from a text {kind} whose labels are 1/0 (read as "
                    f"scores), convert that file again with --kind {kind}")  # fmt: skip
        return cls(f"{path}: holds {article(found)}, expected {article(kind)}{hint}")


def article(kind: str) -> str:
    """A trial kind with its article: ``an ndx``, ``a key``, ``scores``."""
    return {"ndx": "an ndx", "scores": "scores"}.get(kind, f"a {kind}")


class QualityTableError(StoreError):
    """A file holds one side's quality table where trials (a key, an ndx, scores) were wanted.

    Examples
    --------
    >>> str(QualityTableError.of("q.h5"))[:27]
    'q.h5: holds a quality table'
    """

    @classmethod
    def of(cls, path: object) -> QualityTableError:
        """The error for ``path``, a quality table, read as trials (HDF5, MAT or text)."""
        return cls(f"{path}: holds a quality table, one side's, not trials (read it with "
                   "bd.read_quality and write it with bd.write_quality; fuse and apply take it "
                   "as --model-quality or --segment-quality)")  # fmt: skip


class StoreNotFoundError(StoreError, FileNotFoundError):
    """A file or store to read does not exist (also a :class:`FileNotFoundError`)."""


class TrialError(BosarisError, ValueError):
    """Trial objects are inconsistent: duplicate ids, conflicting labels, mismatched shapes."""


class ScoreError(BosarisError, ValueError):
    """Scores that cannot be evaluated: non-finite values, empty target or non-target sets."""


class NoClassError(ScoreError):
    """A fit found no target or no non-target trial with a score to train on."""


class MissingTrialsError(TrialError):
    """Trials of a key or index have no score (use ``allow_missing`` to drop them)."""


class NotFittedError(TrialError, AttributeError):
    """A model used before ``fit`` (as scikit-learn's ``NotFittedError``, a ``ValueError`` and an
    ``AttributeError``: ``hasattr(model, "weights_")`` is false until the model is fitted)."""


class OptionError(BosarisError, ValueError):
    """An argument outside its domain: a prior not strictly between 0 and 1, a negative cost,
    a non-finite sweep point, system names that do not match the systems."""


class ClusterError(BosarisError, RuntimeError):
    """No dask cluster to run on: scheduler unreachable or lost, no workers, bad options."""


class MemoryLimitError(ClusterError):
    """The workers' memory limits cannot hold the tasks a computation needs (checked upfront)."""


class PlotError(BosarisError, ValueError):
    """A plot asked for with bad options: an unknown window, system or file format, bad limits."""


class InconsistentPassesError(BosarisError, RuntimeError):
    """Two passes over the same scores disagree: a refinement pass counted other trials in a
    score bin than pass 1 did (the data changed between passes, or a score source is not
    deterministic). The engine stops rather than report a wrong number."""


class MissingPackageError(BosarisError, ImportError):
    """An optional package that a file or an option needs is not installed; the message says
    how to install it."""


def quality_object_refused(holder: str) -> str:
    """Why a Quality object of both sides cannot go to ``holder`` (HDF5, a MAT or a text file,
    each of which holds one side's quality table), for the writers' errors.

    >>> quality_object_refused("HDF5")[:48]
    'a Quality object of both sides is stored as zarr'
    """
    return (
        f"a Quality object of both sides is stored as zarr; {holder} holds one side's quality "
        "table (bd.write_quality, as --model-quality and --segment-quality read them)"
    )


def option(name: str) -> str:
    """A keyword argument and its CLI flag, as a message shared by the Python API and the CLI
    names an option (each reader finds the spelling they typed).

    >>> option("bootstrap_method")
    'bootstrap_method (--bootstrap-method)'
    """
    return f"{name} (--{name.replace('_', '-')})"


def are(n: int, noun: str) -> str:
    """``n`` of ``noun`` and the verb *to be*, agreeing in number.

    >>> are(1, "score"), are(3, "score")
    ('1 score is', '3 scores are')
    """
    return f"{n:,} {noun} is" if n == 1 else f"{n:,} {noun}s are"


def have(n: int, noun: str) -> str:
    """``n`` of ``noun`` and the verb, agreeing in number (for the messages above).

    >>> have(1, "key trial"), have(1200, "trial")
    ('1 key trial has', '1,200 trials have')
    """
    return f"{n:,} {noun} has" if n == 1 else f"{n:,} {noun}s have"
