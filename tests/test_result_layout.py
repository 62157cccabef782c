"""The evaluation Dataset's layout: the JSON and the table are a stable interface.

``tests/data/result_layout/*.json`` were written by the code *before* the Dataset got one prior
log-odds dimension (``python tests/test_result_layout.py`` with the old package on the path);
the JSON and the printed table of the same input must stay identical (floats: below). They were
written again when the Bayes thresholds became the exact ones rounded up (``OperatingPoint.plo``):
that changed ``act_threshold`` and the DCF values in their last place (at most 9e-16 relative) and
nothing else, the tables not at all; and again when Cllr became the correctly rounded mean of
its exact sums (``exact_sum.mean``: finite where a sum exceeds float64), which moved ``cllr``
and ``cllr_cal`` of two systems in their last place. The layout itself is
checked against plain numpy: the operating points and the sweep share ``plo``, the per-prior
variables exist once, the ragged curves come back at their exact lengths. The JSON's floats are
compared to 4 ulps, not byte for byte: numpy's ``exp``/``log1p`` under Cllr's exact sums differ
in the last bit between CPUs.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from bosaris_dask import metrics, result_layout
from bosaris_dask.conditions import condition_table
from bosaris_dask.errors import OptionError
from bosaris_dask.report import format_table, to_json_dict
from bosaris_dask.trials import make_key, make_scores
from tests import reference as ref

DATA = Path(__file__).parent / "data"
GOLDEN = DATA / "result_layout"


def _cases():
    """Named evaluations covering: costs, a prior on the sweep, Cprimary, conditions, 2 systems."""
    tar = np.loadtxt(DATA / "gauss1" / "tar.txt")
    non = np.loadtxt(DATA / "gauss1" / "non.txt")
    yield (
        "gauss1",
        lambda: metrics.evaluate_arrays(
            tar, non, priors=[0.5, 0.1, 0.01, 0.001], operating_points=["0.01:10:1"], name="gauss1"
        ),
    )
    rng = np.random.default_rng(7)
    mids, sids = [f"m{i}" for i in range(14)], [f"s{j}" for j in range(17)]
    mask = rng.choice([-1, 0, 1], size=(14, 17), p=[0.55, 0.15, 0.3])
    scores = np.round(rng.normal(size=mask.shape) * 2 + 2 * (mask == 1), 0) / 2
    key = make_key(mids, sids, mask)
    systems = [make_scores(mids, sids, scores), make_scores(mids, sids, 0.7 * scores + 0.1)]
    tables = [
        condition_table("model", mids, {"g": list(rng.choice(["f", "m"], 14))}),
        condition_table("segment", sids, {"d": list(rng.choice(["5", "10"], 17))}),
    ]
    common = {"priors": [0.5, 0.1], "operating_points": ["0.05:2:1"], "names": ["a", "b"],
              "sweep": np.linspace(-4, 4, 9)}  # fmt: skip
    yield "two_systems", lambda: metrics.evaluate(systems, key, **common)
    yield (
        "conditions",
        lambda: metrics.evaluate(
            systems,
            key,
            conditions=tables,
            by=["model.g", "segment.d"],
            cprimary_priors=[0.5, 0.1],
            **common,
        ),
    )


def _render(ds) -> str:
    doc = json.dumps(to_json_dict(ds), indent=2, sort_keys=False)
    return json.dumps({"json": doc, "table": format_table(ds)}, indent=1) + "\n"


CASES = dict(_cases())


def _ulps_apart(a, b, path: str = "") -> list[str]:
    """Where two parsed JSON documents differ: in structure, strings, integers, or floats more
    than 4 ulps apart (of 1 for values below 1: ``cllr_cal`` is a difference of two)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return [f"{path}: keys {list(a)} != {list(b)}"]
        return [d for k in a for d in _ulps_apart(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} != {len(b)} items"]
        pairs = enumerate(zip(a, b, strict=True))
        return [d for i, (x, y) in pairs for d in _ulps_apart(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float) and a != b and not (a != a and b != b):
        near = abs(a - b) <= 4 * math.ulp(max(1.0, abs(a), abs(b)))
        return [] if near else [f"{path}: {a} != {b}"]
    return [] if (type(a), a) == (type(b), b) else [f"{path}: {a!r} != {b!r}"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_json_and_table_match_the_old_layout(name):
    # the JSON's floats to 4 ulps: Cllr's terms are numpy's exp and log1p, whose last bit differs
    # between CPUs (AVX-512 and AVX2 loops): 3 ulps of one system's Cllr on an AVX2 machine
    rendered = json.loads(_render(CASES[name]()))
    golden = json.loads((GOLDEN / f"{name}.json").read_text())
    assert rendered["table"] == golden["table"]
    assert rendered["json"].count("\n") == golden["json"].count("\n")  # the same layout
    assert _ulps_apart(json.loads(rendered["json"]), json.loads(golden["json"])) == []


def _logit(p):
    p = np.asarray(p, dtype=np.float64)
    return np.log(p) - np.log1p(-p)


def test_one_plo_dimension_holds_operating_points_and_sweep_once():
    ds = CASES["two_systems"]()
    assert "prior" not in ds.dims and not [v for v in ds.variables if "sweep_" in str(v)]
    plo = ds.plo.values
    assert np.all(np.diff(plo) > 0)  # sorted, each once
    stated = [0.5, 0.1, 0.05 * 2 / (0.05 * 2 + 0.95)]  # 0.05:2:1 -> effective prior 2/21
    np.testing.assert_allclose(ds.prior.values, 1 / (1 + np.exp(-plo)), rtol=1e-15)
    assert ds.in_sweep.values.sum() == 9 and plo[ds.in_sweep.values].tolist() == list(
        np.linspace(-4, 4, 9)
    )
    assert ds.sizes["plo"] == 9 + 3 - 1  # logit(0.5) = 0 is a sweep point too
    ops = metrics.operating_points(ds)
    np.testing.assert_allclose(ops.prior.values, stated, rtol=1e-15)
    assert ops.prior.values[:2].tolist() == [0.5, 0.1]  # exactly as stated, in stated order
    assert ops.c_miss.values.tolist() == [1.0, 1.0, 2.0] and ops.p_target.values[2] == 0.05
    off = ds.operating_point.values < 0
    assert (ds.c_miss.values[off] == 1).all() and (ds.c_fa.values[off] == 1).all()
    np.testing.assert_array_equal(ds.act_threshold.values, -plo)
    # every per-prior variable is defined everywhere along plo: no NaN to meet by surprise
    for name in result_layout.PER_PLO:
        assert ds[name].dims == ("system", "plo") and not np.isnan(ds[name].values).any(), name


def test_values_along_plo_are_the_brute_force_ones():
    rng = np.random.default_rng(3)
    tar, non = np.round(rng.normal(1.0, 1.5, 60), 1), np.round(rng.normal(-1.0, 1.0, 90), 1)
    ds = metrics.evaluate_arrays(tar, non, priors=[0.3, 0.02], sweep=np.linspace(-5, 5, 21))
    r = ds.isel(system=0)
    norm = np.minimum(1 / (1 + np.exp(-r.plo.values)), 1 / (1 + np.exp(r.plo.values)))
    for j, plo in enumerate(r.plo.values):
        raw, pmiss, pfa = ref.dcf_at(tar, non, plo)
        assert float(r.act_dcf_raw[j]) == pytest.approx(raw, rel=1e-12, abs=1e-300)
        assert float(r.act_dcf[j]) == pytest.approx(raw / norm[j], rel=1e-12, abs=1e-300)
        assert (float(r.act_pmiss[j]), float(r.act_pfa[j])) == (pmiss, pfa)
        best = float(ref.min_dcf(tar, non, plo))
        assert float(r.min_dcf_raw[j]) == pytest.approx(best, rel=1e-12, abs=1e-300)
        t = float(r.min_threshold[j])  # it attains minDCF at every plo, not only at the points
        p = 1 / (1 + np.exp(-plo))
        at_t = p * np.mean(tar < t) + (1 - p) * np.mean(non >= t)
        assert at_t == pytest.approx(best, rel=1e-12, abs=1e-300)
    ops = metrics.operating_points(ds)
    assert ops.prior.values.tolist() == [0.3, 0.02]
    j = int(np.argmin(np.abs(r.plo.values - _logit(0.02))))  # (rounded down: an ulp at most)
    assert r.plo.values[j] == pytest.approx(_logit(0.02), rel=3e-16)
    assert float(ops.min_dcf.isel(system=0).sel(prior=0.02)) == float(r.min_dcf[j])


def test_ragged_curves_come_back_at_their_exact_lengths():
    rng = np.random.default_rng(4)
    a = make_scores(["m"], [f"s{j}" for j in range(40)], rng.normal(size=(1, 40)))
    b = make_scores(["m"], [f"s{j}" for j in range(40)], np.round(rng.normal(size=(1, 40))))
    mask = np.where(np.arange(40) < 15, 1, -1)[None, :]
    key = make_key(["m"], [f"s{j}" for j in range(40)], mask)
    ds = metrics.evaluate([a, b], key, names=["a", "b"])
    lengths = ds.n_vertices.values.tolist()
    assert lengths[0] != lengths[1] and ds.sizes["vertex"] == max(lengths)
    for k, (name, scores) in enumerate((("a", a), ("b", b))):
        values = scores.score.values[0]
        tar, non = values[mask[0] == 1], values[mask[0] == -1]
        misses, fas = ref.hull(tar, non)
        pmiss, pfa = metrics.curve(ds, name, "rocch")
        assert len(pmiss) == lengths[k] and not np.isnan(pmiss).any()
        np.testing.assert_allclose(pmiss, np.array(misses) / len(tar), rtol=1e-15)
        np.testing.assert_allclose(pfa, np.array(fas) / len(non), rtol=1e-15)
        assert np.isnan(ds.rocch_pfa.values[k, lengths[k] :]).all()  # the documented padding
        roc_pmiss, roc_pfa = metrics.curve(ds, name, "roc")
        assert len(roc_pmiss) == int(ds.n_roc_points[k]) and not np.isnan(roc_pfa).any()
    assert "n_vertices" in ds.rocch_pmiss.attrs["long_name"]
    with pytest.raises(OptionError, match="rocch"):
        metrics.curve(ds, "a", "det")


def test_every_variable_and_coordinate_says_its_units_and_meaning():
    ds = CASES["conditions"]()
    for name in [*ds.data_vars, *ds.coords]:  # the labels too (system, condition, model.g)
        attrs = ds[name].attrs
        assert attrs.get("units") and attrs.get("long_name"), name
    assert ds.cllr.attrs["units"] == "bits" and ds.min_dcf.attrs["units"] == "normalized DCF"
    assert ds.condition_eer.attrs == ds.eer.attrs


if __name__ == "__main__":  # regenerate (only from a commit whose output is the reference)
    for name, make in CASES.items():
        (GOLDEN / f"{name}.json").write_text(_render(make()))
    print("wrote", sorted(CASES), "with", sys.modules["bosaris_dask"].__file__)


def test_the_threshold_at_even_odds_is_zero_and_dr30_beyond_one_is_explained():
    # the JSON said "act_threshold": -0.0 at P = 0.5; pmiss30 was 10 ("probability") for three
    # targets with nothing saying why
    from bosaris_dask import metrics

    ds = metrics.evaluate_arrays(np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.0]), priors=[0.5])
    threshold = metrics.operating_points(ds).act_threshold.values
    assert threshold.tolist() == [0.0] and not np.signbit(threshold).any()
    assert (
        ds.pmiss30.item() == 10.0
        and "30 or fewer targets: no DR30 point" in ds.pmiss30.attrs["long_name"]
    )


def test_the_table_shows_small_values_and_thresholds_that_can_be_applied():
    """A system with one non-target above every target printed EER, Cllr and DCFs as 0.000
    (they are 5e-6 .. 2e-4), and a float64 threshold at six digits (-26.9331 for
    -26.93312437980511: applying the printed value rejects the trial it was found at)."""
    rng = np.random.default_rng(3)
    tar = rng.normal(9.0, 1.0, 1_000)
    non = np.r_[rng.normal(-30.0, 1.0, 19_999), 20.0]
    ds = metrics.evaluate_arrays(tar, non, priors=[0.5, 0.01], fmr=[0.001], ece_plo=[0.0])
    table = format_table(ds)
    summary = table.splitlines()[1].split()
    exact = [100 * ds.eer.item(), ds.prbep.item(), ds.cllr.item(), ds.min_cllr.item()]
    assert ds.min_cllr.item() < 5e-4  # below what three decimals show
    for shown, value in zip(summary[3:7], exact, strict=True):
        assert float(shown) == pytest.approx(value, rel=0.2)  # never 0.000
    assert "0.000" not in table.split()
    row = next(line for line in table.splitlines() if line.startswith("system ") and
               line.split()[1] == "0.001")  # fmt: skip
    printed = float(row.split()[2])
    assert printed == ds.fixed_fmr_threshold.item() and printed != float(f"{printed:.6g}")
    assert np.mean(non >= printed) == ds.fixed_fmr_fmr.item() == float(row.split()[3])
    single = metrics.evaluate_arrays(tar.astype(np.float32), non.astype(np.float32), fmr=[0.001])
    row = [line for line in format_table(single).splitlines() if line.startswith("system ")][-1]
    assert np.float32(row.split()[2]) == single.fixed_fmr_threshold.item()  # float32 digits
    assert len(row.split()[2]) <= 11


# what rests on the bins a pass chose, which depend on the set of systems evaluated together
_BIN_DEPENDENT = {"roc_pmiss", "roc_pfa", "roc_threshold", "n_roc_points", "auc_low", "auc_high",
                  "min_threshold"}  # fmt: skip


def _conditions_inputs():
    rng = np.random.default_rng(11)
    mids, sids = [f"m{i}" for i in range(30)], [f"s{j}" for j in range(40)]
    mask = rng.choice([-1, 0, 1], size=(30, 40), p=[0.6, 0.1, 0.3])
    scores = rng.normal(size=mask.shape) * 2 + 3 * (mask == 1)
    key = make_key(mids, sids, mask)
    systems = [make_scores(mids, sids, scores), make_scores(mids, sids, np.round(scores)),
               make_scores(mids, sids, 0.5 * scores - 1)]  # fmt: skip
    table = condition_table("model", mids, {"g": list(rng.choice(["f", "m"], 30))})
    return systems, key, mask, table


def test_results_of_separate_evaluations_concat_to_the_joint_one():
    systems, key, mask, table = _conditions_inputs()
    names = ["a", "b", "c"]
    common = {"priors": [0.5, 0.1], "conditions": [table], "by": ["model.g"], "equalize": True,
              "cprimary_priors": [0.5, 0.1], "fmr": [0.05]}  # fmt: skip
    joint = metrics.evaluate(systems, key, names=names, **common)
    apart = [metrics.evaluate(systems[:2], key, names=names[:2], **common),
             metrics.evaluate(systems[2], key, names=names[2:], **common)]  # fmt: skip
    both = metrics.concat_systems(apart)
    assert both.system.values.tolist() == names and both.attrs == joint.attrs
    assert both.sizes["vertex"] == max(joint.n_vertices.values)
    for name in joint.variables:
        if name.removeprefix("condition_") not in _BIN_DEPENDENT:
            assert both[name].identical(joint[name]), name
    for k, name in enumerate(names):  # each curve at its own length: the brute-force hull
        values = systems[k].score.values
        tar, non = values[mask == 1], values[mask == -1]
        misses, fas = ref.hull(tar, non)
        pmiss, pfa = metrics.curve(both, name, "rocch")
        np.testing.assert_allclose(pmiss, np.array(misses) / len(tar), rtol=1e-15)
        np.testing.assert_allclose(pfa, np.array(fas) / len(non), rtol=1e-15)


def test_concat_systems_refuses_results_that_differ_in_more_than_their_systems():
    systems, key, _, table = _conditions_inputs()
    a = metrics.evaluate(systems[0], key, names=["a"], priors=[0.5, 0.1])
    cases = [
        ([a, a], "distinct; repeated: a"),
        ([a, metrics.evaluate(systems[1], key, names=["b"], priors=[0.5])], "'plo'"),
        ([a, metrics.evaluate(systems[1], key, names=["b"], priors=[0.5, 0.1],
                              conditions=[table], by=["model.g"])], "in some only"),
        ([a, a.assign_coords(system=["b"]).assign_attrs(dr30_errors=10)], "'dr30_errors'"),
        ([a.sel(system="a")], "'system' dimension"),
        ([], "at least one"),
    ]  # fmt: skip
    for results, says in cases:
        with pytest.raises((OptionError, ValueError), match=says):
            metrics.concat_systems(results)
    boot = metrics.evaluate(
        systems[1],
        key,
        names=["b"],
        priors=[0.5, 0.1],
        ci=0.9,
        bootstrap=40,
        resample=["model.g"],
        conditions=[table],
        seed=0,
    )
    with pytest.raises(OptionError, match="bootstrap"):
        metrics.concat_systems([a, boot])


def test_points_that_six_digits_show_alike_are_labelled_with_all_their_digits():
    # priors 0.3 and 0.1 + 0.2 are two points (counted as written), and were two columns
    # labelled P=0.3
    tar, non = np.array([1.0, 2.0, 3.0]), np.array([0.0, -1.0, 1.5])
    header = format_table(metrics.evaluate_arrays(tar, non, priors=[0.3, 0.1 + 0.2])).splitlines()
    assert header[-2].split()[1:] == ["P=0.3", "P=0.30000000000000004"]
    header = format_table(metrics.evaluate_arrays(tar, non, priors=[0.3, 0.01])).splitlines()
    assert header[-2].split()[1:] == ["P=0.3", "P=0.01"]
