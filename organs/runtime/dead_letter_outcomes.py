"""Every input an organ dead-letters gets an outcome: a ``rejected`` envelope on ``<prefix>.border.rejected``.

A host waits for the outcome of its paste by trace id (``organs.client``); without this, a paste that the
stomach, the absorption or the border could not process left it waiting out its timeout. The rejection
carries the input's trace (so the host's wait ends at once), its envelope id where it could be read, and
the dead letter's reason and id (``ichor dlq show ID``).

What is read from an input that does not decode: its ``id`` and ``trace`` fields if it is a msgpack or
JSON map that holds valid ones, else its ``traceparent`` header, else nothing (a fresh trace: the
rejection still records the dead letter for whoever tails the stream).

The rejection's id derives from the dead letter's id, which is the same however often the input is
dead-lettered (``organs.runtime.dead_letters``), so JetStream's duplicate window stores it once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec
import nats.js.errors

from envelopes.codec import DecodeError, decode, encode
from envelopes.ids import child_traceparent, derive_id, digest_bytes, utc_now
from envelopes.types import (
    ENVELOPE_ID_PATTERN,
    SCHEMA_VERSION,
    TRACEPARENT_PATTERN,
    DeadLetterNote,
    DeferredNotice,
    Digested,
    Envelope,
    OrganSecretion,
    ProvenanceChain,
    Reason,
    Rejected,
    Step,
    SystemInternal,
    Yield,
)
from organs.anatomy import organ_named
from organs.runtime.bus import Tract
from organs.runtime.logs import message_fields
from organs.runtime.pulling import BUS_ERRORS
from organs.runtime.refusals import describe_bus_error, refusal_of

__all__ = [
    "DEAD_LETTERED",
    "ReadInput",
    "SealedBy",
    "dead_letter_fields",
    "dead_letter_rejection",
    "publish_rejection_or_log",
    "read_input",
]

DEAD_LETTERED = "dead_lettered"
"""The reason code of a rejection that stands for a dead letter."""

SealedBy = Callable[[Envelope], str | None]
"""An organ's rule for who sealed an input (``organs.signing.sealed_by`` with its trusted keys), handed to its
workers: the rejection of the input's dead letter is copied to that sender's own outcome subject, the only one
its tenant may read."""


@dataclass(frozen=True)
class ReadInput:
    """What could be read of a dead-lettered input: the whole envelope, or only its id and trace."""

    envelope: Envelope | None
    input_id: str | None
    trace: str | None


def _valid(value: Any, pattern: Any) -> str | None:
    return value if isinstance(value, str) and pattern.fullmatch(value) else None


def _loose_map(data: bytes) -> Mapping[str, Any]:
    for loads in (msgspec.msgpack.decode, msgspec.json.decode):
        try:
            value = loads(data)
        except (msgspec.DecodeError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return {}


def read_input(data: bytes, headers: Mapping[str, str] | None) -> ReadInput:
    """The envelope ``data`` holds, or what of its id and trace can be read (pure)."""
    try:
        envelope = decode(data)
    except DecodeError:
        envelope = None
    if envelope is not None:
        return ReadInput(envelope, envelope.id, envelope.trace)
    fields = _loose_map(data)
    trace = _valid(fields.get("trace"), TRACEPARENT_PATTERN) or _valid(
        (headers or {}).get("traceparent"), TRACEPARENT_PATTERN
    )
    return ReadInput(None, _valid(fields.get("id"), ENVELOPE_ID_PATTERN), trace)


def _follow_up_of(envelope: Envelope | None) -> str | None:
    # A deferred paste's full digest failing is the follow-up's outcome, not the paste's first one.
    payload = envelope.payload if envelope is not None else None
    if isinstance(payload, DeferredNotice):
        return payload.deferred_envelope_id or None
    if isinstance(payload, Digested | Yield):
        return payload.follow_up_of
    return None


def dead_letter_rejection(
    read: ReadInput, data: bytes, *, organ: str, instance: str, letter_id: int, reason: str, now: str
) -> Envelope:
    """The rejection that tells the input's host that ``organ`` dead-lettered it as letter ``letter_id`` (pure)."""
    wire_name = organ_named(organ).wire_name
    rejection_id = derive_id(f"dlq/{organ}/{letter_id}", wire_name, DEAD_LETTERED)
    step = Step(stage="rejected", organ=wire_name, instance=instance, at=now, envelope_id=rejection_id)
    envelope = read.envelope
    if envelope is not None:
        chain = envelope.chain.append(step)
    else:
        # Its origin could not be read: the chain says who speaks for it, and the digest is of the bytes kept.
        chain = ProvenanceChain(
            origin=SystemInternal(component=f"{organ} dead letters"), input_digest=digest_bytes(data), steps=(step,)
        )
    message = f"the {organ} dead-lettered this input (ichor dlq show {letter_id}): {reason}"
    return Envelope(
        v=SCHEMA_VERSION,
        id=rejection_id,
        kind="rejected",
        source=wire_name,
        dest="brain",
        provenance=OrganSecretion(organ=wire_name, instance=instance),
        chain=chain,
        tier=None,
        # No trace to continue: one of its own, derived like its id, so a repeat is the same envelope.
        trace=child_traceparent(read.trace or f"00-{rejection_id}-{rejection_id[:16]}-01", rejection_id),
        created_at=now,
        payload=Rejected(
            reasons=(Reason(code=DEAD_LETTERED, message=message),),
            follow_up_of=_follow_up_of(envelope),
            dead_letter=DeadLetterNote(organ=organ, id=letter_id, reason=reason, input_id=read.input_id),
        ),
        session=envelope.session if envelope is not None else None,
    )


async def publish_rejection_or_log(
    tract: Tract,
    organ: str,
    *,
    data: bytes,
    headers: Mapping[str, str] | None,
    reason: str,
    letter_id: int,
    retry: bool,
    log: Any,
    retry_refusals: bool = True,
    sealed_by: SealedBy | None = None,
) -> Envelope | None:
    """Publish the rejection of an input ``organ`` dead-lettered as ``letter_id`` to ``<prefix>.border.rejected``
    (and to the outcome subject of the sender ``sealed_by`` names, on a secure tract), before the input is let
    go, and return it once the stream has stored it.

    A bus error is raised when ``retry`` (the input comes back, is dead-lettered again, stored once, and
    rejected anew), a refusal (the tract at its limit) only if ``retry_refusals`` too: a caller whose retries are
    not bounded by the duplicate window must not send its letter again and again. Otherwise the dead letter is
    kept all the same and the lost outcome is logged (``None``)."""
    read = read_input(data, headers)
    rejection = dead_letter_rejection(
        read, data, organ=organ, instance=tract.settings.instance, letter_id=letter_id, reason=reason, now=utc_now()
    )
    sender = None if sealed_by is None or read.envelope is None else sealed_by(read.envelope)
    try:
        await _publish_rejection(tract, rejection, sender)
        return rejection
    except BUS_ERRORS as error:
        if retry and (retry_refusals or refusal_of(error) is None):
            raise
        lost: BaseException = error
    except nats.js.errors.APIError as error:
        lost = error
    log.error(
        "envelope.outcome_unpublished",
        **message_fields(headers),
        dead_letter_id=letter_id,
        outcome="dead_letter",
        error=describe_bus_error(lost),
    )
    return None


async def _publish_rejection(tract: Tract, rejection: Envelope, sender: str | None) -> None:
    encoded = encode(rejection)
    sent = {"traceparent": rejection.trace, "Ichor-Kind": rejection.kind}
    await tract.js.publish(tract.subjects.border_rejected, encoded, headers={**sent, "Nats-Msg-Id": rejection.id})
    if sender is not None:
        copy = {**sent, "Nats-Msg-Id": f"{rejection.id}.{sender}"}
        await tract.js.publish(tract.subjects.outcome(sender), encoded, headers=copy)


def dead_letter_fields(rejection: Envelope | None) -> dict[str, Any]:
    """The keys a dead letter's log line carries: the input's id and trace, the letter's id, its rejection's id."""
    if rejection is None:
        return {}
    note = rejection.payload.dead_letter if isinstance(rejection.payload, Rejected) else None
    return {
        "envelope_id": note.input_id if note is not None else None,
        "trace_id": rejection.trace_id,
        "dead_letter_id": note.id if note is not None else None,
        "rejection_id": rejection.id,
    }
