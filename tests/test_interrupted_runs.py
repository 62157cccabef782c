"""SIGKILL mid-write: outputs stay the previous ones (or absent), and a rerun succeeds.

Each command runs as a real subprocess; it is killed as soon as a hidden temporary of its
output holds some bytes. A run that finished before the signal arrived proves nothing: it is
repeated on bigger data, and the test fails if no run could be caught mid-write.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time

import numpy as np
import pytest

from bosaris_dask.cli import main
from bosaris_dask.errors import StoreError
from bosaris_dask.fusion import LinearFuser
from bosaris_dask.io import atomic
from tests._interrupt import (
    CASES,
    SCALES,
    Case,
    check_complete,
    is_temporary_of,
    kill_when,
    make_inputs,
    snapshot,
    writing,
)


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return tmp_path_factory.mktemp("inputs")


def _kill_mid_write(case: Case, data_root, tmp_path, previous: bool):
    """Kill ``case`` mid-write, at growing sizes until a kill lands before its outputs change.

    Returns the inputs, the output directory and the snapshots of every output before the run
    and after the kill.
    """
    names = (*case.outputs, *case.models)
    attempts = []
    for attempt, scale in enumerate(SCALES):
        data = make_inputs(data_root, scale)
        out = tmp_path / f"run-{attempt}"
        out.mkdir()
        if previous:
            assert main(case.previous(data, out)) == 0
        before = {n: snapshot(out / n) for n in names}
        assert all(before[n] is not None for n in names) == previous
        kill = kill_when(case.command(data, out), lambda out=out: writing(out, case.watched))
        assert kill.killed or kill.returncode == 0, kill.stderr  # no error of its own
        after = {n: snapshot(out / n) for n in names}
        if kill.killed and all(after[n] == before[n] for n in case.outputs):
            return data, out, before, after
        # Too late: the run got past its renames. What it left must then be complete.
        changed = tuple(n for n in case.outputs if after[n] != before[n])
        check_complete(case, data, out, changed)
        how = "killed" if kill.killed else "exited 0"
        attempts.append(f"{scale}: {how} {kill.ready_s:.2f} s in, changed {list(changed)}")
    pytest.fail(f"{case.name}: no kill landed before the outputs changed: {attempts}")


@pytest.mark.parametrize("previous", [True, False], ids=["previous-output", "no-output"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_sigkill_mid_write_keeps_outputs_whole_and_a_rerun_succeeds(
    case, previous, data_root, tmp_path
):
    data, out, before, after = _kill_mid_write(case, data_root, tmp_path, previous)
    names = (*case.outputs, *case.models)
    # (a), (b): every output is the previous one byte for byte, or absent if there was none.
    for name in case.outputs:
        assert after[name] == before[name], name
        assert (out / name).exists() == previous
    leftovers = sorted(p.name for p in out.iterdir() if p.name not in names)
    assert leftovers and all(is_temporary_of(p, names) for p in leftovers), leftovers
    # (d): the rerun ignores the leftovers and writes what an uninterrupted run writes.
    assert main(case.command(data, out)) == 0
    check_complete(case, data, out, case.outputs)
    for name in case.models:  # trained before the kill: the previous model or the new one
        assert after[name] in (before[name], snapshot(out / name)), name
        json.loads((out / name).read_text())
    # (c): the leftovers are the killed run's hidden temporaries, which remove_stale deletes.
    assert sorted(p.name for p in out.iterdir() if p.name not in names) == leftovers
    removed = [p.name for n in names for p in atomic.remove_stale(out / n, min_age_s=0)]
    assert sorted(removed) == leftovers
    assert sorted(os.listdir(out)) == sorted(names)


@pytest.mark.parametrize(
    ("sig", "status", "said"),
    [(signal.SIGTERM, 143, "bosaris-dask: terminated (SIGTERM)"),
     (signal.SIGINT, 130, "bosaris-dask: interrupted")],
    ids=["sigterm", "sigint"],
)  # fmt: skip
def test_a_terminated_or_interrupted_write_unwinds_and_leaves_nothing(
    sig, status, said, data_root, tmp_path
):
    """SIGTERM (a job's walltime, scancel, timeout) unwinds as a Ctrl-C does. Before, it ended
    the process at once, leaving the store's hidden temporary (and a text read's gigabyte of
    scratch files); and either signal, arriving while zarr's own thread wrote the store's
    metadata, left a temporary that thread wrote on after its deletion, and asyncio's 'Task was
    destroyed but it is pending'."""
    case = CASES[0]  # convert to a zarr store
    names = (*case.outputs, *case.models)
    for attempt, scale in enumerate(SCALES):
        data = make_inputs(data_root, scale)
        out = tmp_path / f"run-{attempt}"
        out.mkdir()
        started = lambda out=out: any(is_temporary_of(p, names) for p in os.listdir(out))  # noqa: E731
        run = kill_when(case.command(data, out), started, sig=sig)
        if run.killed and run.returncode != 0:
            break
        shutil.rmtree(out)
    else:
        pytest.fail("no run was signalled before it ended")
    assert run.returncode == status, run.stderr
    assert run.stderr.strip().splitlines()[-1] == said, run.stderr
    assert "Traceback" not in run.stderr and "destroyed" not in run.stderr, run.stderr
    time.sleep(0.5)  # (nothing of the process is left to write)
    assert os.listdir(out) == []


# --------------------------------------------------------------------------------------------
# the pieces, in process
# --------------------------------------------------------------------------------------------


def _fuser() -> LinearFuser:
    return LinearFuser.from_dict(
        {"format": "bosaris_dask.model/1", "kind": "linear_fusion", "prior": 0.5,
         "weights": [1.5, 0.25], "offset": -2.0, "objective": 0.25}
    )  # fmt: skip


def test_model_json_write_failure_keeps_the_previous_model(tmp_path, monkeypatch):
    path = tmp_path / "model.json"
    path.write_text("previous\n")

    def fail_midway(self, text, encoding=None):
        with open(self, "w", encoding=encoding) as f:
            f.write(text[:10])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(type(path), "write_text", fail_midway)
    with pytest.raises(OSError, match="No space left"):
        _fuser().save_json(path)
    monkeypatch.undo()
    assert path.read_text() == "previous\n"
    assert os.listdir(tmp_path) == ["model.json"]  # the partial temporary is gone
    _fuser().save_json(path)
    assert LinearFuser.load_json(path).to_dict() == _fuser().to_dict()
    assert os.listdir(tmp_path) == ["model.json"]


def test_model_json_that_cannot_be_encoded_writes_nothing(tmp_path):
    fuser = _fuser()
    fuser.train_prior = object()  # not JSON: fails before any file is created
    with pytest.raises(TypeError, match="not JSON serializable"):
        fuser.save_json(tmp_path / "model.json")
    assert os.listdir(tmp_path) == []


def test_model_json_into_a_missing_directory_is_a_store_error(tmp_path):
    with pytest.raises(StoreError, match="directory .*nowhere does not exist"):
        _fuser().save_json(tmp_path / "nowhere" / "model.json")


def test_a_temporary_of_a_temporary_is_a_temporary_of_the_final_name(tmp_path):
    """A writer that is atomic on its own, writing into an outer temporary (as simulate does)."""
    final = tmp_path / "s.zarr"
    with atomic.atomic_path(final) as outer, atomic.atomic_path(outer) as inner:
        assert is_temporary_of(outer.name, ("s.zarr",)) and is_temporary_of(inner.name, ("s.zarr",))
        inner.mkdir()
        # killed here: remove_stale of the final name finds the inner temporary
        assert atomic.remove_stale(final, min_age_s=0) == [inner]
        inner.mkdir()
    assert final.is_dir() and os.listdir(tmp_path) == ["s.zarr"]
    # a name that only looks like a temporary keeps its own name
    odd = tmp_path / ".x.tmp-notahexnumber"
    with atomic.atomic_path(odd) as tmp:
        assert tmp.name.startswith("..x.tmp-notahexnumber.tmp-")
        tmp.write_text("x")
    assert odd.read_text() == "x"


def _dirs(tmp_path, names, content):
    """Directory outputs, as zarr stores are (only those may be replaced)."""
    for name in names:
        (tmp_path / name).mkdir()
        (tmp_path / name / "zarr.json").write_text("{}")
        (tmp_path / name / "v").write_text(content)


def test_atomic_paths_replace_all_outputs_together(tmp_path, monkeypatch):
    names = ["key.zarr", "system-1.zarr", "system-2.zarr"]
    _dirs(tmp_path, names, "old")
    seen = []
    remove_path = atomic.remove_path

    def record(path):  # the previous outputs are deleted only once every new one is in place
        seen.append(sorted((tmp_path / n / "v").read_text() for n in names))
        remove_path(path)

    monkeypatch.setattr(atomic, "remove_path", record)
    with atomic.atomic_paths([tmp_path / n for n in names]) as tmps:
        assert [t.name[: t.name.index(".tmp-")] for t in tmps] == [f".{n}" for n in names]
        for t in tmps:
            t.mkdir()
            (t / "v").write_text("new")
    assert seen == [["new"] * 3] * 3
    assert sorted(os.listdir(tmp_path)) == names
    assert all((tmp_path / n / "v").read_text() == "new" for n in names)


def test_atomic_paths_failure_keeps_every_previous_output(tmp_path):
    names = ["a.zarr", "b.zarr"]
    _dirs(tmp_path, names, "old")
    with (
        pytest.raises(RuntimeError, match="disk full"),
        atomic.atomic_paths([tmp_path / n for n in names]) as (a, b),
    ):
        a.mkdir()
        (a / "v").write_text("new")
        b.mkdir()
        raise RuntimeError("disk full")
    assert sorted(os.listdir(tmp_path)) == names
    assert all((tmp_path / n / "v").read_text() == "old" for n in names)
    with (
        pytest.raises(StoreError, match=r"nothing was written for .*b\.zarr"),
        atomic.atomic_paths([tmp_path / n for n in names]) as (a, _),
    ):
        a.mkdir()
    assert sorted(os.listdir(tmp_path)) == names
    assert all((tmp_path / n / "v").read_text() == "old" for n in names)


def test_atomic_paths_failed_rename_cleans_up(tmp_path, monkeypatch):
    names = ["a.zarr", "b.zarr"]
    _dirs(tmp_path, names, "old")
    swap = atomic._swap
    calls = []

    def second_fails(tmp, final):
        calls.append(final.name)
        if len(calls) == 2:
            raise OSError(5, "Input/output error")
        return swap(tmp, final)

    monkeypatch.setattr(atomic, "_swap", second_fails)
    with (
        pytest.raises(OSError, match="Input/output"),
        atomic.atomic_paths([tmp_path / n for n in names]) as tmps,
    ):
        for t in tmps:
            t.mkdir()
            (t / "v").write_text("new")
    # the first output was already in place: it is put back, so the previous set stays whole
    assert sorted(os.listdir(tmp_path)) == names
    assert [(tmp_path / n / "v").read_text() for n in names] == ["old", "old"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_a_rename_puts_the_whole_set_back(tmp_path, monkeypatch, signum):
    # a Ctrl-C that came while a rename was under way was raised after it and before its
    # record: the set was put back all but that one (a new key among the previous systems)
    names = ["key.zarr", "system-1.zarr", "system-2.zarr"]
    _dirs(tmp_path, names, "old")
    swap = atomic._swap
    sent = []

    def signalled(tmp, final):
        moved = swap(tmp, final)
        if final.name == "system-1.zarr" and not sent:
            sent.append(signum)
            os.kill(os.getpid(), signum)  # delivered here, in the main thread
        return moved

    def terminated(*_):
        raise KeyboardInterrupt  # what the command line makes of a SIGTERM

    monkeypatch.setattr(atomic, "_swap", signalled)
    previous = signal.signal(signal.SIGTERM, terminated)
    # (dask_jobqueue.runner, once imported by another test, makes SIGINT a sys.exit)
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with (
            pytest.raises(KeyboardInterrupt),
            atomic.atomic_paths([tmp_path / n for n in names]) as tmps,
        ):
            for t in tmps:
                t.mkdir()
                (t / "v").write_text("new")
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
    assert sorted(os.listdir(tmp_path)) == names
    assert [(tmp_path / n / "v").read_text() for n in names] == ["old"] * 3


@pytest.mark.parametrize("interrupt", [OSError(5, "Input/output error"), KeyboardInterrupt()])
def test_a_set_cut_short_between_renames_keeps_the_previous_run(tmp_path, monkeypatch, interrupt):
    # simulate's key and scores appear together: never a new key beside the previous scores
    argv = ["simulate", "--n-models", "5", "--n-segments", "7", "--systems", "1", "--out-dir",
            str(tmp_path), "-q", "--cluster", "threads"]  # fmt: skip
    assert main(argv) == 0
    swap = atomic._swap

    def cut(tmp, final):
        if final.name == "system-1.zarr":
            raise interrupt
        return swap(tmp, final)

    monkeypatch.setattr(atomic, "_swap", cut)
    status = 130 if isinstance(interrupt, KeyboardInterrupt) else 1  # "interrupted", an error
    assert main([*argv[:2], "9", *argv[3:]]) == status
    from bosaris_dask import io

    assert dict(io.read(tmp_path / "key.zarr").sizes) == {"model": 5, "segment": 7}
    assert dict(io.read(tmp_path / "system-1.zarr").sizes) == {"model": 5, "segment": 7}
    assert sorted(os.listdir(tmp_path)) == ["key.zarr", "system-1.zarr"]


def test_a_directory_that_is_no_store_is_never_replaced(tmp_path, capsys):
    from bosaris_dask import io
    from bosaris_dask.trials import make_scores

    scores = make_scores(["m"], ["s", "t"], [[1.5, -1.0]])
    for name in ("results", "out.zarr", "out.h5", "out.txt"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "thesis.tex").write_text("precious")
        with pytest.raises(StoreError, match="is a directory that is not a zarr store"):
            io.write(scores, tmp_path / name, **({"format": "text"} if name == "results" else {}))
        assert (tmp_path / name / "thesis.tex").read_text() == "precious"
    io.write(scores, tmp_path / "s.zarr")
    argv = ["evaluate", "--key", str(tmp_path / "k.txt"), "--scores", str(tmp_path / "s.zarr"),
            "--json", str(tmp_path / "s.zarr"), "-q", "--cluster", "threads"]  # fmt: skip
    (tmp_path / "k.txt").write_text("m s target\nm t nontarget\n")
    assert main(argv) == 1  # a file never replaces a store (here the input itself)
    assert "is a zarr store (a directory)" in capsys.readouterr().err
    assert io.read(tmp_path / "s.zarr").score.values.tolist() == [[1.5, -1.0]]
    io.write(scores, tmp_path / "s.zarr")  # a store replaces a store, as a file a file


def test_text_reader_spills_to_an_unnamed_file(tmp_path, monkeypatch):
    """A reader killed while it spills parsed records leaves no scratch file behind."""
    from bosaris_dask.io import text
    from bosaris_dask.trials import make_scores

    path = tmp_path / "s.txt"
    text.write_text(make_scores([f"m{i}" for i in range(30)], ["a", "b"], np.ones((30, 2))), path)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(text.collect, "_SPILL_BYTES", 100)
    append, spilled = text.collect._Spill.append, []

    def append_and_look(self, records):
        append(self, records)
        spilled.append(self._file is not None)
        assert os.listdir(scratch) == []  # a kill here would leave nothing named

    monkeypatch.setattr(text.collect._Spill, "append", append_and_look)
    scores = text.read_text(path, scratch_dir=scratch, block_bytes=64)
    assert any(spilled) and scores.score.values.tolist() == [[1.0, 1.0]] * 30
    assert os.listdir(scratch) == []


def test_scratch_memmaps_of_killed_runs_are_swept_by_the_next(tmp_path):
    """A SIGKILLed text read cannot delete its scratch memmaps; the next scratch file does."""
    import subprocess
    import sys

    from bosaris_dask.io import text

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    host = text.scratch._scratch_owner().rsplit("-", 1)[0]
    killed = tmp_path / f"bosaris-text-{host}-{int(dead.stdout)}-abc.dat"
    alive = tmp_path / f"bosaris-text-{text.scratch._scratch_owner()}-def.dat"
    elsewhere = tmp_path / f"bosaris-text-otherhost-{int(dead.stdout)}-ghi.dat"
    unrelated = tmp_path / "bosaris-text-notes.txt"
    for f in (killed, alive, elsewhere, unrelated):
        f.write_bytes(b"x")
    scratch = text.scratch._ScratchFile(tmp_path)
    assert not killed.exists()
    assert alive.exists() and elsewhere.exists() and unrelated.exists()
    assert os.path.basename(scratch.path).startswith(
        f"bosaris-text-{text.scratch._scratch_owner()}-"
    )
    scratch.remove()
    assert not os.path.exists(scratch.path)


def test_a_write_that_the_directory_refuses_names_the_output_not_its_temporary(
    tmp_path, monkeypatch
):
    import builtins

    from bosaris_dask import io
    from bosaris_dask.trials import make_scores

    scores = make_scores(["m"], ["s"], [[0.5]])
    real_open = builtins.open

    def read_only(path, *args, **kwargs):  # as a read-only directory refuses new files
        if ".tmp-" in str(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(builtins, "open", read_only)
        with pytest.raises(StoreError, match=r"cannot write .*/out\.txt: Permission denied$"):
            io.write(scores, tmp_path / "out.txt")  # was "[Errno 13] ... '.out.txt.tmp-...'"
    assert list(tmp_path.iterdir()) == []
    long_name = tmp_path / ("x" * 240 + ".txt")  # the temporary's name would pass NAME_MAX
    with pytest.raises(StoreError, match="its name is too long for the hidden temporary"):
        io.write(scores, long_name)


def test_the_next_write_sweeps_what_killed_writers_left(tmp_path):
    from bosaris_dask import io
    from bosaris_dask.trials import make_scores

    old, fresh = tmp_path / ".out.zarr.tmp-0123456789ab", tmp_path / ".out.zarr.tmp-ba9876543210"
    for leftover in (old, fresh):
        leftover.mkdir()
        (leftover / "c").write_text("partial")
    os.utime(old, (time.time() - 7200, time.time() - 7200))  # a killed write, two hours ago
    io.write(make_scores(["m"], ["s"], [[0.5]]), tmp_path / "out.zarr")
    # the fresh one may be a write still running elsewhere: kept
    assert sorted(p.name for p in tmp_path.iterdir()) == [fresh.name, "out.zarr"]


def test_every_file_and_folder_of_an_output_is_flushed_before_the_rename(tmp_path, monkeypatch):
    # without fsync a crash of the machine after the rename could leave a renamed output whose
    # files the OS had not yet written (empty or short): durable before it is visible
    import dask

    from bosaris_dask import io
    from bosaris_dask.trials import make_scores

    scores = make_scores(["m1", "m2"], ["s1", "s2"], [[0.5, 1.0], [2.0, 3.0]])
    synced: list[tuple[str, bool]] = []  # (path, whether the output was visible then)
    real_fsync = os.fsync
    final = tmp_path / "s.zarr"

    def record(fd):
        synced.append((os.readlink(f"/proc/self/fd/{fd}"), final.exists()))
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", record)
    io.write(scores, tmp_path / "s.zarr")
    written = {
        os.fspath(p.relative_to(tmp_path / "s.zarr")) for p in (tmp_path / "s.zarr").rglob("*")
    }
    flushed = {p.split(".tmp-", 1)[1].partition("/")[2] for p, _ in synced if ".tmp-" in p}
    assert written | {""} <= flushed  # every file and folder, the store's root too
    assert not any(visible for p, visible in synced if ".tmp-" in p)  # before the rename
    synced.clear()
    final = tmp_path / "s.txt"
    io.write(scores, final)
    assert [p for p, v in synced if ".tmp-" in p and not v]
    synced.clear()
    with dask.config.set({"bosaris_dask.fsync": 0}):
        io.write(scores, tmp_path / "t.txt")
    assert not [p for p, _ in synced if ".tmp-" in p]

    def failing(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(StoreError, match=r"cannot write .*/u\.txt: Input/output error$"):
        io.write(scores, tmp_path / "u.txt")
    assert not (tmp_path / "u.txt").exists()


def test_an_output_that_is_an_input_is_refused_before_the_work(tmp_path, capsys):
    # --json scores.txt replaced the scores with the evaluation's JSON once it was done
    key, scores = tmp_path / "k.txt", tmp_path / "s.txt"
    key.write_text("m s target\nm t nontarget\n")
    scores.write_text("m s 1.5\nm t -1\n")
    (tmp_path / "link").symlink_to(scores)
    runs = {
        ("evaluate", "--key", key, "--scores", scores, "--json", scores):
            f"--json {scores} is also an input (--scores {scores})",
        ("evaluate", "--key", key, "--scores", scores, "--json", tmp_path / "link"):
            f"--json {tmp_path / 'link'} is also an input (--scores {scores})",
        ("calibrate", "--key", key, "--scores", scores, "--model-out", key):
            f"--model-out {key} is also an input (--key {key})",
        ("plot", "det", "--key", key, "--scores", scores, "--out", scores):
            f"--out {scores} is also an input (--scores {scores})",
    }  # fmt: skip
    for argv, said in runs.items():
        assert main([str(a) for a in argv] + ["-q", "--cluster", "threads"]) == 1
        assert f"error: {said}: writing it would replace it" in capsys.readouterr().err
    assert key.read_text() == "m s target\nm t nontarget\n"
    assert scores.read_text() == "m s 1.5\nm t -1\n"
    # trials written onto an input replace it, as asked (fuse --apply B --out B)
    assert main(["convert", str(scores), str(scores), "-q"]) == 0


def test_a_link_is_written_through_and_a_pipe_in_place(tmp_path):
    # --json /dev/stdout run as root replaced the system's /dev/stdout with a regular file
    import stat
    import threading

    target = tmp_path / "target.json"
    target.write_text("old")
    (tmp_path / "link.json").symlink_to(target)
    with atomic.atomic_path(tmp_path / "link.json") as tmp:
        tmp.write_text("new")
    assert (tmp_path / "link.json").is_symlink() and target.read_text() == "new"
    (tmp_path / "dangling.json").symlink_to(tmp_path / "nowhere" / "x.json")
    with pytest.raises(StoreError, match=r"dangling.json \(a link to .*nowhere/x.json\): dir"):
        with atomic.atomic_path(tmp_path / "dangling.json") as tmp:
            tmp.write_text("x")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "to-fifo").symlink_to(fifo)
    for output in (fifo, tmp_path / "to-fifo"):
        read: list[str] = []
        reader = threading.Thread(target=lambda read=read: read.append(fifo.read_text()))
        reader.start()
        with atomic.atomic_path(output) as tmp:
            assert tmp == output
            tmp.write_text("through the pipe")
        reader.join(timeout=10)
        assert read == ["through the pipe"] and stat.S_ISFIFO(fifo.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "dangling.json", "fifo", "link.json", "target.json", "to-fifo",
    ]  # fmt: skip


def test_a_sigterm_lost_in_a_finalizer_is_delivered_again():
    """Python raises a signal's exception where the main thread next checks, which can be a
    __del__ or a gc callback (distributed has one): there it is only printed, and a
    SIGTERMed run went on to the end (status 0). It is delivered again, and a real second
    SIGTERM is not needed."""
    import gc

    from bosaris_dask.cli.termination import Terminated, sigterm_unwinds

    class Finalized:
        def __del__(self) -> None:
            signal.raise_signal(signal.SIGTERM)  # its Terminated raised here is only printed

    sigint = signal.getsignal(signal.SIGINT)  # (a test's import of dask-jobqueue may own it)
    with pytest.raises(Terminated):
        with sigterm_unwinds():
            Finalized()
            gc.collect()
            for _ in range(200):  # ... and raised again here
                time.sleep(0.005)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert signal.getsignal(signal.SIGINT) is sigint
