"""Text trial, score and quality files: BOSARIS/Kaldi lines, NIST tables, VoxCeleb, wespeaker and
3D-Speaker layouts. The layouts and rules (header detection, labels, exact scores, errors naming
``file:line``) are in ``docs/formats.md``. Reading is streamed in blocks parsed by pandas' C parser
(:mod:`.parse`), keeping codes and values only, spilled to scratch files when large
(:mod:`.collect`).
"""

from bosaris_dask.io.text.collect import MEMMAP_THRESHOLD
from bosaris_dask.io.text.labels import ACCEPTED_LABELS as ACCEPTED_LABELS
from bosaris_dask.io.text.layout import MAX_LINE_BYTES as MAX_LINE_BYTES
from bosaris_dask.io.text.layout import TEXT_FORMATS
from bosaris_dask.io.text.parse import BLOCK_BYTES as BLOCK_BYTES
from bosaris_dask.io.text.read import read_quality_text, read_text, sniff_text_kind, text_has_labels
from bosaris_dask.io.text.write import write_quality_text, write_text

__all__ = [
    "sniff_text_kind", "text_has_labels", "TEXT_FORMATS", "read_text", "write_text",
    "read_quality_text", "write_quality_text", "MEMMAP_THRESHOLD",
]  # fmt: skip
