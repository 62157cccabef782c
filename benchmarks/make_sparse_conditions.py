"""Write an SRE-like sparse text trial list with condition tables (for ``benchmarks/README.md``,
"Sparse text lists with conditions").

``python benchmarks/make_sparse_conditions.py DIR`` writes ``DIR/sre.key``, ``DIR/sre.scores``
(3e6 trials drawn without repeats from 4,000 models x 100,000 segments, 5% targets, 6-decimal
scores), ``DIR/m.tsv`` (``model gender lang``) and ``DIR/s.tsv`` (``segment lang source``):
``--by model.gender --by same.lang --by segment.source`` gives 2 x 2 x 4 = 16 conditions.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np


def main(out: Path, n_models: int = 4000, n_segments: int = 100_000, n: int = 3_000_000) -> None:
    """Write the list (``n`` trials over ``n_models`` x ``n_segments`` ids) and its tables."""
    rng = np.random.default_rng(1)
    draws = n * 11 // 10
    cells = np.unique(rng.integers(0, n_models, draws) * n_segments
                      + rng.integers(0, n_segments, draws))[:n]  # fmt: skip
    rng.shuffle(cells)
    m, s = cells // n_segments, cells % n_segments
    target = rng.random(len(m)) < 0.05
    score = rng.normal(size=len(m)) + 2.5 * target
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "sre.key", "w") as f:
        f.writelines(f"M{a} S{b} {'target' if t else 'nontarget'}\n"
                     for a, b, t in zip(m, s, target, strict=True))  # fmt: skip
    with open(out / "sre.scores", "w") as f:
        f.writelines(f"M{a} S{b} {v:.6f}\n" for a, b, v in zip(m, s, score, strict=True))
    with open(out / "m.tsv", "w") as f:
        f.write("model\tgender\tlang\n")
        f.writelines(f"M{i}\t{'fm'[i % 2]}\t{'abc'[i % 3]}\n" for i in range(n_models))
    with open(out / "s.tsv", "w") as f:
        f.write("segment\tlang\tsource\n")
        f.writelines(f"S{i}\t{'abc'[(i // 7) % 3]}\t{['cts', 'afv', 'vast', 'x'][i % 4]}\n"
                     for i in range(n_segments))  # fmt: skip


if __name__ == "__main__":
    main(Path(sys.argv[1]))
