"""A quality fusion does not depend on the units of its measures.

The model ``a + b.s + [q_m, 1]' W [q_s, 1]`` is the same model under any affine change of the
measures (``W`` absorbs it), so a duration in minutes, in seconds, in 16 kHz samples or with an
offset of 1000 must give the same fused scores and the same objective. Measures far from unit
scale were fitted as they were: products of ``1e12`` made the solver's relative stopping test
pass short of the minimum (``converged`` with no warning, an objective 3.7% high, LLRs 2 nats
off), and an offset of 1000 was read as parameters the data do not determine (audit).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import optimize as sciopt

from bosaris_dask.fusion import QualityFuser
from bosaris_dask.fusion.fit_checks import FitWarning
from bosaris_dask.objectives import quality_pairs
from bosaris_dask.objectives import quality_scaling as qs_mod
from bosaris_dask.objectives.quality_scaling import penalty_block, unstandardize
from bosaris_dask.trials import make_key, make_quality, make_scores, quality_table
from tests.test_fusion import brute_objective, features


def _problem(seed: int = 1, n_models: int = 20, n_segments: int = 30):
    """Two systems whose separation grows with both sides' quality; measure 1 a duration
    (minutes, 1-3)."""
    rng = np.random.default_rng(seed)
    models = [f"m{i:02d}" for i in range(n_models)]
    segments = [f"s{j:02d}" for j in range(n_segments)]
    tar = rng.integers(0, 6, n_models)[:, None] == rng.integers(0, 6, n_segments)[None, :]
    qm = np.c_[rng.normal(0, 1, n_models), rng.uniform(1, 3, n_models)]
    qs = np.c_[rng.normal(0, 1, n_segments), rng.uniform(1, 3, n_segments)]
    sep = np.clip(1 + 0.6 * (qm[:, :1] + qs[:, 0]) + 0.3 * qm[:, 1:] * qs[:, 1], 0.2, None)
    s1 = np.where(tar, sep, 0) + rng.normal(0, 1, tar.shape)
    s2 = 0.5 * np.where(tar, sep, 0) + rng.normal(0, 1, tar.shape) + 0.3
    key = make_key(models, segments, np.where(tar, 1, -1))
    systems = [make_scores(models, segments, s) for s in (s1, s2)]
    return key, systems, (models, segments, qm, qs, s1, s2, tar)


def _quality(raw, scale: float, shift: float):
    models, segments, qm, qs = raw[:4]

    def units(q):
        return np.c_[q[:, 0], q[:, 1] * scale + shift]

    return make_quality(
        quality_table(models, units(qm), measures=["snr", "dur"]),
        quality_table(segments, units(qs), measures=["snr", "dur"]),
    )


def _fit(systems, key, quality, **kwargs) -> QualityFuser:
    with warnings.catch_warnings():
        warnings.simplefilter("error", FitWarning)  # a fit note here is a false diagnosis
        return QualityFuser(**kwargs).fit(systems, key, quality)


@pytest.fixture(scope="module")
def reference():
    key, systems, raw = _problem()
    quality = _quality(raw, 1.0, 0.0)
    fitted = _fit(systems, key, quality, gtol=1e-10)
    return key, systems, raw, fitted, fitted.transform(systems, quality).score.values


@pytest.mark.parametrize(
    ("scale", "shift"),
    [(60.0, 0.0), (60 * 16000.0, 0.0), (1.0, 100.0), (1.0, 1000.0), (1e5, 1e7), (1e-6, 0.0)],
    ids=["seconds", "samples", "plus-100", "plus-1000", "far", "tiny"],
)
def test_the_fit_does_not_depend_on_the_units_of_a_measure(reference, scale, shift):
    key, systems, raw, ref, ref_out = reference
    quality = _quality(raw, scale, shift)
    fitted = _fit(systems, key, quality, gtol=1e-10)
    assert fitted.converged_
    assert fitted.objective_ == pytest.approx(ref.objective_, rel=1e-10)
    out = fitted.transform(systems, quality).score.values
    np.testing.assert_allclose(out, ref_out, rtol=0, atol=1e-7)
    # the objective the model reports is that of its parameters in the measures' own units,
    # straight from the definition (no package code)
    models, segments, qm, qs, s1, s2, tar = raw

    def dur(q):
        return np.c_[q[:, 0], q[:, 1] * scale + shift, np.ones(len(q))]

    qm_t = np.broadcast_to(dur(qm)[:, None, :], (*tar.shape, 3))
    qs_t = np.broadcast_to(dur(qs)[None, :, :], (*tar.shape, 3))
    S = np.stack([s1, s2], axis=-1)
    X = {c: features(S[sel], qm_t[sel], qs_t[sel]) for c, sel in (("t", tar), ("n", ~tar))}
    W = fitted.quality_matrix_
    theta = np.r_[fitted.weights_, fitted.offset_, W[quality_pairs(3)]]
    assert W[2, 2] == 0 and (W == W.T).all()
    assert brute_objective(theta, X["t"], X["n"], 0.5) == pytest.approx(ref.objective_, rel=1e-9)


def test_an_l2_penalty_stays_the_penalty_on_the_original_parameters(reference, monkeypatch):
    """Fitted in standardized measures (forced here on measures that need none), the penalty
    ``l2/2 ||theta||^2`` (offset apart) is still that of ``W``'s own entries: the same optimum
    as without standardizing, and as scipy's on the brute-force penalized objective."""
    key, systems, raw = reference[:3]
    quality = _quality(raw, 1.0, 0.0)
    lam = 0.02
    plain = _fit(systems, key, quality, l2=lam, gtol=1e-11)
    monkeypatch.setattr(qs_mod, "QUALITY_OFFSET_RATIO", 0.1)  # every measure "far from 0"
    forced = _fit(systems, key, quality, l2=lam, gtol=1e-11)

    def params(m):
        return np.r_[m.weights_, m.offset_, m.quality_matrix_[quality_pairs(3)]]

    np.testing.assert_allclose(params(forced), params(plain), rtol=0, atol=1e-7)
    assert forced.objective_ == pytest.approx(plain.objective_, rel=1e-11)
    models, segments, qm, qs, s1, s2, tar = raw
    qm_t = np.broadcast_to(np.c_[qm, np.ones(len(qm))][:, None, :], (*tar.shape, 3))
    qs_t = np.broadcast_to(np.c_[qs, np.ones(len(qs))][None, :, :], (*tar.shape, 3))
    S = np.stack([s1, s2], axis=-1)
    Xt, Xn = (features(S[sel], qm_t[sel], qs_t[sel]) for sel in (tar, ~tar))
    free = np.r_[True, True, False, np.ones(5, bool)]  # everything but the offset

    def penalized(theta):
        return brute_objective(theta, Xt, Xn, 0.5) + 0.5 * lam * np.sum(theta[free] ** 2)

    best = sciopt.minimize(penalized, params(plain) + 0.01, method="BFGS",
                           options={"gtol": 1e-12})  # fmt: skip
    np.testing.assert_allclose(params(forced), best.x, atol=1e-5)
    assert forced.objective_ == pytest.approx(penalized(params(forced)), rel=1e-10)


def test_the_map_back_keeps_every_trial_term_and_the_penalty():
    rng = np.random.default_rng(3)
    for n_measures in (1, 2, 3):
        centers, scales = rng.normal(0, 100, n_measures), rng.uniform(0.01, 100, n_measures)
        n_w = (n_measures + 1) * (n_measures + 2) // 2 - 1
        x = rng.normal(size=2 + 1 + n_w)  # two weights, the offset, W' entries
        back = unstandardize(x, 2, centers, scales)
        np.testing.assert_array_equal(back[:2], x[:2])
        qm, qs = rng.normal(0, 100, (5, n_measures)), rng.normal(0, 100, (5, n_measures))

        def term(offset, w, a, b, n_q=n_measures + 1):
            W = np.zeros((n_q, n_q))
            i, j = quality_pairs(n_q)
            W[i, j] = W[j, i] = w
            return offset + np.einsum("ti,ij,tj->t", np.c_[a, np.ones(5)], W, np.c_[b, np.ones(5)])

        std = term(x[2], x[3:], (qm - centers) / scales, (qs - centers) / scales)
        np.testing.assert_allclose(term(back[2], back[3:], qm, qs), std, rtol=1e-9, atol=1e-9)
        P = penalty_block(centers, scales)
        assert back[3:] @ back[3:] == pytest.approx(x[3:] @ P @ x[3:], rel=1e-9)


def test_dependent_qtrans_rows_are_named_as_the_cause(reference):
    """Three Qtrans rows from two measures leave W undetermined: the note asked whether a
    *system* was constant or a copy of others."""
    key, systems, raw = reference[:3]
    qtrans = np.array([[1.0, 0.5], [0.2, -1.0], [0.3, 0.3]])
    with pytest.warns(FitWarning) as caught:
        QualityFuser(qtrans=qtrans).fit(systems, key, _quality(raw, 1.0, 0.0))
    notes = [str(w.message) for w in caught if "do not determine" in str(w.message)]
    assert notes and "a combination of others, as dependent Qtrans rows make it?" in notes[0]
    assert "Drop the redundant measure (or Qtrans row)" in notes[0]


def test_packed_trials_take_the_measures_after_qtrans(reference, tmp_path):
    """Packed trials computed the standardization from the measures before Qtrans (review): a
    Qtrans to 16 kHz samples fitted as the raw bug did (2 nats off, 'converged'), and a
    non-square one crashed."""
    from tests.test_quality_packed import _grid_inputs, _packed_inputs

    key, systems, raw, ref, ref_out = reference
    models, segments, qm, qs, s1, s2, tar = raw

    def write(name, lines):
        (tmp_path / name).write_text("".join(f"{line}\n" for line in lines))

    pairs = [(i, m, j, seg) for i, m in enumerate(models) for j, seg in enumerate(segments)]
    write("trials", [f"{m} {seg} {'target' if tar[i, j] else 'nontarget'}"
                     for i, m, j, seg in pairs])  # fmt: skip
    for k, s in ((1, s1), (2, s2)):
        write(f"sys{k}", [f"{m} {seg} {float(s[i, j])!r}" for i, m, j, seg in pairs])
    quality = _quality(raw, 1.0, 0.0)
    gkey, gsys = _grid_inputs(tmp_path)
    pkey, psys, cells = _packed_inputs(tmp_path, quality, 64)
    for qtrans in (np.diag([1.0, 960000.0]), np.array([[0.5, 960000.0]])):  # 2 or 1 measures
        grid = QualityFuser(qtrans=qtrans, gtol=1e-10).fit(gsys, gkey, quality)
        packed = QualityFuser(qtrans=qtrans, gtol=1e-10).fit(psys, pkey, cells)
        assert packed.converged_ and packed.objective_ == pytest.approx(grid.objective_, rel=1e-10)
        got = packed.transform(gsys, quality).score.values
        np.testing.assert_allclose(got, grid.transform(gsys, quality).score.values, atol=1e-6)
    square = QualityFuser(qtrans=np.diag([1.0, 960000.0]), gtol=1e-10).fit(psys, pkey, cells)
    np.testing.assert_allclose(square.transform(gsys, quality).score.values, ref_out, atol=1e-7)


def test_one_far_outlier_does_not_squeeze_the_other_measures(reference):
    """A half-range set by one duration of 1e9 among values of 1-3 left the fit 1% short with
    a false 'undetermined' note (review); the scale is now the interquartile range."""
    key, systems, raw = reference[:3]
    models, segments, qm, qs = raw[:4]
    odd = qm.copy()
    odd[4, 1] = 1e9
    quality = make_quality(quality_table(models, odd), quality_table(segments, qs))
    raw_fit = _fit(systems, key, quality, gtol=1e-10)  # the measures as they are: no outlier harm
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(qs_mod, "QUALITY_OFFSET_RATIO", 1e99)  # (standardize nothing)
        mp.setattr(qs_mod, "QUALITY_SPREAD_BOUNDS", (0.0, np.inf))
        unscaled = _fit(systems, key, quality, gtol=1e-10)
    assert raw_fit.converged_ and raw_fit.objective_ == pytest.approx(unscaled.objective_, rel=1e-9)


def test_a_map_back_float64_cannot_hold_falls_back_to_the_measures_own_units(reference):
    """1000 + 1e-6 x snr: mapped back, W's entries carry (1000 / 1e-6)^2 and the saved model
    gave LLRs thousands of nats from the fitted ones with no warning (review); the fit now runs
    in the measures' units, where it says the data cannot pin W down."""
    key, systems, raw = reference[:3]
    models, segments, qm, qs = raw[:4]

    def near(q):
        return np.c_[1000 + 1e-6 * q[:, 0], q[:, 1]]

    quality = make_quality(quality_table(models, near(qm)), quality_table(segments, near(qs)))
    with pytest.warns(FitWarning, match="do not determine"):
        fitted = QualityFuser(gtol=1e-10).fit(systems, key, quality)
    # the saved parameters give the reported objective, straight from the definition
    S = np.stack(raw[4:6], axis=-1)
    tar = raw[6]
    qm_t = np.broadcast_to(np.c_[near(qm), np.ones(len(qm))][:, None, :], (*tar.shape, 3))
    qs_t = np.broadcast_to(np.c_[near(qs), np.ones(len(qs))][None, :, :], (*tar.shape, 3))
    Xt, Xn = (features(S[sel], qm_t[sel], qs_t[sel]) for sel in (tar, ~tar))
    theta = np.r_[fitted.weights_, fitted.offset_, fitted.quality_matrix_[quality_pairs(3)]]
    assert brute_objective(theta, Xt, Xn, 0.5) == pytest.approx(fitted.objective_, rel=1e-9)
