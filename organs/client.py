"""The host side of the tract: hand in a paste, await its outcome, fetch frames.

This is what an upstream organ (or the ``ichor`` command) does on the bus.
"""

from __future__ import annotations

import asyncio

import msgspec

from envelopes.codec import decode, decode_frame_reply, encode
from envelopes.ids import digest_bytes, digest_text, utc_now
from envelopes.types import Admitted, AnyProvenance, Envelope, FrameReply, FrameRequest, RawReply, Rejected, Session
from organs.frame_check import verify_frame
from organs.runtime.bus import INLINE_HEADROOM, Tract
from organs.secretion import paste_envelope

__all__ = ["chat_messages", "fetch_frame", "fetch_raw", "hand_in_paste", "store_blob"]


async def store_blob(tract: Tract, data: bytes) -> str:
    """Put bytes in the frames object store under their blake3 hex; returns the digest."""
    digest = digest_bytes(data)
    store = await tract.js.object_store(tract.subjects.frames_bucket)
    await store.put(digest.removeprefix("blake3:"), data)
    return digest


async def hand_in_paste(
    tract: Tract,
    text: str,
    *,
    origin: AnyProvenance,
    source: str = "ichor-ingest",
    intent: str | None = None,
    budget_tokens: int | None = None,
    timeout: float = 30.0,
    session: str | None = None,
    resend: bool = False,
) -> tuple[Envelope, Envelope]:
    """Publish a paste and wait for the envelope that ends its trip.

    Returns ``(paste, outcome)`` where the outcome is the admitted or rejected
    envelope with the paste's trace id. A paste too large for one message
    travels by reference through the frames object store.

    ``session`` names the host's conversation (opt in: only for a host that
    keeps the conversation): a frame an earlier turn of it carried comes back
    as a one-line reference instead of its content, unless ``resend``.
    """
    text_ref = None
    inline_text = text
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) > tract.nc.max_payload - INLINE_HEADROOM:
        text_ref = await store_blob(tract, raw)
        inline_text = ""
    paste = paste_envelope(
        inline_text,
        origin=origin,
        source=source,
        instance=tract.settings.instance,
        intent=intent,
        budget_tokens=budget_tokens,
        text_ref=text_ref,
        input_digest=digest_text(text),
        now=utc_now(),
        session=None if session is None else Session(id=session, resend=resend),
    )
    outcome: asyncio.Future[Envelope] = asyncio.get_running_loop().create_future()

    async def watch(msg: object) -> None:
        data = getattr(msg, "data", b"")
        try:
            envelope = decode(data)
        except Exception:
            return  # someone else's malformed message is not ours to judge here
        is_outcome = isinstance(envelope.payload, (Admitted, Rejected)) and envelope.payload.follow_up_of is None
        if is_outcome and envelope.trace_id == paste.trace_id and not outcome.done():
            outcome.set_result(envelope)

    subscriptions = [
        await tract.nc.subscribe(tract.subjects.brain_in, cb=watch),
        await tract.nc.subscribe(tract.subjects.border_rejected, cb=watch),
    ]
    try:
        await tract.js.publish(
            tract.subjects.stomach_in,
            encode(paste),
            headers={"Nats-Msg-Id": paste.id, "traceparent": paste.trace, "Ichor-Kind": "paste"},
        )
        return paste, await asyncio.wait_for(outcome, timeout=timeout)
    finally:
        for subscription in subscriptions:
            await subscription.unsubscribe()


def chat_messages(outcome: Envelope) -> list[dict[str, str]]:
    """An admitted outcome's prompt as chat messages (``role``, ``content``), system first.

    The system message is the stable prefix; a host that marks cache
    breakpoints puts one after it (``CompiledPrompt.messages`` says where).
    """
    if not isinstance(outcome.payload, Admitted):
        raise ValueError(f"only an admitted outcome has a prompt; this one is {outcome.kind!r}")
    return [{"role": message.role, "content": message.content} for message in outcome.payload.prompt.messages]


async def fetch_raw(tract: Tract, frame_id: str, timeout: float = 10.0) -> RawReply:
    """Ask the stomach for a frame's bytes as received, secrets and all, over ``<prefix>.frames.raw``.

    Only the ``operator`` user may publish there; anyone else's request is refused by the server.
    """
    reply = await tract.nc.request(tract.subjects.frames_raw, encode(FrameRequest(id=frame_id)), timeout=timeout)
    return msgspec.msgpack.decode(reply.data, type=RawReply)


async def fetch_frame(
    tract: Tract, frame_id: str, representation: str = "compact", timeout: float = 10.0
) -> FrameReply:
    """Ask the stomach for a frame over ``<prefix>.frames.get``; a frame that does not hash to
    what it claims is ``FrameTampered``, never returned."""
    request = FrameRequest(id=frame_id, representation="full" if representation == "full" else "compact")
    answer = await tract.nc.request(tract.subjects.frames_get, encode(request), timeout=timeout)
    reply = decode_frame_reply(answer.data)
    if reply.frame is not None:
        verify_frame(reply.frame, frame_id)
    return reply
