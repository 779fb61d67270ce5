"""The runtime's exceptions.

One root, so a caller can catch everything this package raises::

    IchorError
    ├── ConfigError            a setting is missing or malformed
    ├── EmbeddedServerError    the nats-server binary is absent, or did not become ready
    ├── BusUnavailableError    a client could not connect (refused, unreachable, not authorized)
    ├── TransientError         the bus is away or slow: retry the envelope later (nak)
    └── PoisonError            this envelope can never succeed: dead-letter it (term)
"""

from __future__ import annotations

__all__ = ["BusUnavailableError", "ConfigError", "EmbeddedServerError", "IchorError", "PoisonError", "TransientError"]


class IchorError(Exception):
    """Root of every error raised by the Ichor runtime."""


class ConfigError(IchorError):
    pass


class EmbeddedServerError(IchorError):
    pass


class BusUnavailableError(IchorError):
    pass


class TransientError(IchorError):
    pass


class PoisonError(IchorError):
    """Raised by an organ handler for an input that no retry can fix."""
