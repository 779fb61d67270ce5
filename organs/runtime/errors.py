"""The runtime's exceptions; they are defined, with the whole hierarchy, in ``organs.errors``."""

from __future__ import annotations

from organs.errors import BusUnavailableError, ConfigError, EmbeddedServerError, IchorError, PoisonError, TransientError

__all__ = ["BusUnavailableError", "ConfigError", "EmbeddedServerError", "IchorError", "PoisonError", "TransientError"]
