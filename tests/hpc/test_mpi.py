"""dask-mpi under a real OpenMPI ``mpirun`` on loopback (installed by .ci/setup-hpc.sh)."""

from __future__ import annotations

import pytest

from tests.hpc._launch import JOB, check_sum_result, mpirun_command, read_result, require_mpi, run

pytestmark = pytest.mark.hpc
N = 2_000_000


def test_mpirun_three_ranks_runs_the_job_once(tmp_path):
    require_mpi()
    out = tmp_path / "result.json"
    command = mpirun_command(3, [*JOB, "--n", str(N), "--out", str(out), "--cluster", "mpi",
                                 "--interface", "lo", "--no-dashboard"])  # fmt: skip
    done = run(command, timeout=180, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-4000:]
    result = read_result(out, done.stdout)
    check_sum_result(result, N)
    # rank 0 is the scheduler, rank 1 ran the job (and only it wrote), rank 2 the one worker.
    assert result["client"]["mpi_rank"] == "1"
    assert [w["mpi_rank"] for w in result["workers"]] == ["2"]
    assert result["scheduler"].startswith("tcp://127.0.0.1:")
    assert not list(tmp_path.glob("*.tmp"))


def test_mpirun_with_too_few_ranks_is_a_clear_error(tmp_path):
    require_mpi()
    out = tmp_path / "result.json"
    command = mpirun_command(2, [*JOB, "--out", str(out), "--cluster", "mpi",
                                 "--interface", "lo"])  # fmt: skip
    done = run(command, timeout=120, cwd=tmp_path)
    assert done.returncode != 0
    assert "ClusterError" in done.stdout and "needs at least 3" in done.stdout
    assert not out.exists()
