"""Dead letters: an input the tract gives up on, kept with its bytes, its headers and why.

``dead_letter`` stores an input in hand. ``ExhaustedInputs`` catches the inputs no
worker held to the end: JetStream delivers an input at most ``ICHOR_MAX_DELIVER``
times, and if its last delivery is never settled (the worker holding it was
stopped while the server refused its dead letter, or died), the server only
publishes a max-deliveries advisory and forgets it. The tract keeps those
advisories in a stream (``Subjects.exhausted_stream``); each worker reads its own
consumer's, fetches the input from the tract stream by its sequence and
dead-letters it. The dead letter's ``Nats-Msg-Id`` is derived from the input's
place in its stream, so an input dead-lettered by both paths is stored once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping

import msgspec
import nats.errors
import nats.js.errors
from nats.aio.msg import Msg

from envelopes.ids import digest_bytes, utc_now
from organs.redaction import scrub_secrets
from organs.runtime.bus import Tract
from organs.runtime.dead_letter_outcomes import SealedBy, dead_letter_fields, publish_rejection_or_log
from organs.runtime.logs import get_logger
from organs.runtime.payload import header_block_size, message_size
from organs.runtime.pulling import FETCH_ERRORS, FETCH_EXPIRY_S, sleep_unless
from organs.runtime.refusals import named_by_exhaustion

__all__ = ["CUT", "WHOLE", "ExhaustedInputs", "dead_letter", "dead_letter_stored", "within_max_payload"]

# The headers of a dead letter too large for one message: what was cut, and where the whole input is.
CUT, WHOLE, WHOLE_BYTES, WHOLE_DIGEST = "Ichor-Dlq-Cut", "Ichor-Dlq-Whole", "Ichor-Dlq-Bytes", "Ichor-Dlq-Digest"

_RETRY_S = 1.0


def _header_safe(text: str, limit: int = 1024) -> str:
    # NATS header values end at a line break; keep the reason on one line.
    return " ".join(text.split())[:limit]


async def dead_letter_stored(
    tract: Tract,
    organ: str,
    *,
    subject: str,
    data: bytes,
    headers: Mapping[str, str] | None,
    place: tuple[str, int] | None,
    reason: str,
) -> int:
    """Publish an input's bytes and headers, plus a reason, to ``<prefix>.dlq.<organ>``; returns the letter's id.

    ``place`` (stream, sequence) is where the input is stored; its dead letter is then stored once however
    often it is sent (a repeat is answered with the first one's sequence, its id)."""
    sent = dict(headers or {})
    sent.pop("Nats-Msg-Id", None)
    sent.update(
        {
            "Ichor-Dlq-Reason": _header_safe(scrub_secrets(reason)),
            "Ichor-Dlq-Organ": organ,
            "Ichor-Dlq-Subject": subject,
            "Ichor-Dlq-At": utc_now(),
        }
    )
    if place is not None:
        sent["Nats-Msg-Id"] = f"dlq-{organ}-{place[0]}-{place[1]}"
    kept, sent = within_max_payload(data, sent, place, tract.nc.max_payload)
    stored = await tract.js.publish(tract.subjects.dlq(organ), kept, headers=sent)
    return int(stored.seq)


def within_max_payload(
    data: bytes, headers: dict[str, str], place: tuple[str, int] | None, max_payload: int
) -> tuple[bytes, dict[str, str]]:
    """A dead letter that fits one message: as it is, or cut to its first bytes with the cut stated.

    An input just under ``max_payload`` fits no longer once the dead letter's headers join it; sent as is,
    the server would refuse it. Cut, it names the whole input's size, digest and place in its stream (where
    it stays, so ``ichor dlq replay`` sends the whole bytes). Headers the input came with that leave no room
    for its first bytes are dropped, and the cut says so.
    """
    if message_size(data, headers) <= max_payload:
        return data, headers
    own = {key: value for key, value in headers.items() if key.startswith("Ichor-Dlq-") or key == "Nats-Msg-Id"}
    stated = {**headers, WHOLE_BYTES: str(len(data)), WHOLE_DIGEST: digest_bytes(data)}
    if place is not None:
        stated[WHOLE] = f"{place[0]} {place[1]}"
    dropped = ""
    if header_block_size(stated) > max_payload // 2:
        dropped = f"; the {header_block_size(headers) - header_block_size(own)} bytes of headers it came with dropped"
        stated = {**own, **{key: stated[key] for key in (WHOLE_BYTES, WHOLE_DIGEST, WHOLE) if key in stated}}
    where = f"stays in stream {place[0]} at sequence {place[1]}" if place is not None else "is kept nowhere else"

    def cut(kept: int) -> str:
        return (
            f"kept the first {kept} of {len(data)} bytes: with the dead letter's headers the input exceeds the "
            f"server's max_payload ({max_payload}); the whole input {where}{dropped}"
        )

    # Sized with the widest count first: the count of what is kept is no wider, so the letter fits.
    stated[CUT] = cut(len(data))
    kept = data[: max(0, max_payload - header_block_size(stated))]
    stated[CUT] = cut(len(kept))
    return kept, stated


async def dead_letter(tract: Tract, organ: str, msg: Msg, reason: str) -> int:
    """Dead-letter the input ``msg`` (see ``dead_letter_stored``); returns the letter's id."""
    place = (msg.metadata.stream, msg.metadata.sequence.stream) if msg.reply else None
    return await dead_letter_stored(
        tract, organ, subject=msg.subject, data=msg.data, headers=msg.headers, place=place, reason=reason
    )


class _MaxDeliveries(msgspec.Struct):
    """The fields of the server's ``io.nats.jetstream.advisory.v1.max_deliver`` advisory this reads."""

    stream: str
    consumer: str
    stream_seq: int
    deliveries: int


_decode_advisory = msgspec.json.Decoder(_MaxDeliveries).decode


class ExhaustedInputs:
    """Dead-letters each input of one durable that ran out of deliveries with its last one unsettled."""

    def __init__(
        self,
        tract: Tract,
        organ: str,
        durable: str,
        on_dead_lettered: Callable[[], None],
        last_refusal: Callable[[], str] = lambda: "",
        sealed_by: SealedBy | None = None,
    ) -> None:
        self.tract = tract
        self.sealed_by = sealed_by
        # The worker's last refusal by the server, which names deliveries an outage spent.
        self.last_refusal = last_refusal
        self.organ = organ
        self.durable = durable
        self.on_dead_lettered = on_dead_lettered
        self.log = get_logger(organ)

    async def run(self, stop: asyncio.Event) -> None:
        subjects = self.tract.subjects
        subscription = None
        while not stop.is_set():
            try:
                if subscription is None:
                    subscription = await self.tract.js.pull_subscribe(
                        subjects.exhausted(self.durable),
                        durable=f"{self.durable}-exhausted",
                        stream=subjects.exhausted_stream,
                    )
                advisories = await subscription.fetch(8, timeout=FETCH_EXPIRY_S)
            except (TimeoutError, nats.errors.TimeoutError):
                continue
            except FETCH_ERRORS as error:
                self.log.warning("exhausted.fetch_failed", error=repr(error))
                subscription = None
                await sleep_unless(stop, _RETRY_S)
                continue
            for advisory in advisories:
                with contextlib.suppress(*FETCH_ERRORS):
                    await self._settle(advisory)
        if subscription is not None:
            with contextlib.suppress(*FETCH_ERRORS):
                await subscription.unsubscribe()

    async def _settle(self, advisory: Msg) -> None:
        try:
            notice = _decode_advisory(advisory.data)
        except msgspec.DecodeError as error:
            self.log.error("exhausted.unreadable_advisory", error=str(error))
            await advisory.term()
            return
        try:
            stored = await self.tract.js.get_msg(notice.stream, notice.stream_seq)
        except nats.js.errors.NotFoundError:
            # Aged out of the stream (or purged) before any worker read the advisory: nothing left to keep.
            self.log.error("exhausted.input_gone", stream=notice.stream, sequence=notice.stream_seq)
            await advisory.ack()
            return
        except FETCH_ERRORS:
            await advisory.nak(delay=_RETRY_S)
            return
        reason = named_by_exhaustion(
            f"delivered {notice.deliveries} times (ICHOR_MAX_DELIVER) and its last delivery was never settled: "
            "the worker holding it stopped or died before the input was handled or dead-lettered",
            self.last_refusal(),
        )
        try:
            letter = await dead_letter_stored(
                self.tract,
                self.organ,
                subject=stored.subject or "",
                data=stored.data or b"",
                headers=stored.headers,
                place=(notice.stream, notice.stream_seq),
                reason=reason,
            )
            rejection = await publish_rejection_or_log(
                self.tract,
                self.organ,
                data=stored.data or b"",
                headers=stored.headers,
                reason=reason,
                letter_id=letter,
                # A nak'ed advisory comes back every second, with no bound: the letter is sent again only for
                # a bus that was away, not for a tract that refuses the rejection.
                retry=True,
                retry_refusals=False,
                log=self.log,
                sealed_by=self.sealed_by,
            )
        except FETCH_ERRORS:
            await advisory.nak(delay=_RETRY_S)
            return
        await advisory.ack()
        self.on_dead_lettered()
        self.log.error(
            "envelope.dead_lettered",
            **dead_letter_fields(rejection),
            outcome="dead_letter",
            reason=reason,
            subject=stored.subject,
            sequence=notice.stream_seq,
            bytes=len(stored.data or b""),
        )
