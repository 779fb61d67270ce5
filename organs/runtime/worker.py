"""The worker loop every organ runs: decode → pure core → publish → ack.

Each organ binds one durable pull consumer, shared by all its replicas. For
every input the loop decodes strictly, calls the organ's handler, publishes
each output with ``Nats-Msg-Id`` = the output envelope id and waits for the
publish ack, and only then acks the input with a confirmed (double) ack.
Output ids derive from the input id, so a redelivery after a crash between
publish and ack is dropped by JetStream's duplicate window: exactly-once per hop.

A poison input (undecodable, invalid, or a handler that raises) is dead-lettered
with its bytes, headers and a reason, then terminated. A transient failure
(bus away, publish timeout) is nak'ed with a delay and comes back later.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import nats.errors
import nats.js.errors
from nats.aio.msg import Msg
from nats.js import api

from envelopes.codec import DecodeError, decode, encode
from envelopes.types import Envelope
from organs.errors import PoisonError, TransientError
from organs.redaction import scrub_secrets
from organs.runtime.bus import Tract
from organs.runtime.dead_letter_outcomes import SealedBy, dead_letter_fields, publish_rejection_or_log
from organs.runtime.dead_letters import ExhaustedInputs, dead_letter
from organs.runtime.logs import envelope_fields, get_logger, message_fields
from organs.runtime.pulling import (
    BUS_ERRORS,
    BUS_OR_API_ERRORS,
    BUS_OR_STALL_ERRORS,
    FETCH_ERRORS,
    FETCH_EXPIRY_S,
    sleep_unless,
)
from organs.runtime.refusals import (
    describe_bus_error,
    exhaustion_of,
    named_by_exhaustion,
    refusal_of,
    unconfirmed_write,
)
from organs.runtime.tracing import hop_span

__all__ = [
    "INLINE_CORE_CHARS",
    "Delivery",
    "Handler",
    "Output",
    "SettledObserver",
    "Worker",
    "WorkerSpec",
    "WorkerStats",
    "call_core",
    "dead_letter",
]


# Up to this many characters of input, a pure core runs on the event loop: it then takes a few
# milliseconds, and measured under a burst, handing it to a thread cost the stomach and the border
# about a third more CPU per input (the GIL passing between the thread and the loop).
INLINE_CORE_CHARS = 64 * 1024

_P = ParamSpec("_P")
_T = TypeVar("_T")


async def call_core(size: int, core: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """``core(*args, **kwargs)`` for an input of ``size`` characters: inline when small, else on a thread
    so that a long digest does not stall the loop's other inputs, heartbeats and acks."""
    if size <= INLINE_CORE_CHARS:
        return core(*args, **kwargs)
    return await asyncio.to_thread(core, *args, **kwargs)


# On a stop signal, inputs not settled by then are nak'ed so that another replica takes them now.
STOP_GRACE_S = 2.0
CANCEL_GRACE_S = 1.0

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


@dataclass(frozen=True)
class Output:
    subject: str
    envelope: Envelope
    msg_id: str | None = None
    """The ``Nats-Msg-Id`` when it cannot be the envelope's id: an input moved unchanged to another subject
    of the same stream, whose first id the duplicate window holds already."""


@dataclass(frozen=True)
class Delivery:
    """What the bus says about the message being handled."""

    subject: str
    num_pending: int
    stream_sequence: int = 0
    """The message's place in its stream: a redelivery keeps it, a replay of the same bytes gets a new one."""
    size: int = 0
    """The message's bytes, known before anything is decoded or fetched."""


Handler = Callable[[Envelope, Delivery], Awaitable[Sequence[Output]]]
SettledObserver = Callable[[Envelope, Sequence[Output], float], None]
"""Told of each input settled (acked): the input, the outputs it gave, the seconds it took."""


@dataclass(frozen=True)
class WorkerSpec:
    """One organ's consumer: which subject, which durable, which handler.

    ``gate`` (optional) is asked before each fetch; a low-priority consumer
    uses it to wait while higher-priority work is pending. ``sealed_by`` (a secure
    tract's organs give it) names the sender whose seal an input bears: the rejection
    of its dead letter is copied to that sender's own outcome subject.
    """

    organ: str
    durable: str
    subject: str
    handle: Handler
    batch: int = 32
    nak_delay_s: float = 1.0
    gate: Callable[[], bool] | None = None
    sealed_by: SealedBy | None = None


@dataclass
class WorkerStats:
    processed: int = 0
    errors: int = 0
    dead_lettered: int = 0
    total_ms: float = 0.0
    last_error: str = ""
    last_pending: int = 0
    last_refusal: str = ""
    """The server's refusal of this worker's last write, until a write succeeds again ("" when none)."""

    @property
    def average_ms(self) -> float:
        return self.total_ms / self.processed if self.processed else 0.0


class Worker:
    """Runs one WorkerSpec until ``stop`` is set.

    Up to ``spec.batch`` inputs are in hand at once, each handled on its own, so a slow input
    never holds back the fetching of the next. Every input in hand is heartbeaten
    (``in_progress``) three times per ack wait: a long digest keeps its input, while the inputs
    of a worker that died come back one ack wait later. Pull requests expire within
    ``FETCH_EXPIRY_S``, so a dead worker's open request holds nothing for long either.
    """

    def __init__(self, tract: Tract, spec: WorkerSpec) -> None:
        self.tract = tract
        self.spec = spec
        self.stats = WorkerStats()
        self.log = get_logger(spec.organ)
        self.on_settled: SettledObserver | None = None
        self.bound = False
        self.abandoned = 0
        self._resubscribe = asyncio.Event()
        self.last_turn = time.monotonic()
        """When the consumer loop last turned on a live connection: the organ's liveness signal."""
        self._in_hand: dict[asyncio.Task[None], Msg] = {}
        self._riding_out: set[asyncio.Task[None]] = set()
        # Inputs whose last attempt the server refused for want of room: kept in hand and tried again.
        self._held: set[int] = set()
        self._wake_held = asyncio.Event()
        self._attempts_held: dict[int, asyncio.Future[None]] = {}
        self.exhausted = ExhaustedInputs(
            tract,
            spec.organ,
            spec.durable,
            on_dead_lettered=self._count_dead_letter,
            last_refusal=lambda: self.stats.last_refusal,
            sealed_by=spec.sealed_by,
        )

    def _count_dead_letter(self) -> None:
        self.stats.dead_lettered += 1

    def on_reconnected(self) -> None:
        """A pull subscription can go silent after a server restart; bind it anew.

        An input in hand across the outage may wait out a request lost with the old connection (the
        JetStream timeout, 10 s); it settles or comes back on its own, but holds no room the fresh
        fetches need, so the organ takes new inputs as soon as the server is back.
        """
        self._resubscribe.set()
        self._riding_out.update(self._in_hand)
        woken, self._wake_held = self._wake_held, asyncio.Event()
        woken.set()
        for attempt in self._attempts_held.values():
            attempt.cancel()

    def consumer_config(self) -> api.ConsumerConfig:
        settings = self.tract.settings
        return api.ConsumerConfig(
            durable_name=self.spec.durable,
            name=self.spec.durable,
            filter_subject=self.spec.subject,
            ack_policy=api.AckPolicy.EXPLICIT,
            ack_wait=settings.ack_wait_s,
            max_deliver=settings.max_deliver,
            backoff=list(settings.redelivery_backoff_s),
            max_ack_pending=max(1000, self.spec.batch * 8),
            deliver_policy=api.DeliverPolicy.ALL,
        )

    async def _subscribe(self) -> Any:
        config = self.consumer_config()
        stream = self.tract.subjects.tract_stream
        # Create or update: a durable made before the ack wait or redelivery limits changed takes the new ones.
        with contextlib.suppress(nats.js.errors.BadRequestError):
            await self.tract.js.add_consumer(stream, config=config)
        subscription = await self.tract.js.pull_subscribe(
            self.spec.subject, durable=self.spec.durable, stream=stream, config=config
        )
        self.bound = True
        return subscription

    async def run(self, stop: asyncio.Event) -> None:
        heartbeat = asyncio.create_task(self._heartbeat())
        exhausted = asyncio.create_task(self.exhausted.run(stop))
        try:
            await self._fetch_until(stop)
        finally:
            await self._let_go()
            heartbeat.cancel()
            # It sees the stop within one fetch expiry and lets its subscription go before the connection drains.
            await asyncio.wait({exhausted}, timeout=FETCH_EXPIRY_S * 2)
            exhausted.cancel()

    async def _fetch_until(self, stop: asyncio.Event) -> None:
        subscription = None
        # A worker that just started may be the replacement of one that an input killed.
        careful = True
        while not stop.is_set():
            if not self.tract.nc.is_closed:
                self.last_turn = time.monotonic()
            if subscription is None or self._resubscribe.is_set():
                self._resubscribe.clear()
                try:
                    subscription = await self._subscribe()
                except BUS_OR_API_ERRORS as error:
                    self.bound = False
                    self.log.warning("consumer.bind_failed", error=repr(error))
                    await sleep_unless(stop, 0.5)
                    continue
            # After a crash, what comes back is taken one input at a time, alone: an input that kills its
            # worker then takes no other input down with it, so only it runs out of deliveries.
            held = len(self._in_hand) - len(self._riding_out)
            room = 1 - held if careful else self.spec.batch - held
            if room <= 0:
                await asyncio.wait(self._in_hand, timeout=FETCH_EXPIRY_S, return_when=asyncio.FIRST_COMPLETED)
                continue
            if self.spec.gate is not None and not self.spec.gate():
                await sleep_unless(stop, 0.2)
                continue
            try:
                messages = await subscription.fetch(room, timeout=FETCH_EXPIRY_S)
            except (TimeoutError, nats.errors.TimeoutError):
                continue
            except FETCH_ERRORS as error:
                self.log.warning("consumer.fetch_failed", error=repr(error))
                self._resubscribe.set()
                await sleep_unless(stop, 0.5)
                continue
            careful = any(msg.metadata.num_delivered > 1 for msg in messages)
            for msg in messages:
                self._take(msg)
        if subscription is not None:
            with contextlib.suppress(nats.errors.Error):
                await subscription.unsubscribe()

    def _take(self, msg: Msg) -> None:
        task = asyncio.create_task(self._process(msg))
        self._in_hand[task] = msg
        task.add_done_callback(self._in_hand.pop)
        task.add_done_callback(self._riding_out.discard)

    async def _heartbeat(self) -> None:
        period = self.tract.settings.ack_wait_s / 3
        while True:
            await asyncio.sleep(period)
            for msg in list(self._in_hand.values()):
                # A lost heartbeat only means the input may come back once more, deduplicated downstream.
                with contextlib.suppress(*BUS_OR_API_ERRORS, nats.errors.Error):
                    await msg.in_progress()

    async def _let_go(self) -> None:
        """Finish what is in hand within ``STOP_GRACE_S``; hand the rest back for another replica at once."""
        if self._in_hand:
            await asyncio.wait(self._in_hand, timeout=STOP_GRACE_S)
        for task, msg in list(self._in_hand.items()):
            with contextlib.suppress(*BUS_OR_API_ERRORS, nats.errors.Error):
                await msg.nak()
            task.cancel()
            self.abandoned += 1
            self.log.warning(
                "envelope.abandoned",
                **message_fields(msg.headers),
                outcome="nak",
                reason="worker stopping",
                subject=msg.subject,
            )
        if self._in_hand:
            # Let the cancelled handlers clean up (a large paste's digester process is killed and reaped).
            await asyncio.wait(self._in_hand, timeout=CANCEL_GRACE_S)

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
