"""ECE per condition and in the printed table: each condition's raw and PAV-calibrated ECE equal
the definition over that condition's trials (brute force, ``tests/reference.py``) and, bit for
bit, an evaluation of those trials alone; grouped and masked kernels agree; no extra pass; the
table shows the ECE at the operating points; ``--ece-plo`` builds the grid."""

from __future__ import annotations

import json

import dask
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import logit

from bosaris_dask import metrics
from bosaris_dask.cli import main
from bosaris_dask.conditions import condition_table
from bosaris_dask.conditions.summaries import GROUPED_KEY, POOLED_KEY
from bosaris_dask.costs import OperatingPoint
from bosaris_dask.ece import DEFAULT_ECE_PLO
from bosaris_dask.report import format_table, to_json_dict
from bosaris_dask.trials import make_key, make_scores

from . import reference as ref

PLO = np.array([-5.0, -1.5, 0.0, 0.7, 3.0])


def _chunks(draw, n):
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=3)))
    edges = [0, *cuts, n]
    return tuple(b - a for a, b in zip(edges[:-1], edges[1:], strict=True))


def _setup(seed, shape, ties, chunks, n_sys=2):
    rng = np.random.default_rng(seed)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=shape, p=[0.7, 0.3])
    mask[0, 0], mask[-1, -1] = 1, -1
    gender = rng.choice(["f", "m"], size=shape[0])
    source = rng.choice(["tel", "mic", "vid"], size=shape[1])
    key = make_key(range(shape[0]), range(shape[1]), mask, chunks=chunks)
    values = []
    for _ in range(n_sys):
        raw = rng.normal(size=shape) * 2 + 1.5 * mask
        values.append(np.round(raw * ties) / ties if ties else raw)
    scores = [make_scores(range(shape[0]), range(shape[1]), v, chunks=chunks) for v in values]
    tables = [
        condition_table("model", list(range(shape[0])), {"gender": list(gender)}),
        condition_table("segment", list(range(shape[1])), {"source": list(source)}),
    ]
    return mask, values, key, scores, tables, gender, source


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), shape=st.tuples(st.integers(4, 9), st.integers(6, 16)),
       ties=st.sampled_from([2, None]), grouped=st.booleans(), data=st.data())  # fmt: skip
def test_condition_ece_is_the_definition_over_its_trials(seed, shape, ties, grouped, data):
    chunks = (_chunks(data.draw, shape[0]), _chunks(data.draw, shape[1]))
    mask, values, key, scores, tables, gender, source = _setup(seed, shape, ties, chunks)
    # 2 conditions (the kernel's 0/1-weight sums) or 6 (its weighted bincount)
    by = data.draw(st.sampled_from([["model.gender"], ["model.gender", "segment.source"]]))
    with dask.config.set({GROUPED_KEY: grouped}):
        ds = metrics.evaluate(scores, key, priors=[0.5], conditions=tables, by=by,
                              ece_plo=PLO, split_every=2)  # fmt: skip
    plain = metrics.evaluate(scores, key, priors=[0.5], ece_plo=PLO)
    np.testing.assert_array_equal(ds.ece.values, plain.ece.values)  # pooled: bit for bit
    for g, label in enumerate(ds.condition.values):
        spec = dict(part.split("=") for part in str(label).split(", "))
        cell = (gender[:, None] == spec["model.gender"]) & (
            source[None, :] == spec.get("segment.source", source[None, :]))  # fmt: skip
        for k, v in enumerate(values):
            tar, non = v[(mask == 1) & cell], v[(mask == -1) & cell]
            got, got_pav = ds.condition_ece.values[k, g], ds.condition_ece_pav.values[k, g]
            if not len(tar) or not len(non):
                assert np.isnan(got).all() and np.isnan(got_pav).all()
                continue
            pav_t, pav_n = ref.pav_llr_of(tar, non)
            for j, a in enumerate(PLO):
                assert got[j] == pytest.approx(ref.ece(tar, non, a), rel=1e-12, abs=1e-15)
                assert got_pav[j] == pytest.approx(ref.ece(pav_t, pav_n, a), rel=1e-12,
                                                   abs=1e-15)  # fmt: skip
            alone = metrics.evaluate_arrays(tar, non, priors=[0.5], ece_plo=PLO)
            np.testing.assert_array_equal(got, alone.ece.values[0])  # the same exact sums
            at0 = int(np.flatnonzero(PLO == 0.0)[0])
            assert got[at0] == ds.condition_cllr.values[k, g]


def test_no_extra_pass_and_the_rest_unchanged():
    mask, values, key, scores, tables, _, _ = _setup(7, (20, 30), None, (8, 12))
    by = ["model.gender", "segment.source"]
    plain = metrics.evaluate(scores, key, priors=[0.01], conditions=tables, by=by)
    ece = metrics.evaluate(scores, key, priors=[0.01], conditions=tables, by=by, ece_plo=PLO)
    assert ece.attrs["passes"] == plain.attrs["passes"]
    for name in ("condition_eer", "condition_min_dcf", "condition_cllr", "eer", "cllr"):
        np.testing.assert_array_equal(ece[name].values, plain[name].values)
    assert ece.condition_ece.dims == ("system", "condition", "ece_plo")
    assert ece.condition_ece.attrs["units"] == "bits"
    # the pooled summaries counted apart (pooled-as-plain): the same sums, bit for bit
    with dask.config.set({POOLED_KEY: True}):
        apart = metrics.evaluate(scores, key, priors=[0.01], conditions=tables, by=by,
                                 ece_plo=PLO)  # fmt: skip
    for name in ("ece", "condition_ece", "condition_ece_pav"):
        np.testing.assert_array_equal(apart[name].values, ece[name].values)
    # the PAV curve sums over the summary's bins, which are finer when counted apart
    np.testing.assert_allclose(apart.ece_pav.values, ece.ece_pav.values, rtol=1e-14)
    pooled = metrics.evaluate(scores, key, priors=[0.01], ece_plo=PLO)
    np.testing.assert_array_equal(apart.ece.values, pooled.ece.values)


@pytest.mark.parametrize(
    "options",
    [
        {"by": ["model.gender"]},
        {"equalize": True, "by": ["segment.source"]},
        {"cprimary_priors": [0.01]},
    ],
)
def test_ece_with_a_bootstrap_and_conditions_is_the_evaluations(options):
    # the bootstrap's conditioned path refused ece_plo with a name ece.py no longer had: an
    # ImportError traceback instead of the ECE (found by an audit)
    mask, values, key, scores, tables, _, _ = _setup(5, (14, 18), None, (7, 9))
    tables_if_by = tables if "by" in options else ()  # the bootstrap's resample reads them
    alone = metrics.evaluate(scores, key, priors=[0.01], conditions=tables_if_by, ece_plo=PLO,
                             **options)  # fmt: skip
    booted = metrics.evaluate(scores, key, priors=[0.01], conditions=tables, ece_plo=PLO,
                              bootstrap=20, ci=0.9, resample=["model.gender"], seed=1,
                              **options)  # fmt: skip
    names = [n for n in alone.data_vars if "ece" in n]
    assert "ece" in names and ("condition_ece" in names) == ("by" in options)
    for name in names:
        np.testing.assert_array_equal(booted[name].values, alone[name].values)
    assert "eer_ci" in booted


def test_table_shows_the_ece_at_the_operating_points_per_condition():
    mask, values, key, scores, tables, _, _ = _setup(3, (12, 20), None, (6, 10), n_sys=1)
    priors = [0.5, 0.01]
    grid = np.unique(np.concatenate([PLO, logit(priors)]))
    ds = metrics.evaluate(scores, key, priors=priors, conditions=tables[:1],
                          by=["model.gender"], ece_plo=grid)  # fmt: skip
    text = format_table(ds)
    blocks = text.split("empirical cross-entropy in bits")
    assert len(blocks) == 1 + 1 + ds.sizes["condition"]  # pooled, then each condition
    j = [int(np.flatnonzero(grid == a)[0]) for a in logit(priors)]
    row = [line for line in blocks[1].splitlines() if line.startswith("system-1")][0]
    want = [f"{ds.ece.values[0, i]:.3f} / {ds.ece_pav.values[0, i]:.3f}" for i in j]
    assert row.split()[1:] == " ".join(want).split()
    assert row.split()[1] == f"{float(ds.cllr[0]):.3f}"  # at P = 0.5: Cllr
    neutral = [line for line in blocks[1].splitlines() if line.startswith("LR = 1")][0]
    assert neutral.split()[3:] == ["1.000", f"{ds.ece_neutral.values[j[1]]:.3f}"]
    # a grid without the operating points says so instead
    off = metrics.evaluate(scores, key, priors=[0.1], ece_plo=PLO)
    assert "no operating point on the ECE grid" in format_table(off)
    # JSON: per condition, with the pooled neutral curve
    doc = to_json_dict(ds)["systems"][0]
    first = doc["conditions"][0]["ece"]
    assert first["raw"] == ds.condition_ece.values[0, 0].tolist()
    assert first["neutral"] == doc["ece"]["neutral"] == ds.ece_neutral.values.tolist()


def _text_scores(tmp_path):
    rng = np.random.default_rng(5)
    lines = [f"m{i} t{i} {float(s)!r} target" for i, s in enumerate(rng.normal(1, 1, 40))]
    lines += [f"m{i} n{i} {float(s)!r} nontarget" for i, s in enumerate(rng.normal(-1, 1, 160))]
    path = tmp_path / "scores.txt"
    path.write_text("\n".join(lines) + "\n")
    table = tmp_path / "models.tsv"
    table.write_text("model\tg\n" + "".join(f"m{i}\t{i % 2}\n" for i in range(160)))
    return path, table


def test_cli_ece_plo_grid_with_by(tmp_path, capsys):
    path, table = _text_scores(tmp_path)
    out = tmp_path / "r.json"
    argv = [
        "evaluate",
        "--format",
        "wespeaker",
        "--scores",
        str(path),
        "--json",
        str(out),
        "--prior",
        "0.5",
        "--prior",
        "0.01",
        "--conditions",
        str(table),
        "--by",
        "model.g",
    ]
    assert main([*argv, "--ece-plo=-4:4:9", "--ece-plo", "0.25"]) == 0  # implies --ece
    printed = capsys.readouterr().out
    assert printed.count("empirical cross-entropy in bits") == 3  # pooled and two conditions
    entry = json.loads(out.read_text())["systems"][0]
    points = [OperatingPoint.from_prior(p).plo for p in (0.5, 0.01)]  # logit, rounded down
    np.testing.assert_allclose(points, logit([0.5, 0.01]), rtol=3e-16, atol=0)
    want = np.unique(np.concatenate([np.linspace(-4, 4, 9), [0.25], points]))
    assert entry["ece"]["plo"] == want.tolist()
    assert [len(c["ece"]["raw"]) for c in entry["conditions"]] == [len(want)] * 2
    # each condition's ECE is its own trials': targets and non-targets of models m0, m2, ...
    rng = np.random.default_rng(5)
    tar, non = rng.normal(1, 1, 40), rng.normal(-1, 1, 160)
    even = entry["conditions"][0]
    assert even["by"] == {"model.g": "0"}
    for i, a in enumerate(want):
        assert even["ece"]["raw"][i] == pytest.approx(ref.ece(tar[::2], non[::2], a), rel=1e-12)
    # the default grid, and the operating points' prior log-odds
    assert main([*argv[:-4], "--ece", "-q"]) == 0
    grid = json.loads(out.read_text())["systems"][0]["ece"]["plo"]
    assert grid == np.unique(np.concatenate([DEFAULT_ECE_PLO, points])).tolist()


@pytest.mark.parametrize("value", ["1:2", "a", "3:1:5", "-1:1:1", "1e999"])
def test_cli_bad_ece_plo_is_a_one_line_error(tmp_path, capsys, value):
    path, _ = _text_scores(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", "--format", "wespeaker", "--scores", str(path), f"--ece-plo={value}"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--ece-plo" in err and value in err


def test_plot_draws_a_curve_per_condition():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from bosaris_dask.conditions.evaluation import conditions_as_systems
    from bosaris_dask.plots import ece_plot

    mask, values, key, scores, tables, _, _ = _setup(5, (12, 20), None, (6, 10), n_sys=1)
    ds = metrics.evaluate(scores, key, priors=[0.5], conditions=tables[:1], by=["model.gender"],
                          ece_plo=PLO)  # fmt: skip
    flat = conditions_as_systems(ds)
    assert flat.ece_neutral.dims == ("ece_plo",) and flat.ece.dims == ("system", "ece_plo")
    ax = ece_plot(flat, ax=Figure().add_subplot())
    lines = {line.get_gid(): line for line in ax.get_lines()}
    for g, label in enumerate(ds.condition.values):
        raw = lines[f"ece/raw/system-1 [{label}]"]
        np.testing.assert_array_equal(raw.get_ydata(), ds.condition_ece.values[0, g])
        pav = lines[f"ece/pav/system-1 [{label}]"]
        np.testing.assert_array_equal(pav.get_ydata(), ds.condition_ece_pav.values[0, g])
    np.testing.assert_array_equal(lines["ece/neutral"].get_ydata(), ds.ece_neutral.values)


@pytest.mark.parametrize("n_groups", [1, 2, 3, 7])
def test_kernel_sums_per_group_are_the_plain_kernels_of_each_group(n_groups):
    from bosaris_dask.passes import grouped_cross_entropy as gk
    from bosaris_dask.passes import softplus

    rng = np.random.default_rng(n_groups)
    shape = (30, 41)
    classes = rng.choice(np.array([-1, 0, 1], dtype=np.int8), size=shape)
    groups = rng.integers(0, n_groups, size=shape).astype(np.int16)
    scores = (rng.normal(size=shape) * 30).astype(np.float32)
    scores[0, :3] = [1e6, -1e6, 5e5]  # terms past the fast path's range: the exact one
    mask = rng.random(shape) < 0.9
    args = (np.arange(shape[0]), np.arange(shape[1]), classes, groups, scores, mask)
    out = gk.grouped_cross_entropy_kernel(*args, system=0, plo=PLO, n_groups=n_groups,
                                          block=64, slice_size=256)  # fmt: skip
    units = gk.split_cross_entropy(out, len(PLO), n_groups)
    for g in range(n_groups):
        alone = softplus.cross_entropy_kernel(
            *args[:2], np.where(groups == g, classes, 0).astype(np.int8), scores, mask,
            system=0, plo=PLO, block=64, slice_size=256,
        )  # fmt: skip
        want = gk.split_cross_entropy(alone, len(PLO), 1)
        assert [u[g] for u in units] == [w[0] for w in want]
