"""Cutting a text file into blocks of whole lines, checked for NUL bytes and over-long lines."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from bosaris_dask.errors import ParseError
from bosaris_dask.io.text.layout import MAX_LINE_BYTES, _Layout, _open

#: Bytes of text parsed per block.
BLOCK_BYTES = 16 * 2**20


def _iter_blocks(
    path: str | os.PathLike[str], layout: _Layout, block_bytes: int
) -> Iterator[tuple[bytes, int, int]]:
    """Yield ``(block, first_line, n_lines)``: whole lines, each ending with LF (CRLF -> LF).

    Checks for NUL bytes and over-long lines on the way (an over-long line is found after
    reading at most ``block_bytes + MAX_LINE_BYTES`` of it).
    """
    with _open(path) as f:
        f.seek(layout.start)
        carry, lineno = b"", layout.first_line
        while True:
            chunk = f.read(block_bytes)
            if not chunk:
                if not carry:
                    return
                block, carry = (carry if carry.endswith(b"\n") else carry + b"\n"), b""
            else:
                cut = chunk.rfind(b"\n") + 1
                if cut == 0:
                    block, carry = b"", carry + chunk
                else:  # one copy at most
                    block = b"".join((carry, memoryview(chunk)[:cut])) if carry else chunk[:cut]
                    carry = chunk[cut:]
            if len(carry) > MAX_LINE_BYTES:
                raise ParseError(
                    f"line longer than {MAX_LINE_BYTES} bytes",
                    path=path,
                    line=lineno + block.count(b"\n"),
                )
            if not block:
                continue
            _check_block(block, path, lineno)
            if b"\r" in block:
                block = block.replace(b"\r\n", b"\n")
            n = _count_byte(block, 10)
            yield block, lineno, n
            lineno += n
            if not chunk:
                return


def _check_block(block: bytes, path: Any, lineno: int) -> None:
    nul = block.find(b"\0")
    if nul >= 0:
        raise ParseError(
            "NUL byte in a text file (is it binary?)",
            path=path,
            line=lineno + block.count(b"\n", 0, nul),
        )
    # every window of MAX_LINE_BYTES + 1 bytes after a line start must hold a newline
    start = 0
    while len(block) - start > MAX_LINE_BYTES + 1:
        end = block.rfind(b"\n", start, start + MAX_LINE_BYTES + 1)
        if end < 0:
            raise ParseError(
                f"line longer than {MAX_LINE_BYTES} bytes",
                path=path,
                line=lineno + block.count(b"\n", 0, start),
            )
        start = end + 1


def _count_byte(block: bytes, byte: int) -> int:
    """How many times ``byte`` occurs in ``block`` (numpy's SIMD compare beats bytes.count)."""
    return int(np.count_nonzero(np.frombuffer(block, dtype=np.uint8) == byte))
