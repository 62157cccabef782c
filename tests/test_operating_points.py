"""Operating points in users' terms (Ptar:Cmiss:Cfa) and the thresholds of each: the Bayes
threshold actDCF applies and a score threshold attaining minDCF, checked by brute force under
random chunkings, coarse engine bins and heavy ties."""

from __future__ import annotations

import json
import math
from unittest import mock

import dask
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bosaris_dask import io, metrics
from bosaris_dask.cli import main
from bosaris_dask.costs import OperatingPoint
from bosaris_dask.errors import OptionError
from bosaris_dask.passes import pass1_bins
from bosaris_dask.trials import make_key, make_scores

from . import reference as ref


def _dcf(tar, non, t, p):
    """Normalized DCF at threshold t (accept iff s >= t), counted directly."""
    pmiss, pfa = np.mean(tar < t), np.mean(non >= t)
    return (p * pmiss + (1 - p) * pfa) / min(p, 1 - p)


def _brute_min_dcf(tar, non, p):
    candidates = np.concatenate([np.unique(np.concatenate([tar, non])), [np.inf]])
    return min(_dcf(tar, non, t, p) for t in candidates)


def test_hand_worked_operating_points():
    op = OperatingPoint.parse("0.01:10:1")
    assert op.effective_prior == pytest.approx(0.1 / (0.1 + 0.99), rel=1e-15)
    assert op.act_threshold == pytest.approx(math.log(0.99 / 0.1), rel=1e-14)
    vox = OperatingPoint.parse("0.05:1:1")
    assert vox.effective_prior == 0.05
    assert vox.act_threshold == pytest.approx(math.log(19), rel=1e-14)
    cm = OperatingPoint.parse("0.95:1:10")  # ASVspoof 5 CM: bona fide prior 0.95, Cfa 10
    assert cm.effective_prior == pytest.approx(0.95 / 1.45, rel=1e-15)
    assert cm.act_threshold == pytest.approx(-math.log(1.9), rel=1e-14)
    for bad, message in [("0.01:10", "not Ptar:Cmiss:Cfa"), ("a:1:1", "not three numbers"),
                         ("1:1:1", "strictly between 0 and 1"), ("0.1:0:1", "c_miss must be"),
                         ("0.1:1:inf", "c_fa must be")]:  # fmt: skip
        with pytest.raises(OptionError, match=message):
            OperatingPoint.parse(bad)


def test_points_of_one_effective_prior_give_one_result_or_an_error():
    # 0.01:10:1 and 0.5:1:9.9 (effective priors one ulp apart, one prior log-odds) were merged
    # silently, the later one's costs kept though the docstring said the first wins: no entry
    # for 0.01:10:1, and its DCF in cost units (0.0627) reported as 0.313
    tar, non = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.0, 1.5, -2.0])
    with pytest.raises(OptionError, match="operating points 0.01:10:1 and 0.5:1:9.9 have one "
                       "effective prior \\(0.0917431\\)"):  # fmt: skip
        metrics.evaluate_arrays(tar, non, priors=[0.5],
                                operating_points=["0.01:10:1", "0.5:1:9.9"])  # fmt: skip
    # a stated point replaces the bare prior of its effective prior; a repeat is dropped
    ds = metrics.operating_points(
        metrics.evaluate_arrays(
            tar, non, priors=[0.5, 0.01], operating_points=["0.5:2:2", "0.01:1:1", "0.5:2:2"]
        )
    )
    assert ds.p_target.values.tolist() == [0.5, 0.01] and ds.c_miss.values.tolist() == [2.0, 1.0]
    # 0.1:9:1 is even odds as written (the float 0.1 is not 1/10: its binary value made a
    # second result at prior 0.5, its threshold 6e-17, which rejects a score of 0)
    ds = metrics.operating_points(
        metrics.evaluate_arrays([0.0, 1.0], [0.0, -1.0], priors=[0.5], operating_points=["0.1:9:1"])
    )
    assert ds.prior.values.tolist() == [0.5] and ds.act_threshold.values.tolist() == [0.0]
    assert ds.p_target.values.tolist() == [0.1] and float(ds.act_pmiss[0, 0]) == 0.0
    with pytest.raises(OptionError, match="operating points 0.5:2:2 and 0.1:9:1 have one "):
        metrics.evaluate_arrays(tar, non, operating_points=["0.5:2:2", "0.1:9:1"])
    # a stated point equal to a bare prior is stated all the same: a second point of other
    # costs is refused, not put in its place (0.01:1:1 was dropped without a word)
    with pytest.raises(OptionError, match="operating points 0.01:1:1 and 0.01:2:2 have one "):
        metrics.evaluate_arrays(tar, non, priors=[0.01],
                                operating_points=["0.01:1:1", "0.01:2:2"])  # fmt: skip


def test_hand_worked_thresholds():
    tar, non = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.0, 1.5, -2.0])
    ds = metrics.operating_points(
        metrics.evaluate_arrays(tar, non, priors=[0.5], operating_points=["0.2:1:4", "0.9:9:1"])
    )
    # 0.5: accept {1, 2, 3, 1.5}: Pfa 1/4 -> 0.25. 0.2:1:4 (p = 1/17): accepting {2, 3} costs
    # p/3, less than any false alarm (16/17 * 1/4) or a second miss: threshold 2.0.
    # 0.9:9:1 (p = 81/82): no miss and one false alarm (1/82 * 1/4), threshold 1.0, as at 0.5
    assert ds.min_threshold.values[0].tolist() == [1.0, 2.0, 1.0]
    assert ds.p_target.values.tolist() == [0.5, 0.2, 0.9]
    assert ds.c_fa.values.tolist() == [1.0, 4.0, 1.0]
    assert ds.prior.values[1] == pytest.approx(1 / 17, rel=1e-15)
    np.testing.assert_allclose(ds.act_threshold, [0.0, math.log(16), -math.log(81)], atol=1e-14)
    for j, p in enumerate(ds.prior.values):
        t = ds.min_threshold.values[0, j]
        assert _dcf(tar, non, t, p) == pytest.approx(float(ds.min_dcf[0, j]), rel=1e-12)
    # rejecting everything is optimal when a false alarm costs far more than a miss can save
    ops = metrics.operating_points
    reject = ops(metrics.evaluate_arrays([0.0, 1.0], [1.0, 2.0], priors=[0.01]))
    assert reject.min_threshold.item() == np.inf and reject.min_dcf.item() == 1.0
    # accepting everything (the lowest score is a target's): -inf
    accept = ops(metrics.evaluate_arrays([-1.0, 2.0], [0.0, 1.0], priors=[0.9]))
    assert accept.min_threshold.item() == -np.inf and accept.min_dcf.item() == 1.0


def _plo_of(point: tuple[float, float, float]) -> float:
    """One result per effective prior: points that share one are refused."""
    return OperatingPoint(*point).plo


@st.composite
def _trials(draw):
    n_m, n_s = draw(st.integers(1, 8)), draw(st.integers(2, 10))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    ties = draw(st.sampled_from([1, 3, 50, None]))  # heavy ties .. all distinct
    values = rng.normal(size=(n_m, n_s)) * draw(st.sampled_from([0.1, 2.0, 1e3]))
    values = np.round(values * ties) / ties if ties else values
    mask = rng.choice(np.array([-1, 0, 1], dtype=np.int8), size=(n_m, n_s), p=[0.6, 0.1, 0.3])
    mask[0, 0], mask[-1, -1] = 1, -1
    values = (values + (mask == 1) * draw(st.sampled_from([0.0, 1.0]))).astype(dtype)

    def cuts(n):
        inner = sorted(draw(st.sets(st.integers(1, n - 1), max_size=3))) if n > 1 else []
        edges = [0, *inner, n]
        return tuple(b - a for a, b in zip(edges[:-1], edges[1:], strict=True))

    points = draw(st.lists(st.tuples(st.sampled_from([0.001, 0.01, 0.05, 0.5, 0.9, 0.99]),
                                     st.sampled_from([1.0, 10.0]), st.sampled_from([1.0, 10.0])),
                           min_size=1, max_size=4, unique_by=_plo_of))  # fmt: skip
    return values, mask, (cuts(n_m), cuts(n_s)), [OperatingPoint(*p) for p in points]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_trials(), coarse=st.sampled_from([2, 8, 20]), dense=st.booleans())
def test_min_threshold_attains_min_dcf_under_any_chunking(data, coarse, dense):
    values, mask, chunks, points = data
    models = [f"m{i}" for i in range(values.shape[0])]
    segments = [f"s{j}" for j in range(values.shape[1])]
    key = make_key(models, segments, mask, chunks=chunks)
    scores = make_scores(models, segments, values, chunks=chunks)
    tar, non = values[mask == 1], values[mask == -1]
    with (
        dask.config.set(
            {"bosaris_dask.raw-limit": 0 if dense else 1 << 22, "bosaris_dask.dense-budget": 64}
        ),  # fmt: skip
        mock.patch.object(pass1_bins, "default_coarse_bits", lambda n: coarse),
    ):
        ds = metrics.evaluate(scores, key, priors=[], operating_points=points, split_every=2)
    ds = metrics.operating_points(ds)
    for j, p in enumerate(ds.prior.values):
        op = next(o for o in points if o.effective_prior == p)
        assert ds.p_target.values[j] == op.p_target and ds.c_miss.values[j] == op.c_miss
        t = float(ds.min_threshold.values[0, j])
        brute = _brute_min_dcf(tar, non, p)
        assert _dcf(tar, non, t, p) == pytest.approx(brute, rel=1e-12, abs=1e-300)
        assert float(ds.min_dcf.values[0, j]) == pytest.approx(brute, rel=1e-12, abs=1e-300)
        # the Bayes threshold: ln((1 - Ptar) Cfa / (Ptar Cmiss)), and actDCF applies it
        bayes = math.log((1 - op.p_target) * op.c_fa / (op.p_target * op.c_miss))
        assert ds.act_threshold.values[j] == pytest.approx(bayes, rel=1e-12, abs=1e-12)
        raw, _, _ = ref.dcf_at(tar, non, -ds.act_threshold.values[j])
        assert float(ds.act_dcf_raw.values[0, j]) == pytest.approx(raw, rel=1e-12, abs=1e-300)


def test_cli_operating_points_in_json_and_table(tmp_path, capsys):
    rng = np.random.default_rng(0)
    label = {True: "target", False: "nontarget"}
    lines = [f"m{i} s{j} {rng.normal(1.5 if i == j else 0.0):.4f} {label[i == j]}"
             for i in range(6) for j in range(20)]  # fmt: skip
    path = tmp_path / "sys.scores"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "r.json"
    assert main(["evaluate", "--scores", str(path), "--operating-point", "0.01:10:1",
                 "--operating-point", "0.05:1:1", "--json", str(out), "-q"]) == 0  # fmt: skip
    table = capsys.readouterr().out
    assert "0.01:10:1" in table and "P=0.05" in table
    doc = json.loads(out.read_text())
    ops = doc["systems"][0]["operating_points"]
    assert [(o["p_target"], o["c_miss"], o["c_fa"]) for o in ops] == [(0.01, 10, 1), (0.05, 1, 1)]
    assert ops[0]["act_threshold"] == pytest.approx(math.log(9.9), rel=1e-13)
    assert ops[1]["act_threshold"] == pytest.approx(math.log(19), rel=1e-13)
    rows = [line.split() for line in lines]
    tar = np.array([float(r[2]) for r in rows if r[3] == "target"])
    non = np.array([float(r[2]) for r in rows if r[3] == "nontarget"])
    for o in ops:
        t = -np.inf if o["min_threshold"] is None else o["min_threshold"]
        assert _dcf(tar, non, t, o["prior"]) == pytest.approx(o["min_dcf"], rel=1e-12)
        # C_det in cost units (NIST): c_miss P Pmiss + c_fa (1 - P) Pfa at the stated costs
        for which, thr in (("act", o["act_threshold"]), ("min", t)):
            pmiss, pfa = np.mean(tar < thr), np.mean(non >= thr)
            cdet = o["c_miss"] * o["p_target"] * pmiss + o["c_fa"] * (1 - o["p_target"]) * pfa
            assert o[f"{which}_cdet"] == pytest.approx(cdet, rel=1e-12)
    assert ops[0]["min_cdet"] > ops[0]["min_dcf_raw"]  # 0.01:10:1 costs more than unit costs
    assert ops[1]["min_cdet"] == ops[1]["min_dcf_raw"]
    with pytest.raises(SystemExit) as info:  # argparse: usage error, exit status 2
        main(["evaluate", "--scores", str(path), "--operating-point", "0.01:10", "-q"])
    assert info.value.code == 2
    assert "not Ptar:Cmiss:Cfa" in capsys.readouterr().err


def _exact_threshold(p_target, c_miss, c_fa, p_nontarget=None):
    """The Bayes threshold ln((1 - P) C_fa / (P C_miss)) of the numbers as written (each
    float's shortest decimal: 0.1 is 1/10), to 60 digits (with ``p_nontarget``: P = 1 -
    p_nontarget exactly)."""
    from decimal import Decimal, getcontext
    from fractions import Fraction

    def written(x):
        return Fraction(repr(float(x)))

    getcontext().prec = 60
    q = 1 - written(p_target) if p_nontarget is None else written(p_nontarget)
    r = q * written(c_fa) / ((1 - q) * written(c_miss))
    return (Decimal(r.numerator) / Decimal(r.denominator)).ln()


def _straddle(eta):
    """The least float >= eta and the float below it."""
    from decimal import Decimal

    x = float(eta)
    if Decimal(x) < eta:
        x = math.nextafter(x, math.inf)
    return x, math.nextafter(x, -math.inf)


@settings(max_examples=60, deadline=None)
@given(p=st.floats(1e-4, 1 - 1e-4), log_ratio=st.floats(-14.0, 14.0))
def test_a_score_at_the_bayes_threshold_is_accepted_whatever_the_costs(p, log_ratio):
    # accept iff s >= ln((1 - P) C_fa / (P C_miss)): the float at or just above the exact
    # threshold is accepted, the float below it is not (a target and a non-target at each)
    c_miss = float(np.exp(log_ratio)) if log_ratio > 0 else 1.0
    c_fa = float(np.exp(-log_ratio)) if log_ratio < 0 else 1.0
    at, below = _straddle(_exact_threshold(p, c_miss, c_fa))
    tar = non = np.array([at, below])
    op = OperatingPoint(p, c_miss, c_fa)
    for ds in (
        metrics.evaluate_arrays(tar, non, priors=[], operating_points=[op]),
        metrics.evaluate(
            make_scores(["a", "b"], ["s", "t"], [[at, at], [below, below]]),
            make_key(["a", "b"], ["s", "t"], [[1, -1], [1, -1]]),
            priors=[],
            operating_points=[op],
        ),  # fmt: skip
    ):
        point = metrics.operating_points(ds).isel(system=0)
        assert (float(point.act_pmiss[0]), float(point.act_pfa[0])) == (0.5, 0.5)


def test_far_apart_costs_keep_the_threshold_to_the_last_place():
    op = OperatingPoint.parse("0.5:1000000:1")  # logit of its effective prior is 28,000 ulp off
    assert op.act_threshold == -math.log(1e6)
    at, below = _straddle(_exact_threshold(0.5, 1e6, 1.0))
    ds = metrics.evaluate_arrays([at], [at, below], priors=[], operating_points=[op])
    point = metrics.operating_points(ds).isel(system=0)
    assert float(point.act_threshold[0]) == op.act_threshold
    assert (float(point.act_pmiss[0]), float(point.act_pfa[0]), float(point.act_dcf[0])) == (
        0.0, 0.5, 0.5)  # fmt: skip


def test_asvspoof5_countermeasure_threshold_is_minus_ln_1_9():
    from bosaris_dask.profiles import PROFILES
    from bosaris_dask.spoofing.scale import evaluate_cm

    (op,) = PROFILES["asvspoof5-cm"].operating_points
    at, below = _straddle(_exact_threshold(None, 1.0, 10.0, p_nontarget=0.05))
    assert op.act_threshold == at  # the spoof prior 0.05 as stated, not the float 1 - 0.05
    key = make_key(["cm"], list("abcd"), [[1, 1, -1, -1]])
    out = evaluate_cm(make_scores(["cm"], list("abcd"), [[at, below, at, below]]), key)
    assert out["act_threshold"] == at
    assert out["act_dcf"] == pytest.approx((0.95 * 0.5 + 0.5 * 0.5) / 0.5, rel=1e-15)


def test_integer_scores_beyond_2_53_are_refused_not_rounded_into_ties():
    from bosaris_dask.errors import ScoreError

    big = np.array([2**53 + 1, 2**53], dtype=np.int64)  # 2**53 + 1 is no float64
    with pytest.raises(ScoreError, match="integer scores reach 9007199254740993, beyond 2"):
        metrics.auc(big, np.array([2**53, 2**53 + 2], dtype=np.int64))
    small = np.array([-(2**53), 5], dtype=np.int64)  # every integer up to 2**53 is a float64
    assert metrics.auc(small, np.array([0], dtype=np.int64)) == 0.5


def test_scores_float64_does_not_hold_are_refused_wherever_they_enter(tmp_path):
    """longdouble scores were evaluated as float64 with no word, 1 + 2**-60 tied with 1 (EER
    0.5 for a separated pair), and int64 beyond 2**53 too in a Scores built by hand."""
    from bosaris_dask.errors import ScoreError

    above_one = np.longdouble(1) + np.longdouble(2) ** -60
    if above_one == 1:  # (a platform whose longdouble is float64 holds no such score)
        pytest.skip("longdouble is float64 here")
    tar, non = np.array([above_one]), np.array([1], dtype=np.longdouble)
    message = "the float128 score 1.0000000000000000009 is not a float64"
    with pytest.raises(ScoreError, match=message.replace("128", r"\d+")):
        metrics.auc(tar, non)
    with pytest.raises(ScoreError, match=message.replace("128", r"\d+")):
        make_scores(["m"], ["a", "b"], np.array([[above_one, 1]]))
    key = make_key(["m"], ["a", "b"], [[1, -1]])
    by_hand = make_scores(["m"], ["a", "b"], [[0.0, 1.0]])
    for values, text in ((np.array([[above_one, 1]]), "is not a float64"),
                         (np.array([[2**53 + 1, 2**53]]), "integer scores reach")):  # fmt: skip
        with pytest.raises(ScoreError, match=text):
            metrics.evaluate(by_hand.assign(score=(("model", "segment"), values)), key)
    exact = np.array([[2.0, 1.0]], dtype=np.longdouble)  # float64 values: evaluated as they are
    assert metrics.evaluate(by_hand.assign(score=(("model", "segment"), exact)), key).eer == 0
    assert metrics.auc(exact[0, :1], exact[0, 1:]) == 1.0


def test_stored_integer_scores_beyond_2_53_are_refused_not_rounded_into_ties(tmp_path, capsys):
    import h5py

    from bosaris_dask.errors import ScoreError

    values = np.array([[2**60 + 1, 2**60], [2**60 + 3, 2**60]], dtype=np.int64)
    with pytest.raises(ScoreError, match="integer scores reach 1152921504606846979, beyond 2"):
        make_scores(["m1", "m2"], ["s1", "s2"], values)  # was EER 0.5 for the exact 0
    key = make_key(["m1", "m2"], ["s1", "s2"], [[1, -1], [1, -1]])
    ok = make_scores(["m1", "m2"], ["s1", "s2"], values - 2**60)  # small integers: exact
    assert metrics.evaluate(ok, key).eer.item() == 0.0
    with h5py.File(tmp_path / "s.h5", "w") as f:  # as a MATLAB int64 matrix is stored
        f["scores"] = values
        f["score_mask"] = np.ones((2, 2), np.uint8)
        f["ID/row_ids"], f["ID/column_ids"] = [b"m1", b"m2"], [b"s1", b"s2"]
    io.write(key, tmp_path / "k.h5")
    rc = main(["evaluate", "--key", str(tmp_path / "k.h5"), "--scores", str(tmp_path / "s.h5"),
               "-q", "--cluster", "threads"])  # fmt: skip
    assert rc == 1
    assert "s.h5: /scores: integer scores reach 1152921504606846979" in capsys.readouterr().err
