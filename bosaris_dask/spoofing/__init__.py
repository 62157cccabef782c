"""Anti-spoofing (ASVspoof 5): the challenge's files and metrics, in memory and at scale.

:mod:`~bosaris_dask.spoofing.files` reads the evaluation package's key and score files (in
memory) and :mod:`~bosaris_dask.spoofing.matching` matches a key with its scores;
:mod:`~bosaris_dask.spoofing.metrics` computes the countermeasure EER as the package
defines it, min a-DCF, min t-DCF and the exact t-EER on numpy arrays (``FIELD_METRICS.md``
section 4); :mod:`~bosaris_dask.spoofing.scale` computes the same numbers from Key/Scores
datasets of any size in one engine call (:mod:`~bosaris_dask.spoofing.keys`: the SASV and CM
keys; :mod:`~bosaris_dask.spoofing.plan`: what each metric reads from the summaries;
:mod:`~bosaris_dask.spoofing.joint`: the bins they need exact);
:mod:`~bosaris_dask.spoofing.stores` writes and reads a set as zarr stores.
"""

from bosaris_dask.spoofing.files import (
    CMKey,
    CMScores,
    SASVKey,
    SASVScores,
    read_cm_key,
    read_cm_scores,
    read_sasv_key,
    read_sasv_scores,
)
from bosaris_dask.spoofing.keys import cm_key, sasv_key
from bosaris_dask.spoofing.matching import (
    cm_arrays,
    cm_key_and_scores,
    sasv_arrays,
    sasv_key_and_scores,
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
from bosaris_dask.spoofing.plan import TEerScaleWarning
from bosaris_dask.spoofing.scale import evaluate_cm, evaluate_sasv

__all__ = [
    "evaluate_cm",
    "evaluate_sasv",
    "sasv_key",
    "cm_key",
    "TEerScaleWarning",
    "sasv_key_and_scores",
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
