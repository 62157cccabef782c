"""The dense trial object of the collected records, in memory or in scratch memmaps."""

from __future__ import annotations

import os
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask.errors import ParseError
from bosaris_dask.io.text.collect import _Collector
from bosaris_dask.io.text.scratch import _ScratchArray, _ScratchFile
from bosaris_dask.trials import make_key, make_ndx, make_scores

#: Dense outputs larger than this many bytes are backed by a scratch-file memmap.
MEMMAP_THRESHOLD = 256 * 2**20
_DENSE = {
    "scores": (("score", np.float64), ("score_mask", np.bool_)),
    "key": (("trial_mask", np.int8),),
    "ndx": (("trial_mask", np.bool_),),
}


def _assemble(
    collector: _Collector,
    path: Any,
    chunks: Any,
    scratch_dir: str | os.PathLike[str] | None,
    memmap_threshold: int,
) -> xr.Dataset:
    kind = collector.kind
    if collector.n == 0:
        raise ParseError("no trials in the file", path=path, line=max(collector.last_line, 1))
    models, segments = list(collector.models), list(collector.segments)
    shape = (len(models), len(segments))
    cells = shape[0] * shape[1]
    spec = _DENSE[kind]
    in_memmap = cells * sum(np.dtype(dt).itemsize for _, dt in spec) > memmap_threshold
    owners: dict[str, _ScratchFile] = {}
    flat: dict[str, np.ndarray] = {}
    try:
        for name, dt in spec:
            if in_memmap:
                owners[name] = _ScratchFile(scratch_dir, staged=os.fspath(path))
                flat[name] = np.memmap(owners[name].path, dtype=dt, mode="w+", shape=(cells,))
            else:
                flat[name] = np.zeros(cells, dtype=dt)
        mask = flat[spec[-1][0]]
        for _, lin, records in collector.linear():
            if kind == "scores":
                flat["score"][lin] = records["v"]
                mask[lin] = True
            elif kind == "key":
                mask[lin] = records["v"]
            else:
                mask[lin] = True
        if np.count_nonzero(mask) != collector.n:
            mask[:] = 0
            _raise_duplicate(collector, mask, path, models, segments)
        for arr in flat.values():
            if isinstance(arr, np.memmap):
                arr.flush()
    except BaseException:
        flat.clear()
        for owner in owners.values():
            owner.remove()
        raise
    data: dict[str, Any] = {}
    if in_memmap:
        flat.clear()  # unmap the writable views
        chunks = da.core.normalize_chunks(
            "auto" if chunks is None else chunks, shape, dtype=spec[0][1]
        )
        for name, dt in spec:
            source = _ScratchArray(owners[name], owners[name].path, shape, dt)
            label = f"text-{name}-{os.path.basename(owners[name].path)}"
            data[name] = da.from_array(source, chunks=chunks, name=label)
    else:
        data = {name: arr.reshape(shape) for name, arr in flat.items()}
    if kind == "scores":
        return make_scores(models, segments, data["score"], data["score_mask"], chunks=chunks)
    if kind == "key":
        return make_key(models, segments, data["trial_mask"], chunks=chunks)
    return make_ndx(models, segments, data["trial_mask"], chunks=chunks)


def _raise_duplicate(
    collector: _Collector, seen: np.ndarray, path: Any, models: list[str], segments: list[str]
) -> None:
    """Find the first trial given twice (``seen`` is a zeroed scratch of the dense size)."""
    second = cell = None
    for start, lin, _ in collector.linear():
        found = []
        again = np.flatnonzero(seen[lin])
        if again.size:
            found.append(int(again[0]))
        order = np.argsort(lin, kind="stable")
        same = np.flatnonzero(lin[order][1:] == lin[order][:-1])
        if same.size:
            found.append(int(order[same + 1].min()))
        if found:
            second, cell = start + min(found), int(lin[min(found)])
            break
        seen[lin] = 1
    if second is None or cell is None:  # cannot happen: the counts disagreed
        raise ParseError("duplicate trials", path=path)
    first = next(
        start + int(np.flatnonzero(lin == cell)[0])
        for start, lin, _ in collector.linear()
        if np.any(lin == cell)
    )
    m, s = divmod(cell, len(segments))
    raise ParseError(
        f"trial ({models[m]!r}, {segments[s]!r}) is given twice, first on line "
        f"{collector.line_of(first)}",
        path=path,
        line=collector.line_of(second),
    )
