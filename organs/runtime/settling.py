"""What becomes of one input in hand: handled, its outputs published and stored, then acked; or retried (nak'ed,
or held while the server has no room for its outputs); or dead-lettered with its bytes and a reason, and its
host told by a rejection. ``Worker`` (``organs.runtime.worker``) fetches the inputs and hands each one here.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from typing import Any

import nats.errors
from nats.aio.msg import Msg

from envelopes.codec import DecodeError, decode, encode
from envelopes.types import Envelope
from organs.errors import PoisonError, TransientError
from organs.redaction import scrub_secrets
from organs.runtime.bus import Tract
from organs.runtime.dead_letter_outcomes import dead_letter_fields, publish_rejection_or_log
from organs.runtime.dead_letters import dead_letter
from organs.runtime.logs import envelope_fields, get_logger, message_fields
from organs.runtime.pulling import BUS_ERRORS, BUS_OR_API_ERRORS, BUS_OR_STALL_ERRORS
from organs.runtime.refusals import (
    describe_bus_error,
    exhaustion_of,
    named_by_exhaustion,
    refusal_of,
    unconfirmed_write,
)
from organs.runtime.specs import Delivery, Output, SettledObserver, WorkerSpec, WorkerStats
from organs.runtime.tracing import hop_span

__all__ = ["InputSettler"]

# How long a publish ack or an ack confirmation may take before the input is
# nak'ed: a stream answers in milliseconds, so a longer wait means the broker is
# away, and the input is better retried than waited on.
CONFIRM_TIMEOUT_S = 3.0
# How often an input on its last delivery tries again to store its dead letter.
DEAD_LETTER_RETRY_S = 1.0
# How soon an input held while the server has no room for its outputs is tried again: doubling, up to a few
# seconds, so that writes resume within seconds of room returning and a long outage logs little.
HOLD_RETRY_S = 1.0
HOLD_MAX_S = 4.0


class InputSettler:
    """Settles each input of one ``WorkerSpec`` it is handed (``_process``); the worker loop that fetches them
    is its subclass, ``Worker``."""

    def __init__(self, tract: Tract, spec: WorkerSpec) -> None:
        self.tract = tract
        self.spec = spec
        self.stats = WorkerStats()
        self.log = get_logger(spec.organ)
        self.on_settled: SettledObserver | None = None
        # Inputs whose last attempt the server refused for want of room: kept in hand and tried again.
        self._held: set[int] = set()
        self._wake_held = asyncio.Event()
        self._attempts_held: dict[int, asyncio.Future[None]] = {}

    def _wake_held_inputs(self) -> None:
        """Try every held input again at once, cutting short an attempt that waits on the old connection."""
        woken, self._wake_held = self._wake_held, asyncio.Event()
        woken.set()
        for attempt in self._attempts_held.values():
            attempt.cancel()

    async def _process(self, msg: Msg) -> None:
        try:
            await self._attempt(msg)
            holds = 0
            while id(msg) in self._held:
                # Heartbeaten meanwhile like any input in hand: an outage spends none of its deliveries.
                self._held.discard(id(msg))
                # A reconnection (the server restarted, its storage reopened) wakes it at once.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake_held.wait(), timeout=min(HOLD_MAX_S, HOLD_RETRY_S * 2**holds))
                holds += 1
                await self._attempt_again(msg)
        finally:
            # Cancelled while held (the worker stopping): no later input may inherit the mark.
            self._held.discard(id(msg))

    async def _attempt_again(self, msg: Msg) -> None:
        """Another attempt of a held input; a reconnection cuts it short (what it waits for was lost with the old
        connection, and would take the JetStream timeout to fail) and it is tried again at once."""
        attempt = asyncio.ensure_future(self._attempt(msg))
        self._attempts_held[id(msg)] = attempt
        try:
            await attempt
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            self._held.add(id(msg))
        finally:
            self._attempts_held.pop(id(msg), None)

    async def _attempt(self, msg: Msg) -> None:
        started = time.perf_counter()
        try:
            handled = await self._handle(msg, started)
            if handled is not None:
                envelope, outputs, futures = handled
                await self._settle(msg, envelope, futures, started, outputs)
        except Exception as error:
            # Whatever slipped past the handling above, the worker lives on and the
            # input comes back after its ack wait; it is never acked, so never lost.
            self.stats.errors += 1
            self.stats.last_error = scrub_secrets(f"unexpected {type(error).__name__}: {error}")
            self.log.exception(
                "envelope.unexpected_error", **message_fields(msg.headers), outcome="unacked", error=repr(error)
            )

    async def _handle(
        self, msg: Msg, started: float
    ) -> tuple[Envelope, Sequence[Output], list[asyncio.Future[Any]]] | None:
        delivered, limit = msg.metadata.num_delivered, self.tract.settings.max_deliver
        if delivered >= limit:
            # The server gives no delivery after this one; an input that killed its worker on every
            # earlier delivery would kill it again and then sit unsettled forever.
            await self._poison(msg, None, self._out_of_deliveries(delivered, limit), started)
            return None
        return await self._handle_delivery(msg, started)

    async def _handle_delivery(
        self, msg: Msg, started: float
    ) -> tuple[Envelope, Sequence[Output], list[asyncio.Future[Any]]] | None:
        """An input the server may deliver again: decoded, handled and its outputs published."""
        try:
            envelope = decode(msg.data)
        except DecodeError as error:
            await self._poison(msg, None, f"undecodable envelope: {error}", started)
            return None
        metadata = msg.metadata
        delivery = Delivery(
            subject=msg.subject,
            num_pending=metadata.num_pending or 0,
            stream_sequence=metadata.sequence.stream,
            size=len(msg.data),
        )
        self.stats.last_pending = delivery.num_pending
        self.log.debug(
            "envelope.received",
            **envelope_fields(envelope),
            subject=msg.subject,
            delivered=metadata.num_delivered,
            sequence=delivery.stream_sequence,
            pending=delivery.num_pending,
            bytes=delivery.size,
        )
        try:
            with hop_span(self.spec.organ, envelope):
                outputs = await self.spec.handle(envelope, delivery)
        except BUS_ERRORS as error:
            await self._retry(msg, envelope, f"transient: {describe_bus_error(error)}", started, error)
            return None
        except PoisonError as error:
            await self._poison(msg, envelope, str(error), started)
            return None
        except Exception as error:
            await self._poison(msg, envelope, f"core raised {type(error).__name__}: {error}", started)
            return None
        try:
            futures = [
                await self.tract.js.publish_async(
                    output.subject,
                    encode(output.envelope),
                    headers={
                        "Nats-Msg-Id": output.msg_id or output.envelope.id,
                        "traceparent": output.envelope.trace,
                        "Ichor-Kind": output.envelope.kind,
                    },
                )
                for output in outputs
            ]
        except BUS_OR_STALL_ERRORS as error:
            await self._retry(msg, envelope, f"publish failed: {describe_bus_error(error)}", started, error)
            return None
        except nats.errors.MaxPayloadError as error:
            # The same input always yields the same too-large output: no retry can help.
            await self._poison(msg, envelope, f"output larger than the server's max payload: {error}", started)
            return None
        return envelope, outputs, futures

    async def _settle(
        self,
        msg: Msg,
        envelope: Envelope,
        futures: list[asyncio.Future[Any]],
        started: float,
        outputs: Sequence[Output] = (),
    ) -> None:
        try:
            await asyncio.wait_for(asyncio.gather(*futures), timeout=CONFIRM_TIMEOUT_S)
            await self._ack(msg)
        except BUS_OR_API_ERRORS as error:
            await self._retry(
                msg, envelope, f"publish or ack not confirmed: {describe_bus_error(error)}", started, error
            )
            return
        self.stats.last_refusal = ""
        duration_ms = (time.perf_counter() - started) * 1000
        self.stats.processed += 1
        self.stats.total_ms += duration_ms
        if self.on_settled is not None:
            self.on_settled(envelope, outputs, duration_ms / 1000)
        self.log.debug(
            "envelope.published",
            **envelope_fields(envelope),
            outputs=[f"{output.subject} {output.envelope.kind} {output.envelope.id}" for output in outputs],
        )
        self.log.info(
            "envelope.handled", **envelope_fields(envelope), outcome="forwarded", duration_ms=round(duration_ms, 3)
        )

    async def _ack(self, msg: Msg) -> None:
        """The input's confirmed ack, once its outputs are stored (``organs.runtime.faults`` dies just before)."""
        await msg.ack_sync(timeout=CONFIRM_TIMEOUT_S)

    async def _retry(
        self, msg: Msg, envelope: Envelope | None, reason: str, started: float, error: BaseException | None = None
    ) -> None:
        reason = scrub_secrets(reason)
        refusal = None
        if isinstance(error, TransientError) and error.__cause__ is not None:
            # An organ's own store (the border's rate bucket) wraps the bus error it met: judge that one.
            error = error.__cause__
        if error is not None:
            refusal = refusal_of(error)
            if refusal is None and (silence := unconfirmed_write(error, self.tract.nc.is_connected, CONFIRM_TIMEOUT_S)):
                # A timeout says nothing by itself; while connected, it is the server that stays silent.
                refusal, reason = silence, f"{reason}: {silence}"
        if refusal is not None:
            self.stats.last_refusal = str(refusal)
        self.stats.errors += 1
        self.stats.last_error = reason
        held = exhaustion_of(refusal.cause if refusal is not None else None) is not None
        if held:
            self._held.add(id(msg))
        else:
            # If the nak is lost too, the ack wait expires and the server redelivers anyway.
            with contextlib.suppress(*BUS_ERRORS):
                await msg.nak(delay=self._retry_delay_s(msg))
        self.log.warning(
            "envelope.retry",
            **_fields(envelope),
            outcome="held" if held else "nak",
            reason=reason,
            refusal=refusal.cause if refusal is not None else None,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
        )

    def _out_of_deliveries(self, delivered: int, limit: int) -> str:
        reason = (
            f"delivered {delivered} times (ICHOR_MAX_DELIVER={limit}) without being settled: every earlier "
            "attempt crashed or stalled its worker, or failed transiently"
        )
        # Deliveries spent while the server had no room are named by it, not as a crash.
        return named_by_exhaustion(reason, self.stats.last_refusal)

    def _retry_delay_s(self, msg: Msg) -> float:
        """Transient failures back off on the same schedule as crashes, starting at the spec's delay."""
        schedule = self.tract.settings.redelivery_backoff_s
        attempt = min(max(msg.metadata.num_delivered, 1), len(schedule)) - 1
        return max(self.spec.nak_delay_s, schedule[attempt])

    async def _poison(self, msg: Msg, envelope: Envelope | None, reason: str, started: float) -> None:
        # A reason may quote what failed to parse; it reaches headers, status replies and logs, never a secret.
        reason = scrub_secrets(reason)
        self.stats.errors += 1
        self.stats.last_error = reason
        while True:
            try:
                letter = await dead_letter(self.tract, self.spec.organ, msg, reason)
                rejection = await publish_rejection_or_log(
                    self.tract,
                    self.spec.organ,
                    data=msg.data,
                    headers=msg.headers,
                    reason=reason,
                    letter_id=letter,
                    retry=msg.metadata.num_delivered < self.tract.settings.max_deliver,
                    log=self.log,
                    sealed_by=self.spec.sealed_by,
                )
                await msg.term()
                break
            except BUS_ERRORS as error:
                if msg.metadata.num_delivered < self.tract.settings.max_deliver:
                    # Not dead-lettered yet, so it must not be terminated: let it come back.
                    await self._retry(msg, envelope, f"dead-letter failed: {describe_bus_error(error)}", started, error)
                    return
                # The server delivers this input no more: nak'ed, it would sit unsettled for good. It stays in
                # hand, heartbeaten, until its dead letter is stored (or the worker stops and hands it back).
                self.log.warning(
                    "envelope.dead_letter_retry", **_fields(envelope), outcome="held", error=describe_bus_error(error)
                )
                await asyncio.sleep(DEAD_LETTER_RETRY_S)
        self.stats.dead_lettered += 1
        self.log.error(
            "envelope.dead_lettered",
            **{**_fields(envelope), **dead_letter_fields(rejection)},
            outcome="dead_letter",
            reason=reason,
            bytes=len(msg.data),
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
        )


def _fields(envelope: Envelope | None) -> dict[str, Any]:
    if envelope is None:
        return {"envelope_id": None, "trace_id": None, "kind": None, "tier": None}
    return envelope_fields(envelope)
