"""In-memory data sent to a cluster's workers once, and every later graph made to name them.

:func:`~bosaris_dask.io.staging.on_the_workers` scatters the numpy data a trial object's graph
holds (a text, MAT or npz file read into memory) under their own keys and records the layers
here (:func:`remember`). A graph made later from the same data, e.g. the screens that compute
scores from embeddings in each pass, still holds them: :func:`named` replaces each such layer by
the workers' copies, and :mod:`bosaris_dask.progress` applies it to everything it computes on a
distributed client, so the data go over the network once, not with each pass. A layer's keys
are its data's hash (``da.from_array``), so a graph that names them means the same data.
The records of a client end when it closes (:func:`forget` drops them sooner).
"""

from __future__ import annotations

from typing import Any

import dask.array as da
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

__all__ = ["remember", "forget", "named"]

#: By client id: the scattered layers, by name, as ``{key: Future}``.
_LAYERS: dict[str, dict[str, dict[Any, Any]]] = {}


def remember(client: Any, name: str, futures: dict[Any, Any]) -> None:
    """Record the layer ``name`` of a graph as scattered on ``client``'s workers."""
    _LAYERS.setdefault(client.id, {})[name] = futures


def forget(client: Any) -> None:
    """Drop the records of ``client`` (its data are released once nothing else holds them)."""
    _LAYERS.pop(client.id, None)


def _layers_of(client: Any) -> dict[str, dict[Any, Any]]:
    for gone in [cid for cid in _LAYERS if cid != client.id]:  # (clients closed or replaced)
        _LAYERS.pop(gone)
    return _LAYERS.get(client.id, {})


def _graph(graph: HighLevelGraph, layers: dict[str, dict[Any, Any]]) -> HighLevelGraph | None:
    """``graph`` with its recorded layers naming the workers' copies, or ``None``: none."""
    hits = [name for name in graph.layers if name in layers]
    if not hits:
        return None
    new = dict(graph.layers)
    for name in hits:
        new[name] = MaterializedLayer(layers[name])
    return HighLevelGraph(new, graph.dependencies)


def named(x: Any, client: Any) -> Any:
    """``x`` (a dask array or delayed value, or a tuple, list or dict of them) whose graphs name
    the data recorded as on ``client``'s workers instead of holding them."""
    layers = _layers_of(client)
    if not layers:
        return x
    if isinstance(x, tuple | list):
        return type(x)(named(item, client) for item in x)
    if isinstance(x, dict):
        return {k: named(v, client) for k, v in x.items()}
    graph = x.__dask_graph__() if isinstance(x, da.Array | Delayed) else None
    if not isinstance(graph, HighLevelGraph) or (new := _graph(graph, layers)) is None:
        return x
    if isinstance(x, da.Array):
        return da.Array(new, x.name, x.chunks, meta=x._meta)
    return Delayed(x.key, new, length=getattr(x, "_length", None), layer=x._layer)
