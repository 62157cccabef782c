"""The engine fails loudly when two passes over the same scores disagree (issue 13,
Exactness): a refinement pass must find, inside each bin it refines, exactly the targets and
non-targets pass 1 counted there."""

from __future__ import annotations

import threading

import dask
import dask.array as da
import numpy as np
import pytest

from bosaris_dask import engine
from bosaris_dask.errors import InconsistentPassesError
from bosaris_dask.passes import refine_kernels, refinement
from bosaris_dask.passes.keys import key_bits, order_keys
from bosaris_dask.trials import make_key, make_scores

RNG = np.random.default_rng(13)
MASK = RNG.choice(np.array([-1, 1], dtype=np.int8), size=(24, 40))
VALUES = RNG.normal(size=(24, 40)) + MASK


def _scores(change_on_reread: bool):
    """Scores whose blocks are computed anew at each pass; with ``change_on_reread``, every
    block read a second time comes back shifted by 1000 (a file rewritten between passes)."""
    seen, lock = set(), threading.Lock()

    def block(x, block_info=None):
        if block_info is None:
            return x
        where = tuple(block_info[0]["chunk-location"])
        with lock:
            again = where in seen
            seen.add(where)
        return x + 1000.0 if again and change_on_reread else x

    source = da.from_array(VALUES, chunks=(8, 10))
    arr = da.map_blocks(block, source, dtype=np.float64, meta=np.empty((0, 0)))
    ids_m, ids_s = [f"m{i}" for i in range(24)], [f"s{j}" for j in range(40)]
    return make_key(ids_m, ids_s, MASK), make_scores(ids_m, ids_s, arr), seen


def test_a_deterministic_source_refines_to_the_exact_counts():
    key, scores, _ = _scores(change_on_reread=False)
    with dask.config.set(scheduler="sync"):
        (s,) = engine.summarize([scores], key, coarse_bits=4)
    assert s.passes >= 2  # pass 1 and at least one refinement pass read the blocks again
    assert int(s.n_tar.sum()) == int((MASK == 1).sum())
    # every bin is exact: its trials, counted by brute force on the scores
    bins = np.searchsorted(s.lo, order_keys(VALUES[MASK == 1]), side="right") - 1
    np.testing.assert_array_equal(np.bincount(bins, minlength=len(s.lo)), s.n_tar)


def test_scores_that_change_between_passes_fail_loudly():
    key, scores, seen = _scores(change_on_reread=True)
    with (
        dask.config.set(scheduler="sync"),
        pytest.raises(InconsistentPassesError, match=r"changed between passes over the data"),
    ):
        engine.summarize([scores], key, coarse_bits=4)
    assert len(seen) == 12  # every block was read, and the change was caught on a re-read


def _wide_summary():
    """Pass 1 by hand: 4-bit bins of the exact keys, with their true counts."""
    shift = key_bits(np.float64) - 4
    keys = order_keys(np.concatenate([VALUES[MASK == 1], VALUES[MASK == -1]]))
    is_tar = np.arange(len(keys)) < (MASK == 1).sum()
    lo = np.unique(keys >> np.uint64(shift)) << np.uint64(shift)
    n_tar, n_non = (np.bincount(np.searchsorted(lo, k, side="right") - 1, minlength=len(lo))
                    for k in (keys[is_tar], keys[~is_tar]))  # fmt: skip
    bits = np.full(len(lo), shift, np.int8)
    s = engine.ScoreSummary(np.dtype(np.float64), lo=lo, bits=bits, n_tar=n_tar, n_non=n_non,
                            softplus_units=(1, 1))  # fmt: skip
    return s, shift, keys, is_tar


@pytest.mark.parametrize("raw", [True, False])
def test_refinement_counts_must_add_up_to_pass_1(raw):
    s, shift, keys, is_tar = _wide_summary()
    cands = np.flatnonzero((s.n_tar > 0) & (s.n_non > 0))
    assert len(cands) >= 2
    spec = refinement.plan(s, cands, shift, dense_budget=64, raw_limit=1 << 22 if raw else 0)
    assert spec.raw == raw
    inside = np.isin(np.searchsorted(s.lo, keys, side="right") - 1, cands)
    exact = refine_kernels.count_selected(keys[inside], is_tar[inside], spec)
    fine = refinement.apply_refinement(s, cands, spec, exact)  # the true counts: accepted
    assert fine.n_tar.sum() == s.n_tar.sum() and fine.n_non.sum() == s.n_non.sum()
    # one non-target of the first candidate bin counted as a target
    flipped = is_tar.copy()
    flipped[np.flatnonzero(inside & ~is_tar)[0]] = True
    with pytest.raises(InconsistentPassesError, match=r"targets and \d+ non-targets in a score "
                       r"bin where pass 1 counted"):  # fmt: skip
        refinement.apply_refinement(
            s, cands, spec, refine_kernels.count_selected(keys[inside], flipped[inside], spec)
        )
    # one trial lost
    with pytest.raises(InconsistentPassesError):
        refinement.apply_refinement(
            s,
            cands,
            spec,
            refine_kernels.count_selected(keys[inside][1:], is_tar[inside][1:], spec),
        )
    if raw:  # an exact key outside every candidate bin
        lo, counts = exact
        outside = s.lo[np.setdiff1d(np.arange(len(s.lo)), cands)[0]]
        extra = (np.append(lo, outside), np.vstack([counts, [[1, 0]]]))
        with pytest.raises(InconsistentPassesError, match="outside every bin it refined"):
            refinement.apply_refinement(s, cands, spec, extra)
