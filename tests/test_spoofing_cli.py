"""``bosaris-dask spoof cm|sasv`` on the bundled ASVspoof 5 case, and the asvspoof5-sasv profile."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from bosaris_dask.cli import main

DATA = Path(__file__).parent / "data" / "asvspoof5"
REF = json.loads((DATA / "reference.json").read_text())
CM = ["--key", str(DATA / "cm_key.tsv.gz"), "--scores", str(DATA / "cm_scores.tsv.gz")]


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out = capsys.readouterr()
    return status, out.out, out.err


def test_spoof_cm_prints_and_writes_the_packages_numbers(tmp_path, capsys):
    out_json = tmp_path / "cm.json"
    status, out, _ = _run(capsys, "spoof", "cm", *CM, "--json", str(out_json))
    assert status == 0
    doc = json.loads(out_json.read_text())
    ref = REF["cm"]
    for name in ("min_dcf", "act_dcf", "cllr"):
        assert doc[name] == pytest.approx(ref[name], rel=1e-12), name
    assert doc["eer"] == pytest.approx(ref["eer_official"], rel=1e-12)
    assert doc["eer_rocch"] == pytest.approx(ref["eer_rocch"], rel=1e-10)
    assert doc["costs"] == {"p_spoof": 0.05, "c_miss": 1.0, "c_fa": 10.0,
                            "effective_prior": pytest.approx(ref["effective_prior"])}  # fmt: skip
    assert (doc["n_bonafide"], doc["n_spoof"]) == (15000, 35000)
    assert "minDCF                  0.3998" in out
    assert "EER (package)           15.874 %" in out and "ROCCH-EER               15.847 %" in out


@pytest.mark.parametrize(
    "rates, t_dcf",
    [([], REF["sasv"]["min_t_dcf_fixed_asv"]), (["--asv-rates", "fixed"],
      REF["sasv"]["min_t_dcf_fixed_asv"]), (["--asv-rates", "given"],
      REF["sasv"]["min_t_dcf_given_asv"])],
)  # fmt: skip
def test_spoof_sasv_prints_and_writes_a_dcf_t_dcf_and_t_eer(tmp_path, capsys, rates, t_dcf):
    out_json = tmp_path / "sasv.json"
    status, out, _ = _run(capsys, "spoof", "sasv", "--key", str(DATA / "sasv_key.tsv.gz"),
                          "--scores", str(DATA / "sasv_scores.tsv.gz"), *rates,
                          "--json", str(out_json))  # fmt: skip
    assert status == 0
    doc = json.loads(out_json.read_text())
    assert doc["min_a_dcf"] == pytest.approx(REF["sasv"]["min_a_dcf"], rel=1e-12)
    assert doc["t_eer"] == pytest.approx(REF["sasv"]["t_eer_exact"], rel=1e-12)
    assert doc["costs"]["p_target"] == 0.9405 and doc["costs"]["c_fa_spoof"] == 10.0
    assert doc["min_t_dcf"] == pytest.approx(t_dcf, rel=1e-12)
    if "given" in rates:  # counted at the package's EER threshold: its rates
        given = REF["sasv"]["asv_rates_given"]
        assert doc["asv_rates"]["source"] == "given"
        assert doc["asv_rates"]["threshold"] == given["threshold"]
        assert (doc["asv_rates"]["pmiss"], doc["asv_rates"]["pfa"]) == (49 / 6000, 50 / 6000)
        assert doc["asv_rates"]["pfa_spoof"] == 9683 / 12000 == pytest.approx(given["pfa_spoof"])
    else:
        assert doc["asv_rates"]["source"] == "fixed"
    assert "min a-DCF               0.2427" in out and "t-EER (exact)           8.264 %" in out
    assert abs(doc["t_eer_pmiss"] - doc["t_eer_pfa"]) < 1e-3  # an equal-error point: no note
    assert "far apart" not in out


def test_spoof_sasv_says_when_the_t_eer_s_tandem_rates_are_far_apart(tmp_path, capsys):
    # every score equal (a chance-level system): the ASVspoof 5 rule's t-EER is 100 % at a
    # point whose tandem miss rate is 0 and false-alarm rate 100 % (t_eer's test works it out)
    key = tmp_path / "key.tsv"
    scores = tmp_path / "scores.tsv"
    classes = [("bonafide", "target"), ("bonafide", "nontarget"), ("spoof", "spoof")] * 2
    key.write_text("spk\tfilename\tcm-label\tasv-label\n" + "".join(
        f"S\tF{i}\t{cm}\t{asv}\n" for i, (cm, asv) in enumerate(classes)))  # fmt: skip
    scores.write_text("spk\tfilename\tcm-score\tasv-score\tsasv-score\n" + "".join(
        f"S\tF{i}\t1.0\t1.0\t1.0\n" for i in range(len(classes))))  # fmt: skip
    out_json = tmp_path / "sasv.json"
    status, out, _ = _run(capsys, "spoof", "sasv", "--key", str(key), "--scores", str(scores),
                          "--json", str(out_json))  # fmt: skip
    assert status == 0
    doc = json.loads(out_json.read_text())
    assert (doc["t_eer"], doc["t_eer_pmiss"], doc["t_eer_pfa"]) == (1.0, 0.0, 1.0)
    assert "t-EER (exact)           100.000 %  (tandem Pmiss 0.000 %, Pfa 100.000 % there)" in out
    assert "the tandem rates there are far apart: no equal-error point" in out


def test_spoof_sasv_of_a_single_system_reports_the_a_dcf_and_says_what_is_not_given(
    tmp_path, capsys
):
    # The evaluation package's t2_single mode: '-' for the CM and ASV scores. The trials also
    # come from the database's five-column protocol file, where a file serves several speakers.
    import gzip

    rows = [line.split() for line in gzip.open(DATA / "sasv_scores.tsv.gz", "rt")][1:]
    scores = tmp_path / "single.tsv"
    scores.write_text("".join(f"{spk}\t{name}\t-\t-\t{sasv}\n" for spk, name, _, _, sasv in rows))
    key_rows = [line.split() for line in gzip.open(DATA / "sasv_key.tsv.gz", "rt")][1:]
    key = tmp_path / "trial.tsv"
    key.write_text("".join(f"{spk} {name} F {'bonafide' if cm == 'bonafide' else 'A12'} {asv}\n"
                           for spk, name, cm, asv in key_rows))  # fmt: skip
    out_json = tmp_path / "single.json"
    status, out, _ = _run(capsys, "spoof", "sasv", "--key", str(key), "--scores", str(scores),
                          "--json", str(out_json))  # fmt: skip
    assert status == 0
    doc = json.loads(out_json.read_text())
    assert doc["min_a_dcf"] == pytest.approx(REF["sasv"]["min_a_dcf"], rel=1e-12)
    assert (doc["min_t_dcf"], doc["min_t_dcf_note"]) == (None, "needs the CM scores")
    assert (doc["t_eer"], doc["t_eer_note"]) == (None, "needs the CM and the ASV scores")
    assert "min t-DCF               -  (needs the CM scores)" in out
    status, _, err = _run(capsys, "spoof", "sasv", "--key", str(key), "--scores", str(scores),
                          "--asv-rates", "given")  # fmt: skip
    assert status == 1 and "single.tsv has none (its asv-score column is '-'" in err


def test_spoof_errors_are_one_line(tmp_path, capsys):
    key = tmp_path / "k.tsv"
    key.write_text("filename\tcm-label\nE1\tbonafide\nE2\tspoofed\n")
    status, _, err = _run(capsys, "spoof", "cm", "--key", str(key), "--scores", str(key))
    assert status == 1
    assert err.strip().endswith("k.tsv:3: bad cm-label 'spoofed': expected bonafide/spoof")
    assert len(err.strip().splitlines()) == 1
    status, _, err = _run(capsys, "spoof", "cm", *CM, "--asv-rates", "given")
    assert status == 1 and "--asv-rates is for 'spoof sasv'" in err


def test_evaluate_with_the_sasv_profile_points_to_spoof_sasv(tmp_path, capsys):
    key = tmp_path / "k.txt"
    key.write_text("m a target\nm b nontarget\n")
    scores = tmp_path / "s.txt"
    scores.write_text("m a 1.0\nm b 0.0\n")
    status, _, err = _run(capsys, "evaluate", "--key", str(key), "--scores", str(scores),
                          "--profile", "asvspoof5-sasv")  # fmt: skip
    assert status == 1
    assert (
        "profile asvspoof5-sasv is not a two-class evaluation: run 'bosaris-dask spoof sasv'" in err
    )


@pytest.mark.parametrize("task", ["cm", "sasv"])
def test_spoof_converts_to_zarr_and_reads_the_stores_back_to_the_same_numbers(tmp_path, capsys,
                                                                               task):  # fmt: skip
    files = ["--key", str(DATA / f"{task}_key.tsv.gz"),
             "--scores", str(DATA / f"{task}_scores.tsv.gz")]  # fmt: skip
    rates = ["--asv-rates", "given"] if task == "sasv" else []
    out_dir = tmp_path / "set"
    status, _, err = _run(capsys, "spoof", task, *files, "--out-dir", str(out_dir))
    assert status == 0 and "key.zarr" in err
    expected = {"key.zarr", "cm.zarr"} | ({"asv.zarr", "sasv.zarr"} if task == "sasv" else set())
    assert {p.name for p in out_dir.iterdir()} == expected
    _run(capsys, "spoof", task, *files, *rates, "--json", str(tmp_path / "text.json"))
    stored = ["--set-dir", str(out_dir)]
    status, out, _ = _run(capsys, "spoof", task, *stored, *rates,
                          "--json", str(tmp_path / "zarr.json"))  # fmt: skip
    assert status == 0 and "passes over the data" in out
    text, zarr = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("text", "zarr"))
    assert text == zarr


def test_a_set_written_over_an_earlier_one_keeps_none_of_its_score_stores(tmp_path, capsys):
    """A single SASV system converted into the folder of a full set: the earlier CM and ASV
    stores went on being read (min t-DCF and t-EER of the earlier system's CM scores); they are
    removed, and a folder of that name that is no store is refused, never deleted."""
    out_dir = tmp_path / "set"
    full = ["--key", str(DATA / "sasv_key.tsv.gz"), "--scores", str(DATA / "sasv_scores.tsv.gz")]
    assert _run(capsys, "spoof", "sasv", *full, "--out-dir", str(out_dir))[0] == 0
    lines = gzip.open(DATA / "sasv_scores.tsv.gz", "rt").read().splitlines()
    single = tmp_path / "single.tsv"  # the same SASV scores, no CM or ASV column
    single.write_text("\n".join(
        " ".join([*f[:2], "-", "-", f[4]]) for f in (line.split() for line in lines[1:])
    ) + "\n")  # fmt: skip
    alone = ["--key", str(DATA / "sasv_key.tsv.gz"), "--scores", str(single)]
    assert _run(capsys, "spoof", "sasv", *alone, "--out-dir", str(out_dir))[0] == 0
    assert {p.name for p in out_dir.iterdir()} == {"key.zarr", "sasv.zarr"}
    stored = _run(capsys, "spoof", "sasv", "--set-dir", str(out_dir))
    assert stored[:2] == _run(capsys, "spoof", "sasv", *alone)[:2]
    assert "needs the CM scores" in stored[1]
    assert "ASV rates" not in stored[1]  # (the t-DCF's, which is not computed: they were said)
    for argv in (
        ["--set-dir", str(out_dir)],
        ["--key", str(out_dir / "key.zarr"), "--scores", str(out_dir / "sasv.zarr")],
    ):
        status, _, err = _run(capsys, "spoof", "cm", *argv)  # a CM evaluation of SASV trials
        assert status == 1 and "key.zarr: an SASV key (trials of claimed speakers" in err
    (out_dir / "cm.zarr").mkdir()
    (out_dir / "cm.zarr" / "mine.txt").write_text("not a store")
    status, _, err = _run(capsys, "spoof", "sasv", *alone, "--out-dir", str(out_dir))
    assert status == 1 and "cm.zarr is there and is no score store of an earlier set" in err
    assert (out_dir / "cm.zarr" / "mine.txt").exists()


def test_spoof_cm_reads_a_key_and_a_scores_store(tmp_path, capsys):
    _run(capsys, "spoof", "cm", *CM, "--out-dir", str(tmp_path / "set"))
    status, out, _ = _run(capsys, "spoof", "cm", "--key", str(tmp_path / "set" / "key.zarr"),
                          "--scores", str(tmp_path / "set" / "cm.zarr"))  # fmt: skip
    assert status == 0 and "minDCF                  0.3998" in out


@pytest.mark.parametrize(
    "argv, message",
    [(["--key", str(DATA / "cm_key.tsv.gz"), "--scores", "x.zarr"], "stores of a set: --set-dir"),
     (["--key", str(DATA / "cm_key.tsv.gz")], "give --key and --scores"),
     (["--set-dir", "d", "--key", "k"], "--set-dir replaces --key and --scores"),
     (["--set-dir", "d", "--out-dir", "o", "--json", "r.json"],  # wrote no JSON, said nothing
      "--out-dir writes the set's stores and evaluates nothing, so --json has no effect")],
)  # fmt: skip
def test_spoof_input_errors_are_one_line(capsys, argv, message):
    status, _, err = _run(capsys, "spoof", "cm", *argv)
    assert status == 1 and message in err and len(err.strip().splitlines()) == 1


def test_an_undefined_t_dcf_leaves_the_other_sasv_metrics(tmp_path, capsys):
    """An ASV system that accepts every trial at its EER threshold (C1 < 0) made the whole run
    an error, losing the a-DCF and the t-EER; one that accepts no spoof (C2 = 0) was called
    undefined although (C0 + C1 Pmiss) / C0 is defined."""
    key = tmp_path / "k.tsv"
    files = [f"T{i}" for i in range(10)] + ["N1", "P1", "P2"]
    labels = ["target"] * 10 + ["nontarget", "spoof", "spoof"]
    key.write_text("spk\tfilename\tcm-label\tasv-label\n" + "".join(
        f"A\t{f}\t{'spoof' if a == 'spoof' else 'bonafide'}\t{a}\n"
        for f, a in zip(files, labels, strict=True)))  # fmt: skip
    # "inverted": targets -10..-1, the non-target 5: the EER point (Pmiss = Pfa = 1) rejects
    # every trial but the non-target; the threshold, the highest score rejected there, is -1:
    # Pmiss 0.9, Pfa 1, C0 = 0.9405 * 0.9 + 0.0095 * 10 > 0.9405, C1 < 0
    rows = {"inverted": [*range(-10, 0), 5, -5, 6],
            "no_spoof_accepted": [*range(1, 11), 0, -5, -6]}  # fmt: skip
    out = {}
    for name, asv in rows.items():
        scores = tmp_path / f"{name}.tsv"
        scores.write_text("spk\tfilename\tcm-score\tasv-score\tsasv-score\n" + "".join(
            f"A\t{f}\t{cm}\t{a}\t{s}\n" for f, cm, a, s in zip(
                files, [1.0] * 11 + [-1.0, 0.3], asv, [*range(1, 11), 0, -3, -2],
                strict=True)))  # fmt: skip
        code, stdout, _ = _run(capsys, "spoof", "sasv", "--key", str(key), "--scores",
                               str(scores), "--asv-rates", "given", "--json",
                               str(tmp_path / f"{name}.json"))  # fmt: skip
        assert code == 0
        out[name] = (stdout, json.loads((tmp_path / f"{name}.json").read_text()))
    stdout, doc = out["inverted"]
    assert (doc["asv_rates"]["pmiss"], doc["asv_rates"]["pfa"]) == (0.9, 1.0)
    assert doc["min_t_dcf"] is None and doc["min_t_dcf_note"].startswith("t-DCF undefined")
    assert doc["min_a_dcf"] == 0.0 and doc["t_eer"] is not None
    assert "min t-DCF               undefined  (t-DCF undefined for these ASV rates" in stdout
    _, doc = out["no_spoof_accepted"]  # threshold 0: Pfa,spoof = 0, C2 = 0: the CM cannot help
    assert doc["asv_rates"]["threshold"] == 0.0
    assert doc["asv_rates"]["pfa_spoof"] == 0.0 and doc["min_t_dcf"] == 1.0


def test_a_cm_key_of_one_class_is_said_in_the_challenges_words(tmp_path, capsys):
    (tmp_path / "k.tsv").write_text("filename\tcm-label\nA\tbonafide\nB\tbonafide\n")
    (tmp_path / "s.tsv").write_text("filename\tcm-score\nA\t1.0\nB\t2.0\n")
    code, _, err = _run(capsys, "spoof", "cm", "--key", str(tmp_path / "k.tsv"), "--scores",
                        str(tmp_path / "s.tsv"))  # fmt: skip
    assert (
        code == 1
        and "found 2 targets and 0 non-targets among the key's scored trials (in a CM key, "
        "bona fide trials are the targets and spoofs the non-targets"
        in err
    )


# --------------------------------------------------------------------------------------------
# --allow-missing: key trials without a score
# --------------------------------------------------------------------------------------------

DROPPED = (3, 7, 11)  # the key trials the score files leave out


def _hand_made(tmp_path: Path, task: str, n: int = 30) -> tuple[list[str], list[str]]:
    """Key and score files of ``n`` trials (scores rounded to 0.01: some tied): the full key,
    the key without the ``DROPPED`` trials, and scores for those others only (reversed).
    Returns the argv of the full key and of the reduced one."""
    rng = np.random.default_rng(7)
    values = np.round(rng.normal(size=(n, 3)), 2)
    key, scores = [], []
    for i in range(n):
        if task == "cm":
            bona = i % 3 == 0
            key.append(f"F{i}\t{'bonafide' if bona else 'spoof'}\n")
            scores.append(f"F{i}\t{values[i, 0] + bona:.2f}\n")
        else:
            cls = ("target", "nontarget", "spoof")[i % 3]
            cm = "spoof" if cls == "spoof" else "bonafide"
            shift = {"target": 1.0, "nontarget": 0.0, "spoof": -0.5}[cls]
            key.append(f"S{i % 4}\tF{i}\t{cm}\t{cls}\n")
            cols = "\t".join(f"{v + shift:.2f}" for v in values[i])
            scores.append(f"S{i % 4}\tF{i}\t{cols}\n")
    head = (
        ("filename\tcm-label\n", "filename\tcm-score\n")
        if task == "cm"
        else (
            "spk\tfilename\tcm-label\tasv-label\n",
            "spk\tfilename\tcm-score\tasv-score\tsasv-score\n",
        )
    )
    kept = [i for i in range(n) if i not in DROPPED]
    (tmp_path / "key.tsv").write_text(head[0] + "".join(key))
    (tmp_path / "key_scored.tsv").write_text(head[0] + "".join(key[i] for i in kept))
    (tmp_path / "scores.tsv").write_text(head[1] + "".join(scores[i] for i in kept[::-1]))
    return (
        [f"--key={tmp_path / 'key.tsv'}", f"--scores={tmp_path / 'scores.tsv'}"],
        [f"--key={tmp_path / 'key_scored.tsv'}", f"--scores={tmp_path / 'scores.tsv'}"],
    )


def _evaluated(capsys, tmp_path: Path, task: str, name: str, *argv: str) -> tuple:
    """``(status, stdout, stderr, JSON document)`` of one ``spoof`` run."""
    rates = ["--asv-rates", "given"] if task == "sasv" else []
    out = tmp_path / f"{name}.json"
    status, stdout, err = _run(capsys, "spoof", task, *argv, *rates, "--json", str(out))
    return status, stdout, err, json.loads(out.read_text()) if status == 0 else None


@pytest.mark.parametrize("task", ["cm", "sasv"])
def test_allow_missing_drops_unscored_key_trials_as_if_the_key_did_not_list_them(
    tmp_path, capsys, task
):
    full, scored = _hand_made(tmp_path, task)
    status, _, err = _run(capsys, "spoof", task, *full)
    what = "filename(s)" if task == "cm" else "trial(s) (speaker filename)"
    few = "'F3', 'F7', 'F11'" if task == "cm" else "'S3 F3', 'S3 F7', 'S3 F11'"
    assert status == 1 and err.strip().endswith(
        f"3 {what} of {tmp_path / 'key.tsv'} have no score in {tmp_path / 'scores.tsv'}: {few} "
        "(--allow-missing drops them)"
    )
    status, out, err, doc = _evaluated(capsys, tmp_path, task, "allowed", *full, "--allow-missing")
    assert status == 0 and "dropped 3 key trials without a score" in err
    assert doc["n_missing"] == 3
    status, ref_out, ref_err, ref = _evaluated(capsys, tmp_path, task, "ref", *scored)
    assert status == 0 and ref["n_missing"] == 0 and "dropped" not in ref_err
    assert {**doc, "n_missing": 0} == ref and out == ref_out  # every number, bit for bit
    assert ref["passes"] >= 2 and (ref.get("t_eer") is not None or task == "cm")


@pytest.mark.parametrize("task", ["cm", "sasv"])
def test_out_dir_with_allow_missing_writes_only_the_scored_trials(tmp_path, capsys, task):
    full, scored = _hand_made(tmp_path, task)
    status, _, err = _run(capsys, "spoof", task, *full, "--out-dir", str(tmp_path / "set"))
    assert status == 1 and err.strip().endswith("(--allow-missing drops them)")
    assert not (tmp_path / "set").exists()
    status, _, err = _run(capsys, "spoof", task, *full, "--allow-missing",
                          "--out-dir", str(tmp_path / "set"))  # fmt: skip
    assert status == 0 and "dropped 3 key trials without a score" in err
    from bosaris_dask.spoofing import stores

    segments = stores.read_key(tmp_path / "set" / "key.zarr").segment.values.tolist()
    assert len(segments) == 27 and not {"F3", "S3 F3", "F7", "S3 F7"} & set(segments)
    _, _, err, doc = _evaluated(capsys, tmp_path, task, "set", "--set-dir", str(tmp_path / "set"))
    _, _, _, ref = _evaluated(capsys, tmp_path, task, "ref", *scored)
    assert doc == ref and doc["n_missing"] == 0 and "dropped" not in err
    # stores are copied as they are: nothing for --allow-missing to do
    status, _, err = _run(capsys, "spoof", task, "--set-dir", str(tmp_path / "set"),
                          "--allow-missing", "--out-dir", str(tmp_path / "copy"))  # fmt: skip
    assert status == 1 and "--out-dir copies stores as they are" in err
    assert "--allow-missing has no effect" in err and not (tmp_path / "copy").exists()


def _set_with_holes(tmp_path: Path, task: str, holes: dict[str, tuple[int, ...]]) -> str:
    """The stores of the full hand-made set, each column without a score for its ``holes``
    (key trial indices); returns the set's directory."""
    from bosaris_dask.spoofing import files, matching, stores

    key_path, scores_path = tmp_path / "key.tsv", tmp_path / "all.tsv"
    if task == "cm":
        key, cm = matching.cm_key_and_scores(files.read_cm_scores(scores_path),
                                             files.read_cm_key(key_path))  # fmt: skip
        columns = {"cm": cm}
    else:
        key, columns = matching.sasv_key_and_scores(files.read_sasv_scores(scores_path),
                                                    files.read_sasv_key(key_path))  # fmt: skip
    for name, where in holes.items():
        mask = columns[name].score_mask.values.copy()
        mask[0, list(where)] = False
        columns[name] = columns[name].assign(score_mask=(("model", "segment"), mask))
    stores.write_set(tmp_path / "holes", key, columns)
    return str(tmp_path / "holes")


def _all_scores(tmp_path: Path, task: str) -> None:
    """``all.tsv``: the hand-made scores of every key trial (the dropped ones too)."""
    full = tmp_path / "full"
    full.mkdir()
    _hand_made(full, task, n=30)
    (tmp_path / "key.tsv").write_text((full / "key.tsv").read_text())
    lines = (full / "scores.tsv").read_text().splitlines(keepends=True)
    rng = np.random.default_rng(0)
    extra = "".join(
        (f"F{i}\t{rng.normal():.2f}\n" if task == "cm"
         else f"S{i % 4}\tF{i}\t{rng.normal():.2f}\t{rng.normal():.2f}\t{rng.normal():.2f}\n")
        for i in DROPPED
    )  # fmt: skip
    (tmp_path / "all.tsv").write_text("".join(lines) + extra)


@pytest.mark.parametrize("task", ["cm", "sasv"])
def test_stores_with_missing_scores_need_allow_missing_and_drop_them_the_same(
    tmp_path, capsys, task
):
    _all_scores(tmp_path, task)
    columns = ("cm",) if task == "cm" else ("cm", "asv", "sasv")
    set_dir = _set_with_holes(tmp_path, task, {c: DROPPED for c in columns})
    inputs = [["--set-dir", set_dir]]
    if task == "cm":  # a key and a Scores store too
        inputs.append(["--key", f"{set_dir}/key.zarr", "--scores", f"{set_dir}/cm.zarr"])
    _, scored = _hand_made(tmp_path / "full", task)
    _, _, _, ref = _evaluated(capsys, tmp_path, task, "ref", *scored)
    for argv in inputs:
        status, _, err = _run(capsys, "spoof", task, *argv)
        assert status == 1 and "3 key trials have no score, e.g. " in err
        assert err.strip().endswith("(--allow-missing drops them)")
        status, _, err, doc = _evaluated(capsys, tmp_path, task, "holes", *argv, "--allow-missing")
        assert status == 0 and "dropped 3 key trials without a score" in err
        assert doc["n_missing"] == 3 and "n_missing_by_column" not in doc
        assert {**doc, "n_missing": 0} == ref  # as the text files without those trials


def test_set_dir_columns_without_different_scores_are_counted_per_column(tmp_path, capsys):
    """Each column's metrics drop its own key trials without a score; the ASV column, read
    only for the t-EER (fixed ASV rates), was not checked at all: its missing scores were
    dropped silently."""
    _all_scores(tmp_path, "sasv")
    set_dir = _set_with_holes(tmp_path, "sasv", {"sasv": (3,), "asv": (7, 11)})
    status, _, err = _run(capsys, "spoof", "sasv", "--set-dir", set_dir)
    assert status == 1 and "sasv: 1 key trial has no score, e.g. (sasv, S3 F3)" in err
    set_dir = _set_with_holes(tmp_path, "sasv", {"asv": (7, 11)})
    status, _, err = _run(capsys, "spoof", "sasv", "--set-dir", set_dir)
    assert status == 1 and "asv: 2 key trials have no score, e.g. (sasv, S3 F7)" in err
    assert err.strip().endswith("(--allow-missing drops them)")
    set_dir = _set_with_holes(tmp_path, "sasv", {"sasv": (3,), "asv": (7, 11)})
    out = tmp_path / "r.json"
    status, _, err = _run(capsys, "spoof", "sasv", "--set-dir", set_dir, "--allow-missing",
                          "--json", str(out))  # fmt: skip
    doc = json.loads(out.read_text())
    assert status == 0 and doc["n_missing"] == 2
    assert doc["n_missing_by_column"] == {"sasv": 1, "cm": 0, "asv": 2}
    assert "dropped key trials without a score, each column its own: sasv 1, cm 0, asv 2" in err
    assert doc["n_target"] + doc["n_nontarget"] + doc["n_spoof"] == 29  # the SASV column's


@pytest.mark.parametrize("task", ["cm", "sasv"])
def test_a_class_left_without_trials_by_allow_missing_is_still_an_error(tmp_path, capsys, task):
    full, _ = _hand_made(tmp_path, task, n=12)  # bona fide (cm) / target (sasv): 0, 3, 6, 9
    lines = (tmp_path / "scores.tsv").read_text().splitlines(keepends=True)
    column = 1 if task == "sasv" else 0  # 3 has no score already: leave out the others too
    kept = [line for line in lines if line.split()[column] not in ("F0", "F6", "F9")]
    (tmp_path / "scores.tsv").write_text("".join(kept))
    status, _, err = _run(capsys, "spoof", task, *full, "--allow-missing")
    assert status == 1 and len(err.strip().splitlines()) == 1
    if task == "cm":  # says, as sasv does, that trials were dropped
        assert err.strip().endswith(f"{tmp_path / 'key.tsv'}: need bona fide and spoof trials, "
                                    f"found 0 bona fide and 6 spoof with a score in "
                                    f"{tmp_path / 'scores.tsv'} (6 key trials without one "
                                    "dropped)")  # fmt: skip
    else:
        assert err.strip().endswith(f"{tmp_path / 'key.tsv'}: no target trial with a score in "
                                    f"{tmp_path / 'scores.tsv'} (6 key trials without one "
                                    "dropped)")  # fmt: skip
