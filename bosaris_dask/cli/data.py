"""Subcommands that make or move trial data: ``convert``, ``info``, ``simulate``, ``demo``."""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bosaris_dask.cli.common import (
    _cluster,
    _default_priors,
    _evaluate,
    _load,
    _opened,
    _progress,
    _say,
    _size,
    _text_formats,
    _write_json,
)
from bosaris_dask.cli.options import output_options
from bosaris_dask.errors import BosarisError, OptionError, QualityTableError, TrialError, article
from bosaris_dask.progress import compute

#: Why an HDF5/.mat key may hold targets only.
_SIGNED_NDX = (
    "an Ndx stored with a signed (int8) mask, as SIDEKIT writes them? read it with --kind ndx "
    "(info, convert)"
)


def cmd_convert(args: argparse.Namespace) -> int:
    from bosaris_dask import io

    out_format = io._write_format(args.output, None)
    options = output_options(args, args.output)
    if _list_to_text(args):
        return 0

    def open_input() -> Any:
        return io.read(args.input, args.kind, text_format=args.format)

    with _opened(args, open_input, _size) as obj:
        # (before the write: an output onto the input replaces what obj reads lazily)
        note = None if args.kind else _maybe_an_ndx(args, args.input, obj)
        io.write(obj, args.output, progress=_progress(args), **options)
    as_lines = (" as trial lines (an id without a trial has no line)"
                if out_format == "text" else "")  # fmt: skip
    _say(args, f"wrote {_described(obj)} to {args.output}{as_lines}")
    if note:
        print(f"warning: {note}", file=sys.stderr)
    return 0


def _described(obj: Any) -> str:
    """``"scores of 200 x 500"``, ``"quality of 3 model ids and 2 segment ids"``."""
    kind = obj.attrs.get("bosaris_kind", "object")
    sides = [side for side in ("model", "segment") if side in obj.sizes]
    if kind == "quality":
        return f"quality of {' and '.join(f'{obj.sizes[s]:,} {s} ids' for s in sides)}"
    if len(sides) == 2:
        return f"{kind} of {obj.sizes['model']:,} x {obj.sizes['segment']:,}"
    return kind


def _list_to_text(args: argparse.Namespace) -> bool:
    """``convert`` of a sparse text list (:func:`~bosaris_dask.io.text.packed.is_sparse`) to
    text: its lines rewritten in their own order, never through its grid (VoxCeleb1-E's is
    2.1e10 cells); ``False`` (nothing done) for anything else."""
    from bosaris_dask import io
    from bosaris_dask.cli.packed_inputs import _regular_text_file
    from bosaris_dask.io.text.packed import TrialList, read_trials
    from bosaris_dask.io.text.write import write_trial_lines

    if not _regular_text_file(args.input) or io._write_format(args.output, None) != "text":
        return False
    trials = read_trials(args.input, args.kind, format=args.format)
    if not isinstance(trials, TrialList):
        return False  # (a dense list: read again through its grid, which it fills)
    trials.refuse_duplicates()  # as the grid would: a list that converts is one that reads
    n = write_trial_lines(trials, args.output, header=args.header)
    _say(args, f"wrote {trials.kind} ({n:,} trials over {len(trials.models):,} x "
               f"{len(trials.segments):,} ids, a sparse list: in its line order) to "
               f"{args.output}")  # fmt: skip
    return True


def _target_counts(args: argparse.Namespace, key: Any) -> tuple[int, int]:
    """``(targets, non-targets)`` of an explicit key, in one pass."""
    mask = key.trial_mask.data
    counts = compute([(mask == 1).sum(), (mask == -1).sum()], progress=_progress(args))
    return int(counts[0]), int(counts[1])


def _maybe_an_ndx(args: argparse.Namespace, path: str, obj: Any) -> str | None:
    """What to say of a key read from HDF5/.mat with targets only: an Ndx stored with a signed
    (int8) mask, as SIDEKIT writes them, reads as such a key (one more pass over the mask)."""
    from bosaris_dask import io
    from bosaris_dask.trials import is_label_key, kind_of

    if kind_of(obj) != "key" or is_label_key(obj) or io.detect_format(path) not in ("hdf5", "mat"):
        return None
    n_tar, n_non = _target_counts(args, obj)
    if not n_tar or n_non:
        return None
    return f"{path} has no non-targets: {_SIGNED_NDX}"


def _count_label_targets(obj: Any) -> int:
    import pandas as pd

    m = pd.Series(obj.model_label.values).value_counts()
    s = pd.Series(obj.segment_label.values).value_counts()
    return int((m * s.reindex(m.index).fillna(0)).sum())


def cmd_info(args: argparse.Namespace) -> int:
    from bosaris_dask import io
    from bosaris_dask.cli.condition_info import cmd_condition_info, is_condition_table
    from bosaris_dask.cli.embeddings import cmd_embedding_info, is_embedding_file

    if args.kind == "conditions" or (args.kind is None and is_condition_table(args.path)):
        return cmd_condition_info(args)

    if is_embedding_file(args.path):
        if args.key:
            raise BosarisError(f"--key compares scores with a key, but {args.path} holds "
                               "embeddings")  # fmt: skip
        # the cluster options, as elsewhere; one read of the file: threads unless told otherwise
        with _opened(args, lambda: args.path, lambda _: 0):
            return cmd_embedding_info(args)
    from bosaris_dask.io.text.packed import TrialList

    try:
        listed = _text_trials(args)
    except QualityTableError as exc:
        _print_quality_table(args, exc)
        return 0
    if isinstance(listed, TrialList):  # a sparse list: never its grid
        _print_list_info(args, listed)
        key = _key_list(args) if args.key else None
        if key is not None:
            _print_list_coverage(listed, key, args.key)
        elif args.key:
            with _opened(args, lambda: _read_key(args), _size) as grid_key:
                _print_list_coverage_of_grid(args, listed, grid_key)
        return 0
    grid = listed

    def read() -> Any:
        return io.read(args.path, args.kind, text_format=args.format) if grid is None else grid

    try:
        with _opened(args, read, _size) as obj:
            _print_info(args, obj)
    except QualityTableError as exc:  # one side's quality table (HDF5 or MAT)
        _print_quality_table(args, exc)
    return 0


def _print_quality_table(args: argparse.Namespace, error: QualityTableError) -> None:
    """``info`` of one side's quality table at ``args.path``, which the trial readers found
    to be one (``error``, raised as it is where ``--kind`` or ``--key`` asks for trials)."""
    from bosaris_dask import io

    if args.kind or args.key:
        raise error
    table = io.read_quality(args.path)
    print(f"path:        {args.path} ({io.detect_format(args.path)})")
    print("kind:        quality table of one side (--model-quality or --segment-quality)")
    _print_quality_side(table, "")


def _print_quality_side(table: Any, side: str) -> None:
    """A quality table's ids and each measure's range (``side``: ``"model "``, ``"segment "``
    or ``""``)."""
    import numpy as np

    ids = [str(i) for i in table[table.dims[0]].values]
    shown = ", ".join(ids[:4]) + (", ..." if len(ids) > 4 else "")
    values = np.asarray(table.values, dtype=np.float64)
    without = int(np.isnan(values).all(axis=1).sum()) if values.size else 0  # "no quality"
    none = f", {without:,} without quality: NaN rows" if without else ""
    print(f"{side + 'ids:':<13}{shown + ' ' if shown else ''}({len(ids):,} ids{none})")
    if not len(values) or without == len(values):
        return
    for k, name in enumerate(table[table.dims[1]].values.tolist()):
        v = values[:, k][~np.isnan(values[:, k])]
        label = f"measure {name}" if isinstance(name, int) else str(name)
        print(f"  {label:<12} min {np.min(v, initial=np.inf):.6g}, mean {np.mean(v):.6g}, "
              f"max {np.max(v, initial=-np.inf):.6g}")  # fmt: skip


def _text_trials(args: argparse.Namespace) -> Any:
    """A text trial file read once: a sparse list
    (:func:`~bosaris_dask.io.text.packed.is_sparse`) as a
    :class:`~bosaris_dask.io.text.packed.TrialList`, so that ``info`` never builds its grid
    (VoxCeleb1-E's is 2.1e10 cells), else its trial object; ``None`` for any other file."""
    from bosaris_dask.cli.packed_inputs import _regular_text_file
    from bosaris_dask.io.text.packed import read_trials

    if not _regular_text_file(args.path):
        return None
    return read_trials(args.path, args.kind, format=args.format)


def _key_list(args: argparse.Namespace) -> Any:
    """``--key`` as a sparse list, to count a sparse score list's coverage without the grid;
    ``None`` without ``--key`` or when it is no sparse text list (counted on the grid)."""
    from bosaris_dask.cli.packed_inputs import _regular_text_file
    from bosaris_dask.io.text.packed import TrialList, read_trials

    if not args.key or not _regular_text_file(args.key):
        return None
    key = read_trials(args.key, "key", format=_text_formats(args)[0])
    return key if isinstance(key, TrialList) else None


def _read_key(args: argparse.Namespace) -> Any:
    """``info``'s ``--key``, in its text layout where one is given."""
    from bosaris_dask import io

    return io.read(args.key, "key", text_format=_text_formats(args)[0])


def _print_list_coverage(scores: Any, key: Any, key_path: str) -> None:
    """:func:`_print_coverage` of two sparse lists, from their trials."""
    from bosaris_dask.io.text.packed import joined

    key.refuse_duplicates()  # as the grids would
    scores.refuse_duplicates()
    _, given = joined(key, scores)
    _print_counts(key_path, len(key.values), int(given.sum()), len(scores.values))


def _print_list_coverage_of_grid(args: argparse.Namespace, scores: Any, key: Any) -> None:
    """:func:`_print_coverage` of a sparse score list against a key store (or dense text key):
    the key's labels looked up at the list's trials, not the list put on a grid."""
    scores.refuse_duplicates()  # as the grid would
    m, s = scores.positions_in(key["model"].values, key["segment"].values)
    inside = np.flatnonzero((m >= 0) & (s >= 0))
    mask = key["trial_mask"].data
    labels, n_key = compute((mask.vindex[m[inside], s[inside]], (mask != 0).sum()),
                            progress=_progress(args))  # fmt: skip
    _print_counts(args.key, int(n_key), int(np.count_nonzero(labels)), len(scores.values))


def _print_list_info(args: argparse.Namespace, trials: Any) -> None:
    """``info`` of a sparse text list, from its trials: the counts the grid would give."""
    if args.key and trials.kind != "scores":
        raise BosarisError(f"--key compares scores with a key, but {args.path} holds "
                           f"{article(trials.kind)}")  # fmt: skip
    trials.refuse_duplicates()  # as the grid would (a trial given twice counted twice)
    n_m, n_s, n = len(trials.models), len(trials.segments), len(trials.values)
    print(f"path:        {args.path} (text)")
    print(f"kind:        {trials.kind}")
    print(f"shape:       {n_m:,} models x {n_s:,} segments ({n_m * n_s:,} cells; a sparse "
          "list: read as a list, not as its grid)")  # fmt: skip
    for dim, ids in (("model", trials.models), ("segment", trials.segments)):
        more = f", ... ({len(ids):,} ids)" if len(ids) > 4 else ""
        print(f"{dim + ' ids:':<13}{', '.join(map(str, ids[:4]))}{more}")
    if trials.kind == "key":
        n_tar = int(np.count_nonzero(trials.values > 0))
        print(f"trials:      {n:,} ({n_tar:,} targets, {n - n_tar:,} non-targets)")
    else:
        print(f"trials:      {n:,}")


def _print_info(args: argparse.Namespace, obj: Any) -> None:
    from bosaris_dask import io
    from bosaris_dask.trials import is_label_key, kind_of

    kind = kind_of(obj)
    if args.key and kind != "scores":
        raise BosarisError(
            f"--key compares scores with a key, but {args.path} holds {article(kind)}"
        )
    print(f"path:        {args.path} ({io.detect_format(args.path)})")
    print(f"kind:        {kind}{' (derived from class labels)' if is_label_key(obj) else ''}")
    if kind == "quality":
        for side in ("model", "segment"):
            if f"{side}_quality" in obj:
                _print_quality_side(obj[f"{side}_quality"], f"{side} ")
        return
    n_m, n_s = obj.sizes["model"], obj.sizes["segment"]
    print(f"shape:       {n_m:,} models x {n_s:,} segments ({n_m * n_s:,} cells)")
    for dim in ("model", "segment"):
        ids = obj[dim].values
        more = f", ... ({len(ids):,} ids)" if len(ids) > 4 else ""
        print(f"{dim + ' ids:':<13}{', '.join(map(str, ids[:4]))}{more}")
    var = obj["score" if kind == "scores" else "trial_mask"]
    chunks = var.data.chunksize
    print(
        f"chunks:      {chunks[0]:,} x {chunks[1]:,} ({var.data.npartitions} "
        f"chunk{'s' * (var.data.npartitions > 1)}, {var.dtype})"
    )
    if kind == "key" and is_label_key(obj):
        n_tar = _count_label_targets(obj)
        print(f"trials:      {n_m * n_s:,} ({n_tar:,} targets, {n_m * n_s - n_tar:,} non-targets)")
    elif kind == "key":
        n_tar, n_non = _target_counts(args, obj)
        print(f"trials:      {n_tar + n_non:,} ({n_tar:,} targets, {n_non:,} non-targets)")
        if n_tar and not n_non and io.detect_format(args.path) in ("hdf5", "mat"):
            print(f"note:        no non-targets: {_SIGNED_NDX}")
    else:
        name = "trial_mask" if kind == "ndx" else "score_mask"
        n = int(compute(obj[name].data.sum(), progress=_progress(args)))
        print(f"trials:      {n:,}")
        if kind == "ndx" and n == n_m > n_s and io.detect_format(args.path) == "text":
            print("note:        one segment per model, fewer segments than models: if this is "
                  "an 'id class' table, it is read by --enrol-classes/--test-classes (info "
                  "reads it as a trial list)")  # fmt: skip
        first = (str(obj.model.values[0]), str(obj.segment.values[0])) if n_m and n_s else ()
        if kind == "ndx" and first and first[0] in ("model", "segment") \
                and io.detect_format(args.path) == "text":  # fmt: skip
            print(f"note:        the trial {first} looks like the header of a condition "
                  "table separated by spaces: condition tables are tab-separated")  # fmt: skip
    if args.key:
        _print_coverage(obj, args)


def _print_coverage(scores: Any, args: argparse.Namespace) -> None:
    """What ``evaluate`` would use of these scores: key trials with and without a score, and
    scores of trials not in the key (which it ignores)."""
    from bosaris_dask.trials import coverage

    c = coverage(scores, _read_key(args))
    _print_counts(args.key, c["trials"], c["scored"], c["scores"])


def _print_counts(key_path: str, n_key: int, scored: int, n_scores: int) -> None:
    """The key's trials with and without a score, and the scores of trials not in it."""
    print(f"key trials:  {n_key:,} in {key_path} ({scored:,} with a score, "
          f"{n_key - scored:,} without)")  # fmt: skip
    print(f"not in key:  {n_scores - scored:,} of {n_scores:,} scores (evaluate ignores them)")


def _write_simulation(key: Any, systems: list[Any], out: Path, progress: bool) -> list[Path]:
    """Write ``key.zarr`` and ``system-K.zarr`` into ``out``; all of them appear together.

    Every store is written under a hidden temporary name first; all are renamed into place
    together once complete (:func:`~bosaris_dask.io.atomic.atomic_paths`), so a run killed while
    writing leaves the previous set whole, never a new key next to the previous run's scores.
    """
    from bosaris_dask.io import write_zarr
    from bosaris_dask.io.atomic import atomic_paths, refuse_inside_store

    stale = sorted((p.name for p in out.glob("system-*.zarr")
                    if p.stem[7:].isdigit() and int(p.stem[7:]) > len(systems)),
                   key=lambda name: int(name[7:-5]))  # fmt: skip
    if stale:  # beside the new key, they would evaluate (at chance) as if they were its systems
        raise OptionError(f"{out} holds {', '.join(stale)} of an earlier run, beside the "
                          f"{len(systems)} system{'s' * (len(systems) > 1)} this run writes with "
                          "a new key: remove them, or write into another --out-dir")  # fmt: skip
    refuse_inside_store(out, out)  # before the folder is made in it
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "key.zarr", *(out / f"system-{k}.zarr" for k in range(1, len(systems) + 1))]
    with atomic_paths(paths) as tmps:
        write_zarr(key, tmps[0])
        for tmp, scores in zip(tmps[1:], systems, strict=True):
            write_zarr(scores, tmp, progress=progress)
    return paths


def cmd_simulate(args: argparse.Namespace) -> int:
    from bosaris_dask.simulate import simulate

    with _cluster(args, size_hint=args.n_models * args.n_segments):
        start = time.perf_counter()
        key, systems = simulate(
            args.n_models, args.n_segments, systems=args.systems, target_rate=args.target_rate,
            seed=args.seed, dtype=np.dtype(args.dtype),
        )  # fmt: skip
        paths = _write_simulation(key, systems, Path(args.out_dir), _progress(args))
        _say(args, f"wrote {', '.join(str(p) for p in paths)} "
                   f"in {time.perf_counter() - start:.1f} s")  # fmt: skip
    targets = _count_label_targets(key)
    rate = targets / (args.n_models * args.n_segments)
    if not math.isclose(rate, args.target_rate, rel_tol=0.01):
        print(f"warning: the target rate is {rate:.4g}, not the {args.target_rate:g} asked "
              f"({targets:,} targets in {args.n_models * args.n_segments:,} trials): "
              f"{_why_not(args.n_models, args.n_segments, args.target_rate)}",
              file=sys.stderr)  # fmt: skip
    return 0


def _why_not(models: int, segments: int, target_rate: float) -> str:
    """Why ``simulate`` cannot make ``target_rate`` of ``models x segments`` trials."""
    speakers = max(1, round(1 / target_rate))
    why = f"the ids are dealt in turn to round(1/{target_rate:g}) = {speakers:,} speakers"
    if math.isclose(1 / speakers, target_rate, rel_tol=0.01):  # the speakers' shares are unequal
        return (f"{why}, who get unequal shares unless the models or the segments are multiples "
                f"of {speakers:,}")  # fmt: skip
    return f"{why}: with equal shares, a rate of 1/{speakers:,}"


def _write_speaker_tables(key: Any, out: Path, seed: int) -> list[Path]:
    """``models.tsv`` and ``segments.tsv``: the condition tables of the demo key's ids, each
    id's speaker and that speaker's gender, and each segment's source (``tel`` for about 70% of
    them, else ``mic``), drawn from ``seed``: attributes to split on (``--by model.gender --by
    segment.source``, ``--by same.gender``) and units to resample (``--resample
    model.speaker``). The simulated scores do not depend on them."""
    from bosaris_dask.io.atomic import atomic_path

    rng = np.random.default_rng([seed, 4])  # (not the simulation's own stream)
    speakers = np.unique(np.concatenate([key.model_label.values, key.segment_label.values]))
    gender_of = dict(zip(speakers, rng.choice(["f", "m"], size=speakers.size), strict=True))
    paths = []
    for side in ("model", "segment"):
        ids, spk = key[side].values, key[f"{side}_label"].values
        columns = {"speaker": spk, "gender": [gender_of[s] for s in spk]}
        if side == "segment":
            columns["source"] = rng.choice(["tel", "mic"], p=[0.7, 0.3], size=ids.size)
        lines = ["\t".join([side, *columns])]
        lines += ["\t".join(row) for row in zip(ids, *columns.values(), strict=True)]
        path = out / f"{side}s.tsv"
        with atomic_path(path) as tmp:
            Path(tmp).write_text("\n".join(lines) + "\n")
        paths.append(path)
    return paths


def cmd_demo(args: argparse.Namespace) -> int:
    from bosaris_dask.report import format_table, to_json_dict
    from bosaris_dask.simulate import simulate

    out = Path(args.out_dir)
    with _cluster(args, size_hint=args.n_models * args.n_segments):
        _say(args, f"simulating {args.n_models} models x {args.n_segments} segments, 3 systems ...")
        try:
            key, systems = simulate(args.n_models, args.n_segments, systems=3, seed=args.seed)
        except TrialError as error:  # (it names simulate's target_rate, which demo does not take)
            raise OptionError(
                f"--n-models {args.n_models} --n-segments {args.n_segments}: too few ids "
                f"for a demo ({error}); the default is 200 x 500"
            ) from None
        paths = _write_simulation(key, systems, out, progress=False)
        from bosaris_dask.cli.embeddings import write_demo_embeddings

        embedding_paths = write_demo_embeddings(out, seed=args.seed)
        tables = _write_speaker_tables(key, out, args.seed)
        from bosaris_dask.spoofing.simulate import write_asvspoof5_sample

        spoof_paths = write_asvspoof5_sample(out / "asvspoof5", seed=args.seed)
        args.prior, args.allow_missing = None, False
        _default_priors(args)
        score_paths = [str(p) for p in paths[1:]]
        results = _evaluate(args, *_load(str(paths[0]), score_paths), score_paths)
        print(format_table(results))
        _write_json(str(out / "results.json"), to_json_dict(results))
    print(
        f"\nOutputs in {out}/: key.zarr (a label-derived key), "
        f"{', '.join(p.name for p in paths[1:])} (scores), results.json (the metrics); "
        f"{', '.join(p.name for p in embedding_paths[:3])} (speaker embeddings) and "
        f"{embedding_paths[3].name} (their key, from the id class tables "
        f"{embedding_paths[4].name} and {embedding_paths[5].name}); "
        f"{tables[0].name} and {tables[1].name} (condition tables: each id's speaker and "
        "gender, each segment's source); "
        f"{spoof_paths[0].parent.name}/ (a synthetic sample in ASVspoof 5's files, for spoof)."
    )
    print(f"Try: bosaris-dask info {paths[1]}")
    print(f"     bosaris-dask evaluate --key {paths[0]} --scores {paths[1]} --prior 0.01")
    print("     bosaris-dask evaluate --help   (every command's help ends with examples)")
    return 0
