"""Our metrics reproduce the original MATLAB BOSARIS Toolkit on the gauss1 reference set.

``tests/data/gauss1`` (see its README.md): 2,000 target and 20,000 non-target scores and the
values the toolkit computed from them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bosaris_dask import metrics
from bosaris_dask.trials import make_key, make_scores

from . import reference as ref

DATA = Path(__file__).parent / "data" / "gauss1"
ORACLE = json.loads((DATA / "oracle.json").read_text())
TAR = np.loadtxt(DATA / "tar.txt")
NON = np.loadtxt(DATA / "non.txt")
RTOL = 1e-12


def _as_trial_objects(chunks=(37, 1000)):
    """gauss1 as a 110 x 200 trial matrix (targets first), chunked unevenly."""
    values = np.concatenate([TAR, NON]).reshape(110, 200)
    mask = np.where(np.arange(values.size) < TAR.size, 1, -1).astype(np.int8).reshape(110, 200)
    models, segments = [f"m{i}" for i in range(110)], [f"s{j}" for j in range(200)]
    key = make_key(models, segments, mask, chunks=chunks)
    return make_scores(models, segments, values, chunks=chunks), key


@pytest.fixture(scope="module", params=["arrays", "engine"])
def results(request):
    sweep = np.array(ORACLE["sweep"]["plo"])
    priors = ORACLE["priors"]["P"]
    if request.param == "arrays":
        return metrics.evaluate_arrays(TAR, NON, priors=priors, sweep=sweep)
    scores, key = _as_trial_objects()
    return metrics.evaluate(scores, key, priors=priors, sweep=sweep, split_every=2)


@pytest.mark.parametrize("ours, theirs", [
    ("min_dcf_raw", "minDCF_raw"), ("min_dcf", "minDCF_norm"), ("min_pmiss", "minDCF_pmiss"),
    ("min_pfa", "minDCF_pfa"), ("act_dcf_raw", "actDCF_raw"), ("act_dcf", "actDCF_norm"),
    ("act_pmiss", "actDCF_pmiss"), ("act_pfa", "actDCF_pfa"),
])  # fmt: skip
def test_operating_points(results, ours, theirs):
    ops, sweep = metrics.operating_points(results), metrics.sweep_points(results)
    np.testing.assert_allclose(ops[ours].values[0], ORACLE["priors"][theirs], rtol=RTOL)
    np.testing.assert_allclose(
        sweep[ours].values[0], ORACLE["sweep"][theirs], rtol=RTOL, atol=1e-300
    )
    # one plo dimension: the sweep's points and the priors', each once, sorted
    plo = np.log(np.array(ORACLE["priors"]["P"])) - np.log1p(-np.array(ORACLE["priors"]["P"]))
    want = np.unique(np.concatenate([np.array(ORACLE["sweep"]["plo"]), plo]))
    np.testing.assert_allclose(results.plo.values, want, rtol=1e-15, atol=0)
    assert results.sizes["plo"] == len(ORACLE["sweep"]["plo"]) + 3  # logit(0.5) = 0 is on it
    assert not np.isnan(results[ours].values).any()


def test_rocch_vertices(results):
    n = ORACLE["rocch"]["nvertices"]
    np.testing.assert_array_equal(results.rocch_pmiss.values[0, :n], ORACLE["rocch"]["pmiss"])
    np.testing.assert_array_equal(results.rocch_pfa.values[0, :n], ORACLE["rocch"]["pfa"])
    assert np.isnan(results.rocch_pmiss.values[0, n:]).all()
    assert int(results.n_vertices[0]) == n
    pmiss, pfa = metrics.curve(results, results.system.values[0], "rocch")
    assert pmiss.tolist() == ORACLE["rocch"]["pmiss"] and pfa.tolist() == ORACLE["rocch"]["pfa"]


def test_eer_prbep_cllr(results):
    np.testing.assert_allclose(results.eer.item(), ORACLE["eer"]["rocch2eer"], rtol=RTOL)
    np.testing.assert_allclose(results.prbep.item(), ORACLE["prbep"]["prbep_fn"], rtol=RTOL)
    np.testing.assert_allclose(results.cllr.item(), ORACLE["cllr"]["cllr"], rtol=RTOL)
    # the toolkit adds a 1e-6 ramp to the PAV LLRs; the exact minCllr differs by ~1e-9 (README)
    np.testing.assert_allclose(results.min_cllr.item(), ORACLE["cllr"]["min_cllr"], rtol=1e-8)
    np.testing.assert_allclose(results.min_cllr.item(), 0.49593208355, rtol=1e-10)


def test_dr30(results):
    dr30 = ORACLE["dr30"]
    plo = np.array(ORACLE["sweep"]["plo"])
    assert results.pfa30.item() == dr30["pfa30"] and results.pmiss30.item() == dr30["pmiss30"]
    assert results.dr30_fa_plo.item() == plo[dr30["nbe_sweep_index_fa_1based"] - 1]
    assert results.dr30_miss_plo.item() == plo[dr30["nbe_sweep_index_miss_1based"] - 1]


def test_counts(results):
    assert results.n_target.item() == 2000 and results.n_nontarget.item() == 20000


def test_the_brute_force_reference_reproduces_the_toolkit():
    """tests/reference.py (exact rationals, no package code) agrees with MATLAB BOSARIS, so the
    other tests may use it as the truth on data the toolkit never saw."""
    misses, fas = ref.hull(TAR, NON)
    np.testing.assert_array_equal(np.array(misses) / TAR.size, ORACLE["rocch"]["pmiss"])
    np.testing.assert_array_equal(np.array(fas) / NON.size, ORACLE["rocch"]["pfa"])
    np.testing.assert_allclose(ref.eer(TAR, NON), ORACLE["eer"]["rocch2eer"], rtol=RTOL)
    np.testing.assert_allclose(ref.prbep(TAR, NON), ORACLE["prbep"]["prbep_fn"], rtol=RTOL)
    np.testing.assert_allclose(ref.min_cllr(TAR, NON), ORACLE["cllr"]["min_cllr"], rtol=1e-8)
    np.testing.assert_allclose(ref.min_cllr(TAR, NON), 0.49593208355, rtol=1e-10)
    np.testing.assert_allclose(ref.cllr(TAR, NON), ORACLE["cllr"]["cllr"], rtol=RTOL)
    for p, want in zip(ORACLE["priors"]["P"], ORACLE["priors"]["minDCF_raw"], strict=True):
        np.testing.assert_allclose(ref.min_dcf(TAR, NON, np.log(p / (1 - p))), want, rtol=RTOL)


def test_eer_prbep_min_cllr_equal_the_reference(results):
    np.testing.assert_allclose(results.eer.item(), ref.eer(TAR, NON), rtol=1e-14)
    np.testing.assert_allclose(results.prbep.item(), ref.prbep(TAR, NON), rtol=1e-14)
    np.testing.assert_allclose(results.min_cllr.item(), ref.min_cllr(TAR, NON), rtol=1e-14)


@pytest.mark.parametrize("how", ["arrays", "trials"])
def test_dr30_does_not_depend_on_the_order_of_the_sweep(how):
    sweep = np.array(ORACLE["sweep"]["plo"])
    reversed_sweep = sweep[::-1].copy()
    if how == "arrays":
        r = metrics.evaluate_arrays(TAR, NON, priors=[0.5], sweep=reversed_sweep)
    else:
        scores, key = _as_trial_objects()
        r = metrics.evaluate(scores, key, priors=[0.5], sweep=reversed_sweep)
    # the first point from low prior log-odds with 30 false alarms, the last with 30 misses
    dr30 = ORACLE["dr30"]
    assert r.dr30_fa_plo.item() == sweep[dr30["nbe_sweep_index_fa_1based"] - 1]
    assert r.dr30_miss_plo.item() == sweep[dr30["nbe_sweep_index_miss_1based"] - 1]
