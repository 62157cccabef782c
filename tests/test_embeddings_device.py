"""Block products on an accelerator (``device=``): the same bits as numpy's, every block of every
pass computed on the device, and one-line errors for a device that cannot be used.

Where no GPU exists, a stand-in device (products summed in another order than numpy's BLAS)
checks the plumbing and the claim that the rounding does not depend on the summation order;
PyTorch's CPU device runs the PyTorch path where PyTorch is installed, and a CUDA GPU the whole
evaluation where one is visible.
"""

from __future__ import annotations

import importlib.util
import sys

import dask
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.cli import main
from bosaris_dask.embeddings import device, from_arrays, kernel, scores_from_embeddings, scoring
from bosaris_dask.embeddings.rounding import (
    max_row_norm,
    product_bound,
    round_certified,
    settle_uncertain,
)
from bosaris_dask.errors import OptionError
from bosaris_dask.metrics import evaluate
from bosaris_dask.passes import screening
from bosaris_dask.trials import key_from_labels

D = 16
GPU = "cuda"  # the device of the tests that need a CUDA GPU
HAS_TORCH = importlib.util.find_spec("torch") is not None


def _cuda() -> bool:
    if not HAS_TORCH:
        return False
    import torch

    return bool(torch.cuda.is_available())


def _sets(n_e=41, n_t=57, speakers=6):
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(speakers, D))

    def one(n, name, offset):
        labels = (np.arange(n) + offset) % speakers
        x = (centres[labels] + 0.9 * rng.normal(size=(n, D))).astype(np.float32)
        return [f"{name}{i}" for i in range(n)], labels, x

    e_ids, e_lab, e = one(n_e, "e", 0)
    t_ids, t_lab, t = one(n_t, "t", 2)
    c_ids, _, c = one(33, "c", 4)
    key = key_from_labels(e_ids, e_lab, t_ids, t_lab)
    return from_arrays(e_ids, e), from_arrays(t_ids, t), from_arrays(c_ids, c), key


def _reordered_products(x, y):
    """Float64 products summed over the dimension in reverse order, in two halves (not
    numpy's BLAS order)."""
    x, y, h = x[:, ::-1], y[:, ::-1], x.shape[1] // 2
    return x[:, h:] @ y[:, h:].T + x[:, :h] @ y[:, :h].T


def _to_float32(x):
    return x.astype(np.float32)


def _reordered_strips(calls):
    """A stand-in device: each strip's products summed in another order than numpy's BLAS,
    rounded and certified by the device's test (in numpy), counting the products it makes."""

    def strips(a, b, rows, name, b_norm):
        assert name == "stand-in"
        for start in range(0, a.shape[0], rows):
            stop = min(start + rows, a.shape[0])
            calls.append((stop - start) * b.shape[0])
            products = _reordered_products(a[start:stop], b)
            scores = products.astype(np.float32)
            bound = product_bound(a.shape[1], max_row_norm(a[start:stop]), b_norm)
            uncertain = device.uncertain_roundings(products, scores, bound, _to_float32)
            yield start, stop, scores, np.flatnonzero(uncertain)

    return strips


@pytest.fixture
def stand_in(monkeypatch):
    calls: list[int] = []
    monkeypatch.setattr(scoring, "check_device", lambda name: name)
    monkeypatch.setattr(kernel, "device_strips", _reordered_strips(calls))
    return calls


@given(st.integers(0, 2**32 - 1), st.sampled_from([1e-30, 1e-3, 1.0, 1e15]))
@settings(max_examples=60, deadline=None)
def test_the_devices_test_flags_what_the_host_leaves_uncertain_and_tiny_scores(seed, scale):
    """The device's certification (:func:`device.uncertain_roundings`) flags exactly the
    roundings the host's :func:`round_certified` leaves open, and the subnormal scores."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(7, D)) * scale, rng.normal(size=(9, D)) * scale
    b[0] = a[0]
    products = a @ b.T
    bound = product_bound(D, max_row_norm(a), max_row_norm(b))
    host = np.empty(products.shape, dtype=np.float32)
    expected = set(round_certified(products, bound, host).tolist())
    expected |= set(np.flatnonzero(np.abs(host) < 2.0**-126).tolist())
    flags = device.uncertain_roundings(products, host, bound, _to_float32)
    assert set(np.flatnonzero(flags).tolist()) == expected


def test_the_stand_in_sums_in_another_order():
    """Otherwise the next tests could not fail: its float64 products differ from numpy's."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(64, D)), rng.normal(size=(80, D))
    assert np.count_nonzero(_reordered_products(a, b) != a @ b.T) > 100


@pytest.mark.parametrize("norm", ["none", "s", "as"])
def test_a_device_gives_the_same_evaluation_bit_for_bit(stand_in, norm):
    e, t, c, key = _sets()
    options = {"chunks": (16, 20)}
    if norm != "none":
        options |= {"norm": norm, "cohort": c, "top_n": 5 if norm == "as" else None}
    with dask.config.set(scheduler="threads"):
        on_cpu = scores_from_embeddings(e, t, **options)
        on_device = scores_from_embeddings(e, t, device="stand-in", **options)
        assert screening.screen_of(on_cpu.score.data) is not None
        assert screening.screen_of(on_device.score.data) is None  # whole blocks on the device
        np.testing.assert_array_equal(on_device.score.values.view(np.uint32),
                                      on_cpu.score.values.view(np.uint32))  # fmt: skip
        assert sum(stand_in) == 41 * 57
        stand_in.clear()
        ours = evaluate(on_device, key, priors=[0.01, 0.5])
        theirs = evaluate(on_cpu, key, priors=[0.01, 0.5])
    assert ours.identical(theirs)
    # pass 1 scored every block on the device, the refinement pass the blocks it read
    assert 41 * 57 < sum(stand_in) <= ours.attrs["passes"] * 41 * 57


def test_a_stand_in_device_through_the_command_line(stand_in, tmp_path, monkeypatch):
    e, t, _, key = _sets()
    from bosaris_dask import io

    monkeypatch.chdir(tmp_path)
    for name, emb in (("enrol", e), ("test", t)):
        np.savez(f"{name}.npz", ids=emb.id.values.astype(str), embeddings=emb.embedding.values)
    io.write(key, "key.zarr")
    common = ["evaluate", "--key", "key.zarr", "--enrol", "enrol.npz", "--test", "test.npz",
              "--block", "16", "--cluster", "threads", "-q"]  # fmt: skip
    assert main([*common, "--json", "cpu.json"]) == 0
    assert not stand_in
    assert main([*common, "--device", "stand-in", "--json", "device.json"]) == 0
    assert sum(stand_in) > 41 * 57  # pass 1, then the blocks a refinement pass read
    assert (tmp_path / "cpu.json").read_bytes() == (tmp_path / "device.json").read_bytes()


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_pytorch_products_round_to_numpys_bits():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(300, 64))
    b = rng.normal(size=(410, 64))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    b[7] = a[3]  # a product of exactly 1.0
    expected = kernel.score_block(a, b)
    got = np.empty_like(expected)
    seen = []
    for start, stop, scores, uncertain in device.device_strips(a, b, 128, "cpu"):
        seen.append((start, stop))
        got[start:stop] = scores
        settle_uncertain(got[start:stop], a[start:stop], b, uncertain)
    assert seen == [(0, 128), (128, 256), (256, 300)]
    np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))
    assert got[3, 7] == 1.0


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_pytorch_path_through_the_evaluation(monkeypatch):
    calls: list[int] = []

    def torch_cpu(a, b, rows, name, b_norm):
        calls.append(a.shape[0] * b.shape[0])
        return device.device_strips(a, b, rows, "cpu", b_norm)

    monkeypatch.setattr(scoring, "check_device", lambda name: name)
    monkeypatch.setattr(kernel, "device_strips", torch_cpu)
    e, t, _, key = _sets()
    with dask.config.set(scheduler="threads"):
        ours = evaluate(scores_from_embeddings(e, t, chunks=(16, 20), device="torch-cpu"), key)
        theirs = evaluate(scores_from_embeddings(e, t, chunks=(16, 20)), key)
    assert ours.identical(theirs) and 41 * 57 < sum(calls) <= ours.attrs["passes"] * 41 * 57


@pytest.mark.skipif(not _cuda(), reason="no CUDA device")
@pytest.mark.parametrize("norm", ["none", "as"])
def test_a_gpu_gives_the_same_evaluation_bit_for_bit(norm):
    e, t, c, key = _sets(400, 500)
    options = {"chunks": (128, 160)}
    if norm != "none":
        options |= {"norm": norm, "cohort": c, "top_n": 5}
    on_gpu = scores_from_embeddings(e, t, device="cuda", **options)
    on_cpu = scores_from_embeddings(e, t, **options)
    np.testing.assert_array_equal(on_gpu.score.values.view(np.uint32),
                                  on_cpu.score.values.view(np.uint32))  # fmt: skip
    assert evaluate(on_gpu, key).identical(evaluate(on_cpu, key))


def test_device_errors(monkeypatch):
    e, t, _, _ = _sets()
    with pytest.raises(OptionError, match="device must be a string such as 'cpu'"):
        scores_from_embeddings(e, t, device=0)
    monkeypatch.setitem(sys.modules, "torch", None)  # as if PyTorch were not installed
    with pytest.raises(OptionError, match=r"device 'cuda' needs PyTorch \(pip install torch\)"):
        scores_from_embeddings(e, t, device="cuda")


def test_a_missing_pytorch_is_a_one_line_cli_error(tmp_path, monkeypatch, capsys):
    e, t, _, key = _sets()
    from bosaris_dask import io

    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "torch", None)
    for name, emb in (("enrol", e), ("test", t)):
        np.savez(f"{name}.npz", ids=emb.id.values.astype(str), embeddings=emb.embedding.values)
    io.write(key, "key.zarr")
    assert main(["evaluate", "--key", "key.zarr", "--enrol", "enrol.npz", "--test", "test.npz",
                 "--device", "cuda:1", "--cluster", "threads"]) == 1  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["bosaris-dask: error: device 'cuda:1' needs PyTorch (pip install torch); "
                   "device 'cpu' uses numpy"]  # fmt: skip


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_pytorch_device_errors():
    with pytest.raises(OptionError, match="unknown device 'gpu7'"):
        device.check_device("gpu7")
    assert device.check_device("cpu:0") == "cpu"
    if not _cuda():
        a = np.ones((2, 3))
        with pytest.raises(OptionError, match="device 'cuda' cannot compute the float64 block"):
            list(device.device_strips(a, a, 1, "cuda"))


@pytest.mark.skipif(not _cuda(), reason="no CUDA device")
def test_a_gpu_through_the_command_line_on_worker_processes(tmp_path, monkeypatch):
    """``score --device cuda`` writes the bits the CPU writes, and ``evaluate --device cuda`` on
    worker processes (each initialising CUDA itself) reports what the CPU reports."""
    e, t, c, key = _sets(300, 350)
    from bosaris_dask import io

    monkeypatch.chdir(tmp_path)
    for name, emb in (("enrol", e), ("test", t), ("cohort", c)):
        np.savez(f"{name}.npz", ids=emb.id.values.astype(str), embeddings=emb.embedding.values)
    io.write(key, "key.zarr")
    sets = ["--enrol", "enrol.npz", "--test", "test.npz", "--block", "96",
            "--norm", "as", "--cohort", "cohort.npz", "--top-n", "7"]  # fmt: skip
    for where, out in (("cpu", "cpu.zarr"), (GPU, "gpu.zarr")):
        assert main(["score", *sets, "--key", "key.zarr", "--device", where,
                     "--out", out, "--cluster", "threads", "-q"]) == 0  # fmt: skip
    on_cpu, on_gpu = io.read("cpu.zarr").score.values, io.read("gpu.zarr").score.values
    np.testing.assert_array_equal(on_gpu.view(np.uint32), on_cpu.view(np.uint32))
    common = ["evaluate", "--key", "key.zarr", *sets, "-q"]
    assert main([*common, "--cluster", "threads", "--json", "cpu.json"]) == 0
    assert main([*common, "--device", GPU, "--cluster", "local", "--workers", "2",
                 "--json", "gpu.json"]) == 0  # fmt: skip
    assert (tmp_path / "cpu.json").read_bytes() == (tmp_path / "gpu.json").read_bytes()


class _Truncating:
    """A stand-in for PyTorch whose float64 -> float32 conversion truncates (rounds toward
    zero), as no IEEE device should."""

    def __init__(self, values):
        self.values = values

    def to(self, _):
        return self

    def float(self):
        down = self.values.astype(np.float32)
        over = np.abs(down.astype(np.float64)) > np.abs(self.values)
        return _Truncating(np.where(over, np.nextafter(down, np.float32(0)), down))

    def cpu(self):
        return self

    def numpy(self):
        return self.values


class _Nearest(_Truncating):
    def float(self):
        return _Nearest(self.values.astype(np.float32))


def test_a_device_that_does_not_round_to_nearest_is_refused():
    fake = type("torch", (), {"from_numpy": staticmethod(_Truncating)})
    with pytest.raises(OptionError, match="device 'odd:0' does not round float64 to float32 to "
                                          r"nearest \(ties to even\)"):  # fmt: skip
        device._check_rounding(fake, "odd:0", "odd:0")
    device._check_rounding(type("torch", (), {"from_numpy": staticmethod(_Nearest)}), "ok:0", "ok")


@pytest.mark.skipif(not _cuda(), reason="no CUDA device")
@pytest.mark.parametrize("scale", [1e-20, 1.0, 1e15])
def test_a_gpu_rounds_blocks_of_any_scale_as_the_cpu(scale):
    """Dot-product scores far from 1: subnormal float32 scores (settled on the host), exact
    ones, exact zeros and large ones."""
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(300, 256)) * scale, rng.normal(size=(400, 256)) * scale
    b[3], b[4], b[5] = a[5], 0.0, -a[6]
    expected = kernel.score_block(a, b)
    np.testing.assert_array_equal(kernel.score_block(a, b, GPU).view(np.uint32),
                                  expected.view(np.uint32))  # fmt: skip
