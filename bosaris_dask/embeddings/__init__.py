"""Scores straight from embeddings: read embedding sets, score them by blocked matrix products.

Python API: :func:`read` (an embedding file as a lazy labelled set, see
:mod:`bosaris_dask.embeddings.store` for the layout), :func:`info`.
"""

from __future__ import annotations

from bosaris_dask.embeddings.store import EMBEDDING_DIMS, from_arrays, info, read

__all__ = ["read", "from_arrays", "info", "EMBEDDING_DIMS"]
