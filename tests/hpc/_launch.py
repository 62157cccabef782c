"""Launch machinery for the hpc tests: commands under mpirun, srun-less sbatch jobs, cleanup.

Every launch is bounded in time and cleaned up (process group killed, job cancelled) whatever
happens, and everything binds to loopback.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: The command the hpc tests run; swap for ``[sys.executable, "-m", "bosaris_dask.cli", ...]``.
JOB = [sys.executable, str(Path(__file__).with_name("dask_job.py"))]
#: OpenMPI options: loopback only, TCP, and allowed to run as root (CI runs as root).
MPI_OPTIONS = [
    "--oversubscribe",
    "--mca", "btl", "self,tcp",
    "--mca", "btl_tcp_if_include", "lo",
    "--mca", "oob_tcp_if_include", "lo",
]  # fmt: skip


def job_env() -> dict[str, str]:
    """Environment for launched jobs: the repo importable, OpenMPI allowed to run as root."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return env


def require_mpi() -> str:
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("mpirun not found: install OpenMPI with .ci/setup-hpc.sh")
    pytest.importorskip("mpi4py", reason="mpi4py missing: pip install 'bosaris-dask[hpc]'")
    pytest.importorskip("dask_mpi", reason="dask-mpi missing: pip install 'bosaris-dask[hpc]'")
    return mpirun


def require_slurm() -> str:
    """Return the default partition of a running SLURM; skip when SLURM is not installed.

    Waits first for every job of this user to be gone: the hpc tests run one at a time and each
    sizes its jobs to the whole one-node CI SLURM, so an earlier test's job still completing (or
    a worker job it left) would keep this test's jobs queued until their timeouts.
    """
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        pytest.skip("sinfo/sbatch not found: install and start SLURM with .ci/setup-hpc.sh")
    left = wait_until_gone(our_job_ids(), timeout=120)
    if left:
        pytest.fail(f"jobs {sorted(left)} of an earlier test still queued after 120 s:\n"
                    f"{slurm_state()}")  # fmt: skip
    deadline = time.monotonic() + 90  # a node still "completing" an earlier test's job
    while True:
        out = subprocess.run(["sinfo", "-h", "-o", "%P %T"], capture_output=True, text=True,
                             timeout=30)  # fmt: skip
        if out.returncode != 0:
            pytest.fail(f"SLURM is installed but does not answer (start it with "
                        f".ci/setup-hpc.sh): {out.stderr.strip()}")  # fmt: skip
        rows = [line.split() for line in out.stdout.splitlines() if line.strip()]
        usable = [p for p, state in rows if state.startswith(("idle", "mix", "alloc"))]
        if usable:
            break
        if time.monotonic() > deadline:
            pytest.fail(f"no SLURM partition with a usable node after 90 s (run "
                        f".ci/setup-hpc.sh):\n{slurm_state()}")  # fmt: skip
        time.sleep(1)
    default = [p for p in usable if p.endswith("*")]
    return (default or usable)[0].rstrip("*")


def mpirun_command(n: int, command: list[str]) -> list[str]:
    return [shutil.which("mpirun") or "mpirun", "-n", str(n), *MPI_OPTIONS, *command]


def run(command: list[str], timeout: float, cwd: Path) -> subprocess.CompletedProcess:
    """Run ``command`` in its own process group; kill the whole group on timeout."""
    proc = subprocess.Popen(command, cwd=cwd, env=job_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                            start_new_session=True)  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{shlex.join(command)} ran past {timeout} s:\n{out[-4000:]}")
    finally:
        try:  # strays (scheduler or worker ranks) must not outlive the test
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(command, proc.returncode, out, None)


def sbatch_and_wait(
    script: str | Path, directory: Path, timeout: float, options: Sequence[str] = ()
) -> tuple[str, str]:
    """Submit a job with ``sbatch`` from ``directory``, wait for it; return (job id, its output).

    ``script`` is the script's text or a path to it; ``options`` go on sbatch's command line
    (where they win over the script's ``#SBATCH`` lines). The job's state is polled every half
    second (``sbatch --wait`` polls at growing intervals: up to half a minute lost per job). A
    job still running after ``timeout`` seconds is cancelled and the test fails; so does a job
    that ends in any state but COMPLETED with exit code 0.
    """
    if isinstance(script, str):
        path = directory / "job.sh"
        path.write_text(script)
    else:
        path = script
    command = ["sbatch", "--parsable", *options, str(path)]
    submitted = subprocess.run(command, cwd=directory, env=job_env(), capture_output=True,
                               text=True, timeout=60)  # fmt: skip
    if submitted.returncode != 0:
        pytest.fail(f"sbatch refused {path}: {submitted.stderr}")
    job_id = submitted.stdout.strip().split(";")[0]
    deadline = time.monotonic() + timeout
    state, exit_code = "PENDING", ""
    while True:
        fields = _job_fields(job_id)
        if not fields:
            state = "UNKNOWN (its record is gone)"
            break
        state, exit_code = fields.get("JobState", state), fields.get("ExitCode", exit_code)
        if state not in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED"):
            break
        if time.monotonic() > deadline:
            subprocess.run(["scancel", job_id], timeout=30)
            pytest.fail(f"sbatch job {job_id} ran past {timeout} s:\n"
                        f"{slurm_state(directory)}")  # fmt: skip
        time.sleep(0.5)
    if state != "COMPLETED" or exit_code != "0:0":
        pytest.fail(f"sbatch job {job_id} ended {state} (exit {exit_code}):\n"
                    f"{slurm_state(directory)}")  # fmt: skip
    return job_id, _job_output(directory, tail=None)


def _job_fields(job_id: str) -> dict[str, str]:
    """``scontrol show job`` as a dict; empty once the job's record is gone (MinJobAge)."""
    out = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True,
                         text=True, timeout=30)  # fmt: skip
    pairs = (item.split("=", 1) for item in out.stdout.split() if "=" in item)
    return dict(pairs) if out.returncode == 0 else {}


def _job_output(directory: Path, tail: int | None = 4000) -> str:
    text = "\n".join(p.read_text() for p in sorted(directory.glob("slurm-*.out")))
    return text if tail is None else text[-tail:]


def squeue_ids() -> set[str]:
    out = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True,
                         timeout=30)  # fmt: skip
    return set(out.stdout.split())


def our_job_ids() -> set[str]:
    """The ids of this user's jobs in the queue (pending, running or completing)."""
    out = subprocess.run(["squeue", "-h", "-u", str(os.getuid()), "-o", "%i"],
                         capture_output=True, text=True, timeout=30)  # fmt: skip
    return set(out.stdout.split())


def slurm_state(directory: Path | None = None, tail: int = 4000) -> str:
    """What a failed hpc test prints to say why a job did not run: the queue with each job's
    state and reason, the nodes' CPUs (allocated/idle/other/total) and why any is down, and the
    end of every job output file under ``directory`` (the tests' ``slurm-*.out``, the worker
    jobs' logs)."""
    commands = [["squeue", "-o", "%.8i %.20j %.10T %.6C %.8m %.10M %R"],
                ["sinfo", "-N", "-o", "%N %T CPUs(A/I/O/T)=%C memory=%m free=%e"],
                ["sinfo", "-R"]]  # fmt: skip
    parts = []
    for command in commands:
        out = subprocess.run(command, capture_output=True, text=True, timeout=30)
        parts.append(f"$ {shlex.join(command)}\n{out.stdout}{out.stderr}")
    for path in sorted(directory.rglob("*.out")) if directory is not None else ():
        text = path.read_text(errors="replace")
        parts.append(f"--- {path.relative_to(directory)} (last {tail} characters)\n{text[-tail:]}")
    return "\n".join(parts)


def wait_until_gone(job_ids: set[str], timeout: float = 60) -> set[str]:
    deadline = time.monotonic() + timeout
    while (left := job_ids & squeue_ids()) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def read_result(path: Path, log: str) -> dict:
    assert path.exists(), f"the job wrote no result:\n{log[-4000:]}"
    return json.loads(path.read_text())


def check_sum_result(result: dict, n: int) -> None:
    """The check for :data:`JOB` run with ``--n n``; swap with the command."""
    assert result["total"] == sum(range(0, 3 * n, 3)) + n == result["expected"]
    assert result["workers"], "no worker ran the job"
    worker_pids = {w["pid"] for w in result["workers"]}
    assert result["client"]["pid"] not in worker_pids
