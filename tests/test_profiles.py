"""Cost profiles: the published numbers, Cprimary, and explicit options winning."""

from __future__ import annotations

import argparse
import json
import math

import numpy as np
import pytest

from bosaris_dask.cli import main
from bosaris_dask.errors import OptionError
from bosaris_dask.profiles import PROFILES, VAST_P_TARGET, apply_profile


def test_published_numbers():
    def points(name):
        return [(op.p_target, op.c_miss, op.c_fa) for op in PROFILES[name].operating_points]

    assert points("sre18") == [(0.01, 1, 1), (0.005, 1, 1)] and PROFILES["sre18"].cprimary
    assert VAST_P_TARGET == 0.05
    assert points("sre21") == [(0.01, 1, 1), (0.05, 1, 1)] and PROFILES["sre21"].cprimary
    assert points("voxsrc") == [(0.05, 1, 1)] and not PROFILES["voxsrc"].cprimary
    (cm,) = PROFILES["asvspoof5-cm"].operating_points
    assert (cm.p_target, cm.c_miss, cm.c_fa) == (0.95, 1, 10)  # Pspoof 0.05 = 1 - Ptar
    assert cm.effective_prior == pytest.approx(0.95 / 1.45, rel=1e-15)
    assert cm.act_threshold == pytest.approx(-math.log(1.9), rel=1e-14)
    assert PROFILES["ijbc"].fmr == (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1)


def test_explicit_options_win():
    args = argparse.Namespace(profile="sre21", prior=None, operating_point=None)
    apply_profile(args)
    assert [op.p_target for op in args.operating_point] == [0.01, 0.05]
    args = argparse.Namespace(profile="sre21", prior=[[0.5]], operating_point=None)
    apply_profile(args)
    assert args.operating_point is None and args.prior == [[0.5]]
    with pytest.raises(OptionError, match="which this command does not: run 'bosaris-dask eval"):
        apply_profile(argparse.Namespace(profile="ijbc", prior=None, operating_point=None))
    args = argparse.Namespace(profile="ijbc", prior=None, operating_point=None, fmr=None)
    apply_profile(args)
    assert args.fmr == [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1]
    assert args.profile_replaced == []
    args = argparse.Namespace(profile="ijbc", prior=None, operating_point=None, fmr=[0.5])
    apply_profile(args)
    assert args.fmr == [0.5] and args.profile_replaced == ["FMR points (--fmr)"]


def _trials(tmp_path, shift=1.5):
    rng = np.random.default_rng(11)
    label = {True: "target", False: "nontarget"}
    rows = []
    for i in range(8):
        for j in range(64):
            target = i == j % 8
            rows.append((f"m{i}", f"s{j}", round(float(rng.normal(shift * target)), 3), target))
    path = tmp_path / "sys.score"
    path.write_text("".join(f"{m} {s} {v} {label[t]}\n" for m, s, v, t in rows))
    tar = np.array([v for *_, v, t in rows if t])
    non = np.array([v for *_, v, t in rows if not t])
    return path, tar, non


def _norm_dcf(tar, non, t, p_tar, c_miss=1.0, c_fa=1.0):
    """Normalized DCF in cost units at threshold t (accept iff s >= t)."""
    dcf = c_miss * p_tar * np.mean(tar < t) + c_fa * (1 - p_tar) * np.mean(non >= t)
    return dcf / min(c_miss * p_tar, c_fa * (1 - p_tar))


def _brute_min(tar, non, *point):
    candidates = np.concatenate([np.unique(np.concatenate([tar, non])), [np.inf]])
    return min(_norm_dcf(tar, non, t, *point) for t in candidates)


def test_sre21_cprimary(tmp_path, capsys):
    path, tar, non = _trials(tmp_path)
    out = tmp_path / "r.json"
    assert main(["evaluate", "--scores", str(path), "--profile", "sre21", "--json", str(out),
                 "-q"]) == 0  # fmt: skip
    assert "Cprimary (mean normalized DCF over priors 0.01, 0.05)" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["profile"]["name"] == "sre21"
    system = doc["systems"][0]
    assert [op["p_target"] for op in system["operating_points"]] == [0.01, 0.05]
    want_min = np.mean([_brute_min(tar, non, p) for p in (0.01, 0.05)])
    want_act = np.mean([_norm_dcf(tar, non, -math.log(p / (1 - p)), p) for p in (0.01, 0.05)])
    assert system["cprimary"]["priors"] == [0.01, 0.05]  # one schema, with or without --by
    assert system["cprimary"]["min"] == pytest.approx(want_min, rel=1e-12)
    assert system["cprimary"]["act"] == pytest.approx(want_act, rel=1e-12)
    assert "min_cprimary" not in system and "act_cprimary" not in system
    # an explicit --prior wins: the profile's points (and Cprimary) are not used
    assert main(["evaluate", "--scores", str(path), "--profile", "sre21", "--prior", "0.5",
                 "--json", str(out), "-q"]) == 0  # fmt: skip
    doc = json.loads(out.read_text())
    system = doc["systems"][0]
    assert [op["prior"] for op in system["operating_points"]] == [0.5]
    assert "cprimary" not in system
    # ... and says so: the results were labelled sre21 without a word
    assert doc["profile"]["replaced"] == [
        "operating points and Cprimary (--prior/--operating-point)"
    ]
    assert ("warning: options given replace the sre21 profile's operating points and Cprimary "
            "(--prior/--operating-point): those results are not the profile's"
            ) in capsys.readouterr().err  # fmt: skip
    assert doc["profile"]["eer"].startswith("ROCCH-EER")
    # an explicit --cprimary-priors wins: one Cprimary, at its priors (there were two)
    assert main(["evaluate", "--scores", str(path), "--profile", "sre21", "--cprimary-priors",
                 "0.02", "--json", str(out), "-q"]) == 0  # fmt: skip
    doc = json.loads(out.read_text())
    system = doc["systems"][0]
    assert system["cprimary"]["priors"] == [0.02] and "min_cprimary" not in system
    assert doc["profile"]["replaced"] == ["Cprimary priors (--cprimary-priors)"]
    assert "replace the sre21 profile's Cprimary priors" in capsys.readouterr().err
    assert main(["evaluate", "--scores", str(path), "--profile", "sre21", "--json", str(out),
                 "-q"]) == 0  # fmt: skip
    assert "replaced" not in json.loads(out.read_text())["profile"]
    assert "warning" not in capsys.readouterr().err


def test_asvspoof5_cm_costs(tmp_path, capsys):
    path, tar, non = _trials(tmp_path, shift=2.5)  # targets = bona fide, non-targets = spoofs
    out = tmp_path / "r.json"
    assert main(["evaluate", "--scores", str(path), "--profile", "asvspoof5-cm", "--json",
                 str(out), "-q"]) == 0  # fmt: skip
    # the table's EER is not the challenge's: it says which it is, and where the other is
    printed = " ".join(capsys.readouterr().out.split())
    assert (
        "EER (%) is the ROCCH-EER (the EER of the ROC's convex hull, as BOSARIS)" in printed
        and "'bosaris-dask spoof cm' prints the ASVspoof 5 package's EER" in printed
    )
    doc = json.loads(out.read_text())
    assert doc["profile"]["eer"].endswith("'bosaris-dask spoof cm' prints the ASVspoof 5 "
                                          "package's EER beside it")  # fmt: skip
    (op,) = doc["systems"][0]["operating_points"]
    assert (op["p_target"], op["c_miss"], op["c_fa"]) == (0.95, 1, 10)
    # the challenge's DCF: 0.95 Pmiss + 0.5 Pfa, normalized by 0.5, accepting s >= -ln 1.9
    t = -math.log(1.9)
    act = (0.95 * np.mean(tar < t) + 0.5 * np.mean(non >= t)) / 0.5
    assert op["act_dcf"] == pytest.approx(act, rel=1e-12)
    assert op["min_dcf"] == pytest.approx(_brute_min(tar, non, 0.95, 1.0, 10.0), rel=1e-12)


def test_ijbc_plot_det_marks_its_points_and_other_plots_say_so(tmp_path, capsys):
    path, _, _ = _trials(tmp_path)
    out = str(tmp_path / "det.png")
    assert main(["plot", "det", "--scores", str(path), "--profile", "ijbc", "--out", out,
                 "-q"]) == 0  # fmt: skip
    assert main(["plot", "nbe", "--scores", str(path), "--profile", "ijbc", "--out", out]) == 1
    err = capsys.readouterr().err
    assert "profile ijbc's FMR points are marked on DET plots only" in err
    assert main(["plot", "ape", "--scores", str(path), "--fmr", "0.1", "--out", out]) == 1
    assert "--fmr/--fnmr points are marked on DET plots only" in capsys.readouterr().err
    # plot says too when options replace the profile's numbers (evaluate did, plot did not)
    assert main(["plot", "det", "--scores", str(path), "--profile", "ijbc", "--fmr", "0.01",
                 "--out", out, "-q"]) == 0  # fmt: skip
    assert ("warning: options given replace the ijbc profile's FMR points (--fmr)"
            in capsys.readouterr().err)  # fmt: skip
