"""Scores applied from text files to a text file, line for line in the input's order.

``apply``, ``calibrate --apply`` and ``fuse --apply`` read scores as a models x segments grid,
and :func:`~bosaris_dask.io.write` writes a grid model by model. A text file read and written
that way comes back in another line order, and a Kaldi recipe that ``paste``\\ s the output
beside its trial list then pairs scores with the wrong trials. So when every input is a text
file (of at most :data:`LIST_MAX_BYTES`) and ``--out`` is text, the lists are applied as
lists: each system's scores joined by ``(model, segment)`` to the records of the first file
(of ``--ndx`` where given), packed (:mod:`bosaris_dask.io.text.packed`), mapped by the same
model code as a grid, and written in those records' order; ``apply --enrol --test`` of a
text ``--ndx`` scores its trials pair by pair
(:func:`~bosaris_dask.embeddings.scoring.trial_scores`). A quality fusion gives each trial
its own model's and segment's quality vectors
(:class:`~bosaris_dask.objectives.cells.TrialQuality`), so a VoxCeleb1-E-sized list (2.1e10
cells as a grid) is applied too. The values and the set of lines are those of the grid path;
only their order differs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bosaris_dask.cli.common import _in_natural, _in_user_base, _say, _text_formats
from bosaris_dask.cli.options import output_options
from bosaris_dask.cli.packed_inputs import (
    _regular_text_file,
    list_quality,
    say_packed,
    score_lists,
)
from bosaris_dask.errors import BosarisError, OptionError

__all__ = [
    "LIST_MAX_BYTES",
    "keeps_line_order",
    "apply_in_order",
    "listed",
    "trial_list",
]

#: Text score files up to this size each keep their line order in a text output; larger ones
#: go through the grid (bounded memory), written model by model.
LIST_MAX_BYTES = 1 << 30


def keeps_line_order(
    args: argparse.Namespace, score_paths: Sequence[str], embeddings: bool = False
) -> bool:
    """Whether ``score_paths`` (and ``--ndx``; with ``embeddings``, the scores from
    ``--enrol``/``--test`` of its trials, the last system) are applied as lists: every file a
    regular text file of at most :data:`LIST_MAX_BYTES`, written to a text ``--out`` (quality
    measures are tables of the ids, whatever their format)."""
    from bosaris_dask import io

    if args.out is None or io._write_format(args.out, None) != "text":
        return False
    if not score_paths and not (embeddings and args.ndx):  # all pairs: the grid
        return False
    paths = [*score_paths, *([args.ndx] if args.ndx else [])]
    if listed(args, paths):
        return True
    if any(io.detect_format(p) == "text" for p in paths):  # a text input's order is not kept
        _say(args, f"{args.out}: lines written model by model, not in the order of the input "
                   f"lines (an input is not a regular text file of at most "
                   f"{LIST_MAX_BYTES >> 30} GiB: the scores are read as the ids' "
                   "grid)")  # fmt: skip
    return False


def apply_in_order(
    args: argparse.Namespace,
    model: Any,
    score_paths: Sequence[str],
    embeddings: bool = False,
    quality: Callable[[], Any] | None = None,
) -> tuple[list[Any], Any]:
    """Apply ``model`` to the text lists of ``score_paths`` (and, with ``embeddings``, to the
    scores from ``--enrol``/``--test`` of the list's trials, pair by pair: the last system)
    and write ``--out`` in the order of ``--ndx``'s lines, else of the first file's; the
    natural-log inputs and output, packed (for ``fuse``'s posterior report).

    ``quality`` reads the Quality object of the ids (or ``None``) after the lists, as the grid
    path reads it after the scores; each trial then gets its own model's and segment's
    vectors (:func:`~bosaris_dask.cli.packed_inputs.list_quality`), and a quality fusion
    backs off as on the grid.

    A trial without a score in every system is not written (a fusion's trials are those every
    system scores) and is counted on stderr; with ``--fill-missing`` each ``--ndx`` trial
    without one is written with that value.
    """
    from bosaris_dask.calibration import apply_model
    from bosaris_dask.io.text.packed import as_packed, is_sparse, joined, unpacked
    from bosaris_dask.io.text.write import write_score_lines

    key_format, text_format = _text_formats(args)
    lists = score_lists(score_paths, text_format)
    order = trial_list(args.ndx, "--ndx", key_format) if args.ndx else lists[0]
    if is_sparse(len(order.models), len(order.segments), len(order.values)):
        say_packed(args, order)  # (a dense list is applied in its line order just the same)
    systems = [as_packed(order, *joined(order, scores)) for scores in lists]
    if embeddings:
        from bosaris_dask.cli.packed_inputs import _trial_scores

        systems.append(as_packed(order, _trial_scores(args, order)))
    natural = _in_natural(systems, args.llr_base)
    ids_quality = None if quality is None else quality()
    out = apply_model(model, natural, quality=list_quality(ids_quality, order),
                      llr_base="e")  # the inputs are natural-log LLRs  # fmt: skip
    values, scored = unpacked(_in_user_base(args, out), len(order.values))
    unscored = int(np.count_nonzero(~scored))
    fill = getattr(args, "fill_missing", None)
    if fill is not None:
        if args.ndx is None:
            raise BosarisError("--fill-missing needs --ndx (the trials that must all have a "
                               "score)")  # fmt: skip
        if not np.isfinite(fill):
            raise BosarisError(f"the fill value must be a finite number, got {fill}")
        values = np.where(scored, values, fill)
        if unscored:
            _say(args, f"{unscored:,} of the {len(values):,} --ndx trials have no score: "
                       f"filled with {fill:g}")  # fmt: skip
    elif unscored:
        first = Path(order.path).name
        _say(args, f"{unscored:,} of the {len(values):,} trials of {first} lack a score in "
                   "some system: not written")  # fmt: skip
    write_score_lines(order, values, scored | (fill is not None), args.out,
                      **output_options(args, args.out))  # fmt: skip
    return natural, out


def trial_list(path: str, option: str, text_format: str | None = None) -> Any:
    """The trials of an ndx or key text file (``option`` names it in errors; in layout
    ``text_format``, ``None``: detected) as a list, duplicates refused."""
    from bosaris_dask.io.text.collect import _Collector
    from bosaris_dask.io.text.packed import TrialList
    from bosaris_dask.io.text.read import collect_text

    collector: _Collector = collect_text(path, format=text_format)
    try:
        if collector.kind not in ("ndx", "key"):
            raise OptionError(f"{option} {path} holds {collector.kind}, not a trial list (an Ndx "
                              "or a Key)")  # fmt: skip
        trials = TrialList._of(collector, path)
    finally:
        collector.close()
    trials.refuse_duplicates()
    return trials


def listed(args: argparse.Namespace, paths: Sequence[str]) -> bool:
    """Whether ``paths`` are regular text files of at most :data:`LIST_MAX_BYTES` each and
    ``--out`` is text: read and written as lists, in their lines' order."""
    from bosaris_dask import io

    return (
        args.out is not None
        and io._write_format(args.out, None) == "text"
        and all(
            _regular_text_file(p) and Path(p).stat().st_size <= LIST_MAX_BYTES for p in paths
        )  # fmt: skip
    )
