"""``bosaris-dask spoof cm|sasv`` on the bundled ASVspoof 5 case, and the asvspoof5-sasv profile."""

from __future__ import annotations

import json
from pathlib import Path

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
      REF["sasv"]["min_t_dcf_fixed_asv"]), (["--asv-rates", "given"], None)],
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
    if t_dcf is not None:
        assert doc["asv_rates"]["source"] == "fixed"
        assert doc["min_t_dcf"] == pytest.approx(t_dcf, rel=1e-12)
    else:  # our EER threshold: Pmiss = Pfa = 50/6000 (the package's is one target lower)
        assert doc["asv_rates"]["pmiss"] == doc["asv_rates"]["pfa"] == 50 / 6000
        assert doc["asv_rates"]["pfa_spoof"] == 9666 / 12000
        assert doc["min_t_dcf"] == pytest.approx(0.2639153558659388, rel=1e-12)
    assert "min a-DCF               0.2427" in out and "t-EER (exact)           8.264 %" in out


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
    status, _, err = _run(capsys, "spoof", task, *files, "--convert-dir", str(out_dir))
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


def test_spoof_cm_reads_a_key_and_a_scores_store(tmp_path, capsys):
    _run(capsys, "spoof", "cm", *CM, "--convert-dir", str(tmp_path / "set"))
    status, out, _ = _run(capsys, "spoof", "cm", "--key", str(tmp_path / "set" / "key.zarr"),
                          "--scores", str(tmp_path / "set" / "cm.zarr"))  # fmt: skip
    assert status == 0 and "minDCF                  0.3998" in out


@pytest.mark.parametrize(
    "argv, message",
    [(["--key", str(DATA / "cm_key.tsv.gz"), "--scores", "x.zarr"], "stores of a set: --set-dir"),
     (["--key", str(DATA / "cm_key.tsv.gz")], "give --key and --scores"),
     (["--set-dir", "d", "--key", "k"], "--set-dir replaces --key and --scores"),
     (["--set-dir", "d", "--convert-dir", "o", "--json", "r.json"],  # wrote no JSON, said nothing
      "--convert-dir writes the set's stores and evaluates nothing, so --json has no effect")],
)  # fmt: skip
def test_spoof_input_errors_are_one_line(capsys, argv, message):
    status, _, err = _run(capsys, "spoof", "cm", *argv)
    assert status == 1 and message in err and len(err.strip().splitlines()) == 1


def test_an_undefined_t_dcf_leaves_the_other_sasv_metrics(tmp_path, capsys):
    """An ASV system that accepts every trial at its EER threshold (C1 < 0) made the whole run
    an error, losing the a-DCF and the t-EER; one that accepts no spoof (C2 = 0) was called
    undefined although (C0 + C1 Pmiss) / C0 is defined."""
    key = tmp_path / "k.tsv"
    labels = [("T1", "bonafide", "target"), ("T2", "bonafide", "target"),
              ("N1", "bonafide", "nontarget"), ("N2", "bonafide", "nontarget"),
              ("P1", "spoof", "spoof"), ("P2", "spoof", "spoof")]  # fmt: skip
    key.write_text("spk\tfilename\tcm-label\tasv-label\n"
                   + "".join(f"A\t{f}\t{c}\t{a}\n" for f, c, a in labels))  # fmt: skip
    rows = {"inverted": [-3, -1, 5, 2, -5, 6], "no_spoof_accepted": [3, 1, 0, 2, -5, -6]}
    out = {}
    for name, asv in rows.items():
        scores = tmp_path / f"{name}.tsv"
        scores.write_text("spk\tfilename\tcm-score\tasv-score\tsasv-score\n" + "".join(
            f"A\t{f}\t{cm}\t{a}\t{s}\n" for f, cm, a, s in zip(
                ["T1", "T2", "N1", "N2", "P1", "P2"], [1.0, 0.5, 0.2, 0.8, -1.0, 0.3], asv,
                [1, 2, 0, -1, -3, -2], strict=True)))  # fmt: skip
        code, stdout, _ = _run(capsys, "spoof", "sasv", "--key", str(key), "--scores",
                               str(scores), "--asv-rates", "given", "--json",
                               str(tmp_path / f"{name}.json"))  # fmt: skip
        assert code == 0
        out[name] = (stdout, json.loads((tmp_path / f"{name}.json").read_text()))
    stdout, doc = out["inverted"]  # Pmiss = Pfa = 100 %: C1 < 0
    assert doc["min_t_dcf"] is None and doc["min_t_dcf_note"].startswith("t-DCF undefined")
    assert doc["min_a_dcf"] == 0.0 and doc["t_eer"] == 0.0
    assert "min t-DCF               undefined  (t-DCF undefined for these ASV rates" in stdout
    _, doc = out["no_spoof_accepted"]  # Pfa,spoof = 0: C2 = 0, the CM cannot help
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
