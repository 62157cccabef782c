"""ASVspoof 5 metrics: the official package's values, hand-worked cases, and a brute force.

The brute force below loops over every threshold with plain numpy and shares no code with
``bosaris_dask.spoofing``; it applies the published definitions (FIELD_METRICS.md section 4)
with the rule "accept iff score >= t", t each distinct score and +inf, the lowest threshold on
ties.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.errors import ScoreError
from bosaris_dask.spoofing import (
    cm_arrays,
    read_cm_key,
    read_cm_scores,
    read_sasv_key,
    read_sasv_scores,
    sasv_arrays,
)
from bosaris_dask.spoofing.metrics import (
    ASVSPOOF5,
    FIXED_ASV_RATES,
    AsvRates,
    CostModel,
    a_dcf,
    asv_rates,
    cm_eer,
    min_a_dcf,
    min_t_dcf,
    t_eer,
)

DATA = Path(__file__).parent / "data" / "asvspoof5"
REF = json.loads((DATA / "reference.json").read_text())
PTAR, PNON, PSPOOF, CMISS, CFA, CFA_SPOOF = 0.9405, 0.0095, 0.05, 1.0, 10.0, 10.0


# ---------------------------------------------------------------- brute force (no shared code)
def _grid(*arrays):
    return sorted(set(np.concatenate(arrays).tolist())) + [float("inf")]


def _rej(x, t):
    return int(np.sum(np.asarray(x) < t)) / len(x)


def _acc(x, t):
    return int(np.sum(np.asarray(x) >= t)) / len(x)


def brute_cm_eer(pos, neg):
    best = None
    for t in _grid(pos, neg):
        pm, pf = _rej(pos, t), _acc(neg, t)
        if best is None or abs(pm - pf) < best[0]:
            best = (abs(pm - pf), (pm + pf) / 2)
    return best[1]


def brute_min_a_dcf(tar, non, spf):
    norm = min(CFA * PNON + CFA_SPOOF * PSPOOF, CMISS * PTAR)
    values = [
        (
            CMISS * PTAR * _rej(tar, t)
            + CFA * PNON * _acc(non, t)
            + CFA_SPOOF * PSPOOF * _acc(spf, t)
        )
        / norm
        for t in _grid(tar, non, spf)
    ]
    return min(values)


def brute_min_t_dcf(bona, spf, pmiss_asv, pfa_asv, pfa_spoof_asv):
    c0 = PTAR * CMISS * pmiss_asv + PNON * CFA * pfa_asv
    c1 = PTAR * CMISS - c0
    c2 = PSPOOF * CFA_SPOOF * pfa_spoof_asv
    return min(
        (c0 + c1 * _rej(bona, t) + c2 * _acc(spf, t)) / (c0 + min(c1, c2)) for t in _grid(bona, spf)
    )


def brute_t_eer(cm_bona, cm_spf, tar, non, spf):
    return brute_t_eer_point(cm_bona, cm_spf, tar, non, spf)[0]


def brute_t_eer_point(cm_bona, cm_spf, tar, non, spf):
    """The t-EER and the tandem miss and false-alarm rates at its point (NaNs: none)."""
    best = None
    for tau in _grid(tar, non, spf):
        a, b, c = _rej(tar, tau), _acc(non, tau), _acc(spf, tau)
        if not a < (b + c) / 2:
            continue
        pick = None
        for s in _grid(cm_bona, cm_spf):
            m, f = _rej(cm_bona, s), _acc(cm_spf, s)
            d = abs((m + (1.0 - m) * a) - (0.5 * (1.0 - m) * b + 0.5 * f * c))
            if pick is None or d < pick[0]:
                pick = (d, m, f)
        _, m, f = pick
        with np.errstate(divide="ignore", invalid="ignore"):
            crit = abs(np.float64(b) / c - np.float64(f) / (1.0 - m))
        if np.isnan(crit) or np.isinf(crit):
            continue
        if best is None or crit < best[0]:
            best = (crit, c * f, m + (1.0 - m) * a, 0.5 * (1.0 - m) * b + 0.5 * f * c)
    return (float("nan"),) * 3 if best is None else best[1:]


# ------------------------------------------------------------------- the official package's values
@pytest.fixture(scope="module")
def cm():
    return cm_arrays(read_cm_scores(DATA / "cm_scores.tsv.gz"), read_cm_key(DATA / "cm_key.tsv.gz"))


@pytest.fixture(scope="module")
def sasv():
    return sasv_arrays(read_sasv_scores(DATA / "sasv_scores.tsv.gz"),
                       read_sasv_key(DATA / "sasv_key.tsv.gz"))  # fmt: skip


def _bona(arrays):
    return np.concatenate([arrays["cm"]["target"], arrays["cm"]["nontarget"]])


def test_cm_eer_is_the_packages(cm):
    assert cm_eer(*cm) == pytest.approx(REF["cm"]["eer_official"], rel=1e-12)
    assert cm_eer(*cm) != pytest.approx(REF["cm"]["eer_rocch"], rel=1e-4)  # not the ROCCH-EER


def test_cost_model_numbers_are_the_challenges():
    assert ASVSPOOF5.cm_effective_prior == pytest.approx(REF["cm"]["effective_prior"], rel=1e-15)
    assert ASVSPOOF5.a_dcf_normalizer == pytest.approx(0.595, rel=1e-15)
    assert ASVSPOOF5.as_dict() == {"p_target": 0.9405, "p_nontarget": 0.0095, "p_spoof": 0.05,
                                   "c_miss": 1.0, "c_fa": 10.0, "c_fa_spoof": 10.0}  # fmt: skip
    with pytest.raises(ScoreError, match="sum to 1"):
        CostModel(p_target=0.5)


def test_min_a_dcf_is_the_packages(sasv):
    x = sasv["sasv"]
    value, _ = min_a_dcf(x["target"], x["nontarget"], x["spoof"])
    assert value == pytest.approx(REF["sasv"]["min_a_dcf"], rel=1e-12)


def test_min_t_dcf_with_fixed_asv_rates_is_the_packages(sasv):
    value, _ = min_t_dcf(_bona(sasv), sasv["cm"]["spoof"], FIXED_ASV_RATES)
    assert value == pytest.approx(REF["sasv"]["min_t_dcf_fixed_asv"], rel=1e-12)


def test_asv_rates_are_the_packages_rates_at_its_eer_threshold(sasv):
    given = REF["sasv"]["asv_rates_given"]
    asv = sasv["asv"]
    rates = asv_rates(asv["target"], asv["nontarget"], asv["spoof"])
    assert rates.threshold == given["threshold"]
    assert (rates.pmiss, rates.pfa, rates.pfa_spoof) == pytest.approx(
        (given["pmiss"], given["pfa"], given["pfa_spoof"]), rel=1e-12
    )
    # the highest score the EER curve rejects, counted as accepted: one target more accepted
    # than at the curve's own point, where Pmiss = Pfa = 50/6000
    assert rates.pmiss == 49 / 6000 and rates.pfa == 50 / 6000


def test_min_t_dcf_with_asv_rates_counted_from_the_asv_scores_is_the_reference(sasv):
    asv = sasv["asv"]
    rates = asv_rates(asv["target"], asv["nontarget"], asv["spoof"])
    value, _ = min_t_dcf(_bona(sasv), sasv["cm"]["spoof"], rates)
    assert value == pytest.approx(REF["sasv"]["min_t_dcf_given_asv"], rel=1e-12)


def test_min_t_dcf_with_given_asv_rates_follows_the_definition_not_the_slip(sasv):
    given = REF["sasv"]["asv_rates_given"]
    rates = AsvRates(given["pmiss"], given["pfa"], given["pfa_spoof"])
    value, _ = min_t_dcf(_bona(sasv), sasv["cm"]["spoof"], rates)
    assert value == pytest.approx(REF["sasv"]["min_t_dcf_given_asv"], rel=1e-12)
    # the package's slip: Pmiss,spoof,asv = 1 - Pfa,spoof,asv where Pfa,spoof,asv belongs
    slip = AsvRates(given["pmiss"], given["pfa"], 1 - given["pfa_spoof"])
    value, _ = min_t_dcf(_bona(sasv), sasv["cm"]["spoof"], slip)
    assert value == pytest.approx(REF["sasv"]["min_t_dcf_given_asv_package_bug"], rel=1e-12)


def test_t_eer_is_the_packages(sasv):
    cm, asv = sasv["cm"], sasv["asv"]
    out = t_eer(cm["target"], cm["nontarget"], cm["spoof"],
                asv["target"], asv["nontarget"], asv["spoof"])  # fmt: skip
    assert out["t_eer"] == pytest.approx(REF["sasv"]["t_eer_exact"], rel=1e-12)


# ------------------------------------------------------------------------------- hand-worked
def test_hand_worked_cm_eer_and_a_dcf():
    # bona 1,2,3; spoof -1,0,1.5,-2: at t=1.5 Pmiss 1/3, Pfa 1/4 (|diff| 1/12, the least)
    assert cm_eer([1.0, 2.0, 3.0], [-1.0, 0.0, 1.5, -2.0]) == pytest.approx(7 / 24)
    # a tie: bona 1,1 and spoof 1: t=1 accepts all (Pfa 1), t=inf rejects all (Pmiss 1)
    assert cm_eer([1.0, 1.0], [1.0]) == 0.5
    # tar 2; non 1; spoof 3: t=2 misses nothing, accepts the spoof (10*0.05/0.595)
    # t=3 misses the target (0.9405/0.595), t=inf too: the minimum is 0.5/0.595 at t=2
    value, t = min_a_dcf([2.0], [1.0], [3.0])
    assert (value, t) == (pytest.approx(0.5 / 0.595), 2.0)


def test_hand_worked_t_dcf():
    rates = AsvRates(pmiss=0.1, pfa=0.2, pfa_spoof=0.5)
    c0 = 0.9405 * 0.1 + 0.0095 * 10 * 0.2
    c1, c2 = 0.9405 - c0, 0.05 * 10 * 0.5
    # bona 1, 2; spoof 0, 3: thresholds 0 (Pfa 1), 1 (Pfa 1/2), 2 (Pmiss 1/2, Pfa 1/2), 3, inf
    candidates = [c0 + c2, c0 + c2 / 2, c0 + c1 / 2 + c2 / 2, c0 + c1 + c2 / 2, c0 + c1]
    value, t = min_t_dcf([1.0, 2.0], [0.0, 3.0], rates)
    assert value == pytest.approx(min(candidates) / (c0 + min(c1, c2)), rel=1e-15)
    assert t == 1.0


def test_results_do_not_depend_on_the_order_of_tied_scores():
    rng = np.random.default_rng(1)
    tar, non, spf = (rng.integers(-3, 4, n).astype(float) for n in (30, 40, 50))
    first = (cm_eer(tar, spf), min_a_dcf(tar, non, spf), t_eer(tar, non, spf, tar, non, spf))
    for _ in range(3):
        tar, non, spf = (rng.permutation(x) for x in (tar, non, spf))
        again = (cm_eer(tar, spf), min_a_dcf(tar, non, spf), t_eer(tar, non, spf, tar, non, spf))
        assert again == first


# ------------------------------------------------------------------ random data, with ties
def _scores(n_max=12):
    tied = st.lists(st.integers(-4, 4).map(float), min_size=1, max_size=n_max)
    spread = st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=n_max)
    return st.one_of(tied, spread)


@settings(max_examples=150, deadline=None)
@given(pos=_scores(), neg=_scores())
def test_cm_eer_equals_brute_force(pos, neg):
    assert cm_eer(pos, neg) == brute_cm_eer(np.array(pos), np.array(neg))


@settings(max_examples=150, deadline=None)
@given(tar=_scores(), non=_scores(), spf=_scores())
def test_min_a_dcf_equals_brute_force(tar, non, spf):
    value, t = min_a_dcf(tar, non, spf)
    assert value == pytest.approx(brute_min_a_dcf(np.array(tar), np.array(non), np.array(spf)),
                                  rel=1e-12, abs=1e-15)  # fmt: skip
    assert a_dcf(tar, non, spf, t) == value  # the threshold returned attains it


@settings(max_examples=100, deadline=None)
@given(tar=_scores(), non=_scores(), spf=_scores(), bona=_scores(), cm_spf=_scores())
def test_min_t_dcf_with_given_asv_scores_equals_brute_force(tar, non, spf, bona, cm_spf):
    rates = asv_rates(tar, non, spf)
    # the brute force's EER point; the threshold is the score before it (the highest the curve
    # rejects there), or the lowest where the point accepts all
    tar, non, spf = np.array(tar), np.array(non), np.array(spf)
    grid, best = _grid(tar, non), None
    for k, t in enumerate(grid):
        if best is None or abs(_rej(tar, t) - _acc(non, t)) < best[0]:
            best = (abs(_rej(tar, t) - _acc(non, t)), grid[max(k - 1, 0)])
    t = best[1]
    best = (None, _rej(tar, t), _acc(non, t), _acc(spf, t))
    assert rates.threshold == t
    assert (rates.pmiss, rates.pfa, rates.pfa_spoof) == best[1:]
    c0 = PTAR * CMISS * best[1] + PNON * CFA * best[2]
    c1, c2 = PTAR * CMISS - c0, PSPOOF * CFA_SPOOF * best[3]
    if c1 < 0 or not c0 + min(c1, c2) > 0:  # C2 = 0 alone (no spoof accepted) is defined
        with pytest.raises(ScoreError, match="t-DCF undefined"):
            min_t_dcf(bona, cm_spf, rates)
        return
    value, _ = min_t_dcf(bona, cm_spf, rates)
    expected = brute_min_t_dcf(np.array(bona), np.array(cm_spf), *best[1:])
    assert value == pytest.approx(expected, rel=1e-12, abs=1e-15)


@settings(max_examples=150, deadline=None)
@given(cm_tar=_scores(6), cm_non=_scores(6), cm_spf=_scores(), tar=_scores(), non=_scores(),
       spf=_scores())  # fmt: skip
def test_t_eer_equals_brute_force(cm_tar, cm_non, cm_spf, tar, non, spf):
    out = t_eer(cm_tar, cm_non, cm_spf, tar, non, spf)
    expected = brute_t_eer_point(np.array(cm_tar + cm_non), np.array(cm_spf), np.array(tar),
                                 np.array(non), np.array(spf))  # fmt: skip
    got = (out["t_eer"], out["pmiss_tdm"], out["pfa_tdm"])
    if np.isnan(expected[0]):
        assert np.isnan(got).all()
    else:
        assert got == pytest.approx(expected, rel=1e-15, abs=0)


def test_a_chance_level_t_eer_comes_with_its_tandem_rates():
    # all scores equal: every trial accepted at the lowest thresholds; the rule's point has
    # Pmiss,tdm = 0 and Pfa,tdm = 1/2 + 1/2 = 1, and its t-EER is Pfa,spoof * Pfa,cm = 1
    same = [1.0, 1.0]
    out = t_eer(same, same, same, same, same, same)
    assert (out["t_eer"], out["pmiss_tdm"], out["pfa_tdm"], out["margin"]) == (1.0, 0.0, 1.0, 0.0)


@pytest.mark.parametrize("seed", range(3))
def test_t_eer_equals_a_full_grid_at_medium_size_with_heavy_ties(seed):
    # every (ASV threshold, CM threshold) pair at once, as matrices: no bisection
    rng = np.random.default_rng(seed)
    bona = rng.integers(0, 40, 300).astype(float)
    cm_spf = rng.integers(-10, 25, 250).astype(float)
    tar, non, spf = (rng.integers(lo, lo + 30, n).astype(float)
                     for lo, n in ((5, 200), (-10, 220), (0, 260)))  # fmt: skip
    taus, cms = np.array(_grid(tar, non, spf)), np.array(_grid(bona, cm_spf))
    a = np.array([np.sum(tar < t) for t in taus]) / tar.size
    b = np.array([np.sum(non >= t) for t in taus]) / non.size
    c = np.array([np.sum(spf >= t) for t in taus]) / spf.size
    m = np.array([np.sum(bona < t) for t in cms]) / bona.size
    f = np.array([np.sum(cm_spf >= t) for t in cms]) / cm_spf.size
    a, b, c = a[:, None], b[:, None], c[:, None]
    d = np.abs((m + (1.0 - m) * a) - (0.5 * (1.0 - m) * b + 0.5 * f * c))
    j = np.argmin(d, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        crit = np.abs(b[:, 0] / c[:, 0] - f[j] / (1.0 - m[j]))
    crit[~(a[:, 0] < (b[:, 0] + c[:, 0]) / 2) | ~np.isfinite(crit)] = np.inf
    i = np.argmin(crit)
    out = t_eer(bona[:150], bona[150:], cm_spf, tar, non, spf)
    assert out["t_eer"] == c[i, 0] * f[j[i]]
    assert (out["asv_threshold"], out["cm_threshold"]) == (taus[i], cms[j[i]])


def test_bad_costs_rates_and_thresholds_are_errors_not_numbers():
    """They gave numbers (audit): a NaN threshold the reject-all a-DCF, rates outside [0, 1] a
    negative t-DCF or a percentage taken as a fraction, a NaN prior a NaN min a-DCF."""
    from bosaris_dask.spoofing import metrics as m

    tar, non, spf = [1.0, 2.0], [0.0], [0.5]
    with pytest.raises(ScoreError, match="the threshold is NaN"):
        m.a_dcf(tar, non, spf, np.nan)
    with pytest.raises(ScoreError, match="the threshold is NaN"):
        m.asv_rates_at(tar, non, spf, np.nan)
    for rates, name in (((-0.1, 0.01, 0.5), "pmiss"), ((0.0188, 0.0188, 46.07), "pfa_spoof"),
                        ((0.1, np.nan, 0.5), "pfa")):  # fmt: skip
        with pytest.raises(ScoreError, match=f"ASV rate {name} must be a fraction in"):
            m.AsvRates(*rates)
    with pytest.raises(ScoreError, match="must be non-negative and sum to 1"):
        m.CostModel(p_target=np.nan)
    with pytest.raises(ScoreError, match="must be positive finite numbers"):
        m.CostModel(c_fa=np.inf)
    for priors in ((1.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.0, 0.5, 0.5)):  # every a-DCF 0/0: NaN
        with pytest.raises(ScoreError, match=r"leave the a-DCF undefined: its normalizer"):
            m.CostModel(*priors)
    assert m.a_dcf(tar, non, spf, np.inf) == m.a_dcf(tar, non, spf, 3.0)  # reject all: defined


def test_t_eer_breaks_exact_ties_as_the_floats_compare():
    """What its docstring says: CM thresholds 0.0 and 1.5 tie in exact arithmetic (both 1/3
    from equal rates) but round apart, and the lower float wins: t-EER 1/3, not 2/3."""
    out = t_eer([0.0, 3.0], [-0.5], [-0.5, 1.5, 0.0], [2.0, 2.5], [-1.5], [3.5, 2.0, 3.5])
    assert (out["t_eer"], out["cm_threshold"], out["asv_threshold"]) == (1 / 3, 1.5, -1.5)
