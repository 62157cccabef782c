"""A user's stores of the same trials as a ``bosaris-dask simulate`` output, for ``ab_evaluate``.

Usage::

    python benchmarks/user_stores.py --workdir DIR [--make NAME ...]

``DIR`` holds ``key.zarr`` and ``system-1.zarr`` as ``simulate`` writes them (a label-derived
key, float32 scores). This writes next to them the same trials as users' stores are (every
store through :func:`bosaris_dask.io.write`, so as the package writes them):

* ``explicit``: ``key-explicit.zarr`` (the key as an explicit int8 ``trial_mask``) and
  ``system-1-masked.zarr`` (the scores with a stored ``score_mask``);
* ``f64``: ``system-1-f64.zarr``, the scores as float64 (what every text file becomes);
* ``hdf5``: ``key.h5`` and ``system-1.h5`` in the BOSARIS HDF5 layout as MATLAB writes it
  (contiguous, double scores, uint8 score mask, int8 key);
* ``hdf5-chunked``: ``key-chunked.h5`` and ``system-1-chunked.h5``, the same files with every
  matrix chunked in rows (about 64 MiB of scores per chunk, uncompressed), as h5py or other
  tools write them (copied from the ``hdf5`` pair, which is made first if missing).

Then, for example::

    python benchmarks/ab_evaluate.py --workdir DIR --case label=key.zarr,system-1.zarr \\
        --case explicit=key-explicit.zarr,system-1-masked.zarr --case hdf5=key.h5,system-1.h5

Stores that exist are kept (delete them to rewrite). Prints each store's size and write time.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import dask.array as da

from bosaris_dask import io

STORES = {
    "explicit": ("key-explicit.zarr", "system-1-masked.zarr"),
    "f64": ("system-1-f64.zarr",),
    "hdf5": ("key.h5", "system-1.h5"),
    "hdf5-chunked": ("key-chunked.h5", "system-1-chunked.h5"),
}


def _chunked_copy(source: Path, path: Path) -> None:
    """``source`` (an HDF5 file) with every 2-D dataset chunked in rows (~64 MiB of float64
    scores per chunk), the rest copied as it is."""
    import h5py

    with h5py.File(source, "r") as src, h5py.File(path, "w") as dst:
        for name, value in src.attrs.items():
            dst.attrs[name] = value

        def copy(name: str, obj: Any) -> None:
            if isinstance(obj, h5py.Group):
                dst.require_group(name)
            elif obj.ndim == 2:
                rows = max(1, min(obj.shape[0], (64 << 20) // (8 * max(obj.shape[1], 1))))
                out = dst.create_dataset(name, shape=obj.shape, dtype=obj.dtype,
                                         chunks=(rows, obj.shape[1]))  # fmt: skip
                for start in range(0, obj.shape[0], rows):
                    out[start : start + rows] = obj[start : start + rows]
            else:
                src.copy(obj, dst, name=name)

        src.visititems(copy)


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _explicit_key(key):
    """The key with its label-derived mask stored as an explicit int8 ``trial_mask``."""
    return key.drop_vars([c for c in ("model_label", "segment_label") if c in key.coords])


def _masked(scores):
    """The scores with a ``score_mask`` to store: every finite score scored (all, here); not
    ``da.ones``, which the writer knows to be all true and leaves out."""
    return scores.assign(score_mask=(scores.score.dims, da.isfinite(scores.score.data)))


def make(workdir: Path, names: list[str]) -> None:
    key, scores = io.read(workdir / "key.zarr"), io.read(workdir / "system-1.zarr")
    objects = {
        "key-explicit.zarr": lambda: _explicit_key(key),
        "system-1-masked.zarr": lambda: _masked(scores),
        "system-1-f64.zarr": lambda: scores.assign(score=scores.score.astype("float64")),
        "key.h5": lambda: _explicit_key(key),
        "system-1.h5": lambda: _masked(scores).assign(score=scores.score.astype("float64")),
    }
    if "hdf5-chunked" in names and "hdf5" not in names:
        names = ["hdf5", *names]
    for name in names:
        for file in STORES[name]:
            path = workdir / file
            if path.exists():
                print(f"{file}: kept ({_size(path) / 1e9:.2f} GB)")
                continue
            start = time.perf_counter()
            if "-chunked" in file:
                _chunked_copy(workdir / file.replace("-chunked", ""), path)
            else:
                kwargs = {"omit_true_masks": False} if ".zarr" in file else {}
                io.write(objects[file](), path, **kwargs)
            wall = time.perf_counter() - start
            print(f"{file}: {_size(path) / 1e9:.2f} GB in {wall:.1f} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--make", action="append", choices=list(STORES),
                        help="which stores (repeatable; default all)")  # fmt: skip
    args = parser.parse_args(argv)
    make(args.workdir, args.make or list(STORES))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
