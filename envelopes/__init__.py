"""The wire contract of the Ichor tract. No I/O lives here."""

from envelopes.codec import (
    DecodeError,
    decode,
    decode_frame_reply,
    decode_frame_request,
    decode_json,
    encode,
    encode_json,
    envelope_schema,
)
from envelopes.subjects import DEFAULT_PREFIX, Subjects
from envelopes.types import *  # noqa: F403
from envelopes.types import __all__ as _types_all

__all__ = [
    *_types_all,
    "DEFAULT_PREFIX",
    "DecodeError",
    "Subjects",
    "decode",
    "decode_frame_reply",
    "decode_frame_request",
    "decode_json",
    "encode",
    "encode_json",
    "envelope_schema",
]
