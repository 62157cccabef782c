"""Reading text trial lists, keys and scores."""

from __future__ import annotations

import os
import shutil
from typing import Any

import xarray as xr

from bosaris_dask.errors import ParseError
from bosaris_dask.io.text.blocks import BLOCK_BYTES, _iter_blocks
from bosaris_dask.io.text.collect import _Collector
from bosaris_dask.io.text.dense import MEMMAP_THRESHOLD, _assemble
from bosaris_dask.io.text.layout import _detect_layout
from bosaris_dask.io.text.parse import _parse_block
from bosaris_dask.io.text.scratch import _is_stream, _ScratchFile


def sniff_text_kind(
    path: str | os.PathLike[str], *, header: bool | None = None, format: str | None = None
) -> str:
    """The kind of trial file, from its first non-blank line (and header, if any).

    Parameters
    ----------
    path
        A BOSARIS/Kaldi or NIST text file (formats in :mod:`bosaris_dask.io.text`).
    header
        ``None``: detect a NIST header; ``False``: there is none.

    Returns
    -------
    {"scores", "key", "ndx"}
        ``scores`` if the header names a score column or the third field is a number, ``key`` if
        it names a label column or the third field is ``target``/``nontarget``, ``ndx`` for two
        fields (or a header with neither).

    Raises
    ------
    ParseError
        With the file and line, when the kind cannot be told (or the file is empty).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "trials.tsv"
    >>> _ = path.write_text("modelid\\tsegmentid\\tside\\ttargettype\\nm1\\ts1\\ta\\ttarget\\n")
    >>> sniff_text_kind(path)
    'key'
    """
    return _detect_layout(path, None, header, format).kind


def text_has_labels(path: str | os.PathLike[str], *, format: str | None = None) -> bool:
    """Whether a text file carries both scores and labels, so it can serve as key and scores.

    True for wespeaker and 3D-Speaker score files (``enrol test score label``,
    ``enrol test label score``) and for NIST tables with both a score and a label column.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "vox1_O.score"
    >>> _ = path.write_text("id10270/a.wav id10270/b.wav 0.78787 target\\n")
    >>> text_has_labels(path), sniff_text_kind(path), sniff_text_kind(path, format="wespeaker")
    (True, 'scores', 'scores')
    """
    scores = _detect_layout(path, None, None, format)
    if scores.kind != "scores":
        return False
    try:
        key = _detect_layout(path, "key", None, format)
    except ParseError:
        return False
    return dict(key.roles)["label"] != dict(scores.roles)["score"]  # BOSARIS: the same field


def read_text(
    path: str | os.PathLike[str],
    kind: str | None = None,
    *,
    chunks: Any = None,
    scratch_dir: str | os.PathLike[str] | None = None,
    header: bool | None = None,
    format: str | None = None,
    memmap_threshold: int = MEMMAP_THRESHOLD,
    block_bytes: int = BLOCK_BYTES,
) -> xr.Dataset:
    """Read a text trial list, key or score file into a trial object.

    The file is parsed block by block (``block_bytes`` of text at a time); ids keep the order in
    which they first appear. Scores become float64 with ``score_mask``, a key an int8 mask
    (+1 target, -1 non-target, 0 no trial), an ndx a bool mask. When the dense output would take
    more than ``memmap_threshold`` bytes it is written to scratch files (in ``scratch_dir``, or
    the system temporary directory) that are deleted when the returned object (and every dask
    graph built on it) is gone; the data are then read lazily from there.

    Parameters
    ----------
    path
        The text file (formats and rules in :mod:`bosaris_dask.io.text`).
    kind
        ``"scores"``, ``"key"`` or ``"ndx"``; ``None`` tells it from the content
        (:func:`sniff_text_kind`).
    chunks
        Dask chunks of the output (default: dask's ``"auto"``).
    scratch_dir
        Where to put scratch files (spilled codes, memmapped outputs).
    header
        ``None``: detect a NIST header line; ``True``: there must be one; ``False``: none.
    format
        The layout, one of ``"bosaris"`` (``model segment [score|label]``, Kaldi too), ``"nist"``
        (a header names the columns), ``"voxceleb"`` (``label enrol test``), ``"wespeaker"``
        (``enrol test score label``), ``"3dspeaker"`` (``enrol test label score``); ``None``
        tells it from the first lines (formats and rules in :mod:`bosaris_dask.io.text`).
    memmap_threshold
        Output size in bytes above which the dense arrays live in scratch memmaps.
    block_bytes
        Bytes of text parsed at once.

    Returns
    -------
    xarray.Dataset
        A trial object (see :mod:`bosaris_dask.trials`).

    Raises
    ------
    ParseError
        For any problem in the file, with the file and the 1-based line number.
    StoreError
        If the file cannot be opened.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "key.txt"
    >>> _ = path.write_text("m1 s2 target\\nm1 s1 nontarget\\nm2 s1 target\\n")
    >>> key = read_text(path)
    >>> key.model.values.tolist(), key.segment.values.tolist()
    (['m1', 'm2'], ['s2', 's1'])
    >>> key.trial_mask.values.tolist()
    [[1, -1], [0, 1]]
    >>> _ = path.write_text("m1 s1 target\\nm1 s1 nontarget\\n")
    >>> read_text(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.ParseError: ...key.txt:2: trial ('m1', 's1') is given twice, first on line 1
    """
    if _is_stream(path):  # a pipe (``<(cmd)``, /dev/stdin): read twice below, so copy it first
        copy = _ScratchFile(scratch_dir)
        try:
            with open(path, "rb") as source, open(copy.path, "wb") as target:
                shutil.copyfileobj(source, target, 16 * 2**20)
            return read_text(
                copy.path, kind, header=header, format=format, chunks=chunks,
                scratch_dir=scratch_dir,
                memmap_threshold=memmap_threshold, block_bytes=block_bytes,
            )  # fmt: skip
        except ParseError as error:
            raise ParseError(error.message, path, error.line) from None
        finally:
            copy.remove()
    layout = _detect_layout(path, kind, header, format)
    collector = _Collector(layout, scratch_dir)
    try:
        for block, first_line, n_lines in _iter_blocks(path, layout, block_bytes):
            collector.add(_parse_block(block, first_line, n_lines, layout, path), n_lines)
        return _assemble(collector, path, chunks, scratch_dir, memmap_threshold)
    finally:
        collector.close()
