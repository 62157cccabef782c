"""Shared pytest configuration: hypothesis profiles (``HYPOTHESIS_PROFILE=ci`` in CI) and how
pytest-xdist shares the tests between its workers (``-n auto --dist loadgroup`` in pyproject)."""

import os
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

#: Most workers ``-n auto`` starts: each test may start a LocalCluster of a few processes.
MAX_WORKERS = 4


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """One worker per core this process may use and one more, at most :data:`MAX_WORKERS`.

    Many tests wait (on a cluster's start, a subprocess's import, a SLURM job): on a 2-core
    machine two workers left a third of the CPU time idle, and three ran the suite in 887 s
    where two took about 1,100 (each test about a fifth slower, three at once).
    """
    affinity = getattr(os, "sched_getaffinity", None)  # Linux; elsewhere all the cores
    cores = len(affinity(0)) if affinity is not None else os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, cores + 1))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """One xdist group per file, so that a module's fixtures (data sets, clusters) are made once;
    one group for all of tests/hpc, whose jobs share one SLURM node and its cores."""
    for item in items:
        path = Path(item.path)
        group = "hpc" if path.parent.name == "hpc" else str(path)
        item.add_marker(pytest.mark.xdist_group(group))
