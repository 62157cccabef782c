"""The real ``bosaris-dask evaluate`` on the real HPC components, through the examples/hpc scripts
the docs show (sbatch with command-line overrides sized for this one small node), compared with
the same evaluation on the threaded scheduler: the results must be identical."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from tests.hpc._launch import (
    MPI_OPTIONS,
    REPO,
    mpirun_command,
    require_mpi,
    require_slurm,
    run,
    sbatch_and_wait,
    wait_until_gone,
)

pytestmark = pytest.mark.hpc
CLI = [sys.executable, "-m", "bosaris_dask.cli"]
EXAMPLES = REPO / "examples" / "hpc"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A getter of a small simulated key and two systems, and their threaded evaluation.

    Made on first use, so that a test skipped for a missing mpirun or SLURM costs nothing.
    """
    made: list[tuple[Path, dict]] = []

    def get() -> tuple[Path, dict]:
        if not made:
            made.append(_simulate(tmp_path_factory.mktemp("data")))
        return made[0]

    return get


def _simulate(directory: Path) -> tuple[Path, dict]:
    done = run([*CLI, "simulate", "--n-models", "40", "--n-segments", "70", "--systems", "2",
                "--out-dir", str(directory), "--cluster", "threads", "--quiet"],
               timeout=120, cwd=directory)  # fmt: skip
    assert done.returncode == 0, done.stdout
    reference = directory / "reference.json"
    done = run([*CLI, "evaluate", *_inputs(directory), "--cluster", "threads", "--json",
                str(reference)], timeout=120, cwd=directory)  # fmt: skip
    assert done.returncode == 0, done.stdout
    return directory, json.loads(reference.read_text())


def _inputs(directory) -> list[str]:
    # The same systems, priors as the example scripts.
    systems = [["--scores", str(directory / f"system-{k}.zarr")] for k in (1, 2)]
    return ["--key", str(directory / "key.zarr"), *systems[0], *systems[1],
            "--prior", "0.5", "--prior", "0.01", "--prior", "0.001"]  # fmt: skip


def test_evaluate_under_mpirun(data, tmp_path):
    require_mpi()
    directory, reference = data()
    out = tmp_path / "results.json"
    command = mpirun_command(3, [*CLI, "evaluate", *_inputs(directory), "--json", str(out),
                                 "--cluster", "mpi", "--interface", "lo"])  # fmt: skip
    done = run(command, timeout=180, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-4000:]
    assert json.loads(out.read_text()) == reference
    assert done.stdout.count("system-1 ") == 2  # the table is printed once (header + row)


def test_example_slurm_mpi_script(data, tmp_path, monkeypatch):
    partition = require_slurm()
    require_mpi()
    directory, reference = data()
    out = tmp_path / "results.json"
    for name, value in {
        "DATA": str(directory), "OUT": str(out), "MEMORY_LIMIT": "1GB",
        "BOSARIS_DASK": shlex.join(CLI), "MPIRUN_ARGS": shlex.join(MPI_OPTIONS),
        "EXTRA_ARGS": "--interface lo",
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    # 3 ranks on one CPU (--overcommit) instead of 18 ranks of 4 cores.
    options = [f"--partition={partition}", "--ntasks=3", "--overcommit", "--cpus-per-task=1",
               "--mem-per-cpu=1500M", "--time=5", f"--output={tmp_path}/slurm-%j.out"]  # fmt: skip
    job_id, log = sbatch_and_wait(EXAMPLES / "slurm-mpi.sh", tmp_path, timeout=240,
                                  options=options)  # fmt: skip
    assert out.exists(), log
    assert json.loads(out.read_text()) == reference
    assert wait_until_gone({job_id}) == set()


def test_example_slurm_jobqueue_script(data, tmp_path, monkeypatch):
    partition = require_slurm()
    pytest.importorskip("dask_jobqueue", reason="dask-jobqueue missing: bosaris-dask[hpc]")
    directory, reference = data()
    out = tmp_path / "results.json"
    # The example jobqueue.yaml, with its job size overridden on the command line to fit here.
    for name, value in {
        "DATA": str(directory), "OUT": str(out), "JOBS": "1", "DASK_CONFIG": str(EXAMPLES),
        "BOSARIS_DASK": shlex.join(CLI),
        "EXTRA_ARGS": f"--queue {partition} --cores 1 --memory 1GB --workers 1 "
                      "--walltime 00:08:00 --interface lo --worker-timeout 240",
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    options = [f"--partition={partition}", "--cpus-per-task=1", "--mem=1G", "--time=8",
               f"--output={tmp_path}/slurm-%j.out"]  # fmt: skip
    job_id, log = sbatch_and_wait(EXAMPLES / "slurm-jobqueue.sh", tmp_path, timeout=400,
                                  options=options)  # fmt: skip
    assert out.exists(), log
    assert json.loads(out.read_text()) == reference
    # The worker job wrote its log where the example config says (relative to the submit dir).
    worker_logs = list((tmp_path / "dask-logs").glob("bosaris-worker-*.out"))
    assert len(worker_logs) == 1, log
    worker_job = worker_logs[0].stem.removeprefix("bosaris-worker-")
    assert wait_until_gone({job_id, worker_job}) == set()
