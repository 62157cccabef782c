"""``bosaris-dask spoof cm|sasv``: the ASVspoof 5 metrics of a countermeasure or a SASV system.

``cm`` reads a track-1 key and score file; ``sasv`` a track-2 pair (the evaluation package's
formats, :mod:`bosaris_dask.spoofing.files`). Both print a table and, with ``--json``, write the
numbers with the costs they were computed with. The files are read into memory (ASVspoof sets
are about 1e6 rows): the cluster options are accepted, like every subcommand's, and unused.
"""

from __future__ import annotations

import argparse
from typing import Any

from bosaris_dask.cli.common import _say, _write_json


def _cm(args: argparse.Namespace) -> dict[str, Any]:
    from bosaris_dask.costs import OperatingPoint
    from bosaris_dask.metrics import cllr, eer, evaluate_arrays, operating_points
    from bosaris_dask.spoofing import ASVSPOOF5, cm_arrays, cm_eer, read_cm_key, read_cm_scores

    bona, spoof = cm_arrays(read_cm_key(args.key), read_cm_scores(args.scores))
    costs = ASVSPOOF5
    point = OperatingPoint(costs.p_target + costs.p_nontarget, costs.c_miss, costs.c_fa_spoof)
    ds = operating_points(evaluate_arrays(bona, spoof, priors=[], operating_points=[point]))
    return {
        "task": "cm",
        "n_bonafide": int(bona.size),
        "n_spoof": int(spoof.size),
        "costs": {
            "p_spoof": costs.p_spoof,
            "c_miss": costs.c_miss,
            "c_fa": costs.c_fa_spoof,
            "effective_prior": costs.cm_effective_prior,
        },  # fmt: skip
        "min_dcf": float(ds.min_dcf.item()),
        "act_dcf": float(ds.act_dcf.item()),
        "act_threshold": float(ds.act_threshold.item()),
        "eer": cm_eer(bona, spoof),
        "eer_rocch": eer(bona, spoof),
        "cllr": cllr(bona, spoof),
    }


def _sasv(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    from bosaris_dask.spoofing import (
        ASVSPOOF5,
        FIXED_ASV_RATES,
        asv_rates,
        min_a_dcf,
        min_t_dcf,
        read_sasv_key,
        read_sasv_scores,
        sasv_arrays,
        t_eer,
    )

    x = sasv_arrays(read_sasv_key(args.key), read_sasv_scores(args.scores))
    cm, asv, sasv = x["cm"], x["asv"], x["sasv"]
    a_dcf, a_threshold = min_a_dcf(sasv["target"], sasv["nontarget"], sasv["spoof"], ASVSPOOF5)
    if args.asv_rates == "given":
        rates = asv_rates(asv["target"], asv["nontarget"], asv["spoof"])
    else:
        rates = FIXED_ASV_RATES
    bona = np.concatenate([cm["target"], cm["nontarget"]])
    t_dcf, t_threshold = min_t_dcf(bona, cm["spoof"], rates, ASVSPOOF5)
    teer = t_eer(cm["target"], cm["nontarget"], cm["spoof"],
                 asv["target"], asv["nontarget"], asv["spoof"])  # fmt: skip
    return {
        "task": "sasv",
        "n_target": int(sasv["target"].size),
        "n_nontarget": int(sasv["nontarget"].size),
        "n_spoof": int(sasv["spoof"].size),
        "costs": ASVSPOOF5.as_dict(),
        "min_a_dcf": a_dcf,
        "min_a_dcf_threshold": a_threshold,
        "asv_rates": {
            "source": args.asv_rates,
            "pmiss": rates.pmiss,
            "pfa": rates.pfa,
            "pfa_spoof": rates.pfa_spoof,
            "threshold": rates.threshold,
        },  # fmt: skip
        "min_t_dcf": t_dcf,
        "min_t_dcf_threshold": t_threshold,
        "t_eer": teer["t_eer"],
        "t_eer_asv_threshold": teer["asv_threshold"],
        "t_eer_cm_threshold": teer["cm_threshold"],
    }


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
        ]
        return "\n".join(lines)
    r = doc["asv_rates"]
    where = f" at threshold {r['threshold']:.4f}" if r["threshold"] is not None else ""
    lines = [
        f"ASVspoof 5 SASV: {doc['n_target']} target, {doc['n_nontarget']} non-target, "
        f"{doc['n_spoof']} spoof",
        f"costs: Ptar {c['p_target']:g}, Pnon {c['p_nontarget']:g}, Pspoof {c['p_spoof']:g}, "
        f"Cmiss {c['c_miss']:g}, Cfa {c['c_fa']:g}, Cfa,spoof {c['c_fa_spoof']:g}",
        f"ASV rates ({r['source']}{where}): Pmiss {100 * r['pmiss']:.3f} %, "
        f"Pfa {100 * r['pfa']:.3f} %, Pfa,spoof {100 * r['pfa_spoof']:.3f} %",
        "",
        f"{'min a-DCF':<24}{doc['min_a_dcf']:.4f}"
        f"  (SASV score >= {doc['min_a_dcf_threshold']:.4f})",
        f"{'min t-DCF':<24}{doc['min_t_dcf']:.4f}  (CM score >= {doc['min_t_dcf_threshold']:.4f})",
        f"{'t-EER (exact)':<24}"
        + ("undefined" if doc["t_eer"] is None else f"{100 * doc['t_eer']:.3f} %"),
    ]
    return "\n".join(lines)


def _finite(value: Any) -> Any:
    """NaN (no t-EER) as JSON ``null``, recursively."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return None if isinstance(value, float) and value != value else value


def cmd_spoof(args: argparse.Namespace) -> int:
    from bosaris_dask.errors import OptionError

    if args.task == "cm" and args.asv_rates is not None:
        raise OptionError("--asv-rates is for 'spoof sasv' (the t-DCF), not 'spoof cm'")
    args.asv_rates = args.asv_rates or "fixed"
    doc = _finite(_cm(args) if args.task == "cm" else _sasv(args))
    print(format_spoof(doc))
    if args.json:
        _write_json(args.json, doc)
        _say(args, f"wrote {args.json}")
    return 0
