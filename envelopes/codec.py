"""Typed encoding: msgpack on the wire, JSON for people, JSON Schema for hosts.

Every decoder is built once at import; decoding is strict, so a wrong type,
an unknown tag or a failed invariant raises ``msgspec.ValidationError`` whose
message names the path (``$.payload.frames[0].id``).
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from envelopes.schema import contract_schema
from envelopes.types import Envelope, FrameRecord, FrameReply, FrameRequest

__all__ = [
    "DecodeError",
    "decode",
    "decode_frame_record",
    "decode_frame_reply",
    "decode_frame_request",
    "decode_json",
    "encode",
    "encode_json",
    "envelope_schema",
]

T = TypeVar("T")

DecodeError = (msgspec.DecodeError, msgspec.ValidationError)

_msgpack_encoder = msgspec.msgpack.Encoder()
_json_encoder = msgspec.json.Encoder()
_envelope_decoder = msgspec.msgpack.Decoder(Envelope)
_envelope_json_decoder = msgspec.json.Decoder(Envelope)
_frame_request_decoder = msgspec.msgpack.Decoder(FrameRequest)
_frame_reply_decoder = msgspec.msgpack.Decoder(FrameReply)
_frame_record_decoder = msgspec.msgpack.Decoder(FrameRecord)


def encode(value: Any) -> bytes:
    """Encode any contract Struct as msgpack, the wire format."""
    return _msgpack_encoder.encode(value)


def encode_json(value: Any) -> bytes:
    return _json_encoder.encode(value)


def _strictly(decoder: Any, data: bytes | str) -> Any:
    try:
        return decoder.decode(data)
    except RecursionError as error:
        # msgspec walks into fields it skips; nesting past the interpreter's limit is bad input, not a crash.
        raise msgspec.DecodeError(f"input nested too deeply to decode: {error}") from error


def decode(data: bytes) -> Envelope:
    """Decode an envelope from msgpack; raises one of ``DecodeError``."""
    envelope: Envelope = _strictly(_envelope_decoder, data)
    return envelope


def decode_json(data: bytes | str) -> Envelope:
    envelope: Envelope = _strictly(_envelope_json_decoder, data)
    return envelope


def decode_frame_request(data: bytes) -> FrameRequest:
    request: FrameRequest = _strictly(_frame_request_decoder, data)
    return request


def decode_frame_reply(data: bytes) -> FrameReply:
    reply: FrameReply = _strictly(_frame_reply_decoder, data)
    return reply


def decode_frame_record(data: bytes) -> FrameRecord:
    record: FrameRecord = _strictly(_frame_record_decoder, data)
    return record


def envelope_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) of the envelope and every type it contains, rules and all."""
    return contract_schema()
