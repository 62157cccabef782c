"""Staging data where every worker can read it: large text inputs as scratch-file memmaps,
in-memory inputs put on a cluster's workers once (:func:`on_the_workers`), and scores in
another id order than the key's realigned once (:func:`realign`; a lazy reindex shuffles every
chunk with every other in every pass).
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
import warnings
from typing import Any

import dask
import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask.errors import ClusterError, StoreError
from bosaris_dask.io.atomic import refuse_inside_store
from bosaris_dask.io.compute import as_dask
from bosaris_dask.io.text.scratch import SCRATCH_CONFIG, _ScratchArray, _ScratchFile
from bosaris_dask.io.worker_paths import for_workers
from bosaris_dask.progress import compute, current_client

__all__ = [
    "realign", "scratch_directory", "check_staged_readable", "workers_off_this_host",
    "on_the_workers", "SCRATCH_CONFIG",
]  # fmt: skip

_log = logging.getLogger("bosaris_dask.io")

#: What to do about data staged where workers on other hosts cannot read it.
_SHARED_SCRATCH = "pass --scratch-dir DIR (scratch= in Python) with DIR shared by all hosts"
#: ... and about a text input staged so.
_WAY_OUT = ("convert it first (bosaris-dask convert {source} {source}.zarr, on a shared file "
            "system) or " + _SHARED_SCRATCH)  # fmt: skip
#: The fill value of each data variable where an alignment adds rows or columns.
_FILL = {"trial_mask": 0, "score": 0.0, "score_mask": False}


def _local_addresses() -> set[str]:
    names = {"localhost", "127.0.0.1", "::1", "", socket.gethostname(), socket.getfqdn()}
    for name in list(names):
        try:
            names.update(socket.gethostbyname_ex(name)[2])
        except OSError:
            continue
    return names


def _is_this_host(host: str) -> bool:
    """Whether a worker's host (name or address) is this machine."""
    return host in _local_addresses() or host.startswith("127.")


def workers_off_this_host(client: Any = None) -> list[str]:
    """Addresses of the active distributed client's workers on other hosts."""
    client = client if client is not None else current_client()
    if client is None:
        return []
    workers = client.scheduler_info(n_workers=-1).get("workers", {})
    off = []
    for address, info in workers.items():
        host = info.get("host") or address.split("://")[-1].rsplit(":", 1)[0]
        if not _is_this_host(host):
            off.append(address)
    return sorted(off)


def scratch_directory(
    scratch: str | os.PathLike[str] | None = None, *, what: str = "", converts: bool = True
) -> str:
    """The directory for staged data: ``scratch``, else the dask config :data:`SCRATCH_CONFIG`, else
    the temporary folder, refused (ClusterError) when workers run on other hosts. ``what``: the
    data (a text file's path where ``converts``: converting it would do too).
    """
    given = scratch if scratch is not None else dask.config.get(SCRATCH_CONFIG, None)
    if given is not None:
        if not os.path.isdir(given):
            why = "is not a directory" if os.path.exists(given) else "does not exist"
            raise StoreError(f"scratch directory {os.fspath(given)} {why}")
        refuse_inside_store(f"scratch files in {os.fspath(given)}", given)
        return for_workers(given)  # the staged files are opened by the workers
    off = workers_off_this_host()
    if off:
        raise ClusterError(
            f"{what + ': ' if what else ''}staging it in this machine's temporary folder would "
            f"leave it unreadable by {len(off)} worker(s) on other hosts (e.g. {off[0]}); "
            + (_WAY_OUT.format(source=what or "INPUT") if converts else _SHARED_SCRATCH)
        )
    return tempfile.gettempdir()


def check_staged_readable(client: Any = None) -> None:
    """Raise ClusterError for inputs staged in this machine's temporary folder when workers run on
    other hosts.
    """
    from bosaris_dask.io.text.scratch import _UNSHARED

    staged = sorted({f.staged for f in list(_UNSHARED.values()) if f.staged})
    if not staged:
        return
    off = workers_off_this_host(client)
    if off:
        raise ClusterError(
            f"{staged[0]}: this text input was staged in this machine's temporary folder, which "
            f"{len(off)} worker(s) on other hosts (e.g. {off[0]}) cannot read; "
            + _WAY_OUT.format(source=staged[0])
        )


class _FlatFile:
    """A C-order matrix in a flat file written block by block with ``pwrite`` (safe from many
    processes and hosts); picklable by path.
    """

    def __init__(self, path: str, shape: tuple[int, int], dtype: np.dtype):
        self.path, self.shape, self.dtype = path, shape, np.dtype(dtype)

    def __setitem__(self, key: tuple[slice, slice], block: np.ndarray) -> None:
        rows, cols = key
        block = np.ascontiguousarray(block, dtype=self.dtype)
        row_bytes, item = self.shape[1] * self.dtype.itemsize, self.dtype.itemsize
        fd = os.open(self.path, os.O_WRONLY)
        try:
            for k, row in enumerate(range(rows.start, rows.stop)):
                os.pwrite(fd, block[k].tobytes(), row * row_bytes + cols.start * item)
        finally:
            os.close(fd)


def _gather(
    rows: np.ndarray, cols: np.ndarray, *, source: _ScratchArray, fill: Any, identity: bool
) -> np.ndarray:
    """The cells ``(rows, cols)`` of ``source`` (-1: the fill value)."""
    out = np.full((len(rows), len(cols)), fill, dtype=source.dtype)
    r_ok = np.flatnonzero(rows >= 0)
    if identity:  # the columns of this chunk are a contiguous run of the source's
        out[r_ok] = source[(rows[r_ok], slice(int(cols[0]), int(cols[0]) + len(cols)))]
    else:
        c_ok = np.flatnonzero(cols >= 0)
        out[np.ix_(r_ok, c_ok)] = source[np.ix_(rows[r_ok], cols[c_ok])]
    return out


def _stage(arr: da.Array, scratch: str) -> tuple[_ScratchFile, da.Array]:
    """A flat scratch file of ``arr``'s shape, and the lazy store of ``arr`` into it."""
    owner = _ScratchFile(scratch)
    with open(owner.path, "wb") as f:
        f.truncate(arr.shape[0] * arr.shape[1] * arr.dtype.itemsize)
    target = _FlatFile(owner.path, arr.shape, arr.dtype)
    return owner, da.store(arr, target, lock=False, compute=False)


def realign(
    obj: xr.Dataset,
    rows: np.ndarray,
    cols: np.ndarray,
    chunks: tuple[tuple[int, ...], tuple[int, ...]],
    *,
    models: Any = None,
    segments: Any = None,
) -> xr.Dataset:
    """``obj`` reordered by index maps, one task per chunk and no shuffle: each matrix is copied
    once to a flat scratch file, and each chunk of the result gathered from it.

    Parameters
    ----------
    obj
        A trial object with lazy (dask) matrices.
    rows, cols
        For each row (column) of the result, the row (column) of ``obj``, or -1 (no trial).
    chunks
        The chunks of the result.
    models, segments
        The ids of the result (default: those of ``obj`` picked by ``rows``, ``cols``).

    Examples
    --------
    >>> import numpy as np
    >>> from bosaris_dask.trials import make_scores
    >>> scores = make_scores(["m", "n"], ["s"], np.array([[1.0], [2.0]]))
    >>> realign(scores, np.array([1, -1]), np.array([0]), ((2,), (1,))).score.values.tolist()
    [[2.0], [0.0]]
    """
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    names = [n for n in obj.data_vars if n in _FILL]
    directory = scratch_directory(
        what="scores in another id order than the key's", converts=False
    )  # (converted, they keep their order)
    owners, stores = {}, []
    for name in names:
        owners[name], store = _stage(as_dask(obj[name].data), directory)
        stores.append(store)
    compute(stores)
    identity = bool(len(cols) and (cols == np.arange(cols[0], cols[0] + len(cols))).all())
    row_ids = da.from_array(rows, chunks=(chunks[0],))
    col_ids = da.from_array(cols, chunks=(chunks[1],))
    data_vars = {}
    for name in names:
        dtype = obj[name].dtype
        source = _ScratchArray(owners[name], owners[name].path, obj[name].shape, dtype)
        fill = np.asarray(_FILL[name]).astype(dtype)
        data_vars[name] = (
            ("model", "segment"),
            da.blockwise(
                *(_gather, "ij", row_ids, "i", col_ids, "j"),
                source=source,
                fill=fill,
                identity=identity,
                dtype=dtype,
                name=f"realigned-{name}-{os.path.basename(owners[name].path)}",
                meta=np.empty((0, 0), dtype=dtype),
            ),
        )
    pick = {"model": (models, rows), "segment": (segments, cols)}
    coords = {
        dim: ids if ids is not None else obj[dim].values[index]
        for dim, (ids, index) in pick.items()
    }
    _log.info(
        "ids in another order than the key's: realigned once through %s (%d chunks)",
        directory,
        len(chunks[0]) * len(chunks[1]),
    )
    return xr.Dataset(data_vars, coords=coords, attrs=dict(obj.attrs))


#: Bytes of in-memory data in the graphs of an object's matrices (all of them together) from
#: which they are sent to a cluster once.
SCATTER_FROM = 2**20


def _literal(value: Any) -> np.ndarray | None:
    """The numpy data a graph holds as ``value`` (a memmap is read by its task: not held)."""
    value = getattr(value, "value", value)  # a dask DataNode holds its data so
    if isinstance(value, np.ndarray) and not isinstance(value, np.memmap):
        return value
    return None


def _literal_layers(arr: da.Array) -> dict[str, dict[Any, np.ndarray]]:
    """The layers of ``arr``'s graph that only hold numpy data (a text, MAT or npz file read
    into memory), by name."""
    found = {}
    for name, layer in arr.__dask_graph__().layers.items():
        if not layer.is_materialized():
            continue  # e.g. blockwise work, or a store's reader: no data in the graph
        values = {key: _literal(value) for key, value in layer.items()}
        if values and all(v is not None for v in values.values()):
            found[name] = values
    return found


def _held_layers(arrays: list[da.Array]) -> dict[str, dict[Any, np.ndarray]]:
    """The layers of numpy data the graphs of ``arrays`` hold, each once (by name)."""
    return {name: layer for arr in arrays for name, layer in _literal_layers(arr).items()}


def _held_bytes(layers: dict[str, dict[Any, np.ndarray]]) -> int:
    return sum(v.nbytes for layer in layers.values() for v in layer.values())


def _in_memory_bytes(arr: da.Array) -> int:
    """Bytes of numpy data held in ``arr``'s graph itself."""
    return _held_bytes(_held_layers([arr]))


def _send(layers: dict[str, dict[Any, np.ndarray]], client: Any) -> None:
    """Send the numpy data of ``layers`` (:func:`_held_layers`) to ``client``'s workers once,
    as tasks of their own (recomputable where a worker is lost), and record them, so that every
    graph holding the same data names them instead (:mod:`.scattered`)."""
    from bosaris_dask.io import scattered

    layers = {name: layer for name, layer in layers.items() if scattered.recordable(name)}
    data = {key: value for layer in layers.values() for key, value in layer.items()}
    if not data:
        return
    with warnings.catch_warnings():  # (sent once: what distributed's warnings ask for)
        warnings.filterwarnings("ignore", "Sending large graph", UserWarning)
        futures = dict(zip(data, client.get(data, list(data), sync=False), strict=True))
    for name, layer in layers.items():
        scattered.remember(client, name, {key: futures[key] for key in layer})


def _matrices(obj: Any) -> list[da.Array]:
    """The dask arrays of the Datasets in ``obj`` and in the tuples, lists and dicts it holds."""
    if isinstance(obj, tuple | list):
        return [arr for item in obj for arr in _matrices(item)]
    if isinstance(obj, dict):
        return [arr for item in obj.values() for arr in _matrices(item)]
    if isinstance(obj, xr.Dataset):
        return [v.data for v in obj.data_vars.values() if isinstance(v.data, da.Array)]
    return []


def on_the_workers(obj: Any, client: Any = None) -> Any:
    """Send the in-memory data of ``obj``'s matrices to the distributed client's workers once;
    returns ``obj`` as it is.

    A text, MAT or npz input is read into this process; its data sit in the graph of every pass,
    and a distributed scheduler is sent them again with each pass (distributed warns "Sending
    large graph"). Sent once, as tasks of their own (a worker lost with a piece gets it again
    from the scheduler), and recorded (:mod:`~bosaris_dask.io.scattered`), they are named
    instead of sent by every graph the package computes on that client
    (:mod:`bosaris_dask.progress` rewrites each, and :func:`bosaris_dask.io.write` the object it
    writes), whatever object it comes from (e.g. the screens that compute scores from
    embeddings); nothing else is computed. ``obj`` itself is not changed, so it stays usable
    after a ``client.restart()``, on another client or without one. The data live on the workers
    as long as the client, until a restart, or until :func:`bosaris_dask.io.scattered.forget`
    (the CLI calls this once its cluster is up, and that when its command ends).

    Datasets are looked for in ``obj`` and in the tuples, lists and dicts it holds. Nothing is
    sent without a distributed client (:func:`current_client`), or when all of their matrices
    together hold under :data:`SCATTER_FROM` bytes in memory (twelve systems of 0.8 MB each
    went with every pass when the bound was per matrix).

    Examples
    --------
    >>> import numpy as np
    >>> from bosaris_dask.trials import make_scores
    >>> scores = make_scores(["m"], ["s"], np.array([[1.0]]))
    >>> on_the_workers(scores) is scores  # no client: nothing to do
    True
    """
    client = client if client is not None else current_client()
    if client is None:
        return obj
    from bosaris_dask.io.scattered import named

    # (data already sent, e.g. with another object, are named, not counted again)
    layers = _held_layers([named(arr, client) for arr in _matrices(obj)])
    if _held_bytes(layers) >= SCATTER_FROM:  # (a layer several matrices hold counts once)
        _send(layers, client)
        _log.debug("in-memory data sent to the workers once")
    return obj
