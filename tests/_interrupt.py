"""Kill the real ``bosaris-dask`` command mid-write and look at what it left behind.

Shared by ``tests/test_interrupted_runs.py`` (one kill per command, as soon as the write is
under way) and ``benchmarks/kill_campaign.py`` (many kills at random times).

A *case* is one command line whose outputs are replaced atomically. Its ``outputs`` appear all
together or not at all: a run killed while writing leaves every previous output byte for byte
(or nothing, where there was none). Its ``models`` (the JSON model of ``calibrate`` and
``fuse``) are written, atomically too, before the scores are: after a kill a model file is the
previous one or the complete new one.
"""

from __future__ import annotations

import hashlib
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import xarray as xr

from bosaris_dask import io
from bosaris_dask.calibration import apply_model, load_model
from bosaris_dask.cli import main

CLI = (sys.executable, "-m", "bosaris_dask.cli")
TAIL = ("-q", "--cluster", "threads")

#: Sizes (models, segments) of the data a case writes; a run that finishes before it is killed
#: is repeated at the next size.
SCALES = ((500, 2000), (1000, 4000), (2000, 8000))

Snapshot = dict[str, str] | None


# --------------------------------------------------------------------------------------------
# looking at a directory
# --------------------------------------------------------------------------------------------


def snapshot(path: Path) -> Snapshot:
    """SHA-256 of every file under ``path`` by relative name (``""`` for a file); None if absent."""
    if not path.exists() and not path.is_symlink():
        return None

    def digest(p: Path) -> str:
        return hashlib.sha256(p.read_bytes()).hexdigest()

    if not path.is_dir():
        return {"": digest(path)}
    files = sorted(p for p in path.rglob("*") if p.is_file())
    return {p.relative_to(path).as_posix(): digest(p) for p in files}


def writing(directory: Path, name: str) -> bool:
    """Whether a hidden temporary of ``name`` holds some bytes: its writer is under way."""
    for tmp in directory.glob(f".{name}.tmp-*"):
        try:
            files = [tmp] if tmp.is_file() else [p for p in tmp.rglob("*") if p.is_file()]
            if any(p.stat().st_size > 0 for p in files):
                return True
        except OSError:  # renamed or removed while we looked
            continue
    return False


def is_temporary_of(entry: str, names: tuple[str, ...]) -> bool:
    """Whether ``entry`` is a hidden temporary (``.NAME.tmp-<12 hex>``) of one of ``names``."""
    return any(re.fullmatch(rf"\.{re.escape(n)}\.tmp-[0-9a-f]{{12}}", entry) for n in names)


def same_trials(got: xr.Dataset, expected: xr.Dataset) -> None:
    """Assert equal ids and equal values of every variable.

    Text holds the shortest decimal that reads back as the same float32 but reads as float64:
    values are compared in the expected dtype.
    """
    assert got.attrs["bosaris_kind"] == expected.attrs["bosaris_kind"]
    assert sorted(got.variables) == sorted(expected.variables)
    for name in expected.variables:
        want = expected[name].values
        values = got[name].values.astype(want.dtype) if want.dtype.kind == "f" else got[name].values
        np.testing.assert_array_equal(values, want, err_msg=name)


# --------------------------------------------------------------------------------------------
# killing
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kill:
    """What happened to one run: killed by the signal, or exited by itself first."""

    killed: bool
    returncode: int
    stderr: str
    ready_s: float  #: seconds from the start until the write was seen under way


def kill_when(
    args: list[str],
    ready: Callable[[], bool],
    *,
    delay_s: float = 0.0,
    timeout_s: float = 120,
    env: dict[str, str] | None = None,
    sig: signal.Signals = signal.SIGKILL,
) -> Kill:
    """Run the CLI with ``args``; send it ``sig`` ``delay_s`` seconds after ``ready()`` first
    holds.

    A run that exits before that is not signalled (``Kill.killed`` is False). ``env`` replaces
    the environment of the command.
    """
    proc = subprocess.Popen(
        [*CLI, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )
    start = time.monotonic()
    ready_s = float("nan")
    try:
        while proc.poll() is None:
            if ready():
                ready_s = time.monotonic() - start
                time.sleep(delay_s)
                break
            if time.monotonic() - start > timeout_s:
                raise TimeoutError(f"{args[0]} did not start writing in {timeout_s} s")
            time.sleep(0.002)
    finally:
        signalled = proc.poll() is None
        if signalled:
            proc.send_signal(sig)
        _, stderr = proc.communicate()
    killed = proc.returncode == -signal.SIGKILL if sig == signal.SIGKILL else signalled
    return Kill(killed, proc.returncode, stderr, ready_s)


# --------------------------------------------------------------------------------------------
# the cases
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Inputs:
    """A small training set and a bigger one at some scale (key and two systems, zarr)."""

    small: Path
    big: Path
    scale: tuple[int, int]


def simulate_args(scale: tuple[int, int], out: Path, seed: int = 0) -> list[str]:
    models, segments = scale
    return ["simulate", "--n-models", str(models), "--n-segments", str(segments), "--systems", "2",
            "--seed", str(seed), "--out-dir", str(out), *TAIL]  # fmt: skip


def make_inputs(root: Path, scale: tuple[int, int]) -> Inputs:
    """Simulate (in this process) the small set once and the big set at ``scale``."""
    small, big = root / "small", root / f"big-{scale[0]}x{scale[1]}"
    if not small.exists():
        assert main(simulate_args((60, 80), small)) == 0
    if not big.exists():
        assert main(simulate_args(scale, big)) == 0
    return Inputs(small, big, scale)


def _scores(base: Path, k: int) -> str:
    return str(base / f"system-{k}.zarr")


def _read_big(name: str) -> Callable[[Inputs, Path], xr.Dataset]:
    return lambda data, out: io.read(data.big / name)


def _applied(model: str, systems: tuple[int, ...]) -> Callable[[Inputs, Path], xr.Dataset]:
    """The big systems through the model file the run wrote."""

    def expected(data: Inputs, out: Path) -> xr.Dataset:
        scores = [io.read(_scores(data.big, k)) for k in systems]
        return apply_model(load_model(out / model), scores if len(scores) > 1 else scores[0])

    return expected


@dataclass(frozen=True)
class Case:
    """One command line, what it writes and what the outputs must hold."""

    name: str
    command: Callable[[Inputs, Path], list[str]]  #: the run that is killed, then rerun
    previous: Callable[[Inputs, Path], list[str]]  #: a different run, for previous outputs
    expected: dict[str, Callable[[Inputs, Path], xr.Dataset]]  #: output name -> its content
    watched: str  #: the output whose temporary shows the write is under way
    models: tuple[str, ...] = field(default=())

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(self.expected)


def _convert(name: str) -> Case:
    return Case(
        f"convert-{name.rsplit('.', 1)[1]}",
        lambda d, o: ["convert", _scores(d.big, 1), str(o / name), "-q"],
        lambda d, o: ["convert", _scores(d.small, 2), str(o / name), "-q"],
        {name: _read_big("system-1.zarr")},
        watched=name,
    )


def _training_args(
    command: str, model: str, output: str, systems: tuple[int, ...], *, previous: bool
) -> Callable[[Inputs, Path], list[str]]:
    """Train on the small set and apply to the big one; a previous run differs in its prior,
    the order of the systems and applies to the small set."""

    def args(d: Inputs, o: Path) -> list[str]:
        order = systems[::-1] if previous else systems
        train = [a for k in order for a in ("--scores", _scores(d.small, k))]
        apply = [_scores(d.small if previous else d.big, k) for k in order]
        prior = ["--train-prior", "0.1"] if previous else []
        apply_flags = [a for path in apply for a in ("--apply", path)]
        return [command, "--key", str(d.small / "key.zarr"), *train, *prior,
                "--model-out", str(o / model), *apply_flags, "--out", str(o / output),
                *TAIL]  # fmt: skip

    return args


def _training(command: str, model: str, output: str, systems: tuple[int, ...]) -> Case:
    return Case(
        command,
        _training_args(command, model, output, systems, previous=False),
        _training_args(command, model, output, systems, previous=True),
        {output: _applied(model, systems)},
        watched=output,
        models=(model,),
    )


CASES = (
    _convert("out.zarr"),
    _convert("out.h5"),
    _convert("out.txt"),
    Case(
        "simulate",
        lambda d, o: simulate_args(d.scale, o),
        lambda d, o: simulate_args((30, 40), o, seed=1),
        {n: _read_big(n) for n in ("key.zarr", "system-1.zarr", "system-2.zarr")},
        watched="system-1.zarr",
    ),
    _training("calibrate", "model.json", "cal.zarr", (1,)),
    _training("fuse", "fusion.json", "fused.h5", (1, 2)),
)


def text_input(data: Inputs) -> Path:
    """The big set's first system as a BOSARIS text score file (written once, here)."""
    path = data.big / "system-1.txt"
    if not path.exists():
        io.write(io.read(data.big / "system-1.zarr"), path)
    return path


#: Cases only the kill campaign runs (reading a text file costs more than a unit test should).
EXTRA_CASES = (
    Case(
        "convert-from-txt",
        lambda d, o: ["convert", str(text_input(d)), str(o / "out.zarr"), "-q"],
        lambda d, o: ["convert", _scores(d.small, 2), str(o / "out.zarr"), "-q"],
        {"out.zarr": _read_big("system-1.zarr")},
        watched="out.zarr",
    ),
)


def check_complete(case: Case, data: Inputs, out: Path, names: tuple[str, ...]) -> None:
    """Assert that the outputs ``names`` hold exactly what an uninterrupted run writes."""
    for name in names:
        same_trials(io.read(out / name).compute(), case.expected[name](data, out).compute())
