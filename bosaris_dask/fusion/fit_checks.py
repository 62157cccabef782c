"""What a trained calibration or fusion says about its training data, from the fit's last pass:
classes that the model separates (the cross-entropy then has no minimum), and parameters that
the data leave undetermined (a constant system, systems that repeat each other).

Neither makes the fitted numbers wrong on the training trials, but both make them arbitrary: a
separated fit stops where the gradient test happens to pass, with over-confident LLRs, and an
undetermined weight multiplies eval scores with a value the training data never chose. So a fit
reports them (:class:`FitWarning`, and ``"warnings"`` in the model's JSON) rather than only
``converged: true``. Both tests cost no pass: they read the objective's value and the exact
Hessian that the solver's last pass already computed.

Examples
--------
>>> separation_note(1e-9, class_weights=(0.5 / 40, 0.5 / 400), l2=0.0) is not None
True
>>> H = np.array([[2.0, 2.0], [2.0, 2.0]])  # a system constant at 1: it moves with the offset
>>> undetermined_note(H, ["the weight of system 1", "the offset"])[:73]
'the training data do not determine the weight of system 1 and the offset:'
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from bosaris_dask.objectives import quality_pairs
from bosaris_dask.optimize import OptimizeResult

__all__ = [
    "FitWarning", "unconverged_note", "separation_note", "tied_separation_note",
    "flattest_direction", "combination_tie_note", "undetermined_note", "parameter_names",
]  # fmt: skip

#: A direction of the parameters is undetermined where the Jacobi-scaled Hessian's eigenvalue
#: along it is below this fraction of its largest (exact degeneracies give about 1e-16).
UNDETERMINED_RATIO = 1e-10

#: A fit by the CG solver (which computes no Hessian) takes one pass more for the Hessian of
#: the undetermined check up to this many parameters (a chunk's share is one ``n x n`` matrix
#: product per class: 200 parameters cost about 4e4 multiply-adds per trial); beyond, the fit
#: is not checked for undetermined parameters.
CHECKED_MAX_PARAMS = 200


class FitWarning(UserWarning):
    """A trained model whose training data separate the classes or leave parameters free."""


def unconverged_note(result: OptimizeResult) -> str | None:
    """The note for a fit that stopped before its minimum, or ``None``.

    ``max_iter``, a collapsed trust region or a non-finite objective can end the solver's
    iterations with the gradient test unmet; the fitted values are then not the optimum of
    the training objective, however good they look. A stop where float64 resolves no further
    decrease (``result.at_precision``) is a minimum to float precision: no note.

    Examples
    --------
    >>> from bosaris_dask.optimize import QuadraticObjective, minimize
    >>> q = QuadraticObjective(np.diag([1.0, 1e6]), np.ones(2))
    >>> unconverged_note(minimize(q, np.zeros(2), max_iter=0))[:64]
    'the fit stopped before reaching its minimum (reached max_iter=0,'
    >>> unconverged_note(minimize(q, np.zeros(2))) is None
    True
    """
    if result.converged or result.at_precision:
        return None
    return (
        f"the fit stopped before reaching its minimum ({result.message}, after "
        f"{result.iterations} iterations): the fitted values are not the optimum of the "
        "training objective and can make eval scores wrong. Allow more iterations "
        "(--max-iter, or max_iter in Python); far outlying training scores slow the fit"
    )


def separation_note(data_term: float, class_weights: tuple[float, float], l2: float) -> str | None:
    """The note for a fit whose classes are separated, or ``None``.

    ``data_term`` is the normalized cross-entropy at the fitted parameters: the sum over trials
    of ``w * softplus(-margin)``, each target weighted ``class_weights[0]`` and each non-target
    ``class_weights[1]``, where a trial's margin is its LLR plus the training prior's log-odds
    (minus, for a non-target). A trial on the wrong side of the Bayes threshold, or on it, adds
    at least ``w log 2``, so a total below half the smallest such term means every margin is
    positive: the model separates the classes, and scaling it up lowers the cross-entropy
    without end. With an L2 penalty (``l2 > 0``) the minimum exists, so no note.

    Examples
    --------
    >>> separation_note(0.3, class_weights=(0.5 / 40, 0.5 / 400), l2=0.0) is None
    True
    >>> separation_note(1e-9, class_weights=(0.5 / 40, 0.5 / 400), l2=0.1) is None
    True
    """
    if l2 > 0 or not data_term < 0.5 * min(class_weights) * math.log(2.0):
        return None
    return (
        f"the training classes are separable (objective {data_term:.3g}): at the training "
        "prior every target scores above and every non-target below the Bayes threshold, so "
        "the cross-entropy has no minimum and where the fit stopped is arbitrary; its LLRs "
        "are over-confident. Train on more (or harder) trials, or with an L2 penalty (--l2, or "
        "l2 > 0 in Python)"
    )


def tied_separation_note(
    score_ranges: np.ndarray | None,
    l2: float,
    *,
    calibration: bool = False,
    systems: Sequence[str] | None = None,
) -> str | None:
    """The note for a system (of ``systems`` by name, if given) whose classes meet only at one
    tied score, or ``None``.

    ``score_ranges`` is ``(K, 4)``: each system's lowest and highest target score, then lowest
    and highest non-target score (:attr:`~bosaris_dask.objectives.FusionObjective.score_ranges`).
    Where a system's non-targets all score at or below its lowest target (integer scores that
    overlap at a single value, say), or all at or above its highest target (the same with the
    scores running the wrong way: a negative weight), raising its weight about that value
    lowers every untied trial's cross-entropy and leaves the tied ones as they are: the
    objective has no minimum,
    and the fit stops where the gradient test happens to pass (the objective's value does not
    fall to 0, so :func:`separation_note` does not see it). With an L2 penalty the minimum
    exists: no note.

    Examples
    --------
    >>> ranges = np.array([[0.0, 3.0, -3.0, 0.0]])  # targets 0..3, non-targets -3..0
    >>> tied_separation_note(ranges, 0.0, calibration=True)[:58]
    'the training classes meet only at ties: every target score'
    >>> tied_separation_note(ranges, 0.1) is None
    True
    """
    if l2 > 0 or score_ranges is None:
        return None
    ranges = np.asarray(score_ranges, dtype=np.float64) + 0.0  # no "-0" in the message
    for k, (tar_lo, tar_hi, non_lo, non_hi) in enumerate(ranges.tolist()):
        if tar_hi > non_lo and non_hi <= tar_lo:  # not all equal: that is a constant system
            where = f"at or above {tar_lo:.6g} and every non-target score at or below {non_hi:.6g}"
            gap = non_hi < tar_lo
        elif non_hi > tar_lo and tar_hi <= non_lo:  # the same, the scores running the wrong way
            where = (f"at or below {tar_hi:.6g} and every non-target score at or above "
                     f"{non_lo:.6g} (higher scores for non-targets)")  # fmt: skip
            gap = tar_hi < non_lo
        else:
            continue
        name = systems[k] if systems else f"system {k + 1}"
        who = "" if calibration else f" of {name}"
        # (a gap: a fit stopped early by max_iter, before separation_note's test could see it)
        how = "are separable" if gap else "meet only at ties"
        return (
            f"the training classes {how}: every target score{who} is {where}, so "
            "a steeper map about that point always fits the training data better: the "
            "cross-entropy has no minimum, where the fit stopped is arbitrary, and its LLRs "
            "are over-confident. Train on more (or harder) trials, or with an L2 penalty (--l2, "
            "or l2 > 0 in Python)"
        )
    return None


#: Below this ratio of the Jacobi-scaled Hessian's smallest to largest eigenvalue, a fit of
#: several systems spends one pass checking whether its flattest direction separates the
#: classes (:func:`combination_tie_note`; well-posed fits of systems correlated at 0.9999 gave
#: 2e-5, a combination meeting only at ties 3e-9).
SEPARATION_CHECK_RATIO = 1e-6

#: Along a separating direction, the classes' ranges may overlap by this fraction of the
#: largest value (the direction is the Hessian's eigenvector, exact to about its ratio).
SEPARATION_TOLERANCE = 1e-6


def flattest_direction(hessian: np.ndarray | None) -> tuple[float, np.ndarray] | None:
    """The Jacobi-scaled Hessian's smallest-to-largest eigenvalue ratio and its eigenvector
    (in the parameters' own units), or ``None`` (no Hessian, or a parameter without
    curvature: :func:`undetermined_note` names it).

    Examples
    --------
    >>> ratio, v = flattest_direction(np.array([[1.0, 0.999], [0.999, 1.0]]))
    >>> round(ratio, 6), bool(abs(v[0] + v[1]) < 1e-12)
    (0.0005, True)
    """
    if hessian is None:
        return None
    h = np.asarray(hessian, dtype=np.float64)
    diag = np.diag(h)
    if not np.all(np.isfinite(h)) or not np.all(diag > 0):
        return None
    scale = 1.0 / np.sqrt(diag)
    values, vectors = np.linalg.eigh(h * np.outer(scale, scale))
    return float(values[0] / values[-1]), vectors[:, 0] * scale


def combination_tie_note(
    ranges: np.ndarray, size: float, direction: np.ndarray, systems: Sequence[str],
    scales: np.ndarray | None = None,
) -> str | None:  # fmt: skip
    """The note for systems whose combination ``direction`` (weights, then the offset's) leaves
    every target at or above and every non-target at or below one value (or the reverse), or
    ``None``. ``ranges``: the combination's lowest and highest target, then non-target, value,
    ``size`` the largest sum of its terms' magnitudes
    (:meth:`~bosaris_dask.objectives.FusionObjective.direction_ranges`): a combination that is
    constant up to rounding relative to it is no separation (a constant system, a copy);
    ``scales``: what the fit divided each system's scores by (the note gives the combination
    of the scores).

    Examples
    --------
    >>> combination_tie_note(np.array([0.0, 3.0, -3.0, 0.0]), 4.0, np.array([-1.0, 1.0, 0.2]),
    ...                      ["a", "b"])[:87]
    'the training classes meet only at ties of a combination of the systems (-1 * a + 1 * b)'
    >>> combination_tie_note(np.array([-1.0, 3.0, -3.0, 0.5]), 4.0, np.array([-1.0, 1.0, 0.2]),
    ...                      ["a", "b"]) is None
    True
    """
    tar_lo, tar_hi, non_lo, non_hi = (float(x) for x in ranges)
    if not all(np.isfinite([tar_lo, tar_hi, non_lo, non_hi, size])):
        return None
    slack = SEPARATION_TOLERANCE * size
    spread = max(tar_hi, non_hi) - min(tar_lo, non_lo)
    if not spread > 2 * slack:  # a constant combination: undetermined, not separating
        return None
    if non_hi - tar_lo > slack and tar_hi - non_lo > slack:
        return None
    weights = np.asarray(direction, dtype=np.float64)[: len(systems)]
    if scales is not None:
        weights = weights / np.asarray(scales, dtype=np.float64)
    weights = weights / np.abs(weights).max()
    terms = [(w, name) for w, name in zip(weights, systems, strict=True) if w != 0]
    combination = f"{terms[0][0]:.3g} * {terms[0][1]}" + "".join(
        f" {'-' if w < 0 else '+'} {abs(w):.3g} * {name}" for w, name in terms[1:]
    )
    return (
        "the training classes meet only at ties of a combination of the systems "
        f"({combination}): along it every target is on one side of one value "
        "and every non-target on the other, so a steeper fusion along it always fits the "
        "training data better: the cross-entropy has no minimum, where the fit stopped is "
        "arbitrary, and its LLRs are over-confident. Train on more (or harder) trials, or with "
        "an L2 penalty (--l2, or l2 > 0 in Python)"
    )


def undetermined_note(hessian: np.ndarray | None, names: Sequence[str]) -> str | None:
    """The note for parameters that the training data do not determine, or ``None``.

    ``hessian`` is the objective's exact Hessian at the fitted parameters (``None``: not
    computed, no note). A parameter whose second derivative is zero (a system that is 0 on every
    training trial), or a direction along which the Jacobi-scaled Hessian has an eigenvalue
    below :data:`UNDETERMINED_RATIO` of its largest (a constant system moves with the offset,
    two equal systems against each other), changes no training score: the fitted values along
    it are whatever the solver started from. The note names the parameters of that direction
    (``names``, one per parameter).

    Examples
    --------
    >>> undetermined_note(np.diag([1.0, 4.0]), ["a", "b"]) is None
    True
    >>> undetermined_note(np.diag([0.0, 4.0]), ["the weight of system 1", "the offset"])[:70]
    'the training data do not determine the weight of system 1: changing it'
    """
    if hessian is None:
        return None
    h = np.asarray(hessian, dtype=np.float64)
    diag = np.diag(h)
    if not np.all(np.isfinite(h)) or not diag.max(initial=0.0) > 0:
        return None
    flat = diag <= 0
    if flat.any():
        free = np.flatnonzero(flat)
    else:
        scale = 1.0 / np.sqrt(diag)
        values, vectors = np.linalg.eigh(h * np.outer(scale, scale))
        if not values[0] < UNDETERMINED_RATIO * values[-1]:
            return None
        v = np.abs(vectors[:, 0])  # in the scaled units, where a system constant at 1000
        free = np.flatnonzero(v > 0.1 * v.max())  # and the offset weigh alike
    listed = [names[i] for i in free]
    what = listed[0] if len(listed) == 1 else ", ".join(listed[:-1]) + " and " + listed[-1]
    change = "changing it" if len(listed) == 1 else "a joint change of them"
    quality = any(n.startswith("W[") for n in listed) and all(
        n.startswith("W[") or n == "the offset" for n in listed
    )  # only the quality matrix (and the offset, which its constant terms meet) is free
    why, drop = (
        ("is a quality measure constant on the training trials, or a combination of others, "
         "as dependent Qtrans rows make it?", "measure (or Qtrans row)") if quality else
        ("is a system constant on the training trials, or a copy of others?", "system")
    )  # fmt: skip
    return (
        f"the training data do not determine {what}: {change} leaves every training score "
        f"as it is ({why}), so the fitted values are arbitrary and can make eval scores wrong. "
        f"Drop the redundant {drop}, or train with an L2 penalty (--l2, or l2 > 0 in Python)"
    )


def parameter_names(
    n_systems: int, n_measures: int, calibration: bool, systems: Sequence[str] | None = None
) -> list[str]:
    """Names of a fit's parameters, in the solver's order: the weights (of the ``systems``
    by name, if given), the offset, then the free entries of the quality matrix ``W``
    (``n_measures`` quality measures; 0: none).

    >>> parameter_names(2, 0, False)
    ['the weight of system 1', 'the weight of system 2', 'the offset']
    >>> parameter_names(2, 0, False, ["dev1.scores", "dev2.scores"])[1]
    'the weight of dev2.scores'
    >>> parameter_names(1, 1, True)
    ['the scale', 'the offset', 'W[0, 0]', 'W[0, 1]']
    """
    systems = systems or [f"system {k + 1}" for k in range(n_systems)]
    weights = ["the scale"] if calibration else [f"the weight of {s}" for s in systems]
    rows, cols = quality_pairs(n_measures + 1) if n_measures else ((), ())
    return [*weights, "the offset", *(f"W[{i}, {j}]" for i, j in zip(rows, cols, strict=True))]
