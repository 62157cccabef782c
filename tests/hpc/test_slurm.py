"""A real one-node SLURM (installed and started by .ci/setup-hpc.sh): dask-jobqueue worker jobs,
and an ``sbatch`` job that runs the MPI variant."""

from __future__ import annotations

import shlex

import pytest

from tests.hpc._launch import (
    JOB,
    REPO,
    check_sum_result,
    mpirun_command,
    read_result,
    require_mpi,
    require_slurm,
    run,
    sbatch_and_wait,
    slurm_state,
    squeue_ids,
    wait_until_gone,
)

pytestmark = pytest.mark.hpc
N = 1_000_000


def test_cluster_slurm_through_dask_jobqueue(tmp_path, monkeypatch):
    partition = require_slurm()
    pytest.importorskip("dask_jobqueue", reason="dask-jobqueue missing: bosaris-dask[hpc]")
    logs = tmp_path / "logs"
    logs.mkdir()
    # Job settings from a dask config file (as users write ~/.config/dask/jobqueue.yaml) ...
    (tmp_path / "jobqueue.yaml").write_text(
        "jobqueue:\n"
        "  slurm:\n"
        "    cores: 1\n"
        "    memory: 1GB\n"
        "    walltime: '00:02:00'\n"
        f"    log-directory: {logs}\n"
        "    death-timeout: 30\n"
    )
    out = tmp_path / "result.json"
    # ... and the rest from the command line, which wins (walltime here).
    command = [*JOB, "--n", str(N), "--out", str(out), "--min-workers", "2", "--cluster",
               "slurm", "--queue", partition, "--jobs", "2", "--walltime", "00:05:00",
               "--interface", "lo", "--no-dashboard", "--worker-timeout", "240"]  # fmt: skip
    before = squeue_ids()
    monkeypatch.setenv("DASK_CONFIG", str(tmp_path))
    done = run(command, timeout=400, cwd=tmp_path)
    assert done.returncode == 0, f"{done.stdout[-4000:]}\n{slurm_state(tmp_path)}"
    result = read_result(out, done.stdout)
    check_sum_result(result, N)
    job_ids = {w["slurm_job_id"] for w in result["workers"]}
    assert len(result["workers"]) == 2 and len(job_ids) == 2 and None not in job_ids
    assert not job_ids & before
    assert result["client"]["slurm_job_id"] is None  # the client ran here, not in a job
    # The config file was read: the jobs' output went to its log-directory.
    assert {p.name for p in logs.glob("*.out")} >= {f"dask-worker-{j}.out" for j in job_ids}
    # connect cancelled the jobs it submitted when the block ended.
    assert wait_until_gone(job_ids) == set()


def test_sbatch_job_runs_the_mpi_variant(tmp_path):
    partition = require_slurm()
    require_mpi()
    out = tmp_path / "result.json"
    inner = mpirun_command(3, [*JOB, "--n", str(N), "--out", str(out), "--cluster", "mpi",
                               "--interface", "lo", "--no-dashboard"])  # fmt: skip
    script = f"""#!/bin/bash
#SBATCH --job-name=bosaris-hpc-test
#SBATCH --partition={partition}
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#SBATCH --mem=1500M
#SBATCH --time=00:05:00
#SBATCH --output={tmp_path}/slurm-%j.out
set -euo pipefail
cd {shlex.quote(str(REPO))}
echo "job $SLURM_JOB_ID on $(hostname)"
{shlex.join(inner)}
"""
    job_id, log = sbatch_and_wait(script, tmp_path, timeout=240)
    result = read_result(out, log)
    check_sum_result(result, N)
    assert result["client"]["slurm_job_id"] == job_id
    assert result["client"]["mpi_rank"] == "1"
    assert [w["mpi_rank"] for w in result["workers"]] == ["2"]
    assert all(w["slurm_job_id"] == job_id for w in result["workers"])
    assert f"job {job_id} on" in log
    assert wait_until_gone({job_id}) == set()
