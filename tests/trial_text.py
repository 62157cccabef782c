"""Small key and score text files for command-line tests: a test states its trials and its
systems' scores, and this writes them in the BOSARIS text layout.

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> d = Path(tempfile.mkdtemp())
>>> key, s = write_trial_files(d, [("m", "a", True), ("m", "b", False)], {"s.txt": [1.5, "-2"]})
>>> key.read_text(), s.read_text()
('m a target\\nm b nontarget\\n', 'm a 1.5\\nm b -2\\n')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path


def write_trial_files(
    directory: Path, trials: Sequence[tuple[str, str, bool]], systems: Mapping[str, Sequence]
) -> list[Path]:
    """Write ``key.txt`` (``model segment target|nontarget`` for each ``(model, segment,
    is_target)`` of ``trials``) and, for each ``{relative path: scores}`` of ``systems``, a
    score file of the same trials (``model segment score``; a float written as its ``repr``,
    a string as it is) in ``directory``. Returns the key's path, then the systems'."""
    key = [f"{m} {s} {'target' if t else 'nontarget'}" for m, s, t in trials]
    paths = [_write(directory / "key.txt", key)]
    for where, scores in systems.items():
        text = [s if isinstance(s, str) else repr(float(s)) for s in scores]
        paths.append(_write(directory / where, [f"{m} {s} {v}" for (m, s, _), v in
                                                zip(trials, text, strict=True)]))  # fmt: skip
    return paths


def _write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path
