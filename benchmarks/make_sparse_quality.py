"""Write a VoxCeleb1-E-like sparse trial list, two systems' scores and quality tables.

``python benchmarks/make_sparse_quality.py DIR [--ids 145160] [--trials 579818]`` writes to
``DIR`` a key ``trials`` (``enrol test target|nontarget``, about 1 in 2 a target), two score
files ``sys1``/``sys2`` (each in its own line order) and two quality tables ``mq``/``sq`` (2
measures per utterance, a few ids left out: their trials back off to the linear fusion), for

    bosaris-dask fuse --key trials --scores sys1 --scores sys2 --model-quality mq \\
        --segment-quality sq --model-out m.json

Examples
--------
>>> import tempfile
>>> d = tempfile.mkdtemp()
>>> write(d, n_ids=50, n_trials=100, seed=0)
99
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def _lines(ids: np.ndarray, columns: list[np.ndarray]) -> str:
    text = [np.char.add("u", ids.astype(str))]
    for c in columns:
        text += [np.full(len(ids), " "), c]
    out = text[0]
    for t in text[1:]:
        out = np.char.add(out, t)
    return "\n".join(out.tolist()) + "\n"


def write(directory: str | Path, *, n_ids: int, n_trials: int, seed: int = 0) -> int:
    """Write the files; returns the number of distinct trials."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    speaker = rng.integers(0, max(1, n_ids // 116), n_ids)  # ~116 utterances per speaker
    enrol = rng.integers(0, n_ids, n_trials)
    same = rng.random(n_trials) < 0.5
    # a target: another utterance of the enrolment's speaker, found by sorting by speaker
    order = np.argsort(speaker, kind="stable")
    start = np.searchsorted(speaker[order], speaker[enrol])
    stop = np.searchsorted(speaker[order], speaker[enrol], side="right")
    pick = order[start + (rng.random(n_trials) * (stop - start)).astype(np.int64)]
    test = np.where(same, pick, rng.integers(0, n_ids, n_trials))
    pairs = np.unique(np.stack([enrol, test], axis=1), axis=0)
    pairs = pairs[rng.permutation(len(pairs))]
    label = speaker[pairs[:, 0]] == speaker[pairs[:, 1]]
    quality = rng.normal(size=(n_ids, 2))
    word = np.where(label, "target", "nontarget")
    ids = np.char.add(np.char.add("u", pairs[:, 0].astype(str)), " u")
    (d / "trials").write_text(_lines_pairs(ids, pairs[:, 1], word))
    for k, name in enumerate(("sys1", "sys2")):
        q = quality[pairs[:, 0], k] + quality[pairs[:, 1], k]
        s = rng.normal(size=len(pairs)) + (2.0 + 0.5 * q) * label
        p = rng.permutation(len(pairs))
        (d / name).write_text(_lines_pairs(ids[p], pairs[p, 1], np.char.mod("%.6f", s[p])))
    for name in ("mq", "sq"):
        kept = np.flatnonzero(rng.random(n_ids) > 0.001)  # a few ids without quality
        body = _lines(kept, [np.char.mod("%.5f", quality[kept, j]) for j in range(2)])
        (d / name).write_text("2\n" + body)
    return len(pairs)


def _lines_pairs(left: np.ndarray, right: np.ndarray, value: np.ndarray) -> str:
    out = np.char.add(np.char.add(np.char.add(left, right.astype(str)), " "), value)
    return "\n".join(out.tolist()) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("directory")
    parser.add_argument("--ids", type=int, default=145_160)
    parser.add_argument("--trials", type=int, default=579_818)
    parser.add_argument("--seed", type=int, default=0)
    a = parser.parse_args()
    n = write(a.directory, n_ids=a.ids, n_trials=a.trials, seed=a.seed)
    print(f"{n:,} trials over {a.ids:,} utterance ids written to {a.directory}")


if __name__ == "__main__":
    main()
