"""Write ``vox1_O.score``: a wespeaker-style score file (``enrol test score label``, five
decimals) of 200 target and 7,800 non-target cosine-like scores, the README's example of the
field's files.

Run ``python examples/vox_like_scores.py`` (it writes ``vox1_O.score`` in the working directory).
"""

from __future__ import annotations

import numpy as np


def main(path: str = "vox1_O.score") -> None:
    rng = np.random.default_rng(2011)
    lines = []
    for spk in range(200):
        enrol = f"id{10000 + spk}/a/{spk:05d}.wav"
        same = rng.normal(0.45, 0.12)
        lines.append(f"{enrol} id{10000 + spk}/b/{spk:05d}.wav {same:.5f} target")
        for k, other in enumerate(rng.choice(np.delete(np.arange(200), spk), 39, replace=False)):
            score = rng.normal(0.08, 0.09)
            lines.append(f"{enrol} id{10000 + other}/b/{k:05d}.wav {score:.5f} nontarget")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
