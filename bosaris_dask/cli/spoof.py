"""``bosaris-dask spoof cm|sasv``: the ASVspoof 5 metrics of a countermeasure or a SASV system.

``cm`` reads a track-1 key and score file; ``sasv`` a track-2 pair (the evaluation package's
formats, :mod:`bosaris_dask.spoofing.files`), or the set of zarr stores ``--out-dir``
writes from them and ``--set-dir`` reads (:mod:`bosaris_dask.spoofing.stores`). Both print
a table and, with ``--json``, write the numbers with the costs they were computed with. A key
trial without a score is an error, unless ``--allow-missing``: the text readers then leave it
out of the key (so ``--out-dir`` writes only the scored trials), the engine out of the
stores' metrics, and the count is said on stderr and is ``n_missing`` in the JSON. The
metrics come from one engine call (:mod:`bosaris_dask.spoofing.scale`: exact, out of core,
on the cluster the options name); the t-EER too, gathered into memory up to
:data:`~bosaris_dask.spoofing.scale.T_EER_MAX_TRIALS` key cells and refined by the engine
above.
"""

from __future__ import annotations

import argparse
from typing import Any

from bosaris_dask.cli.common import _opened, _progress, _say, _write_json


def _open(args: argparse.Namespace) -> tuple[Any, dict[str, Any], int]:
    """The key, the score columns and the count of key trials dropped for want of a score
    (``--allow-missing``, text files: stores keep theirs, for the engine to drop): the
    challenge's text files, a key and a Scores store (cm), or a set of stores
    (``--set-dir``)."""
    from bosaris_dask.errors import OptionError
    from bosaris_dask.io import detect_format, read
    from bosaris_dask.spoofing import files, matching, stores

    if args.set_dir is not None:
        if args.key is not None or args.scores is not None:
            raise OptionError("--set-dir replaces --key and --scores: give one or the other")
        key_path = f"{args.set_dir}/key.zarr"
        key = _cm_key_checked(args, stores.read_key(key_path), key_path)
        columns = stores.read_scores(args.set_dir)
        if args.task == "cm":
            if "cm" not in columns:
                raise OptionError(f"{args.set_dir}: no cm.zarr for 'spoof cm'")
            columns = {"cm": columns["cm"]}
        return key, columns, 0
    if args.key is None or args.scores is None:
        raise OptionError("give --key and --scores (the challenge's files), or --set-dir")
    zarr_key, zarr_scores = (detect_format(p) == "zarr" for p in (args.key, args.scores))
    if zarr_key or zarr_scores:
        if args.task != "cm" or not (zarr_key and zarr_scores):
            raise OptionError(
                "--key and --scores are the challenge's text files (or, for "
                "'spoof cm', a key and a Scores store); stores of a set: --set-dir"
            )
        key = _cm_key_checked(args, stores.read_key(args.key), args.key)
        return key, {"cm": read(args.scores, "scores")}, 0
    if args.task == "cm":
        text_key = files.read_cm_key(args.key)
        key, scores = matching.cm_key_and_scores(files.read_cm_scores(args.scores), text_key,
                                                 allow_missing=args.allow_missing)  # fmt: skip
        columns = {"cm": scores}
    else:
        text_key = files.read_sasv_key(args.key)
        scores = files.read_sasv_scores(args.scores)
        key, columns = matching.sasv_key_and_scores(scores, text_key,
                                                    allow_missing=args.allow_missing)  # fmt: skip
    return key, columns, text_key.filename.size - key.sizes["segment"]


def _cm_key_checked(args: argparse.Namespace, key: Any, path: str) -> Any:
    """The key store of ``path``, or for ``spoof cm`` given an SASV key (its non-targets mix
    ASV non-targets with spoofs, its files recur once per claimed speaker) the error that
    says which command reads it."""
    from bosaris_dask.errors import OptionError
    from bosaris_dask.spoofing.keys import SPOOF_COORD

    if args.task == "cm" and SPOOF_COORD in key.coords:
        raise OptionError(f"{path}: an SASV key (trials of claimed speakers, spoofed or not): "
                          "'spoof sasv' evaluates it (its CM scores enter the t-DCF and the "
                          "t-EER); 'spoof cm' takes a CM set, as 'spoof cm --out-dir' "
                          "writes it")  # fmt: skip
    return key


def _dropped(args: argparse.Namespace, n: int, by_column: dict[str, int] | None = None) -> None:
    """Say how many key trials were dropped for want of a score (per column where the
    stores of a set lack different numbers: each column's metrics drop its own)."""
    if by_column:
        each = ", ".join(f"{name} {count:,}" for name, count in by_column.items())
        _say(args, f"dropped key trials without a score, each column its own: {each}")
    elif n:
        _say(args, f"dropped {n:,} key trials without a score")


def _size(opened: tuple[Any, dict[str, Any], int]) -> int:
    key = opened[0]
    return int(key.sizes["model"] * key.sizes["segment"])


def _cm(args: argparse.Namespace, key: Any, columns: dict[str, Any]) -> dict[str, Any]:
    from bosaris_dask.spoofing.scale import evaluate_cm

    return evaluate_cm(columns["cm"], key, allow_missing=args.allow_missing,
                       progress=_progress(args))  # fmt: skip


def _sasv(args: argparse.Namespace, key: Any, columns: dict[str, Any]) -> dict[str, Any]:
    from bosaris_dask.errors import OptionError
    from bosaris_dask.spoofing.scale import evaluate_sasv

    if args.asv_rates == "given" and "asv" not in columns:
        where = args.scores if args.scores is not None else args.set_dir
        raise OptionError(f"--asv-rates given counts the ASV rates from the ASV scores, and "
                          f"{where} has none (its asv-score column is '-' or absent): use "
                          "--asv-rates fixed")  # fmt: skip

    return evaluate_sasv(key, **columns, asv_rates=args.asv_rates,
                         allow_missing=args.allow_missing, progress=_progress(args))  # fmt: skip


def format_spoof(doc: dict[str, Any]) -> str:
    """The printed table of :func:`cmd_spoof`'s results (rates in percent, DCFs as numbers)."""
    c = doc["costs"]
    if doc["task"] == "cm":
        lines = [
            f"ASVspoof 5 countermeasure: {doc['n_bonafide']} bona fide, {doc['n_spoof']} spoof",
            f"costs: Pspoof {c['p_spoof']:g}, Cmiss {c['c_miss']:g}, Cfa {c['c_fa']:g} "
            f"(effective prior {c['effective_prior']:.6f})",
            "",
            f"{'minDCF':<24}{doc['min_dcf']:.4f}",
            f"{'actDCF':<24}{doc['act_dcf']:.4f}  (accept s >= {doc['act_threshold']:.4f})",
            f"{'EER (package)':<24}{100 * doc['eer']:.3f} %",
            f"{'ROCCH-EER':<24}{100 * doc['eer_rocch']:.3f} %",
            f"{'Cllr (bits)':<24}{doc['cllr']:.4f}",
            f"{'passes over the data':<24}{doc['passes']}",
        ]
        return "\n".join(lines)
    lines = []
    if "n_target" in doc:
        lines.append(f"ASVspoof 5 SASV: {doc['n_target']} target, {doc['n_nontarget']} "
                     f"non-target, {doc['n_spoof']} spoof")  # fmt: skip
    lines.append(
        f"costs: Ptar {c['p_target']:g}, Pnon {c['p_nontarget']:g}, Pspoof {c['p_spoof']:g}, "
        f"Cmiss {c['c_miss']:g}, Cfa {c['c_fa']:g}, Cfa,spoof {c['c_fa_spoof']:g}"
    )
    r = doc.get("asv_rates")
    note = doc.get("min_t_dcf_note", "")
    t_dcf = doc.get("min_t_dcf") is not None or not note.startswith(("needs ", "not asked"))
    if r is not None and t_dcf:  # (the t-DCF's: said only where it is computed)
        where = f" at threshold {r['threshold']:.4f}" if r["threshold"] is not None else ""
        rates = (f"Pmiss {100 * r['pmiss']:.3f} %, Pfa {100 * r['pfa']:.3f} %, "
                 f"Pfa,spoof {100 * r['pfa_spoof']:.3f} %")  # fmt: skip
        lines.append(f"ASV rates ({r['source']}{where}): {rates}")
    lines.append("")
    for name, label, column in (("min_a_dcf", "min a-DCF", "SASV"),
                                ("min_t_dcf", "min t-DCF", "CM")):  # fmt: skip
        if doc.get(name) is not None:
            lines.append(f"{label:<24}{doc[name]:.4f}"
                         f"  ({column} score >= {doc[f'{name}_threshold']:.4f})")  # fmt: skip
        elif f"{name}_note" in doc:
            lines.append(f"{label:<24}{_not_reported(doc[f'{name}_note'])}")
    if doc.get("t_eer") is not None:
        lines += _t_eer_lines(doc)
    elif "t_eer_note" in doc:
        lines.append(f"{'t-EER (exact)':<24}{_not_reported(doc['t_eer_note'])}")
    else:
        lines.append(f"{'t-EER (exact)':<24}undefined")
    lines.append(f"{'passes over the data':<24}{doc['passes']}")
    return "\n".join(lines)


def _t_eer_lines(doc: dict[str, Any]) -> list[str]:
    """The t-EER with the tandem rates at its point, and a note where they are far apart
    (more than a factor of two): the rule (FIELD_METRICS.md) then found no equal-error point,
    e.g. a chance-level system's t-EER is 100 % at rates of 0 and 100 %."""
    pmiss, pfa = doc["t_eer_pmiss"], doc["t_eer_pfa"]
    lines = [f"{'t-EER (exact)':<24}{100 * doc['t_eer']:.3f} %  (tandem Pmiss "
             f"{100 * pmiss:.3f} %, Pfa {100 * pfa:.3f} % there)"]  # fmt: skip
    if max(pmiss, pfa) > 2 * min(pmiss, pfa):
        lines.append(f"{'':<24}the tandem rates there are far apart: no equal-error point, "
                     "the value is the ASVspoof 5 rule's")  # fmt: skip
    return lines


def _not_reported(note: str) -> str:
    """A metric's cell without a value: ``-`` where it was not computed (its scores not given,
    or not asked for), ``undefined`` where the data leave it without a value; and why."""
    computed = not note.startswith(("needs ", "not asked"))
    return f"{'undefined' if computed else '-'}  ({note})"


def _finite(value: Any) -> Any:
    """NaN (no t-EER) as JSON ``null``, recursively."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return None if isinstance(value, float) and value != value else value


def _stores(args: argparse.Namespace) -> bool:
    """Whether the inputs are zarr stores (``--set-dir``, or a key and a Scores store)."""
    from bosaris_dask.io import detect_format

    return args.set_dir is not None or any(
        p is not None and detect_format(p) == "zarr" for p in (args.key, args.scores)
    )


def cmd_spoof(args: argparse.Namespace) -> int:
    from bosaris_dask.errors import OptionError

    if args.task == "cm" and args.asv_rates is not None:
        raise OptionError("--asv-rates is for 'spoof sasv' (the t-DCF), not 'spoof cm'")
    if args.out_dir and (args.json or args.asv_rates is not None):
        idle = "--json" if args.json else "--asv-rates"
        raise OptionError(
            f"--out-dir writes the set's stores and evaluates nothing, so {idle} has no "
            "effect: run the evaluation on the stores after"
        )
    if args.out_dir and args.allow_missing and _stores(args):
        raise OptionError(
            "--out-dir copies stores as they are (their trials without a score stay), so "
            "--allow-missing has no effect: give it to the evaluation of the stores"
        )
    args.asv_rates = args.asv_rates or "fixed"
    with _opened(args, lambda: _open(args), _size) as (key, columns, dropped):
        if args.out_dir:
            from bosaris_dask.spoofing.stores import write_set

            _dropped(args, dropped)
            paths = write_set(args.out_dir, key, columns, progress=_progress(args))
            _say(args, "wrote " + ", ".join(str(p) for p in paths))
            return 0
        doc = _finite((_cm if args.task == "cm" else _sasv)(args, key, columns))
    doc["n_missing"] += dropped  # the text files' (left out of the key) or the stores'
    _dropped(args, doc["n_missing"], doc.get("n_missing_by_column"))
    print(format_spoof(doc))
    if args.json:
        _write_json(args.json, doc)
        _say(args, f"wrote {args.json}")
    return 0
