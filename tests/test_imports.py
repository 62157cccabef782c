"""What importing the kernels costs a dask worker, and that the public names still resolve."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _modules_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True)  # fmt: skip
    return set(out.stdout.split())


def test_a_worker_unpickling_a_kernel_imports_no_stores_and_no_models():
    loaded = _modules_after("import bosaris_dask.passes.kernels")
    assert "bosaris_dask.passes.kernels" in loaded
    for heavy in ("scipy", "h5py", "zarr", "bosaris_dask.calibration", "bosaris_dask.io"):
        assert heavy not in loaded, heavy


def test_the_config_keys_have_their_defaults_on_import():
    # read straight after `import bosaris_dask`, a key had no value until a submodule loaded
    code = "import bosaris_dask, dask; print(dask.config.get('bosaris_dask.block'))"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True)  # fmt: skip
    assert out.stdout.split() == ["65536"]


def test_public_names_and_submodules_resolve_on_first_use():
    import xarray as xr

    import bosaris_dask as bd
    from bosaris_dask import LinearFuser, evaluate

    assert evaluate is bd.metrics.evaluate and LinearFuser is bd.fusion.LinearFuser
    assert bd.read is bd.io.read and hasattr(xr.Dataset, "bosaris")
    assert set(bd.__all__) <= set(dir(bd))
    try:
        bd.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("an unknown name resolved")


def test_help_lists_a_short_package():
    # help(bd) listed 65 modules, 32 of them the passes' machinery (now bosaris_dask.passes)
    import pkgutil

    import bosaris_dask as bd

    top = {m.name for m in pkgutil.iter_modules(bd.__path__)}
    assert len(top) <= 36, sorted(top)
    assert {"passes", "metrics", "io", "trials", "engine"} <= top
    assert not {"kernels", "runner", "compact", "refinement"} & top


def test_every_deferred_import_names_something_that_exists():
    # imports inside functions run only on their path: one of a name since removed (ece's
    # NOT_WITH_CONDITIONS) crashed evaluate with a bootstrap, conditions and --ece
    import ast
    import importlib
    import warnings

    missing = []
    for path in sorted((ROOT / "bosaris_dask").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0
                    and (node.module or "").startswith("bosaris_dask")):  # fmt: skip
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # deprecated names resolve too
                module = importlib.import_module(node.module)
                for alias in node.names:
                    if not hasattr(module, alias.name):
                        try:
                            importlib.import_module(f"{node.module}.{alias.name}")
                        except ImportError:
                            missing.append(f"{path.relative_to(ROOT)}:{node.lineno} "
                                           f"{node.module}.{alias.name}")  # fmt: skip
    assert not missing, missing


def test_building_the_command_line_parser_imports_no_arrays_stores_or_embeddings():
    # --help and an argument error build the whole parser: with bosaris_dask.io and
    # bosaris_dask.embeddings (for their names of formats and norms) it took 1.37 s, now 0.85 s
    loaded = _modules_after("from bosaris_dask.cli.parser import build_parser; build_parser()")
    for heavy in ("dask.array", "h5py", "zarr", "scipy", "bosaris_dask.io",
                  "bosaris_dask.embeddings"):  # fmt: skip
        assert heavy not in loaded, heavy


def test_the_parsers_choices_are_the_librarys_own():
    from bosaris_dask.cli import choices
    from bosaris_dask.embeddings.normalization import NORMS
    from bosaris_dask.embeddings.prepare import BACKENDS
    from bosaris_dask.io import TEXT_SUFFIXES
    from bosaris_dask.io.text import TEXT_FORMATS

    assert choices.TEXT_SUFFIXES == TEXT_SUFFIXES and choices.TEXT_FORMATS == TEXT_FORMATS
    assert choices.NORMS == NORMS and choices.BACKENDS == BACKENDS


def test_an_evaluation_imports_neither_the_bootstrap_nor_the_models(tmp_path):
    # the bootstrap's options were checked with its own function, imported whether given or
    # not: 0.1 s of every evaluate; the ECE's optimal LLRs imported the calibration package,
    # and with it every model, fusion and its optimizer (0.03 s)
    scores = tmp_path / "own.score"
    scores.write_text("a x 0.5 target\nb x -1.5 nontarget\na y -1 nontarget\nb y 2 target\n")
    run = (
        f"from bosaris_dask.cli import main; main(['evaluate', '--scores', {str(scores)!r}, '-q'])"
    )
    loaded = _modules_after(run)
    assert "bosaris_dask.engine" in loaded and "bosaris_dask.calibration.optimal" in loaded
    for heavy in ("bosaris_dask.bootstrap", "bosaris_dask.calibration.models",
                  "bosaris_dask.fusion"):  # fmt: skip
        assert heavy not in loaded, heavy
