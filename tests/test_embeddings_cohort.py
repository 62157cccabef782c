"""Z-, T-, S- and AS-norm against brute-force numpy implementations (a full sort of every
embedding's cohort scores), the streaming top-N under small cohort blocks, and bad options."""

from __future__ import annotations

import numpy as np
import pytest

from bosaris_dask.embeddings import cohort as cohort_module
from bosaris_dask.embeddings import from_arrays, scores_from_embeddings
from bosaris_dask.embeddings.cohort import cohort_quality, cohort_stats
from bosaris_dask.errors import OptionError, ScoreError

D = 12


def _vectors(n, seed, prefix):
    x = np.random.default_rng(seed).normal(size=(n, D)).astype(np.float32) + 0.3
    return [f"{prefix}{i}" for i in range(n)], x


def _unit(x):
    x = x.astype(np.float64)
    return x / np.sqrt((x * x).sum(axis=1, keepdims=True))


def _brute_stats(x, cohort, top_n):
    """Mean and std of all cohort scores, and of the top-N after a full descending sort."""
    s = (_unit(x) @ _unit(cohort).T).astype(np.float32).astype(np.float64)
    ordered = np.sort(s, axis=1)[:, ::-1]
    top = ordered[:, :top_n] if top_n else ordered
    return s.mean(axis=1), s.std(axis=1), top.mean(axis=1), top.std(axis=1)


def _brute_norm(e, t, cohort, norm, top_n=None):
    raw = (_unit(e) @ _unit(t).T).astype(np.float32).astype(np.float64)
    me, se, tme, tse = _brute_stats(e, cohort, top_n)
    mt, st, tmt, tst = _brute_stats(t, cohort, top_n)
    if norm == "as":
        me, se, mt, st = tme, tse, tmt, tst
    z = (raw - me[:, None]) / se[:, None]
    tn = (raw - mt[None, :]) / st[None, :]
    return {"z": z, "t": tn, "s": 0.5 * (z + tn), "as": 0.5 * (z + tn)}[norm]


@pytest.fixture
def data():
    return _vectors(23, 1, "e"), _vectors(31, 2, "t"), _vectors(57, 3, "c")


@pytest.mark.parametrize("norm, top_n", [("z", None), ("t", None), ("s", None), ("as", 10),
                                         ("as", 1 + 1), ("as", 57)])  # fmt: skip
@pytest.mark.parametrize("block", [7, 4096])
def test_normalized_scores_equal_brute_force(data, norm, top_n, block, monkeypatch):
    monkeypatch.setattr(cohort_module, "COHORT_BLOCK", block)
    (e_ids, e), (t_ids, t), (c_ids, c) = data
    s = scores_from_embeddings(
        from_arrays(e_ids, e),
        from_arrays(t_ids, t),
        norm=norm,
        cohort=from_arrays(c_ids, c),
        top_n=top_n,
        chunks=(5, 7),
    )
    assert s.score.dtype == np.float32
    ref = _brute_norm(e, t, c, norm, top_n)
    np.testing.assert_allclose(s.score.values, ref, rtol=2e-6, atol=2e-6)


def test_as_norm_with_the_whole_cohort_is_s_norm(data):
    (e_ids, e), (t_ids, t), (c_ids, c) = data
    args = (from_arrays(e_ids, e), from_arrays(t_ids, t))
    full = scores_from_embeddings(*args, norm="as", cohort=from_arrays(c_ids, c), top_n=57)
    s = scores_from_embeddings(*args, norm="s", cohort=from_arrays(c_ids, c))
    np.testing.assert_allclose(full.score.values, s.score.values, rtol=1e-6, atol=1e-6)


def test_top_n_statistics_do_not_depend_on_the_cohort_blocks(data):
    (e_ids, e), _, (c_ids, c) = data
    E, C = from_arrays(e_ids, e), from_arrays(c_ids, c)
    small, big = cohort_stats(E, C, top_n=9, block=4), cohort_stats(E, C, top_n=9, block=1000)
    for name in ("top_mean", "top_std"):  # the same N values, summed in the same order
        assert small[name].values.tobytes() == big[name].values.tobytes()
    np.testing.assert_allclose(small.cohort_std.values, big.cohort_std.values, rtol=1e-12)
    ref = _brute_stats(e, c, 9)
    np.testing.assert_allclose(small.top_mean.values, ref[2], rtol=1e-6)
    np.testing.assert_allclose(small.cohort_mean.values, ref[0], rtol=1e-6, atol=1e-7)


def test_hand_worked_as_norm():
    # e scores the cohort 1, 0, -1, 0.6 (top-2: 1, 0.6 -> mean 0.8, std 0.2);
    # t scores the cohort 0.6, 0.8, -0.6, 1 (top-2: 1, 0.8 -> mean 0.9, std 0.1); s(e, t) = 0.6
    e = from_arrays(["e"], [[1.0, 0.0]])
    t = from_arrays(["t"], [[0.6, 0.8]])
    c = from_arrays(["a", "b", "c", "d"], [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.6, 0.8]])
    s = scores_from_embeddings(e, t, norm="as", cohort=c, top_n=2).score.values[0, 0]
    assert s == pytest.approx(0.5 * ((0.6 - 0.8) / 0.2 + (0.6 - 0.9) / 0.1), rel=1e-6)


def test_cohort_statistics_export_as_quality(data):
    (e_ids, e), (t_ids, t), (c_ids, c) = data
    C = from_arrays(c_ids, c)
    me = cohort_stats(from_arrays(e_ids, e), C, top_n=5)
    q = cohort_quality(me, cohort_stats(from_arrays(t_ids, t), C))
    assert q.model_quality.model_measure.values.tolist() == [
        "cohort_mean", "cohort_std", "top_mean", "top_std"]  # fmt: skip
    assert q.segment_quality.segment_measure.values.tolist() == ["cohort_mean", "cohort_std"]
    np.testing.assert_array_equal(q.model_quality.values[:, 2], me.top_mean.values)


def test_bad_cohort_options(data):
    (e_ids, e), (t_ids, t), (c_ids, c) = data
    args = (from_arrays(e_ids, e), from_arrays(t_ids, t))
    C = from_arrays(c_ids, c, source="cohort.npz")
    with pytest.raises(OptionError, match="z-norm needs a cohort"):
        scores_from_embeddings(*args, norm="z")
    with pytest.raises(OptionError, match="norm must be one of"):
        scores_from_embeddings(*args, norm="q", cohort=C)
    with pytest.raises(
        OptionError,
        match=r"top_n \(--top-n\) must be an integer from 2 to "
        r"the size of the cohort cohort.npz, 57; got 58",
    ):
        scores_from_embeddings(*args, norm="as", cohort=C, top_n=58)
    with pytest.raises(OptionError, match=r"AS-norm needs top_n \(--top-n\): how many"):
        scores_from_embeddings(*args, norm="as", cohort=C)
    with pytest.raises(OptionError, match=r"top_n \(--top-n\) only applies to AS-norm .* not "
                       r"to s-norm$"):  # fmt: skip
        scores_from_embeddings(*args, norm="s", cohort=C, top_n=10)
    flat = from_arrays(["a", "b"], np.ones((2, D)), source="flat.npz")
    with pytest.raises(ScoreError, match=r"id 'e0': its cohort scores have zero spread"):
        scores_from_embeddings(*args, norm="z", cohort=flat)
    # one direction at several scales: the exact products differ by rounding alone, so their
    # spread is noise (it gave z-normalized scores of 1.6e8 before the float32-rounding test)
    direction = np.random.default_rng(3).normal(size=D)
    scaled = from_arrays([f"c{k}" for k in range(5)],
                         direction * np.array([[1.0], [0.3], [7.0], [1e3], [1e-3]]))  # fmt: skip
    with pytest.raises(ScoreError, match=r"zero spread \(none above their float32 rounding\)"):
        scores_from_embeddings(*args, norm="z", cohort=scaled)
    # an enrolment almost orthogonal to a cohort in a plane: a real spread (cosines of 1e-40)
    # whose z-normalized scores, about 1e40, overflow float32 (they were inf, with a numpy warning)
    angle = np.linspace(0, 3, 10)
    plane = from_arrays([f"c{k}" for k in range(10)],
                        np.stack([np.cos(angle), np.sin(angle), 0 * angle], axis=1))  # fmt: skip
    steep = (from_arrays(["e0"], [[1e-40, 0.0, 1.0]]), from_arrays(["t0"], [[0.6, 0.0, 0.8]]))
    for norm in ("z", "s"):
        with pytest.raises(ScoreError, match=r"<array>: id 'e0': its cohort scores' spread "
                           r"\(7.26e-41\) is so small against its scores \(up to 1\) that its "
                           "normalized scores would overflow float32"):  # fmt: skip
            scores_from_embeddings(*steep, norm=norm, cohort=plane)
    steep = (from_arrays(["e0"], [[1e-25, 0.0, 1.0]]), steep[1])  # 1.1e25: large, but finite
    value = scores_from_embeddings(*steep, norm="z", cohort=plane).score.values[0, 0]
    assert value == pytest.approx(0.8 / (1e-25 * np.cos(angle).std()), rel=1e-6)
    with pytest.raises(ScoreError, match="cohort.npz: id 'c3' has NaN"):
        bad = c.copy()
        bad[3, 0] = np.inf
        scores_from_embeddings(*args, norm="s", cohort=from_arrays(c_ids, bad, source="cohort.npz"))
