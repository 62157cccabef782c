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
from bosaris_dask.spoofing.metrics import (
    ASVSPOOF5,
    FIXED_ASV_RATES,
    AsvRates,
    CostModel,
    a_dcf,
    asv_rates,
    asv_rates_at,
    cm_eer,
    min_a_dcf,
    min_t_dcf,
    t_eer,
)

__all__ = [
    "ASVSPOOF5",
    "FIXED_ASV_RATES",
    "AsvRates",
    "CostModel",
    "asv_rates",
    "a_dcf",
    "asv_rates_at",
    "cm_eer",
    "min_a_dcf",
    "min_t_dcf",
    "t_eer",
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
