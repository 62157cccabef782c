"""The label words trial files use, field by field, and what each means (target or not).

Every community spells the two classes its own way; all of these are read, in any letter case.
The first word of each pair is the positive class (a target, mated or bona fide trial), the
second the negative one:

=======================  =======================================================================
pair                     who writes it
=======================  =======================================================================
target / nontarget       BOSARIS, Kaldi, NIST SRE keys, wespeaker and 3D-Speaker score files
1 / 0                    VoxCeleb trial lists (``1 enrol test``), 3D-Speaker trial lists
true / false             boolean columns (pandas, spreadsheets)
tgt / imp                NIST SRE-era and VOiCES keys
genuine / impostor       biometrics (ISO/IEC 19795-1 wording)
mated / nonmated         biometrics (NIST FRVT wording)
same / different         same-source / different-source (forensics, face verification)
bonafide / spoof         anti-spoofing (ASVspoof): bona fide is the positive class
=======================  =======================================================================

Examples
--------
>>> label_sign(b"Genuine"), label_sign(b"0"), label_sign(b"maybe")
(1, -1, 0)
"""

from __future__ import annotations

#: (positive, negative) label words, lower case.
LABEL_PAIRS: tuple[tuple[str, str], ...] = (
    ("target", "nontarget"),
    ("1", "0"),
    ("true", "false"),
    ("tgt", "imp"),
    ("genuine", "impostor"),
    ("mated", "nonmated"),
    ("same", "different"),
    ("bonafide", "spoof"),
)

#: lower-case label word (bytes) -> +1 (positive class) or -1 (negative class).
LABEL_SIGNS: dict[bytes, int] = {
    word.encode(): sign for pair in LABEL_PAIRS for word, sign in zip(pair, (1, -1), strict=True)
}

#: The accepted words, as error messages list them.
ACCEPTED_LABELS = ", ".join("/".join(pair) for pair in LABEL_PAIRS)


def label_sign(token: bytes) -> int:
    """+1 for a positive label word, -1 for a negative one, 0 for anything else (any case)."""
    return LABEL_SIGNS.get(token.lower(), 0)


def is_label_word(token: bytes, *, numeric: bool = True) -> bool:
    """Whether ``token`` is a label word; ``numeric=False`` leaves out ``1``/``0``."""
    word = token.lower()
    return word in LABEL_SIGNS and (numeric or word not in (b"1", b"0"))
