"""Text too large for one message, kept in the frames object store and named by a ``StoredText``.

A digest whose goal alone passes the server's ``max_payload`` (a paste that is one long ask paragraph) cannot
travel as is: its envelope would be refused, and the paste dead-lettered with no outcome but the refusal. The
stomach stores such a goal once, under the hex of its blake3, in the same object store that holds the pastes,
and its digest names it (``goal_ref``); absorption and the border fetch it, check its size and digest, and work
on it as if it had come inline. The border does the same with a prompt too large to send. A missing or altered
object is a poison input (no retry brings it back); a bus error on the way is transient, as any other.
"""

from __future__ import annotations

from typing import TypeVar

import msgspec
from nats.js.errors import ObjectNotFoundError

from envelopes.ids import digest_bytes
from envelopes.types import Admitted, Digested, Payload, StoredText, Yield
from organs.errors import PoisonError
from organs.runtime.bus import INLINE_HEADROOM, Tract

__all__ = [
    "fetch_text",
    "goal_by_reference",
    "over_a_message",
    "store_text",
    "text_ref_of",
    "with_goal",
    "without_goal",
]

_UTF8 = ("utf-8", "surrogatepass")
# The most a msgpack string's length header takes beyond the one byte an empty string's does.
_STRING_HEADER_GROWTH = 4

_WithGoal = TypeVar("_WithGoal", Digested, Yield, Admitted)
_Payload = TypeVar("_Payload", bound=Payload)


def over_a_message(size: int, max_payload: int) -> bool:
    """Whether a payload of ``size`` bytes leaves too little room in a message for the envelope around it."""
    return size > max_payload - INLINE_HEADROOM


def text_ref_of(data: bytes) -> StoredText:
    digest = digest_bytes(data)
    return StoredText(name=digest.removeprefix("blake3:"), size=len(data), digest=digest)


async def store_text(tract: Tract, text: str) -> StoredText:
    """Keep ``text`` in the frames object store (once: the name is its digest) and return its reference."""
    data = text.encode(*_UTF8)
    ref = text_ref_of(data)
    store = await tract.js.object_store(tract.subjects.frames_bucket)
    try:
        await store.get_info(ref.name)
    except ObjectNotFoundError:
        await store.put(ref.name, data)
    return ref


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


async def goal_by_reference(tract: Tract, payload: Digested) -> Digested:
    """``payload`` as it can travel: unchanged when it fits a message, else with its goal stored and named."""
    if payload.goal_ref is not None:
        return payload
    goal_bytes = len(payload.goal.encode(*_UTF8))
    without_goal = len(msgspec.msgpack.encode(msgspec.structs.replace(payload, goal="")))
    if not over_a_message(without_goal + goal_bytes + _STRING_HEADER_GROWTH, int(tract.nc.max_payload)):
        return payload
    ref = await store_text(tract, payload.goal)
    return msgspec.structs.replace(payload, goal="", goal_ref=ref)


async def with_goal(tract: Tract, payload: _WithGoal) -> _WithGoal:
    """``payload`` with the goal its ``goal_ref`` names fetched into ``goal`` (the reference kept), or as it is.

    Whatever ``goal`` held beside a reference is replaced: the signatures vouch for the reference alone, so text
    put there by anyone on the way would otherwise pass for the paste's own words."""
    if payload.goal_ref is None:
        return payload
    return msgspec.structs.replace(payload, goal=await fetch_text(tract, payload.goal_ref))


def without_goal(payload: _Payload) -> _Payload:
    """``payload`` as it travels when its goal is by reference: the goal left out, the reference kept."""
    if not isinstance(payload, (Digested, Yield, Admitted)) or payload.goal_ref is None or not payload.goal:
        return payload
    return msgspec.structs.replace(payload, goal="")
