"""The border's exceptions; they are defined, with the whole hierarchy, in ``organs.errors``."""

from __future__ import annotations

from organs.errors import (
    BorderConfigError,
    BorderError,
    CompileError,
    ConflictError,
    InvalidPromptInputError,
    ModuleIdReuseError,
    RequiredOverflowError,
    SegmentIdReuseError,
)

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
