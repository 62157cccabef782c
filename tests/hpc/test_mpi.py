"""dask-mpi under a real OpenMPI ``mpirun`` on loopback (installed by .ci/setup-hpc.sh)."""

from __future__ import annotations

import sys

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
    assert done.stdout.count("ClusterError: ") == 1  # said by one rank, not by each
    assert not out.exists()


def test_a_command_line_error_prints_once_not_once_per_rank(tmp_path):
    """Every rank parses the arguments; only the one that runs the command says what is
    wrong (it printed the usage and the error three times)."""
    require_mpi()
    command = mpirun_command(3, [sys.executable, "-m", "bosaris_dask.cli", "evaluate", "--key",
                                 "k.zarr", "--scores", "s.zarr", "--prior", "2", "--cluster",
                                 "mpi"])  # fmt: skip
    done = run(command, timeout=120, cwd=tmp_path)
    assert done.returncode != 0
    errors = [line for line in done.stdout.splitlines() if "error:" in line]
    assert len(errors) == 1, done.stdout[-3000:]
    assert errors[0].endswith("error: argument --prior: effective prior 2 is not strictly "
                              "between 0 and 1")  # fmt: skip
    assert done.stdout.count("usage: ") == 1
    # an error of the command itself, met by every rank before the cluster starts: once too
    command = mpirun_command(3, [sys.executable, "-m", "bosaris_dask.cli", "score", "--enrol",
                                 "e.npz", "--test", "t.npz", "--out", "s.zarr", "--header",
                                 "--cluster", "mpi"])  # fmt: skip
    done = run(command, timeout=120, cwd=tmp_path)
    assert done.returncode != 0
    errors = [line for line in done.stdout.splitlines() if "error:" in line]
    assert errors == ["bosaris-dask: error: --header is for a text output, not s.zarr"], (
        done.stdout[-3000:])  # fmt: skip
