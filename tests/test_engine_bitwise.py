"""The full JSON of an evaluation is bit-identical across chunkings, merge trees, system orders
and schedulers (threads, and a LocalCluster of two worker processes)."""

from __future__ import annotations

import functools
import json

import dask
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bosaris_dask import metrics, report
from bosaris_dask.trials import make_key, make_scores

N_M, N_S = 40, 90


@pytest.fixture(scope="module")
def client():
    """One LocalCluster of two single-threaded worker processes for the whole module."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,  # fmt: skip
        Client(cluster, set_as_default=False) as c,
    ):
        yield c


@functools.cache
def _systems():
    rng = np.random.default_rng(7)
    mask = rng.choice(np.array([-1, 0, 1], dtype=np.int8), size=(N_M, N_S), p=[0.75, 0.05, 0.2])
    a = rng.normal(size=(N_M, N_S)) * 2.5 + mask * 2  # float64: several refinement rounds
    b = (np.round((rng.normal(size=(N_M, N_S)) + mask) * 8) / 8).astype(np.float32)  # ties
    return mask, {"alpha": a, "beta": b}


def _chunks(draw, n: int) -> tuple[int, ...]:
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=5)))
    edges = [0, *cuts, n]
    return tuple(b - a for a, b in zip(edges[:-1], edges[1:], strict=True))


@functools.cache
def _baseline() -> str:
    mask, systems = _systems()
    return _evaluate_json(mask, systems, ["alpha", "beta"], (N_M, N_S), 8)  # one chunk


def _evaluate_json(mask, systems, order, chunks, split_every) -> str:
    key = make_key(range(N_M), range(N_S), mask, chunks=chunks)
    scores = [make_scores(range(N_M), range(N_S), systems[n], chunks=chunks) for n in order]
    ds = metrics.evaluate(scores, key, names=order, split_every=split_every)
    doc = report.to_json_dict(ds)
    doc["systems"] = sorted(doc["systems"], key=lambda s: s["name"])
    return json.dumps(doc)  # floats written with repr: every bit shows


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(data=st.data(), split_every=st.integers(2, 6), order=st.permutations(["alpha", "beta"]))
def test_evaluate_json_is_bit_identical_everywhere(client, data, split_every, order):
    mask, systems = _systems()
    baseline = _baseline()
    chunks = (_chunks(data.draw, N_M), _chunks(data.draw, N_S))
    with dask.config.set(scheduler="threads"):
        threads = _evaluate_json(mask, systems, list(order), chunks, split_every)
    chunks2 = (_chunks(data.draw, N_M), _chunks(data.draw, N_S))
    scheduler = client.cluster.scheduler
    before = scheduler.transition_counter
    with client.as_current():
        cluster = _evaluate_json(mask, systems, list(order), chunks2, split_every)
    assert scheduler.transition_counter > before  # the work ran on the cluster
    assert threads == baseline
    assert cluster == baseline


def test_in_memory_evaluation_reports_the_same_bits():
    mask, systems = _systems()
    doc = json.loads(_baseline())
    for name, values in systems.items():
        tar, non = values[mask == 1], values[mask == -1]
        mem = report.to_json_dict(metrics.evaluate_arrays(tar, non, name=name))
        (got,) = mem["systems"]
        (want,) = [s for s in doc["systems"] if s["name"] == name]
        for field in ("cllr", "min_cllr", "eer", "prbep", "n_target", "n_nontarget"):
            assert got[field] == want[field], field
