"""Every exception the package raises, under one root.

A caller can catch everything Ichor raises with one clause, or any branch of it::

    IchorError
    ├── ConfigError                  a setting is missing or malformed
    │   └── BorderConfigError        a border setting cannot be used (also a ValueError)
    ├── EmbeddedServerError          the nats-server binary is absent, or did not become ready
    ├── BusUnavailableError          a client could not connect (refused, unreachable, not authorized)
    ├── PermissionRefused            the server refused this user a publish (a request it may not make)
    ├── UploadRefused                an upload past its bucket's byte limit or its sender's quota; ``reason`` names it
    ├── TransientError               the bus is away or slow: retry the envelope later (nak)
    ├── PoisonError                  this envelope can never succeed: dead-letter it (term)
    ├── SigningError                 a seed, public key or signed step cannot be read (also a ValueError)
    ├── FrameNotFound                the frames store holds no such frame or paste (also a LookupError)
    ├── FrameTampered                a stored frame's bytes do not hash to its id or digest: refused
    └── BorderError                  raised inside the border
        └── CompileError             the prompt cannot be compiled; ``code`` names why
            ├── InvalidPromptInputError  a module, segment, id or budget breaks the input rules
            ├── ModuleIdReuseError       two modules share one id
            ├── SegmentIdReuseError      one segment id carries two different contents
            ├── ConflictError            equal-precedence claims on one conflict key disagree
            └── RequiredOverflowError    the required segments alone exceed the budget

The border's organ function turns a ``CompileError`` into a rejection whose reason
code is ``compile.<code>``; it never lets one escape.
"""

from __future__ import annotations

__all__ = [
    "BorderConfigError",
    "BorderError",
    "BusUnavailableError",
    "CompileError",
    "ConfigError",
    "ConflictError",
    "EmbeddedServerError",
    "FrameNotFound",
    "FrameTampered",
    "IchorError",
    "InvalidPromptInputError",
    "ModuleIdReuseError",
    "PermissionRefused",
    "PoisonError",
    "RequiredOverflowError",
    "SegmentIdReuseError",
    "SigningError",
    "TransientError",
    "UploadRefused",
]


class IchorError(Exception):
    """Root of every exception raised by the Ichor organs."""


class ConfigError(IchorError):
    """A setting is missing or malformed."""


class PermissionRefused(IchorError):
    """The server refused this user a publish: its permissions do not allow the subject."""


class UploadRefused(IchorError):
    """A paste too large for one message could not be uploaded; ``reason`` is a stable, machine-readable name
    (``uploads.sender_quota``, ``uploads.max_bytes``)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


class EmbeddedServerError(IchorError):
    pass


class BusUnavailableError(IchorError):
    pass


class TransientError(IchorError):
    pass


class PoisonError(IchorError):
    """Raised by an organ handler for an input that no retry can fix."""


class SigningError(IchorError, ValueError):
    """A seed or public key that cannot be read."""


class FrameNotFound(IchorError, LookupError):
    pass


class FrameTampered(IchorError):
    """A stored frame whose bytes do not hash to its id or its served digest: refused, never shown."""


class BorderError(IchorError):
    """Root of every exception raised by ``organs.border``."""


class BorderConfigError(BorderError, ConfigError, ValueError):
    """A border configuration value (usually an environment variable) cannot be used."""


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
