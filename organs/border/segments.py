"""The compiler's inputs: prompt segments and modules, their labels, limits and validation.

Every value is checked when it is built, so the compiler only ever sees
well-formed input; ``compile`` adds the rules that span modules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from envelopes.types import PROMPT_SEPARATOR, AnyProvenance, CacheScope, Trust
from organs.errors import InvalidPromptInputError

__all__ = [
    "AUTHORITY_ORDER",
    "CACHE_ORDER",
    "MAX_ID_LENGTH",
    "MAX_PRIORITY",
    "MAX_SEGMENTS_PER_MODULE",
    "MAX_SEGMENT_BYTES",
    "MIN_PRIORITY",
    "SEPARATOR",
    "STABLE_SCOPES",
    "TRUNCATION_MARKER",
    "Authority",
    "BudgetBehavior",
    "ConflictClaim",
    "ConflictMode",
    "Disposition",
    "PromptBudget",
    "PromptModule",
    "PromptSegment",
    "validate_id",
]

Authority = Literal["kernel", "organization", "product", "workspace", "tool", "skill", "session", "user_addition"]
BudgetBehavior = Literal["required", "truncate", "omit"]
ConflictMode = Literal["protected", "replaceable"]
Disposition = Literal["included", "truncated", "duplicate", "shadowed", "omitted"]

AUTHORITY_ORDER: tuple[Authority, ...] = (
    "kernel",
    "organization",
    "product",
    "workspace",
    "tool",
    "skill",
    "session",
    "user_addition",
)
AUTHORITY_RANK = {authority: rank for rank, authority in enumerate(AUTHORITY_ORDER)}
# Longest-lived first: the order segments are rendered in, so what changes least leads the prompt.
CACHE_ORDER: tuple[CacheScope, ...] = ("global", "profile", "session", "run", "none")
STABLE_SCOPES: frozenset[str] = frozenset({"global", "profile", "session"})
_TRUSTS: frozenset[str] = frozenset({"trusted", "delegated", "untrusted"})
_CACHE_SCOPES: frozenset[str] = frozenset({"none", "run", "session", "profile", "global"})
_BUDGET_BEHAVIORS: frozenset[str] = frozenset({"required", "truncate", "omit"})
_CONFLICT_MODES: frozenset[str] = frozenset({"protected", "replaceable"})

SEPARATOR = PROMPT_SEPARATOR
TRUNCATION_MARKER = "[truncated]"
MAX_SEGMENT_BYTES = 1 << 20
MAX_SEGMENTS_PER_MODULE = 256
MAX_ID_LENGTH = 128
MIN_PRIORITY = -1000
MAX_PRIORITY = 1000

_ID_PATTERN = re.compile(r"[a-z0-9_./-]+")


def validate_id(value: str, what: str) -> None:
    """Raise ``InvalidPromptInputError`` unless ``value`` is a canonical id.

    Canonical: 1 to ``MAX_ID_LENGTH`` characters of ``[a-z0-9_./-]``, never ``..``.
    """
    if not isinstance(value, str) or _ID_PATTERN.fullmatch(value) is None:
        raise InvalidPromptInputError(f"{what} {value!r} must be lowercase [a-z0-9_./-]+")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidPromptInputError(f"{what} {value[:40]!r}... is longer than {MAX_ID_LENGTH} characters")
    if ".." in value:
        raise InvalidPromptInputError(f"{what} {value!r} must not contain '..'")


def _require_member(value: str, allowed: frozenset[str], what: str) -> None:
    if value not in allowed:
        raise InvalidPromptInputError(f"{what} {value!r} is not one of {sorted(allowed)}")


@dataclass(frozen=True, slots=True)
class ConflictClaim:
    """A claim on a conflict ``key``: at most one claimant of a key is rendered.

    ``protected``: no lower-precedence claimant may override the winner.
    ``replaceable``: the winner stands in for the key and shadows lower claimants.
    """

    key: str
    mode: ConflictMode = "protected"

    def __post_init__(self) -> None:
        validate_id(self.key, "conflict key")
        _require_member(self.mode, _CONFLICT_MODES, "conflict mode")


@dataclass(frozen=True, slots=True)
class PromptSegment:
    """One piece of prompt text with its labels.

    ``content`` is non-empty, at most ``MAX_SEGMENT_BYTES`` UTF-8 bytes, with no
    NUL and no lone surrogate. ``trust`` describes where the text came from; it is
    a label for downstream policy, not a claim that the text was sanitized.
    ``tokens``, when given, is the exact count of ``content`` in the encoding it
    is compiled in, vouched for by the caller (the border passes counts its guard
    has verified); fitting and the prompt's total use it instead of counting the
    segment again, so it must be right (a wrong one makes the total wrong).
    A ``closing`` segment is rendered after every other one (the question after
    the documents); it changes where the segment goes, not its precedence.
    """

    id: str
    content: str
    provenance: AnyProvenance
    trust: Trust
    cache_scope: CacheScope = "none"
    conflict: ConflictClaim | None = None
    budget_behavior: BudgetBehavior = "required"
    tokens: int | None = None
    closing: bool = False

    def __post_init__(self) -> None:
        validate_id(self.id, "segment id")
        if not isinstance(self.content, str) or not self.content:
            raise InvalidPromptInputError(f"segment {self.id!r} has empty content")
        if "\x00" in self.content:
            raise InvalidPromptInputError(f"segment {self.id!r} contains a NUL character")
        try:
            size = len(self.content.encode("utf-8"))
        except UnicodeEncodeError as error:
            raise InvalidPromptInputError(f"segment {self.id!r} is not valid UTF-8 text: {error.reason}") from None
        if size > MAX_SEGMENT_BYTES:
            raise InvalidPromptInputError(f"segment {self.id!r} has {size} bytes; at most {MAX_SEGMENT_BYTES}")
        _require_member(self.trust, _TRUSTS, f"segment {self.id!r} trust")
        _require_member(self.cache_scope, _CACHE_SCOPES, f"segment {self.id!r} cache scope")
        _require_member(self.budget_behavior, _BUDGET_BEHAVIORS, f"segment {self.id!r} budget behavior")
        if self.tokens is not None and (
            isinstance(self.tokens, bool) or not isinstance(self.tokens, int) or self.tokens < 0
        ):
            raise InvalidPromptInputError(f"segment {self.id!r} tokens must be a non-negative int or None")
        if not isinstance(self.closing, bool):
            raise InvalidPromptInputError(f"segment {self.id!r} closing must be a bool")


@dataclass(frozen=True, slots=True)
class PromptModule:
    """A group of 1 to ``MAX_SEGMENTS_PER_MODULE`` segments under one authority."""

    id: str
    authority: Authority
    priority: int
    segments: tuple[PromptSegment, ...]

    def __post_init__(self) -> None:
        validate_id(self.id, "module id")
        if self.authority not in AUTHORITY_RANK:
            raise InvalidPromptInputError(f"module {self.id!r} authority {self.authority!r} is unknown")
        if isinstance(self.priority, bool) or not isinstance(self.priority, int):
            raise InvalidPromptInputError(f"module {self.id!r} priority must be an int")
        if not MIN_PRIORITY <= self.priority <= MAX_PRIORITY:
            raise InvalidPromptInputError(f"module {self.id!r} priority must be in [{MIN_PRIORITY}, {MAX_PRIORITY}]")
        if not 1 <= len(self.segments) <= MAX_SEGMENTS_PER_MODULE:
            raise InvalidPromptInputError(f"module {self.id!r} needs 1 to {MAX_SEGMENTS_PER_MODULE} segments")
        if not all(isinstance(segment, PromptSegment) for segment in self.segments):
            raise InvalidPromptInputError(f"module {self.id!r} segments must be PromptSegment values")


@dataclass(frozen=True, slots=True)
class PromptBudget:
    """Limits on the whole rendered text, separators included; ``None`` is unlimited."""

    max_bytes: int | None = None
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        for name, limit in (("max_bytes", self.max_bytes), ("max_tokens", self.max_tokens)):
            if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
                raise InvalidPromptInputError(f"budget {name} must be a non-negative int or None")
