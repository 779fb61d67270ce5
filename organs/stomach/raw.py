"""``<prefix>.frames.raw``: a frame's bytes as received, before redaction, for the operator only.

The security configuration lets only the ``operator`` user publish to this subject
(no organ, not the host), so what a model or an ordinary client can fetch stays
the redacted text of ``frames.get``. A frame whose paste held nothing to redact
answers with the same bytes as its full text.
"""

from __future__ import annotations

from envelopes.codec import DecodeError, decode_frame_request
from envelopes.types import RawReply
from organs.stomach.frames_store import FrameNotFound, FrameStore

__all__ = ["answer_raw_request"]


async def answer_raw_request(store: FrameStore, data: bytes, limit: int) -> RawReply:
    """The reply to one request (a ``FrameRequest`` naming the frame id); bytes beyond ``limit`` are only located."""
    try:
        request = decode_frame_request(data)
    except DecodeError as error:
        return RawReply(error=f"malformed frame request: {error}")
    try:
        record = await store.record(request.id)
        ref = record.raw_ref or record.paste_ref
        span = record.raw_span or record.span
        text = (await store.get_paste(ref))[span[0] : span[1]]
    except FrameNotFound as error:
        return RawReply(error=str(error))
    if len(text.encode("utf-8", "surrogatepass")) > limit:
        return RawReply(paste_ref=ref, span=span, error="the raw frame is larger than one message carries")
    return RawReply(text=text, paste_ref=ref, span=span)
