"""Bringing a block of lines to the canonical form the fast parser takes, with vectorised bytes
operations: single separators, no whitespace at line edges, no blank lines.

Without a tab-separated header, fields are separated by runs of ASCII whitespace (as
``bytes.split`` sees it): tabs, CRs, vertical tabs and form feeds become spaces, runs of spaces
one space, and spaces at the edges of lines go. In a tab-separated table fields are kept as
they are (spaces may be part of an id). In both, blank lines (empty, or only whitespace) are
dropped, and the block index of each line kept is returned, so that errors still name the line
of the file.

Examples
--------
>>> from bosaris_dask.io.text.layout import _Layout
>>> layout = _Layout("ndx", None, 2, (("model", 0), ("segment", 1)), 0, 1)
>>> block, kept = _canonical(b"  a \\t b\\n\\n \\r\\nc d\\n", layout)
>>> block, kept.tolist()
(b'a b\\nc d\\n', [0, 3])
"""

from __future__ import annotations

import numpy as np

from bosaris_dask.io.text.layout import _Layout

_TO_SPACE = bytes.maketrans(b"\t\r\x0b\x0c", b"    ")
_IS_WS = np.zeros(256, dtype=bool)
_IS_WS[list(b" \t\n\r\x0b\x0c")] = True


def _canonical(block: bytes, layout: _Layout) -> tuple[bytes, np.ndarray]:
    """``block`` (whole lines, each ending with LF) in canonical form, and the index in
    ``block`` of each line kept."""
    if layout.sep is None:
        block = block.translate(_TO_SPACE)
        a = np.frombuffer(block, dtype=np.uint8)
        space = a == 32
        keep = np.ones(len(a), dtype=bool)
        np.logical_not(np.logical_and(space[1:], space[:-1]), out=keep[1:])
        if not keep.all():  # runs of spaces, however long, in one pass (a regex is 4x slower)
            a = a[keep]
            block = a.tobytes()
        del space, keep
        ends = np.flatnonzero(a == 10)
        edges = np.concatenate(([0], ends[:-1] + 1, ends[ends > 0] - 1))  # runs are single now
        edges = np.unique(edges[a[edges] == 32])
        if len(edges):  # a space at the start or the end of a line
            a = np.delete(a, edges)
            block = a.tobytes()
            ends = np.flatnonzero(a == 10)
        starts = np.concatenate(([0], ends[:-1] + 1))
        solid = ends != starts  # whitespace-only lines are empty now
    else:
        a = np.frombuffer(block, dtype=np.uint8)
        ends = np.flatnonzero(a == 10)
        starts = np.concatenate(([0], ends[:-1] + 1))
        solid = np.logical_or.reduceat(~_IS_WS[a], starts) if len(ends) else ends > 0
    if solid.all():
        return block, np.arange(len(ends))
    return a[np.repeat(solid, ends - starts + 1)].tobytes(), np.flatnonzero(solid)
