"""Atomic writes: an output is built under a hidden sibling ``.NAME.tmp-<12 hex>``, flushed to disk
(every file and folder, unless the ``bosaris_dask.fsync`` knob is 0) and renamed into place
when complete (a directory by ``renameat2(RENAME_EXCHANGE)`` on Linux, else moved aside to
``.NAME.old-*`` first); :func:`remove_stale` cleans up after killed writers.

An output that is a symbolic link is written through it (its target replaced, the link kept);
one that is a device, a FIFO or a socket (``/dev/stdout``, ``/dev/null``, a named pipe, or a
link to one) is written as it is, in place: it cannot be replaced, and must not be.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import os
import shutil
import signal
import stat
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

from bosaris_dask import config
from bosaris_dask.errors import StoreError

__all__ = ["atomic_path", "atomic_paths", "check_folder", "is_zarr_store", "remove_stale",
           "remove_path", "written_in_place", "zarr_store_around",
           "refuse_inside_store"]  # fmt: skip

_TMP = ".tmp-"
_OLD = ".old-"
_NAME_MAX = 255  # bytes in a file name on Linux and macOS file systems


def _sibling(final: Path, tag: str) -> Path:
    """A new hidden sibling ``.NAME<tag><12 hex>`` of ``final`` (of ``NAME`` itself when ``final``
    is a temporary ``.NAME.tmp-...``, so that :func:`remove_stale` of ``NAME`` finds it).
    """
    name = final.name
    if name.startswith(".") and _TMP in name:
        base, _, suffix = name[1:].rpartition(_TMP)
        if len(suffix) == 12 and all(c in "0123456789abcdef" for c in suffix):
            name = base
    return final.with_name(f".{name}{tag}{uuid.uuid4().hex[:12]}")


def check_folder(path: str | os.PathLike[str], *, file: bool = False) -> None:
    """A StoreError unless the folder an output ``path`` goes in exists, and unless writing
    there could replace what is there: a directory that is no zarr store, or (``file``: the
    output is a file, e.g. JSON) any directory. Called before the work; the write checks again.
    """
    if written_in_place(Path(path)):
        return
    final = _through_links(Path(path))
    parent = final.parent
    if not parent.is_dir():
        link = f" (a link to {final})" if final != Path(path) else ""
        raise StoreError(f"cannot write {path}{link}: directory {parent} does not exist")
    refuse_inside_store(path, parent)
    _check_replaceable(final, file=file)


def zarr_store_around(folder: str | os.PathLike[str]) -> Path | None:
    """The zarr store that ``folder`` is or lies inside (the nearest; ``folder`` as given where
    it is the store itself, else the store's absolute path), or None. The walk stops at a mount
    point (a store never spans one; an automounter's ``/net`` is not asked for hosts).

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "s.zarr").mkdir(), (d / "s.zarr" / "zarr.json").write_text("{}")
    >>> zarr_store_around(d / "s.zarr" / "x" / "y") == d / "s.zarr", zarr_store_around(d)
    (True, None)
    """
    given = Path(folder)
    for place in (given.absolute(), *given.absolute().parents):
        if place.is_dir() and is_zarr_store(place):
            return given if place == given.absolute() else place
        if os.path.ismount(place):
            return None
    return None


def refuse_inside_store(path: str | os.PathLike[str], folder: str | os.PathLike[str]) -> None:
    """A StoreError for an output ``path`` that goes in ``folder`` (existing or not yet made)
    inside a zarr store: zarr refuses to read a store holding a file or folder it does not know
    (an empty folder is enough). Checked before anything is made."""
    store = zarr_store_around(folder)
    if store is not None:
        raise StoreError(f"cannot write {path}: it is inside the zarr store {store}, which "
                         "refuses what it does not know; write it beside the store")  # fmt: skip


def remove_path(path: str | os.PathLike[str]) -> None:
    """Delete a file, a link or a directory tree; a path that does not exist is ignored."""
    p = Path(path)
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def written_in_place(path: Path) -> bool:
    """Whether ``path`` is (or links to) a device, a FIFO or a socket: an output written as
    it is, never replaced by a file (``--json /dev/stdout`` run as root replaced the
    system's own ``/dev/stdout`` with a regular file)."""
    try:
        mode = path.stat().st_mode  # through links
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _through_links(path: Path) -> Path:
    """Where an output at ``path`` goes: the file a symbolic link names (the link is kept and
    its target replaced, as writing through it would), else ``path``."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _fsync(path: Path) -> None:
    """Flush one file or folder to disk; an OSError (naming ``path``) where it cannot."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, os.fspath(path)) from exc
    finally:
        os.close(fd)


def _fsync_tree(path: Path) -> None:
    """Flush a written output to disk: every file, then every folder (deepest first, so each
    entry is durable before the folder naming it). An error here is a failed write."""
    paths = [path]
    if path.is_dir() and not path.is_symlink():
        paths = []
        for root, _dirs, files in os.walk(path, topdown=False):
            paths += [Path(root, name) for name in files]
            paths.append(Path(root))
    for p in paths:
        if not p.is_symlink():
            _fsync(p)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths with Linux ``renameat2(RENAME_EXCHANGE)``; False where it is not available."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    c_int, c_path = ctypes.c_int, ctypes.c_char_p
    renameat2.argtypes = [c_int, c_path, c_int, c_path, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(err, os.strerror(err), os.fspath(b))


def is_zarr_store(path: Path) -> bool:
    """Whether a directory holds a zarr store (version 3 or 2 metadata at its root)."""
    return any((path / name).exists() for name in ("zarr.json", ".zgroup", ".zarray"))


def _check_replaceable(final: Path, *, file: bool = False) -> None:
    """A StoreError where writing ``final`` would delete a directory that is not an output of
    the same kind: one that is no zarr store (someone's folder, whatever its name), or a store
    that a ``file`` would replace."""
    if not final.is_dir() or final.is_symlink():
        return
    if not is_zarr_store(final):
        raise StoreError(
            f"cannot write {final}: it is a directory that is not a zarr store, and writing "
            "would delete it; remove it yourself or write elsewhere"
        )
    if file:
        raise StoreError(
            f"cannot write {final}: it is a zarr store (a directory), and writing this file "
            "there would delete it; remove it yourself or write elsewhere"
        )


def _swap(tmp: Path, final: Path) -> Path | None:
    """Move ``tmp`` onto ``final``; return where the previous output is now (kept until the
    caller deletes it, so that it can be put back), or None (there was none, or a file was
    replaced where paths cannot be exchanged)."""
    if not final.exists() and not final.is_symlink():
        os.replace(tmp, final)
        return None
    if _exchange(tmp, final):  # tmp now holds the previous output
        return tmp
    both_files = not tmp.is_dir() and (final.is_symlink() or not final.is_dir())
    if both_files:
        os.replace(tmp, final)  # atomic for files
        return None
    aside = _sibling(final, _OLD)
    os.replace(final, aside)
    try:
        os.replace(tmp, final)
    except BaseException:
        os.replace(aside, final)  # put the previous output back
        raise
    return aside


def _output_of(exc: BaseException, tmps: list[Path], finals: list[Path]) -> Path | None:
    """The output whose temporary an OSError names (a read-only directory, a full disk), or
    None (another error, or one about an input)."""
    if not isinstance(exc, OSError) or not exc.errno or exc.filename is None:
        return None
    named = Path(os.fsdecode(exc.filename))
    for tmp, final in zip(tmps, finals, strict=True):
        if named == tmp or tmp in named.parents:
            return final
    return None


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM while the block runs, then raise them as they came (in the main
    thread, where Python runs its signal handlers; elsewhere nothing is held). A Ctrl-C that
    arrived while a set's renames were under way left one rename done and not recorded, so
    that the set was put back all but that one: a new key among the previous systems."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    kinds = [s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) is not None]
    previous = {kind: signal.signal(kind, lambda signum, _: held.append(signum)) for kind in kinds}
    try:
        yield
    finally:
        for kind, handler in previous.items():
            signal.signal(kind, handler)
        for signum in dict.fromkeys(held):
            signal.raise_signal(signum)


def _put_back(swapped: list[tuple[Path, Path | None, bool]]) -> None:
    """Undo the renames of a set of outputs cut short: each previous output back in place
    (the new one deleted), or the new one deleted where there was none before. (A file that
    replaced another where paths cannot be exchanged stays: the previous one is gone.)"""
    for final, old, existed in reversed(swapped):
        if old is not None:
            remove_path(_swap(old, final) or old)
        elif not existed:
            remove_path(final)


def _let_zarr_finish(timeout_s: float = 10.0) -> None:
    """Wait (at most ``timeout_s``) for the writes that zarr's event-loop thread has under way.

    zarr runs its I/O in a thread of its own, which an interrupt of the main thread does not
    stop: a store's metadata files were still being written after its temporary was deleted,
    which left a hidden ``.NAME.tmp-*`` behind and printed asyncio's "Task was destroyed but it
    is pending". Nothing to wait for where zarr was never imported.
    """
    sync = sys.modules.get("zarr.core.sync")
    loop = getattr(sync, "loop", [None])[0]
    if loop is None or loop.is_closed() or not loop.is_running():
        return

    async def drain() -> None:
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        if pending:
            await asyncio.wait(pending, timeout=timeout_s)

    with contextlib.suppress(Exception):
        asyncio.run_coroutine_threadsafe(drain(), loop).result(timeout_s + 1)


@contextlib.contextmanager
def atomic_paths(final_paths: Sequence[str | os.PathLike[str]]) -> Iterator[list[Path]]:
    """:func:`atomic_path` for outputs that must appear together: renamed one right after the other
    when the block exits normally, previous outputs deleted after the last rename (and put back
    where a rename fails or is interrupted: the previous set stays whole). A StoreError if a
    directory does not exist, the block did not create a temporary, or an output would replace a
    directory that is no zarr store, or a store by a file (never deleted silently). A link is
    written through (its target replaced); a device, FIFO or socket is yielded as it is and
    written in place (not atomic: there is nothing to rename).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_paths([d / "a.txt", d / "b.txt"]) as (a, b):
    ...     _ = a.write_text("a")
    ...     _ = b.write_text("b")
    ...     sorted(p.name for p in d.iterdir() if not p.name.startswith("."))
    []
    >>> sorted(p.name for p in d.iterdir())
    ['a.txt', 'b.txt']
    """
    given = [Path(p) for p in final_paths]
    in_place = [written_in_place(p) for p in given]
    finals = [_through_links(p) for p, direct in zip(given, in_place, strict=True) if not direct]
    for path in (p for p, direct in zip(given, in_place, strict=True) if not direct):
        check_folder(path)
    for final in finals:
        if len(os.fsencode(final.name)) > _NAME_MAX - len(f".{_TMP}") - 12:
            raise StoreError(f"cannot write {final}: its name is too long for the hidden "
                             f"temporary beside it (at most {_NAME_MAX - 18} bytes)")  # fmt: skip
        remove_stale(final)  # what killed writers of this output left, an hour old or more
    tmps = [_sibling(final, _TMP) for final in finals]
    built = iter(tmps)
    swapped: list[tuple[Path, Path | None, bool]] = []  # (in place, previous one, existed)
    try:
        yield [p if direct else next(built) for p, direct in zip(given, in_place, strict=True)]
        for tmp, final in zip(tmps, finals, strict=True):
            if not tmp.exists():
                raise StoreError(f"nothing was written for {final}")
            _check_replaceable(final, file=not tmp.is_dir())
        if config.get("fsync"):
            for tmp in tmps:
                _fsync_tree(tmp)
        with _signals_held():  # an interrupt between a rename and its record: a mixed set
            for tmp, final in zip(tmps, finals, strict=True):
                existed = final.exists() or final.is_symlink()
                swapped.append((final, _swap(tmp, final), existed))  # _swap: all or nothing
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):  # (a SIGTERM too): writes may still be under way
            _let_zarr_finish()
        _put_back(swapped)
        for path in tmps:
            remove_path(path)
        failed = _output_of(exc, tmps, finals)
        if failed is not None:  # say the output, not its hidden temporary
            raise StoreError(f"cannot write {failed}: {os.strerror(exc.errno)}") from exc
        raise
    for _, old, _ in swapped:
        if old is not None:
            remove_path(old)
    for directory in dict.fromkeys(final.parent for final in finals):
        with contextlib.suppress(OSError):  # the renames made durable, best effort
            _fsync(directory)


@contextlib.contextmanager
def atomic_path(final_path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary sibling path that replaces ``final_path`` when the block exits normally;
    when it raises, the temporary is deleted; a killed process leaves only a hidden ``.NAME.tmp-*``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> final = pathlib.Path(tempfile.mkdtemp()) / "store.zarr"
    >>> try:
    ...     with atomic_path(final) as tmp:
    ...         tmp.mkdir()
    ...         raise RuntimeError("interrupted")
    ... except RuntimeError:
    ...     pass
    >>> final.exists(), sorted(p.name for p in final.parent.iterdir())
    (False, [])
    """
    with atomic_paths([final_path]) as (tmp,):
        yield tmp


def remove_stale(final_path: str | os.PathLike[str], *, min_age_s: float = 3600.0) -> list[Path]:
    """Clean up after killed writers of ``final_path``: move a set-aside previous output back if
    ``final_path`` is missing, delete ``.NAME.tmp-*`` and ``.NAME.old-*`` older than ``min_age_s``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> final = pathlib.Path(tempfile.mkdtemp()) / "s.h5"
    >>> _ = (final.parent / ".s.h5.tmp-0123456789ab").write_text("partial")
    >>> [p.name for p in remove_stale(final, min_age_s=0)]
    ['.s.h5.tmp-0123456789ab']
    """
    final = Path(final_path)
    parent = final.parent
    if not parent.is_dir():
        return []
    now = time.time()

    def stale(p: Path) -> bool:
        try:
            return now - p.lstat().st_mtime >= min_age_s
        except FileNotFoundError:
            return False

    olds = sorted(parent.glob(f".{final.name}{_OLD}*"), key=lambda p: p.lstat().st_mtime)
    if olds and stale(olds[-1]) and not final.exists():
        os.replace(olds.pop(), final)  # the newest set-aside output is the previous one
    removed = [p for p in [*parent.glob(f".{final.name}{_TMP}*"), *olds] if stale(p)]
    for p in removed:
        remove_path(p)
    return sorted(removed)
