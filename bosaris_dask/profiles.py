"""Cost profiles: the operating points each community publishes, by name (``--profile NAME``).

A profile only sets options that were not given: anything stated explicitly on the command line
(``--prior``, ``--operating-point``, ``--fmr``, ``--cprimary-priors``) wins, the profile's own
points are then not used, and a warning and the JSON's ``"replaced"`` say so. The
numbers and their sources (definitions in ``shared/reference/FIELD_METRICS.md``, section 7):

==================  ============================================================================
profile             operating points
==================  ============================================================================
``sre18``           NIST 2018 SRE, CMN2 (telephone) condition: Ptar 0.01 and 0.005, Cmiss = Cfa = 1;
                    **Cprimary** = the mean of the two normalized DCFs (actual and minimum
                    separately). The VAST condition uses Ptar 0.05 (``VAST_P_TARGET``).
``sre21``           NIST 2021 SRE: Ptar 0.01 and 0.05, Cmiss = Cfa = 1; Cprimary = the mean of the
                    two normalized DCFs.
``voxsrc``          VoxCeleb Speaker Recognition Challenge: Ptar 0.05, Cmiss = Cfa = 1 (minDCF
                    primary, EER secondary: ``evaluate``'s EER is the ROCCH-EER,
                    :data:`EER_NOTE`).
``asvspoof5-cm``    ASVspoof 5 track 1 (countermeasures, evaluation package ``asvspoof5``): bona
                    fide is the target class, Pspoof 0.05 (so Ptar 0.95), Cmiss 1, Cfa 10:
                    ``DCF = 0.95·Pmiss + 0.5·Pfa`` normalized by 0.5, the normalized DCF at the
                    effective prior 0.95/1.45; the Bayes threshold is ``−ln 1.9``. minDCF primary,
                    with EER (``spoof cm`` prints the package's EER beside the ROCCH-EER
                    ``evaluate`` reports), actDCF and Cllr.
``asvspoof5-sasv``  ASVspoof 5 track 2 (spoofing-aware verification): three classes (target,
                    non-target, spoof), Ptar 0.9405, Pnon 0.0095, Pspoof 0.05, Cmiss 1, Cfa 10,
                    Cfa,spoof 10; min a-DCF primary, with min t-DCF and t-EER. Not a BOSARIS
                    two-class evaluation: ``bosaris-dask spoof sasv`` computes it
                    (:mod:`bosaris_dask.spoofing`); ``evaluate --profile asvspoof5-sasv`` says so.
``ijbc``            IJB-C 1:1 verification (face): TAR = 1 − FNMR at FMR 1e-6, 1e-5, 1e-4, 1e-3,
                    1e-2, 1e-1 (``Profile.fmr``, set as ``--fmr`` unless ``--fmr`` is given);
                    ``evaluate`` reports them, and ``plot det`` marks them on the DET curve
                    (the other plots have no FMR axis: an error says so).
==================  ============================================================================

Examples
--------
>>> p = PROFILES["sre21"]
>>> [op.p_target for op in p.operating_points], p.cprimary
([0.01, 0.05], True)
>>> round(PROFILES["asvspoof5-cm"].operating_points[0].effective_prior, 12)
0.655172413793
"""

from __future__ import annotations

import argparse
import textwrap
from dataclasses import dataclass
from typing import Any

from bosaris_dask.costs import OperatingPoint
from bosaris_dask.errors import OptionError

__all__ = [
    "Profile",
    "PROFILES",
    "VAST_P_TARGET",
    "apply_profile",
    "annotate_json",
    "replaced_note",
    "EER_NOTE",
    "eer_lines",
    "cprimary_priors",
]

#: SRE18's VAST condition target prior (the CMN2 points are the ``sre18`` profile).
VAST_P_TARGET = 0.05


@dataclass(frozen=True)
class Profile:
    """A published evaluation convention.

    Attributes
    ----------
    name, source
        The profile's name and where its numbers come from.
    operating_points
        The operating points it reports (``--operating-point``).
    cprimary
        Whether the community's primary metric is Cprimary: the mean of the normalized DCFs
        over ``operating_points`` (actual and minimum separately).
    fmr
        False-match-rate targets of FNMR@FMR operating points (``--fmr``), if any.
    command
        The subcommand that computes the profile's metrics, where ``evaluate`` cannot.
    own_eer
        Where the community's own EER is printed, where it is not ``evaluate``'s.
    """

    name: str
    source: str
    operating_points: tuple[OperatingPoint, ...] = ()
    cprimary: bool = False
    fmr: tuple[float, ...] = ()
    command: str = ""
    own_eer: str = ""


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            "sre18", "NIST 2018 Speaker Recognition Evaluation plan, CMN2 condition",
            (OperatingPoint(0.01), OperatingPoint(0.005)), cprimary=True,
        ),
        Profile(
            "sre21", "NIST 2021 Speaker Recognition Evaluation plan",
            (OperatingPoint(0.01), OperatingPoint(0.05)), cprimary=True,
        ),
        Profile("voxsrc", "VoxCeleb Speaker Recognition Challenge", (OperatingPoint(0.05),)),
        Profile(
            "asvspoof5-cm",
            "ASVspoof 5 evaluation package (asvspoof-challenge/asvspoof5, evaluation-package/), "
            "track 1: Pspoof 0.05, Cmiss 1, Cfa 10",
            (OperatingPoint.from_nontarget_prior(0.05, 1.0, 10.0),),
            own_eer="'bosaris-dask spoof cm' prints the ASVspoof 5 package's EER beside it",
        ),
        Profile(
            "asvspoof5-sasv",
            "ASVspoof 5 evaluation package, track 2 (SASV): a-DCF, t-DCF and t-EER with Ptar "
            "0.9405, Pnon 0.0095, Pspoof 0.05, Cmiss 1, Cfa 10, Cfa,spoof 10",
            command="spoof sasv",
        ),
        Profile(
            "ijbc", "IJB-C 1:1 verification protocol (TAR at FMR)",
            fmr=(1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1),
        ),
    )
}  # fmt: skip


def apply_profile(args: argparse.Namespace) -> Profile | None:
    """Set the options of ``args.profile`` that were not given explicitly; return the profile.

    ``--prior`` and ``--operating-point`` given on the command line win: the profile's
    operating points are then not added.

    Raises
    ------
    OptionError
        For an unknown profile, or one that needs an option this version does not have.
    """
    name = getattr(args, "profile", None)
    if name is None:
        return None
    if name not in PROFILES:
        raise OptionError(f"unknown profile {name!r}; choose one of {', '.join(PROFILES)}")
    profile = PROFILES[name]
    if profile.command:
        raise OptionError(
            f"profile {name} is not a two-class evaluation: run 'bosaris-dask {profile.command}'"
        )
    if profile.fmr and not hasattr(args, "fmr"):
        targets = ", ".join(f"{f:g}" for f in profile.fmr)
        raise OptionError(
            f"profile {name} reports FNMR at FMR {targets}, which this command does not: run "
            "'bosaris-dask evaluate --profile " + name + "'"
        )
    replaced = []
    if profile.fmr and getattr(args, "fmr", None) is None:
        args.fmr = list(profile.fmr)
    elif profile.fmr:
        replaced.append("FMR points (--fmr)")
    explicit = getattr(args, "prior", None) or getattr(args, "operating_point", None)
    if profile.operating_points and not explicit:
        args.operating_point = list(profile.operating_points)
    elif profile.operating_points:
        replaced.append("operating points" + " and Cprimary" * profile.cprimary
                        + " (--prior/--operating-point)")  # fmt: skip
    if profile.cprimary and not explicit and getattr(args, "cprimary_priors", None):
        replaced.append("Cprimary priors (--cprimary-priors)")
    args.profile_replaced = replaced
    return profile


def replaced_note(profile: Profile, replaced: list[str]) -> str | None:
    """The warning for a profile some of whose numbers explicit options replaced, or ``None``.

    Examples
    --------
    >>> note = replaced_note(PROFILES["voxsrc"], ["operating points (--prior)"])
    >>> for part in note.split(": "):
    ...     print(part)
    options given replace the voxsrc profile's operating points (--prior)
    those results are not the profile's
    """
    if not replaced:
        return None
    return (f"options given replace the {profile.name} profile's {', '.join(replaced)}: those "
            "results are not the profile's")  # fmt: skip


def annotate_json(
    doc: dict[str, Any], profile: Profile, replaced: list[str] | None = None
) -> dict[str, Any]:
    """Add the profile's name and source to a JSON document (its Cprimary, where it has one, is
    the evaluation's own ``"cprimary"``: :func:`cprimary_priors`), and what options given
    replaced (``"replaced"``, as :func:`apply_profile` records it), and which EER it is."""
    eer = EER_NOTE + ("; " + profile.own_eer if profile.own_eer else "")
    doc["profile"] = {"name": profile.name, "source": profile.source, "eer": eer}
    if replaced:
        doc["profile"]["replaced"] = list(replaced)
    return doc


#: Which EER ``evaluate`` reports, under every profile.
EER_NOTE = (
    "ROCCH-EER (the EER of the ROC's convex hull, as BOSARIS); a challenge's scorer may "
    "interpolate the steppy ROC or take a point of it instead, which differ, most where "
    "scores tie"
)


def eer_lines(profile: Profile) -> list[str]:
    """What ``evaluate`` prints under its table with ``profile``: which EER the table shows
    (:data:`EER_NOTE`), and where the community's own is printed.

    Examples
    --------
    >>> print("\\n".join(eer_lines(PROFILES["asvspoof5-cm"])))  # doctest: +NORMALIZE_WHITESPACE
    EER (%) is the ROCCH-EER (the EER of the ROC's convex hull, as BOSARIS); a challenge's scorer
    may interpolate the steppy ROC or take a point of it instead, which differ, most where scores
    tie; 'bosaris-dask spoof cm' prints the ASVspoof 5 package's EER beside it
    """
    text = "EER (%) is the " + EER_NOTE
    if profile.own_eer:
        text += "; " + profile.own_eer
    return textwrap.wrap(text, 96)


def cprimary_priors(profile: Profile | None, explicit: bool) -> list[float]:
    """The effective priors of a profile's Cprimary, or none: a profile without one, or whose
    operating points an explicit ``--prior``/``--operating-point`` replaced.

    Examples
    --------
    >>> cprimary_priors(PROFILES["sre21"], explicit=False)
    [0.01, 0.05]
    >>> cprimary_priors(PROFILES["sre21"], explicit=True), cprimary_priors(None, False)
    ([], [])
    """
    if profile is None or not profile.cprimary or explicit:
        return []
    return [op.effective_prior for op in profile.operating_points]
