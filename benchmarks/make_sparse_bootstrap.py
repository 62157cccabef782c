"""Write a VoxCeleb1-E-like sparse text trial list with speaker tables (for
``benchmarks/README.md``, "The bootstrap of sparse text lists").

``python benchmarks/make_sparse_bootstrap.py DIR [UTTERANCES SPEAKERS TRIALS]`` writes
``DIR/trials`` (``enrol test target|nontarget``; default 579,818 distinct trials over 145,160
utterances of 1,251 speakers, half of them same-speaker), ``DIR/scores`` (the trials in another
order, 5-decimal scores) and ``DIR/m.tsv``/``DIR/s.tsv`` (each utterance's speaker):
``--resample model.speaker --resample segment.speaker`` resamples the enrolment and the test
speakers.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np


def main(out: Path, n_utt: int = 145_160, n_spk: int = 1251, n: int = 579_818) -> None:
    """Write the list (``n`` trials over ``n_utt`` utterances of ``n_spk`` speakers)."""
    rng = np.random.default_rng(1)
    spk = np.sort(np.r_[np.arange(n_spk), rng.integers(0, n_spk, n_utt - n_spk)])
    first = np.searchsorted(spk, np.arange(n_spk))
    count = np.bincount(spk, minlength=n_spk)
    draws = n * 11 // 10
    enrol = rng.integers(0, n_utt, draws)
    same = rng.random(draws) < 0.5
    other = rng.integers(0, n_utt, draws)  # a same-speaker test utterance where ``same``
    own = first[spk[enrol]] + (rng.random(draws) * count[spk[enrol]]).astype(np.int64)
    test = np.where(same, own, other)
    cells, at = np.unique(enrol * n_utt + test, return_index=True)
    keep = rng.permutation(at[enrol[at] != test[at]])[:n]
    enrol, test = enrol[keep], test[keep]
    target = spk[enrol] == spk[test]
    score = rng.normal(size=len(keep)) + 2.5 * target
    name = [f"id{10000 + s}/u{i:06d}.wav" for i, s in enumerate(spk)]
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "trials", "w") as f:
        f.writelines(f"{name[a]} {name[b]} {'target' if t else 'nontarget'}\n"
                     for a, b, t in zip(enrol, test, target, strict=True))  # fmt: skip
    order = rng.permutation(len(keep))
    with open(out / "scores", "w") as f:
        f.writelines(f"{name[enrol[i]]} {name[test[i]]} {score[i]:.5f}\n" for i in order)
    for side, path in (("model", "m.tsv"), ("segment", "s.tsv")):
        with open(out / path, "w") as f:
            f.write(f"{side}\tspeaker\n")
            f.writelines(f"{u}\tid{10000 + s}\n" for u, s in zip(name, spk, strict=True))


if __name__ == "__main__":
    main(Path(sys.argv[1]), *map(int, sys.argv[2:]))
