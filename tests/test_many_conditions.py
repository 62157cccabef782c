"""Thousands of conditions: exact per-condition metrics with pass 1's histogram capped, and
reports read per condition from numpy columns equal to those of each condition's own view."""

from __future__ import annotations

import json

import dask
import numpy as np
import pytest

import bosaris_dask as bd
from bosaris_dask.conditions import condition_table
from bosaris_dask.conditions.evaluation import condition_result
from bosaris_dask.report import format_table, to_json_dict
from bosaris_dask.trials import make_key, make_scores


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
