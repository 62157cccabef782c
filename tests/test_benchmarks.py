"""Every script in benchmarks/ runs its body once on tiny data, so that none can rot.

Scripts are imported from their files and their ``main`` is called in this process (their own
subprocesses, such as bench_evaluate's timed children, still run), except fuzz_readers, which
runs pytest itself and so runs in a subprocess. The numpy baseline of bench_evaluate is checked
against the brute-force reference too: a wrong baseline would make every quoted ratio wrong.
"""

from __future__ import annotations

import doctest
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from . import reference as ref

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
SCRIPTS = {
    "ab_adaptive_bins.py",
    "ab_evaluate.py",
    "ab_skip_chunks.py",
    "bench_auc.py",
    "bench_bootstrap.py",
    "bench_cohort.py",
    "bench_condition_tables.py",
    "bench_conditions.py",
    "bench_embeddings.py",
    "bench_evaluate.py",
    "bench_fixed_rates.py",
    "bench_fusion.py",
    "bench_many_conditions.py",
    "bench_small.py",
    "bench_spoofing.py",
    "bench_text_convert.py",
    "bench_text_reader.py",
    "chunk_reads.py",
    "cold_cache.py",
    "floors.py",
    "fuzz_readers.py",
    "kill_campaign.py",
    "make_sparse_bootstrap.py",
    "make_sparse_conditions.py",
    "make_sparse_quality.py",
    "memory_limited.py",
    "pass1_kernel.py",
    "peak_memory.py",
    "profile_passes.py",
    "user_stores.py",
}
PEERS = [m for m in ("llreval", "sklearn") if importlib.util.find_spec(m) is not None]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module", autouse=True)
def _repo_on_path():
    """Subprocesses of the scripts import this checkout's bosaris_dask (and tests/)."""
    with pytest.MonkeyPatch.context() as mp:
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        mp.setenv("PYTHONPATH", path)
        yield


@pytest.fixture(scope="module")
def bench():
    return _load("bench_evaluate")


def test_every_benchmark_script_has_a_tiny_run_here():
    assert {p.name for p in BENCHMARKS.glob("*.py")} == SCRIPTS


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory, bench):
    """bench_evaluate on 40 x 40 simulated trials, every contender once (it simulates them).

    ``ours-local`` is left out: its only difference from ``ours`` is ``connect(cluster="local")``,
    which test_memory_limited runs; a LocalCluster's start would double this test's time.
    """
    workdir = tmp_path_factory.mktemp("bench") / "data"
    modes = ["baseline", "ours", *PEERS]
    record = workdir.parent / "runs.json"
    argv = ["--side", "40", "--repeat", "1", "--workdir", str(workdir), "--json", str(record)]
    summary = bench.main(argv + [a for m in modes for a in ("--mode", m)])
    return workdir, summary, record


def test_bench_evaluate(evaluated):
    _, summary, record = evaluated
    assert summary["trials"] == 1600 and summary["passes"] >= 1
    assert set(summary["ratio_to_ours"]) == {"baseline", "ours", *PEERS}
    assert summary["ratio_to_ours"]["ours"] == 1.0
    assert "cores" in summary["machine"] and summary["cache"].startswith("warm")
    assert record.exists()


def test_ab_evaluate(evaluated, capsys):
    """Two code versions (this checkout twice) x two cases (the same stores twice), threads,
    each process's second evaluation measured."""
    workdir, _, _ = evaluated
    summary = _load("ab_evaluate").main([
        "--workdir", str(workdir), "--code", f"a={ROOT}", "--code", f"b={ROOT}",
        "--case", "x=key.zarr,system-1.zarr", "--case", "y=key.zarr,system-1.zarr",
        "--repeat", "1", "--warm",
    ])  # fmt: skip
    assert list(summary) == ["a/x/threads", "a/y/threads", "b/x/threads", "b/y/threads"]
    assert summary["a/x/threads"]["ratio_wall"] == 1.0
    assert all(row["cpu_s"] > 0 for row in summary.values())
    assert "metrics identical to the first's: True" in capsys.readouterr().out


def test_bench_small(capsys):
    """One code version, one child process: every case evaluated, the same metrics."""
    assert _load("bench_small").main(["--repeat", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out[1:4]] == ["tiny", "demo", "conditions"]
    assert all("(x1.00)" in line for line in out[1:4])
    assert out[4].endswith("metrics identical: True")


def test_bench_many_conditions(capsys):
    """A speaker pair per condition on a tiny demo: the report from the columns agrees with
    each condition's own view (the script asserts it) and the figures are printed."""
    assert _load("bench_many_conditions").main(["--models", "6", "--segments", "10",
                                                "--views", "5"]) == 0  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("6 x 10 trials, ") and out[0].endswith(" conditions")
    assert out[1].startswith("evaluate (CLI, JSON written): ") and "passes" in out[1]
    assert out[2].startswith("report per condition: columns ") and out[2].endswith("x")


def test_ab_evaluate_on_a_users_own_local_cluster(evaluated, capsys):
    """A plain distributed LocalCluster (tuned by the first pass; untuned, the same cluster
    with one config key, is test_malloc's) and ours with one two-thread worker give the
    threads' metrics bit for bit."""
    workdir, _, _ = evaluated
    summary = _load("ab_evaluate").main([
        "--workdir", str(workdir), "--cluster", "threads", "--cluster", "user",
        "--cluster", "local-1x2", "--repeat", "1",
    ])  # fmt: skip
    assert list(summary) == ["this/label/threads", "this/label/user", "this/label/local-1x2"]
    assert "metrics identical to the first's: True" in capsys.readouterr().out


def test_user_stores_against_the_label_key(evaluated, tmp_path, capsys):
    """A user's stores of the same trials (explicit key and mask, float64, BOSARIS HDF5
    contiguous and chunked) give the label store's metrics, bit for bit, through ab_evaluate."""
    workdir, _, _ = evaluated
    for name in ("key.zarr", "system-1.zarr"):
        os.symlink(workdir / name, tmp_path / name)
    _load("user_stores").main(["--workdir", str(tmp_path)])
    assert {p.name for p in tmp_path.iterdir()} >= {
        "key-explicit.zarr", "system-1-masked.zarr", "system-1-f64.zarr", "key.h5", "system-1.h5",
        "key-chunked.h5", "system-1-chunked.h5",
    }  # fmt: skip
    assert (tmp_path / "system-1-masked.zarr" / "score_mask").is_dir()
    summary = _load("ab_evaluate").main([
        "--workdir", str(tmp_path), "--repeat", "1", "--case", "label=key.zarr,system-1.zarr",
        "--case", "explicit=key-explicit.zarr,system-1-masked.zarr",
        "--case", "f64=key.zarr,system-1-f64.zarr", "--case", "hdf5=key.h5,system-1.h5",
        "--case", "hdf5-chunked=key-chunked.h5,system-1-chunked.h5",
    ])  # fmt: skip
    assert len(summary) == 5
    assert "metrics identical to the first's: True" in capsys.readouterr().out


def test_ab_adaptive_bins(evaluated, capsys):
    """Fixed against adaptive bins on 40 x 40 trials, emulating 100 times more (tiny budgets)."""
    workdir, _, _ = evaluated
    _load("ab_adaptive_bins").main(["--workdir", str(workdir), "--repeat", "1",
                                    "--emulate", "100"])  # fmt: skip
    out = capsys.readouterr().out
    assert "adaptive: passes" in out and "exact metrics identical across all runs: True" in out


def test_ab_skip_chunks(capsys):
    """Skipping chunks without candidates on 256 x 256 structured embeddings (PAV bins)."""
    _load("ab_skip_chunks").main(["--side", "256", "--block", "64", "--structured",
                                  "--consumer", "pav", "--repeat", "1"])  # fmt: skip
    out = capsys.readouterr().out
    assert "skip-chunks=1" in out and "same results: True" in out


def test_bench_evaluate_doctests(bench):
    result = doctest.testmod(bench, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 2 and result.failed == 0


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 300),
    seed=st.integers(0, 2**32 - 1),
    ties=st.sampled_from([1, 8, None]),
    zeros=st.booleans(),
)
def test_the_numpy_baseline_equals_the_brute_force_reference(bench, n, seed, ties, zeros):
    rng = np.random.default_rng(seed)
    classes = rng.choice(np.array([-1, 0, 1], np.int8), size=n, p=[0.6, 0.1, 0.3])
    classes[:2] = [1, -1]
    values = rng.normal(size=n) + classes
    values = np.round(values * ties) / ties if ties else values
    if zeros:  # -0.0 and +0.0 are one threshold
        values[rng.random(n) < 0.3] = rng.choice([-0.0, 0.0])
    values = values.astype(np.float32)
    got = bench.baseline_arrays(values, classes)
    tar, non = values[classes == 1], values[classes == -1]
    np.testing.assert_allclose(got["eer"], ref.eer(tar, non), rtol=1e-12, atol=0)
    np.testing.assert_allclose(got["prbep"], ref.prbep(tar, non), rtol=1e-12, atol=0)
    np.testing.assert_allclose(got["min_cllr"], ref.min_cllr(tar, non), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got["cllr"], ref.cllr(tar, non), rtol=1e-12)
    plo = bench._plo()
    np.testing.assert_allclose(got["min"], ref.min_dcf(tar, non, plo), rtol=1e-12, atol=1e-300)
    act = [ref.dcf_at(tar, non, p)[0] for p in plo]
    np.testing.assert_allclose(got["act"], act, rtol=1e-12, atol=1e-300)


def test_memory_limited(evaluated, capsys):
    workdir, *_ = evaluated
    _load("memory_limited").main(
        ["--workdir", str(workdir), "--workers", "1", "--memory-limit", "2GB", "--compare"]
    )
    out = capsys.readouterr().out
    assert "1.6e+03 trials on 1 workers" in out and "equal to the threaded run: yes" in out


def test_bench_bootstrap(tmp_path, capsys):
    out = _load("bench_bootstrap").main(["--side", "60", "--per-group", "6", "--resamples", "20",
                                         "--repeat", "1", "--workdir", str(tmp_path)])  # fmt: skip
    assert out["ratio"] > 0 and "ratio bootstrap / plain" in capsys.readouterr().out
    out = _load("bench_bootstrap").main(["--side", "60", "--per-group", "6", "--resamples", "20",
                                         "--by", "4", "--repeat", "1", "--workdir",
                                         str(tmp_path)])  # fmt: skip
    assert out["ratio"] > 0 and "4 segment-side conditions" in capsys.readouterr().out


def test_bench_fusion(tmp_path, capsys):
    _load("bench_fusion").main(["--trials", "400", "--workdir", str(tmp_path)])
    out = capsys.readouterr().out
    assert out.count(" True\n") == 4  # every solver converged


def test_bench_text_convert(capfd):
    _load("bench_text_convert").main(400)
    out = capfd.readouterr().out
    assert "write_text:" in out and "round trip exact (first 20 rows): True" in out


def test_kill_campaign(capsys):
    argv = ["--kills", "1", "--scale", "6x8", "--case", "convert-zarr"]
    assert _load("kill_campaign").main(argv) == 0
    out = capsys.readouterr().out
    assert "| SIGKILL of `convert → zarr` | 1 kills" in out and "0 corrupt" in out


def test_peak_memory(capsys):
    code = "import numpy; numpy.ones(10**7)"
    assert _load("peak_memory").main(["--", sys.executable, "-c", code]) == 0
    assert "peak_tree_rss_mb=" in capsys.readouterr().out


def test_cold_cache(tmp_path, capsys):
    cold = _load("cold_cache")
    store = tmp_path / "store"
    store.mkdir()
    (store / "a").write_bytes(b"x" * 100_000)
    (store / "b").write_bytes(b"y" * 50_000)
    files = cold.store_files([store])
    assert [p.name for p in files] == ["a", "b"]
    assert cold.read_sequentially(files) == 150_000
    cold.main(["--store", str(store), "--repeat", "2", "--", sys.executable, "-c", "pass"])
    out = capsys.readouterr().out
    assert "stores: 2 files" in out and "run 2: cold" in out
    assert [line.split(":")[0].strip() for line in out.splitlines()[-3:]] == [
        "cold", "disk", "warm"]  # fmt: skip


def test_chunk_reads(tmp_path, capsys):
    reads = _load("chunk_reads")
    store = tmp_path / "s.zarr"
    (store / "score" / "c" / "0").mkdir(parents=True)
    words = np.arange(20_001, dtype=np.uint64)
    (store / "score" / "c" / "0" / "0").write_bytes(words.tobytes() + b"xyz")  # 3 bytes over
    (store / "score" / "c" / "0" / "1").write_bytes(b"")
    (store / "score" / "zarr.json").write_text("{}")  # metadata: not read
    want = int(np.bitwise_xor.reduce(words))
    for way in reads.WAYS.values():
        assert way(store / "score" / "c" / "0" / "0") == want
        assert way(store / "score" / "c" / "0" / "1") == 0
    medians = reads.main(["--store", str(store), "--repeat", "2", "--threads", "2"])
    assert set(medians) == {f"{w} {s}" for w in reads.WAYS for s in ("cold", "warm")} | {"disk"}
    out = capsys.readouterr().out
    assert out.startswith("2 files, 0 MB; 2 threads") and "repeat 2: memmap cold" in out


def test_floors(capsys):
    floors = _load("floors")
    scores = np.array([-2.0, -0.0, 0.0, 1.5], dtype=np.float32)
    keys = floors._keys(scores)  # the top 20 bits of an order-preserving key
    assert keys.tolist() == sorted(keys.tolist()) and keys[1] < keys[2]
    assert floors.main(["--n", "4096", "--repeat", "1"]) == 0
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]]
    assert rows == list(floors.STAGES)


def test_pass1_kernel(capsys):
    assert _load("pass1_kernel").main(["--n", "4096", "--repeat", "1"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert [r.split(" ns/trial")[0].rsplit(None, 1)[0] for r in rows] == [
        "this compiled", "this numpy"]  # fmt: skip


def test_profile_passes(tmp_path, capsys):
    assert _load("profile_passes").main(["--side", "300", "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    computes = int(out.split(" computes")[0].split()[-1])
    assert sum(line.startswith("compute ") for line in out.splitlines()) == computes >= 2
    assert "90,000 trials" in out and "client outside computes" in out


def test_fuzz_readers():
    out = subprocess.run(
        [sys.executable, str(BENCHMARKS / "fuzz_readers.py"), "2", "0", "--bit-flips=1"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "every single-bit flip" in out.stdout and "| all |" in out.stdout


def test_bench_fixed_rates(capsys):
    assert _load("bench_fixed_rates").main(["--models", "40", "--segments", "60",
                                             "--repeat", "1"]) == 0  # fmt: skip
    rows = {line.split()[0]: line.split()[1] for line in capsys.readouterr().out.splitlines()[2:]}
    assert rows["plain"] == rows["fixed"] == rows["ece"] == rows["all"]  # the same passes


def test_bench_auc(capsys):
    assert _load("bench_auc").main(["--models", "40", "--segments", "300", "--repeat", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:5]}
    assert int(rows["exact-2"][0]) == int(rows["plain"][0]) + 2  # passes
    assert rows["exact"][3] == rows["exact-2"][3] != "nan"  # the same exact AUC


def test_bench_spoofing(capsys):
    assert _load("bench_spoofing").main(["--models", "40", "--segments", "200"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split()[1] for line in lines[2:6]}
    assert rows["plain"] == rows["cm"] >= max(rows["sasv"], rows["sasv-given"])  # no more passes


def test_bench_embeddings(capsys):
    module = _load("bench_embeddings")
    bench = module.Embeddings()
    bench.setup(side=60, dim=8, block=16, cohort=30)
    for name in ("sgemm", "dgemm", "scores", "evaluate", "unscreened", "auc", "auc_unscreened"):
        getattr(bench, f"time_{name}")()
    assert 0.5 < float(bench.results.auc[0]) < 1
    bench.time_cohort(top_n=5)
    bench.time_sample()
    strided = bench.sample
    bench.time_sample(whole_blocks=True)
    assert np.array_equal(strided, bench.sample) and len(strided) > 0
    assert bench.results.attrs["passes"] >= 1
    assert bench.results.sizes["system"] == 1
    assert bench.stats.sizes["id"] == 60
    # the script's child processes (each mode's body ran above): the modes it compares only,
    # as every child costs a fresh interpreter and import in CI
    # (the unscreened mode's body ran above, in this process: its child is left out)
    assert module.main(["--side", "40", "--dim", "8", "--block", "16", "--repeat", "1",
                        "--cohort", "0", "--modes", "embeddings,zarr"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "embeddings == zarr (EER, minDCF bit for bit): True" in out
    assert {line.split()[0] for line in out.splitlines()} >= {"embeddings", "zarr"}


def test_bench_cohort(capsys):
    module = _load("bench_cohort")
    assert module.main(["--rows", "50", "--cohort", "90", "--dim", "8", "--top-n", "5",
                        "--repeat", "1"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "top-N statistics identical across runs and methods: True" in out
    assert {line.split()[0] for line in out.splitlines()} >= set(module.MODES)


def test_bench_conditions(capsys):
    assert _load("bench_conditions").main(["--models", "40", "--segments", "60",
                                            "--repeat", "1"]) == 0  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    assert "masked == grouped: True" in out[0]
    rows = {line.split()[0]: int(line.split()[1]) for line in out[2:]}
    # the grouped kernels take a plain evaluation's passes; the masked copies take more (a
    # counting pass, the pooled systems, then the copies)
    assert rows["plain"] == rows["grouped"] == rows["apart"] < rows["masked"]
    assert _load("bench_conditions").main(["--kernels", "--models", "20", "--segments", "30",
                                            "--repeat", "1"]) == 0  # fmt: skip
    assert "grouped" in capsys.readouterr().out
    assert _load("bench_conditions").main(["--selection", "--models", "20", "--segments", "30",
                                            "--repeat", "1"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "select (plain)" in out and "select (24 conditions)" in out


def test_bench_text_reader_runs_and_both_readers_agree(capsys):
    """The pandas-chunked candidate reads the same ids, mask and exact scores as ours
    (several chunks: 900 lines in chunks of 250)."""
    summary = _load("bench_text_reader").main(["900", "--chunksize", "250"])
    assert summary["identical"] and summary["lines"] == 900
    assert {r["trials"] for r in summary["runs"]} == {900}


def test_bench_text_reader_sparse_lists_agree(capsys):
    """A sparse list read by ours as a TrialList numbers its ids and keeps each line's score as
    the chunked readers do."""
    summary = _load("bench_text_reader").main(["900", "--chunksize", "250", "--sparse"])
    assert summary["identical"] and {r["trials"] for r in summary["runs"]} == {900}
    assert "sparse" in capsys.readouterr().out


def test_make_sparse_quality(tmp_path, monkeypatch, capsys):
    """The VoxCeleb1-E-like list, small: its quality fusion trains packed, some trials back
    off (ids without quality)."""
    from bosaris_dask.cli import main
    from bosaris_dask.io.text import packed

    n = _load("make_sparse_quality").write(tmp_path, n_ids=400, n_trials=900)
    assert len((tmp_path / "trials").read_text().splitlines()) == n
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 0)
    monkeypatch.setattr(packed, "SPARSE_CELLS_PER_TRIAL", 0)
    monkeypatch.chdir(tmp_path)
    assert main(["fuse", "--key", "trials", "--scores", "sys1", "--scores", "sys2",
                 "--model-quality", "mq", "--segment-quality", "sq", "--model-out",
                 "m.json"]) == 0  # fmt: skip
    assert "read as packed trial lists" in capsys.readouterr().err
    model = json.loads((tmp_path / "m.json").read_text())
    assert model["kind"] == "quality_fusion" and model["n_measures"] == 2
    assert model["n_target"] + model["n_nontarget"] + model.get("n_no_quality", 0) == n


def test_make_sparse_bootstrap(tmp_path, monkeypatch, capsys):
    """The VoxCeleb1-E-like list with speaker tables, small: packed, two-way intervals."""
    from bosaris_dask.cli import main
    from bosaris_dask.io.text import packed

    _load("make_sparse_bootstrap").main(tmp_path, 600, 40, 1500)
    lines = (tmp_path / "trials").read_text().splitlines()
    assert len(lines) == len(set(tuple(x.split()[:2]) for x in lines)) <= 1500
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 0)
    monkeypatch.setattr(packed, "SPARSE_CELLS_PER_TRIAL", 0)
    monkeypatch.chdir(tmp_path)
    assert main(["evaluate", "--key", "trials", "--scores", "scores", "--conditions", "m.tsv",
                 "--conditions", "s.tsv", "--resample", "model.speaker", "--resample",
                 "segment.speaker", "--bootstrap", "20", "--seed", "1", "--json",
                 "r.json"]) == 0  # fmt: skip
    assert "read as packed trial lists" in capsys.readouterr().err
    (system,) = json.loads((tmp_path / "r.json").read_text())["systems"]
    low, high = system["eer_ci"]
    assert system["n_target"] + system["n_nontarget"] == len(lines) and low <= high


def test_bench_condition_tables(capsys):
    result = _load("bench_condition_tables").main(n=3000, repeat=1)
    assert {r["rows"] for r in result.values()} == {3000}  # every reader read every trial
    assert "vs pandas" in capsys.readouterr().out


def test_make_sparse_conditions(tmp_path, monkeypatch, capsys):
    """The SRE-like list and its tables, small: packed, 16 conditions, counts that add up."""
    from bosaris_dask.cli import main
    from bosaris_dask.io.text import packed

    _load("make_sparse_conditions").main(tmp_path, n_models=30, n_segments=200, n=600)
    lines = (tmp_path / "sre.key").read_text().splitlines()
    assert len(lines) == len(set(tuple(x.split()[:2]) for x in lines)) == 600
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 0)
    monkeypatch.setattr(packed, "SPARSE_CELLS_PER_TRIAL", 0)
    monkeypatch.chdir(tmp_path)
    assert main(["evaluate", "--key", "sre.key", "--scores", "sre.scores", "--conditions",
                 "m.tsv", "--conditions", "s.tsv", "--by", "model.gender", "--by", "same.lang",
                 "--by", "segment.source", "--json", "r.json"]) == 0  # fmt: skip
    assert "read as packed trial lists" in capsys.readouterr().err
    (system,) = json.loads((tmp_path / "r.json").read_text())["systems"]
    assert len(system["conditions"]) == 16
    assert sum(c["n_target"] + c["n_nontarget"] for c in system["conditions"]) == 600
