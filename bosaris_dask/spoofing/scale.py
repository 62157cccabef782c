"""The ASVspoof 5 metrics of Key/Scores datasets at any scale, exact, in one engine call.

**Track 1 (countermeasure)**: :func:`evaluate_cm` takes a BOSARIS Key whose targets are the bona
fide trials and non-targets the spoofs (:func:`~bosaris_dask.spoofing.matching.cm_key_and_scores`
builds one from the challenge's files) and one Scores. minDCF and actDCF at the challenge's costs,
the ROCCH-EER and Cllr come from the engine's summary as in :func:`bosaris_dask.evaluate`; the
package's EER (:func:`~bosaris_dask.spoofing.metrics.cm_eer`) needs exact counts around the crossing
of Pmiss and Pfa, which the engine's ``extra_candidates`` hook refines in the same rounds
(:func:`~bosaris_dask.spoofing.joint.eer_bins`).

**Track 2 (spoofing-aware verification)**: an *SASV key* is a BOSARIS Key over the trials
(+1 target, -1 non-target) with a boolean coordinate ``segment_spoof`` along ``segment``: a
trial of a spoofed segment is a spoof trial, whatever its mask sign (:func:`sasv_key`). It
may be derived from labels (:func:`~bosaris_dask.trials.key_from_labels`: no storage for a
dense list). :func:`evaluate_sasv` runs **one** :func:`~bosaris_dask.engine.summarize` call over
*member* summaries of the same scores, against the CM key derived lazily from it (bona fide
+1, spoof -1; every member then holds both classes):

=========================  ======================================  ===========================
member                     score mask                              counts used
=========================  ======================================  ===========================
``sasv: target/spoof``     targets and spoofs                      targets, spoofs
``sasv: nontarget/spoof``  non-targets and spoofs                  non-targets (its targets)
``cm``                     all trials                              bona fide, spoofs
``asv: target/spoof``      targets and spoofs (given ASV rates)    targets, spoofs
``asv: nontarget/spoof``   non-targets and spoofs (given rates)    non-targets
=========================  ======================================  ===========================

min a-DCF, min t-DCF and the ASV rates at the ASV EER threshold are computed on the members'
common grid (:mod:`bosaris_dask.spoofing.joint`) with the in-memory functions' own float
formulas and tie rules; the hook refines the bins that could hide a lower (or an earlier)
minimum or hold the threshold, and nothing else: the members skip their own ROC hulls
(``summarize(own_candidates=...)``), which nothing here reads. So every number is equal to
:mod:`bosaris_dask.spoofing.metrics` on the same scores, in no more passes than a plain
evaluation of the CM scores (measured: ``benchmarks/bench_spoofing.py``). A candidate that
appears only once an earlier round has fixed a threshold (the ASV EER threshold, on which the
spoof count and the t-DCF's constants depend) can cost one more pass when it lies outside the
trials kept after the first refinement round; pass 1 runs one kernel per member.

**t-EER**: on keys of at most ``t_eer_max_trials`` cells (:data:`T_EER_MAX_TRIALS`) it is
computed in memory (:func:`~bosaris_dask.spoofing.metrics.t_eer`) after gathering the CM and
ASV scores of each class (one more read of those two columns). Above, in the same engine call:
the ASV column joins as two more members and :func:`~bosaris_dask.spoofing.tandem.t_eer_on_grids`
tells the hook which ASV and CM bins could change the in-memory answer (a bound on the
criterion inside each bin, from the fact that the best CM threshold never rises with the ASV
threshold); the answer is the same floats, thresholds and tie rules, with bounded memory and
no extra pass while the candidate trials fit ``bosaris_dask.keep-limit`` (beyond it a
:class:`TEerScaleWarning`: still exact, in more passes).

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.trials import make_key, make_scores
>>> key = sasv_key(make_key(["m"], list("abcde"), [[1, 1, -1, -1, -1]]),
...                [False, False, False, True, True])
>>> s = make_scores(["m"], list("abcde"), [[2.0, 0.5, 1.0, 1.5, -1.0]])
>>> out = evaluate_sasv(key, sasv=s, cm=s, t_eer=False)
>>> round(out["min_a_dcf"], 6), out["min_a_dcf_threshold"], round(out["min_t_dcf"], 6)
(0.579832, 0.5, 0.538967)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask.engine import DEFAULT_SPLIT_EVERY, summarize
from bosaris_dask.errors import MissingTrialsError, OptionError, ScoreError, TrialError, have
from bosaris_dask.passes.score_summary import ScoreSummary
from bosaris_dask.spoofing.joint import Part
from bosaris_dask.spoofing.keys import SPOOF_COORD, asv_classes, cm_key, sasv_key, spoof_flags
from bosaris_dask.spoofing.metrics import (
    ASVSPOOF5,
    FIXED_ASV_RATES,
    NAN_RESULT,
    AsvRates,
    CostModel,
)
from bosaris_dask.spoofing.plan import MetricPlan, TEerScaleWarning
from bosaris_dask.trials import align, locate, make_scores, trial_classes

__all__ = ["SPOOF_COORD", "T_EER_MAX_TRIALS", "TEerScaleWarning", "sasv_key", "cm_key",
           "evaluate_cm", "evaluate_sasv"]  # fmt: skip


#: The most key cells for which :func:`evaluate_sasv` gathers the t-EER's scores into memory
#: (above, the engine refines them instead).
T_EER_MAX_TRIALS = 20_000_000


# --------------------------------------------------------------------------------------------
# track 1
# --------------------------------------------------------------------------------------------


def _cm_point(costs: CostModel):
    from bosaris_dask.costs import OperatingPoint

    return OperatingPoint.from_nontarget_prior(costs.p_spoof, costs.c_miss, costs.c_fa_spoof)


def evaluate_cm(
    scores: xr.Dataset,
    key: xr.Dataset,
    *,
    costs: CostModel = ASVSPOOF5,
    allow_missing: bool = False,
    progress: bool = False,
    split_every: int = DEFAULT_SPLIT_EVERY,
) -> dict[str, Any]:
    """The track-1 metrics of one countermeasure: bona fide = target, spoof = non-target.

    Returns ``{"n_bonafide", "n_spoof", "n_missing", "costs", "min_dcf", "act_dcf",
    "act_threshold", "eer" (the package's), "eer_rocch", "cllr", "passes"}``; DCFs normalized
    (by ``min(p, 1 - p)`` at the effective prior ``(Ptar + Pnon)·Cmiss /
    ((Ptar + Pnon)·Cmiss + Pspoof·Cfa,spoof)``), rates as fractions, Cllr in bits.

    Examples
    --------
    >>> from bosaris_dask.trials import make_key
    >>> key = make_key(["cm"], list("abcd"), [[1, 1, -1, -1]])
    >>> out = evaluate_cm(make_scores(["cm"], list("abcd"), [[2.0, 0.0, 0.5, -1.0]]), key)
    >>> out["eer"], out["eer_rocch"], out["n_bonafide"], out["passes"]
    (0.5, 0.25, 2, 2)
    """
    from bosaris_dask.metrics import summary_metrics

    if SPOOF_COORD in key.coords:  # its -1 trials mix ASV non-targets with spoofs
        raise TrialError(
            "evaluate_cm takes a CM key (bona fide +1, spoof -1: cm_key), not an SASV key "
            "with segment_spoof; evaluate an SASV key with evaluate_sasv"
        )
    point = _cm_point(costs)
    plan = MetricPlan(costs, cm=(Part(0, "n_tar"), Part(0, "n_non")), cm_eer=True)
    try:
        (s,) = summarize(
            [scores], key, thresholds=[point.act_threshold], allow_missing=allow_missing,
            progress=progress, split_every=split_every, names=["cm"],
            extra_candidates=plan.candidates,
        )  # fmt: skip
    except ScoreError as error:  # in the challenge's words: bona fide and spoof, not targets
        if "need both targets and non-targets" not in str(error):
            raise
        raise ScoreError(
            f"{error} (in a CM key, bona fide trials are the targets and spoofs "
            "the non-targets: the CM metrics need both)"
        ) from None
    m = summary_metrics(s, [point], np.empty(0))
    at = int(np.searchsorted(m["plo"], point.plo))
    values, _ = plan.results([s])
    return {
        "task": "cm",
        "n_bonafide": s.n_target,
        "n_spoof": s.n_nontarget,
        "n_missing": s.n_missing,
        "costs": {
            "p_spoof": costs.p_spoof,
            "c_miss": costs.c_miss,
            "c_fa": costs.c_fa_spoof,
            "effective_prior": costs.cm_effective_prior,
        },  # fmt: skip
        "min_dcf": float(m["min_dcf"][at]),
        "act_dcf": float(m["act_dcf"][at]),
        "act_threshold": point.act_threshold,
        "eer": values["eer"],
        "eer_rocch": float(m["eer"]),
        "cllr": float(m["cllr"]),
        "passes": s.passes,
    }


# --------------------------------------------------------------------------------------------
# track 2
# --------------------------------------------------------------------------------------------


def _members(
    column: xr.Dataset, key: xr.Dataset, chunks: Any, name: str, both: bool
) -> list[tuple[str, xr.Dataset]]:
    """The member Scores of one score column: ``(target+spoof, nontarget+spoof)``, or, with
    ``both=False``, the column itself (bona fide vs spoof)."""
    s = align(column, key)
    score, mask = s.score.data.rechunk(chunks), s.score_mask.data.rechunk(chunks)
    ids = (key.model.values, key.segment.values)
    if not both:
        return [(name, make_scores(*ids, score, mask))]
    codes, spoof = asv_classes(key, chunks)
    tar = (codes == 1) & ~spoof
    non = (codes == -1) & ~spoof
    spf = (codes != 0) & spoof
    return [(f"{name}: target/spoof", make_scores(*ids, score, mask & (tar | spf))),
            (f"{name}: nontarget/spoof", make_scores(*ids, score, mask & (non | spf)))]  # fmt: skip


def _unscored(ss: Sequence[ScoreSummary], first: int, both: bool) -> int:
    """Key trials without a score in the column whose members start at ``first``: the
    members' score masks leave out some classes on purpose, so count what they hold."""
    s = ss[first]
    trials = s.n_target + s.n_nontarget + s.n_missing
    scored = s.n_target + s.n_nontarget + (ss[first + 1].n_target if both else 0)
    return trials - scored


def _raise_missing(name: str, n: int, key: xr.Dataset, scores: xr.Dataset) -> None:
    s = align(scores, key)
    cond = (trial_classes(key, chunks=s.score_mask.data.chunks) != 0) & ~s.score_mask.data
    where = locate(cond, key.model.values, key.segment.values)
    raise MissingTrialsError(f"{name}: {have(n, 'key trial')} no score, e.g. {where} "
                             "(allow_missing drops them)")  # fmt: skip


def _gather(key: xr.Dataset, column: xr.Dataset, chunks: Any) -> list[da.Array]:
    """A column's scored target, non-target and spoof scores (lazy, unknown sizes), and its
    count of key trials without a score."""
    s = align(column, key)
    score, mask = s.score.data.rechunk(chunks), s.score_mask.data.rechunk(chunks)
    codes, spoof = asv_classes(key, chunks)
    return [*(score[mask & c] for c in ((codes == 1) & ~spoof, (codes == -1) & ~spoof,
                                        (codes != 0) & spoof)),
            ((codes != 0) & ~mask).sum()]  # fmt: skip


def evaluate_sasv(
    key: xr.Dataset,
    *,
    sasv: xr.Dataset | None = None,
    cm: xr.Dataset | None = None,
    asv: xr.Dataset | None = None,
    asv_rates: str | AsvRates = "fixed",
    costs: CostModel = ASVSPOOF5,
    t_eer: bool | None = None,
    t_eer_max_trials: int = T_EER_MAX_TRIALS,
    allow_missing: bool = False,
    progress: bool = False,
    split_every: int = DEFAULT_SPLIT_EVERY,
) -> dict[str, Any]:
    """The track-2 metrics of an SASV key (:func:`sasv_key`) and up to three score columns.

    Parameters
    ----------
    key
        The SASV key.
    sasv, cm, asv
        Scores: the single SASV score (min a-DCF), the countermeasure score (min t-DCF;
        bona fide = target and non-target trials) and the ASV score (ASV rates counted from
        it; t-EER with ``cm``). Any may be left out; what needs it is then not reported.
    asv_rates
        ``"fixed"`` (the package's, :data:`~bosaris_dask.spoofing.metrics.FIXED_ASV_RATES`),
        ``"given"`` (counted from ``asv`` at its EER threshold, as
        :func:`~bosaris_dask.spoofing.metrics.asv_rates`), or an :class:`AsvRates`.
    t_eer
        Compute the exact t-EER (needs ``cm`` and ``asv``): ``None`` does when both are
        given; ``True`` raises :class:`~bosaris_dask.errors.OptionError` when one is missing.
    t_eer_max_trials
        Keys of at most this many cells (models x segments) gather the two columns into
        memory for the t-EER; larger ones get it from the engine's refined summaries, in the
        same passes as the other metrics (module docstring).
    allow_missing
        Leave out the key trials without a score in a column from that column's metrics (each
        column's own: the counts come from the SASV column) instead of raising
        :class:`~bosaris_dask.errors.MissingTrialsError`.

    Returns
    -------
    dict
        ``n_target``, ``n_nontarget``, ``n_spoof`` (the SASV column's scored trials; without
        it, the ASV column's where it is read in the passes, else the key's), ``n_missing``
        (key trials without a score, dropped: the most of any column used; with
        ``n_missing_by_column`` where the columns lack different numbers), ``costs``,
        ``min_a_dcf`` and ``min_a_dcf_threshold``, ``asv_rates`` (``source``, ``pmiss``,
        ``pfa``, ``pfa_spoof``, ``threshold``), ``min_t_dcf`` and ``min_t_dcf_threshold``,
        ``t_eer``, its thresholds and the tandem rates at its point (``t_eer_pmiss``,
        ``t_eer_pfa``), ``passes``. A metric not computed (its scores not given)
        or undefined is ``None`` with ``<metric>_note`` saying why (``"needs the CM
        scores"``).
    """
    spoof_flags(key)  # an SASV key, or a one-line error
    if isinstance(asv_rates, str) and asv_rates not in ("fixed", "given"):
        raise OptionError(f"asv_rates must be 'fixed', 'given' or AsvRates, got {asv_rates!r}")
    given = asv_rates == "given"
    if given and asv is None:
        raise OptionError("asv_rates='given' needs the ASV scores (asv=...)")
    if sasv is None and cm is None and asv is None:
        raise OptionError("no scores: give sasv, cm and/or asv")
    first = next(x for x in (sasv, cm, asv) if x is not None)
    chunks = align(first, key).score.data.chunks
    plan = MetricPlan(costs, rates=None if given else
                 (FIXED_ASV_RATES if asv_rates == "fixed" else asv_rates))  # fmt: skip
    members: list[tuple[str, xr.Dataset]] = []
    starts: dict[str, int] = {}
    cells = int(key.sizes["model"]) * int(key.sizes["segment"])
    at_scale = t_eer is not False and cm is not None and asv is not None and (
        cells > t_eer_max_trials)  # fmt: skip
    for name, column, both in (("sasv", sasv, True), ("cm", cm, False),
                               ("asv", asv if given or at_scale else None, True)):  # fmt: skip
        if column is not None:
            starts[name] = len(members)
            members += _members(column, key, chunks, name, both)
    if "sasv" in starts:
        k = starts["sasv"]
        plan.a_dcf = (Part(k, "n_tar"), Part(k + 1, "n_tar"), Part(k, "n_non"))
    if "cm" in starts:
        k = starts["cm"]
        plan.cm = (Part(k, "n_tar"), Part(k, "n_non"))
    if "asv" in starts:
        k = starts["asv"]
        asv_parts = (Part(k, "n_tar"), Part(k + 1, "n_tar"), Part(k, "n_non"))
        plan.asv = asv_parts if given else None
        if at_scale:
            plan.t_eer = ((Part(starts["cm"], "n_tar"), Part(starts["cm"], "n_non")), asv_parts)
    try:
        summaries = summarize(
            [m for _, m in members], cm_key(key, chunks), allow_missing=True, progress=progress,
            split_every=split_every, names=[n for n, _ in members],
            extra_candidates=plan.candidates, own_candidates=[False] * len(members),
        )  # fmt: skip
    except ScoreError as error:
        if "need both targets and non-targets" not in str(error):
            raise
        raise ScoreError(f"{error} (in the member 'COLUMN: CLASS/spoof', 'targets' are the "
                         "CLASS trials and 'non-targets' the spoofs)") from None  # fmt: skip
    columns = {"sasv": sasv, "cm": cm, "asv": asv}
    missing = {name: _unscored(summaries, k, name != "cm") for name, k in starts.items()}
    for name, n in missing.items():
        if n and not allow_missing:
            _raise_missing(name, n, key, columns[name])
    values, _ = plan.results(summaries)
    if "t_dcf_error" in values:
        raise ScoreError(values["t_dcf_error"])
    rates = values.pop("asv_rates")
    tandem_result = values.pop("t_eer_result", None)
    if tandem_result is not None:
        tandem_values = _t_eer_values(tandem_result)
    else:  # gathered: the ASV column, if no member, is checked for missing scores there
        tandem_values = _t_eer(key, cm, asv, chunks, t_eer, missing, allow_missing)
    counts = {} if "n_target" in values else _class_counts(summaries, starts, key, chunks)
    out: dict[str, Any] = {"task": "sasv", "costs": costs.as_dict(), **counts, **values,
                           "n_missing": max(missing.values())}  # fmt: skip
    if len(set(missing.values())) > 1:
        out["n_missing_by_column"] = missing
    if rates is not None:
        out["asv_rates"] = {"source": asv_rates if isinstance(asv_rates, str) else "custom",
                            "pmiss": rates.pmiss, "pfa": rates.pfa,
                            "pfa_spoof": rates.pfa_spoof, "threshold": rates.threshold}  # fmt: skip
    out["passes"] = summaries[0].passes
    for name, column, needs in (("min_a_dcf", sasv, "the SASV scores"),
                                ("min_t_dcf", cm, "the CM scores")):  # fmt: skip
        if column is None:
            out.update({name: None, f"{name}_threshold": None, f"{name}_note": f"needs {needs}"})
    out.update(tandem_values)
    return out


def _class_counts(
    ss: Sequence[ScoreSummary], starts: dict[str, int], key: xr.Dataset, chunks: Any
) -> dict[str, int]:
    """The target, non-target and spoof trials where no SASV column counts its scored ones:
    the ASV column's members' (no pass), else the key's (one look at the key)."""
    if "asv" in starts:
        k = starts["asv"]  # members (target vs spoof), (non-target vs spoof)
        return {"n_target": ss[k].n_target, "n_nontarget": ss[k + 1].n_target,
                "n_spoof": ss[k].n_nontarget}  # fmt: skip
    from bosaris_dask.progress import compute

    codes, spoof = asv_classes(key, chunks)
    counts = compute([((codes == 1) & ~spoof).sum(), ((codes == -1) & ~spoof).sum(),
                      ((codes != 0) & spoof).sum()], progress=None)  # fmt: skip
    return dict(zip(("n_target", "n_nontarget", "n_spoof"), map(int, counts), strict=True))


def _t_eer_values(r: dict[str, float]) -> dict[str, Any]:
    """:func:`~bosaris_dask.spoofing.metrics.t_eer`'s answer as reported: the tandem rates
    at its point too (``t_eer_pmiss``, ``t_eer_pfa``), which the rule does not make equal."""
    value = r["t_eer"]
    return {
        "t_eer": None if value != value else value,
        "t_eer_asv_threshold": r["asv_threshold"],
        "t_eer_cm_threshold": r["cm_threshold"],
        "t_eer_pmiss": None if value != value else r["pmiss_tdm"],
        "t_eer_pfa": None if value != value else r["pfa_tdm"],
    }


def _t_eer(
    key: xr.Dataset,
    cm: xr.Dataset | None,
    asv: xr.Dataset | None,
    chunks: Any,
    wanted: bool | None,
    missing: dict[str, int],
    allow_missing: bool,
) -> dict[str, Any]:
    """The t-EER in memory (keys up to ``t_eer_max_trials`` cells): one more read of the CM
    and ASV columns, then :func:`~bosaris_dask.spoofing.metrics.t_eer`. An ASV column read
    here only (no member of the engine call) has its key trials without a score counted into
    ``missing`` here, and named unless ``allow_missing``."""
    from bosaris_dask.progress import compute
    from bosaris_dask.spoofing.metrics import t_eer

    none = dict.fromkeys(_t_eer_values(NAN_RESULT))  # every field None
    if wanted is False:
        return {**none, "t_eer_note": "not asked for"}
    if cm is None or asv is None:
        if wanted:
            raise OptionError("the t-EER needs both the CM and the ASV scores")
        return {**none, "t_eer_note": "needs the CM and the ASV scores"}
    *cm_arrays, _, tar, non, spf, n = compute([*_gather(key, cm, chunks),
                                              *_gather(key, asv, chunks)])  # fmt: skip
    if "asv" not in missing:
        if n and not allow_missing:
            _raise_missing("asv", int(n), key, asv)
        missing["asv"] = int(n)
    return _t_eer_values(t_eer(*cm_arrays, tar, non, spf))
