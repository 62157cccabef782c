"""The notebooks' saved text outputs are what their code prints today.

nbmake (the test run's ``--nbmake``) executes every notebook but compares nothing, so a saved
table could drift from the code unnoticed (two rounding cells and a model file's fields had).
The first, second and fourth notebooks print no timings or addresses: their text outputs must
match exactly. (The third prints a cluster's address and timings; images are not compared.)
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def _texts(nb: nbformat.NotebookNode) -> list[tuple[int, str]]:
    """``(cell index, text)`` of every printed or displayed text output."""
    out = []
    for i, cell in enumerate(nb.cells):
        for o in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if o.get("output_type") == "stream":
                out.append((i, o["text"]))
            elif "text/plain" in o.get("data", {}):
                out.append((i, o["data"]["text/plain"]))
    return out


@pytest.mark.parametrize(
    "name",
    ["01_quickstart.ipynb", "02_calibration_and_fusion.ipynb", "04_conditions_and_intervals.ipynb"],
)
def test_saved_text_outputs_are_what_the_code_prints(name, tmp_path):
    from nbclient import NotebookClient

    saved = nbformat.read(NOTEBOOKS / name, as_version=4)
    ran = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(ran, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()  # fmt: skip

    # streams split differently between runs are joined per cell
    def joined(nb):
        cells: dict[int, str] = {}
        for i, text in _texts(nb):
            cells[i] = cells.get(i, "") + text
        return cells

    assert joined(ran) == joined(saved), "re-execute and save the notebook (see its outputs)"
