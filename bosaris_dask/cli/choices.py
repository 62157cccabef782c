"""The names the parser offers as choices, kept here so that building it (``--help``, an
argument error) imports neither :mod:`bosaris_dask.io` nor :mod:`bosaris_dask.embeddings`
(with dask.array, h5py and scipy: about 0.5 s). Each equals the library's own constant, which
``tests/test_imports.py`` checks.

Examples
--------
>>> TEXT_FORMATS[0], NORMS[-1], BACKENDS
('bosaris', 'as', ('cosine', 'dot'))
"""

from __future__ import annotations

__all__ = ["TEXT_SUFFIXES", "TEXT_FORMATS", "NORMS", "BACKENDS"]

#: :data:`bosaris_dask.io.TEXT_SUFFIXES`: the suffixes written as text without being told.
TEXT_SUFFIXES = (
    "", ".txt", ".tsv", ".lst", ".list", ".trials", ".trial", ".trl", ".scores", ".score",
    ".ndx", ".key",
)  # fmt: skip
#: :data:`bosaris_dask.io.text.TEXT_FORMATS`: the text layouts.
TEXT_FORMATS = ("bosaris", "nist", "voxceleb", "wespeaker", "3dspeaker")
#: :data:`bosaris_dask.embeddings.normalization.NORMS`: the cohort normalizations.
NORMS = ("none", "z", "t", "s", "as")
#: :data:`bosaris_dask.embeddings.prepare.BACKENDS`: the scoring back-ends.
BACKENDS = ("cosine", "dot")
