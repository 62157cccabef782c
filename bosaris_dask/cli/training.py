"""Subcommands that train on scores or apply a trained model: ``calibrate``, ``fuse`` and
``apply`` (those that evaluate scores: :mod:`bosaris_dask.cli.scoring`).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

from bosaris_dask.cli.common import (
    _cluster,
    _count_systems,
    _in_user_base,
    _key_and_systems,
    _opened,
    _progress,
    _read_scores,
    _say,
    _size,
    _systems,
    _text_formats,
    system_names,
)
from bosaris_dask.cli.in_order import apply_in_order, keeps_line_order
from bosaris_dask.cli.options import output_options
from bosaris_dask.errors import (
    BosarisError,
    NoClassError,
    OptionError,
    QualityTableError,
    ScoreError,
)
from bosaris_dask.progress import showing_progress


def check_quality_sources(args: argparse.Namespace) -> None:
    """An OptionError where both ``--quality`` (a store of both sides) and side tables are
    given: one of them would be left unread."""
    tables = [option for option, value in (("--model-quality", args.model_quality),
              ("--segment-quality", args.segment_quality)) if value]  # fmt: skip
    if getattr(args, "quality", None) and tables:
        raise OptionError(f"--quality {args.quality} and {' and '.join(tables)}: give the quality "
                          "store (both sides) or the side tables, not both")  # fmt: skip


def _read_quality(args: argparse.Namespace, path: str | None, option: str = "--quality") -> Any:
    """A Quality object from a zarr quality store, or from model/segment quality tables."""
    from bosaris_dask import io
    from bosaris_dask.trials import make_quality

    if path is not None:
        from bosaris_dask.trials import kind_of

        try:
            quality = io.read(path)
        except QualityTableError:
            raise OptionError(
                f"{option} {path}: a quality table of one side; {option} takes a quality store "
                "of both sides (bd.write of make_quality(model_table, segment_table))"
                + (", or train here and apply with bosaris-dask apply --model-quality and "
                   "--segment-quality" if option == "--apply-quality" else
                   ": give side tables as --model-quality and --segment-quality")
            ) from None  # fmt: skip
        if kind_of(quality) != "quality":
            raise BosarisError(f"{path}: a {kind_of(quality)} store, not quality (a quality "
                               "store holds model and segment quality measures)")  # fmt: skip
        return quality
    if args.model_quality is None and args.segment_quality is None:
        return None
    return make_quality(
        io.read_quality(args.model_quality) if args.model_quality else None,
        io.read_quality(args.segment_quality) if args.segment_quality else None,
    )


def _fill_missing(args: argparse.Namespace, out: Any, ndx: Any) -> Any:
    """With ``--fill-missing VALUE``: every trial of ``--ndx`` gets a score, VALUE if none."""
    if getattr(args, "fill_missing", None) is None:
        return out
    if ndx is None:
        raise BosarisError("--fill-missing needs --ndx (the trials that must all have a score)")
    from bosaris_dask.trials import alignment_report, set_missing_to_value

    report = alignment_report(out, ndx)  # (out is on the ndx's ids: count its trials)
    _say(args, f"{report.trials:,} of the {report.n_trials:,} --ndx trials have no score: "
               f"filled with {args.fill_missing:g}")  # fmt: skip
    return set_missing_to_value(out, ndx, args.fill_missing, log_missing=False)


def _say_unwritten(
    args: argparse.Namespace, out: Any, systems: list[Any], ndx: Any, first: str | None
) -> None:
    """Say how many trials of ``--ndx``, else of the first system (read from ``first``),
    have no score in every system, so that ``out`` leaves them out, as the text path
    (:func:`~bosaris_dask.cli.in_order.apply_in_order`) says; before the write, as ``--out``
    may replace an input. One pass over the masks, none for one system without ``--ndx``
    (nothing left out) or with ``--fill-missing`` (which counts its own)."""
    from pathlib import Path

    from bosaris_dask.progress import compute

    if getattr(args, "fill_missing", None) is not None or (ndx is None and len(systems) < 2):
        return
    if ndx is not None:  # out is on the ndx's ids, restricted to its trials
        reference, name = ndx.trial_mask.data != 0, args.ndx
    else:  # out's trials are those every system scores: some of the first's
        reference, name = systems[0].score_mask.data, first
    n_ref, n_out = (int(n) for n in compute((reference.sum(), out.score_mask.data.sum()),
                                            progress=None))  # fmt: skip
    if n_ref > n_out:
        _say(args, f"{n_ref - n_out:,} of the {n_ref:,} trials of {Path(str(name)).name} lack a "
                   "score in some system: not written")  # fmt: skip


def _fit_and_apply(
    args: argparse.Namespace, model: Any, open_inputs: Callable[[], tuple[Any, list[Any], Any]]
) -> int:
    """Train ``model`` on ``open_inputs()`` (key, systems, quality), save it, and with
    ``--apply`` write the scores it gives."""
    from bosaris_dask import io
    from bosaris_dask.calibration import apply_model
    from bosaris_dask.fusion.fit_checks import FitWarning
    from bosaris_dask.objectives import TrialQuality

    if args.apply and args.out is None:
        raise OptionError("--apply needs --out (where to write the resulting scores)")
    trained = _system_names(args)
    if args.apply and len(trained) > 1:  # before the fit: the same systems, in another order
        _check_order(args, trained, system_names(args.apply), args.model_out)
    if not args.apply:
        idle = [option for option, value in (
            ("--out", args.out), ("--ndx", args.ndx), ("--fill-missing", args.fill_missing),
            ("--apply-quality", getattr(args, "apply_quality", None)),
            ("--mat-version", args.mat_version), ("--header", args.header or None),
        ) if value is not None]  # fmt: skip
        if idle:
            raise OptionError(
                f"{', '.join(idle)} only {'applies' if len(idle) == 1 else 'apply'} with --apply "
                f"(the eval scores to "
                f"{args.command} and write): give --apply, or leave them out"
            )
    else:
        output_options(args, args.out)  # a --mat-version or --header refused before the fit
    # the eval set's quality store read (lazily) before the fit: a wrong file fails first
    eval_store = (_read_quality(args, args.apply_quality, "--apply-quality")
                  if getattr(args, "apply_quality", None) else None)  # fmt: skip
    opened = _opened(args, open_inputs, lambda inputs: _size(inputs[0]))
    with opened as (key, systems, quality), showing_progress(_progress(args)):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)  # said in one line each, below
            try:
                if quality is None:
                    train = systems if len(systems) > 1 or args.command == "fuse" else systems[0]
                    model.fit(train, key, allow_missing=args.allow_missing, names=trained)
                else:
                    model.fit(systems, key, quality, allow_missing=args.allow_missing,
                              names=trained)  # fmt: skip
            except NoClassError as exc:
                raise _no_class_error(args, exc, key) from None
        model.llr_base_ = args.llr_base  # what the model was trained on, kept in its JSON
        model.save(args.model_out)
        doc = model.to_dict()
        elapsed = time.perf_counter() - start
        if "iterations" in doc:
            fitted = (f"objective {doc['objective']:.6g} after {doc['iterations']} "
                      f"iteration{'s' * (doc['iterations'] != 1)}, {doc['passes']} "
                      f"pass{'es' * (doc['passes'] != 1)} over the data")  # fmt: skip
        else:
            fitted = f"{len(doc['score_bounds']) // 2} PAV blocks"
        if doc.get("n_missing"):
            fitted += f"; dropped {doc['n_missing']:,} key trials without a score"
        if doc.get("n_no_quality"):
            fitted += (f"; {doc['n_no_quality']:,} trials without quality trained the linear "
                       "stage only")  # fmt: skip
        _say(args, f"{doc['kind'].replace('_', ' ')}: {fitted} ({elapsed:.1f} s); wrote "
                   f"{args.model_out}")  # fmt: skip
        for note in doc.get("warnings", []):
            print(f"warning: {note}", file=sys.stderr)
        if isinstance(quality, TrialQuality):  # packed training trials: the ids' quality
            quality = quality.quality

        def eval_quality() -> Any:  # --apply-quality, else the training ids' quality
            if quality is None or args.apply_quality is None:
                return quality  # (not the training tables read a second time)
            return eval_store

        if args.apply and keeps_line_order(args, args.apply):
            targets, fitted_out = apply_in_order(args, model, args.apply, quality=eval_quality)
            _say(args, f"wrote {args.out}")
            if args.command == "fuse" and not args.quiet:
                _say(args, _posterior_report(args, model, targets, fitted_out, None))
        elif args.apply:
            targets = [_read_scores(args, p) for p in args.apply]
            evaluated = eval_quality()
            ndx = _read_ndx(args.ndx, _text_formats(args)[0])
            fitted_out = apply_model(
                model, targets, quality=evaluated, ndx=ndx, llr_base="e"
            )  # the targets are natural-log LLRs already
            out = _fill_missing(args, _in_user_base(args, fitted_out), ndx)
            _say_unwritten(args, out, targets, ndx, args.apply[0])
            try:
                # the report before the write: --out may be one of the --apply stores, which
                # the write replaces under the lazily opened inputs
                report = (
                    _posterior_report(args, model, targets, fitted_out, ndx)
                    if args.command == "fuse" and not args.quiet
                    else None
                )
                io.write(out, args.out, progress=_progress(args),
                         **output_options(args, args.out))  # fmt: skip
            except ScoreError as exc:  # a non-finite score among the inputs, most likely
                raise _named_nonfinite(exc, targets, system_names(args.apply)) from None
            _say(args, f"wrote {args.out}")
            if report is not None:
                _say(args, report)
    return 0


def _check_order(
    args: argparse.Namespace, trained: list[str] | None, given: list[str], model: str
) -> None:
    """Refuse a fusion's systems given in another order than trained
    (:func:`~bosaris_dask.fusion.base.check_system_order`); where their names cannot tell
    (other files, named otherwise), say which trained system each given one stands for."""
    from bosaris_dask.fusion.base import check_system_order, order_checkable

    check_system_order(trained, given, model)
    if trained and len(trained) > 1 and not order_checkable(trained, given):
        pairs = ", ".join(f"{g} as {t}" for t, g in zip(trained, given, strict=False))
        _say(args, f"{model}: the systems are taken in the order given ({pairs}); their names "
                   "differ from the training ones, so the order cannot be checked")  # fmt: skip


def _system_names(args: argparse.Namespace) -> list[str]:
    """The names of the ``--scores`` systems (then the one scored from embeddings), as
    ``evaluate`` names them."""
    from bosaris_dask.cli.embeddings import embedding_system_name, uses_embeddings

    paths = [args.scores] if isinstance(args.scores, str) else list(args.scores or [])
    return system_names(paths, [embedding_system_name(args)] if uses_embeddings(args) else [])


def _read_ndx(path: str | None, text_format: str | None = None) -> Any:
    """The trial list of ``--ndx`` (an Ndx, or a Key's trials; a text one in layout
    ``text_format``, ``None``: detected), or ``None`` without one."""
    from bosaris_dask import io
    from bosaris_dask.trials import kind_of

    if path is None:
        return None
    ndx = io.read(path, text_format=text_format)
    if kind_of(ndx) not in ("ndx", "key"):
        raise OptionError(f"--ndx {path} holds {kind_of(ndx)}, not a trial list (an Ndx or a "
                          "Key)")  # fmt: skip
    return ndx


def _no_class_error(args: argparse.Namespace, exc: NoClassError, key: Any) -> ScoreError:
    """A fit's error that it found no target or no non-target, naming the key if it has
    none, else giving the key's counts (the scores lack the rest: one more look at the key,
    on this error path only)."""
    from bosaris_dask.progress import compute

    text = exc.args[0] if exc.args else ""
    mask = key.trial_mask.data
    n_tar, n_non = (int(n) for n in compute(((mask == 1).sum(), (mask == -1).sum()),
                                            progress=None))  # fmt: skip
    if not (n_tar and n_non):
        named = args.key or (f"the key of {getattr(args, 'enrol_classes', None)} x "
                             f"{getattr(args, 'test_classes', None)}")  # fmt: skip
        return ScoreError(f"{named}: {text}")
    dropped = " (--allow-missing dropped them)" if args.allow_missing else ""
    names = _system_names(args)
    where = names[0] if len(names) == 1 else "some system"
    return ScoreError(f"{text}, of the key's {n_tar:,} targets and {n_non:,} non-targets: "
                      f"the others have no score in {where}{dropped}")  # fmt: skip


def _posterior_report(
    args: argparse.Namespace, model: Any, systems: list[Any], fused: Any, ndx: Any
) -> str:
    """For ``fuse --apply``: each eval system's (and the fusion's) estimated target proportion
    and the pairwise KL divergences of their posteriors, at the model's prior."""
    from bosaris_dask.cli.common import _system_name
    from bosaris_dask.fusion.diagnostics import format_posterior_report, posterior_report
    from bosaris_dask.inputs import names_or_default

    names = [_system_name(p) for p in args.apply]
    if len(set(names)) < len(names) or "fused" in names:  # names must tell the systems apart
        names = names_or_default(None, len(names))
    names.append("fused")
    report = posterior_report([*systems, fused], prior=model.train_prior, names=names, ndx=ndx)
    return format_posterior_report(report)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from bosaris_dask.calibration import LinearCalibrator, PAVCalibrator

    if isinstance(args.apply, str):  # one system (the parser refuses a second)
        args.apply = [args.apply]
    score_paths = [] if args.scores is None else [args.scores]
    if _count_systems(args, score_paths) != 1:
        raise OptionError("calibrate trains on the scores of one system: give --scores, or "
                          "--enrol and --test"
                          + (", not both" if score_paths else " (neither was given)"))  # fmt: skip
    if args.method == "linear":
        model = LinearCalibrator(_train_prior(args), l2=args.l2, **_iterations(args))
    elif args.l2 or args.max_iter is not None or args.train_prior is not None:
        option = (
            "--l2 is a penalty" if args.l2 else "--max-iter bounds the iterations"
            if args.max_iter is not None else "--train-prior is the prior of the objective"
        )  # fmt: skip
        raise OptionError(f"{option} of the linear calibration, not of PAV")
    else:
        model = PAVCalibrator()

    def open_inputs() -> tuple[Any, list[Any], Any]:
        return *_key_and_systems(args, score_paths, args.llr_base), None

    return _fit_and_apply(args, model, open_inputs)


def cmd_fuse(args: argparse.Namespace) -> int:
    from bosaris_dask.fusion import LinearFuser, QualityFuser

    n_systems = _count_systems(args, args.scores)
    if args.apply and len(args.apply) != n_systems:
        raise OptionError(
            f"--apply takes the eval scores of the same {n_systems} systems, in the same "
            f"order; got {len(args.apply)}"
        )

    qtrans = _read_qtrans(getattr(args, "qtrans", None))
    check_quality_sources(args)
    with_quality = args.quality or args.model_quality or args.segment_quality
    if qtrans is not None and not with_quality:
        raise BosarisError("--qtrans maps quality measures: give them (--quality, ...)")

    def open_inputs() -> tuple[Any, list[Any], Any]:
        from bosaris_dask.cli.packed_inputs import packed_quality

        # the tables first: their errors come before the lists' (packing finds a missing
        # score while reading, the grid only in the first pass)
        quality = _read_quality(args, args.quality)
        key, systems = _key_and_systems(args, args.scores or [], args.llr_base)
        return key, systems, packed_quality(args, quality)

    if getattr(args, "apply_quality", None) and not with_quality:
        raise OptionError(
            "--apply-quality is the eval set's quality for a quality fusion: train one with "
            "--quality (or --model-quality/--segment-quality)"
        )
    prior = _train_prior(args)
    if with_quality:
        model: Any = QualityFuser(prior, qtrans=qtrans, l2=args.l2, **_iterations(args))
    else:
        model = LinearFuser(prior, l2=args.l2, **_iterations(args))
    return _fit_and_apply(args, model, open_inputs)


def _train_prior(args: argparse.Namespace) -> float:
    """``--train-prior``, 0.5 where it is not given."""
    return 0.5 if args.train_prior is None else args.train_prior


def _iterations(args: argparse.Namespace) -> dict[str, int]:
    """``max_iter`` for a logistic model where ``--max-iter`` is given (else its default)."""
    return {} if args.max_iter is None else {"max_iter": args.max_iter}


def _read_qtrans(path: str | None) -> Any:
    """The ``--qtrans`` matrix: whitespace-separated numbers, one row per line."""
    if path is None:
        return None
    import numpy as np

    from bosaris_dask.errors import ParseError

    try:
        matrix = np.loadtxt(path, ndmin=2, dtype=np.float64)
    except OSError as exc:
        raise BosarisError(f"{path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ParseError(f"not a matrix of numbers ({exc})", path=path) from None
    if matrix.size == 0 or not np.isfinite(matrix).all():
        raise ParseError("Qtrans must be a non-empty matrix of finite numbers", path=path)
    return matrix


def cmd_apply(args: argparse.Namespace) -> int:
    from bosaris_dask import io
    from bosaris_dask.calibration import apply_model, load_model

    output_options(args, args.out)  # a --mat-version or --header refused first
    model = load_model(args.model)  # read once: its weights, LLR base and systems' names
    _check_order(args, model.systems_, _system_names(args), args.model)
    trained = model.llr_base_
    if args.llr_base is None:
        args.llr_base = trained
        if trained != "e":
            _say(args, f"reading and writing base-{trained} LLRs, as the model was trained "
                       f"(--llr-base {trained})")  # fmt: skip
    elif args.llr_base != trained:
        print(f"warning: the model was trained on base-{trained} LLRs, and --llr-base "
              f"{args.llr_base} reads these scores as base-{args.llr_base} LLRs",
              file=sys.stderr)  # fmt: skip

    quality_options = {"--quality": args.quality, "--model-quality": args.model_quality,
                       "--segment-quality": args.segment_quality}  # fmt: skip
    check_quality_sources(args)
    given_quality = [option for option, value in quality_options.items() if value]
    if model.kind == "quality_fusion" and not given_quality:
        raise OptionError(f"{args.model} is a quality fusion: give the scores' quality measures "
                          "(--quality STORE, or --model-quality and --segment-quality "
                          "tables)")  # fmt: skip
    if model.kind != "quality_fusion" and given_quality:
        raise OptionError(f"{args.model} is a {model.description}, which takes no quality "
                          f"measures: leave out {', '.join(given_quality)}")  # fmt: skip
    n_model = len(model.weights_) if getattr(model, "weights_", None) is not None else 1
    given = _count_systems(args, args.scores)
    if given != n_model:
        plural = "s" * (n_model > 1)
        raise OptionError(f"{args.model} is a {model.description} of {n_model} "
                          f"system{plural}: give {n_model} --scores (in the order it was "
                          f"trained), not {given}")  # fmt: skip

    def open_inputs() -> tuple[Any, list[Any], Any, Any]:
        key_format, text_format = _text_formats(args)
        ndx = _read_ndx(args.ndx, key_format)
        systems = _systems(args, ndx, args.scores or [], text_format, args.llr_base)
        return model, systems, _read_quality(args, args.quality), ndx

    from bosaris_dask.cli.embeddings import uses_embeddings

    embeddings = uses_embeddings(args)
    if keeps_line_order(args, args.scores or [], embeddings):
        with _cluster(args, size_hint=0):  # lists in memory: threads unless told
            apply_in_order(args, model, args.scores or [], embeddings,
                           quality=lambda: _read_quality(args, args.quality))  # fmt: skip
        _say(args, f"wrote {args.out}")
        return 0
    with _opened(args, open_inputs, lambda inputs: _size(inputs[1][0])) as inputs:
        model, systems, quality, ndx = inputs
        out = apply_model(model, systems, quality=quality, ndx=ndx, llr_base="e")  # converted
        out = _fill_missing(args, _in_user_base(args, out), ndx)
        _say_unwritten(args, out, systems, ndx, (args.scores or [None])[0])
        try:
            io.write(out, args.out, progress=_progress(args), **output_options(args, args.out))
        except ScoreError as exc:  # a non-finite score among the inputs, most likely
            raise _named_nonfinite(exc, systems, _system_names(args)) from None
    _say(args, f"wrote {args.out}")
    return 0


def _named_nonfinite(exc: ScoreError, systems: list[Any], names: list[str]) -> ScoreError:
    """An applied model's error of non-finite LLRs, with the first input system (by
    ``names``) holding a non-finite score and a few of its trials (found by one more look at
    the data, on this error path only); the error as it was where no input score is
    non-finite (the LLRs overflowed)."""
    import dask.array as da

    from bosaris_dask.inputs import trial_cells_error
    from bosaris_dask.progress import compute

    for name, system in zip(names, systems, strict=False):
        bad = system.score_mask.data & ~da.isfinite(system.score.data)
        n = int(compute(bad.sum(), progress=None))
        if n:
            return trial_cells_error(name, bad, system.model.values, system.segment.values, n)
    return exc
