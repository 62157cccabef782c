"""Target proportions and pairwise posterior KL divergences after fusion (issue 17 item 8),
against a brute-force loop over trials that shares no code with the package."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bosaris_dask.errors import TrialError
from bosaris_dask.fusion.diagnostics import posterior_report
from bosaris_dask.trials import make_ndx, make_scores


def _brute(llrs, prior):
    """Per-trial loop with math only: mean posterior and mean Bernoulli KL(i||j)."""
    plo = math.log(prior / (1 - prior))
    post = [[1 / (1 + math.exp(-(v + plo))) for v in system] for system in llrs]
    k, n = len(llrs), len(llrs[0])
    prop = [sum(p) / n for p in post]
    kl = [[0.0] * k for _ in range(k)]
    for i in range(k):
        for j in range(k):
            total = 0.0
            for a, b in zip(post[i], post[j], strict=True):
                total += a * math.log(a / b) + (1 - a) * math.log((1 - a) / (1 - b))
            kl[i][j] = total / n
    return prop, kl


def test_against_a_brute_force_loop_with_holes_and_shuffled_ids():
    rng = np.random.default_rng(8)
    shape = (9, 13)
    models, segments = [f"m{i}" for i in range(9)], [f"s{j}" for j in range(13)]
    values = [rng.normal(-2, 2, shape), rng.normal(-1, 3, shape), rng.normal(0, 1, shape)]
    masks = [rng.random(shape) > 0.1 for _ in values]
    systems = [
        make_scores(models, segments, v, m, chunks=(4, 5))
        for v, m in zip(values, masks, strict=True)
    ]
    # the third system with its rows in another order: aligned by id
    perm = rng.permutation(9)
    systems[2] = make_scores([models[i] for i in perm], segments, values[2][perm],
                             masks[2][perm], chunks=(3, 7))  # fmt: skip
    common = np.logical_and.reduce(masks)
    report = posterior_report(systems, prior=0.1, names=["a", "b", "c"], split_every=2)
    prop, kl = _brute([v[common].tolist() for v in values], 0.1)
    assert report.attrs["n_trials"] == int(common.sum())
    np.testing.assert_allclose(report.target_proportion.values, prop, rtol=1e-12)
    np.testing.assert_allclose(report.kl_divergence.values, kl, rtol=1e-10, atol=1e-15)
    assert report.kl_divergence.values[0, 1] != pytest.approx(report.kl_divergence.values[1, 0])


@pytest.mark.parametrize("slab", [1, 7, 1 << 18])
def test_a_chunk_is_summed_slab_by_slab(monkeypatch, slab):
    # a whole chunk's float64 temporaries took 2.8 GB for 1.5e7 trials of four systems
    from bosaris_dask.fusion import diagnostics

    monkeypatch.setattr(diagnostics, "SLAB", slab)
    rng = np.random.default_rng(3)
    values = [rng.normal(0, 3, (6, 11)) for _ in range(3)]
    masks = [rng.random((6, 11)) > 0.2 for _ in values]
    systems = [make_scores([f"m{i}" for i in range(6)], [f"s{j}" for j in range(11)], v, m)
               for v, m in zip(values, masks, strict=True)]  # fmt: skip
    common = np.logical_and.reduce(masks)
    report = posterior_report(systems, prior=0.3)
    prop, kl = _brute([v[common].tolist() for v in values], 0.3)
    assert report.attrs["n_trials"] == int(common.sum())
    np.testing.assert_allclose(report.target_proportion.values, prop, rtol=1e-12)
    np.testing.assert_allclose(report.kl_divergence.values, kl, rtol=1e-10, atol=1e-15)


def test_restricted_to_an_ndx_and_extreme_llrs():
    s = make_scores(["m"], ["s1", "s2", "s3"], [[800.0, -800.0, 1.0]])
    t = make_scores(["m"], ["s1", "s2", "s3"], [[0.0, 0.0, 1.0]])
    ndx = make_ndx(["m"], ["s1", "s2", "s3"], [[True, True, False]])
    r = posterior_report([s, t], ndx=ndx)
    assert r.attrs["n_trials"] == 2
    np.testing.assert_allclose(r.target_proportion.values, [0.5, 0.5])
    # KL(1 || 1/2) = KL(0 || 1/2) = log 2; the other way round, per trial,
    # 1/2 log(1/2 / 1) + 1/2 log(1/2 / e^-800) = 400 - log 2 (finite: log-sigmoids)
    assert float(r.kl_divergence[0, 1]) == pytest.approx(math.log(2), rel=1e-12)
    assert float(r.kl_divergence[1, 0]) == pytest.approx(400 - math.log(2), rel=1e-12)


def test_errors():
    s = make_scores(["m"], ["s"], [[1.0]], [[False]])
    with pytest.raises(TrialError, match="no trial has a score in every system"):
        posterior_report([s])
    with pytest.raises(TrialError, match="2 names for 1 systems"):
        posterior_report([s], names=["a", "b"])


def test_one_pass():
    from dask.callbacks import Callback

    class Count(Callback):
        n = 0

        def _start(self, dsk):
            Count.n += 1

    rng = np.random.default_rng(3)
    systems = [make_scores([f"m{i}" for i in range(6)], [f"s{j}" for j in range(8)],
                           rng.normal(size=(6, 8)), chunks=(2, 3)) for _ in range(3)]  # fmt: skip
    with Count():
        posterior_report(systems, prior=0.01)
    assert Count.n == 1


def test_the_printed_table_keeps_wide_values_apart():
    import xarray as xr

    from bosaris_dask.fusion.diagnostics import format_posterior_report

    report = xr.Dataset(
        {"target_proportion": ("system", [0.1, 0.2]),
         "kl_divergence": (("system", "other"), [[0.0, 20028.0], [19072.0, 1.5e-7]])},
        coords={"system": ["a", "evalC"], "other": ["a", "evalC"]},
        attrs={"n_trials": 10, "prior": 0.5},
    )  # fmt: skip
    rows = format_posterior_report(report).splitlines()[-2:]
    # each value is its own whitespace-separated field (was "2.003e+041.907e+04...")
    assert [row.split() for row in rows] == [["a", "0", "2.003e+04"],
                                             ["evalC", "1.907e+04", "1.5e-07"]]  # fmt: skip
