"""A bigger fuzzing campaign on the text and HDF5 readers, tabulated for benchmarks/README.md.

Run from the repository root: ``python benchmarks/fuzz_readers.py [EXAMPLES] [SEED]
[--bit-flips[=BYTES]]``. It runs the properties of ``tests/test_fuzz_readers.py`` with
``EXAMPLES`` hypothesis examples each (default 5000) and a fixed seed (default 0); with
``--bit-flips`` it also flips every bit of the valid BOSARIS HDF5 files of those tests (scores,
key, ndx, as written and in the HDF5 1.6 format), one at a time, and checks each with the same
property (``check_hdf5``); ``--bit-flips=BYTES`` flips only the bits of each file's first
``BYTES`` bytes (``tests/test_benchmarks.py`` runs ``2 0 --bit-flips=2``). It prints a markdown
table of (property, outcome, count) and the wall time. Exit status 1 if any input failed the
property (pytest's report, or the lines printed for bit flips, say which input and why).
"""

from __future__ import annotations

import itertools
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def bit_flips(outcomes: Counter, n_bytes: int | None = None) -> int:
    """Flip each bit of each original HDF5 file (of its first ``n_bytes``) in turn; return how
    many inputs failed."""
    from tests import test_fuzz_readers as fuzz

    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for legacy, label in ((False, ""), (True, ", 1.6 format")):
            originals = fuzz.hdf5_originals(Path(tmp), legacy=legacy)
            for kind, original in originals.items():
                size = len(original.data) if n_bytes is None else min(n_bytes, len(original.data))
                for at, bit in itertools.product(range(size), range(8)):
                    ops = [("flip", at, 1 << bit)]
                    try:
                        outcome = fuzz.check_hdf5(kind, originals, ops, None, Path(tmp))
                    except (AssertionError, pytest.fail.Exception) as exc:
                        failed += 1
                        outcome = "FAILED"
                        print(f"{kind}{label}: bit {bit} of byte {at}: {exc}".splitlines()[0])
                    outcomes[f"hdf5 {kind}{label}: every single-bit flip", outcome] += 1
    return failed


def main(argv: list[str]) -> int:
    flags = [a for a in argv[1:] if a.startswith("--")]
    argv = [argv[0], *(a for a in argv[1:] if not a.startswith("--"))]
    examples = int(argv[1]) if len(argv) > 1 else 5000
    seed = int(argv[2]) if len(argv) > 2 else 0
    os.environ["BOSARIS_FUZZ_EXAMPLES"] = str(examples)
    os.environ.setdefault("HYPOTHESIS_PROFILE", "dev")
    sys.path.insert(0, str(ROOT))
    start = time.perf_counter()
    status = pytest.main(
        [
            str(ROOT / "tests" / "test_fuzz_readers.py"),
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:nbmake",
            "-o",
            "addopts=",
            f"--hypothesis-seed={seed}",
            "--hypothesis-show-statistics",
        ]
    )
    from tests.test_fuzz_readers import OUTCOMES

    flips = [f for f in flags if f == "--bit-flips" or f.startswith("--bit-flips=")]
    n_bytes = int(flips[-1].split("=")[1]) if flips and "=" in flips[-1] else None
    failed = bit_flips(OUTCOMES, n_bytes) if flips else 0
    wall = time.perf_counter() - start

    flipped = f", bit flips in the first {n_bytes} bytes" if n_bytes else ", every bit flip"
    flipped = flipped if flips else ""
    print(f"\n{examples} examples per property, seed {seed}{flipped}, {wall:.0f} s\n")
    print("| property | outcome | inputs |\n|---|---|---|")
    for (prop, outcome), count in sorted(OUTCOMES.items()):
        print(f"| {prop} | {outcome} | {count:,} |")
    print(f"| all | | {sum(OUTCOMES.values()):,} |")
    return int(status != 0 or failed > 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
