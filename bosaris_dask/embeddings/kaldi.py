"""Kaldi vectors as embedding sets, through ``kaldiio`` (the ``bosaris-dask[embeddings]``
extra): a script file (``.scp``, ``id rxspecifier`` lines) read lazily by its specifiers, an
archive (``.ark``) read whole, and a single vector file (``ivector-mean``'s ``mean.vec``).

A script's relative archive is found from the working directory (Kaldi's rule) or beside the
script; found in both as two files (even with the same bytes), it is an error
(:func:`_resolve_specs`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np

from bosaris_dask.embeddings.formats import _identity, _lazy, _vector
from bosaris_dask.errors import MissingPackageError, ParseError

__all__ = ["open_scp", "open_ark", "kaldi_vector"]


def _kaldiio() -> Any:
    try:
        import kaldiio
    except ImportError:
        raise MissingPackageError(
            "reading Kaldi .scp/.ark/.vec files needs kaldiio: "
            "pip install 'bosaris-dask[embeddings]'"
        ) from None
    return kaldiio


class _KaldiRows:
    """Rows of a Kaldi script file, loaded by their rxspecifiers inside each task."""

    def __init__(self, path: str, specs: np.ndarray, ids: np.ndarray, dim: int, dtype: Any):
        self.path, self.specs, self.ids = path, specs, ids
        self.shape, self.dtype, self.ndim = (len(specs), dim), np.dtype(dtype), 2

    def __dask_tokenize__(self) -> tuple:
        return (type(self).__name__, *_identity(self.path), self.shape, str(self.dtype))

    def __getitem__(self, key: Any) -> np.ndarray:
        kaldiio = _kaldiio()
        rows, cols = key if isinstance(key, tuple) else (key, slice(None))
        index = np.arange(self.shape[0])[rows]
        out = np.empty((len(index), self.shape[1]), dtype=self.dtype)
        for k, i in enumerate(index):
            v = _vector(_load_mat(kaldiio, self.specs[i], self.path, self.ids[i]), self.path,
                        self.ids[i])  # fmt: skip
            if v.shape[0] != self.shape[1]:
                raise ParseError(f"id {self.ids[i]!r} has dimension {v.shape[0]}, the first "
                                 f"has {self.shape[1]}", path=self.path)  # fmt: skip
            out[k] = v
        return out[:, cols]


def _ark_items(kaldiio: Any, f: Any, path: Any) -> Any:
    """kaldiio's ``(id, vector)`` pairs of an archive; a cut-short or corrupt one names the file
    (and the last id read)."""
    name = None
    try:
        for name, value in kaldiio.load_ark(f):
            yield name, value
    except Exception as error:  # kaldiio raises ValueError/AssertionError/EOFError of its own
        after = f" after id {name!r}" if name is not None else ""
        why = str(error) or "cut short or corrupt"
        raise ParseError(f"cannot read the archive{after} ({type(error).__name__}: {why})",
                         path=path) from None  # fmt: skip


def kaldi_vector(path: Path) -> np.ndarray:
    """A Kaldi vector file (``ivector-mean scp:xvector.scp mean.vec``), binary or text; a
    text one (``[ v1 v2 ... ]``) read in float64, digit for digit (kaldiio reads it in float32,
    which moved a 17-digit mean's scores by a float32 unit).

    Raises
    ------
    ParseError
        A file of neither form, or a text vector's value that is not a number (named).
    """
    text = _text_vector(path)
    if text is not None:
        return _vector(text, path, path.name)
    what = "not a Kaldi vector (text '[ v1 v2 ... ]' or binary, as ivector-mean writes)"
    return _vector(_load_mat(_kaldiio(), os.fspath(path), path, path.name, what=what), path,
                   path.name)  # fmt: skip


def _text_vector(path: Path) -> np.ndarray | None:
    """The values of a text vector file ``[ v1 v2 ... ]`` as float64 (a ParseError names one
    that is not a number); ``None`` for anything else (binary, or not that form: kaldiio then
    reads it or says what is wrong)."""
    raw = path.read_bytes()  # (one vector: small)
    if raw.startswith(b"\0B"):
        return None
    tokens = raw.split()
    if len(tokens) < 2 or tokens[0] != b"[" or tokens[-1] != b"]":
        return None
    values = []
    for token in tokens[1:-1]:
        try:
            values.append(float(token))
        except ValueError:
            raise ParseError(f"value {token.decode(errors='replace')!r} of the text vector "
                             f"'[ v1 v2 ... ]' is not a number", path=path) from None  # fmt: skip
    return np.array(values, dtype=np.float64)


def _load_mat(kaldiio: Any, spec: str, path: Any, name: str, *, what: str = "") -> Any:
    """kaldiio's vector at ``spec``; what goes wrong names the script file and the id (or
    says ``what``), kaldiio's reason on one line."""
    try:
        return kaldiio.load_mat(spec)
    except Exception as error:  # kaldiio asserts, and raises OSError/ValueError of its own
        why = " ".join(str(error).split()) or "bad offset or data"
        raise ParseError(f"{what or f'id {name!r}: cannot read {spec}'} "
                         f"({type(error).__name__}: {why})", path=path) from None  # fmt: skip


def _resolve_specs(specs: list[str], lines: list[int], path: Path) -> list[str]:
    """The ``file:offset`` specifiers of a script file with absolute files, so that any worker
    process, whatever its working directory, reads the same archive.

    A relative file is looked up relative to the working directory (Kaldi's rule: recipes write
    ``exp/xvectors/xvector.1.ark:27`` and run from the recipe folder) and beside the script
    file (kaldiio's ``ark,scp:xvector.ark,xvector.scp`` written in an output folder). Found in
    one place, that one is read; in both, as two files (even two copies), it is an error naming the
    line, since reading the wrong one gives every id another id's vector at an offset that may
    well exist (silently wrong scores); in neither, an error naming both places.
    """
    resolved: dict[str, str] = {}
    out = []
    for spec, line in zip(specs, lines, strict=True):
        file, colon, offset = spec.rpartition(":") if ":" in spec else (spec, "", "")
        if spec.endswith("|") or os.path.isabs(file):
            out.append(spec)
            continue
        if file not in resolved:
            resolved[file] = _one_archive(file, path, line)
        out.append(f"{resolved[file]}{colon}{offset}")
    return out


def _one_archive(file: str, path: Path, line: int) -> str:
    here, beside = Path(os.path.abspath(file)), Path(os.path.abspath(path.parent / file))
    found = [p for p in dict.fromkeys((here, beside)) if p.is_file()]
    if len(found) == 2 and not os.path.samefile(*found):
        raise ParseError(
            f"archive {file!r} is relative, and there are two: {here} (from the working "
            f"directory, Kaldi's rule) and {beside} (beside the script file); run from the "
            "folder the script's paths are relative to, or write them absolute",
            path=path, line=line,
        )  # fmt: skip
    if not found:
        raise ParseError(
            f"archive {file!r} not found: neither {here} (from the working directory) nor "
            f"{beside} (beside the script file) exists",
            path=path, line=line,
        )  # fmt: skip
    return os.fspath(found[0])


def open_scp(path: Path, chunk_rows: int) -> tuple[np.ndarray, da.Array]:
    kaldiio = _kaldiio()
    names, specs, lines = [], [], []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.strip().split(maxsplit=1)
        if len(parts) != 2:
            raise ParseError(f"expected 'id rxspecifier', got {line!r}", path=path, line=n)
        names.append(parts[0])
        specs.append(parts[1])
        lines.append(n)
    if not names:
        raise ParseError("no embeddings in the script file", path=path)
    specs = _resolve_specs(specs, lines, path)
    first = _vector(_load_mat(kaldiio, specs[0], path, names[0]), path, names[0])
    ids = np.asarray(names, dtype=object)
    rows = _KaldiRows(os.fspath(path), np.asarray(specs, dtype=object), ids, first.shape[0],
                      first.dtype)  # fmt: skip
    return ids, _lazy(rows, chunk_rows)


def open_ark(path: Path, chunk_rows: int) -> tuple[np.ndarray, da.Array]:
    kaldiio = _kaldiio()
    names, vectors = [], []
    with open(path, "rb") as f:
        for name, value in _ark_items(kaldiio, f, path):
            v = _vector(value, path, name)
            if vectors and v.shape != vectors[0].shape:
                raise ParseError(f"id {name!r} has dimension {v.shape[0]}, the first has "
                                 f"{vectors[0].shape[0]}", path=path)  # fmt: skip
            names.append(name)
            vectors.append(v)
    if not names:
        raise ParseError("no embeddings in the archive", path=path)
    values = np.stack(vectors)
    return np.asarray(names, dtype=object), da.from_array(values, chunks=(chunk_rows, -1))
