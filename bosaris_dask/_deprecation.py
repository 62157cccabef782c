"""Renamed public names: the old name keeps working for one release, with a ``FutureWarning``.

A module lists its renames and installs :func:`renamed_getattr` as its module ``__getattr__``
(PEP 562), so ``module.old`` and ``from module import old`` both warn and return the new
object. The old names are in no ``__all__``.

Examples
--------
>>> import warnings
>>> def new(x):
...     return x + 1
>>> __getattr__ = renamed_getattr("pkg.mod", {"old": ("new", new)})
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     __getattr__("old")(1), caught[0].category.__name__
(2, 'FutureWarning')
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = [
    "renamed_getattr",
    "renamed_keyword",
    "renamed_module",
    "warn_renamed",
    "warn_swapped",
]

_F = TypeVar("_F", bound=Callable[..., Any])


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is now ``new`` (a ``FutureWarning``: removed in the next release)."""
    warnings.warn(
        f"{old} is deprecated and will be removed in the next release: use {new}",
        FutureWarning,
        stacklevel=stacklevel,
    )


def warn_swapped(function: str, *, stacklevel: int = 3) -> None:
    """Warn that ``function`` was given ``(key, scores)``, the order of earlier releases, and
    swapped them (a ``FutureWarning``)."""
    warnings.warn(
        f"{function}(key, scores) is deprecated: the order is now {function}(scores, key), as "
        "in evaluate(scores, key); the arguments were swapped this time",
        FutureWarning,
        stacklevel=stacklevel,
    )


def renamed_keyword(old: str, new: str) -> Callable[[_F], _F]:
    """Decorate a function whose keyword ``old`` is now ``new``: given by its old name it still
    works for one release, with a ``FutureWarning`` (the signature shows only ``new``).

    Examples
    --------
    >>> @renamed_keyword("prior", "train_prior")
    ... def fit(train_prior=0.5):
    ...     return train_prior
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     fit(prior=0.1), str(caught[0].message)[:40]
    (0.1, 'the keyword prior= of fit is deprecated ')
    """

    def decorate(function: _F) -> _F:
        # how many positional arguments reach ``new`` (``self`` counted): given so, it is given
        position = list(inspect.signature(function).parameters).index(new)

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if old in kwargs:
                name = (type(args[0]).__name__ if function.__name__ == "__init__"  # its class
                        else function.__qualname__)  # fmt: skip
                if new in kwargs or len(args) > position:
                    raise TypeError(f"{name}() got both {old}= (its old name) and {new}=")
                warn_renamed(f"the keyword {old}= of {name}", f"{new}=")
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def renamed_getattr(module: str, renamed: dict[str, tuple[str, Any]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that serves the ``renamed`` names ``{old: (new, object)}``
    (``new`` a name in the same module, or the dotted path of one moved to another)."""

    def __getattr__(name: str) -> Any:
        if name in renamed:
            new, obj = renamed[name]
            warn_renamed(f"{module}.{name}", new if "." in new else f"{module}.{new}")
            return obj
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


def renamed_module(old: str, new: types.ModuleType) -> None:
    """Keep ``from old import name`` working for one release, with a ``FutureWarning``.

    The old module has no file any more (so nothing imports it by accident, and pydoc and
    doctest do not list it): an entry in :data:`sys.modules` forwards attribute lookups to
    ``new``. Only the ``from old import name`` form is served: ``import old`` would bind the
    package's attribute of that name, which may now be something else (as
    ``bosaris_dask.operating_points``, now a function).
    """

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        warn_renamed(f"the module {old}", new.__name__)
        return getattr(new, name)

    module = types.ModuleType(old, f"Deprecated: now {new.__name__} (removed in the next release).")
    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules.setdefault(old, module)
