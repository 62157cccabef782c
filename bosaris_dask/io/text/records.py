"""What parsing a block gives: its records (ids as codes, values, lines), and the rules and
messages every parsing path shares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from bosaris_dask.io.text.layout import _Layout

_ID_ROLES = ("model", "segment", "id")
_FLOAT_ROLES = ("score", "value")
_WS = " \t\n\r\x0b\x0c"  # ASCII whitespace, as bytes.split() sees it


@dataclass
class _Chunk:
    """The parsed records of one block."""

    ids: dict[str, tuple[np.ndarray, np.ndarray]]  # role -> (codes, uniques as str)
    values: np.ndarray | None  # float64 scores, int8 labels (+1/-1) or (n, q) float64 values
    first_line: int
    lines: np.ndarray | None  # 1-based line of each record; None: first_line + arange(n)
    n: int


def _good_id(u: Any) -> bool:
    return isinstance(u, str) and u != "" and u == u.strip(_WS)


def _stack(values: list[np.ndarray], labels: np.ndarray | None, layout: _Layout):
    if labels is not None:
        return labels
    if not values:
        return None
    return values[0] if layout.kind != "quality" else np.stack(values, axis=1)


def _count_message(layout: _Layout, found: int) -> str:
    how = "tab-separated " if layout.sep else ""
    what = {"scores": "model segment score", "key": "model segment target|nontarget"}.get(
        layout.kind, "model segment"
    )
    if layout.form:
        what = layout.form
    elif layout.kind == "quality":
        what = f"an id and {layout.nfields - 1} quality values"
    elif layout.header:
        what = "one per header column"
    elif layout.kind == "ndx" and layout.nfields == 3:
        what = "model segment, and an ignored third field as on the first line"
    return f"expected {layout.nfields} {how}fields ({what}), found {found}"
