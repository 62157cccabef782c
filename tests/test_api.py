"""The public surface (issue 15): the top level is what README documents, ``help(bd)`` lists
exactly it, a name means one thing in every module, and renamed names warn for one release."""

import importlib
import inspect
import pkgutil
import pydoc
import re
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import bosaris_dask as bd
from bosaris_dask import conditions, metrics, roc, trials
from bosaris_dask.conditions import evaluation

README = Path(__file__).resolve().parents[1] / "README.md"


def _readme_api() -> set[str]:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- api:.*?-->(.*?)<!-- /api -->", text, re.S)
    assert block, "README.md has no <!-- api --> block"
    return set(re.findall(r"`bd\.(\w+)`", block.group(1)))


def test_top_level_all_is_what_readme_documents():
    assert set(bd.__all__) == _readme_api()
    assert len(bd.__all__) == len(set(bd.__all__))


def test_every_top_level_name_exists_and_is_documented():
    for name in bd.__all__:
        obj = getattr(bd, name)
        assert inspect.getdoc(obj), name


def test_help_lists_exactly_the_top_level_api():
    text = pydoc.render_doc(bd, renderer=pydoc.plaintext)
    functions = text.split("\nFUNCTIONS\n")[1].split("\nDATA\n")[0]
    listed = set(re.findall(r"^    (\w+)\(", functions, re.M))
    classes = text.split("\nCLASSES\n")[1].split("\nFUNCTIONS\n")[0]
    listed |= set(re.findall(r"^    class (\w+)\(", classes, re.M))
    # the module's PEP 562 hooks (its names load on first use, SPEC 1 style) are not API
    assert listed - {"__getattr__", "__dir__"} == set(bd.__all__)
    assert "deprecated_args" not in functions  # align's signature as users should call it
    assert "SUBMODULES" not in text  # no private module bound at the top level


def _public_functions() -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    """name -> [(module, annotations of its required positional parameters)] over every public
    module of the package, for functions defined there."""
    found: dict[str, list[tuple[str, tuple[str, ...]]]] = defaultdict(list)
    for info in pkgutil.walk_packages(bd.__path__, "bosaris_dask."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if name.startswith("_") or not inspect.isfunction(obj):
                continue
            if obj.__module__ != module.__name__:
                continue
            params = inspect.signature(obj).parameters.values()
            required = tuple(
                str(p.annotation) for p in params
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            )  # fmt: skip
            found[name].append((module.__name__, required))
    return found


def test_same_name_same_contract_across_modules():
    """Functions of the same name in two public modules take the same kinds of argument
    (``io.read``/``embeddings.read`` both take a path; ``metrics.prbep`` takes scores where
    ``roc.hull_prbep`` takes a hull)."""
    clashes = {
        name: defs for name, defs in _public_functions().items()
        if len({required for _, required in defs}) > 1
    }  # fmt: skip
    assert not clashes


def test_no_module_shares_its_name_with_a_function_of_its_package():
    """A submodule named like a function of its package hides the function once imported
    (``bosaris_dask.operating_points``, ``calibration.pav_map``, ``embeddings.write`` were)."""
    import types

    packages = [bd] + [
        importlib.import_module(i.name)
        for i in pkgutil.walk_packages(bd.__path__, "bosaris_dask.") if i.ispkg
    ]  # fmt: skip
    clashes = []
    for package in packages:
        for sub in pkgutil.iter_modules(package.__path__):
            if sub.name == "__main__":
                continue
            importlib.import_module(f"{package.__name__}.{sub.name}")
            value = getattr(package, sub.name, None)
            if value is not None and not isinstance(value, types.ModuleType):
                clashes.append(f"{package.__name__}.{sub.name}")
    assert not clashes


@pytest.mark.parametrize(
    ("module", "name"),
    [("bosaris_dask.calibration.pav_map", "pav_map"), ("bosaris_dask.embeddings.write", "write")],
)
def test_renamed_modules_serve_from_imports_with_a_warning(module, name):
    with pytest.warns(FutureWarning, match=f"the module {module} is deprecated"):
        old = getattr(importlib.import_module(module), name)
    package = importlib.import_module(module.rsplit(".", 1)[0])
    assert old is getattr(package, name) and callable(getattr(package, name))


@pytest.mark.parametrize(
    ("old", "new"),
    [("rocch", "hull_from_counts"), ("rocch_eer", "hull_eer"), ("prbep", "hull_prbep"),
     ("uer", "hull_uer"), ("min_cllr", "hull_min_cllr")],
)  # fmt: skip
def test_renamed_roc_functions_warn_and_still_work(old, new):
    with pytest.warns(FutureWarning, match=rf"bosaris_dask\.roc\.{old} is deprecated.*{new}"):
        func = getattr(roc, old)
    assert func is getattr(roc, new)
    assert old not in roc.__all__


def test_old_roc_names_give_the_values_of_the_new_ones():
    n_tar, n_non = np.array([1, 0, 1, 2]), np.array([2, 1, 1, 0])
    hull = roc.hull_from_counts(n_tar, n_non)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        from bosaris_dask.roc import min_cllr, prbep  # the from-import warns too

        assert prbep(hull) == roc.hull_prbep(hull) and min_cllr(hull) == roc.hull_min_cllr(hull)
    # metrics' short names take scores: the same PRBEP through the hull of the same trials
    tar, non = [0.0, 2.0, 3.0, 3.0], [0.0, 0.0, 1.0, 2.0]  # the bins above, one per value
    assert metrics.prbep(tar, non) == roc.hull_prbep(roc.hull_from_counts(n_tar, n_non))


def test_unknown_roc_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        roc.nothing  # noqa: B018


def test_the_old_module_of_operating_point_warns_and_no_longer_hides_the_function():
    assert callable(bd.operating_points)  # not a module
    with pytest.warns(FutureWarning, match=r"module bosaris_dask.operating_points .*costs"):
        from bosaris_dask.operating_points import OperatingPoint
    from bosaris_dask.costs import OperatingPoint as new

    assert OperatingPoint is new and callable(bd.operating_points)
    assert "operating_points" not in {m.name for m in pkgutil.iter_modules(bd.__path__)}


def test_renamed_cprimary_warns():
    with pytest.warns(FutureWarning, match="summary_cprimary"):
        assert conditions.cprimary is evaluation.summary_cprimary
    with pytest.warns(FutureWarning, match="summary_cprimary"):
        assert evaluation.cprimary is evaluation.summary_cprimary


def test_align_with_ids_and_align_with_warn_and_give_the_new_results():
    ndx = bd.make_ndx(["m1", "m2"], ["s1", "s2"], [[True, False], [False, True]])
    scores = bd.make_scores(["m2", "m1"], ["s2", "s1"], [[1.0, 2.0], [3.0, 4.0]])
    with pytest.warns(FutureWarning, match=r"align\(obj, models, segments\).*reindex_ids"):
        old = bd.align(scores, ["m1", "m2"], ["s1", "s2"])
    assert old.identical(trials.reindex_ids(scores, ["m1", "m2"], ["s1", "s2"]))
    assert old.score.values.tolist() == [[4.0, 3.0], [2.0, 1.0]]
    with pytest.warns(FutureWarning, match=r"align_with\(obj, like\).*align\(obj, like\)"):
        older = bd.align_with(scores, ndx)
    assert older.identical(bd.align(scores, ndx))
    assert bd.align(scores, ndx).score_mask.values.tolist() == [[True, False], [False, True]]
    with pytest.raises(TypeError, match="align\\(obj, like\\) takes no other"):
        bd.align(scores, ndx, ["x"])


#: Calls of dask's own compute/persist left on purpose: (module, function) -> why.
_TINY_COMPUTES = {
    ("bosaris_dask/inputs.py", "_raise_bad_codes"): "one key element for an error message",
    ("bosaris_dask/objectives/data.py", "fusion_data"): "FusionData.persist: progress.persist",
}


def _compute_calls() -> list[tuple[str, str, int]]:
    """Every ``x.compute(...)``, ``x.persist(...)``, ``dask.compute(...)``... in the package,
    outside :mod:`bosaris_dask.progress` (docstrings are not code, so not counted)."""
    import ast

    root = Path(bd.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        if rel == "bosaris_dask/progress.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        owner: dict[ast.AST, str] = {}
        for func in ast.walk(tree):  # outer functions first: inner ones overwrite
            if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(func):
                    owner[node] = func.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("compute", "persist")
                and not (isinstance(node.func.value, ast.Name) and node.func.value.id == "client")
            ):
                found.append((rel, owner.get(node, "<module>"), node.lineno))
    return sorted(set(found))


def test_the_package_computes_through_progress_compute():
    """Issue 15: one compute wrapper, so client, progress and error handling are the same
    everywhere; the few tiny computes left are listed with their reason."""
    calls = _compute_calls()
    unexplained = [c for c in calls if (c[0], c[1]) not in _TINY_COMPUTES]
    assert not unexplained


def test_old_keyword_align_still_reindexes_with_a_warning():
    ndx = bd.make_ndx(["m1", "m2"], ["s1", "s2"], [[True, False], [False, True]])
    with pytest.warns(FutureWarning, match="reindex_ids"):
        out = bd.align(ndx, models=["m2"], segments=["s1"])
    assert out.model.values.tolist() == ["m2"] and out.segment.values.tolist() == ["s1"]
    with pytest.raises(TypeError, match="'like'"):
        bd.align(ndx)


def test_star_import_of_every_module_works():
    for info in pkgutil.walk_packages(bd.__path__, "bosaris_dask."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        missing = [n for n in getattr(module, "__all__", []) if not hasattr(module, n)]
        assert not missing, f"{info.name}.__all__ names what it lacks: {missing}"


# --------------------------------------------------------------------------------------------
# what the Python API audit found: restrictions that were silently undone
# --------------------------------------------------------------------------------------------

_M, _S = ["m0", "m1", "m2"], ["s0", "s1", "s2", "s3"]
_ML, _SL = np.array([0, 1, 2]), np.array([0, 1, 2, 0])


def _restricting_ndx():
    return bd.make_ndx(_M, _S, np.eye(3, 4, dtype=bool) | np.eye(3, 4, k=1, dtype=bool))


def _scores():
    return bd.make_scores(_M, _S, np.arange(12.0).reshape(3, 4) - 5)


@pytest.mark.parametrize("labels", [False, True])
def test_align_restricts_a_key_to_the_trials_of_an_ndx(labels):
    key = (bd.key_from_labels(_M, _ML, _S, _SL) if labels
           else bd.make_key(_M, _S, np.where(_ML[:, None] == _SL[None, :], 1, -1)))  # fmt: skip
    ndx = _restricting_ndx()
    restricted = bd.align(key, ndx)  # kept all 12 cells (a label key: evaluated all 12)
    classes = restricted.trial_mask.values
    np.testing.assert_array_equal(classes != 0, ndx.trial_mask.values)
    r = bd.evaluate(_scores(), restricted, priors=[0.5])
    assert (int(r.n_target[0]), int(r.n_nontarget[0])) == (
        (classes == 1).sum(),
        (classes == -1).sum(),
    )
    assert int(r.n_target[0] + r.n_nontarget[0]) == 6


def test_a_label_keys_edited_mask_is_what_is_evaluated():
    key = bd.key_from_labels(_M, _ML, _S, _SL)
    assert trials.is_label_key(key)
    edited = key.assign(trial_mask=key.trial_mask.where(_restricting_ndx().trial_mask, 0))
    assert not trials.is_label_key(edited)  # the labels only ride along now
    r = bd.evaluate(_scores(), edited, priors=[0.5])  # evaluated the 12 label pairs
    assert int(r.n_target[0] + r.n_nontarget[0]) == 6
    loaded = key.load()  # a key in memory is its mask: same trials as the labels give
    assert not trials.is_label_key(loaded)
    assert bd.evaluate(_scores(), loaded).eer.item() == bd.evaluate(_scores(), key).eer.item()


def test_evaluate_cm_refuses_an_sasv_key():
    from bosaris_dask.errors import TrialError
    from bosaris_dask.spoofing.scale import cm_key, evaluate_cm, sasv_key

    key = bd.make_key(_M, _S, np.where(_ML[:, None] == _SL[None, :], 1, -1))
    sasv = sasv_key(key, np.array([False, False, True, True]))
    with pytest.raises(TrialError, match="evaluate_cm takes a CM key"):  # was EER 0.5625
        evaluate_cm(_scores(), sasv)  # of ASV targets as bona fide, ASV non-targets as spoofs
    assert evaluate_cm(_scores(), cm_key(sasv))["n_bonafide"] == 6


def test_quality_fusion_refuses_measures_in_another_order():
    from bosaris_dask.errors import TrialError

    rng = np.random.default_rng(4)
    models, segments = [f"m{i}" for i in range(8)], [f"s{j}" for j in range(30)]
    labels = np.where(rng.random((8, 30)) < 0.3, 1, -1)
    labels[:, 0], labels[:, 1] = 1, -1
    key = bd.make_key(models, segments, labels)
    systems = [bd.make_scores(models, segments, labels + rng.normal(size=labels.shape) * k)
               for k in (1.0, 2.0)]  # fmt: skip
    qm, qs = rng.normal(size=(8, 2)), rng.normal(size=(30, 2))

    def quality(names_m, names_s, order=(0, 1)):
        return bd.make_quality(
            trials.quality_table(models, qm[:, order], measures=names_m),
            trials.quality_table(segments, qs[:, order], measures=names_s),
        )

    fuser = bd.QualityFuser(0.5).fit(systems, key, quality(["snr", "dur"], ["snr", "dur"]))
    assert fuser.measures_ == ["snr", "dur"] and fuser.to_dict()["measures"] == ["snr", "dur"]
    with pytest.raises(TrialError, match=r"the quality measures are \['dur', 'snr'\], the model"):
        fuser.transform(systems, quality(["dur", "snr"], ["dur", "snr"], order=(1, 0)))
    with pytest.raises(TrialError, match="the model side's quality measures are"):
        bd.QualityFuser(0.5).fit(systems, key, quality(["snr", "dur"], ["dur", "snr"]))
    numbered = quality(None, None)  # tables that only number their measures: by position
    from bosaris_dask.fusion import UncheckedMeasuresWarning

    # (their order cannot be checked: a swap of a text table's columns went unseen)
    with pytest.warns(
        UncheckedMeasuresWarning,
        match=r"the quality's measures are only "
        r"numbered, so their order cannot be checked against \['snr', 'dur'\]",
    ):
        assert bd.QualityFuser.from_dict(fuser.to_dict()).transform(systems, numbered) is not None


def _key():
    return bd.make_key(_M, _S, np.where(_ML[:, None] == _SL[None, :], 1, -1))


def test_trial_objects_loaded_into_memory_work_as_stored_ones():
    # every entry point failed with "'numpy.ndarray' object has no attribute 'chunks'"
    scores, key = _scores(), _key()
    lazy = bd.evaluate(scores, key)
    loaded = bd.evaluate(scores.compute(), key.compute())
    assert lazy.cllr.item() == loaded.cllr.item() and lazy.eer.item() == loaded.eer.item()
    cal = bd.LinearCalibrator().fit(scores.load(), key)
    np.testing.assert_array_equal(cal.weights_, bd.LinearCalibrator().fit(scores, key).weights_)
    out = cal.transform(scores.compute()).score.values
    np.testing.assert_array_equal(out, cal.transform(scores).score.values)


@pytest.mark.parametrize(
    "one, many",
    [
        ({"priors": 0.1}, {"priors": [0.1]}),
        ({"priors": np.float64(0.1)}, {"priors": [0.1]}),
        ({"fmr": 0.25}, {"fmr": [0.25]}),
        ({"operating_points": "0.01:10:1"}, {"operating_points": ["0.01:10:1"]}),
        ({"operating_points": [(0.01, 10, 1)]}, {"operating_points": ["0.01:10:1"]}),
    ],
)  # fmt: skip
def test_one_value_where_a_list_is_expected(one, many):
    # TypeErrors ("float has no len()", "'tuple' has no attribute 'split'"), or a string read
    # as its characters ("'0' is not Ptar:Cmiss:Cfa")
    a, b = bd.evaluate(_scores(), _key(), **one), bd.evaluate(_scores(), _key(), **many)
    assert a.identical(b)


def test_python_arguments_that_would_be_ignored_or_poison_a_fit_are_refused():
    from bosaris_dask.errors import OptionError, TrialError

    with pytest.raises(OptionError, match=r"^seed \(--seed\) and bootstrap_method \("):
        bd.evaluate(_scores(), _key(), seed=1)  # ran without a bootstrap, said nothing
    with pytest.raises(TrialError, match=r"targets\(\) needs a Key"):
        _restricting_ndx().bosaris.targets()  # every trial of an Ndx was a "target"
    kept = trials.filter_trials(_key(), models="m1", keep=False)  # dropped "m" and "1"
    assert kept.model.values.tolist() == ["m0", "m2"]
    for bad in ({"bound": float("nan")}, {"pseudo_counts": "no"}, {"small_val": -1.0}):
        with pytest.raises(OptionError):
            bd.PAVCalibrator(**bad)  # NaN LLRs; "no" was True
    with pytest.raises(OptionError, match="l2 must be a finite number >= 0"):
        bd.LinearFuser(l2=float("nan"))  # fitted the all-zero model
    with pytest.raises(OptionError, match=r"seed \(--seed\) must be an integer >= 0, got -1"):
        bd.evaluate(_scores(), _key(), bootstrap=5, seed=-1)  # numpy's ValueError
    with pytest.raises(OptionError, match="a Cprimary prior is given twice"):
        bd.evaluate(_scores(), _key(), cprimary_priors=[0.05, 0.05, 0.2])  # weighed it twice
    twice = bd.evaluate(_scores(), _key(), fmr=[0.25, 0.25, 2.5e-1])  # ambiguous coordinates
    assert twice.sizes["fmr_target"] == 1


@pytest.mark.parametrize(("name", "more"), [
    ("steppy_roc", 1), ("fixed_rate_metrics", 1), ("summary_metrics", 2), ("summary_auc", 0),
])  # fmt: skip
def test_metrics_of_summaries_given_arrays_say_what_they_take(name, more):
    """``bd.metrics``' functions of a score summary, given the arrays their neighbours take,
    say so (an AttributeError, or for ``fixed_rate_metrics(tar, non)`` a misleading 'target
    FMR -0.16 is not in (0, 1]', before)."""
    tar, non = np.array([1.0, 2.0]), np.array([-0.16, 0.5])
    with pytest.raises(bd.errors.TrialError, match=rf"^{name} takes a score summary \(bd\."
                                                   r"summarize.*, not ndarray$"):  # fmt: skip
        getattr(bd.metrics, name)(tar, *[non, [0.5]][:more])
