"""A synthetic ASVspoof 5 sample in the evaluation package's own file formats, for examples.

:func:`simulate_asvspoof5` draws Gaussian scores for the two tracks: the countermeasure's
(track 1: a ``cm-score`` per utterance, bona fide above spoof) and the spoofing-aware
verification's (track 2: per ``(spk, filename)`` trial a ``cm-score``, an ``asv-score`` for
which spoofs resemble targets, as attacks aim to, and their mean as the ``sasv-score``).
:func:`write_asvspoof5_sample` writes them as the four tab-separated files that
``bosaris-dask spoof`` reads (``bosaris-dask demo`` writes them into ``asvspoof5/``).

Examples
--------
>>> tables = simulate_asvspoof5(bonafide=3, spoof=4, targets=2, nontargets=2, spoofs=3)
>>> tables["cm_key"][0], len(tables["cm_key"]), len(tables["sasv_scores"])
(['filename', 'cm-label'], 8, 8)
>>> sorted({row[3] for row in tables["sasv_key"][1:]})
['nontarget', 'spoof', 'target']
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

__all__ = ["simulate_asvspoof5", "write_asvspoof5_sample"]

#: Means and standard deviations of the simulated scores: (bona fide or target, other).
_CM = ((3.0, 1.5), (-3.0, 2.0))
_ASV = {"target": (4.0, 1.5), "nontarget": (-2.0, 1.5), "spoof": (2.5, 2.0)}


def simulate_asvspoof5(
    *,
    bonafide: int = 1_000,
    spoof: int = 2_000,
    targets: int = 500,
    nontargets: int = 500,
    spoofs: int = 1_000,
    speakers: int = 40,
    seed: int = 0,
) -> dict[str, list[list[str]]]:
    """The rows (header first) of ``cm_key``, ``cm_scores``, ``sasv_key`` and ``sasv_scores``.

    Track 1 has ``bonafide`` and ``spoof`` utterances; track 2 ``targets``, ``nontargets``
    (bona fide) and ``spoofs`` trials of ``speakers`` enrolled speakers. Rows are shuffled and
    scores written with all their digits (``repr``), so what is read is what was drawn.
    """
    rng = np.random.default_rng(seed)

    def draw(mean_sd: tuple[float, float], n: int) -> np.ndarray:
        return rng.normal(mean_sd[0], mean_sd[1], n)

    n_cm = bonafide + spoof
    names = [f"E_{i:07d}" for i in rng.permutation(n_cm)]
    labels = ["bonafide"] * bonafide + ["spoof"] * spoof
    cm = np.concatenate([draw(_CM[0], bonafide), draw(_CM[1], spoof)])
    order = rng.permutation(n_cm)
    cm_key = [["filename", "cm-label"], *([names[i], labels[i]] for i in order)]
    cm_scores = [["filename", "cm-score"], *([names[i], repr(float(cm[i]))] for i in order)]

    counts = {"target": targets, "nontarget": nontargets, "spoof": spoofs}
    asv_labels = [label for label, n in counts.items() for _ in range(n)]
    n_sasv = len(asv_labels)
    spk = [f"E_{s:04d}" for s in rng.integers(0, speakers, n_sasv)]
    files = [f"E_{n_cm + i:010d}" for i in rng.permutation(n_sasv)]
    cm_sasv = np.concatenate([draw(_CM[0], targets + nontargets), draw(_CM[1], spoofs)])
    asv = np.concatenate([draw(_ASV[label], n) for label, n in counts.items()])
    order = rng.permutation(n_sasv)
    sasv_key = [["spk", "filename", "cm-label", "asv-label"], *(
        [spk[i], files[i], "spoof" if asv_labels[i] == "spoof" else "bonafide", asv_labels[i]]
        for i in order)]  # fmt: skip
    sasv_scores = [["spk", "filename", "cm-score", "asv-score", "sasv-score"], *(
        [spk[i], files[i], repr(float(cm_sasv[i])), repr(float(asv[i])),
         repr(float((cm_sasv[i] + asv[i]) / 2))]
        for i in order)]  # fmt: skip
    return {"cm_key": cm_key, "cm_scores": cm_scores, "sasv_key": sasv_key,
            "sasv_scores": sasv_scores}  # fmt: skip


def write_asvspoof5_sample(folder: str | os.PathLike[str], *, seed: int = 0) -> list[Path]:
    """Write :func:`simulate_asvspoof5`'s tables as ``cm_key.tsv``, ``cm_scores.tsv``,
    ``sasv_key.tsv`` and ``sasv_scores.tsv`` in ``folder`` (made if needed), as a set
    (:func:`~bosaris_dask.io.atomic.atomic_paths`): an interrupted write leaves the previous
    files, never a new key beside old scores.

    Examples
    --------
    >>> import tempfile
    >>> paths = write_asvspoof5_sample(tempfile.mkdtemp())
    >>> [p.name for p in paths], paths[0].read_text().splitlines()[0]
    (['cm_key.tsv', 'cm_scores.tsv', 'sasv_key.tsv', 'sasv_scores.tsv'], 'filename\\tcm-label')
    """
    from bosaris_dask.io.atomic import atomic_paths, refuse_inside_store

    out = Path(folder)
    refuse_inside_store(out, out)  # before the folder is made in it
    out.mkdir(parents=True, exist_ok=True)
    tables = simulate_asvspoof5(seed=seed)
    paths = [out / f"{name}.tsv" for name in tables]
    with atomic_paths(paths) as tmps:
        for tmp, rows in zip(tmps, tables.values(), strict=True):
            tmp.write_text("".join("\t".join(row) + "\n" for row in rows), encoding="utf-8")
    return paths
