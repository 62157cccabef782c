"""Reading text trial lists, keys, scores and quality files."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from bosaris_dask.errors import ParseError, StoreError, TrialError
from bosaris_dask.io.text.collect import MEMMAP_THRESHOLD, _assemble, _Collector
from bosaris_dask.io.text.heartbeat import Heartbeat, shown_as, shown_path
from bosaris_dask.io.text.labels import OneLabelPair
from bosaris_dask.io.text.layout import _detect_layout, _first_nonblank_line, _Layout, _shown
from bosaris_dask.io.text.parse import BLOCK_BYTES, _parse_block, parsed_blocks
from bosaris_dask.io.text.scratch import _is_stream, _ScratchFile
from bosaris_dask.trials import quality_table


def sniff_text_kind(
    path: str | os.PathLike[str], *, header: bool | None = None, format: str | None = None
) -> str:
    """The kind of a trial file, ``"scores"``, ``"key"`` or ``"ndx"``, from its first lines
    (``header=False``: no NIST header); a ParseError names the file and line if it cannot be told.

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
    """Whether a text file carries both scores and labels (wespeaker, 3D-Speaker, NIST tables with
    both columns), so it can serve as key and scores.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "vox1_O.score"
    >>> _ = path.write_text("id10270/a.wav id10270/b.wav 0.78787 target\\n")
    >>> text_has_labels(path), sniff_text_kind(path), sniff_text_kind(path, format="wespeaker")
    (True, 'scores', 'scores')
    """
    scores = _detect_layout(path, None, None, format)
    try:
        _with_label_column(path, scores, None, format)
    except (ParseError, TrialError):  # no label column, or (BOSARIS) the score's
        return False
    return True


def _with_label_column(
    path: str | os.PathLike[str], scores: _Layout, header: bool | None, format: str | None
) -> _Layout:
    """A scores layout that also reads the file's label column: a TrialError if it has none
    apart from its scores (a BOSARIS file's third field is either), a ParseError if it reads as
    no key at all."""
    key = _detect_layout(path, "key", header, format)
    label, score = dict(key.roles)["label"], dict(scores.roles).get("score")
    if (
        scores.kind != "scores"
        or label == score
        or replace(key, kind="scores", roles=scores.roles) != scores
    ):
        raise TrialError(f"{shown_path(path)}: no label column apart from its scores")
    return replace(scores, roles=(*scores.roles, ("label", label)))


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
    """Read a text trial list, key or score file (``docs/formats.md``) into a trial object, parsing
    ``block_bytes`` at a time; ids keep their order of first appearance.

    Parameters
    ----------
    path
        The text file.
    kind : {"scores", "key", "ndx"}, optional
        ``None`` tells it from the content (:func:`sniff_text_kind`).
    chunks
        Dask chunks of the output (default: ``"auto"``).
    scratch_dir
        Where scratch files go (spilled records; outputs over ``memmap_threshold`` bytes, read
        as memmaps and deleted once nothing refers to them).
    header
        ``None``: detect a NIST header line; ``True``: there must be one; ``False``: none.
    format : {"bosaris", "nist", "voxceleb", "wespeaker", "3dspeaker"}, optional
        The layout; ``None`` tells it from the first lines.
    memmap_threshold, block_bytes
        Output bytes above which the matrices live in scratch memmaps; bytes parsed at once.

    Raises
    ------
    ParseError
        For any problem in the file, naming the file and the 1-based line.
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
            with shown_as(copy.path, path):  # (its messages name the pipe, not the copy)
                refuse_binary(copy.path)
                return read_text(
                    copy.path, kind, header=header, format=format, chunks=chunks,
                    scratch_dir=scratch_dir,
                    memmap_threshold=memmap_threshold, block_bytes=block_bytes,
                )  # fmt: skip
        except ParseError as error:
            raise ParseError(error.message, path, error.line) from None
        finally:
            copy.remove()
    collector = collect_text(path, kind, header=header, format=format, scratch_dir=scratch_dir,
                             block_bytes=block_bytes)  # fmt: skip
    try:
        return _assemble(collector, path, chunks, scratch_dir, memmap_threshold)
    finally:
        collector.close()


def collect_text(
    path: str | os.PathLike[str],
    kind: str | None = None,
    *,
    header: bool | None = None,
    format: str | None = None,
    scratch_dir: str | os.PathLike[str] | None = None,
    block_bytes: int = BLOCK_BYTES,
    with_labels: bool = False,
) -> _Collector:
    """The records of a text trial file (a regular file), parsed and checked line by line
    (:func:`read_text` without the dense matrices); the caller closes the collector.

    ``with_labels`` (with ``kind="scores"``): the label column too, for a file that is its own
    key (:func:`text_has_labels`), so that one read gives both. Without it, a scores file's
    label column is still parsed and checked (label words of one pair) and then dropped: a
    label column read as scores, or scores read as labels (a 3D-Speaker file given as
    wespeaker), is a ParseError, not a file of 1.0 and 0.0 scores."""
    layout = _detect_layout(path, kind, header, format)
    if with_labels:
        layout = _with_label_column(path, layout, header, format)
    collector = _Collector(layout, scratch_dir)
    layout = _label_checked(path, layout, header, format)
    one_pair = OneLabelPair(path)
    progress, done = Heartbeat(path, "read", _file_size(path)), 0
    try:
        for block, first_line, n_lines, parsed in parsed_blocks(path, layout, block_bytes):
            try:
                chunk = parsed.result()
            except ParseError as error:  # a label of another pair above it is the first error
                _labels_before(error, block, first_line, layout, path, one_pair)
                raise
            _add_labels(chunk, one_pair)
            collector.add(chunk, n_lines)
            done += len(block)
            progress.advance(done, f"{collector.n:,} trials")
    except BaseException:
        collector.close()
        raise
    progress.finish(f"{collector.n:,} trials")
    return collector


def _label_checked(path: Any, layout: _Layout, header: bool | None, format: str | None) -> _Layout:
    """``layout`` reading the label column of a scores file that has one (to be checked)."""
    if layout.kind != "scores" or "label" in dict(layout.roles):
        return layout
    try:
        return _with_label_column(path, layout, header, format)
    except (ParseError, TrialError):  # no label column
        return layout


def _file_size(path: str | os.PathLike[str]) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _add_labels(chunk: Any, one_pair: OneLabelPair) -> None:
    """Give ``one_pair`` the label words of a parsed block (key files)."""
    if chunk.words is not None:  # (lines now: a block made canonical drops some)
        one_pair.add({pair: (word, chunk.line(record))
                      for pair, (word, record) in chunk.words.items()})  # fmt: skip


def _labels_before(
    error: ParseError, block: bytes, first_line: int, layout: Any, path: Any, one_pair: OneLabelPair
) -> None:
    """Check the labels of a block's lines above ``error``'s (which parse): a label word of
    another pair there is the file's first error, raised instead."""
    if error.line is None or error.line <= first_line:
        return
    above = error.line - first_line
    ends = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == ord("\n"))
    if len(ends) < above:
        return
    _add_labels(_parse_block(block[: ends[above - 1] + 1], first_line, above, layout, path),
                one_pair)  # fmt: skip


def read_quality_text(
    path: str | os.PathLike[str], *, block_bytes: int = BLOCK_BYTES
) -> xr.DataArray:
    """Read a BOSARIS quality file (``q``, then ``id v1 ... vq``; NaN allowed, unique ids) into a
    :func:`~bosaris_dask.trials.quality_table`; a ParseError names the file and line of a problem.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "seg.qual"
    >>> _ = path.write_text("2\\ns1 0.5 12\\ns2 nan nan\\n")
    >>> table = read_quality_text(path)
    >>> table.id.values.tolist(), table.values.tolist()
    (['s1', 's2'], [[0.5, 12.0], [nan, nan]])
    """
    line, lineno, _, after = _first_nonblank_line(path)
    tokens = line.split()
    q = int(tokens[0]) if len(tokens) == 1 and tokens[0].isdigit() else 0
    if q < 1:
        raise ParseError(
            f"the first line of a quality file gives the number of measures (a positive "
            f"integer), not {_shown(line)}",
            path=path,
            line=lineno,
        )
    roles = (("id", 0),) + tuple(("value", j) for j in range(1, q + 1))
    layout = _Layout("quality", None, q + 1, roles, after, lineno + 1)
    table: dict[str, int] = {}  # id -> its line
    values: list[np.ndarray] = []
    last = lineno
    for _, first_line, n_lines, parsed in parsed_blocks(path, layout, block_bytes):
        chunk = parsed.result()
        last = first_line + n_lines - 1
        codes, uniques = chunk.ids["id"]
        lines = chunk.first_line + np.arange(chunk.n) if chunk.lines is None else chunk.lines
        for u, n in zip(uniques[codes].tolist(), lines.tolist(), strict=True):
            if table.setdefault(u, n) != n:
                raise ParseError(f"id {u!r} is given twice, first on line {table[u]}", path, n)
        assert chunk.values is not None  # a quality layout has value columns
        values.append(chunk.values)
    if not table:
        raise ParseError("no ids in the quality file", path=path, line=last)
    return quality_table(list(table), np.concatenate(values))


#: File signatures of formats a text reader would meet as binary noise, and what to do instead.
_XARRAY = "a Dataset that xarray saved is opened with xarray (xr.open_dataset) and passed as it is"
_SIGNATURES = {
    b"\x89HDF\r\n\x1a\n": ("an HDF5 file", f"a BOSARIS HDF5 file needs the suffix .h5; {_XARRAY}"),
    b"CDF\x01": ("a netCDF-3 file", _XARRAY),
    b"CDF\x02": ("a netCDF-3 file", _XARRAY),
    b"PK\x03\x04": ("a zip archive (npz?)", "embeddings in an .npz are scored with --enrol and "
                     "--test (bosaris_dask.embeddings in Python)"),
    **{magic: (f"{name}-compressed", f"decompress it, or read it through a pipe (e.g. "
                                     f"--scores <({tool} -dc FILE)), or recompress it with gzip, "
                                     "which is read as it is")
       for magic, name, tool in (
           # bzip2: "BZh", the block size, the first block's magic (not an id such as "BZhang")
           *((b"BZh%d1AY&SY" % size, "bzip2", "bzip2") for size in range(1, 10)),
           (b"\xfd7zXZ\x00", "xz", "xz"), (b"\x28\xb5\x2f\xfd", "zstd", "zstd"))},
}  # fmt: skip


def refuse_binary(path: str | os.PathLike[str]) -> None:
    """A StoreError for a file read as text that starts with a binary format's signature. A
    pipe is not looked at (a look would take its first bytes); its scratch copy is, named as
    the pipe (:func:`.heartbeat.shown_as`). The readers' callers check (``io.read``, the
    command line's lists), not :func:`collect_text`, whose rejections are ParseErrors."""
    if _is_stream(path):
        return
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return  # (the text reader says why it cannot read it)
    for signature, (what, instead) in _SIGNATURES.items():
        if head.startswith(signature):
            shown = shown_path(path)
            suffix = Path(shown).suffix or "(none)"
            raise StoreError(f"{shown}: {what}, not a text trial list (read as text for its "
                             f"suffix {suffix}): {instead}")  # fmt: skip
