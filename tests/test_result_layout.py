"""The evaluation Dataset's layout: the JSON and the table are a stable interface.

``tests/data/result_layout/*.json`` were written by the code *before* the Dataset got one prior
log-odds dimension (``python tests/test_result_layout.py`` with the old package on the path);
the JSON and the printed table of the same input must stay byte-identical. The layout itself is
checked against plain numpy: the operating points and the sweep share ``plo``, the per-prior
variables exist once, the ragged curves come back at their exact lengths.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from bosaris_dask import metrics
from bosaris_dask.conditions import condition_table
from bosaris_dask.report import format_table, to_json_dict
from bosaris_dask.trials import make_key, make_scores

DATA = Path(__file__).parent / "data"
GOLDEN = DATA / "result_layout"


def _cases():
    """Named evaluations covering: costs, a prior on the sweep, Cprimary, conditions, 2 systems."""
    tar = np.loadtxt(DATA / "gauss1" / "tar.txt")
    non = np.loadtxt(DATA / "gauss1" / "non.txt")
    yield "gauss1", lambda: metrics.evaluate_arrays(
        tar, non, priors=[0.5, 0.1, 0.01, 0.001], operating_points=["0.01:10:1"], name="gauss1"
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
    yield "conditions", lambda: metrics.evaluate(
        systems, key, conditions=tables, by=["model.g", "segment.d"], cprimary_priors=[0.5, 0.1],
        **common,
    )


def _render(ds) -> str:
    doc = json.dumps(to_json_dict(ds), indent=2, sort_keys=False)
    return json.dumps({"json": doc, "table": format_table(ds)}, indent=1) + "\n"


CASES = dict(_cases())


@pytest.mark.parametrize("name", sorted(CASES))
def test_json_and_table_are_byte_identical_to_the_old_layout(name):
    assert _render(CASES[name]()) == (GOLDEN / f"{name}.json").read_text()


if __name__ == "__main__":  # regenerate (only from a commit whose output is the reference)
    for name, make in CASES.items():
        (GOLDEN / f"{name}.json").write_text(_render(make()))
    print("wrote", sorted(CASES), "with", sys.modules["bosaris_dask"].__file__)
