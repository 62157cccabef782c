"""Pass 1 of a chunk with few trials for its bins, counted with ``np.unique`` and returned in
sparse form, against the dense histogram path encoded by ``compact.encode``: the same encoding,
bit for bit, and the same chunk notes; plain and grouped, uniform and adaptive bins, signed
zeros, non-finite scores, non-trials and unscored cells."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.passes import compact, kernels
from bosaris_dask.passes.binmap import BinMap
from bosaris_dask.passes.grouped_kernels import grouped_bins_note, grouped_pass1_kernel
from bosaris_dask.passes.keys import order_keys

SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3.4e38, 1e300]


@st.composite
def sparse_chunks(draw):
    """A chunk of at most half as many cells as bins (the sparse path's domain)."""
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    bits = 32 if dtype == np.float32 else 64
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if draw(st.booleans()):
        sample = order_keys((rng.normal(size=500) * 3).astype(dtype))
        bm = BinMap.from_sample(sample, bits, draw(st.integers(9, 12)))
    else:
        bm = BinMap.uniform(bits, draw(st.integers(9, 13)))
    rows = draw(st.integers(1, 6))
    cols = draw(st.integers(1, max(1, bm.nbins // (2 * rows))))
    cls = rng.choice(np.array([-1, 0, 1], np.int8), size=(rows, cols), p=[0.5, 0.2, 0.3])
    s = rng.normal(size=(rows, cols)) * draw(st.sampled_from([0.5, 3.0, 1e3]))
    if draw(st.booleans()):  # ties: many trials in few bins
        s = np.round(s)
    if draw(st.booleans()):
        s.flat[rng.integers(0, s.size, size=3)] = rng.choice(np.array(SPECIAL), size=3)
    with np.errstate(over="ignore"):
        s = s.astype(dtype)
    m = rng.random((rows, cols)) > draw(st.sampled_from([0.0, 0.2]))
    return cls, s, m, bm, draw(st.sampled_from([1, 7, 4096]))


def _same(got: compact.Encoded, want: compact.Encoded) -> None:
    assert (got.kind, got.length, got.values.dtype) == (want.kind, want.length, want.values.dtype)
    assert got.values.tobytes() == want.values.tobytes()
    assert (got.positions is None) == (want.positions is None)
    if want.positions is not None:
        assert got.positions.tobytes() == want.positions.tobytes()


def _map_args(bm: BinMap) -> dict:
    return {"shift": 0 if bm.adaptive else bm.shift, "binmap": bm if bm.adaptive else None}


@settings(max_examples=80, deadline=None)
@given(problem=sparse_chunks())
def test_sparse_pass1_is_the_dense_histogram_encoded(problem):
    cls, s, m, bm, block = problem
    rows, cols = np.arange(cls.shape[0]), np.arange(cls.shape[1])
    common = dict(system=0, nbins=bm.nbins, block=block, slice_size=4 * block, compiled=False,
                  **_map_args(bm))  # fmt: skip
    dense = kernels.system_kernel(rows, cols, cls, s, m, **common)
    sparse = kernels.system_kernel(rows, cols, cls, s, m, encoded=True, **common)
    want = compact.encode(dense)
    _same(sparse, want)
    note = kernels.bins_note(sparse, rows, cols, nbins=bm.nbins, coarse=2)
    want_note = kernels.bins_note(dense, rows, cols, nbins=bm.nbins, coarse=2)
    assert note[:2] == want_note[:2] and note[2].tobytes() == want_note[2].tobytes()


@settings(max_examples=60, deadline=None)
@given(problem=sparse_chunks(), n_groups=st.integers(1, 5), pooled=st.booleans(),
       seed=st.integers(0, 2**16))  # fmt: skip
def test_sparse_grouped_pass1_is_the_dense_histograms_encoded(problem, n_groups, pooled, seed):
    cls, s, m, bm, block = problem
    rows, cols = np.arange(cls.shape[0]), np.arange(cls.shape[1])
    g = np.random.default_rng(seed).integers(0, n_groups, size=cls.shape).astype(np.int16)
    pbm = BinMap.uniform(bm.key_bits, 11) if pooled else None
    extra = {"pooled_shift": pbm.shift, "pooled_nbins": pbm.nbins} if pbm is not None else {}
    common = dict(system=0, nbins=bm.nbins, n_groups=n_groups, block=block,
                  slice_size=4 * block, **_map_args(bm), **extra)  # fmt: skip
    dense = grouped_pass1_kernel(rows, cols, cls, g, s, m, **common)
    sparse = grouped_pass1_kernel(rows, cols, cls, g, s, m, encoded=True, **common)
    assert sparse.kind == "sparse" or compact.encode(dense).kind != "sparse"
    _same(sparse, compact.encode(dense))
    notes = dict(n_groups=n_groups, nbins=bm.nbins, coarse=1,
                 pooled_nbins=pbm.nbins if pbm is not None else 0, pooled_coarse=3)  # fmt: skip
    got = grouped_bins_note(sparse, rows, cols, **notes)
    want = grouped_bins_note(dense, rows, cols, **notes)
    assert got[0][:2] == want[0][:2] and got[0][2].tobytes() == want[0][2].tobytes()
    assert (got[1] is None) == (want[1] is None)
    if want[1] is not None:
        assert got[1][2].tobytes() == want[1][2].tobytes()


def test_a_chunk_with_many_trials_per_bin_takes_the_dense_path():
    rng = np.random.default_rng(0)
    cls = rng.choice(np.array([-1, 1], np.int8), size=(4, 64))
    s = rng.normal(size=(4, 64)).astype(np.float32)
    m = np.ones((4, 64), bool)
    bm = BinMap.uniform(32, 8)  # 256 bins for 256 trials: more than half
    args = dict(system=0, shift=bm.shift, nbins=bm.nbins, block=64, slice_size=256,
                compiled=False)  # fmt: skip
    out = kernels.system_kernel(np.arange(4), np.arange(64), cls, s, m, encoded=True, **args)
    assert isinstance(out, np.ndarray)  # the dense histogram, encoded by the runner
    few = kernels.system_kernel(np.arange(1), np.arange(64), cls[:1], s[:1], m[:1],
                                encoded=True, **args)  # fmt: skip
    assert isinstance(few, compact.Encoded) and few.kind == "sparse"


def test_a_note_of_counts_in_narrow_integers_sees_every_held_bin():
    nbins = 64
    row = np.zeros(kernels.coarse_length(nbins))
    row[: 2 * nbins] = 1.0  # every bin held: the row travels dense, in uint8
    row[[0, nbins]] = [200.0, 56.0]  # bin 0: 200 non-targets and 56 targets, 256 in all
    row[[5, nbins + 5]] = 0.0  # bin 5: empty
    enc = compact.encode(row)
    assert (enc.kind, enc.values.dtype) == ("dense", np.uint8)
    rows, cols = np.arange(3), np.arange(4)
    got = kernels.bins_note(compact.integers(enc), rows, cols, nbins=nbins)
    want = kernels.bins_note(row, rows, cols, nbins=nbins)
    held = np.flatnonzero(np.unpackbits(got[2])[:nbins]).tolist()
    assert held == [b for b in range(nbins) if b != 5] and got[2].tobytes() == want[2].tobytes()
