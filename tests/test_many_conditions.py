"""Thousands of conditions: exact per-condition metrics with pass 1's histogram capped, and
reports read per condition from numpy columns equal to those of each condition's own view."""

from __future__ import annotations

import json

import dask
import numpy as np
import pytest

import bosaris_dask as bd
from bosaris_dask.conditions import condition_table, summaries
from bosaris_dask.conditions.evaluation import condition_result
from bosaris_dask.report import format_table, to_json_dict
from bosaris_dask.trials import make_key, make_scores

from . import reference as ref


def _case(seed: int, n_models: int, n_segments: int, per_group: int = 2):
    """Scores with ties, some key trials unscored, and groups of ``per_group`` ids per side."""
    rng = np.random.default_rng(seed)
    mids = [f"m{i}" for i in range(n_models)]
    sids = [f"s{j}" for j in range(n_segments)]
    labels = np.where(rng.random((n_models, n_segments)) < 0.4, 1, -1).astype(np.int8)
    scores = np.round(rng.normal(size=labels.shape) + 1.5 * (labels == 1), 1)
    scored = rng.random(labels.shape) > 0.03
    key = make_key(mids, sids, labels, chunks=(40, 35))
    system = make_scores(mids, sids, scores, score_mask=scored, chunks=(40, 35))
    tables = [
        condition_table("model", mids, {"g": [f"a{i // per_group}" for i in range(n_models)]}),
        condition_table("segment", sids, {"g": [f"b{j // per_group}" for j in range(n_segments)]}),
    ]
    return labels, scores, scored, key, system, tables


def test_thousands_of_conditions_are_exact_with_a_capped_pass1(monkeypatch):
    """2,700 conditions of a few trials each: pass 1's histogram capped to 2 bins a condition
    (MAX_CONDITION_CELLS lowered), and every condition's metrics equal the brute-force ones
    of its own trials; the report is the same as with the default cap, passes aside."""
    labels, scores, scored, key, system, tables = _case(0, 120, 90)
    args = {"conditions": tables, "by": ["model.g", "segment.g"], "allow_missing": True,
            "priors": [0.5, 0.1], "fmr": [0.25, 0.5]}  # fmt: skip
    with dask.config.set(scheduler="sync"):
        wide = bd.evaluate([system], key, **args)
        monkeypatch.setattr(summaries, "MAX_CONDITION_CELLS", 2 * 2701)
        assert summaries._coarse_bits(2701) == 1
        capped = bd.evaluate([system], key, **args)
    assert capped.sizes["condition"] == 2700
    doc_wide, doc_capped = to_json_dict(wide), to_json_dict(capped)
    for doc in (doc_wide, doc_capped):
        for entry in doc["systems"][0]["conditions"]:  # bin-dependent bounds, not metrics
            for name in ("auc", "auc_low", "auc_high"):
                entry.pop(name)
        doc.pop("passes")
    assert doc_wide == doc_capped

    model_group = np.arange(120) // 2
    segment_group = np.arange(90) // 2
    checked = fixed_points = 0
    for g, entry in enumerate(doc_capped["systems"][0]["conditions"]):
        a, b = int(entry["by"]["model.g"][1:]), int(entry["by"]["segment.g"][1:])
        cell = (model_group[:, None] == a) & (segment_group[None, :] == b)
        tar, non = (scores[cell & scored & (labels == c)] for c in (1, -1))
        assert (entry["n_target"], entry["n_nontarget"]) == (len(tar), len(non)), g
        assert entry["n_missing"] == int((cell & ~scored).sum())
        if not len(tar) or not len(non):
            assert entry["eer"] is None
            continue
        assert entry["eer"] == pytest.approx(ref.eer(tar, non), abs=1e-12)
        assert entry["cllr"] == pytest.approx(ref.cllr(tar, non), rel=1e-12)
        for point in entry["operating_points"]:
            plo = float(np.log(point["prior"] / (1 - point["prior"])))
            assert point["min_dcf_raw"] == pytest.approx(ref.min_dcf(tar, non, plo), abs=1e-12)
            assert point["act_dcf_raw"] == pytest.approx(ref.dcf_at(tar, non, plo)[0], abs=1e-12)
        # a condition holds at most 3 non-targets: FMR 0.25 is below every one's resolution
        # (no point), 0.5 reached where 2 or 3 are
        for target, got in zip((0.25, 0.5), entry["fixed_fmr"], strict=True):
            _, fmr, fnmr = ref.fixed_fmr(tar, non, target)
            if np.isnan(fmr):
                assert got["fmr"] is None and got["fnmr"] is None
            else:
                assert (got["fmr"], got["fnmr"]) == pytest.approx((fmr, fnmr), abs=1e-12)
                fixed_points += 1
        checked += 1
    assert checked > 1000 and fixed_points > 1000


@pytest.mark.parametrize(
    "extra",
    [
        {"priors": [0.5, 0.01], "fmr": [0.01, 1e-9], "fnmr": [0.1], "ece_plo": [-2.0, 0.0],
         "cprimary_priors": [0.01, 0.05], "exact_auc": True},
        {"priors": [0.5], "operating_points": ["0.01:10:1", "0.2:1:3"], "equalize": True},
    ],
)  # fmt: skip
def test_a_conditions_report_is_that_of_its_own_view(extra):
    """Each condition's JSON entry and table block, read from the conditions' numpy columns,
    are those of the condition's own Dataset (``condition_result``: xarray selections) given
    to the same report functions."""
    _, _, _, key, system, tables = _case(1, 30, 24, per_group=6)
    other = system.copy()
    other["score"] = -system.score  # a second system, some conditions reversed
    args = {"conditions": tables, "by": ["model.g", "same.g"], "allow_missing": True, **extra}
    with dask.config.set(scheduler="sync"):
        ds = bd.evaluate([system, other], key, names=["a", "b"], **args)
    doc, table = to_json_dict(ds), format_table(ds)
    blocks = table.split("\n== condition ")[1:]
    assert len(blocks) == ds.sizes["condition"] > 3
    for g, label in enumerate(ds.condition.values):
        view = condition_result(ds, g)
        own = to_json_dict(view)["systems"]
        for system_doc, mine in zip(doc["systems"], own, strict=True):
            entry = system_doc["conditions"][g]
            assert entry["by"] == view.attrs["by"]
            mine.pop("name")
            assert json.dumps({"by": view.attrs["by"], **mine}) == json.dumps(entry)
        block = blocks[g]
        assert block.startswith(f"{label} ==\n")
        assert block[len(f"{label} ==\n") :].startswith(format_table(view))
