"""Exceptions of the border package.

One root, so a caller can catch everything the border raises with one clause::

    BorderError
    ├── BorderConfigError            an environment variable or config value is invalid (also a ValueError)
    └── CompileError                 the prompt cannot be compiled; ``code`` names why
        ├── InvalidPromptInputError  a module, segment, id or budget breaks the input rules
        ├── ModuleIdReuseError       two modules share one id
        ├── SegmentIdReuseError      one segment id carries two different contents
        ├── ConflictError            equal-precedence claims on one conflict key disagree
        └── RequiredOverflowError    the required segments alone exceed the budget

The organ function turns a ``CompileError`` into a rejection whose reason code is
``compile.<code>``; it never lets one escape.
"""

from __future__ import annotations

__all__ = [
    "BorderConfigError",
    "BorderError",
    "CompileError",
    "ConflictError",
    "InvalidPromptInputError",
    "ModuleIdReuseError",
    "RequiredOverflowError",
    "SegmentIdReuseError",
]


class BorderError(Exception):
    """Root of every exception raised by ``organs.border``."""


class BorderConfigError(BorderError, ValueError):
    """A configuration value (usually an environment variable) cannot be used."""


class CompileError(BorderError):
    """The prompt compiler refused its input. ``code`` is stable and machine-readable."""

    code = "error"


class InvalidPromptInputError(CompileError):
    code = "invalid_input"


class ModuleIdReuseError(CompileError):
    code = "module_id_reuse"


class SegmentIdReuseError(CompileError):
    code = "segment_id_reuse"


class ConflictError(CompileError):
    code = "conflict"


class RequiredOverflowError(CompileError):
    code = "required_overflow"
