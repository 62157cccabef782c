"""Forensic likelihood ratios: Cllr_cal, log10 LR input/output (--llr-base 10), and the optimal
(PAV) LLRs, raw and with Laplace's dummies, against hand-worked cases and a naive PAV."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bosaris_dask import io, metrics
from bosaris_dask.calibration import optimal_llrs, optimal_llrs_arrays
from bosaris_dask.cli import main
from bosaris_dask.trials import make_key, make_scores

from . import reference as ref


def _naive_pav_llrs(tar, non, laplace):
    """PAV by repeated pooling of adjacent violators, on the trials sorted by score (ties
    pooled), with the dummies as extra trials at -inf and +inf; the prior log-odds is the real
    trials' (BOSARIS's opt_loglr). Returns LLRs per input trial."""
    scores = np.concatenate([tar, non]).astype(float)
    labels = np.concatenate([np.ones(len(tar)), np.zeros(len(non))])
    T, N = len(tar), len(non)
    if laplace:
        scores = np.concatenate([scores, [-np.inf, -np.inf, np.inf, np.inf]])
        labels = np.concatenate([labels, [1, 0, 1, 0]])
    values = sorted(set(scores.tolist()))
    blocks = [[[v], labels[scores == v].sum(), (scores == v).sum()] for v in values]
    changed = True
    while changed:
        changed = False
        for i in range(len(blocks) - 1):
            a, b = blocks[i], blocks[i + 1]
            if a[1] / a[2] >= b[1] / b[2]:  # not strictly increasing: pool
                blocks[i : i + 2] = [[a[0] + b[0], a[1] + b[1], a[2] + b[2]]]
                changed = True
                break
    llr_of = {}
    for vals, t, n in blocks:
        with np.errstate(divide="ignore"):
            llr = np.log(t) - np.log(n - t) - math.log(T / N)
        for v in vals:
            llr_of[v] = llr
    out = np.array([llr_of[v] for v in scores[: len(tar) + len(non)]])
    return out[: len(tar)], out[len(tar) :]


def test_hand_worked_optimal_llrs():
    # sorted: 0 n, 1 n, 2 t, 2.5 n, 3 t -> PAV blocks {0, 1}: 0/2, {2, 2.5}: 1/1, {3}: 1/0
    tar, non = [2.0, 3.0], [0.0, 1.0, 2.5]
    t, n = optimal_llrs_arrays(tar, non)
    prior = math.log(2 / 3)
    np.testing.assert_allclose(t, [-prior, np.inf], rtol=1e-15)
    np.testing.assert_allclose(n, [-np.inf, -np.inf, -prior], rtol=1e-15)
    # Laplace: a (t, n) pair at each end: 1/1, 0/1, 0/1, 1/1 ({2, 2.5}), 1/0, 1/1
    # PAV: {pair, 0, 1}: 1/3, {2, 2.5}: 1/1, {3, pair}: 2/1; the real trials' T/N = 2/3
    t, n = optimal_llrs_arrays(tar, non, laplace=True)
    np.testing.assert_allclose(t, [0.0 - prior, math.log(2) - prior], rtol=1e-15)
    np.testing.assert_allclose(n, [math.log(1 / 3) - prior] * 2 + [0.0 - prior], rtol=1e-15)
    # minCllr is the Cllr of the raw optimal LLRs (pure end blocks cost nothing): the target
    # at 2 costs log(1 + 2/3), the non-target at 2.5 log(1 + 3/2), over 2 targets and 3 non
    hand = (math.log(5 / 3) / 2 + math.log(5 / 2) / 3) / 2 / math.log(2)
    assert metrics.min_cllr(tar, non) == pytest.approx(hand, rel=1e-14)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tar=st.lists(st.integers(-4, 4), min_size=1, max_size=12),
    non=st.lists(st.integers(-4, 4), min_size=1, max_size=12),
    laplace=st.booleans(),
)
def test_optimal_llrs_equal_a_naive_pav(tar, non, laplace):
    tar, non = np.array(tar, dtype=float) / 2, np.array(non, dtype=float) / 2  # heavy ties
    got_t, got_n = optimal_llrs_arrays(tar, non, laplace=laplace)
    want_t, want_n = _naive_pav_llrs(tar, non, laplace)
    np.testing.assert_allclose(got_t, want_t, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_n, want_n, rtol=1e-12, atol=1e-12)
    if laplace:
        assert np.isfinite(got_t).all() and np.isfinite(got_n).all()
    else:
        llr_cllr = (np.where(np.isfinite(got_t), np.logaddexp(0, -got_t), 0).mean()
                    + np.where(np.isfinite(got_n), np.logaddexp(0, got_n), 0).mean())  # fmt: skip
        assert metrics.min_cllr(tar, non) == pytest.approx(llr_cllr / 2 / math.log(2), abs=1e-12)


@pytest.mark.parametrize("laplace", [False, True])
def test_optimal_llrs_of_stored_trials_match_the_arrays(laplace):
    rng = np.random.default_rng(4)
    mask = rng.choice(np.array([-1, 0, 1], dtype=np.int8), size=(9, 13), p=[0.6, 0.1, 0.3])
    values = np.round(rng.normal(size=mask.shape) + (mask == 1), 1)
    models, segments = [f"m{i}" for i in range(9)], [f"s{j}" for j in range(13)]
    key = make_key(models, segments, mask, chunks=(4, 5))
    # the scores list the ids in another order, and one column has no score at all
    order_m, order_s = rng.permutation(9), rng.permutation(13)
    scored = np.ones(mask.shape, dtype=bool)
    scored[:, 3] = False
    scores = make_scores(np.array(models)[order_m], np.array(segments)[order_s],
                         values[np.ix_(order_m, order_s)], scored[np.ix_(order_m, order_s)],
                         chunks=(3, 7))  # fmt: skip
    out = optimal_llrs(scores, key, laplace=laplace, allow_missing=True)
    assert out.model.values.tolist() == models and out.segment.values.tolist() == segments
    keep = (mask != 0) & scored
    np.testing.assert_array_equal(out.score_mask.values, keep)
    t, n = optimal_llrs_arrays(values[keep & (mask == 1)], values[keep & (mask == -1)],
                               laplace=laplace)  # fmt: skip
    np.testing.assert_array_equal(out.score.values[keep & (mask == 1)], t)
    np.testing.assert_array_equal(out.score.values[keep & (mask == -1)], n)


def test_cllr_cal_is_cllr_minus_min_cllr():
    tar, non = np.array([0.5, 2.0, 3.0, -0.2]), np.array([-1.0, 0.0, 1.5, -2.0, 0.5])
    ds = metrics.evaluate_arrays(tar, non, priors=[0.5])
    cllr = ref.cllr(tar, non)
    assert ds.cllr_cal.item() == pytest.approx(cllr - metrics.min_cllr(tar, non), rel=1e-12)
    assert ds.cllr_cal.item() > 0


def test_calibrated_llrs_lose_nothing_to_calibration():
    """Scores that are their own PAV map's LLRs have Cllr = minCllr; the hull's float64 block
    sums put minCllr an ulp above the exact Cllr, and cllr_cal at -2e-16, in 10 of 40 cases."""
    rng = np.random.default_rng(8)
    checked = 0
    for _ in range(40):
        tar = np.round(rng.normal(1.5, 1, rng.integers(5, 200)), 1)
        non = np.round(rng.normal(0, 1, rng.integers(5, 2000)), 1)
        tar[0], non[0] = -9.0, 9.0  # a target below and a non-target above all: no pure block
        values, at = np.unique(np.r_[tar, non], return_inverse=True)
        n_tar = np.bincount(at[: len(tar)], minlength=len(values))
        n_non = np.bincount(at[len(tar) :], minlength=len(values))
        llr = np.zeros(len(values))  # each value's LLR, set from its PAV block below
        blocks = [[t, n, [v]] for v, (t, n) in enumerate(zip(n_tar, n_non, strict=True))]
        pooled = []  # PAV by a stack of blocks: pool while the ratio does not increase
        for block in blocks:
            pooled.append(block)
            while len(pooled) > 1 and (
                pooled[-2][0] * (pooled[-1][0] + pooled[-1][1])
                >= pooled[-1][0] * (pooled[-2][0] + pooled[-2][1])
            ):
                t, n, vs = pooled.pop()
                pooled[-1][0] += t
                pooled[-1][1] += n
                pooled[-1][2] += vs
        if any(t == 0 or n == 0 for t, n, _ in pooled):
            continue  # an infinite LLR: not an evaluation's input
        for t, n, vs in pooled:
            llr[vs] = np.log(t / len(tar)) - np.log(n / len(non))
        ds = metrics.evaluate_arrays(llr[at[: len(tar)]], llr[at[len(tar) :]], priors=[0.5])
        assert ds.cllr_cal.item() >= 0 and ds.min_cllr.item() <= ds.cllr.item()
        assert ds.cllr_cal.item() == pytest.approx(0, abs=1e-12)
        checked += 1
    assert checked >= 20


def test_a_log10_score_beyond_float64_once_scaled_is_named_not_called_non_finite(tmp_path, capsys):
    key, _ = _files(tmp_path, 1.0)
    lines = key.read_text().splitlines()
    scores = tmp_path / "big.txt"
    scores.write_text(
        "".join(
            f"{line.rsplit(' ', 1)[0]} {v!r}\n"
            for line, v in zip(lines, [1e308, -1e308] + [0.5] * (len(lines) - 2), strict=True)
        )
    )
    assert main(["evaluate", "--key", str(key), "--scores", str(scores), "--llr-base", "10",
                 "-q"]) == 1  # fmt: skip
    err = capsys.readouterr().err
    assert "the score 1e+308 is beyond the float64 range" in err and "7.807e+307" in err
    assert "non-finite" not in err and "RuntimeWarning" not in err
    assert main(["evaluate", "--key", str(key), "--scores", str(scores), "-q"]) == 0  # base e


def _files(tmp_path, scale):
    rng = np.random.default_rng(7)
    lines = []
    for i in range(5):
        for j in range(30):
            target = i == j % 5
            llr10 = round(float(rng.normal(1.0 if target else -1.0, 0.8)), 3)
            lines.append((f"m{i}", f"s{j}", llr10 * scale, target))
    scores = tmp_path / f"scores-{scale:.3f}.txt"
    scores.write_text("".join(f"{m} {s} {v!r}\n" for m, s, v, _ in lines))
    key = tmp_path / "key.txt"
    key.write_text("".join(f"{m} {s} {'target' if t else 'nontarget'}\n" for m, s, _, t in lines))
    return key, scores


def test_llr_base_10_in_and_out(tmp_path):
    key, log10 = _files(tmp_path, 1.0)
    _, natural = _files(tmp_path, math.log(10))
    j10, jn = tmp_path / "b10.json", tmp_path / "bn.json"
    assert main(["evaluate", "--key", str(key), "--scores", str(log10), "--llr-base", "10",
                 "--prior", "0.5", "--json", str(j10), "-q"]) == 0  # fmt: skip
    assert main(["evaluate", "--key", str(key), "--scores", str(natural), "--prior", "0.5",
                 "--json", str(jn), "-q"]) == 0  # fmt: skip
    a, b = json.loads(j10.read_text())["systems"][0], json.loads(jn.read_text())["systems"][0]
    for field in ("cllr", "min_cllr", "cllr_cal", "eer"):
        assert a[field] == pytest.approx(b[field], rel=1e-12)
    op_a, op_b = a["operating_points"][0], b["operating_points"][0]
    assert op_a["act_dcf"] == op_b["act_dcf"] and op_a["min_dcf"] == op_b["min_dcf"]
    assert op_a["min_threshold"] == pytest.approx(op_b["min_threshold"] / math.log(10), rel=1e-12)
    # calibrate: train and apply on log10 LRs, write log10 LRs
    o10, on = tmp_path / "cal10.txt", tmp_path / "caln.txt"
    for scores, out, base in ((log10, o10, ["--llr-base", "10"]), (natural, on, [])):
        assert main(["calibrate", "--key", str(key), "--scores", str(scores), "--model-out",
                     str(tmp_path / "m.json"), "--apply", str(scores), "--out", str(out), "-q",
                     *base]) == 0  # fmt: skip
    got, want = io.read(o10, "scores").score.values, io.read(on, "scores").score.values
    np.testing.assert_allclose(got, want / math.log(10), rtol=1e-6, atol=1e-9)
    assert not np.allclose(got, want)


def test_a_model_trained_on_log10_lrs_is_applied_to_log10_lrs(tmp_path, capsys):
    key, log10 = _files(tmp_path, 1.0)
    model = tmp_path / "m10.json"
    assert main(["calibrate", "--key", str(key), "--scores", str(log10), "--model-out",
                 str(model), "--llr-base", "10", "--apply", str(log10), "--out",
                 str(tmp_path / "trained.txt"), "-q"]) == 0  # fmt: skip
    assert json.loads(model.read_text())["llr_base"] == "10"
    # apply without --llr-base reads and writes log10 LRs, as the model was trained (it read
    # them as natural-log LLRs: up to 8% off)
    assert main(["apply", "--model", str(model), "--scores", str(log10),
                 "--out", str(tmp_path / "applied.txt")]) == 0  # fmt: skip
    assert "reading and writing base-10 LLRs, as the model was trained" in capsys.readouterr().err
    want = (tmp_path / "trained.txt").read_text()
    assert (tmp_path / "applied.txt").read_text() == want
    assert main(["apply", "--model", str(model), "--scores", str(log10), "--llr-base", "e",
                 "--out", str(tmp_path / "as_e.txt")]) == 0  # fmt: skip
    assert "warning: the model was trained on base-10 LLRs, and --llr-base e" in (
        capsys.readouterr().err
    )
    assert (tmp_path / "as_e.txt").read_text() != want
    # a model trained on natural-log LLRs records no base, and apply reads natural logs
    _, natural = _files(tmp_path, math.log(10))
    assert main(["calibrate", "--key", str(key), "--scores", str(natural), "--model-out",
                 str(tmp_path / "me.json"), "-q"]) == 0  # fmt: skip
    assert "llr_base" not in json.loads((tmp_path / "me.json").read_text())


def test_base_10_float32_scores_keep_their_order_when_scaled():
    # a float32 product by ln 10 merged about a tenth of neighbouring float32 scores into ties
    # (a target and a non-target tied: the rank-based metrics can move); the scaling is float64
    from bosaris_dask.llr_base import to_natural
    from bosaris_dask.metrics import evaluate
    from bosaris_dask.trials import make_key, make_scores

    rng = np.random.default_rng(4)
    low = np.unique(rng.normal(size=400).astype(np.float32))
    high = np.nextafter(low, np.float32(np.inf))  # each score's float32 neighbour
    values = np.stack([low, high], axis=1).reshape(1, -1)
    labels = np.tile([-1, 1], low.size).reshape(1, -1)  # the neighbour above is a target
    ids = [f"s{j}" for j in range(values.shape[1])]
    key = make_key(["m"], ids, labels)
    scores = make_scores(["m"], ids, values)
    natural = to_natural(scores, 10)
    plain, scaled = evaluate(scores, key), evaluate(natural, key)
    for name in ("eer", "min_cllr", "prbep"):
        assert float(scaled[name][0]) == float(plain[name][0]), name
    assert np.all(np.diff(natural.score.values[0].reshape(-1, 2), axis=1) > 0)  # no new ties
