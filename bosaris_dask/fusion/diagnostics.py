"""What the toolkit reports on scores after fusion: target proportions and posterior divergences.

Both read the scores as LLRs and need no key, so they can be computed on eval data: the
*estimated target proportion* of a system is its mean posterior at a prior, and the pairwise
*KL divergences* between systems' posteriors show how much calibrated systems disagree. One pass
over the trials computes both (:func:`posterior_report`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import dask.array as da
import numpy as np
import xarray as xr
from scipy.special import expit, log_expit, logit

from bosaris_dask.errors import TrialError
from bosaris_dask.fusion.base import _as_list, _output_mask
from bosaris_dask.inputs import names_or_default
from bosaris_dask.objectives import align_inputs, check_prior
from bosaris_dask.progress import compute

#: Trials per slab of a chunk: the float64 temporaries of one slab and ``K`` systems are about
#: ``8 * K * SLAB`` bytes each (a whole chunk's were 3 GB for 1.5e7 trials and four systems).
SLAB = 1 << 18


def _block_sums(*blocks: np.ndarray, n_systems: int, plo: float) -> np.ndarray:
    """One chunk's sums: ``[count, sum P_i (K), sum KL(i||j) (K*K)]`` over common trials."""
    k = n_systems
    mask = np.logical_and.reduce(blocks[k : 2 * k]).reshape(-1)
    flat = [np.asarray(s).reshape(-1) for s in blocks[:k]]
    count, sums, kl = int(mask.sum()), np.zeros(k), np.zeros((k, k))
    for lo in range(0, mask.size, SLAB):
        kept = mask[lo : lo + SLAB]
        a = np.stack([np.asarray(f[lo : lo + SLAB][kept], np.float64) for f in flat]) + plo
        p = expit(a)  # (K, n)
        log_p, log_q = log_expit(a), log_expit(-a)  # log P, log (1 - P)
        # KL(i||j) = P_i (log P_i - log P_j) + (1 - P_i) (log(1 - P_i) - log(1 - P_j)), summed
        kl += (p * log_p).sum(1)[:, None] - p @ log_p.T
        q = 1 - p
        kl += (q * log_q).sum(1)[:, None] - q @ log_q.T
        sums += p.sum(1)
    out = np.concatenate([[count], sums, kl.ravel()])
    return out[None, None, :]


def posterior_report(
    scores: xr.Dataset | Sequence[xr.Dataset],
    *,
    prior: float = 0.5,
    names: Sequence[str] | None = None,
    ndx: xr.Dataset | None = None,
    split_every: int | None = None,
) -> xr.Dataset:
    """Estimated target proportions and pairwise posterior KL divergences, in one pass.

    Each system's scores are read as LLRs ``l``; at the prior ``p`` a trial's posterior target
    probability is ``P = sigmoid(l + logit(p))``. Over the trials scored by *every* system
    (aligned to the first system's ids, or to ``ndx``'s trials):

    - ``target_proportion[i]``: the mean of ``P_i``, the proportion of targets that system
      ``i`` believes the trials hold (a well-calibrated system's is close to the true one);
    - ``kl_divergence[i, j]``: the mean over trials of the Kullback-Leibler divergence of
      Bernoulli posteriors, ``KL(P_i || P_j) = P_i log(P_i / P_j) + (1 - P_i) log((1 - P_i) /
      (1 - P_j))``, in nats. It is **not symmetric**: row ``i`` is the reference system, the
      diagonal is 0, and ``(kl + kl.T) / 2`` is the symmetric (Jeffreys-type) version.

    No key is needed, so it describes eval data; computed in one pass (log-sigmoids, stable for
    any LLR).

    Returns
    -------
    xarray.Dataset
        ``target_proportion`` (dim ``system``), ``kl_divergence`` (dims ``("system",
        "other")``: ``KL(P_system || P_other)``), attrs ``n_trials`` and ``prior``.

    Examples
    --------
    >>> from bosaris_dask.trials import make_scores
    >>> a = make_scores(["m"], ["s1", "s2"], [[0.0, 0.0]])
    >>> b = make_scores(["m"], ["s1", "s2"], [[np.log(3.0), -np.log(3.0)]])
    >>> r = posterior_report([a, b], names=["a", "b"])
    >>> r.target_proportion.values.round(6).tolist()  # (1/2 + 1/2) / 2, (3/4 + 1/4) / 2
    [0.5, 0.5]
    >>> round(float(r.kl_divergence.sel(system="a", other="b")), 6)  # log(2/sqrt(3)), nats
    0.143841
    """
    prior = check_prior(prior)
    systems = _as_list(scores)
    names = names_or_default(names, len(systems))
    if len(names) != len(systems):
        raise TrialError(f"{len(names)} names for {len(systems)} systems")
    aligned = align_inputs(systems, systems[0] if ndx is None else ndx)
    k = len(aligned)
    mask = _output_mask(aligned, ndx)
    args: list = [s.score.data for s in aligned] + [mask] * k
    sums = da.map_blocks(
        partial(_block_sums, n_systems=k, plo=float(logit(prior))),
        *args,
        new_axis=2,
        chunks=(1, 1, 1 + k + k * k),
        dtype=np.float64,
        meta=np.empty((0, 0, 0)),
    )
    total = compute(sums.sum(axis=(0, 1), split_every=split_every), progress=None)
    n = int(round(total[0]))
    if n == 0:
        raise TrialError("no trial has a score in every system")
    proportion = total[1 : 1 + k] / n
    kl = np.maximum(total[1 + k :].reshape(k, k) / n, 0.0)  # rounding can leave -1e-17
    np.fill_diagonal(kl, 0.0)
    return xr.Dataset(
        {
            "target_proportion": ("system", proportion),
            "kl_divergence": (("system", "other"), kl),
        },
        coords={"system": names, "other": names},
        attrs={"n_trials": n, "prior": prior},
    )


def format_posterior_report(report: xr.Dataset) -> str:
    """The report as the lines the CLI prints.

    Examples
    --------
    >>> r = xr.Dataset({"target_proportion": ("system", [0.1, 0.2]),
    ...                 "kl_divergence": (("system", "other"), [[0.0, 0.5], [0.25, 0.0]])},
    ...                coords={"system": ["a", "b"], "other": ["a", "b"]},
    ...                attrs={"n_trials": 10, "prior": 0.5})
    >>> print(format_posterior_report(r))
    10 trials, posteriors at prior 0.5
    estimated target proportion: a 0.1, b 0.2
    KL(row || column), nats:
           a       b
    a      0       0.5
    b      0.25    0
    """
    names = [str(s) for s in report.system.values]
    cells = [[f"{v:.4g}" for v in row] for row in report.kl_divergence.values]
    width = max(*(len(n) for n in names), *(len(c) for row in cells for c in row), 6) + 2
    lines = [
        f"{report.attrs['n_trials']:,} trials, posteriors at prior {report.attrs['prior']:g}",
        "estimated target proportion: "
        + ", ".join(
            f"{n} {v:.6g}" for n, v in zip(names, report.target_proportion.values, strict=True)
        ),
        "KL(row || column), nats:",
        " " * (width - 1) + "".join(f"{n:<{width}}" for n in names).rstrip(),
    ]
    for n, row in zip(names, cells, strict=True):
        lines.append((f"{n:<{width - 1}}" + "".join(f"{c:<{width}}" for c in row)).rstrip())
    return "\n".join(lines)
