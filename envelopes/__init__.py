"""The wire contract of the Ichor tract. No I/O lives here."""

from envelopes.codec import *  # noqa: F403
from envelopes.codec import __all__ as _codec_all
from envelopes.subjects import DEFAULT_PREFIX, Subjects
from envelopes.types import *  # noqa: F403
from envelopes.types import __all__ as _types_all

__all__ = [*_codec_all, *_types_all, "DEFAULT_PREFIX", "Subjects"]
