"""The label words of trial files (``docs/formats.md``); the first of a pair is the positive one.
A file's labels are the words of one pair (:class:`OneLabelPair`).

Examples
--------
>>> label_sign(b"Genuine"), label_sign(b"0"), label_sign(b"maybe")
(1, -1, 0)
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from bosaris_dask.errors import ParseError

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

#: lower-case label word (bytes) -> the index of its pair in :data:`LABEL_PAIRS`.
LABEL_PAIR_INDEX: dict[bytes, int] = {
    word.encode(): i for i, pair in enumerate(LABEL_PAIRS) for word in pair
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


def label_words(raw: list[bytes], codes: np.ndarray) -> dict[int, tuple[str, int]]:
    """The pairs a label column uses: ``{pair index: (word as written, record)}`` with each
    pair's first record (an index into ``codes``); ``raw`` are the column's unique words (all
    label words), ``codes`` each record's index into ``raw``."""
    # codes number the words in order of first appearance (as pandas.factorize gives them), so
    # the running maximum steps up exactly at each word's first record: O(n), no sort
    first = np.flatnonzero(np.diff(np.maximum.accumulate(codes), prepend=-1) > 0)
    if len(first) != len(raw):  # not numbered in order of appearance: the slow way
        first = np.unique(codes, return_index=True)[1]
    found: dict[int, tuple[str, int]] = {}
    for word, record in zip(raw, first.tolist(), strict=True):
        pair = LABEL_PAIR_INDEX[word.strip().lower()]
        if pair not in found or record < found[pair][1]:
            found[pair] = (word.strip().decode("latin-1"), record)
    return found


class OneLabelPair:
    """Refuses a file whose label words come from two pairs, naming the line of the second.

    Each pair is a complete vocabulary (``docs/formats.md``), so two in one file are two files
    joined, or a third class read as one of the two: ASVspoof's ``target nontarget spoof``
    trial lists would count every spoof as a non-target (``bonafide``/``spoof`` is a pair).

    Examples
    --------
    >>> check = OneLabelPair("trials.txt")
    >>> check.add({0: ("target", 1)})
    >>> check.add({7: ("spoof", 9)})
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.ParseError: trials.txt:9: label 'spoof' is of the pair bonafide/spoof, but \
line 1 has 'target', of target/nontarget: a file's labels come from one pair of words. Spoofed \
trials are not speaker-verification non-targets: leave them out for the ASV metrics, or use \
'bosaris-dask spoof sasv'
    """

    def __init__(self, path: str | os.PathLike[str] | Any):
        self.path = path
        self.first: tuple[int, str, int] | None = None  # (pair, word, line)

    def add(self, words: dict[int, tuple[str, int]]) -> None:
        """Take a block's pairs, ``{pair: (word, line)}``."""
        for pair, (word, line) in sorted(words.items(), key=lambda item: item[1][1]):
            if self.first is None:
                self.first = (pair, word, line)
                continue
            first_pair, first_word, first_line = self.first
            if pair == first_pair:
                continue
            message = (
                f"label {word!r} is of the pair {'/'.join(LABEL_PAIRS[pair])}, but line "
                f"{first_line} has {first_word!r}, of {'/'.join(LABEL_PAIRS[first_pair])}: a "
                "file's labels come from one pair of words"
            )
            spoof = LABEL_PAIR_INDEX[b"spoof"]
            if spoof in (pair, first_pair):
                message += (
                    ". Spoofed trials are not speaker-verification non-targets: leave them out "
                    "for the ASV metrics, or use 'bosaris-dask spoof sasv'"
                )
            raise ParseError(message, self.path, line)
