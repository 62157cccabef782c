"""The base of every fitted score model: scikit-learn's conventions and a JSON file.

:class:`JsonModel` is the base of every model class: scikit-learn's conventions where they
fit (``get_params``/``set_params``, a ``repr`` of the parameters, fitted attributes with a
trailing underscore, :class:`~bosaris_dask.errors.NotFittedError`) and ``save``/``load`` as JSON
(atomic writes, errors that name the file); :func:`model_array` checks a file's arrays,
:func:`with_training_fields` keeps what the CLI records about the training inputs, and
:func:`in_llr_base` makes a ``transform`` follow the LLR base the model was trained on.
"""

from __future__ import annotations

import inspect
import json
import math
import os
from collections.abc import Callable, Sequence
from typing import Any, Self

import numpy as np
import xarray as xr

from bosaris_dask._deprecation import warn_renamed
from bosaris_dask.errors import (
    NotFittedError,
    OptionError,
    ParseError,
    StoreError,
    StoreNotFoundError,
    TrialError,
)
from bosaris_dask.fusion.base import check_system_order

#: The ``"format"`` field of every model dict.
MODEL_FORMAT = "bosaris_dask.model/1"


class JsonModel:
    """Parameters as scikit-learn keeps them, and ``save``/``load`` as JSON.

    A subclass defines ``to_dict``/``from_dict``, keeps every ``__init__`` parameter as an
    attribute of the same name (what :meth:`get_params` reads) and declares its fitted
    attributes (names ending with ``_``) as annotations of its class body. As scikit-learn's,
    they exist only once the model is fitted (or loaded): before, reading one raises
    :class:`~bosaris_dask.errors.NotFittedError` (an ``AttributeError``: ``hasattr`` is
    ``False``, and ``vars`` holds no name ending with ``_``, scikit-learn's test of a fit).

    What the CLI records about the training inputs rides along (:meth:`training_fields`):
    ``llr_base_``, the base of the LLRs the model was trained on (``"e"`` for a fit in Python;
    ``bosaris-dask calibrate/fuse --llr-base 10`` records ``"10"``: ``transform`` and
    :func:`~bosaris_dask.calibration.apply_model` then read and write base-10 LLRs, as
    ``bosaris-dask apply`` does, while the parameters stay those of natural-log LLRs), and
    ``systems_``, the names of a fusion's systems in training order (``None`` unknown: a fit of
    one system, or of systems without ``names``). :meth:`load`, :meth:`save` and ``to_dict``
    keep both; a new fit forgets them, keeping only the ``names`` it is given.
    """

    llr_base_: str = "e"
    systems_: list[str] | None = None

    #: Parameters renamed since earlier releases, ``{old: new}``: ``set_params`` and reading
    #: the attribute take the old name for one release, with a ``FutureWarning``.
    _renamed_params: dict[str, str] = {}

    @classmethod
    def _param_names(cls) -> list[str]:
        """The ``__init__`` parameters (through ``**kwargs`` to the parent's)."""
        names: list[str] = []
        for klass in cls.__mro__:
            init = klass.__dict__.get("__init__")
            if init is None:
                continue
            params = inspect.signature(init).parameters.values()
            names += [p.name for p in params if p.name != "self" and p.name not in names
                      and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]  # fmt: skip
            if all(p.kind != p.VAR_KEYWORD for p in params):
                break
        return names

    @classmethod
    def _fitted_names(cls) -> set[str]:
        """The fitted attributes the classes declare (annotations ending with ``_`` that hold
        no class-level value)."""
        return {name for klass in cls.__mro__ for name in inspect.get_annotations(klass)
                if name.endswith("_") and not name.startswith("_")
                and not hasattr(klass, name)}  # fmt: skip

    def __getattr__(self, name: str) -> Any:
        """A fitted attribute read before ``fit``: a :class:`NotFittedError` saying so (only
        called where ordinary lookup failed).

        Examples
        --------
        >>> from bosaris_dask.fusion import LinearFuser
        >>> try:
        ...     LinearFuser().weights_
        ... except NotFittedError as exc:
        ...     print(exc)
        this LinearFuser is not fitted yet: call fit first (weights_ is set by fit)
        >>> hasattr(LinearFuser(), "weights_")
        False
        """
        renamed = type(self)._renamed_params.get(name)
        if renamed is not None:
            warn_renamed(f"{type(self).__name__}.{name}", f"{type(self).__name__}.{renamed}")
            return getattr(self, renamed)
        fitted = type(self)._fitted_names()
        if name in fitted:
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit first "
                                 f"({name} is set by fit)")  # fmt: skip
        unset = fitted - vars(self).keys()
        if isinstance(inspect.getattr_static(type(self), name, None), property) and unset:
            # a property over fitted attributes (scale_, n_blocks_) whose NotFittedError Python
            # turned into this call: not fitted, rather than "no attribute"
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit first "
                                 f"({name} is computed from what fit sets)")  # fmt: skip
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}",
                             name=name, obj=self)  # fmt: skip

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickle, renaming the parameters of a model pickled by an earlier release
        (:attr:`_renamed_params`)."""
        for old, new in type(self)._renamed_params.items():
            if old in state and new not in state:
                state[new] = state.pop(old)
        self.__dict__.update(state)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The model's parameters (as given to ``__init__``), by name.

        Examples
        --------
        >>> from bosaris_dask.fusion import LinearFuser
        >>> LinearFuser(0.1, l2=1e-3).get_params()["l2"]
        0.001
        """
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> Self:
        """Set parameters by name (checked as ``__init__`` checks them); returns the model.

        A fitted model whose parameters change (other than ``split_every``/``persist``, which
        only say how a fit runs) loses its fit: its fitted values were made with the old ones,
        and kept beside the new ones they would be applied, and saved, as a model that was never
        trained. Fit it again.

        Raises
        ------
        OptionError
            An unknown name, or a value ``__init__`` rejects.

        Examples
        --------
        >>> from bosaris_dask.fusion import LinearFuser
        >>> LinearFuser().set_params(train_prior=0.01)
        LinearFuser(train_prior=0.01)
        >>> import numpy as np
        >>> fitted = LinearFuser().fit_arrays(np.array([1.0, 3.0]), np.array([0.0, 2.0]))
        >>> hasattr(fitted.set_params(train_prior=0.01), "weights_")  # fit again at the new prior
        False
        """
        for old, new in type(self)._renamed_params.items():
            if old in params:
                if new in params:
                    raise OptionError(f"{type(self).__name__}.set_params got both {old}= (its "
                                      f"old name) and {new}=")  # fmt: skip
                warn_renamed(f"the parameter {old}= of {type(self).__name__}", f"{new}=")
                params[new] = params.pop(old)
        names = self._param_names()
        unknown = [name for name in params if name not in names]
        if unknown:
            raise OptionError(f"{type(self).__name__} has no parameter {unknown[0]!r}; "
                              f"its parameters are {', '.join(names)}")  # fmt: skip
        checked = type(self)(**{**self.get_params(), **params})
        changed = [n for n in params if not _same(getattr(self, n), getattr(checked, n))]
        for name in params:
            setattr(self, name, getattr(checked, name))
        if any(n not in _HOW_IT_RUNS for n in changed):
            self._unfit()
        return self

    def _unfit(self) -> None:
        """The model as before ``fit``: no fitted attribute."""
        for name in type(self)._fitted_names():
            self.__dict__.pop(name, None)
        self._forget_training_inputs()

    def _trained_on(self, names: Sequence[str] | None) -> Self:
        """The model, keeping the ``names`` of the systems its fit fused (several: one system
        needs no name to be applied to the right scores)."""
        if names is not None and len(names) > 1:
            self.systems_ = list(names)
        return self

    def _check_order(self, names: Sequence[str] | None) -> None:
        """An OptionError where ``names`` are the fitted systems' names in another order."""
        if names is not None:
            check_system_order(self.systems_, list(names), f"{type(self).__name__}.transform")

    def _forget_training_inputs(self) -> None:
        """A new fit (in Python: of natural-log LLRs, of systems without names)."""
        for name in _TRAINING_FIELDS.values():
            self.__dict__.pop(name, None)

    def __repr__(self) -> str:
        defaults = {}
        for klass in type(self).__mro__:
            init = klass.__dict__.get("__init__")
            if init is not None:
                for p in inspect.signature(init).parameters.values():
                    defaults.setdefault(p.name, p.default)
        shown = [f"{name}={value!r}" for name, value in self.get_params().items()
                 if not _same(value, defaults.get(name, inspect.Parameter.empty))]  # fmt: skip
        return f"{type(self).__name__}({', '.join(shown)})"

    def training_fields(self) -> dict[str, Any]:
        """``"llr_base"`` (where not ``"e"``) and ``"systems"`` (where known) for ``to_dict``."""
        out: dict[str, Any] = {}
        if self.llr_base_ != "e":
            out["llr_base"] = self.llr_base_
        if self.systems_ is not None:
            out["systems"] = list(self.systems_)
        return out

    def save(self, path: str | os.PathLike[str], **fields: Any) -> None:
        """Write the fitted model as JSON (``to_dict``, and ``fields`` beside it), atomically:
        a temporary file renamed into place."""
        _save_json({**self.to_dict(), **fields}, path)  # type: ignore[attr-defined]

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Any:
        """Read a model written by :meth:`save` (a missing file or a bad one names the file)."""
        return _from_json(with_training_fields(cls.from_dict), path)  # type: ignore[attr-defined]

    save_json = save  #: the name of earlier releases
    load_json = load  #: the name of earlier releases


def training_prior(d: dict[str, Any]) -> float:
    """A linear model dict's training prior: ``"train_prior"``, or ``"prior"`` as files of
    earlier releases name it (a ``KeyError`` naming ``"train_prior"`` where neither is).

    Examples
    --------
    >>> training_prior({"train_prior": 0.1}), training_prior({"prior": 0.2})
    (0.1, 0.2)
    """
    if "train_prior" in d:
        return d["train_prior"]
    if "prior" in d:
        return d["prior"]
    raise KeyError("train_prior")


def number_or_nan(value: Any) -> float:
    """``value`` as a float, or NaN for what is no number (the range checks then refuse it).

    Examples
    --------
    >>> number_or_nan("0.5"), number_or_nan("x")
    (0.5, nan)
    """
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def check_split_every(value: Any) -> int | dict | None:
    """A fit's ``split_every`` (None, an integer >= 2, or dask's dict of one per axis); an
    :class:`OptionError` for anything else (``"x"`` was kept, and failed inside the fit)."""

    def fine(v: Any) -> bool:
        return isinstance(v, int | np.integer) and not isinstance(v, bool) and v >= 2

    if value is None or fine(value) or (isinstance(value, dict) and value
                                        and all(fine(v) for v in value.values())):  # fmt: skip
        return value
    raise OptionError(f"split_every must be None, an integer >= 2 or a dict of them per axis, "
                      f"got {value!r}")  # fmt: skip


def model_array(value: Any, name: str, ndim: int, *, infinite_ok: bool = False) -> np.ndarray:
    """A model file's array field as float64 with ``ndim`` dimensions and no NaN (nor ``inf``
    unless ``infinite_ok``); a :class:`TrialError` naming the field otherwise.

    Examples
    --------
    >>> model_array([1.0, 2.0], "weights", 1).tolist()
    [1.0, 2.0]
    >>> model_array(1.5, "weights", 1)
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.TrialError: weights must be a list of numbers (1-D), got 1.5
    >>> model_array("1", "offset", 0)
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.TrialError: offset must be a number (0-D), got '1'
    """
    shape = "a number" if ndim == 0 else "a list of numbers" if ndim == 1 else "a list of lists"
    try:
        arr = None if _holds_no_number(value) else np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim != ndim or (ndim and arr.size == 0):
        raise TrialError(f"{name} must be {shape} ({ndim}-D), got {value!r}"[:200])
    bad = np.isnan(arr) if infinite_ok else ~np.isfinite(arr)
    if bad.any():
        raise TrialError(f"{name} must hold {'numbers' if infinite_ok else 'finite numbers'}, "
                         f"got {float(arr[bad].flat[0])!r}")  # fmt: skip
    return arr


def _holds_no_number(value: Any) -> bool:
    """JSON's ``true``/``false`` or a string where a number belongs (numpy would read them as
    1, 0 and the number the string spells)."""
    if isinstance(value, bool | np.bool_ | str | bytes):
        return True
    return isinstance(value, list | tuple) and any(_holds_no_number(v) for v in value)


#: Parameters that say how a fit runs, not what it fits: changing them keeps the fit.
_HOW_IT_RUNS = ("split_every", "persist")


#: JSON field -> model attribute of what the CLI records about the training inputs.
_TRAINING_FIELDS = {"llr_base": "llr_base_", "systems": "systems_"}


def in_llr_base(transform: Callable[..., Any]) -> Callable[..., Any]:
    """``transform`` (natural-log LLRs in, natural-log LLRs out) reading and writing LLRs in
    the model's ``llr_base_`` instead: Scores, a sequence of Scores, or an array.

    Examples
    --------
    >>> from bosaris_dask.calibration import linear_calibrate
    >>> cal = linear_calibrate(np.array([2.0, 3.0, 0.5]), np.array([0.0, -1.0, 1.0]))
    >>> natural = cal.transform_arrays(np.array([1.0 * np.log(10)])) / np.log(10)
    >>> cal.llr_base_ = "10"  # as a model trained by ``--llr-base 10`` loads
    >>> bool(np.isclose(cal.transform_arrays(np.array([1.0]))[0], natural[0]))
    True
    """
    from functools import wraps

    @wraps(transform)
    def in_base(self: JsonModel, scores: Any, *args: Any, **kwargs: Any) -> Any:
        from bosaris_dask.llr_base import from_natural, log_of_base, to_natural

        factor = log_of_base(self.llr_base_)
        if factor == 1.0:
            return transform(self, scores, *args, **kwargs)
        if isinstance(scores, xr.Dataset):
            scores = to_natural(scores, self.llr_base_)
        elif isinstance(scores, Sequence) and all(isinstance(s, xr.Dataset) for s in scores):
            scores = [to_natural(s, self.llr_base_) for s in scores]
        else:
            scores = np.asarray(scores, dtype=np.float64) * factor
        out = transform(self, scores, *args, **kwargs)
        if isinstance(out, xr.Dataset):
            return from_natural(out, self.llr_base_)
        return out / factor

    return in_base


def with_training_fields(
    build: Callable[[dict[str, Any]], Any],
) -> Callable[[dict[str, Any]], Any]:
    """``build`` (a ``from_dict``) that also checks the dict's ``"format"`` and keeps its
    ``"llr_base"`` and ``"systems"`` (:meth:`JsonModel.training_fields`).

    Examples
    --------
    >>> from bosaris_dask.fusion import LinearFuser
    >>> d = {"kind": "linear_fusion", "train_prior": 0.5, "weights": [1.0], "offset": 0.0}
    >>> m = with_training_fields(LinearFuser.from_dict)({**d, "llr_base": "10", "systems": ["a"]})
    >>> m.llr_base_, m.systems_
    ('10', ['a'])
    >>> with_training_fields(LinearFuser.from_dict)({**d, "format": "bosaris_dask.model/2"})
    Traceback (most recent call last):
    ...
    ValueError: format 'bosaris_dask.model/2' is not bosaris_dask.model/1
    >>> with_training_fields(LinearFuser.from_dict)({**d, "systems": ["a", "b"]})
    Traceback (most recent call last):
    ...
    ValueError: systems names 2 systems, weights holds 1: one weight per system
    """

    def build_with_fields(d: dict[str, Any]) -> Any:
        from bosaris_dask.llr_base import LLR_BASES

        if d.get("format", MODEL_FORMAT) != MODEL_FORMAT:  # absent in hand-written models
            raise ValueError(f"format {d['format']!r} is not {MODEL_FORMAT}")
        base = d.get("llr_base", "e")
        if base not in LLR_BASES:
            raise ValueError(f"llr_base {base!r} is not one of {', '.join(LLR_BASES)}")
        names = d.get("systems")
        if names is not None and not (
            isinstance(names, list) and all(isinstance(n, str) for n in names)
        ):
            raise ValueError(f"systems must be a list of names, not {names!r}"[:200])
        model = build(d)
        weights = model.__dict__.get("weights_")
        if names is not None and weights is not None and len(names) != weights.size:
            raise ValueError(f"systems names {len(names)} systems, weights holds "
                             f"{weights.size}: one weight per system")  # fmt: skip
        if base != "e":
            model.llr_base_ = str(base)
        if names is not None:
            model.systems_ = list(names)
        return model

    return build_with_fields


def _same(value: Any, default: Any) -> bool:
    try:
        return bool(value == default)
    except (TypeError, ValueError):
        return value is default


def _save_json(d: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Write a model atomically: the file is the previous one or the complete new one.

    The JSON text is built before anything is written (a value JSON cannot hold fails with
    nothing on disk) and goes through :func:`~bosaris_dask.io.atomic.atomic_path`: a hidden
    temporary sibling, removed if the write fails, which
    :func:`~bosaris_dask.io.atomic.remove_stale` deletes if the process was killed.
    """
    from bosaris_dask.io.atomic import atomic_path

    text = json.dumps(d, indent=2) + "\n"
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def _from_json(build: Callable[[dict[str, Any]], Any], path: str | os.PathLike[str]) -> Any:
    """``build(d)`` of the JSON object in a model file; what is wrong with it names the file.

    Raises
    ------
    StoreNotFoundError
        No such file.
    ParseError
        Not JSON, not an object, a missing field or a field ``build`` rejects.
    """
    d = _load_json(path)
    try:
        return build(d)
    except KeyError as exc:
        raise ParseError(f"the model has no {exc.args[0]!r} field", path=path) from None
    except (TrialError, TypeError, ValueError) as exc:
        raise ParseError(str(exc), path=path) from None


def _load_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A model file's JSON object; a missing file, bad JSON or a non-object is an error."""
    try:
        with open(path, encoding="utf-8") as fh:
            d = json.load(fh)
    except FileNotFoundError:
        raise StoreNotFoundError(f"{os.fspath(path)}: no such model file") from None
    except OSError as exc:
        raise StoreError(f"{os.fspath(path)}: cannot read ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        raise ParseError(f"not UTF-8 text ({exc.reason})", path=path) from None
    except json.JSONDecodeError as exc:
        raise ParseError(f"not a JSON model file: {exc.msg}", path=path, line=exc.lineno) from None
    if not isinstance(d, dict):
        raise ParseError(f"a model file holds a JSON object, not {type(d).__name__}", path=path)
    if "kind" not in d and isinstance(d.get("systems"), list) and "passes" in d:
        raise ParseError("this is an evaluation's results (evaluate --json), not a model: "
                         "give the --model-out file of calibrate or fuse", path=path)  # fmt: skip
    return d
