"""One root: everything the package raises is an ``IchorError``, defined in one module."""

from __future__ import annotations

import inspect
import re

import organs.errors
from organs.border import BorderConfigError, CompileError
from organs.errors import IchorError
from organs.runtime import ConfigError, PoisonError
from organs.signing import SigningError
from organs.stomach.frames_store import FrameNotFound


def test_every_exception_of_the_package_hangs_from_the_root() -> None:
    classes = [value for value in vars(organs.errors).values() if inspect.isclass(value)]
    assert {cls.__name__ for cls in classes} == set(organs.errors.__all__)
    for cls in classes:
        assert issubclass(cls, IchorError), cls


def test_the_docstring_draws_every_exception() -> None:
    drawing = organs.errors.__doc__ or ""
    for name in organs.errors.__all__:
        assert re.search(rf"(^|[─ ]){name}(\s|$)", drawing, re.MULTILINE), name


def test_the_packages_re_export_the_same_classes() -> None:
    assert issubclass(BorderConfigError, ConfigError)
    assert issubclass(BorderConfigError, ValueError)
    assert issubclass(SigningError, ValueError)
    assert issubclass(FrameNotFound, LookupError)
    for cls in (BorderConfigError, CompileError, ConfigError, PoisonError, SigningError, FrameNotFound):
        assert getattr(organs.errors, cls.__name__) is cls
