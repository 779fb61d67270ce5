"""The operator's view of dead letters: list, show, replay and purge the ``<PREFIX>_DLQ`` stream.

A dead letter is the bytes an organ could not process, kept with the headers they came with
and four of its own (``Ichor-Dlq-Reason``, ``-Organ``, ``-Subject``, ``-At``; see
``organs.runtime.dead_letters.dead_letter_stored``). Its id is its sequence in the dead-letter stream.

Replaying puts the same bytes back on the subject they failed on, so the organ processes them
again: the envelope, its id and its provenance are unchanged, but the message gets a new
``Nats-Msg-Id`` (derived from the letter, so replaying one letter twice in a row stores it
once), which the tract's duplicate window has not seen. A replayed letter leaves the
dead-letter stream unless kept; if it fails again, it comes back as a new letter.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

import msgspec
import nats.errors
from nats.js import api
from nats.js.errors import NotFoundError

from envelopes.codec import DecodeError, decode
from envelopes.ids import digest_bytes
from organs.errors import IchorError
from organs.redaction import scrub_secrets
from organs.runtime.bus import Tract, stream_info
from organs.runtime.dead_letters import CUT, WHOLE, WHOLE_BYTES, WHOLE_DIGEST

__all__ = [
    "DLQ_HEADERS",
    "DeadLetter",
    "DeadLetterNotFound",
    "Replayed",
    "dead_letter_of",
    "get_letter",
    "list_letters",
    "preview",
    "purge_letters",
    "replay_headers",
    "replay_letter",
]

REASON, ORGAN, SUBJECT, AT = "Ichor-Dlq-Reason", "Ichor-Dlq-Organ", "Ichor-Dlq-Subject", "Ichor-Dlq-At"
DLQ_HEADERS = (REASON, ORGAN, SUBJECT, AT, CUT, WHOLE, WHOLE_BYTES, WHOLE_DIGEST)
# The server's own headers on a stored or delivered message: never carried into a replay.
STREAM_NOT_FOUND = 10059
_SERVER_HEADERS = ("Nats-Msg-Id", "Nats-Msg-Size", "Nats-Expected-Stream", "Nats-Expected-Last-Sequence")


class DeadLetterNotFound(IchorError, LookupError):
    """No dead letter has this id (never stored, purged, or replayed)."""


class DeadLetter(msgspec.Struct, frozen=True):
    """One dead letter as ``ichor dlq ls`` lists it."""

    id: int
    organ: str
    reason: str
    at: str
    subject: str
    """The subject it failed on, where ``replay`` puts it back."""
    size: int
    headers: dict[str, str] = {}


class Replayed(msgspec.Struct, frozen=True):
    id: int
    subject: str
    msg_id: str
    sequence: int
    """Its new place in the tract stream."""
    kept: bool


def dead_letter_of(sequence: int, headers: Mapping[str, str], size: int) -> DeadLetter:
    return DeadLetter(
        id=sequence,
        organ=headers.get(ORGAN, "?"),
        reason=headers.get(REASON, ""),
        at=headers.get(AT, ""),
        subject=headers.get(SUBJECT, ""),
        size=size,
        headers=dict(headers),
    )


def replay_headers(letter: DeadLetter, dlq_stream: str) -> dict[str, str]:
    """The headers a letter came with, without the dead-letter ones, under a message id of its own."""
    carried = {
        key: value
        for key, value in letter.headers.items()
        if key not in DLQ_HEADERS and key not in _SERVER_HEADERS and not key.startswith("Nats-")
    }
    carried["Nats-Msg-Id"] = f"replay-{dlq_stream}-{letter.id}"
    return carried


def preview(data: bytes, limit: int, *, redact: bool = True) -> tuple[str, str]:
    """How to show ``data`` safely: (``envelope``, its JSON) if it decodes as one, else (``text``, the
    text with control characters escaped), else (``hex``, a hex dump); at most ``limit`` bytes of it.
    Credentials are redacted unless ``redact`` is off (the operator's ``--raw``)."""
    try:
        envelope = msgspec.to_builtins(decode(data))
        shown, form = msgspec.json.encode(_scrubbed(envelope) if redact else envelope).decode(), "envelope"
    except DecodeError:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            more = f"\n… ({len(data):,} bytes in all)" if len(data) > limit else ""
            return "hex", _hex_dump(data[:limit]) + more
        shown, form = _escaped(scrub_secrets(text) if redact else text)[: limit + 1], "text"
    if len(shown) > limit:
        shown = shown[:limit] + f"… ({len(data):,} bytes in all)"
    return form, shown


def _scrubbed(value: Any) -> Any:
    # Each string on its own: in JSON a line break is two characters that hide where a credential starts.
    if isinstance(value, str):
        return scrub_secrets(value)
    if isinstance(value, dict):
        return {key: _scrubbed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrubbed(item) for item in value]
    return value


_PLAIN = frozenset(string.printable) - frozenset("\x0b\x0c\r")


def _escaped(text: str) -> str:
    return "".join(char if char in _PLAIN or char.isprintable() else repr(char)[1:-1] for char in text)


def _hex_dump(data: bytes, width: int = 16) -> str:
    lines = []
    for offset in range(0, len(data), width):
        chunk = data[offset : offset + width]
        shown = "".join(chr(byte) if 32 <= byte < 127 else "." for byte in chunk)
        lines.append(f"{offset:08x}  {chunk.hex(' '):<{width * 3}} {shown}")
    return "\n".join(lines)


async def list_letters(tract: Tract, organ: str | None = None) -> list[DeadLetter]:
    """Every dead letter (of ``organ``), oldest first, read as headers only: the bytes stay on the server."""
    subjects = tract.subjects
    subject = subjects.dlq(organ) if organ else subjects.dlq_all
    info = await stream_info(tract, subjects.dlq_stream, subjects_filter=subject)
    total = sum((info.state.subjects or {}).values()) if organ else info.state.messages
    if total == 0:
        return []
    subscription = await tract.js.pull_subscribe(
        subject,
        stream=subjects.dlq_stream,
        config=api.ConsumerConfig(ack_policy=api.AckPolicy.NONE, headers_only=True, inactive_threshold=10.0),
    )
    letters: list[DeadLetter] = []
    try:
        while len(letters) < total:
            try:
                batch = await subscription.fetch(min(256, total - len(letters)), timeout=2.0)
            except nats.errors.TimeoutError:
                break  # purged or replayed meanwhile
            for msg in batch:
                headers = dict(msg.headers or {})
                size = int(headers.pop("Nats-Msg-Size", "0") or 0)
                letters.append(dead_letter_of(msg.metadata.sequence.stream, headers, size))
    finally:
        await subscription.unsubscribe()
    return letters


async def get_letter(tract: Tract, letter_id: int) -> tuple[DeadLetter, bytes]:
    """One dead letter with its bytes."""
    try:
        stored = await tract.js.get_msg(tract.subjects.dlq_stream, letter_id)
    except NotFoundError as error:
        if error.err_code == STREAM_NOT_FOUND:
            raise
        raise DeadLetterNotFound(
            f"no dead letter {letter_id} in {tract.subjects.dlq_stream} (see ichor dlq ls)"
        ) from None
    data = stored.data or b""
    return dead_letter_of(letter_id, dict(stored.headers or {}), len(data)), data


async def replay_letter(tract: Tract, letter_id: int, *, keep: bool = False) -> Replayed:
    """Publish a dead letter's bytes back to the subject it failed on, then (unless ``keep``) remove it."""
    letter, data = await get_letter(tract, letter_id)
    if letter.subject not in tract.subjects.tract_subjects:
        # Only the tract's own inputs go back: a letter naming any other subject was not written by an organ.
        raise IchorError(
            f"dead letter {letter_id} names {letter.subject or 'no subject'} ({SUBJECT}), not one of the tract's "
            "subjects; not replayed"
        )
    if CUT in letter.headers:
        data = await _whole_input(tract, letter)
    headers = replay_headers(letter, tract.subjects.dlq_stream)
    ack = await tract.js.publish(letter.subject, data, headers=headers)
    if not keep:
        await tract.js.delete_msg(tract.subjects.dlq_stream, letter_id)
    return Replayed(id=letter_id, subject=letter.subject, msg_id=headers["Nats-Msg-Id"], sequence=ack.seq, kept=keep)


async def _whole_input(tract: Tract, letter: DeadLetter) -> bytes:
    """The whole bytes of a letter kept cut, from the place in its stream it names, checked by digest."""
    stream, _, sequence = letter.headers.get(WHOLE, "").partition(" ")
    try:
        stored = await tract.js.get_msg(stream, int(sequence)) if stream and sequence.isdigit() else None
    except NotFoundError:
        stored = None
    data = stored.data or b"" if stored is not None else b""
    if stored is None or digest_bytes(data) != letter.headers.get(WHOLE_DIGEST):
        raise IchorError(
            f"dead letter {letter.id} was kept cut ({CUT}) and its whole input is no longer at "
            f"{letter.headers.get(WHOLE, 'a known place')}; not replayed"
        )
    return data


async def purge_letters(tract: Tract, organ: str | None = None) -> int:
    """Remove every dead letter (of ``organ``); how many were removed."""
    subjects = tract.subjects
    before = await stream_info(tract, subjects.dlq_stream)
    if organ:
        await tract.js.purge_stream(subjects.dlq_stream, subject=subjects.dlq(organ))
    else:
        await tract.js.purge_stream(subjects.dlq_stream)
    after = await stream_info(tract, subjects.dlq_stream)
    return before.state.messages - after.state.messages
