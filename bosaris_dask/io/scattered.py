"""In-memory data sent to a cluster's workers once, and every later graph made to name them.

:func:`~bosaris_dask.io.staging.on_the_workers` sends the numpy data a trial object's graph
holds (a text, MAT or npz file read into memory) to the workers as tasks of their own and
records the layers here (:func:`remember`); the object itself is left as it is. Every graph that
holds the same data, the object's own passes or one made later (e.g. the screens that compute
scores from embeddings in each pass), still holds them: :func:`named` replaces each such layer
by the workers' copies, and :mod:`bosaris_dask.progress` applies it to everything it computes on
a distributed client, so the data go over the network once, not with each pass. Only layers
named by dask from their data (``da.from_array``'s ``array-<hash>``) are recorded, so a graph
that names one holds the same data. The data stay recomputable: a worker lost with a piece gets
it again from the scheduler, which keeps each task.

The records of a client are dropped when it has closed, when their futures are cancelled (a
``client.restart()``), or by :func:`forget` (the CLI's, when its command ends); until then the
workers keep the data.
"""

from __future__ import annotations

import re
import threading
import weakref
from typing import Any

import dask.array as da
import xarray as xr
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

__all__ = ["remember", "forget", "recorded", "named", "recordable", "rebuilt"]

#: By client id: the client (weakly) and its recorded layers, by name, as ``{key: Future}``.
_LAYERS: dict[str, tuple[Any, dict[str, dict[Any, Any]]]] = {}
_LOCK = threading.Lock()

#: The names dask gives a layer of in-memory data from the data's hash (``da.from_array``).
_HASHED = re.compile(r"array-[0-9a-f]{32}")


def recordable(name: str) -> bool:
    """Whether a layer of in-memory data is named by its data's hash, so that recording it
    cannot give another graph's layer of that name other data (a name chosen by hand could)."""
    return _HASHED.fullmatch(name) is not None


def remember(client: Any, name: str, futures: dict[Any, Any]) -> None:
    """Record the layer ``name`` of a graph as on ``client``'s workers."""
    with _LOCK:
        _, layers = _LAYERS.setdefault(client.id, (_ref(client), {}))
        layers[name] = futures


def _ref(client: Any) -> Any:
    try:
        return weakref.ref(client)
    except TypeError:  # (an object without weak references: held)
        return lambda: client


def forget(client: Any, keep: frozenset[str] = frozenset()) -> None:
    """Drop the records of ``client`` but those of the layers named in ``keep`` (its data are
    released once nothing else holds them)."""
    with _LOCK:
        entry = _LAYERS.get(client.id)
        if entry is None:
            return
        kept = {name: futures for name, futures in entry[1].items() if name in keep}
        if kept:
            _LAYERS[client.id] = (entry[0], kept)
        else:
            _LAYERS.pop(client.id)


def recorded(client: Any) -> frozenset[str]:
    """The names of the layers recorded as on ``client``'s workers."""
    with _LOCK:
        entry = _LAYERS.get(client.id)
        return frozenset(entry[1]) if entry is not None else frozenset()


def _layers_of(client: Any) -> dict[str, dict[Any, Any]]:
    with _LOCK:
        for cid, (ref, _) in list(_LAYERS.items()):  # (clients gone or closed)
            other = ref()
            if other is None or getattr(other, "status", "running") in ("closing", "closed"):
                _LAYERS.pop(cid, None)
        entry = _LAYERS.get(client.id)
        if entry is None:
            return {}
        # (a restart or a lost connection cancels the futures: their data are gone)
        gone = [name for name, futures in entry[1].items() if not _held(futures)]
        for name in gone:
            del entry[1][name]
        if not entry[1]:
            _LAYERS.pop(client.id)
        return dict(entry[1])


def _held(futures: dict[Any, Any]) -> bool:
    """Whether every future of a layer still holds (or will hold) its piece: not cancelled (a
    piece ``"lost"`` with its worker is computed again, the data being sent as tasks)."""
    return all(getattr(f, "status", "finished") != "cancelled" for f in futures.values())


def _graph(graph: HighLevelGraph, layers: dict[str, dict[Any, Any]]) -> HighLevelGraph | None:
    """``graph`` with its recorded layers naming the workers' copies, or ``None``: none."""
    hits = [n for n, layer in graph.layers.items() if n in layers and set(layer) == set(layers[n])]
    if not hits:
        return None
    new = dict(graph.layers)
    for name in hits:
        new[name] = MaterializedLayer(layers[name])
    return HighLevelGraph(new, graph.dependencies)


def named(x: Any, client: Any) -> Any:
    """``x`` (a dask array or delayed value, an xarray object over dask arrays, or a tuple, list
    or dict of them) whose graphs name the data recorded as on ``client``'s workers instead of
    holding them."""
    layers = _layers_of(client)
    return _named(x, layers) if layers else x


def rebuilt(sequence: tuple | list, items: list[Any]) -> tuple | list:
    """``items`` in a sequence of ``sequence``'s type (a namedtuple's fields by position)."""
    kind = type(sequence)
    return kind(*items) if hasattr(sequence, "_fields") else kind(items)


def _named_variable(variable: xr.Variable, layers: dict[str, dict[Any, Any]]) -> xr.Variable:
    """``variable`` over the workers' copies of its data, or itself (nothing of it recorded)."""
    if not isinstance(variable.data, da.Array):
        return variable
    data = _named(variable.data, layers)
    return variable if data is variable.data else variable.copy(data=data)


def _named(x: Any, layers: dict[str, dict[Any, Any]]) -> Any:
    if isinstance(x, tuple | list):
        return rebuilt(x, [_named(item, layers) for item in x])
    if isinstance(x, dict):
        return {k: _named(v, layers) for k, v in x.items()}
    if isinstance(x, xr.DataArray):
        variable = _named_variable(x.variable, layers)
        return x if variable is x.variable else x.copy(data=variable.data)
    if isinstance(x, xr.Dataset):
        changed = {name: new for name, v in x.variables.items()
                   if (new := _named_variable(v, layers)) is not v}  # fmt: skip
        return x.assign(changed) if changed else x
    graph = x.__dask_graph__() if isinstance(x, da.Array | Delayed) else None
    if not isinstance(graph, HighLevelGraph) or (new := _graph(graph, layers)) is None:
        return x
    if isinstance(x, da.Array):
        return da.Array(new, x.name, x.chunks, meta=x._meta)
    return Delayed(x.key, new, length=getattr(x, "_length", None), layer=x._layer)
