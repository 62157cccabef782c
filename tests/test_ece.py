"""The ECE plot's numbers (raw, PAV-calibrated and neutral LLRs) equal the definition computed
trial by trial, under random chunkings and tiny kernel blocks; ECE(0) is Cllr (bit for bit) and
the PAV one minCllr; no extra pass; the plot draws those numbers; ``plot ece`` runs."""

from __future__ import annotations

import json
import math
from unittest import mock

import dask
import matplotlib
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import logit

from bosaris_dask import metrics
from bosaris_dask.cli import main
from bosaris_dask.costs import OperatingPoint
from bosaris_dask.ece import DEFAULT_ECE_PLO, ece_arrays, neutral_ece
from bosaris_dask.errors import OptionError, PlotError
from bosaris_dask.llr_base import thresholds_from_natural
from bosaris_dask.passes import pass1_bins
from bosaris_dask.plots import ece_plot
from bosaris_dask.report import to_json_dict
from bosaris_dask.trials import make_key, make_scores

from . import reference as ref

matplotlib.use("Agg")
PLO = np.array([-7.0, -2.5, -0.3, 0.0, 1.0, 4.5])


def _check(ds, tar, non, plo=PLO):
    pav_t, pav_n = ref.pav_llr_of(tar, non)
    for j, a in enumerate(plo):
        assert float(ds.ece[0, j]) == pytest.approx(ref.ece(tar, non, a), rel=1e-12, abs=1e-15)
        assert float(ds.ece_pav[0, j]) == pytest.approx(ref.ece(pav_t, pav_n, a), rel=1e-12,
                                                       abs=1e-15)  # fmt: skip
        p = 1 / (1 + math.exp(-a))
        entropy = -(p * math.log2(p) + (1 - p) * math.log2(1 - p))
        assert float(ds.ece_neutral[j]) == pytest.approx(entropy, rel=1e-13)
    at0 = int(np.flatnonzero(ds.ece_plo.values == 0.0)[0])
    assert float(ds.ece[0, at0]) == float(ds.cllr[0])  # the same terms and exact sums
    assert float(ds.ece_pav[0, at0]) == pytest.approx(float(ds.min_cllr[0]), rel=1e-12)
    assert float(ds.ece_neutral[at0]) == 1.0


def _chunks(draw, n):
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=min(4, n - 1)))) if n > 1 else []
    edges = [0, *cuts, n]
    return tuple(b - a for a, b in zip(edges[:-1], edges[1:], strict=True))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1), shape=st.tuples(st.integers(2, 8), st.integers(2, 14)),
    ties=st.sampled_from([1, 10, None]), dtype=st.sampled_from([np.float32, np.float64]),
    scale=st.sampled_from([0.3, 3.0, 40.0]), coarse=st.sampled_from([3, 20]),
    blocks=st.sampled_from([(8, 8), (8, 24), (1 << 16, 1 << 22)]), data=st.data(),
)  # fmt: skip
def test_engine_ece_equals_the_definition_under_any_chunking(
    seed, shape, ties, dtype, scale, coarse, blocks, data
):
    rng = np.random.default_rng(seed)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=shape, p=[0.6, 0.4])
    mask[0, 0], mask[-1, -1] = 1, -1
    raw = (rng.normal(size=shape) + mask) * scale
    values = (np.round(raw * ties) / ties if ties else raw).astype(dtype)
    chunks = (_chunks(data.draw, shape[0]), _chunks(data.draw, shape[1]))
    key = make_key(range(shape[0]), range(shape[1]), mask, chunks=chunks)
    scores = make_scores(range(shape[0]), range(shape[1]), values, chunks=chunks)
    config = {"bosaris_dask.block": blocks[0], "bosaris_dask.slice": blocks[1],
              "bosaris_dask.raw-limit": data.draw(st.sampled_from([0, 1 << 22])),
              "bosaris_dask.dense-budget": 16}  # fmt: skip
    with (
        mock.patch.object(pass1_bins, "default_coarse_bits", lambda n: coarse),
        dask.config.set(config),
    ):
        ds = metrics.evaluate(scores, key, priors=[0.5], ece_plo=PLO,
                              split_every=data.draw(st.integers(2, 4)))  # fmt: skip
    tar, non = values[mask == 1].astype(np.float64), values[mask == -1].astype(np.float64)
    _check(ds, tar, non)
    arrays = metrics.evaluate_arrays(values[mask == 1], values[mask == -1], priors=[0.5],
                                     ece_plo=PLO)  # fmt: skip
    np.testing.assert_array_equal(arrays.ece.values, ds.ece.values)  # bit for bit


def test_hand_worked():
    tar, non = [2.0, 3.0], [0.0, 1.0, 2.5]
    out = ece_arrays(tar, non, [0.0, math.log(3.0)])
    # PAV blocks {0, 1}: 0/2 (-inf), {2, 2.5}: 1/1, {3}: 1/0 (+inf); T/N = 2/3: the mixed
    # block's LLR is log(3/2); at prior log-odds a its target costs log2(1 + 2/3 e^-a) and its
    # non-target log2(1 + 3/2 e^a)
    for j, a in enumerate([0.0, math.log(3.0)]):
        p = 1 / (1 + math.exp(-a))
        want = (p * math.log2(1 + 2 / 3 * math.exp(-a)) / 2
                + (1 - p) * math.log2(1 + 3 / 2 * math.exp(a)) / 3)  # fmt: skip
        assert out["ece_pav"][j] == pytest.approx(want, rel=1e-14)
    assert out["ece"][0] == metrics.cllr(tar, non)
    assert neutral_ece([0.0])[0] == 1.0


def test_no_extra_pass_and_nothing_else_changes():
    rng = np.random.default_rng(3)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(50, 60), p=[0.8, 0.2])
    values = rng.normal(size=mask.shape) + 2 * (mask == 1)
    key = make_key(range(50), range(60), mask, chunks=(20, 25))
    scores = make_scores(range(50), range(60), values, chunks=(20, 25))
    plain = metrics.evaluate(scores, key, priors=[0.01])
    with_ece = metrics.evaluate(scores, key, priors=[0.01], ece_plo=PLO)
    assert with_ece.attrs["passes"] == plain.attrs["passes"]
    for name in ("eer", "min_dcf", "act_dcf", "cllr", "min_cllr"):
        np.testing.assert_array_equal(with_ece[name].values, plain[name].values)
    _check(with_ece, values[mask == 1], values[mask == -1])
    assert with_ece.ece.attrs["units"] == "bits" and with_ece.ece_plo.attrs["units"]
    with pytest.raises(OptionError, match=r"^ECE grid prior log-odds inf is not finite$"):
        metrics.evaluate(scores, key, ece_plo=[0.0, np.inf])


def test_plot_draws_the_computed_values_and_log10_axis():
    rng = np.random.default_rng(1)
    tar, non = rng.normal(2.0, 1.0, 200), rng.normal(-1.0, 1.0, 800)
    ds = metrics.evaluate_arrays(tar, non, name="s", ece_plo=PLO)
    ax = ece_plot(ds)
    lines = {line.get_gid(): line for line in ax.get_lines()}
    np.testing.assert_array_equal(lines["ece/raw/s"].get_xdata(), PLO)
    np.testing.assert_array_equal(lines["ece/raw/s"].get_ydata(), ds.ece.values[0])
    np.testing.assert_array_equal(lines["ece/pav/s"].get_ydata(), ds.ece_pav.values[0])
    np.testing.assert_array_equal(lines["ece/neutral"].get_ydata(), ds.ece_neutral.values)
    ax10 = ece_plot(thresholds_from_natural(ds, "10"))
    x10 = {line.get_gid(): line for line in ax10.get_lines()}["ece/raw/s"].get_xdata()
    np.testing.assert_allclose(x10, PLO / math.log(10), rtol=1e-15)
    assert "log_{10}" in ax10.get_xlabel()
    with pytest.raises(PlotError, match="no ECE"):
        ece_plot(metrics.evaluate_arrays(tar, non))


def test_cli_plot_ece(tmp_path):
    rng = np.random.default_rng(2)
    lines = [f"m{i} t{i} {float(s)!r} target" for i, s in enumerate(rng.normal(1, 1, 50))]
    lines += [f"m{i} n{i} {float(s)!r} nontarget" for i, s in enumerate(rng.normal(-1, 1, 200))]
    path = tmp_path / "scores.txt"
    path.write_text("\n".join(lines) + "\n")
    for base in ("e", "10"):
        out = tmp_path / f"ece-{base}.png"
        assert main(["plot", "ece", "--format", "wespeaker", "--scores", str(path),
                     "--llr-base", base, "--out", str(out), "-q"]) == 0  # fmt: skip
        assert out.read_bytes()[:4] == b"\x89PNG"


def test_json_carries_the_datasets_ece_curves():
    rng = np.random.default_rng(4)
    tar, non = rng.normal(1.5, 1.0, 60), rng.normal(-1.0, 1.0, 240)
    ds = metrics.evaluate_arrays(tar, non, name="s", ece_plo=PLO)
    entry = to_json_dict(ds)["systems"][0]
    assert entry["ece"]["plo"] == PLO.tolist()
    assert entry["ece"]["raw"] == ds.ece.values[0].tolist()
    assert entry["ece"]["pav"] == ds.ece_pav.values[0].tolist()
    assert entry["ece"]["neutral"] == ds.ece_neutral.values.tolist()
    at0 = PLO.tolist().index(0.0)
    assert entry["ece"]["raw"][at0] == entry["cllr"]  # bit for bit
    assert entry["ece"]["raw"][0] == pytest.approx(ref.ece(tar, non, PLO[0]), rel=1e-12)
    assert "ece" not in to_json_dict(metrics.evaluate_arrays(tar, non))["systems"][0]


def _text_scores(tmp_path):
    rng = np.random.default_rng(5)
    lines = [f"m{i} t{i} {float(s)!r} target" for i, s in enumerate(rng.normal(1, 1, 40))]
    lines += [f"m{i} n{i} {float(s)!r} nontarget" for i, s in enumerate(rng.normal(-1, 1, 160))]
    path = tmp_path / "scores.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_evaluate_ece_writes_the_default_grid(tmp_path):
    path, out = _text_scores(tmp_path), tmp_path / "r.json"
    argv = ["evaluate", "--format", "wespeaker", "--scores", str(path), "-q", "--json", str(out)]
    assert main([*argv, "--ece"]) == 0
    entry = json.loads(out.read_text())["systems"][0]
    # the default grid and the default operating points' prior log-odds (the printed table's)
    # (each the largest float at or below logit(p): within a unit in the last place of scipy's)
    points = np.array([OperatingPoint.from_prior(p).plo for p in metrics.DEFAULT_PRIORS])
    np.testing.assert_allclose(points, logit(metrics.DEFAULT_PRIORS), rtol=3e-16, atol=0)
    grid = np.unique(np.concatenate([DEFAULT_ECE_PLO, points]))
    assert entry["ece"]["plo"] == grid.tolist() and len(grid) == 44
    assert entry["ece"]["raw"][grid.tolist().index(0.0)] == entry["cllr"]
    assert len(entry["ece"]["pav"]) == len(entry["ece"]["neutral"]) == 44
    assert main(argv) == 0
    assert "ece" not in json.loads(out.read_text())["systems"][0]


def test_cli_ece_grid_and_json_are_in_the_llrs_base(tmp_path):
    # --llr-base 10 reads log10 LRs and draws the ECE against log10 prior odds: --ece-plo and
    # the JSON's grid are in that base too (--ece-plo 1 is prior odds 10, not e)
    path, out = _text_scores(tmp_path), tmp_path / "r.json"
    argv = ["evaluate", "--format", "wespeaker", "--scores", str(path), "-q", "--json", str(out),
            "--prior", "0.5", "--llr-base", "10", "--ece-plo=-1:1:3"]  # fmt: skip
    assert main(argv) == 0
    entry = json.loads(out.read_text())["systems"][0]
    assert entry["ece"]["plo"] == pytest.approx([-1.0, 0.0, 1.0], rel=1e-15)
    text = np.loadtxt(path, usecols=2, dtype=np.float64)
    labels = np.loadtxt(path, usecols=3, dtype=str)
    natural = text * math.log(10)
    tar, non = natural[labels == "target"], natural[labels == "nontarget"]
    expected = [ref.ece(tar, non, a * math.log(10)) for a in (-1.0, 0.0, 1.0)]
    np.testing.assert_allclose(entry["ece"]["raw"], expected, rtol=1e-12)


def test_ece_plot_of_one_point_marks_it():
    # one grid point drew a line of one point (nothing) in a window of zero width
    rng = np.random.default_rng(6)
    ds = metrics.evaluate_arrays(rng.normal(1, 1, 50), rng.normal(-1, 1, 200), name="s",
                                 ece_plo=[0.0])  # fmt: skip
    ax = ece_plot(ds)
    lines = {line.get_gid(): line for line in ax.get_lines()}
    assert lines["ece/raw/s"].get_marker() == "o" and lines["ece/neutral"].get_marker() == "o"
    assert lines["ece/raw/s"].get_ydata().tolist() == [float(ds.cllr.item())]
    assert ax.get_xlim() == (-1.0, 1.0)
    assert (
        ece_plot(metrics.evaluate_arrays([1.0, 2.0], [0.0], ece_plo=PLO))
        .get_lines()[0]
        .get_marker()
        == "None"
    )
