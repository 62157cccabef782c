"""Compact encodings of pass results: bit-exact round trips and sums equal to numpy's, for
counts, limbs, fractions, infinities, NaN and negative zeros."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.passes import compact

_SPECIAL = [0.0, -0.0, 1.0, 2.0**31, 2.0**32 - 1, 2.0**32, 2.0**52, -3.0, 0.5, np.inf, np.nan]


@st.composite
def vectors(draw, length=None):
    n = length if length is not None else draw(st.integers(0, 300))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    density = draw(st.sampled_from([0.0, 0.01, 0.2, 0.5, 1.0]))
    v = np.zeros(n)
    hit = rng.random(n) < density
    scale = draw(st.sampled_from([10, 2**31, 2**33, 2**60]))
    v[hit] = rng.integers(0, scale, size=int(hit.sum())).astype(np.float64)
    for _ in range(draw(st.integers(0, 3))):  # a few special values anywhere
        if n:
            v[draw(st.integers(0, n - 1))] = draw(st.sampled_from(_SPECIAL))
    return v


@settings(max_examples=200, deadline=None)
@given(v=vectors())
def test_decode_gives_back_every_bit(v):
    enc = compact.encode(v)
    assert compact.decode(enc).tobytes() == v.tobytes()
    assert enc.nbytes <= compact.max_nbytes(v.size)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), n=st.integers(1, 200), m=st.integers(1, 10))
def test_total_is_numpys_sum_of_the_stack_bit_for_bit(data, n, m):
    rows = np.stack([data.draw(vectors(n)) for _ in range(m)])
    if data.draw(st.booleans()):  # fractions everywhere: the order of the additions shows
        rows[rows != 0] *= np.random.default_rng(n).random(int(np.count_nonzero(rows))) * 1e-7
    expected = rows.sum(axis=0)
    got = compact.sum_encoded([compact.encode(r) for r in rows])
    assert got.tobytes() == expected.tobytes()


def test_counts_travel_in_the_narrowest_integers_or_their_non_zero_elements():
    counts = np.zeros(1 << 21)
    counts[::100] = 12345.0
    sparse = compact.encode(counts)
    assert (sparse.kind, sparse.values.dtype, sparse.positions.dtype) == (
        "sparse", np.uint32, np.int32)  # fmt: skip
    assert sparse.nbytes == 8 * len(counts[::100])
    counts[:] = 7.0
    dense = compact.encode(counts)
    assert (dense.kind, dense.values.dtype, dense.nbytes) == ("dense", np.uint8, 1 << 21)
    counts[::2] = 300.0  # too many large ones to keep apart: every count in 16 bits
    assert (compact.encode(counts).kind, compact.encode(counts).values.dtype) == (
        "dense", np.uint16)  # fmt: skip
    counts[:] = 7.0
    counts[[5, 9]] = [2.0**40, 300.0]  # a merged total's limb, a crowded bin: kept apart
    narrow = compact.encode(counts)
    assert (narrow.kind, narrow.values.dtype, narrow.large.dtype) == ("narrow", np.uint8, np.int64)
    assert narrow.positions.tolist() == [5, 9] and narrow.large.tolist() == [2**40, 300]
    assert narrow.nbytes == (1 << 21) + 2 * (4 + 8)
    assert narrow.values[[5, 9]].tolist() == [0, 0]
    assert compact.decode(narrow).tobytes() == counts.tobytes()
    np.testing.assert_array_equal(compact.integers(narrow), counts.astype(np.int64))
    counts[1] = 0.25
    assert compact.encode(counts).kind == "float64"


def test_narrow_totals_add_up_and_stay_narrow():
    a = np.full(4096, 200, dtype=np.int64)
    a[[3, 17]] = [2**35, 70_000]
    b = np.full(4096, 100, dtype=np.int64)  # 200 + 100 needs 9 bits: uint16 after the merge
    b[3] = 2**35
    total = compact.add_encoded([compact.encode_counts(a), compact.encode_counts(b)])
    assert (total.kind, total.values.dtype, total.positions.tolist()) == (
        "narrow", np.uint16, [3, 17])  # fmt: skip
    assert compact.decode(total).tobytes() == (a + b).astype(np.float64).tobytes()
    got = compact.sum_encoded([compact.encode_counts(a), compact.encode_counts(b)])
    assert got.tobytes() == (a + b).astype(np.float64).tobytes()


def test_vectors_too_long_for_int32_positions_are_encoded_dense(monkeypatch):
    # a vector of 2**31 elements or more would wrap its int32 positions; its stand-in here is a
    # vector longer than a lowered limit (each kind that keeps positions must respect it)
    monkeypatch.setattr(compact, "POSITION_LIMIT", 100)
    counts = np.full(101, 7, dtype=np.int64)
    counts[[5, 99]] = [2**40, 300]  # would be narrow: uint8 and two values apart
    for enc in (compact.encode(counts.astype(np.float64)), compact.encode_counts(counts)):
        assert (enc.kind, enc.values.dtype) == ("dense", np.int64)
        assert compact.decode(enc).tobytes() == counts.astype(np.float64).tobytes()
    sparse = np.zeros(101)
    sparse[[5, 99]] = 3.0
    assert compact.encode(sparse).kind == "dense"
    assert compact.encode_counts(sparse.astype(np.uint32)).kind == "dense"
    assert compact.encode_sparse(101, np.array([5, 99]), np.array([3.0, 3.0])).kind == "dense"
    total = compact.add_encoded([compact.encode(sparse), compact.encode(sparse)])
    assert total.kind == "dense" and compact.decode(total).tolist() == (2 * sparse).tolist()
    assert compact.encode(counts[:100].astype(np.float64)).kind == "narrow"  # at the limit


@pytest.mark.parametrize("special", [-0.0, np.inf, np.nan, 0.5, -(2.0**63) - 2**11, 2.0**63])
def test_what_no_integer_holds_stays_float64(special):
    v = np.zeros(10)
    v[3] = special
    enc = compact.encode(v)
    assert enc.kind == "float64"
    assert compact.decode(enc).tobytes() == v.tobytes()


def test_vectors_of_other_lengths_are_not_added():
    with pytest.raises(ValueError, match="cannot add a vector of 3 values to one of 2"):
        compact.sum_encoded([compact.encode(np.ones(2)), compact.encode(np.ones(3))])


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from([0, 0, 0, 1, 7, 2**31, 2**32 - 1, 2**32, 2**52]), max_size=60),
    st.sampled_from([np.uint32, np.int64, np.uint64]),
)
def test_counts_encode_as_their_float64_vector(values, dtype):
    v = np.array(values, dtype=np.uint64)
    if dtype == np.uint32:
        v = v[v < 2**32]
    v = v.astype(dtype)
    got, want = compact.encode_counts(v), compact.encode(v.astype(np.float64))
    assert (got.kind, got.length, got.values.dtype) == (want.kind, want.length, want.values.dtype)
    np.testing.assert_array_equal(got.values, want.values)
    if want.positions is None:
        assert got.positions is None
    else:
        assert got.positions.dtype == want.positions.dtype
        np.testing.assert_array_equal(got.positions, want.positions)
    assert compact.decode(got).tobytes() == v.astype(np.float64).tobytes()


def test_encode_counts_refuses_what_is_no_count():
    with pytest.raises(TypeError, match="integers"):
        compact.encode_counts(np.array([0.5]))
    assert compact.encode_counts(np.array([-1, 2])).values.dtype == np.int64  # general path


def _same_encoding(got: compact.Encoded, want: compact.Encoded) -> None:
    assert (got.kind, got.length, got.values.dtype) == (want.kind, want.length, want.values.dtype)
    assert got.values.tobytes() == want.values.tobytes()
    if want.positions is None:
        assert got.positions is None
    else:
        assert got.positions.tobytes() == want.positions.tobytes()


@settings(max_examples=200, deadline=None)
@given(data=st.data(), n=st.integers(0, 200), m=st.integers(1, 10))
def test_merged_totals_encode_as_the_float64_sum_does(data, n, m):
    # counts and limbs (added as integers), and special values (the float64 way), from
    # kernels (encode_counts) or from float64 rows (encode)
    parts = []
    for _ in range(m):
        v = data.draw(vectors(n))
        if (
            data.draw(st.booleans())
            and np.all(v >= 0)
            and np.all(v < 2**53)
            and np.all(v == np.floor(v))
        ):
            parts.append(compact.encode_counts(v.astype(np.int64)))
        else:
            parts.append(compact.encode(v))
    _same_encoding(compact.add_encoded(parts), compact.encode(compact.sum_encoded(parts)))


@settings(max_examples=200, deadline=None)
@given(v=vectors(), seed=st.integers(0, 2**32 - 1))
def test_encode_sparse_is_encode_of_the_vector(v, seed):
    # the non-zero elements (some zeros among them) in any order give encode's encoding
    rng = np.random.default_rng(seed)
    given_at = np.flatnonzero(v.view(np.int64) | (rng.random(v.size) < 0.05))
    given_at = rng.permutation(given_at)
    _same_encoding(compact.encode_sparse(v.size, given_at, v[given_at]), compact.encode(v))


@settings(max_examples=200, deadline=None)
@given(data=st.data(), n=st.integers(0, 3000), m=st.integers(1, 12))
def test_sparse_counts_merge_as_the_float64_sum_does(data, n, m):
    # a merge of small chunks' counts: every part sparse, few values together (or not)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    density = data.draw(st.sampled_from([0.001, 0.01, 0.05, 0.3]))
    scale = data.draw(st.sampled_from([3, 2**31, 2**40]))
    parts = []
    for _ in range(m):
        v = np.where(rng.random(n) < density, rng.integers(1, scale, size=n), 0)
        parts.append(compact.encode_counts(v))
    _same_encoding(compact.add_encoded(parts), compact.encode(compact.sum_encoded(parts)))


@pytest.mark.parametrize("big", [2**32 - 1, 2**32, 2**52, 2**53 - 1])
def test_merged_counts_widen_where_their_sum_may_not_fit(big):
    a = compact.encode_counts(np.array([big, 0, 1, 0, 0, 0, 0, 0], dtype=np.int64))
    b = compact.encode_counts(np.array([1, 1, 1, 1, 1, 1, 1, 1], dtype=np.uint32))
    want = compact.encode(compact.sum_encoded([a, b]))
    _same_encoding(compact.add_encoded([a, b]), want)
    assert compact.decode(compact.add_encoded([a, b]))[0] == float(big + 1)
    with pytest.raises(ValueError, match="cannot add a vector of 3 values"):
        compact.add_encoded([b, compact.encode(np.ones(3))])
