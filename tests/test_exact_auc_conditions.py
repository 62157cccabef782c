"""The exact AUC per condition (``evaluate(..., by=..., exact_auc=True)``): each condition's
``condition_auc`` against a brute-force Mann-Whitney count over that condition's trials alone
(numpy comparisons and Fractions, no code shared with the package), under random chunkings,
random condition tables and heavy ties, with the engine's bins forced coarse; the extra passes,
counted by a scheduler, are as many as without conditions; the shared budget; the CLI's JSON."""

from __future__ import annotations

import contextlib
import json
import warnings
from fractions import Fraction
from unittest import mock

import dask
import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bosaris_dask import metrics
from bosaris_dask.cli import main
from bosaris_dask.conditions import condition_table
from bosaris_dask.conditions.summaries import GROUPED_KEY
from bosaris_dask.passes import exact_auc, riding_auc
from bosaris_dask.trials import make_key, make_scores
from tests.test_exact_auc import _chunks, _coarse, _reads_per_chunk


def _mann_whitney(tar, non) -> Fraction | None:
    """``(2·#{t > n} + #{t = n}) / (2·T·N)`` over every pair; ``None`` without a pair."""
    tar, non = np.asarray(tar, np.float64).ravel(), np.asarray(non, np.float64).ravel()
    if not tar.size or not non.size:
        return None
    above = int((tar[:, None] > non[None, :]).sum())
    tied = int((tar[:, None] == non[None, :]).sum())
    return Fraction(2 * above + tied, 2 * tar.size * non.size)


class _Spy:
    """Wraps :func:`exact_auc.exact_aucs`, keeping the summaries of each call."""

    def __init__(self):
        self.calls = []
        self._real = exact_auc.exact_aucs

    def __call__(self, scores, key, summaries, **kwargs):
        self.calls.append(list(summaries))
        return self._real(scores, key, summaries, **kwargs)

    def classes(self):
        """The smaller and the other class's trials of the mixed bins, over the last call."""
        plans = [exact_auc.mixed_bins(s) for s in self.calls[-1]]
        return sum(p.n_s for p in plans if p), sum(p.n_o for p in plans if p)


def _evaluate(systems, key, bits, limit, spy=None, ride=None, **kwargs):
    """Evaluate with the exact AUC; with ``spy`` (or ``ride=False``) on the passes after the
    evaluation (nothing rides along its passes); with a ``_Ride``, recording how it rode."""
    patch, conf = _coarse(bits, auc_limit=limit)
    target = "bosaris_dask.conditions.evaluation.exact_aucs"
    if spy is not None or ride is False:
        riding = mock.patch.object(riding_auc.RidingAuc, "_after_pass1", lambda *a: None)
    else:
        riding = ride.patch() if ride is not None else contextlib.nullcontext()
    with patch, conf, riding, mock.patch(target, spy) if spy else contextlib.nullcontext():
        return metrics.evaluate(systems, key, priors=[0.5], exact_auc=True, **kwargs)


class _Ride:
    """Records whether the exact AUC rode along the evaluation's passes."""

    def __init__(self):
        self.riding = None

    def patch(self):
        real = riding_auc.RidingAuc._after_pass1

        def spy(riding, *args):
            self.riding = riding
            return real(riding, *args)

        return mock.patch.object(riding_auc.RidingAuc, "_after_pass1", spy)

    def extra(self):
        """The extra passes it took riding along (``None``: it did not ride)."""
        if self.riding is None or not self.riding.served:
            return None
        return int(self.riding.rider.alone)


def _tables(rng, shape, n_model_values, n_segment_values):
    """Random model and segment condition tables; ``lang`` on both sides (``same.lang``)."""
    spk = rng.integers(0, n_model_values, shape[0]).astype(str)
    src = rng.integers(0, n_segment_values, shape[1]).astype(str)
    m_lang, s_lang = rng.choice(["en", "zh"], shape[0]), rng.choice(["en", "zh"], shape[1])
    tables = [
        condition_table("model", list(range(shape[0])), {"spk": spk, "lang": m_lang}),
        condition_table("segment", list(range(shape[1])), {"src": src, "lang": s_lang}),
    ]
    columns = {
        "model.spk": np.broadcast_to(spk[:, None], shape),
        "segment.src": np.broadcast_to(src[None, :], shape),
        "same.lang": np.where(m_lang[:, None] == s_lang[None, :], "same", "different"),
    }
    return tables, columns


def _cell(label: str, columns) -> np.ndarray:
    """The trials of the condition labelled ``"model.spk=1, same.lang=same"``."""
    cell = True
    for part in label.split(", "):
        spec, value = part.split("=")
        cell = cell & (columns[spec] == value)
    return cell


BY = [["model.spk"], ["segment.src", "model.spk"], ["same.lang"], ["model.spk", "same.lang"]]


def _check(ds, plain, values, mask, scored, columns):
    tar_all, non_all = (mask == 1) & scored, (mask == -1) & scored
    want = _mann_whitney(values[tar_all], values[non_all])
    assert ds.auc.item() == float(want) == ds.auc_low.item() == ds.auc_high.item()
    for g, label in enumerate(ds.condition.values):
        cell = _cell(str(label), columns)
        want = _mann_whitney(values[tar_all & cell], values[non_all & cell])
        got = ds.condition_auc.values[0, g]
        if want is None:  # no targets or no non-targets: null
            assert np.isnan(got) and np.isnan(plain.condition_auc.values[0, g])
            continue
        assert got == float(want)
        assert ds.condition_auc_low.values[0, g] == got == ds.condition_auc_high.values[0, g]
        low, high = plain.condition_auc_low.values[0, g], plain.condition_auc_high.values[0, g]
        assert low <= got <= high
    assert "auc_notes" not in ds.attrs


@settings(
    max_examples=4, print_blob=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    seed=st.integers(0, 2**32 - 1), shape=st.tuples(st.integers(4, 9), st.integers(8, 20)),
    ties=st.sampled_from([1, 4, None]), dtype=st.sampled_from([np.float32, np.float64]),
    coarse=st.sampled_from([1, 3]), by=st.sampled_from(BY), grouped=st.booleans(),
    data=st.data(),
)  # fmt: skip
def test_condition_auc_is_mann_whitney_of_its_trials(
    seed, shape, ties, dtype, coarse, by, grouped, data
):
    """Every budget path: all mixed-bin trials fit (one extra pass), only the smaller
    classes' (two), and no mixed bin (none)."""
    rng = np.random.default_rng(seed)
    mask = rng.choice(np.array([-1, 0, 1], dtype=np.int8), size=shape, p=[0.55, 0.15, 0.3])
    mask[0, 0], mask[-1, -1] = 1, -1
    raw = rng.normal(size=shape) + (mask == 1) * 0.8
    values = (np.round(raw * ties) / ties if ties else raw).astype(dtype)
    scored = rng.random(shape) > 0.1  # missing trials
    scored[0, 0] = scored[-1, -1] = True
    values[~scored] = np.nan
    key_chunks = (_chunks(data.draw, shape[0]), _chunks(data.draw, shape[1]))
    score_chunks = (_chunks(data.draw, shape[0]), _chunks(data.draw, shape[1]))
    key = make_key(range(shape[0]), range(shape[1]), mask, chunks=key_chunks)
    scores = make_scores(range(shape[0]), range(shape[1]), values, scored, chunks=score_chunks)
    tables, columns = _tables(rng, shape, data.draw(st.integers(1, 4)), 3)
    options = dict(conditions=tables, by=by, allow_missing=True, split_every=2)
    spy = _Spy()
    with dask.config.set({GROUPED_KEY: grouped}):
        patch, conf = _coarse(coarse)
        with patch, conf:
            plain = metrics.evaluate(scores, key, priors=[0.5], **options)
        today = _evaluate(scores, key, coarse, 10**9, spy, **options)
        n_s, n_o = spy.classes()
        event(f"mixed bins: {'yes' if n_s else 'no'}, other class: {'yes' if n_o else 'no'}")
        _check(today, plain, values, mask, scored, columns)
        assert today.attrs["passes"] == plain.attrs["passes"] + (1 if n_s else 0)
        ride = _Ride()
        ds = _evaluate(scores, key, coarse, 10**9, ride=ride, **options)
        rode = ride.extra()
        event(f"rode along: {grouped and rode is not None}, extra passes: {rode}")
        _check(ds, plain, values, mask, scored, columns)
        for name in ("auc", "condition_auc"):
            np.testing.assert_array_equal(ds[name].values, today[name].values)
        extra = rode if rode is not None else (1 if n_s else 0)
        assert ds.attrs["passes"] == plain.attrs["passes"] + extra
        if n_s:  # the budget takes the smaller classes only: two extra passes
            ds = _evaluate(scores, key, coarse, n_s, ride=False, **options)
            _check(ds, plain, values, mask, scored, columns)
            assert ds.attrs["passes"] == plain.attrs["passes"] + (2 if n_o else 1)


def _heavy_ties(seed=3, shape=(40, 50)):
    rng = np.random.default_rng(seed)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=shape, p=[0.8, 0.2])
    values = np.round(rng.normal(size=shape) + mask, 1)
    key = make_key(range(shape[0]), range(shape[1]), mask, chunks=(10, 25))
    scores = make_scores(range(shape[0]), range(shape[1]), values, chunks=(10, 25))
    tables, columns = _tables(rng, shape, 3, 2)
    return mask, values, key, scores, tables, columns


@pytest.mark.parametrize("budget, extra", [("targets", 0), ("small", 2)])
def test_the_extra_passes_are_as_many_as_without_conditions(budget, extra):
    """Every condition's keys are pulled (and counted) in the pooled AUC's passes: none more
    when the targets fit the budget (pass 1 pulls them, the count rides the refinement pass),
    two when they overflow it and only the mixed bins' smaller classes fit, with or without
    conditions, and each chunk is read once per pass."""
    mask, values, key, scores, tables, columns = _heavy_ties()
    by = dict(conditions=tables, by=["model.spk", "segment.src"])
    spy = _Spy()
    _evaluate(scores, key, 4, 10**9, spy, **by)
    n_s, n_o = spy.classes()
    assert len(spy.calls[-1]) == 1 + 6 and 0 < n_s < n_o  # pooled and 6 conditions
    assert n_s < int((mask == 1).sum())  # the targets overflow a budget of n_s
    limit = 10**9 if budget == "targets" else n_s
    patch, conf = _coarse(4, auc_limit=limit)
    with patch, conf:
        _, pooled_computes, pooled_plain = _reads_per_chunk(scores, key)
        _, pooled_exact_computes, pooled_exact = _reads_per_chunk(scores, key, exact_auc=True)
        _, plain_computes, plain = _reads_per_chunk(scores, key, **by)
        reads, computes, ds = _reads_per_chunk(scores, key, exact_auc=True, **by)
    assert pooled_exact.attrs["passes"] - pooled_plain.attrs["passes"] == extra
    assert pooled_exact_computes - pooled_computes == extra
    assert ds.attrs["passes"] - plain.attrs["passes"] == extra
    assert computes - plain_computes == extra
    assert set(reads.values()) == {ds.attrs["passes"]} and len(reads) == 8
    assert ds.auc.item() == pooled_exact.auc.item()
    for g, label in enumerate(ds.condition.values):
        cell = _cell(str(label), columns)
        want = _mann_whitney(values[(mask == 1) & cell], values[(mask == -1) & cell])
        assert ds.condition_auc.values[0, g] == float(want)


def test_over_the_budget_the_conditions_keep_bounds_and_say_why():
    """The budget is one per call, pooled summaries first: conditions beyond it keep their
    exact bounds, each with a one-line note (and warning)."""
    mask, values, key, scores, tables, columns = _heavy_ties()
    by = dict(conditions=tables, by=["model.spk"])
    spy = _Spy()
    _evaluate(scores, key, 4, 10**9, spy, **by)
    pooled_small = exact_auc.mixed_bins(spy.calls[-1][0]).n_s
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = _evaluate(scores, key, 4, pooled_small, **by)
    tar, non = values[mask == 1], values[mask == -1]
    assert ds.auc.item() == float(_mann_whitney(tar, non))
    notes = ds.attrs["auc_notes"]
    assert [str(w.message) for w in caught] == notes
    mixed = [exact_auc.mixed_bins(s) is not None for s in spy.calls[-1][1:]]
    assert len(mixed) == 3 and len(notes) == sum(mixed) > 0
    notes = iter(notes)
    for g, label in enumerate(ds.condition.values):
        want = float(_mann_whitney(*(values[(mask == c) & _cell(str(label), columns)]
                                     for c in (1, -1))))  # fmt: skip
        if not mixed[g]:  # exact from the summary alone
            assert ds.condition_auc.values[0, g] == want
            continue
        note = next(notes)
        assert note.startswith(f"system-1 [{label}]: exact AUC not computed: its mixed score ")
        assert f"over the budget bosaris_dask.auc-limit = {pooled_small:,} (" in note
        assert np.isnan(ds.condition_auc.values[0, g])
        assert ds.condition_auc_low.values[0, g] <= want <= ds.condition_auc_high.values[0, g]


def test_several_systems_and_cprimary_without_conditions():
    """Several systems in one pass each; Cprimary priors alone (no conditions) take the
    pooled path with the exact AUC too."""
    mask, values, key, _, tables, columns = _heavy_ties()
    others = [values, np.round(values * 0.5 + 0.2, 1).astype(np.float32)]
    systems = [make_scores(range(40), range(50), v, chunks=(13, 17)) for v in others]
    ds = _evaluate(systems, key, 3, 10**9, conditions=tables, by=["same.lang"])
    for k, v in enumerate(others):
        v = v.astype(np.float64)
        assert ds.auc.values[k] == float(_mann_whitney(v[mask == 1], v[mask == -1]))
        for g, label in enumerate(ds.condition.values):
            cell = _cell(str(label), columns)
            want = _mann_whitney(v[(mask == 1) & cell], v[(mask == -1) & cell])
            assert ds.condition_auc.values[k, g] == float(want)
    cp = _evaluate(systems, key, 3, 10**9, cprimary_priors=[0.01, 0.1])
    assert cp.auc.values.tolist() == ds.auc.values.tolist() and "cprimary_act" in cp
    patch, conf = _coarse(3)
    with patch, conf:  # the pooled path: the exact AUC rides along its passes
        plain = metrics.evaluate(systems, key, priors=[0.5], cprimary_priors=[0.01, 0.1])
    assert plain.attrs["passes"] > 1 and cp.attrs["passes"] == plain.attrs["passes"]


def test_cli_by_exact_auc_json(tmp_path):
    rng = np.random.default_rng(5)
    tar, non = np.round(rng.normal(1, 1, 60), 1), np.round(rng.normal(-1, 1, 240), 1)
    lines = [f"m{i} t{i} {float(s)!r} target" for i, s in enumerate(tar)]
    lines += [f"m{i} n{i} {float(s)!r} nontarget" for i, s in enumerate(non)]
    path = tmp_path / "scores.txt"
    path.write_text("\n".join(lines) + "\n")
    table = tmp_path / "models.tsv"
    table.write_text("model\tg\n" + "".join(f"m{i}\t{i % 3}\n" for i in range(240)))
    out = tmp_path / "r.json"
    argv = ["evaluate", "--format", "wespeaker", "--scores", str(path), "-q", "--json", str(out),
            "--conditions", str(table), "--by", "model.g"]  # fmt: skip
    patch, conf = _coarse(2)
    with patch, conf:
        assert main(argv) == 0
        bounds = json.loads(out.read_text())
        assert main([*argv, "--exact-auc"]) == 0
        doc = json.loads(out.read_text())
    entry = doc["systems"][0]
    assert entry["auc"] == float(_mann_whitney(tar, non))
    assert [c["by"] for c in entry["conditions"]] == [{"model.g": str(g)} for g in range(3)]
    for g, cond in enumerate(entry["conditions"]):
        want = float(_mann_whitney(tar[g::3], non[g::3]))
        assert cond["auc"] == cond["auc_low"] == cond["auc_high"] == want
        assert set(cond) == {"by", *(set(entry) - {"name", "conditions"})}
    assert any(c["auc"] is None for c in bounds["systems"][0]["conditions"])  # they were bounds
    # the count rides the refinement pass (one of its own when the evaluation has none)
    assert doc["passes"] == max(bounds["passes"], 2) and "auc_notes" not in doc


def test_with_bootstrap_intervals_the_condition_aucs_are_exact():
    mask, values, key, scores, tables, columns = _heavy_ties(shape=(24, 30))
    ds = _evaluate(scores, key, 3, 10**9, conditions=tables, by=["model.spk"],
                   resample=["model.spk"], bootstrap=3, seed=1)  # fmt: skip
    assert "eer_ci" in ds
    assert ds.auc.item() == float(_mann_whitney(values[mask == 1], values[mask == -1]))
    for g, label in enumerate(ds.condition.values):
        cell = _cell(str(label), columns)
        want = _mann_whitney(values[(mask == 1) & cell], values[(mask == -1) & cell])
        assert ds.condition_auc.values[0, g] == float(want)
