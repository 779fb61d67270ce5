"""The host side of the tract: hand in a paste, await its outcome, fetch frames.

This is what an upstream organ (or the ``ichor`` command) does on the bus.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import secrets
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import msgspec
import nats.js.errors
from nats.js import api

from envelopes.codec import decode, decode_frame_reply, encode
from envelopes.ids import digest_bytes, digest_text, utc_now
from envelopes.types import Admitted, AnyProvenance, Envelope, FrameReply, FrameRequest, RawReply, Rejected, Session
from organs.anatomy import SENDERS
from organs.errors import FrameNotFound, PermissionRefused, UploadRefused
from organs.frame_check import verify_frame
from organs.runtime.bus import Tract, inline_room, stream_info
from organs.runtime.bus import request as bus_request
from organs.runtime.limits import UPLOADS_TTL_S
from organs.runtime.refusals import refusal_of
from organs.runtime.stored_text import fetch_text, with_goal
from organs.runtime.stream_reader import follow_stream
from organs.secretion import paste_envelope
from organs.signing import Signer, seal_paste

__all__ = [
    "chat_messages",
    "fetch_frame",
    "fetch_raw",
    "frames_subject",
    "hand_in_paste",
    "resolve_frame_id",
    "store_blob",
    "uploads_bucket_for",
    "with_stored_texts",
]

_CHUNK_BYTES = 128 * 1024


async def store_blob(tract: Tract, data: bytes) -> str:
    """Put bytes in the uploads bucket under their blake3 hex, as an object the stomach reads; returns the digest.

    A sender may only write there, never read or list (``organs.operations.security``), so the object is
    written as the object store lays one out (chunks, then the description that names them) without the
    store client's read-back; the stomach checks the bytes against their name before using them.
    """
    digest = digest_bytes(data)
    bucket, name, nuid = uploads_bucket_for(tract), digest.removeprefix("blake3:"), secrets.token_hex(11)
    await _within_upload_limit(tract, bucket, len(data))
    for start in range(0, len(data), _CHUNK_BYTES):
        try:
            await tract.js.publish(f"$O.{bucket}.C.{nuid}", data[start : start + _CHUNK_BYTES])
        except nats.js.errors.APIError as error:
            refusal = refusal_of(error)
            if refusal is None or refusal.cause != "limit.max_bytes":
                raise
            # Another upload filled the bucket meanwhile: the chunks stored so far expire with the bucket's age.
            raise UploadRefused(_limit_reason(tract, bucket), f"{bucket} is full: {refusal}") from None
    info = api.ObjectInfo(
        name=name,
        bucket=bucket,
        nuid=nuid,
        size=len(data),
        chunks=-(-len(data) // _CHUNK_BYTES),
        mtime=datetime.now(UTC).isoformat(),
        digest="SHA-256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode(),
        options=api.ObjectMetaOptions(max_chunk_size=_CHUNK_BYTES),
    )
    meta = f"$O.{bucket}.M.{base64.urlsafe_b64encode(name.encode()).decode()}"
    await tract.js.publish(meta, json.dumps(info.as_dict()).encode(), headers={"Nats-Rollup": "sub"})
    return digest


def uploads_bucket_for(tract: Tract) -> str:
    """The uploads bucket this connection's user writes: a named sender's own (its quota), else the shared one."""
    user = tract.settings.user
    return tract.subjects.uploads_bucket_of(user) if user in SENDERS else tract.subjects.uploads_bucket


def _limit_reason(tract: Tract, bucket: str) -> str:
    return "uploads.max_bytes" if bucket == tract.subjects.uploads_bucket else "uploads.sender_quota"


async def _within_upload_limit(tract: Tract, bucket: str, size: int) -> None:
    """Refuse at once an upload its bucket has no room for, before any chunk is stored: chunks written up to the
    limit would hold the sender's quota until they expire."""
    info = await stream_info(tract, f"OBJ_{bucket}")
    limit = info.config.max_bytes or -1
    used = info.state.bytes
    if limit > 0 and used + size > limit:
        reason = _limit_reason(tract, bucket)
        setting = "ICHOR_UPLOADS_MAX_BYTES" if reason == "uploads.max_bytes" else "ICHOR_UPLOADS_SENDER_MAX_BYTES"
        raise UploadRefused(
            reason,
            f"an upload of {size:,} bytes does not fit in {bucket}: {used:,} of its {limit:,} bytes ({setting}) are "
            f"taken by uploads of the last {UPLOADS_TTL_S / 3600:g} h",
        )


def _sender(tract: Tract) -> Signer | None:
    """The connection's own identity, which seals what it hands in: its nkey seed names who really sent it."""
    settings = tract.settings
    if not settings.nkey_file:
        return None
    return Signer.from_file(settings.user or "sender", settings.nkey_file)


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
    if len(raw) > inline_room(tract):
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
    sender = _sender(tract)
    if sender is not None:
        paste = seal_paste(paste, sender)
    outcome: asyncio.Future[Envelope] = asyncio.get_running_loop().create_future()

    async def watch(msg: Any) -> None:
        data = getattr(msg, "data", b"")
        try:
            envelope = decode(data)
        except Exception:
            return  # someone else's malformed message is not ours to judge here
        is_outcome = isinstance(envelope.payload, (Admitted, Rejected)) and envelope.payload.follow_up_of is None
        if is_outcome and envelope.trace_id == paste.trace_id and not outcome.done():
            outcome.set_result(envelope)

    subscription = await _outcomes(tract, watch)
    try:
        await tract.js.publish(
            tract.subjects.stomach_in,
            encode(paste),
            headers={"Nats-Msg-Id": paste.id, "traceparent": paste.trace, "Ichor-Kind": "paste"},
        )
        return paste, await asyncio.wait_for(outcome, timeout=timeout)
    finally:
        await subscription.unsubscribe()


async def _outcomes(tract: Tract, watch: Callable[[Any], Awaitable[None]]) -> Any:
    """Where the outcome of a paste this connection hands in arrives, followed before it is handed in.

    A sender with an identity (a secure tract) reads its own outcome subject, the only part of the tract
    its tenant may read; otherwise the outcomes are read through the stream, so one the stream dropped
    as a duplicate is never seen (a duplicate on the sender's subject is the same outcome again).
    """
    settings = tract.settings
    if settings.user and settings.nkey_file:
        subscription = await tract.nc.subscribe(tract.subjects.outcome(settings.user), cb=watch)
        await tract.nc.flush()
        return subscription
    try:
        return await follow_stream(tract, [tract.subjects.brain_in, tract.subjects.border_rejected], watch)
    except PermissionRefused as error:
        # Found before the paste is handed in: a paste whose outcome no one waits for is not sent.
        raise PermissionRefused(
            f"{error}. Handing a paste in and waiting for its outcome takes a user that may read the tract, "
            "or a sender's own identity (its nkey), which reads its own outcomes"
        ) from error


def chat_messages(outcome: Envelope) -> list[dict[str, str]]:
    """An admitted outcome's prompt as chat messages (``role``, ``content``), system first.

    The system message is the stable prefix; a host that marks cache
    breakpoints puts one after it (``CompiledPrompt.messages`` says where).
    """
    if not isinstance(outcome.payload, Admitted):
        raise ValueError(f"only an admitted outcome has a prompt; this one is {outcome.kind!r}")
    return [{"role": message.role, "content": message.content} for message in outcome.payload.prompt.messages]


async def with_stored_texts(tract: Tract, outcome: Envelope) -> Envelope:
    """``outcome`` with what it names by reference fetched in (checked against size and blake3): the goal
    (``goal_ref``) and an admitted prompt's text (``prompt.text_ref``); the references are kept. Reading them
    takes the right to read the frames object store."""
    payload = outcome.payload
    if isinstance(payload, Admitted):
        payload = await with_goal(tract, payload)
        prompt = payload.prompt
        if prompt.text_ref is not None:
            text = await fetch_text(tract, prompt.text_ref)
            payload = msgspec.structs.replace(payload, prompt=msgspec.structs.replace(prompt, text=text))
    return msgspec.structs.replace(outcome, payload=payload)


async def fetch_raw(tract: Tract, frame_id: str, timeout: float = 10.0) -> RawReply:
    """Ask the stomach for a frame's bytes as received, secrets and all, over ``<prefix>.frames.raw``.

    Only the ``operator`` user may publish there; anyone else's request is refused by the server
    (``PermissionRefused``, at once).
    """
    reply = await bus_request(tract, tract.subjects.frames_raw, encode(FrameRequest(id=frame_id)), timeout)
    return msgspec.msgpack.decode(reply.data, type=RawReply)


def frames_subject(tract: Tract) -> str:
    """Where this connection asks for frames: a sender with an identity its own tenant's subject (served only
    the frames it handed in), an anonymous client (an open tract) the shared one."""
    settings = tract.settings
    if settings.user and settings.nkey_file:
        return tract.subjects.frames_get_for(settings.user)
    return tract.subjects.frames_get


async def fetch_frame(
    tract: Tract, frame_id: str, representation: str = "compact", timeout: float = 10.0
) -> FrameReply:
    """Ask the stomach for a frame over ``<prefix>.frames.get``; a frame that does not hash to
    what it claims is ``FrameTampered``, never returned."""
    asked = FrameRequest(id=frame_id, representation="full" if representation == "full" else "compact")
    answer = await bus_request(tract, frames_subject(tract), encode(asked), timeout)
    reply = decode_frame_reply(answer.data)
    if reply.frame is not None:
        verify_frame(reply.frame, frame_id)
    return reply


async def _resolved_by_the_stomach(tract: Tract, prefix: str, timeout: float = 10.0) -> str:
    """The stomach resolves a short id (``FrameStore.resolve``) on this connection's frames subject: on a
    tenant's own, among the frames it handed in; on the shared one, among all (``FrameNotFound`` when none or
    several match)."""
    asked = FrameRequest(id=f"blake3:{prefix}")
    reply = decode_frame_reply((await bus_request(tract, frames_subject(tract), encode(asked), timeout)).data)
    if reply.frame is None or not reply.frame.id.startswith(f"blake3:{prefix}"):
        raise FrameNotFound(reply.error or f"no frame starts with {prefix}")
    return reply.frame.id


async def resolve_frame_id(tract: Tract, given: str) -> str:
    """The full id (``blake3:<64 hex>``) of the one frame whose id starts with ``given`` (at least
    ``frames_store.MIN_FRAME_PREFIX`` hex digits, with or without ``blake3:``), resolved by the stomach: for a
    tenant of a secure tract among the frames it handed in, for anyone else among all.

    ``FrameNotFound`` when none or several match, naming how many."""
    # Imported here: the stomach package brings its core along, which no other command of a host needs.
    from organs.stomach.frames_store import MIN_FRAME_PREFIX

    # A table that cuts an id short ends it with an ellipsis; what is left is the prefix.
    given_prefix = re.compile(rf"(?:blake3:)?([0-9a-f]{{{MIN_FRAME_PREFIX},64}})")
    matched = given_prefix.fullmatch(given.strip().lower().removesuffix("…").removesuffix("..."))
    if matched is None:
        raise FrameNotFound(
            f"{given!r} is not a frame id: 'blake3:' and 64 hex digits, or the first {MIN_FRAME_PREFIX} or more"
        )
    prefix = matched.group(1)
    if len(prefix) == 64:
        return f"blake3:{prefix}"
    return await _resolved_by_the_stomach(tract, prefix)
