"""Anti-spoofing (ASVspoof 5): the challenge's files and metrics.

:mod:`~bosaris_dask.spoofing.files` reads the evaluation package's key and score files (in
memory); :mod:`~bosaris_dask.spoofing.metrics` computes the countermeasure EER as the package
defines it, min a-DCF, min t-DCF and the exact t-EER (``FIELD_METRICS.md`` section 4).
"""

from bosaris_dask.spoofing.files import (
    CMKey,
    CMScores,
    SASVKey,
    SASVScores,
    cm_arrays,
    cm_key_and_scores,
    read_cm_key,
    read_cm_scores,
    read_sasv_key,
    read_sasv_scores,
    sasv_arrays,
)

__all__ = [
    "CMKey",
    "CMScores",
    "SASVKey",
    "SASVScores",
    "cm_arrays",
    "cm_key_and_scores",
    "read_cm_key",
    "read_cm_scores",
    "read_sasv_key",
    "read_sasv_scores",
    "sasv_arrays",
]
