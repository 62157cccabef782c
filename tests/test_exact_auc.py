"""The exact AUC at scale (``evaluate(exact_auc=True)``) against a brute-force Mann-Whitney count
over Fractions and scikit-learn, with the engine's bins forced coarse, under random chunkings,
ties, float32/float64, masks with missing trials, label-derived keys and several systems; and
the passes it takes, counted by a scheduler."""

from __future__ import annotations

import json
import threading
import warnings
from fractions import Fraction
from unittest import mock

import dask
import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from bosaris_dask import engine, metrics
from bosaris_dask.inputs import pass_inputs
from bosaris_dask.passes import exact_auc, pass1_bins, riders
from bosaris_dask.trials import key_from_labels, make_key, make_scores


def _mann_whitney(tar, non) -> Fraction:
    """Twice-U over twice the pairs, pair by pair (no code shared with the package): every
    target compared with every non-target, a few hundred targets at a time."""
    tar = np.asarray(tar, dtype=np.float64).ravel()
    non = np.asarray(non, dtype=np.float64).ravel()
    twice = 0
    for lo in range(0, tar.size, 256):
        t = tar[lo : lo + 256, None]
        twice += 2 * int((t > non).sum()) + int((t == non).sum())
    return Fraction(twice, 2 * tar.size * non.size)


def _coarse(bits: int, **knobs):
    """Coarse pass-1 bins and starved refinement budgets: mixed coarse bins stay."""
    conf = {"bosaris_dask.raw-limit": 0, "bosaris_dask.dense-budget": 4}
    conf.update({f"bosaris_dask.{k.replace('_', '-')}": v for k, v in knobs.items()})
    patch = mock.patch.object(pass1_bins, "default_coarse_bits", lambda n: bits)
    return patch, dask.config.set(conf)


def _chunks(draw, n):
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=min(4, n - 1)))) if n > 1 else []
    edges = [0, *cuts, n]
    return tuple(b - a for a, b in zip(edges[:-1], edges[1:], strict=True))


def _evaluate(systems, key, bits, limit, **kwargs):
    patch, conf = _coarse(bits, auc_limit=limit)
    with patch, conf:
        return metrics.evaluate(systems, key, priors=[0.5], exact_auc=True, **kwargs)


def _small_counts(systems, key, bits, **kwargs):
    """The smaller-class trials of each system's mixed bins (to set budgets in the tests)."""
    patch, conf = _coarse(bits)
    with patch, conf:
        _, summaries = metrics.pooled_evaluation(systems, key, priors=[0.5], **kwargs)
    plans = [exact_auc.mixed_bins(s) for s in summaries]
    return [0 if p is None else p.n_s for p in plans], [0 if p is None else p.n_o for p in plans]


def _riding_extra(systems, key, bits, limit, plain_passes, today, **kwargs):
    """The extra passes the exact AUC should take: none when every system's scored targets and
    the targets of all pass-1 mixed bins fit the budget (pass B rides the first refinement
    pass; one of its own when there is none); else ``today`` (the passes after the
    evaluation)."""
    firsts = []
    rider = riders.Rider([], lambda summaries, results, inputs: firsts.extend(summaries))
    patch, conf = _coarse(bits)
    with patch, conf:
        engine.summarize(systems, key, thresholds=[0.0], rider=rider, **kwargs)
    plans = [exact_auc.mixed_bins(s, small_is_target=True) for s in firsts]
    mixed_targets = sum(p.n_s for p in plans if p is not None)
    if not mixed_targets or max(s.n_target for s in firsts) > limit or mixed_targets > limit:
        return today
    return 0 if plain_passes > 1 else 1


@settings(
    max_examples=8, print_blob=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    seed=st.integers(0, 2**32 - 1), shape=st.tuples(st.integers(2, 9), st.integers(2, 24)),
    ties=st.sampled_from([1, 4, 1000, None]), dtype=st.sampled_from([np.float32, np.float64]),
    coarse=st.sampled_from([1, 3, 8]), budget=st.sampled_from(["both", "small"]),
    p_target=st.sampled_from([0.2, 0.5, 0.8]), data=st.data(),
)  # fmt: skip
def test_exact_auc_equals_mann_whitney_under_any_chunking(
    seed, shape, ties, dtype, coarse, budget, p_target, data
):
    rng = np.random.default_rng(seed)
    mask = rng.choice(np.array([-1, 0, 1], dtype=np.int8), size=shape,
                      p=[0.85 * (1 - p_target), 0.15, 0.85 * p_target])  # fmt: skip
    mask[0, 0], mask[-1, -1] = 1, -1
    raw = rng.normal(size=shape) + (mask == 1) * 0.7
    values = (np.round(raw * ties) / ties if ties else raw).astype(dtype)
    scored = rng.random(shape) > 0.1  # missing trials
    scored[0, 0] = scored[-1, -1] = True
    values[~scored] = np.nan  # never read: not scored
    key_chunks = (_chunks(data.draw, shape[0]), _chunks(data.draw, shape[1]))
    score_chunks = (_chunks(data.draw, shape[0]), _chunks(data.draw, shape[1]))
    key = make_key(range(shape[0]), range(shape[1]), mask, chunks=key_chunks)
    scores = make_scores(range(shape[0]), range(shape[1]), values, scored, chunks=score_chunks)
    tar, non = values[(mask == 1) & scored], values[(mask == -1) & scored]
    (n_s,), (n_o,) = _small_counts([scores], key, coarse, allow_missing=True)
    event(f"mixed bins: {'yes' if n_s else 'no'}, {budget}")
    limit = n_s + n_o if budget == "both" else n_s
    ds = _evaluate(scores, key, coarse, limit, allow_missing=True, split_every=2)
    want = _mann_whitney(tar, non)
    assert ds.auc.item() == float(want) == ds.auc_low.item() == ds.auc_high.item()
    labels = np.r_[np.ones(tar.size), np.zeros(non.size)]
    assert ds.auc.item() == pytest.approx(roc_auc_score(labels, np.r_[tar, non]), abs=1e-12)
    today = 0 if n_s == 0 else 1 if budget == "both" or n_o == 0 else 2
    patch, conf = _coarse(coarse)
    with patch, conf:
        bounds = metrics.evaluate(scores, key, priors=[0.5], allow_missing=True)
    extra = _riding_extra([scores], key, coarse, limit, bounds.attrs["passes"], today,
                          allow_missing=True)  # fmt: skip
    event(f"extra passes: {extra}")
    assert ds.attrs["passes"] == bounds.attrs["passes"] + extra
    assert bounds.auc_low.item() <= ds.auc.item() <= bounds.auc_high.item()


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), budget=st.sampled_from(["both", "small"]),
       data=st.data())  # fmt: skip
def test_label_keys_and_several_systems_in_one_pass(seed, budget, data):
    rng = np.random.default_rng(seed)
    n_m, n_s = 11, 17
    model_labels, segment_labels = rng.integers(0, 3, n_m), rng.integers(0, 3, n_s)
    chunks = (_chunks(data.draw, n_m), _chunks(data.draw, n_s))
    key = key_from_labels(range(n_m), model_labels, range(n_s), segment_labels, chunks=chunks)
    target = model_labels[:, None] == segment_labels[None, :]
    values = [np.round(rng.normal(size=(n_m, n_s)) + target * k, 1) for k in (0.5, 1.5, 3.0)]
    values[1] = values[1].astype(np.float32)
    systems = [make_scores(range(n_m), range(n_s), v, chunks=chunks) for v in values]
    small, other = _small_counts(systems, key, 3)
    limit = sum(small) + sum(other) if budget == "both" else sum(small)
    ds = _evaluate(systems, key, 3, limit)
    for k, v in enumerate(values):
        v = v.astype(np.float64)  # mixed dtypes: evaluated in float64
        assert ds.auc.values[k] == float(_mann_whitney(v[target], v[~target]))
    today = 0 if not sum(small) else 1 if budget == "both" or not sum(other) else 2
    patch, conf = _coarse(3)
    with patch, conf:
        bounds = metrics.evaluate(systems, key, priors=[0.5])
    extra = _riding_extra(systems, key, 3, limit, bounds.attrs["passes"], today)
    assert ds.attrs["passes"] == bounds.attrs["passes"] + extra  # one pass for all systems


def _reads_per_chunk(scores, key, **kwargs):
    """Evaluate, counting how often each score chunk is read and the scheduler's calls."""
    reads: dict[tuple[int, ...], int] = {}
    computes = []
    lock = threading.Lock()

    def count(block, block_id=None):
        if isinstance(block_id, tuple):
            with lock:
                reads[block_id] = reads.get(block_id, 0) + 1
        return block

    def counting_get(dsk, keys, **kw):
        computes.append(keys)
        return dask.get(dsk, keys, **kw)

    data = scores.score.data.map_blocks(count, dtype=scores.score.dtype)
    counted = scores.copy(data={"score": data, "score_mask": scores.score_mask.data})
    with dask.config.set(scheduler=counting_get):
        ds = metrics.evaluate(counted, key, priors=[0.5], **kwargs)
    return reads, len(computes), ds


@pytest.mark.parametrize("budget, extra", [("targets", 0), ("small", 2), ("none", 0)])
def test_the_extra_passes_are_what_the_docs_say(budget, extra):
    """No extra pass when all targets fit the budget (pass 1 pulls them, the count rides the
    refinement pass); when they overflow it, today's passes after the evaluation: two when
    only the smaller class of the mixed bins fits, none (bounds and a warning) when it does
    not."""
    rng = np.random.default_rng(3)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(40, 50), p=[0.8, 0.2])
    values = rng.normal(size=mask.shape) + mask
    key = make_key(range(40), range(50), mask, chunks=(10, 25))
    scores = make_scores(range(40), range(50), values, chunks=(10, 25))
    (n_s,), (n_o,) = _small_counts([scores], key, 4)
    assert 0 < n_s < n_o
    n_targets = int((mask == 1).sum())
    assert n_s < n_targets < n_s + n_o  # all targets fit, or the speculative pull overflows
    limit = {"targets": n_targets, "small": n_s, "none": n_s - 1}[budget]
    patch, conf = _coarse(4, auc_limit=limit)
    with patch, conf:
        plain_reads, plain_computes, plain = _reads_per_chunk(scores, key)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            reads, computes, ds = _reads_per_chunk(scores, key, exact_auc=True)
    assert computes == plain_computes + extra
    assert ds.attrs["passes"] == plain.attrs["passes"] + extra
    assert set(reads.values()) == {ds.attrs["passes"]} and len(reads) == 8
    want = float(_mann_whitney(values[mask == 1], values[mask == -1]))
    if budget == "none":
        assert np.isnan(ds.auc.item()) and ds.auc_low.item() < want < ds.auc_high.item()
        (note,) = ds.attrs["auc_notes"]
        assert [str(w.message) for w in caught] == [note]
        assert caught[0].category is exact_auc.ExactAucWarning
        assert note.startswith(f"system-1: exact AUC not computed: its mixed score bins hold "
                               f"{n_s:,} targets, over the budget bosaris_dask.auc-limit = "
                               f"{limit:,}; reporting bounds 0.")  # fmt: skip
    else:
        assert ds.auc.item() == want and not caught and "auc_notes" not in ds.attrs


def test_non_targets_as_the_smaller_class():
    rng = np.random.default_rng(4)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(30, 30), p=[0.15, 0.85])
    values = rng.normal(size=mask.shape) + mask
    key = make_key(range(30), range(30), mask, chunks=(8, 11))
    scores = make_scores(range(30), range(30), values, chunks=(13, 7))
    (n_s,), (n_o,) = _small_counts([scores], key, 3)
    assert 0 < n_s < n_o
    patch, conf = _coarse(3)
    with patch, conf:
        (summary,) = metrics.pooled_evaluation(scores, key, priors=[0.5])[1]
    assert not exact_auc.mixed_bins(summary).small_is_target
    ds = _evaluate(scores, key, 3, n_s)
    assert ds.auc.item() == float(_mann_whitney(values[mask == 1], values[mask == -1]))


def test_no_mixed_bin_costs_no_pass():
    key = make_key(["m"], list("abcd"), [[1, 1, -1, -1]])
    scores = make_scores(["m"], list("abcd"), [[2.0, 0.5, 0.5, -1.0]])
    plain = metrics.evaluate(scores, key, priors=[0.5])
    ds = metrics.evaluate(scores, key, priors=[0.5], exact_auc=True)
    assert ds.attrs["passes"] == plain.attrs["passes"]
    assert ds.auc.item() == plain.auc.item() == 0.875  # 3 pairs ordered, one tie, of 4


def test_mixed_twice_u_counts_pairs_inside_bins_only():
    from dataclasses import replace

    from bosaris_dask.measures import summary_from_arrays
    from bosaris_dask.passes.keys import order_keys

    tar, non = [1.0, 3.0, 3.0, 10.0], [2.0, 3.0, 9.0, 11.0, -4.0]
    # three coarse bins: the negative scores, [0, 2) and [2, inf]; only the last is mixed
    lo = np.array([0, 1 << 63, 3 << 62], dtype=np.uint64)
    assert order_keys(np.array([0.0, 2.0])).tolist() == lo[1:].tolist()
    coarse = replace(summary_from_arrays(tar, non), lo=lo, bits=np.array([63, 62, 62], np.int8),
                     n_tar=np.array([0, 1, 3]), n_non=np.array([1, 0, 4]))  # fmt: skip
    b = exact_auc.mixed_bins(coarse)
    assert b.small_is_target and b.n_small.tolist() == [3] and b.n_other.tolist() == [4]
    keys = lambda v: np.sort(order_keys(np.array(v)))  # noqa: E731
    twice_u, found = exact_auc.mixed_twice_u(b, keys([3.0, 3.0, 10.0]), keys(non))
    # each 3 beats 2 and ties 3 (2 + 1, twice); 10 beats 2, 3 and 9 (2 * 3)
    assert (twice_u, found) == (12, 4)
    flipped = replace(b, small_is_target=False, n_small=b.n_other, n_other=b.n_small)
    twice_v, found = exact_auc.mixed_twice_u(flipped, keys([2.0, 3.0, 9.0, 11.0]), keys(tar))
    # the non-targets' view: pairs with the non-target above count, 4 + 1 + 1 + 2·... in total
    # 2·(3·4) pairs minus the targets' twice-U
    assert (twice_v, found) == (2 * 3 * 4 - 12, 3)


def _text_scores(tmp_path):
    rng = np.random.default_rng(5)
    lines = [f"m{i} t{i} {float(s)!r} target" for i, s in enumerate(rng.normal(1, 1, 60))]
    lines += [f"m{i} n{i} {float(s)!r} nontarget" for i, s in enumerate(rng.normal(-1, 1, 240))]
    path = tmp_path / "scores.txt"
    path.write_text("\n".join(lines) + "\n")
    tar = np.array([float(x.split()[2]) for x in lines[:60]])
    return path, tar, np.array([float(x.split()[2]) for x in lines[60:]])


def test_cli_exact_auc_and_its_one_line_warning(tmp_path, capsys):
    from bosaris_dask.cli import main

    path, tar, non = _text_scores(tmp_path)
    out = tmp_path / "r.json"
    argv = ["evaluate", "--format", "wespeaker", "--scores", str(path), "-q", "--json", str(out),
            "--exact-auc"]  # fmt: skip
    patch, conf = _coarse(2)
    with patch, conf:
        assert main(argv) == 0
        doc = json.loads(out.read_text())
        exact = float(_mann_whitney(tar, non))
        assert doc["systems"][0]["auc"] == exact
        captured = capsys.readouterr()
        assert "auc_notes" not in doc and captured.err == ""
        table = captured.out.splitlines()  # the table says it too, not only the JSON
        assert table[table.index("AUC (exact Mann-Whitney, ties counted half)") + 1].split() == [
            "scores", f"{exact:.6f}"]  # fmt: skip
        with dask.config.set({"bosaris_dask.auc-limit": 1}):
            assert main(argv) == 0
    doc = json.loads(out.read_text())
    captured = capsys.readouterr()
    row = captured.out.splitlines()[-1].split()
    low, high = doc["systems"][0]["auc_low"], doc["systems"][0]["auc_high"]
    assert row == ["scores", f"{low:.6f}..{high:.6f}", "(bounds)"]
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: scores: exact AUC not computed: its ")
    assert doc["auc_notes"] == [err[0].removeprefix("warning: ")]
    entry = doc["systems"][0]
    assert entry["auc"] is None and entry["auc_low"] < float(_mann_whitney(tar, non))


class _FakeClient:
    def __init__(self, **workers):
        self.workers = workers

    def scheduler_info(self, n_workers):
        return {"workers": self.workers}


def test_a_worker_too_small_is_refused_before_the_extra_passes(monkeypatch):
    from bosaris_dask.errors import MemoryLimitError
    from bosaris_dask.passes import runner

    rng = np.random.default_rng(3)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(40, 50), p=[0.8, 0.2])
    values = rng.normal(size=mask.shape) + mask
    key = make_key(range(40), range(50), mask, chunks=(10, 25))
    scores = make_scores(range(40), range(50), values, chunks=(10, 25))
    patch, conf = _coarse(4)
    with patch, conf:
        _, summaries = metrics.pooled_evaluation(scores, key, priors=[0.5])
    mb = 2**20
    tiny = {"memory_limit": 210 * mb, "nthreads": 1, "metrics": {"memory": 209 * mb}}
    monkeypatch.setattr(runner, "current_client", lambda: _FakeClient(w1=tiny))
    computed = []
    monkeypatch.setattr(runner, "compute", lambda *a, **k: computed.append(a))
    with pytest.raises(MemoryLimitError, match=r"^worker w1 would need about"):
        exact_auc.exact_aucs(scores, key, summaries)
    assert computed == []
    need = exact_auc.auc_task_memory(pass_inputs([scores], key)[0], 100, 1000, True, 8)
    assert need.inputs == 10 * 25 * (1 + 8 + 1) and need.merge == 3 * 1100 * 8


def test_with_bootstrap_intervals_the_point_auc_is_exact():
    from bosaris_dask.conditions import condition_table

    rng = np.random.default_rng(8)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(12, 20), p=[0.7, 0.3])
    values = rng.normal(size=mask.shape) + mask
    key = make_key(range(12), range(20), mask, chunks=(5, 7))
    scores = make_scores(range(12), range(20), values, chunks=(5, 7))
    table = condition_table("model", list(range(12)), {"spk": np.arange(12) % 4})
    (n_s,), _ = _small_counts([scores], key, 3)
    assert n_s
    patch, conf = _coarse(3, auc_limit=n_s)
    with patch, conf:
        ds = metrics.evaluate(scores, key, priors=[0.5], exact_auc=True, conditions=[table],
                              resample=["model.spk"], bootstrap=5, seed=1)  # fmt: skip
    assert ds.auc.item() == float(_mann_whitney(values[mask == 1], values[mask == -1]))
    assert "eer_ci" in ds


def test_a_budget_the_targets_overflow_falls_back_to_the_same_value():
    """Pass 1's pull of the targets gives up past the budget (a chunk or a merge holds more):
    the passes after the evaluation then count the same exact value."""
    rng = np.random.default_rng(5)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(30, 40), p=[0.7, 0.3])
    values = np.round(rng.normal(size=mask.shape) + mask, 2)
    key = make_key(range(30), range(40), mask, chunks=(10, 20))
    scores = make_scores(range(30), range(40), values, chunks=(10, 20))
    (n_s,), _ = _small_counts([scores], key, 4)
    patch, conf = _coarse(4)
    with patch, conf:
        plain = metrics.evaluate(scores, key, priors=[0.5])
    rides = _evaluate(scores, key, 4, int((mask == 1).sum()))
    falls_back = _evaluate(scores, key, 4, n_s)  # under all targets
    assert 0 < n_s < int((mask == 1).sum())
    want = float(_mann_whitney(values[mask == 1], values[mask == -1]))
    assert rides.auc.item() == falls_back.auc.item() == want
    assert rides.attrs["passes"] == plain.attrs["passes"] > 1
    assert falls_back.attrs["passes"] == plain.attrs["passes"] + 2


def test_pass_1_memory_check_counts_the_target_keys_riding_along(monkeypatch):
    """The riding pull of every target's key (up to auc-limit per system) is in pass 1's memory
    check: a chunk holds its keys twice (to sort), a merge its parts and their merge."""
    import dask

    from bosaris_dask.passes import runner

    rng = np.random.default_rng(5)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(40, 50), p=[0.8, 0.2])
    key = make_key(range(40), range(50), mask, chunks=(10, 25))  # 250 trials a chunk, 8 chunks
    scores = make_scores(range(40), range(50), rng.normal(size=mask.shape) + mask,
                         chunks=(10, 25))  # fmt: skip
    checked = []
    real = runner.memory.check_worker_memory

    def check(need, client):
        checked.append(need)
        return real(need, client)

    monkeypatch.setattr(runner.memory, "check_worker_memory", check)
    firsts = []  # each evaluation's first check is pass 1's
    for exact, limit in ((False, 1000), (True, 1000), (True, 100)):
        checked.clear()
        with dask.config.set({"bosaris_dask.auc-limit": limit}):
            metrics.evaluate(scores, key, priors=[0.5], exact_auc=exact, split_every=4)
        firsts.append(checked[0])
    plain, riding, small = firsts
    for need, per in ((riding, 250 * 8), (small, 100 * 8)):  # min(chunk trials, limit) x 8 B
        assert need.results - plain.results == 2 * per
        assert need.merge - plain.merge == (4 + 1) * per and need.held - plain.held == 4 * per
