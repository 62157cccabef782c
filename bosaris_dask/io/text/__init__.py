"""Text trial, score and quality files: BOSARIS/Kaldi lines and NIST tab-separated tables.

Reading is streamed: blocks of whole lines are parsed by pandas' C parser
(:mod:`~bosaris_dask.io.text.parse`) and only integer codes and values are kept, spilled to a
scratch file when they grow (:mod:`~bosaris_dask.io.text.collect`), so memory stays bounded.

Formats
-------
BOSARIS / Kaldi (no header), one trial per line:

==========  =====================================================================================
kind        line
==========  =====================================================================================
scores      ``model segment score``
key         ``model segment target`` or ``model segment nontarget`` (any letter case)
ndx         ``model segment`` (a key or scores file can also be read as an ndx: the third field
            is then ignored)
==========  =====================================================================================

The field's own headerless layouts (``format=`` names them; otherwise they are told from the
first lines):

=============  ==========================  ======================================================
format         line                        written by
=============  ==========================  ======================================================
``voxceleb``   ``label enrol test``        the VoxCeleb trial lists (``1 id10270/x.wav ...``); a
                                           key (or an ndx)
``wespeaker``  ``enrol test score label``  wespeaker's ``score.py`` (``{:.5f}`` scores); scores,
                                           or, with ``kind="key"``, the key of the same trials
``3dspeaker``  ``enrol test label score``  3D-Speaker's ``compute_score_metrics.py`` (the trial
                                           line, then the score); scores or key, as above
=============  ==========================  ======================================================

Detection, headerless files: 3 fields whose third is neither a number nor a label word and whose
first is a label word -> ``voxceleb``; 4 fields -> ``wespeaker`` if field 4 holds only label words
in the first 100 lines and field 3 does not, ``3dspeaker`` the other way round, otherwise an error
asking for the format (e.g. both hold only ``1``/``0``); anything else -> ``bosaris``.

NIST (SRE) tables: a header line names the columns, e.g. ``modelid  segmentid  side`` (a trial
list), plus ``targettype`` (a key, values ``target``/``nontarget``) or ``LLR`` (scores). Column
names are matched case-insensitively, with these synonyms; other columns (``side``, ...) are
ignored:

==========  =====================================================================================
column      accepted names
==========  =====================================================================================
model       modelid, model, model_id, enrollment, enroll, enroll_id, enrollment_id
segment     segmentid, segment, segment_id, test, test_id, testid
label       targettype, target_type, label
score       llr, score
==========  =====================================================================================

Rules
-----
* Lines end with LF (CRLF is accepted). Lines that are empty or hold only whitespace are skipped.
  A UTF-8 byte-order mark at the start of the file is skipped.
* Without a header, fields are separated by runs of spaces or tabs. With a header, fields are
  separated by single tabs if the header line contains a tab (empty fields are then allowed in
  ignored columns only, and spaces around a score or a label are ignored), otherwise by runs of
  whitespace. Every line has the header's number of fields.
* The first non-blank line is a header when it names both a model and a segment column and
  none of its fields is a number or a label (``header=None``); pass ``header=False`` for a
  headerless trial list whose first trial happens to be, say, ``model segment``.
* The kind (when not given) is ``scores`` if there is a score column (a third field that parses
  as a number), ``key`` if there is a label column (``target``/``nontarget``), else ``ndx``. A
  NIST file with both a score and a label column reads as scores by default and as a key with
  ``kind="key"``.
* Ids are UTF-8, non-empty, without leading or trailing whitespace, and keep the order in which
  they first appear in the file (so that a file written by :func:`write_text` reads back in the
  same order). Labels are one of the words of :mod:`bosaris_dask.io.text.labels`, in any letter
  case: target/nontarget, 1/0, true/false, tgt/imp, genuine/impostor, mated/nonmated,
  same/different, bonafide/spoof (the first of each pair is the target class). In a BOSARIS
  (3-field) file a third field ``1``/``0`` is a score unless ``kind="key"`` is given.
* Scores are decimal numbers (``1``, ``-0.5``, ``1.5e-3``; no ``_`` separators, no hex),
  converted exactly (correctly rounded) to float64; NaN and infinities are errors.
* Every problem raises :class:`~bosaris_dask.errors.ParseError` naming the file and the 1-based
  line: a wrong number of fields, an unparsable or non-finite score, a bad label, an empty or
  badly encoded id, a trial given twice (both lines are named), a NUL byte, a line longer than
  1 MiB, a file without trials.

Writing (:func:`write_text`) gives BOSARIS lines or a NIST table, scores that read back exactly.
Quality files (:func:`read_quality_text`, :func:`write_quality_text`): ``q``, then ``id v1 ... vq``.

Examples
--------
>>> import pathlib, tempfile
>>> from bosaris_dask.trials import make_scores
>>> path = pathlib.Path(tempfile.mkdtemp()) / "scores.txt"
>>> scores = make_scores(["m1", "m2"], ["s1", "s2"], [[0.1, -2.5], [1e-300, 3.0]])
>>> write_text(scores, path)
>>> print(path.read_text(), end="")
m1 s1 0.1
m1 s2 -2.5
m2 s1 1e-300
m2 s2 3.0
>>> sniff_text_kind(path)
'scores'
>>> back = read_text(path)
>>> back.score.values.tolist() == scores.score.values.tolist()
True
"""

from bosaris_dask.io.text.collect import MEMMAP_THRESHOLD
from bosaris_dask.io.text.labels import ACCEPTED_LABELS as ACCEPTED_LABELS
from bosaris_dask.io.text.layout import MAX_LINE_BYTES as MAX_LINE_BYTES
from bosaris_dask.io.text.layout import TEXT_FORMATS
from bosaris_dask.io.text.parse import BLOCK_BYTES as BLOCK_BYTES
from bosaris_dask.io.text.read import read_quality_text, read_text, sniff_text_kind, text_has_labels
from bosaris_dask.io.text.write import write_quality_text, write_text

__all__ = [
    "sniff_text_kind",
    "text_has_labels",
    "TEXT_FORMATS",
    "read_text",
    "write_text",
    "read_quality_text",
    "write_quality_text",
    "MEMMAP_THRESHOLD",
]
