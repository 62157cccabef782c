"""FNMR at fixed FMR and FMR at fixed FNMR (ISO/IEC 19795-1) equal a brute-force search over
every observed score, under random chunkings, tiny kernel blocks and every refinement mode,
with heavy ties and targets below one error; they cost no extra pass; per condition; the CLI."""

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
from bosaris_dask.conditions import condition_table
from bosaris_dask.errors import OptionError
from bosaris_dask.passes import pass1_bins
from bosaris_dask.report import to_json_dict
from bosaris_dask.trials import make_key, make_scores

from . import reference as ref

EVALUATE = ["evaluate", "--format", "wespeaker", "--scores"]
FMR = [1e-6, 0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0]
FNMR = [1e-6, 0.01, 0.1, 0.3, 0.5, 1.0]


def _same(got, want):
    """Equal triples, NaN equal to NaN."""
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert (math.isnan(g) and math.isnan(w)) or g == w, (got, want)


def _check(ds, tar, non, fmr=FMR, fnmr=FNMR, system=0):
    r = ds.isel(system=system)
    for i, f in enumerate(fmr):
        got = [float(r[f"fixed_fmr_{k}"][i]) for k in ("threshold", "fmr", "fnmr")]
        _same(got, ref.fixed_fmr(tar, non, f))
    for i, f in enumerate(fnmr):
        got = [float(r[f"fixed_fnmr_{k}"][i]) for k in ("threshold", "fmr", "fnmr")]
        _same(got, ref.fixed_fnmr(tar, non, f))


def test_hand_worked_ties_and_targets_below_one_error():
    tar, non = [1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 2.0, 2.0, 3.5]
    # FMR <= 0.5 allows 2 false matches, but the tie at 2.0 jumps from 1 to 3 non-targets:
    # the smallest qualifying score is 3.0, with FMR 0.2; TAR = 1 - 2/4
    assert metrics.fnmr_at_fmr(tar, non, 0.5) == (3.0, 0.2, 0.5)
    assert metrics.fnmr_at_fmr(tar, non, 0.4) == (3.0, 0.2, 0.5)
    assert metrics.fnmr_at_fmr(tar, non, 0.6) == (2.0, 0.6, 0.25)
    assert metrics.fnmr_at_fmr(tar, non, 1.0) == (0.0, 1.0, 0.0)
    assert all(math.isnan(x) for x in metrics.fnmr_at_fmr(tar, non, 0.19))  # < 1/5
    assert metrics.fmr_at_fnmr(tar, non, 0.25) == (2.0, 0.6, 0.25)
    assert all(math.isnan(x) for x in metrics.fmr_at_fnmr(tar, non, 0.2))  # < 1/4
    # the two highest scores are tied non-targets: only rejecting everything has FMR <= 1/3
    assert metrics.fnmr_at_fmr([0.0, 1.0], [5.0, 5.0, 1.0], 0.4) == (math.inf, 0.0, 1.0)
    # 1e-6 with 10**6 non-targets allows one false match (the float comparison 1/1e6 <= 1e-6)
    non = np.arange(10**6, dtype=np.float64)
    assert metrics.fnmr_at_fmr([0.5, 999_999.0], non, 1e-6) == (999_999.0, 1e-6, 0.5)


def test_bad_targets_are_refused():
    with pytest.raises(OptionError, match="target FMR 0.0 is not in"):
        metrics.evaluate_arrays([1.0], [0.0], fmr=[0.0])
    with pytest.raises(OptionError, match="target FNMR 1.5 is not in"):
        metrics.evaluate_arrays([1.0], [0.0], fnmr=[1.5])


def _chunks(draw, n):
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=min(4, n - 1)))) if n > 1 else []
    edges = [0, *cuts, n]
    return tuple(b - a for a, b in zip(edges[:-1], edges[1:], strict=True))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1), shape=st.tuples(st.integers(2, 9), st.integers(2, 16)),
    ties=st.sampled_from([1, 3, 100, None]), dtype=st.sampled_from([np.float32, np.float64]),
    coarse=st.sampled_from([2, 6, 20]), mode=st.sampled_from(["raw", "dense", "keep"]),
    blocks=st.sampled_from([(8, 8), (8, 24), (1 << 16, 1 << 22)]), data=st.data(),
)  # fmt: skip
def test_engine_equals_brute_force_under_any_chunking(
    seed, shape, ties, dtype, coarse, mode, blocks, data
):
    rng = np.random.default_rng(seed)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=shape, p=[0.65, 0.35])
    mask[0, 0], mask[-1, -1] = 1, -1
    raw = rng.normal(size=shape) + mask * 0.8
    values = (np.round(raw * ties) / ties if ties else raw).astype(dtype)  # heavy ties
    chunks = (_chunks(data.draw, shape[0]), _chunks(data.draw, shape[1]))
    key = make_key(range(shape[0]), range(shape[1]), mask, chunks=chunks)
    scores = make_scores(range(shape[0]), range(shape[1]), values, chunks=chunks)
    tar, non = values[mask == 1], values[mask == -1]
    n_non, n_tar = len(non), len(tar)
    # targets on both sides of every count: k/N exactly, just below, just above, below 1/N
    fmr = sorted({*FMR, data.draw(st.integers(1, n_non)) / n_non,
                  min(1.0, data.draw(st.integers(1, n_non)) / n_non * (1 + 1e-9)),
                  data.draw(st.integers(1, n_non)) / n_non * (1 - 1e-9)})  # fmt: skip
    fnmr = sorted({*FNMR, data.draw(st.integers(1, n_tar)) / n_tar,
                   data.draw(st.integers(1, n_tar)) / n_tar * (1 - 1e-9)})  # fmt: skip
    config = {
        "bosaris_dask.raw-limit": 0 if mode == "dense" else 1 << 22,
        "bosaris_dask.dense-budget": 16,
        "bosaris_dask.keep-limit": 1 << 24 if mode == "keep" else 0,
        "bosaris_dask.block": blocks[0],
        "bosaris_dask.slice": blocks[1],
    }
    with (
        mock.patch.object(pass1_bins, "default_coarse_bits", lambda n: coarse),
        dask.config.set(config),
    ):
        ds = metrics.evaluate(scores, key, priors=[0.5], fmr=fmr, fnmr=fnmr,
                              split_every=data.draw(st.integers(2, 4)))  # fmt: skip
    _check(ds, tar, non, fmr, fnmr)
    _check(metrics.evaluate_arrays(tar, non, priors=[0.5], fmr=fmr, fnmr=fnmr), tar, non,
           fmr, fnmr)  # fmt: skip


@pytest.mark.parametrize("config", [
    {},
    {"bosaris_dask.block": 8, "bosaris_dask.slice": 24},
    {"bosaris_dask.dense-budget": 64, "bosaris_dask.raw-limit": 8},
])  # fmt: skip
def test_no_extra_pass(config):
    """The fixed-rate bins are refined in the hull's passes. (Not with a dense budget starved
    to 64 sub-bins *and* no kept trials: there more candidates share the budget, each gets
    fewer sub-bits per round and the rounds, each a pass, grow.)"""
    rng = np.random.default_rng(5)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(60, 80), p=[0.8, 0.2])
    for dtype in (np.float32, np.float64):
        values = (rng.normal(size=mask.shape) + 2 * (mask == 1)).astype(dtype)
        key = make_key(range(60), range(80), mask, chunks=(25, 30))
        scores = make_scores(range(60), range(80), values, chunks=(25, 30))
        with dask.config.set(config):
            plain = metrics.evaluate(scores, key, priors=[0.01])
            fixed = metrics.evaluate(scores, key, priors=[0.01], fmr=FMR, fnmr=FNMR)
        assert fixed.attrs["passes"] == plain.attrs["passes"] >= 2, (config, dtype)
        _check(fixed, values[mask == 1], values[mask == -1])
        for name in ("eer", "min_dcf", "act_dcf", "cllr", "min_cllr"):
            np.testing.assert_array_equal(fixed[name].values, plain[name].values)


def test_per_condition_equals_brute_force_on_the_condition_trials():
    rng = np.random.default_rng(9)
    mids, sids = [f"m{i}" for i in range(12)], [f"s{j}" for j in range(30)]
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(12, 30), p=[0.7, 0.3])
    values = np.round(rng.normal(size=mask.shape) + mask, 1)
    key = make_key(mids, sids, mask, chunks=(5, 11))
    scores = make_scores(mids, sids, values, chunks=(5, 11))
    gender = rng.choice(["f", "m"], 12)
    table = condition_table("model", mids, {"g": list(gender)})
    fmr, fnmr = [0.01, 0.1, 0.3], [0.05, 0.2]
    ds = metrics.evaluate(scores, key, conditions=[table], by=["model.g"], fmr=fmr, fnmr=fnmr,
                          priors=[0.5])  # fmt: skip
    _check(ds, values[mask == 1], values[mask == -1], fmr, fnmr)  # pooled
    for g, label in enumerate(ds.condition.values):
        rows = gender == label.split("=")[1]
        v, m = values[rows], mask[rows]
        r = ds.isel(system=0, condition=g)
        for i, f in enumerate(fmr):
            got = [float(r[f"condition_fixed_fmr_{k}"][i]) for k in ("threshold", "fmr", "fnmr")]
            _same(got, ref.fixed_fmr(v[m == 1], v[m == -1], f))
        for i, f in enumerate(fnmr):
            got = [float(r[f"condition_fixed_fnmr_{k}"][i]) for k in ("threshold", "fmr", "fnmr")]
            _same(got, ref.fixed_fnmr(v[m == 1], v[m == -1], f))
    assert ds.condition_fixed_fmr_fnmr.attrs == ds.fixed_fmr_fnmr.attrs
    assert ds.fixed_fmr_threshold.attrs["units"] == "score"
    for name in [*ds.data_vars, *ds.coords]:  # the result layout's rule: units and meaning
        if "fmr" in str(name):
            assert ds[name].attrs.get("units") and ds[name].attrs.get("long_name"), name


def _write(tmp_path, tar, non):
    lines = [f"m{i} t{i} {float(s)!r} target" for i, s in enumerate(tar)]
    lines += [f"m{i} n{i} {float(s)!r} nontarget" for i, s in enumerate(non)]
    path = tmp_path / "scores.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_json_and_table(tmp_path, capsys):
    rng = np.random.default_rng(2)
    tar = np.round(rng.normal(2.0, 1.0, 200), 2)
    non = np.round(rng.normal(0.0, 1.0, 900), 1)  # ties among the non-targets
    path, out = _write(tmp_path, tar, non), tmp_path / "out.json"
    argv = [*EVALUATE, str(path), "--fmr", "1e-4", "--fmr", "0.01", "--fmr", "0.1",
            "--fnmr", "0.05", "--json", str(out), "-q"]  # fmt: skip
    assert main(argv) == 0
    table = capsys.readouterr().out
    system = json.loads(out.read_text())["systems"][0]
    assert [e["target"] for e in system["fixed_fmr"]] == [1e-4, 0.01, 0.1]
    low, *rest = system["fixed_fmr"]
    assert low == {
        "target": 1e-4,
        "threshold": None,
        "fmr": None,
        "fnmr": None,
        "note": "FMR 0.0001 < 1/900 non-targets: not measurable on these trials",
    }
    for entry in rest:
        want = ref.fixed_fmr(tar, non, entry["target"])
        assert (entry["threshold"], entry["fmr"], entry["fnmr"]) == pytest.approx(want, rel=1e-12)
        assert "note" not in entry
        t, fmr, fnmr = want  # the table's row: target, threshold, FMR, FNMR, TAR = 1 - FNMR
        row = f"{entry['target']:g}  {t:.6g}  {fmr:.6g}  {fnmr:.6g}  {1 - fnmr:.6g}"
        assert row in " ".join(table.split()).replace(" ", "  "), row
    (entry,) = system["fixed_fnmr"]
    want = ref.fixed_fnmr(tar, non, 0.05)
    assert (entry["threshold"], entry["fmr"], entry["fnmr"]) == pytest.approx(want, rel=1e-12)
    assert "TAR = 1 - FNMR at fixed FMR" in table and "FMR at fixed FNMR" in table
    assert "not measurable on these trials" in table


def test_ijbc_profile_reports_tar_at_its_fmrs(tmp_path, capsys):
    rng = np.random.default_rng(4)
    tar, non = rng.normal(2.0, 1.0, 50), rng.normal(0.0, 1.0, 2000)
    path, out = _write(tmp_path, tar, non), tmp_path / "out.json"
    assert main([*EVALUATE, str(path), "--profile", "ijbc", "--json", str(out),
                 "-q"]) == 0  # fmt: skip
    doc = json.loads(out.read_text())
    fixed = doc["systems"][0]["fixed_fmr"]
    assert [e["target"] for e in fixed] == [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1]
    assert [e["threshold"] is None for e in fixed] == [True, True, True, False, False, False]
    assert fixed[3]["fnmr"] == ref.fixed_fmr(tar, non, 1e-3)[2]
    # explicit --fmr wins over the profile's
    assert main([*EVALUATE, str(path), "--profile", "ijbc", "--fmr", "0.5",
                 "--json", str(out), "-q"]) == 0  # fmt: skip
    assert [e["target"] for e in json.loads(out.read_text())["systems"][0]["fixed_fmr"]] == [0.5]


def test_llr_base_10_thresholds_in_base_10(tmp_path):
    rng = np.random.default_rng(6)
    tar, non = np.round(rng.normal(1.0, 1.0, 100), 3), np.round(rng.normal(-1.0, 1.0, 400), 3)
    path, out = _write(tmp_path, tar, non), tmp_path / "out.json"
    assert main([*EVALUATE, str(path), "--fmr", "0.01", "--fnmr", "0.1",
                 "--llr-base", "10", "--json", str(out), "-q"]) == 0  # fmt: skip
    system = json.loads(out.read_text())["systems"][0]
    (a,), (b,) = system["fixed_fmr"], system["fixed_fnmr"]
    assert a["threshold"] == pytest.approx(ref.fixed_fmr(tar, non, 0.01)[0], rel=1e-12)
    assert b["threshold"] == pytest.approx(ref.fixed_fnmr(tar, non, 0.1)[0], rel=1e-12)
    assert a["fnmr"] == ref.fixed_fmr(tar, non, 0.01)[2]


def test_zarr_store_round_trip_keeps_the_points(tmp_path):
    """A stored key and scores (the demo's formats) give the same points as arrays."""
    rng = np.random.default_rng(8)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(20, 30), p=[0.9, 0.1])
    values = rng.normal(size=mask.shape).astype(np.float32) + mask
    io.write(make_key(range(20), range(30), mask), tmp_path / "key.zarr")
    io.write(make_scores(range(20), range(30), values), tmp_path / "s.zarr")
    key, scores = io.read(tmp_path / "key.zarr"), io.read(tmp_path / "s.zarr")
    ds = metrics.evaluate(scores, key, priors=[0.5], fmr=FMR, fnmr=FNMR)
    _check(ds, values[mask == 1], values[mask == -1])


def test_empty_condition_says_why_in_the_json():
    key = make_key(["a", "b"], ["x", "y", "z"], [[1, -1, -1], [-1, -1, -1]])
    scores = make_scores(["a", "b"], ["x", "y", "z"], [[2.0, 0.0, 1.0], [0.5, -1.0, 0.3]])
    table = condition_table("model", ["a", "b"], {"g": ["p", "q"]})
    ds = metrics.evaluate(scores, key, priors=[0.5], conditions=[table], by=["model.g"],
                          fmr=[0.5])  # fmt: skip
    p, q = to_json_dict(ds)["systems"][0]["conditions"]
    # condition p: target 2.0, non-targets 0.0 and 1.0; FMR <= 0.5 allows one false match
    assert p["fixed_fmr"] == [{"target": 0.5, "threshold": 1.0, "fmr": 0.5, "fnmr": 0.0}]
    assert q["fixed_fmr"] == [{"target": 0.5, "threshold": None, "fmr": None, "fnmr": None,
                               "note": "no targets or no non-targets"}]  # fmt: skip
