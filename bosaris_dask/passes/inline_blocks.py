"""Small per-row and per-column arrays handed to the tasks of a trial matrix inline.

A trial matrix comes with per-row and per-column values that are tiny next to its chunks: a
label-derived key's label codes, the codes of a condition, the rows' positions. Made dask arrays
(``da.from_array``, ``da.arange``), each of their blocks is a task of its own, which dask does
not fuse into the 2-D tasks that broadcast it, and whose result the scheduler ships to them: at
1e9 trials in 60 chunks, a label-derived key added 61 such tasks to every pass, and the rows'
positions 61 more to pass 1, almost half of an evaluation's tasks. On a distributed cluster
every task costs the scheduler, which shares the cores with the workers.

:func:`per_block` splits such an array along its chunks into a block dependency of dask's
(:class:`dask.layers.ArrayValuesDep`): each task gets its block's slice as an argument, and no
task is made for it. :func:`blockwise` is :func:`dask.array.blockwise` taking them among its
arguments, next to dask arrays. A block that many tasks reuse (the column codes of a key whose
chunks are whole rows: every row chunk's task takes all of them) would travel with each of them
to a worker process; past :data:`INLINE_BYTES` of such copies, :func:`blockwise` makes the
blocks keys of the graph instead, which a worker fetches once.

Examples
--------
>>> import dask
>>> import numpy as np
>>> rows = per_block(np.arange(6), (3, 3))
>>> x = da.ones((6, 2), chunks=(3, 2))
>>> y = blockwise(lambda r, b: b * r[:, None], "ij", rows, "i", x, "ij", dtype=float)
>>> y.sum(axis=1).compute().tolist()
[0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
>>> len(dask.optimize(y)[0].__dask_graph__())  # one task per chunk, none for the rows
2
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import dask.array as da
import numpy as np
from dask.base import normalize_token, tokenize
from dask.layers import ArrayBlockwiseDep, ArrayValuesDep

__all__ = ["blockwise", "per_block", "INLINE_BYTES"]

#: The most bytes of a :func:`per_block` dependency's blocks that :func:`blockwise` copies into
#: tasks beyond each block's first use; above it, the blocks become keys of the graph.
INLINE_BYTES = 1 << 20


class _Blocks(ArrayValuesDep):
    """dask's :class:`~dask.layers.ArrayValuesDep`, named after all of its values: dask
    tokenizes that class by the ``repr`` of its values, which numpy shortens to the first and
    last three elements of an array of more than 1,000, so two arrays that differ only
    inside would get one name (and one graph would use one for both)."""

    def __init__(self, chunks: tuple[int, ...], blocks: dict, token: str):
        super().__init__((chunks,), blocks)
        self.token = token


@normalize_token.register(_Blocks)
def _normalize_blocks(dep: _Blocks) -> tuple[str, str]:
    return "inline_blocks", dep.token


def per_block(values: np.ndarray, chunks: Sequence[int]) -> ArrayValuesDep:
    """``values`` (1-D) split along ``chunks`` (block lengths), as a block dependency for
    :func:`blockwise` (index it with one letter, as a 1-D dask array)."""
    values = np.asarray(values)
    chunks = tuple(int(c) for c in chunks)
    if values.ndim != 1 or sum(chunks) != len(values):
        raise ValueError(f"chunks {chunks} do not split an array of shape {values.shape}")
    bounds = np.cumsum((0, *chunks)).tolist()
    blocks = {(k,): values[bounds[k] : bounds[k + 1]] for k in range(len(chunks))}
    return _Blocks(chunks, blocks, tokenize(values, chunks))


def blockwise(func: Callable[..., Any], out_ind: str, *args: Any, **kwargs: Any) -> da.Array:
    """:func:`dask.array.blockwise`, whose ``args`` may hold :func:`per_block` dependencies.

    The dask arrays among ``args`` are unified as :func:`dask.array.blockwise` unifies them; a
    dependency's blocks must then have the chunks of the arrays' axes with its letter.
    """
    pairs = list(zip(args[::2], args[1::2], strict=True))
    arrays = [(a, ind) for a, ind in pairs if ind is not None and isinstance(a, da.Array)]
    chunks: dict[str, tuple[int, ...]] = {}
    if arrays:
        chunks, unified = da.core.unify_chunks(*(x for pair in arrays for x in pair))
        replaced = iter(unified)
        pairs = [
            (next(replaced), ind) if ind is not None and isinstance(a, da.Array) else (a, ind)
            for a, ind in pairs
        ]  # fmt: skip
    for dep, ind in pairs:
        if not isinstance(dep, ArrayBlockwiseDep):
            continue
        for letter, c in zip(ind, dep.chunks, strict=True):
            if chunks.setdefault(letter, c) != c:
                raise ValueError(f"per-block values in chunks {c}, the arrays' {letter!r} "
                                 f"axis in {chunks[letter]}")  # fmt: skip
    pairs = [(_shared_blocks(dep, ind, chunks, out_ind), ind) for dep, ind in pairs]
    return da.blockwise(func, out_ind, *(x for pair in pairs for x in pair),
                        align_arrays=False, **kwargs)  # fmt: skip


def _shared_blocks(
    dep: Any, ind: str | None, chunks: dict[str, tuple[int, ...]], out_ind: str
) -> Any:
    """``dep`` as it is, or, for a :func:`per_block` dependency whose blocks every task along
    another axis reuses and which would be copied into the tasks more than
    :data:`INLINE_BYTES` in all, a dask array of the same blocks: one key per block, which a
    worker fetches once (a task's arguments travel with it to a worker process: the column
    codes of a key whose chunks are whole rows, 253 kB at 31,623 segments, went out with each
    of the 60 chunk tasks of every pass of a 1e9 evaluation)."""
    if not isinstance(dep, _Blocks) or ind is None:
        return dep
    reuse = int(np.prod([len(chunks[c]) for c in out_ind if c not in ind and c in chunks]))
    if reuse <= 1:  # each block goes to one task: nothing copied
        return dep
    blocks = [dep.values[(k,)] for k in range(dep.numblocks[0])]
    if sum(b.nbytes for b in blocks) * (reuse - 1) <= INLINE_BYTES:
        return dep
    return da.from_array(np.concatenate(blocks), chunks=dep.chunks, name=f"per-block-{dep.token}")
