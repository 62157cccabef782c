"""Subcommands that evaluate or train on scores: ``evaluate``, ``plot``, ``calibrate``, ``fuse``,
``apply``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from bosaris_dask.cli.common import (
    _cluster,
    _evaluate,
    _flatten_priors,
    _load,
    _progress,
    _say,
    _write_json,
)
from bosaris_dask.errors import BosarisError
from bosaris_dask.progress import showing_progress


def cmd_evaluate(args: argparse.Namespace) -> int:
    from bosaris_dask.report import format_table, to_json_dict

    _flatten_priors(args)
    # Under MPI every rank runs this function: inputs are opened only on the client rank.
    # Elsewhere they are opened first, so a wrong path fails before a cluster starts, and the
    # matrix size tells connect() whether worker processes are worth starting.
    loaded = None if args.cluster == "mpi" else _load(args.key, args.scores)
    size = None if loaded is None else loaded[0].sizes["model"] * loaded[0].sizes["segment"]
    with _cluster(args, size_hint=size):
        start = time.perf_counter()
        key, systems = loaded or _load(args.key, args.scores)
        results = _evaluate(args, key, systems, args.scores)
        elapsed = time.perf_counter() - start
        print(format_table(results))
        _say(args, f"\n{results.attrs['passes']} passes over the data in {elapsed:.1f} s")
        if args.json:
            _write_json(args.json, to_json_dict(results))
            _say(args, f"wrote {args.json}")
        if args.plots:
            from bosaris_dask.plots import save_standard_plots

            written = save_standard_plots(results, args.plots)
            _say(args, f"wrote {', '.join(str(p) for p in written)}")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from bosaris_dask.plots import save_plot

    _flatten_priors(args)
    loaded = _load(args.key, args.scores)
    with _cluster(args, size_hint=loaded[0].sizes["model"] * loaded[0].sizes["segment"]):
        results = _evaluate(args, *loaded, args.scores)
    options = {"window": args.window} if args.kind == "det" and args.window else {}
    save_plot(results, args.kind, args.out, **options)
    _say(args, f"wrote {args.out}")
    return 0


def _read_quality(args: argparse.Namespace, path: str | None) -> Any:
    """A Quality object from a zarr quality store, or from model/segment quality tables."""
    from bosaris_dask import io
    from bosaris_dask.trials import make_quality

    if path is not None:
        return io.read(path)
    if args.model_quality is None and args.segment_quality is None:
        return None
    return make_quality(
        io.read_quality(args.model_quality) if args.model_quality else None,
        io.read_quality(args.segment_quality) if args.segment_quality else None,
    )


def _fit_and_apply(args: argparse.Namespace, model: Any, systems: list[Any], quality: Any) -> int:
    from bosaris_dask import io
    from bosaris_dask.calibration import apply_model

    key = io.read(args.key, "key")
    size_hint = key.sizes["model"] * key.sizes["segment"]
    with _cluster(args, size_hint=size_hint), showing_progress(_progress(args)):
        start = time.perf_counter()
        if quality is None:
            model.fit(key, systems if len(systems) > 1 or args.command == "fuse" else systems[0])
        else:
            model.fit(key, systems, quality)
        model.save_json(args.model_out)
        doc = model.to_dict()
        elapsed = time.perf_counter() - start
        if "iterations" in doc:
            fitted = (f"objective {doc['objective']:.6g} after {doc['iterations']} iterations, "
                      f"{doc['passes']} passes over the data")  # fmt: skip
        else:
            fitted = f"{len(doc['score_bounds']) // 2} PAV blocks"
        _say(args, f"{doc['kind']}: {fitted} ({elapsed:.1f} s); wrote {args.model_out}")
        if args.apply:
            if args.out is None:
                raise BosarisError("--apply needs --out (where to write the calibrated scores)")
            targets = [io.read(p, "scores") for p in args.apply]
            eval_quality = _read_quality(args, args.apply_quality) if quality is not None else None
            ndx = io.read(args.ndx) if args.ndx else None
            out = apply_model(model, targets, quality=eval_quality or quality, ndx=ndx)
            io.write(out, args.out, progress=_progress(args))
            _say(args, f"wrote {args.out}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from bosaris_dask import io
    from bosaris_dask.calibration import LinearCalibrator, PAVCalibrator

    model = LinearCalibrator(args.prior) if args.method == "linear" else PAVCalibrator()
    args.ndx = getattr(args, "ndx", None)
    return _fit_and_apply(args, model, [io.read(args.scores, "scores")], None)


def cmd_fuse(args: argparse.Namespace) -> int:
    from bosaris_dask import io
    from bosaris_dask.fusion import LinearFuser, QualityFuser

    quality = _read_quality(args, args.quality)
    if args.apply and len(args.apply) != len(args.scores):
        raise BosarisError(
            f"--apply takes the eval scores of the same {len(args.scores)} systems, in the same "
            f"order; got {len(args.apply)}"
        )
    model = QualityFuser(args.prior) if quality is not None else LinearFuser(args.prior)
    systems = [io.read(p, "scores") for p in args.scores]
    return _fit_and_apply(args, model, systems, quality)


def cmd_apply(args: argparse.Namespace) -> int:
    from bosaris_dask import io
    from bosaris_dask.calibration import apply_model, load_model

    model = load_model(args.model)
    systems = [io.read(p, "scores") for p in args.scores]
    quality = _read_quality(args, args.quality)
    ndx = io.read(args.ndx) if args.ndx else None
    with _cluster(args):
        io.write(apply_model(model, systems, quality=quality, ndx=ndx), args.out,
                 progress=_progress(args))  # fmt: skip
    _say(args, f"wrote {args.out}")
    return 0
