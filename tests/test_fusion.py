"""Linear and quality-measure fusion: optimum vs scipy and the BOSARIS reference, passes, apply."""

from __future__ import annotations

import json
import math
from pathlib import Path

import dask
import numpy as np
import pytest
import xarray as xr
from dask.callbacks import Callback
from scipy import optimize as sciopt
from scipy import special

from bosaris_dask.calibration import load_model
from bosaris_dask.errors import ScoreError, TrialError
from bosaris_dask.fusion import LinearFuser, QualityBackoffWarning, QualityFuser, linear_fuse
from bosaris_dask.fusion.fit_checks import FitWarning
from bosaris_dask.objectives import (
    FusionObjective,
    fusion_data,
    fusion_data_from_arrays,
    quality_matrix,
    quality_pairs,
)
from bosaris_dask.trials import (
    key_from_labels,
    make_key,
    make_ndx,
    make_quality,
    make_scores,
    quality_table,
)

GAUSS = Path(__file__).parent / "data" / "gauss1"  # see its README.md


class CountComputes(Callback):
    """Counts dask computes (each is one pass over the data)."""

    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    def _start(self, dsk) -> None:
        self.n += 1


# --------------------------------------------------------------------------------------------
# brute-force references
# --------------------------------------------------------------------------------------------


def _parts(theta, Xt, Xn, prior):
    plo = math.log(prior / (1 - prior))
    ent = -prior * math.log(prior) - (1 - prior) * math.log(1 - prior)
    out = []
    for X, y, w in ((Xt, 1.0, prior / len(Xt)), (Xn, -1.0, (1 - prior) / len(Xn))):
        yz = y * (X @ theta + plo)
        e = special.expit(-yz)  # 1 / (1 + exp(yz)), without overflow at far margins
        out.append((w / ent, X, y, yz, e))
    return out


def brute_objective(theta, Xt, Xn, prior):
    """The normalized prior-weighted cross-entropy, straight from its definition."""
    return sum(w * np.logaddexp(0, -yz).sum() for w, _, _, yz, _ in _parts(theta, Xt, Xn, prior))


def _grad(theta, Xt, Xn, prior):
    return sum(w * (X.T @ (-y * e)) for w, X, y, _, e in _parts(theta, Xt, Xn, prior))


def _hess(theta, Xt, Xn, prior):
    return sum(w * (X.T * (e * (1 - e))) @ X for w, X, _, _, e in _parts(theta, Xt, Xn, prior))


def scipy_optimum(Xt, Xn, prior, x0):
    """scipy's trust-region solver on the brute-force objective, polished to machine precision."""
    res = sciopt.minimize(
        brute_objective,
        x0,
        args=(Xt, Xn, prior),
        jac=_grad,
        hess=_hess,
        method="trust-exact",
        options={"gtol": 1e-14, "maxiter": 500},
    )
    x = res.x
    for _ in range(3):  # polish with plain Newton steps: scipy stops at ||g|| ~ 1e-10
        x = x - np.linalg.solve(_hess(x, Xt, Xn, prior), _grad(x, Xt, Xn, prior))
    assert np.linalg.norm(_grad(x, Xt, Xn, prior)) < 1e-13
    return x


def features(S, qm=None, qs=None):
    """Per-trial features [s_1..s_K, 1, phi_W] from explicit per-trial quality vectors."""
    X = np.c_[S, np.ones(len(S))]
    if qm is None:
        return X
    i, j = quality_pairs(qm.shape[1])
    phi = qm[:, i] * qs[:, j] + np.where(i != j, qm[:, j] * qs[:, i], 0.0)
    return np.c_[X, phi]


# --------------------------------------------------------------------------------------------
# a small trial set with shuffled ids, missing scores, missing quality
# --------------------------------------------------------------------------------------------


def trial_set(
    seed=0,
    n_models=23,
    n_segments=31,
    K=2,
    chunks=(12, 16),
    score_chunks=(12, 16),
    dtype=np.float64,
):
    rng = np.random.default_rng(seed)
    models = [f"m{i}" for i in range(n_models)]
    segments = [f"s{j}" for j in range(n_segments)]
    cls = rng.choice(
        np.array([1, -1, 0], dtype=np.int8), p=[0.25, 0.65, 0.1], size=(n_models, n_segments)
    )
    key = make_key(models, segments, cls, chunks=chunks)
    qm_vals = rng.normal(size=(n_models, 2))
    qs_vals = rng.normal(size=(n_segments, 2))
    qm_vals[rng.random(n_models) < 0.15] = np.nan  # no model quality
    qs_keep = rng.random(n_segments) > 0.1  # segments absent from the table
    quality = make_quality(
        quality_table(models, qm_vals), quality_table(np.array(segments)[qs_keep], qs_vals[qs_keep])
    )
    qmt = np.where(np.isnan(qm_vals).any(1)[:, None], 0.0, np.c_[qm_vals, np.ones(n_models)])
    qst = np.where(qs_keep[:, None], np.c_[qs_vals, np.ones(n_segments)], 0.0)
    gain = 1 + 0.5 * np.tanh(np.nan_to_num(qm_vals[:, :1]) + qs_vals[:, 0][None, :])
    dense, masks, scores = [], [], []
    # systems: rows/columns shuffled, one extra model, one key model missing, random holes
    for k in range(K):
        s = (cls == 1) * (1.5 + k) * gain + rng.normal(size=cls.shape) * (1 + 0.3 * k)
        s = (s * (3.0 if k == 1 else 1.0) + k).astype(dtype)
        m = rng.random(cls.shape) > 0.04
        dense.append(s.astype(np.float64))
        masks.append(m)
        perm_m, perm_s = rng.permutation(n_models)[1:], rng.permutation(n_segments)
        ids_m = [models[i] for i in perm_m] + ["extra"]
        sm = np.r_[s[perm_m][:, perm_s], rng.normal(size=(1, n_segments)).astype(dtype)]
        mm = np.r_[m[perm_m][:, perm_s], np.ones((1, n_segments), bool)]
        holes = np.where(mm, sm, np.nan).astype(dtype)  # NaN where there is no score
        scores.append(
            make_scores(ids_m, [segments[j] for j in perm_s], holes, mm, chunks=score_chunks)
        )
        masks[-1][np.setdiff1d(np.arange(n_models), perm_m)] = False  # the model left out
    scored = np.logical_and.reduce(masks)
    trial = cls != 0
    sel_t, sel_n = (cls == 1) & scored, (cls == -1) & scored
    S = np.stack(dense, axis=-1)
    qm_t = np.broadcast_to(qmt[:, None, :], (*cls.shape, 3))
    qs_t = np.broadcast_to(qst[None, :, :], (*cls.shape, 3))
    has_q = ~np.isnan(qm_vals).any(1)[:, None] & qs_keep[None, :]
    brute = {
        "Xt": features(S[sel_t]),
        "Xn": features(S[sel_n]),
        # the quality stage trains on the trials whose model and segment both have quality
        "Qt": features(S[sel_t & has_q], qm_t[sel_t & has_q], qs_t[sel_t & has_q]),
        "Qn": features(S[sel_n & has_q], qm_t[sel_n & has_q], qs_t[sel_n & has_q]),
        "n_missing": int((trial & ~scored).sum()),
        "S": S,
        "scored": scored,
        "qm": qmt,
        "qs": qst,
    }
    return key, scores, quality, brute


# --------------------------------------------------------------------------------------------
# the BOSARIS reference (gauss1)
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gauss_fusion():
    oracle = json.loads((GAUSS / "oracle.json").read_text())
    return np.loadtxt(GAUSS / "fusion_tar.txt"), np.loadtxt(GAUSS / "fusion_non.txt"), oracle


@pytest.mark.parametrize("which", [0, 1, 2])
def test_gauss1_fusion_matches_scipy_and_reference(gauss_fusion, which: int) -> None:
    tar, non, oracle = gauss_fusion
    ref = oracle["fusion"]["results"][which]
    prior = ref["prior"]
    assert np.loadtxt(GAUSS / "fusion_priors.txt")[which] == pytest.approx(prior)
    Xt, Xn = features(tar), features(non)
    x0 = np.r_[np.full(3, 1 / 3), 0.0]
    best = scipy_optimum(Xt, Xn, prior, x0)
    results = {}
    for method in ("exact", "cg"):
        fuser = LinearFuser(prior, method=method, gtol=1e-10, split_every=2)
        with CountComputes() as counter:
            fuser.fit_arrays(tar, non, chunk=4000)  # 6 chunks: the tree sum really combines
        assert fuser.converged_ and fuser.passes_ == counter.n
        theta = np.r_[fuser.weights_, fuser.offset_]
        np.testing.assert_allclose(theta, best, rtol=0, atol=1e-8)
        assert fuser.objective_ == pytest.approx(brute_objective(theta, Xt, Xn, prior), rel=1e-12)
        assert fuser.objective_ <= ref["nxe"] + 1e-12  # at least as good as the reference
        # the reference stopped a little short of the optimum: weights agree to ~4e-4
        np.testing.assert_allclose(theta, np.r_[ref["weights"], ref["offset"]], atol=5e-4)
        assert fuser.counts_ == {"n_target": 2000, "n_nontarget": 20000, "n_missing": 0}
        results[method] = fuser
    assert results["exact"].passes_ < results["cg"].passes_  # why the exact path exists
    assert results["exact"].passes_ <= 10


# --------------------------------------------------------------------------------------------
# trial objects
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["exact", "cg"])
def test_linear_fusion_of_trial_objects_equals_scipy(method: str) -> None:
    key, scores, _, brute = trial_set(seed=1, chunks=(6, 8), score_chunks=(5, 7))
    best = scipy_optimum(brute["Xt"], brute["Xn"], 0.3, np.array([0.5, 0.5, 0.0]))
    fuser = LinearFuser(0.3, method=method, gtol=1e-10, split_every=2, persist=True)
    with CountComputes() as counter:
        fuser.fit(scores, key, allow_missing=True)
    np.testing.assert_allclose(np.r_[fuser.weights_, fuser.offset_], best, rtol=0, atol=1e-8)
    assert fuser.passes_ == counter.n
    assert fuser.counts_ == {
        "n_target": len(brute["Xt"]),
        "n_nontarget": len(brute["Xn"]),
        "n_missing": brute["n_missing"],
    }
    assert brute["n_missing"] > 0


def test_label_key_and_float32_scores() -> None:
    rng = np.random.default_rng(2)
    ml, sl = rng.integers(0, 4, 20), rng.integers(0, 4, 26)
    key = key_from_labels([f"m{i}" for i in range(20)], ml, [f"s{j}" for j in range(26)], sl)
    cls = np.where(ml[:, None] == sl[None, :], 1, -1)
    s = (cls > 0) * 2.0 + rng.normal(size=cls.shape)
    scores = make_scores(key.model.values, key.segment.values, s.astype(np.float32), chunks=(7, 9))
    fuser = LinearFuser(0.5, gtol=1e-10, split_every=2).fit(scores, key, allow_missing=True)
    s32 = s.astype(np.float32).astype(np.float64)
    best = scipy_optimum(
        features(s32[cls > 0][:, None]), features(s32[cls < 0][:, None]), 0.5, np.r_[1.0, 0.0]
    )
    np.testing.assert_allclose(np.r_[fuser.weights_, fuser.offset_], best, atol=1e-8)


def test_split_every_deterministic_graph_and_persist() -> None:
    key, scores, _, _ = trial_set(seed=3, chunks=(6, 8), score_chunks=(5, 7))
    theta = np.array([0.7, 0.2, -1.0])
    results = []
    for split_every in (None, 2):
        obj = FusionObjective(fusion_data(scores, key), 0.2, split_every=split_every)
        assert obj._graph("fgH", theta, None).name == obj._graph("fgH", theta, None).name
        results.append(obj.evaluate(theta, "fgH"))
    assert results[0].f == pytest.approx(results[1].f, rel=1e-14)
    np.testing.assert_allclose(results[0].H, results[1].H, rtol=1e-13)
    a = LinearFuser(0.2, gtol=1e-10).fit(scores, key, allow_missing=True)
    b = LinearFuser(0.2, gtol=1e-10, persist=True).fit(scores, key, allow_missing=True)
    np.testing.assert_allclose(a.weights_, b.weights_, rtol=1e-12)


def test_hessian_vector_products_match_full_hessian() -> None:
    key, scores, quality, _ = trial_set(seed=4)
    obj = FusionObjective(fusion_data(scores, key, quality), 0.1, l2=0.01, split_every=2)
    rng = np.random.default_rng(0)
    theta = rng.normal(size=obj.n_params) * 0.3
    ev = obj.evaluate(theta, "fgH")
    v = rng.normal(size=obj.n_params)
    np.testing.assert_allclose(obj.hessp(theta, v), ev.H @ v, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(obj.evaluate(theta, "fgd").diag, np.diag(ev.H), rtol=1e-12)
    np.testing.assert_allclose(obj.evaluate(theta, "fg").g, ev.g, rtol=1e-13)
    # the gradient is the derivative of the value (central differences)
    h = 1e-6
    fd = [
        (obj.evaluate(theta + h * e, "f").f - obj.evaluate(theta - h * e, "f").f) / (2 * h)
        for e in np.eye(obj.n_params)
    ]
    np.testing.assert_allclose(ev.g, fd, rtol=1e-6, atol=1e-9)


def test_transform_is_lazy_aligned_and_exact() -> None:
    key, scores, _, brute = trial_set(seed=5, dtype=np.float32)
    fuser = LinearFuser(0.5).fit(scores, key, allow_missing=True)
    with CountComputes() as counter:
        out = fuser.transform(scores)
    assert counter.n == 0  # building the output computes nothing
    assert out.attrs["bosaris_kind"] == "scores" and out.score.dtype == np.float64
    assert list(out.model.values) == list(scores[0].model.values)
    assert list(out.segment.values) == list(scores[0].segment.values)
    s0, s1 = (sc.reindex_like(out) for sc in scores)
    mask = s0.score_mask.fillna(False).values.astype(bool)
    mask &= s1.score_mask.fillna(False).values.astype(bool)
    np.testing.assert_array_equal(out.score_mask.values, mask)
    expected = fuser.offset_ + fuser.weights_[0] * s0.score.values.astype(np.float64)
    expected = expected + fuser.weights_[1] * s1.score.values.astype(np.float64)
    np.testing.assert_allclose(out.score.values[mask], expected[mask], rtol=1e-13)
    assert (out.score.values[~mask] == 0.0).all()


def test_dev_eval_and_cheating_workflows() -> None:
    key, scores, _, brute = trial_set(seed=6)
    fuser = LinearFuser(0.5).fit(scores, key, allow_missing=True)
    # eval set: another list of trials over other ids (one unknown to the scores)
    eval_models = list(key.model.values[3:12]) + ["nobody"]
    eval_segments = list(key.segment.values[::2])
    rng = np.random.default_rng(0)
    ndx = make_ndx(eval_models, eval_segments, rng.random((10, len(eval_segments))) > 0.3)
    out = fuser.transform(scores, ndx=ndx)
    assert list(out.model.values) == eval_models
    S, scored = brute["S"], brute["scored"]
    rows = [int(m[1:]) for m in eval_models[:-1]]
    cols = [int(s[1:]) for s in eval_segments]
    sub = np.ix_(rows, cols)
    want_mask = np.r_[ndx.trial_mask.values[:-1] & scored[sub], np.zeros((1, len(cols)), bool)]
    np.testing.assert_array_equal(out.score_mask.values, want_mask)
    llr = fuser.offset_ + S[sub] @ fuser.weights_
    np.testing.assert_allclose(out.score.values[:-1][want_mask[:-1]], llr[want_mask[:-1]])
    # cheating: train and apply on the same set = fit, then transform restricted to the key
    cheat = LinearFuser(0.5).fit_transform(scores, key, allow_missing=True)
    direct = fuser.transform(scores, ndx=key)
    xr.testing.assert_allclose(cheat.compute(), direct.compute())
    assert int(cheat.score_mask.sum()) == len(brute["Xt"]) + len(brute["Xn"])


def test_errors_for_bad_scores() -> None:
    key = make_key(["m1", "m2"], ["s1", "s2"], [[1, -1], [-1, 0]])
    bad = make_scores(["m1", "m2"], ["s1", "s2"], [[np.inf, 1.0], [0.0, np.nan]])
    with pytest.raises(
        ScoreError,
        match=r"^system-1: 1 trial has a non-finite score, e\.g\. "
        r"\(m1, s1\)$",
    ):  # NaN outside the key's trials is not an error
        LinearFuser().fit([bad], key)
    fine = make_scores(["m1", "m2"], ["s1", "s2"], [[2.0, 1.0], [0.0, np.nan]])
    fuser = LinearFuser(l2=0.1).fit([fine], key)  # separable: the penalty keeps it finite
    with pytest.raises(ScoreError):
        fuser.transform([bad]).score.compute()
    only_non = make_key(["m1", "m2"], ["s1", "s2"], [[-1, -1], [-1, 0]])
    with pytest.raises(ScoreError, match="0 targets"):
        LinearFuser().fit([fine], only_non)
    with pytest.raises(TrialError, match="expected 1 Scores"):
        fuser.transform([fine, fine])
    with pytest.raises(TrialError, match="not fitted"):
        LinearFuser().transform([fine])


def test_l2_penalty_matches_brute_force() -> None:
    tar, non = (
        np.loadtxt(GAUSS / "fusion_tar.txt")[:300],
        np.loadtxt(GAUSS / "fusion_non.txt")[:900],
    )
    Xt, Xn = features(tar), features(non)
    lam = 0.05

    def penalized(theta):
        return brute_objective(theta, Xt, Xn, 0.5) + 0.5 * lam * np.sum(theta[:3] ** 2)

    fuser = linear_fuse(tar, non, 0.5, l2=lam, gtol=1e-11)
    ref = sciopt.minimize(
        penalized,
        np.r_[fuser.weights_, fuser.offset_] + 0.1,
        method="BFGS",
        options={"gtol": 1e-12},
    )
    np.testing.assert_allclose(np.r_[fuser.weights_, fuser.offset_], ref.x, atol=1e-6)
    assert fuser.objective_ == pytest.approx(penalized(np.r_[fuser.weights_, fuser.offset_]))
    assert fuser.objective_ <= ref.fun + 1e-14


def test_json_roundtrip(tmp_path: Path) -> None:
    key, scores, quality, _ = trial_set(seed=7)
    fuser = LinearFuser(0.25).fit(scores, key, allow_missing=True)
    path = tmp_path / "MODEL.json"
    fuser.save(path)
    d = json.loads(path.read_text())
    for field in ("kind", "train_prior", "weights", "offset", "objective", "iterations", "passes"):
        assert field in d
    assert d["kind"] == "linear_fusion" and d["passes"] == fuser.passes_
    again = load_model(path)
    assert isinstance(again, LinearFuser) and again.train_prior == 0.25
    xr.testing.assert_equal(again.transform(scores).compute(), fuser.transform(scores).compute())
    qf = QualityFuser(0.25).fit(scores, key, quality, allow_missing=True)
    qf.save(path)
    back = QualityFuser.load(path)
    np.testing.assert_array_equal(back.quality_matrix_, qf.quality_matrix_)
    with pytest.warns(QualityBackoffWarning):  # the reloaded model still has its first stage
        xr.testing.assert_equal(
            back.transform(scores, quality).compute(), qf.transform(scores, quality).compute()
        )
    with pytest.raises(TrialError, match="kind"):
        QualityFuser.from_dict(fuser.to_dict())


# --------------------------------------------------------------------------------------------
# quality-measure fusion
# --------------------------------------------------------------------------------------------


def test_quality_objective_with_W_zero_equals_linear() -> None:
    key, scores, quality, _ = trial_set(seed=8)
    lin = FusionObjective(fusion_data(scores, key), 0.4)
    qual = FusionObjective(fusion_data(scores, key, quality), 0.4)
    theta = np.array([0.8, 0.1, -0.5])
    a, b = lin.evaluate(theta, "fgH"), qual.evaluate(np.r_[theta, np.zeros(5)], "fgH")
    assert qual.n_params == 8
    assert a.f == pytest.approx(b.f, rel=1e-14)
    np.testing.assert_allclose(a.g, b.g[:3], rtol=1e-13)
    np.testing.assert_allclose(a.H, b.H[:3, :3], rtol=1e-13)
    fuser = LinearFuser(0.4).fit(scores, key, allow_missing=True)
    qf = QualityFuser(0.4)
    qf.weights_, qf.offset_, qf.quality_matrix_ = fuser.weights_, fuser.offset_, np.zeros((3, 3))
    qf.linear_ = fuser
    with pytest.warns(QualityBackoffWarning, match="have no quality"):
        out = qf.transform(scores, quality).compute()
    xr.testing.assert_allclose(out, fuser.transform(scores).compute())


@pytest.mark.parametrize("method", ["exact", "cg"])
def test_quality_fusion_equals_scipy(method: str) -> None:
    key, scores, quality, brute = trial_set(seed=9)
    lin = scipy_optimum(brute["Xt"], brute["Xn"], 0.5, np.array([0.5, 0.5, 0.0]))
    best = scipy_optimum(brute["Qt"], brute["Qn"], 0.5, np.r_[lin, np.zeros(5)])
    qf = QualityFuser(0.5, method=method, gtol=1e-10, split_every=2, persist=True)
    with CountComputes() as counter:
        qf.fit(scores, key, quality, allow_missing=True)
    theta = np.r_[qf.weights_, qf.offset_, qf.quality_matrix_[quality_pairs(3)]]
    np.testing.assert_allclose(theta, best, rtol=0, atol=1e-8)
    np.testing.assert_allclose(np.r_[qf.linear_.weights_, qf.linear_.offset_], lin, atol=1e-8)
    assert qf.passes_ == counter.n and qf.linear_passes_ == qf.linear_.passes_
    assert qf.converged_ and qf.objective_ < qf.linear_.objective_
    assert qf.objective_ == pytest.approx(
        brute_objective(theta, brute["Qt"], brute["Qn"], 0.5), rel=1e-12
    )
    W = qf.quality_matrix_
    assert W.shape == (3, 3) and (W == W.T).all() and W[2, 2] == 0


def test_trials_without_quality_fall_back_to_linear() -> None:
    key, scores, quality, brute = trial_set(seed=10)
    qf = QualityFuser(0.5).fit(scores, key, quality, allow_missing=True)
    S, qm, qs = brute["S"], brute["qm"], brute["qs"]
    no_quality = (qm == 0).all(1)[:, None] | (qs == 0).all(1)[None, :]
    n_backoff = int((brute["scored"] & (key.trial_mask.values != 0) & no_quality).sum())
    with pytest.warns(QualityBackoffWarning, match=f"^{n_backoff} trials have no quality"):
        out = qf.transform(scores, quality, ndx=key).compute()
    W = qf.quality_matrix_
    expected = qf.offset_ + S @ qf.weights_ + qm @ W @ qs.T
    first_stage = qf.linear_.offset_ + S @ qf.linear_.weights_  # the toolkit's back-off
    mask = out.score_mask.values
    assert (mask & no_quality).sum() > 10
    np.testing.assert_allclose(
        out.score.values[mask & ~no_quality], expected[mask & ~no_quality], rtol=1e-12
    )
    np.testing.assert_allclose(
        out.score.values[mask & no_quality], first_stage[mask & no_quality], rtol=1e-13
    )


def test_quality_fusion_without_any_quality_is_the_linear_fusion() -> None:
    key, scores, quality, _ = trial_set(seed=12)
    no_quality = quality.copy()
    no_quality["segment_quality"] = xr.full_like(quality.segment_quality, np.nan)
    with pytest.warns(FitWarning, match="the segment side has none"):  # and says so
        qf = QualityFuser(0.5, gtol=1e-10).fit(scores, key, no_quality, allow_missing=True)
    lin = LinearFuser(0.5, gtol=1e-10).fit(scores, key, allow_missing=True)
    np.testing.assert_allclose(qf.quality_matrix_, 0.0, atol=1e-12)  # nothing to learn from
    np.testing.assert_allclose(qf.weights_, lin.weights_, atol=1e-8)
    assert qf.offset_ == pytest.approx(lin.offset_, abs=1e-8)


def test_quality_starting_from_given_linear_and_bad_tables() -> None:
    key, scores, quality, _ = trial_set(seed=11)
    lin = LinearFuser(0.5).fit(scores, key, allow_missing=True)
    qf = QualityFuser(0.5).fit(scores, key, quality, linear=lin, allow_missing=True)
    assert qf.linear_passes_ == 0 and qf.iterations_ >= 1
    assert qf.passes_ == qf.result_.passes
    models, segments = key.model.values, key.segment.values
    one_measure = make_quality(
        quality_table(models, np.ones((len(models), 1))),
        quality_table(segments, np.ones((len(segments), 2))),
    )
    with pytest.raises(TrialError, match="same number"):
        QualityFuser().fit(scores, key, one_measure)
    with pytest.raises(TrialError, match="both"):
        QualityFuser().fit(
            scores,
            key,
            make_quality(
                segment_quality=quality.segment_quality.rename(
                    segment="id", segment_measure="measure"
                ).rename("quality")
            ),
        )
    with pytest.raises(TrialError, match="trial objects"):
        QualityFuser().fit_arrays(np.ones(3), np.zeros(3))


def test_quality_matrix_layout() -> None:
    W = quality_matrix(np.arange(1.0, 6.0), 2)
    np.testing.assert_array_equal(W, [[1, 2, 3], [2, 4, 5], [3, 5, 0]])


def test_array_data_validation() -> None:
    with pytest.raises(TrialError, match="same number K"):
        fusion_data_from_arrays(np.ones((3, 2)), np.ones((3, 3)))
    with dask.config.set(scheduler="sync"):
        f = linear_fuse(np.array([[1.0], [2.0]]), np.array([[0.0], [1.5]]))
    with pytest.raises(TrialError, match="shape"):
        f.transform_arrays(np.ones((2, 2)))
    with pytest.raises(ScoreError):
        f.transform_arrays(np.array([np.nan]))


@pytest.mark.parametrize("mode", ["f", "fg", "fgd", "fgH", "hv"])
def test_class_sums_equal_the_textbook_logistic_formulas_at_extreme_scores(mode):
    """One exp per trial (kernel._logistic_terms) gives what log/exp of mpmath-free float64
    formulas give, at |z| up to 700 where a naive 1 - expit would cancel to 0."""
    from bosaris_dask.objectives.kernel import _class_sums

    z = np.array([-700.0, -40.0, -3.0, -1e-9, 0.0, 2.5, 36.0, 700.0])
    X = np.stack([z, np.ones_like(z)])  # theta = (1, 0): x'theta = z
    theta, v = np.array([1.0, 0.0]), np.array([0.5, -2.0])
    for y in (1.0, -1.0):
        yz = y * z
        loss = sum(math.log1p(math.exp(-abs(t))) + max(-t, 0.0) for t in yz)
        err = np.array([1 / (1 + math.exp(t)) if t > -700 else 1.0 for t in yz])
        h = np.array([math.exp(-abs(t)) / (1 + math.exp(-abs(t))) ** 2 for t in yz])
        want = {
            "f": [loss],
            "fg": [loss, *(X @ err * -y)],
            "fgd": [loss, *(X @ err * -y), *((X * X) @ h)],
            "fgH": [loss, *(X @ err * -y), *((X * h) @ X.T)[np.triu_indices(2)]],
            "hv": [*(X @ (h * (v @ X)))],
        }[mode]
        got = np.concatenate(_class_sums(X, y, theta, 0.0, mode, v))
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-300)


def _outlying_systems():
    """Three systems (the audit's case): two Gaussian, one rounded to 0.1 with a few far
    outlying training scores (+-1e4, +-800) that put a steep, narrow valley along its weight."""
    rng = np.random.default_rng(42)
    labels = rng.integers(0, 20, 60)[:, None] == rng.integers(0, 20, 80)[None, :]
    a = np.where(labels, rng.normal(3, 1.5, labels.shape), rng.normal(-3, 1.5, labels.shape))
    b = np.where(labels, rng.normal(1, 2, labels.shape), rng.normal(-0.5, 2, labels.shape))
    c = np.where(labels, rng.normal(2, 1, labels.shape), rng.normal(0, 1, labels.shape))
    c = np.round(c, 1)
    c[0, :5] = [800.0, -800.0, 50.0, -50.0, 1e4]
    for (i, j), v in zip(np.argwhere(labels)[:3], [-700.0, 900.0, 35.0], strict=True):
        c[i, j] = v
    S = np.stack([a.ravel(), 2 * b.ravel() + 1, c.ravel()], axis=-1)
    return S[labels.ravel()], S[~labels.ravel()]


@pytest.mark.parametrize("method", ["exact", "cg"])
def test_far_outlying_training_scores_do_not_stall_the_fit(method: str) -> None:
    # with the trust region scaled once at the start, the steps zigzagged across the valley at
    # a collapsed radius: objective 0.318 (exact) or 0.468 (cg) at max_iter, 4.4x the minimum
    tar, non = _outlying_systems()
    best = scipy_optimum(features(tar), features(non), 0.5, np.r_[np.full(3, 1 / 3), 0.0])
    fuser = LinearFuser(0.5, method=method).fit_arrays(tar, non)
    assert fuser.converged_ and fuser.fit_warnings_ == []
    minimum = brute_objective(best, features(tar), features(non), 0.5)
    assert fuser.objective_ == pytest.approx(minimum, rel=1e-12)
    np.testing.assert_allclose(np.r_[fuser.weights_, fuser.offset_], best, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("offset", [100.0, 500.0])
def test_scores_far_from_zero_are_fitted_from_zero_llrs(offset: float) -> None:
    # from weight 1 and offset 0 every trial was saturated (a nil Hessian): the fit stopped at
    # its starting point ("trust region collapsed", objective 70.7 at offset 100) or max_iter
    rng = np.random.default_rng(3)
    tar, non = rng.normal(offset + 2, 1.0, (300, 1)), rng.normal(offset - 2, 1.0, (3000, 1))
    best = scipy_optimum(features(tar - offset), features(non - offset), 0.5, np.zeros(2))
    best[1] -= best[0] * offset  # the same optimum, for scores not shifted
    fuser = LinearFuser(0.5).fit_arrays(tar, non)
    assert fuser.converged_ and fuser.fit_warnings_ == [] and fuser.iterations_ <= 12
    assert fuser.passes_ == fuser.iterations_ + 2  # x0, then zero LLRs (f = 1), then the steps
    np.testing.assert_allclose(np.r_[fuser.weights_, fuser.offset_], best, rtol=1e-7)


def test_an_infinite_quality_measure_is_named_by_its_id():
    # was "model quality measures contain infinite values", naming no id
    rng = np.random.default_rng(13)
    models, segs = [f"m{i}" for i in range(6)], [f"s{j}" for j in range(8)]
    mask = np.where(rng.random((6, 8)) < 0.4, 1, -1)
    key = make_key(models, segs, mask)
    scores = make_scores(models, segs, rng.normal(size=(6, 8)) + 2 * (mask == 1))
    qm = rng.normal(size=(6, 2))
    qm[2, 1] = np.inf
    quality = make_quality(quality_table(models, qm), quality_table(segs, rng.normal(size=(8, 2))))
    with pytest.raises(ScoreError, match="model 'm2' has inf as measure 2"):
        QualityFuser().fit(scores, key, quality)
