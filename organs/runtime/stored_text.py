"""Text too large for one message, kept in the frames object store and named by a ``StoredText``.

A digest that passes the server's ``max_payload`` (a paste that is one long ask paragraph, or evidence served
whole under a large budget) cannot travel as is: its envelope would be refused, and the paste dead-lettered with
no outcome but the refusal. The stomach stores the digest's largest texts, the goal and frames' served contents,
once each under the hex of their blake3, in the same object store that holds the pastes, until the digest fits;
the digest names each (``goal_ref``, ``Frame.content_ref``), and a frame-index record too large for a message
names its compact frame's content the same way. Absorption and the border fetch what they read, check its size
and digest, and work on it as if it had come inline. The border does the same with a prompt too large to send.
A missing or altered object is a poison input (no retry brings it back); a bus error on the way is transient.
"""

from __future__ import annotations

from typing import TypeVar

import msgspec
from nats.js.errors import ObjectNotFoundError
from nats.js.object_store import ObjectStore

from envelopes.ids import digest_bytes
from envelopes.types import Admitted, Digested, Frame, Payload, StoredText, Yield
from organs.errors import PoisonError
from organs.runtime.bus import Tract, inline_room

__all__ = [
    "as_it_travels",
    "digest_by_reference",
    "fetch_text",
    "frame_by_reference",
    "over_a_message",
    "put_once",
    "store_text",
    "text_ref_of",
    "with_frame_text",
    "with_frame_texts",
    "with_goal",
]

_UTF8 = ("utf-8", "surrogatepass")

_WithGoal = TypeVar("_WithGoal", Digested, Yield, Admitted)
_WithFrames = TypeVar("_WithFrames", Digested, Yield)
# Where ``digest_by_reference`` ranks the goal among a digest's frames.
_GOAL_INDEX = -1
_Payload = TypeVar("_Payload", bound=Payload)


def over_a_message(tract: Tract, size: int) -> bool:
    """Whether a payload of ``size`` bytes leaves too little room in a message for the envelope around it."""
    return size > inline_room(tract)


def text_ref_of(data: bytes) -> StoredText:
    digest = digest_bytes(data)
    return StoredText(name=digest.removeprefix("blake3:"), size=len(data), digest=digest)


async def store_text(tract: Tract, text: str) -> StoredText:
    """Keep ``text`` in the frames object store (once: the name is its digest) and return its reference."""
    data = text.encode(*_UTF8)
    ref = text_ref_of(data)
    await put_once(await tract.js.object_store(tract.subjects.frames_bucket), ref.name, data)
    return ref


async def put_once(store: ObjectStore, name: str, data: bytes) -> None:
    """Put ``data`` under ``name`` unless it is there: a name is its content's digest, so what is there is it."""
    try:
        await store.get_info(name)
    except ObjectNotFoundError:
        await store.put(name, data)


async def fetch_text(tract: Tract, ref: StoredText) -> str:
    """The text ``ref`` names, checked against its size and digest."""
    bucket = tract.subjects.frames_bucket
    store = await tract.js.object_store(bucket)
    try:
        result = await store.get(ref.name)
    except ObjectNotFoundError as error:
        raise PoisonError(f"stored text {ref.digest} is not in the {bucket} object store") from error
    data = bytes(result.data or b"")
    if len(data) != ref.size or digest_bytes(data) != ref.digest:
        raise PoisonError(
            f"stored text {ref.name} in the {bucket} object store is {len(data):,} bytes digesting to "
            f"{digest_bytes(data)}, not the {ref.size:,} bytes of {ref.digest} it is named by"
        )
    return data.decode(*_UTF8)


async def frame_by_reference(tract: Tract, frame: Frame) -> Frame:
    """``frame`` with its served content stored and named (``content_ref``), as it travels; as it is when it serves
    none or names it already."""
    if frame.content is None or frame.content_ref is not None:
        return frame
    return msgspec.structs.replace(frame, content="", content_ref=await store_text(tract, frame.content))


async def digest_by_reference(tract: Tract, payload: Digested) -> Digested:
    """``payload`` as it can travel: unchanged when it fits a message, else with its largest texts (the goal, the
    frames' served contents) stored and named, the largest first, until what is left fits."""
    size = len(msgspec.msgpack.encode(payload))
    if not over_a_message(tract, size):
        return payload
    goal, goal_ref, frames = payload.goal, payload.goal_ref, list(payload.frames)
    for text_bytes, index in sorted(_inline_text_sizes(payload), reverse=True):
        if not over_a_message(tract, size):
            break
        # What is left in the text's place is its reference, well within the headroom a message keeps.
        size -= text_bytes
        if index == _GOAL_INDEX:
            goal, goal_ref = "", await store_text(tract, goal)
        else:
            frames[index] = await frame_by_reference(tract, frames[index])
    return msgspec.structs.replace(payload, goal=goal, goal_ref=goal_ref, frames=tuple(frames))


def _inline_text_sizes(payload: Digested) -> list[tuple[int, int]]:
    """``(UTF-8 bytes, index)`` of each text a digest carries inline: its frames' contents by their index, and its
    goal as ``_GOAL_INDEX``."""
    sizes = [(len(frame.content.encode(*_UTF8)), index) for index, frame in enumerate(payload.frames) if frame.content]
    if payload.goal_ref is None and payload.goal:
        sizes.append((len(payload.goal.encode(*_UTF8)), _GOAL_INDEX))
    return sizes


async def with_frame_text(tract: Tract, frame: Frame) -> Frame:
    """``frame`` with the content its ``content_ref`` names fetched in (the reference kept), or as it is. Whatever
    ``content`` held beside a reference is replaced, as for a goal."""
    if frame.content_ref is None:
        return frame
    return msgspec.structs.replace(frame, content=await fetch_text(tract, frame.content_ref))


async def with_frame_texts(tract: Tract, payload: _WithFrames) -> _WithFrames:
    """``payload`` with every frame's content by reference fetched in; the same object when none is."""
    if all(frame.content_ref is None for frame in payload.frames):
        return payload
    frames = tuple([await with_frame_text(tract, frame) for frame in payload.frames])
    return msgspec.structs.replace(payload, frames=frames)


async def with_goal(tract: Tract, payload: _WithGoal) -> _WithGoal:
    """``payload`` with the goal its ``goal_ref`` names fetched into ``goal`` (the reference kept), or as it is.

    Whatever ``goal`` held beside a reference is replaced: the signatures vouch for the reference alone, so text
    put there by anyone on the way would otherwise pass for the paste's own words."""
    if payload.goal_ref is None:
        return payload
    return msgspec.structs.replace(payload, goal=await fetch_text(tract, payload.goal_ref))


def as_it_travels(payload: _Payload) -> _Payload:
    """``payload`` as it travels when its goal or frames are by reference: those texts left out, the references
    kept."""
    if isinstance(payload, (Digested, Yield)) and any(frame.travelling is not frame for frame in payload.frames):
        payload = msgspec.structs.replace(payload, frames=tuple(frame.travelling for frame in payload.frames))
    if not isinstance(payload, (Digested, Yield, Admitted)) or payload.goal_ref is None or not payload.goal:
        return payload
    return msgspec.structs.replace(payload, goal="")
