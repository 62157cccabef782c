"""What each ASVspoof metric reads from the engine's member summaries (:class:`MetricPlan`):
min a-DCF, the ASV rates at the ASV EER threshold, min t-DCF, the package's CM EER and the
t-EER on the members' common grid, and the bins each could still change, which the engine's
``extra_candidates`` hook refines (:mod:`bosaris_dask.spoofing.scale` runs it).

Examples
--------
>>> from bosaris_dask.spoofing.metrics import ASVSPOOF5
>>> plan = MetricPlan(ASVSPOOF5, cm_eer=True)
>>> plan.rounds
0
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bosaris_dask.errors import ScoreError
from bosaris_dask.passes.score_summary import ScoreSummary
from bosaris_dask.spoofing import joint, tandem
from bosaris_dask.spoofing.joint import Part
from bosaris_dask.spoofing.metrics import (
    AsvRates,
    CostModel,
    a_dcf_of_rates,
    t_dcf_constants,
    t_dcf_of_rates,
)


class TEerScaleWarning(UserWarning):
    """The t-EER's candidate bins do not fit the engine's keep limit: more passes."""


def _first_min(g: joint.Grid, cost: Callable, dtype: Any) -> tuple[float, float]:
    edges = np.arange(len(g.lo) + 1)
    values = cost(edges, edges)
    i = joint.first_minimum(values)
    return float(values[i]), float(g.thresholds(dtype)[i])


@dataclass
class MetricPlan:
    """The members of one SASV call and how each metric reads them."""

    costs: CostModel
    a_dcf: tuple[Part, Part, Part] | None = None  # target, non-target, spoof
    cm: tuple[Part, Part] | None = None  # bona fide, spoof
    asv: tuple[Part, Part, Part] | None = None  # target, non-target, spoof
    rates: AsvRates | None = None  # fixed ASV rates, or None: counted from asv
    cm_eer: bool = False
    t_eer: tuple[tuple[Part, Part], tuple[Part, Part, Part]] | None = None  # cm, asv parts
    names: list[str] = field(default_factory=list)
    rounds: int = 0

    # ---- metrics (each also returns its candidate grid bins, per member)
    def a_dcf_result(self, ss: Sequence[ScoreSummary]) -> tuple[dict, dict]:
        tar, non, spf = self.a_dcf
        g = joint.grid(ss, self.a_dcf)
        below, n_above, s_above = g.below(tar), g.above(non), g.above(spf)
        nt, nn, ns = g.total(tar), g.total(non), g.total(spf)

        def cost(i: np.ndarray, j: np.ndarray) -> np.ndarray:
            return a_dcf_of_rates(below[i] / nt, n_above[j] / nn, s_above[j] / ns, self.costs)

        value, threshold = _first_min(g, cost, ss[tar.index].dtype)
        bins = joint.member_bins(g, joint.min_cost_bins(g, cost), self.a_dcf)
        return {"min_a_dcf": value, "min_a_dcf_threshold": threshold,
                "n_target": nt, "n_nontarget": nn, "n_spoof": ns}, bins  # fmt: skip

    def asv_result(self, ss: Sequence[ScoreSummary]) -> tuple[AsvRates, dict]:
        tar, non, spf = self.asv
        g = joint.grid(ss, (tar, non))
        pmiss, pfa = g.below(tar) / g.total(tar), g.above(non) / g.total(non)
        # the package's threshold: the highest score its EER curve rejects, the lowest
        # observed score of the grid bin before the EER edge (edge 0 where that one accepts all)
        j = max(joint.eer_index(pmiss, pfa) - 1, 0)
        s = ss[spf.index]
        t = float(g.thresholds(s.dtype)[j])
        spoofs = 0 if t == np.inf else int(s.error_counts(np.array([t]))[1][0])
        rates = AsvRates(float(pmiss[j]), float(pfa[j]), spoofs / s.n_nontarget, t)
        cands = joint.eer_bins(pmiss, pfa, g.bits)  # bin j must end single-valued too
        if j < len(g.lo) and g.bits[j] > 0:
            cands = np.append(cands, j)
        bins = joint.member_bins(g, cands, (tar, non))
        if j < len(g.lo):
            more = joint.straddling_bins(s, spf.counts, g.lo[j], int(g.bits[j]))
            if len(more):
                bins[spf.index] = np.union1d(bins.get(spf.index, np.empty(0, np.int64)), more)
        return rates, bins

    def t_dcf_result(self, ss: Sequence[ScoreSummary], rates: AsvRates) -> tuple[dict, dict]:
        bona, spf = self.cm
        g = joint.grid(ss, self.cm)
        below, above = g.below(bona), g.above(spf)
        nb, ns = g.total(bona), g.total(spf)
        try:
            c = t_dcf_constants(rates, self.costs)
        except ScoreError as err:  # the other metrics stand: reported, with why this one is not
            return {"min_t_dcf": None, "min_t_dcf_threshold": None, "min_t_dcf_note": str(err)}, {}

        def cost(i: np.ndarray, j: np.ndarray) -> np.ndarray:
            return t_dcf_of_rates(below[i] / nb, above[j] / ns, c)

        value, threshold = _first_min(g, cost, ss[bona.index].dtype)
        bins = joint.member_bins(g, joint.min_cost_bins(g, cost), self.cm)
        return {"min_t_dcf": value, "min_t_dcf_threshold": threshold}, bins

    def cm_eer_result(self, ss: Sequence[ScoreSummary]) -> tuple[float, dict]:
        bona, spf = self.cm
        g = joint.grid(ss, self.cm)
        pmiss, pfa = g.below(bona) / g.total(bona), g.above(spf) / g.total(spf)
        i = joint.eer_index(pmiss, pfa)
        bins = joint.member_bins(g, joint.eer_bins(pmiss, pfa, g.bits),
                                 self.cm)  # fmt: skip
        return float((pmiss[i] + pfa[i]) / 2), bins

    def results(self, ss: Sequence[ScoreSummary]) -> tuple[dict[str, Any], list[dict]]:
        out: dict[str, Any] = {}
        bins: list[dict] = []
        if self.a_dcf is not None:
            values, b = self.a_dcf_result(ss)
            out.update(values)
            bins.append(b)
        rates = self.rates
        if self.asv is not None:
            rates, b = self.asv_result(ss)
            bins.append(b)
        out["asv_rates"] = rates
        if self.cm is not None and rates is not None:
            try:
                values, b = self.t_dcf_result(ss, rates)
            except ScoreError as error:
                out["t_dcf_error"] = str(error)
            else:
                out.update(values)
                bins.append(b)
        if self.cm_eer:
            out["eer"], b = self.cm_eer_result(ss)
            bins.append(b)
        if self.t_eer is not None:
            out["t_eer_result"], b = tandem.t_eer_on_grids(ss, *self.t_eer)
            bins.append(b)
            if self.rounds == 0:
                _warn_volume(ss, b)
        return out, bins

    def candidates(self, ss: list[ScoreSummary]) -> list[np.ndarray | None]:
        """The engine's ``extra_candidates`` hook: every metric's bins, per member."""
        merged: list[np.ndarray | None] = [None] * len(ss)
        parts = self.results(ss)[1]
        self.rounds += 1
        for part in parts:
            for k, idx in part.items():
                merged[k] = idx if merged[k] is None else np.union1d(merged[k], idx)
        return merged


def _warn_volume(ss: Sequence[ScoreSummary], bins: dict[int, np.ndarray]) -> None:
    """Warn when the t-EER's first candidate bins hold more trials than the engine keeps in
    memory (``bosaris_dask.keep-limit``): exact still, but each later round reads the data."""
    from bosaris_dask import config

    n = sum(int(ss[k].n_tar[i].sum() + ss[k].n_non[i].sum()) for k, i in bins.items())
    limit = config.get("keep-limit")
    if n > limit:
        warnings.warn(
            f"t-EER: the candidate score bins hold {n:,} trials, more than "
            f"bosaris_dask.keep-limit ({limit:,}): still exact, but every refinement round "
            "reads the scores again (more passes); raise keep-limit if the memory allows",
            TEerScaleWarning, stacklevel=6,
        )  # fmt: skip
