"""Subcommands that evaluate scores: ``evaluate`` and ``plot`` (those that train on them or
apply a model: :mod:`bosaris_dask.cli.training`).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from bosaris_dask.cli.common import (
    _bootstrap_options,
    _count_systems,
    _default_priors,
    _evaluate,
    _load,
    _opened,
    _say,
    _size,
    _text_formats,
    _write_json,
)
from bosaris_dask.errors import BosarisError, OptionError


def cmd_evaluate(args: argparse.Namespace) -> int:
    from bosaris_dask.profiles import annotate_json, cprimary_priors, eer_lines
    from bosaris_dask.report import format_table, to_json_dict

    explicit = bool(args.prior or args.operating_point)
    profile = _profile(args)
    replaced = getattr(args, "profile_replaced", [])
    if not args.cprimary_priors:  # the profile's Cprimary is the evaluation's own (per condition)
        args.cprimary_priors = cprimary_priors(profile, explicit)
    _default_priors(args)
    args.ece_plo = _ece_grid(args, with_operating_points=True) if args.ece or args.ece_plo else None
    _check_bootstrap_options(args)
    start = time.perf_counter()

    def open_inputs() -> tuple[Any, list[Any]]:
        return _load(args.key, args.scores, _text_formats(args), args.llr_base, args)

    with _opened(args, open_inputs, lambda ks: _size(ks[0])) as loaded:
        key, systems = loaded
        results = _evaluate(args, key, systems, args.scores)
        elapsed = time.perf_counter() - start
        print(format_table(results))
        if profile is not None:
            print("\n" + "\n".join(eer_lines(profile)))
        _say(args, f"\n{results.attrs['passes']} passes over the data in {elapsed:.1f} s")
        if args.json:
            doc = to_json_dict(results)
            _write_json(args.json, annotate_json(doc, profile, replaced) if profile else doc)
            _say(args, f"wrote {args.json}")
        if args.plots_dir:
            from bosaris_dask.plots import save_standard_plots

            written = save_standard_plots(results, args.plots_dir)
            _say(args, f"wrote {', '.join(str(p) for p in written)}")
    return 0


def _check_bootstrap_options(args: argparse.Namespace) -> None:
    """The bootstrap's options checked before any input is read, so that their errors come
    first whether the lists are read packed or as their grid (which read the condition tables
    at different times)."""
    given = _bootstrap_options(args)
    if given:  # (the bootstrap's modules imported only then: 0.1 s)
        from bosaris_dask.bootstrap.evaluation import check_options

        check_options(given["ci"], given["bootstrap"], given["resample"], given["compare"],
                      args.conditions or ())  # fmt: skip


def _profile(args: argparse.Namespace) -> Any:
    """``args.profile`` applied (:func:`~bosaris_dask.profiles.apply_profile`), with a warning
    where options given replace its numbers."""
    from bosaris_dask.profiles import apply_profile, replaced_note

    profile = apply_profile(args)
    if profile is not None and (note := replaced_note(profile, args.profile_replaced)):
        print(f"warning: {note}", file=sys.stderr)
    return profile


def cmd_plot(args: argparse.Namespace) -> int:
    from bosaris_dask.plots import save_plot

    for option, dest, kinds in _PLOT_OPTIONS:  # as given, before a profile adds its own
        value = getattr(args, dest, None)
        if value not in (None, False, []) and not (dest == "dr30" and value == "both"):
            if args.kind not in kinds:
                raise OptionError(f"{option} is for {' and '.join(kinds)} plots: 'plot "
                                  f"{args.kind}' would not use it")  # fmt: skip
    if args.max_curves is not None and not args.by:
        raise OptionError("--max-curves is for plots with --by (a curve per system and "
                          "condition): without it, there is one curve per system")  # fmt: skip
    from bosaris_dask.plots._common import check_plot_path

    check_plot_path(args.out)  # before any pass: a bad --out would waste them all
    if args.kind == "det" and args.window not in (None, "auto"):
        from bosaris_dask.plots.axes import resolve_window

        resolve_window(args.window)
    given = bool(args.fmr or args.fnmr)
    profile = _profile(args)
    if args.kind != "det" and (args.fmr or args.fnmr):  # before any input is read
        what = "--fmr/--fnmr points" if given else f"profile {profile.name}'s FMR points"
        raise OptionError(f"{what} are marked on DET plots only: run 'bosaris-dask plot det' "
                          "(or 'bosaris-dask evaluate' for the table)")  # fmt: skip
    _default_priors(args)
    args.ece_plo = _ece_grid(args) if args.kind == "ece" else None
    eval_key, eval_scores = getattr(args, "eval_key", None), getattr(args, "eval_scores", None)
    if (eval_key is None) != (eval_scores is None):
        raise BosarisError("--eval-key and --eval-scores go together")
    n_systems = _count_systems(args, args.scores)
    if eval_scores is not None and len(eval_scores) != n_systems:
        raise BosarisError(
            f"--eval-scores takes the eval scores of the same {n_systems} systems, in the "
            f"same order; got {len(eval_scores)}"
        )

    def open_inputs() -> tuple[Any, list[Any]]:
        return _load(args.key, args.scores, _text_formats(args), args.llr_base, args)

    with _opened(args, open_inputs, lambda ks: _size(ks[0])) as loaded:
        results: Any = _evaluate(args, *loaded, args.scores)
        if eval_key is not None:  # each eval curve is named after its own file ("[eval]")
            eval_inputs = _load(eval_key, eval_scores, _text_formats(args), args.llr_base,
                                packing=args)  # fmt: skip
            evaluated = _evaluate(args, *eval_inputs, eval_scores)
            results = {"dev": results, "eval": evaluated}
    for name, result in results.items() if isinstance(results, dict) else [("", results)]:
        _say_dropped(args, result, name)
    if getattr(args, "by", None):  # a curve per (system, condition)
        if isinstance(results, dict):  # dev's conditions for eval too: curves to compare
            (first, dev), *rest = results.items()
            drawn, chosen = _curves_per_condition(args, dev, first, sets=len(results))
            results = {first: drawn} | {k: _curves_per_condition(args, v, k, chosen=chosen)[0]
                                        for k, v in rest}  # fmt: skip
        else:
            results = _curves_per_condition(args, results)[0]
    options: dict[str, Any] = {"window": args.window} if args.kind == "det" and args.window else {}
    if args.kind in ("det", "nbe"):
        options["dr30"] = args.dr30
    if args.kind == "nbe":
        options["contributions"] = args.contributions or eval_key is not None
        if args.ymax is not None:
            options["ylim"] = (0.0, args.ymax)
    save_plot(results, args.kind, args.out, **options)
    _say(args, f"wrote {args.out}")
    return 0


def _say_dropped(args: argparse.Namespace, results: Any, name: str) -> None:
    """Say the key trials without a score that ``--allow-missing`` dropped, per system (as
    evaluate's table does), of the ``name``d set of a plot of two."""
    where = f" ({name})" if name else ""
    for system, n in zip(results.system.values, results["n_missing"].values.tolist(),
                         strict=True):  # fmt: skip
        if n:
            _say(args, f"{system}{where}: {n:,} key trials without a score dropped")


def _curves_per_condition(
    args: argparse.Namespace, results: Any, name: str = "", *, sets: int = 1,
    chosen: list[str] | None = None,
) -> tuple[Any, list[str] | None]:  # fmt: skip
    """The per-condition results as systems (a curve each), and the conditions drawn when
    not all: those of the ``chosen`` labels, or of the ``--max-curves`` (shared by ``sets``
    Datasets in one plot) with the most targets (then non-targets). Every condition left out,
    for having no targets or non-targets, is named (the first five); those past the limit are
    counted, with the fewest targets a drawn condition has (in one system)."""
    import numpy as np

    from bosaris_dask.conditions.evaluation import PREFIX, conditions_as_systems

    n_tar = results[PREFIX + "n_target"].values
    n_non = results[PREFIX + "n_nontarget"].values
    labels = results.condition.values
    where = f" ({name})" if name else ""
    empty = np.argwhere((n_tar * n_non == 0).T)  # (condition, system) pairs without a curve
    if len(empty):
        left = [f"{results.system.values[j]} [{labels[g]}]" for g, j in empty[:5].tolist()]
        more = f" and {len(empty) - 5:,} more" if len(empty) > 5 else ""
        _say(args, f"no curve for {', '.join(left)}{more}{where}: no targets or no non-targets")
    if chosen is not None:
        return conditions_as_systems(results.sel(condition=[c for c in chosen if c in labels])
                                     ), chosen  # fmt: skip
    drawn = np.flatnonzero((n_tar * n_non > 0).any(axis=0))
    most = max(1, (args.max_curves or MAX_CURVES) // (results.sizes["system"] * sets))
    if len(drawn) <= most:
        return conditions_as_systems(results), None
    tar, non = n_tar.sum(axis=0)[drawn], n_non.sum(axis=0)[drawn]  # most targets, non-targets,
    top = np.sort(drawn[np.lexsort((drawn, -non, -tar))[:most]])  # then the given order
    same = "; the same conditions for each set of curves" if sets > 1 else ""
    _say(args, f"drawing {most:,} of the {len(drawn):,} conditions with a curve{where}: those "
         f"with the most targets, down to {int(n_tar.max(axis=0)[top].min()):,} (--max-curves "
         f"N draws more){same}")  # fmt: skip
    return conditions_as_systems(results.isel(condition=top)), [str(c) for c in labels[top]]


#: The most (system, condition) curves a plot with ``--by`` draws unless ``--max-curves``.
MAX_CURVES = 20

#: The plot options that some kinds of plot use: (option, its dest, the kinds that use it).
_PLOT_OPTIONS = (
    ("--prior", "prior", ("det", "nbe")),
    ("--operating-point", "operating_point", ("det", "nbe")),
    ("--window", "window", ("det",)),
    ("--dr30", "dr30", ("det", "nbe")),
    ("--contributions", "contributions", ("nbe",)),
    ("--ymax", "ymax", ("nbe",)),
    ("--ece-plo", "ece_plo", ("ece",)),
)


def _ece_grid(args: argparse.Namespace, *, with_operating_points: bool = False) -> Any:
    """The ECE grid in natural prior log-odds: the ``--ece-plo`` values (in the LLRs' base, as
    the plot's axis and the JSON give them) or the default grid, sorted, each once; with
    ``with_operating_points``, also the prior log-odds of the reported operating points (the
    printed table shows the ECE there)."""
    import numpy as np

    from bosaris_dask.ece import DEFAULT_ECE_PLO
    from bosaris_dask.llr_base import log_of_base

    if args.ece_plo:
        grid = np.concatenate(args.ece_plo) * log_of_base(getattr(args, "llr_base", None) or "e")
    else:
        grid = DEFAULT_ECE_PLO
    if with_operating_points:
        from bosaris_dask.measures import stated_plo
        from bosaris_dask.metrics import stated_operating_points

        points = stated_operating_points(args.prior, args.operating_point or ())
        grid = np.concatenate([grid, stated_plo(points)])
    return np.unique(np.asarray(grid, dtype=np.float64))
