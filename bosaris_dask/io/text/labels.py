"""The label words of trial files (``docs/formats.md``); the first of a pair is the positive one.

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
