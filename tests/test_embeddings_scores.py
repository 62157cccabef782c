"""Scores from embeddings against float64 numpy references that share no code with the package,
bit-for-bit equality with the materialized matrix, and the errors of bad inputs."""

from __future__ import annotations

import dask
import numpy as np
import pytest
import xarray as xr

from bosaris_dask.embeddings import from_arrays, scores_from_embeddings
from bosaris_dask.errors import ParseError, ScoreError, TrialError
from bosaris_dask.metrics import evaluate
from bosaris_dask.trials import key_from_labels, make_key, make_scores

D = 16


def _set(n, prefix, seed, speakers=5):
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(99).normal(size=(speakers, D))
    labels = np.arange(n) % speakers
    x = (centres[labels] + 0.8 * rng.normal(size=(n, D)) + 0.5).astype(np.float32)
    ids = [f"spk{lab}-{prefix}{i}" for i, lab in enumerate(labels)]
    return ids, labels, x


def _cosine_ref(a, b, center=None):
    a, b = a.astype(np.float64), b.astype(np.float64)
    if center is not None:
        a, b = a - center, b - center
    a = a / np.sqrt((a**2).sum(axis=1, keepdims=True))
    b = b / np.sqrt((b**2).sum(axis=1, keepdims=True))
    return np.einsum("ik,jk->ij", a, b)


def _assert_rounded(ours, ref):
    """``ours`` is float32 and within half a float32 ulp of the float64 reference (plus the
    float64 error of a 16-term sum)."""
    assert ours.dtype == np.float32
    err = np.abs(ours.astype(np.float64) - ref)
    assert (err <= np.spacing(np.abs(ref).astype(np.float32)) / 2 + 1e-14).all(), err.max()
    assert np.mean(ours == ref.astype(np.float32)) > 0.999


@pytest.fixture
def sets():
    e_ids, e_lab, e = _set(37, "e", 1)
    t_ids, t_lab, t = _set(53, "t", 2)
    return (e_ids, e_lab, e), (t_ids, t_lab, t)


def test_cosine_equals_float64_reference_to_float32_rounding(sets):
    (e_ids, _, e), (t_ids, _, t) = sets
    s = scores_from_embeddings(from_arrays(e_ids, e), from_arrays(t_ids, t), chunks=(8, 12))
    assert s.attrs["bosaris_kind"] == "scores" and s.score.data.chunks[0] == (8,) * 4 + (5,)
    assert s.model.values.tolist() == e_ids and s.segment.values.tolist() == t_ids
    _assert_rounded(s.score.values, _cosine_ref(e, t))
    assert bool(s.score_mask.all())


def test_dot_backend_and_centering(sets, tmp_path):
    (e_ids, _, e), (t_ids, _, t) = sets
    E, T = from_arrays(e_ids, e), from_arrays(t_ids, t)
    dot = scores_from_embeddings(E, T, backend="dot", chunks=(10, 10)).score.values
    ref = e.astype(np.float64) @ t.astype(np.float64).T
    np.testing.assert_allclose(dot, ref, rtol=2e-7, atol=1e-6)
    mu = np.array([0.5] * D)
    _assert_rounded(scores_from_embeddings(E, T, center=mu).score.values, _cosine_ref(e, t, mu))
    # estimated from a named set: the float64 mean of its vectors
    _, _, c = _set(29, "c", 3)
    est = scores_from_embeddings(E, T, center=from_arrays([f"c{i}" for i in range(29)], c))
    _assert_rounded(est.score.values, _cosine_ref(e, t, c.astype(np.float64).mean(axis=0)))
    # a .npy file: a 1-D vector is the mean itself, a 2-D array (no ids needed) gives its mean
    np.save(tmp_path / "mean.npy", mu)
    np.save(tmp_path / "rows.npy", c)
    for path, vec in (("mean.npy", mu), ("rows.npy", c.astype(np.float64).mean(axis=0))):
        got = scores_from_embeddings(E, T, center=tmp_path / path).score.values
        _assert_rounded(got, _cosine_ref(e, t, vec))
    # Kaldi's mean.vec (ivector-mean), binary and text
    kaldiio = pytest.importorskip("kaldiio")
    kaldiio.save_mat(str(tmp_path / "mean.vec"), mu.astype(np.float32))
    with open(tmp_path / "text.vec", "w") as f:
        f.write(" [ " + " ".join(repr(float(x)) for x in mu) + " ]\n")
    for name in ("mean.vec", "text.vec"):
        got = scores_from_embeddings(E, T, center=tmp_path / name).score.values
        _assert_rounded(got, _cosine_ref(e, t, mu))
    # a text .vec of 17 digits is read digit for digit, as the .npy of the same mean
    fine = mu + np.random.default_rng(5).normal(0.0, 0.1, D)  # not float32 numbers
    np.save(tmp_path / "fine.npy", fine)
    (tmp_path / "fine.vec").write_text(" [ " + " ".join(map(repr, fine.tolist())) + " ]\n")
    got = scores_from_embeddings(E, T, center=tmp_path / "fine.vec").score.values
    np.testing.assert_array_equal(
        got, scores_from_embeddings(E, T, center=tmp_path / "fine.npy").score.values
    )
    _assert_rounded(got, _cosine_ref(e, t, fine))
    # a file of neither form is said to be so, not an id's unreadable entry
    (tmp_path / "bad.vec").write_text("[ 1.0 x 2.0 ]\n")
    with pytest.raises(ParseError, match=r"bad.vec: value 'x' of the text vector .* not a number"):
        scores_from_embeddings(E, T, center=tmp_path / "bad.vec")
    (tmp_path / "cut.vec").write_bytes(b"\0BFV \4")
    with pytest.raises(ParseError, match=r"cut.vec: not a Kaldi vector \(text .* or binary"):
        scores_from_embeddings(E, T, center=tmp_path / "cut.vec")


def test_model_map_averages_normalized_segments(sets, tmp_path):
    (e_ids, _, e), (t_ids, _, t) = sets
    path = tmp_path / "models.txt"
    groups = {"A": [0, 3, 7], "B": [1], "C": [36, 2]}
    path.write_text("".join(f"{m} {e_ids[i]}\n" for m, rows in groups.items() for i in rows))
    s = scores_from_embeddings(from_arrays(e_ids, e), from_arrays(t_ids, t), models=path)
    unit = e.astype(np.float64) / np.linalg.norm(e.astype(np.float64), axis=1, keepdims=True)
    model = np.stack([unit[rows].mean(axis=0) for rows in groups.values()])
    assert s.model.values.tolist() == ["A", "B", "C"]
    _assert_rounded(s.score.values, _cosine_ref(model, t))


def test_a_model_without_segments_is_refused_by_name(sets):
    # it was dropped from the scores without a word; with a key naming it, the error said
    # "key model id 'm0' is not in the model map"
    (e_ids, _, e), (t_ids, _, t) = sets
    with pytest.raises(TrialError, match="model map: model 'm0' has no segments"):
        scores_from_embeddings(from_arrays(e_ids, e), from_arrays(t_ids, t),
                               models={"m0": [], "m1": [e_ids[0]]})  # fmt: skip


def test_key_selects_ids_order_and_trials(sets):
    (e_ids, e_lab, e), (t_ids, t_lab, t) = sets
    models, segs = [e_ids[5], e_ids[0], e_ids[9]], t_ids[10:20][::-1]
    rng = np.random.default_rng(4)
    mask = rng.choice([-1, 0, 1], size=(3, 10))
    key = make_key(models, segs, mask)
    s = scores_from_embeddings(from_arrays(e_ids, e), from_arrays(t_ids, t), trials=key,
                               chunks=(2, 4))  # fmt: skip
    assert s.model.values.tolist() == models and s.segment.values.tolist() == list(segs)
    np.testing.assert_array_equal(s.score_mask.values, mask != 0)
    rows = [e_ids.index(m) for m in models]
    cols = [t_ids.index(x) for x in segs]
    _assert_rounded(s.score.values, _cosine_ref(e[rows], t[cols]))


def test_evaluate_from_embeddings_equals_the_materialized_matrix_bit_for_bit(sets):
    (e_ids, e_lab, e), (t_ids, t_lab, t) = sets
    key = key_from_labels(e_ids, e_lab, t_ids, t_lab, chunks=(8, 12))
    lazy = scores_from_embeddings(from_arrays(e_ids, e), from_arrays(t_ids, t), trials=key,
                                  chunks=(8, 12))  # fmt: skip
    # the same chunks: the engine's float sums (Cllr) are then added in the same order
    dense = make_scores(e_ids, t_ids, lazy.score.values, chunks=(8, 12))
    a, b = evaluate(lazy, key, priors=[0.5, 0.01]), evaluate(dense, key, priors=[0.5, 0.01])
    xr.testing.assert_identical(a, b)
    assert float(a.eer.item()) > 0  # a real evaluation, not an empty one


def test_the_same_block_gives_the_same_bits(sets):
    (e_ids, _, e), (t_ids, _, t) = sets
    s = scores_from_embeddings(from_arrays(e_ids, e), from_arrays(t_ids, t), chunks=(8, 12))
    first = s.score.values
    again = s.score.data.compute(scheduler="sync")
    block = s.score.data.blocks[2, 3].compute(scheduler="threads")
    assert first.tobytes() == again.tobytes()
    assert block.tobytes() == first[16:24, 36:48].tobytes()
    with dask.config.set(scheduler="threads", num_workers=2):
        assert s.score.values.tobytes() == first.tobytes()


def test_bad_embeddings_are_named(sets, tmp_path):
    (e_ids, _, e), (t_ids, _, t) = sets
    T = from_arrays(t_ids, t, source="test.npz")
    bad = e.copy()
    bad[4, 2] = np.nan
    with pytest.raises(ScoreError, match=rf"enrol.h5: id '{e_ids[4]}' has NaN or infinite"):
        scores_from_embeddings(from_arrays(e_ids, bad, source="enrol.h5"), T)
    zero = e.copy()
    zero[6] = 0
    with pytest.raises(ScoreError, match=rf"enrol.h5: id '{e_ids[6]}' has zero norm"):
        scores_from_embeddings(from_arrays(e_ids, zero, source="enrol.h5"), T)
    # zero vectors are fine for the dot product
    scores_from_embeddings(from_arrays(e_ids, zero), T, backend="dot")
    with pytest.raises(TrialError, match="dimension 8 in .*enrol.h5.* and 16 in test.npz"):
        scores_from_embeddings(from_arrays(e_ids, e[:, :8], source="enrol.h5"), T)
    key = make_key([e_ids[0]], ["nobody"], [[1]])
    with pytest.raises(TrialError, match="key segment id 'nobody' has no embedding in test.npz"):
        scores_from_embeddings(from_arrays(e_ids, e), T, trials=key)
    path = tmp_path / "map.txt"
    path.write_text(f"A {e_ids[0]}\nA ghost\n")
    with pytest.raises(TrialError, match=r"map.txt:2: segment 'ghost' of model 'A' has no "):
        scores_from_embeddings(from_arrays(e_ids, e), T, models=path)
    path.write_text(f"A {e_ids[0]}\n")
    with pytest.raises(TrialError, match="key model id 'B' is not in the model map .*map.txt"):
        scores_from_embeddings(from_arrays(e_ids, e), T, models=path,
                               trials=make_key(["B"], [t_ids[0]], [[1]]))  # fmt: skip


def test_blas_pin_is_shared_by_concurrent_tasks_and_restored(sets):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    (e_ids, _, e), (t_ids, _, t) = sets

    def blas_threads():
        return [i["num_threads"] for i in threadpoolctl.threadpool_info()
                if i["user_api"] == "blas"]  # fmt: skip

    before = blas_threads()
    s = scores_from_embeddings(from_arrays(e_ids, e), from_arrays(t_ids, t), chunks=(4, 4))
    runs = [s.score.data.compute(scheduler="threads", num_workers=4) for _ in range(3)]
    assert all(r.tobytes() == runs[0].tobytes() for r in runs)
    assert blas_threads() == before  # the last task out restored the original limits


@pytest.mark.parametrize("exponent", [600, -560])
def test_embeddings_far_from_unit_scale_score_as_at_unit_scale(exponent):
    # scaled by a power of two, the prepared (normalized) rows are the same bits, so are the
    # scores; unscaled squares overflowed (norm inf: every score 0) or fell to subnormals
    rng = np.random.default_rng(4)
    e, t = rng.normal(size=(6, 16)), rng.normal(size=(9, 16))
    unit = scores_from_embeddings(from_arrays(list("abcdef"), e),
                                  from_arrays([f"t{j}" for j in range(9)], t))  # fmt: skip
    far = scores_from_embeddings(from_arrays(list("abcdef"), np.ldexp(e, exponent)),
                                 from_arrays([f"t{j}" for j in range(9)], t))  # fmt: skip
    assert far.score.values.tobytes() == unit.score.values.tobytes()
    assert np.abs(unit.score.values).max() > 0.1


def test_subnormal_embeddings_score_as_their_exact_rescaling():
    """Rows of about 1e-319 (subnormal, so with few bits of their own) had norms rounded to a
    few bits before the division: cosines were 1e-4 off, a row's with itself 1.0002."""
    rng = np.random.default_rng(9)
    tiny = np.ldexp(rng.normal(size=(5, 8)), -1060)  # the directions these bits hold
    ids = list("abcde")
    got = scores_from_embeddings(from_arrays(ids, tiny), from_arrays(ids, tiny))
    rescaled = from_arrays(ids, np.ldexp(tiny, 1060))  # exact: the same directions
    assert (
        got.score.values.tobytes()
        == scores_from_embeddings(rescaled, rescaled).score.values.tobytes()
    )


def test_dot_products_beyond_float32_are_refused_not_written(sets):
    """Embeddings of norm 1e20 (dot back-end) gave inf scores, and of 1e-25 all-zero ones (EER
    50 %), with exit status 0."""
    (e_ids, _, e), (t_ids, _, t) = sets
    for scale, what in ((1e20, "beyond float32 scores"), (1e-25, "are all below")):
        big_e = from_arrays(e_ids, e * scale, source="e.npz")
        big_t = from_arrays(t_ids, t * scale, source="t.npz")
        with pytest.raises(ScoreError, match=f"dot products of e.npz and t.npz .*{what}"):
            scores_from_embeddings(big_e, big_t, backend="dot")
    scores_from_embeddings(
        from_arrays(e_ids, e * 1e5), from_arrays(t_ids, t * 1e5), backend="dot"
    )  # fmt: skip  (in range: scored)


def test_a_cohort_holding_the_trials_ids_warns_and_an_empty_one_is_refused(sets):
    from bosaris_dask.embeddings import CohortWarning  # public: users filter it
    from bosaris_dask.errors import OptionError

    (e_ids, _, e), (t_ids, _, t) = sets
    enrol, test = from_arrays(e_ids, e, source="e.npz"), from_arrays(t_ids, t, source="t.npz")
    with pytest.warns(CohortWarning, match=r"the cohort t.npz holds \d+ of the ids of t.npz"):
        scores_from_embeddings(enrol, test, norm="s", cohort=test)
    one = from_arrays(["c"], e[:1], source="c.npz")
    with pytest.raises(OptionError, match="c.npz: a cohort needs at least 2 embeddings, got 1"):
        scores_from_embeddings(enrol, test, norm="z", cohort=one)
