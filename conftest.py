"""pytest configuration for the docstring examples collected from ``bosaris_dask/``."""

import tempfile

import pytest
from _pytest.doctest import DoctestItem


@pytest.fixture(autouse=True)
def _doctest_files_in_pytest_tmp(request, tmp_path, monkeypatch):
    """Docstring examples make files with ``tempfile.mkdtemp()``: keep them in pytest's tmp
    (rotated between runs) instead of leaving one directory per example in the system's."""
    if isinstance(request.node, DoctestItem):
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    yield
