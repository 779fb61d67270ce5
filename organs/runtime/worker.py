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

This module fetches and holds the inputs; what becomes of each one is
``organs.runtime.settling``; what an organ hands in is ``organs.runtime.specs``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import nats.errors
import nats.js.errors
from nats.aio.msg import Msg
from nats.js import api

from organs.runtime.bus import Tract
from organs.runtime.cores import INLINE_CORE_CHARS, call_core
from organs.runtime.dead_letters import ExhaustedInputs, dead_letter
from organs.runtime.logs import message_fields
from organs.runtime.pulling import BUS_OR_API_ERRORS, FETCH_ERRORS, FETCH_EXPIRY_S, sleep_unless
from organs.runtime.settling import InputSettler
from organs.runtime.specs import Delivery, Handler, Output, SettledObserver, WorkerSpec, WorkerStats

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


# On a stop signal, inputs not settled by then are nak'ed so that another replica takes them now.
STOP_GRACE_S = 2.0
CANCEL_GRACE_S = 1.0


class Worker(InputSettler):
    """Runs one WorkerSpec until ``stop`` is set.

    Up to ``spec.batch`` inputs are in hand at once, each handled on its own, so a slow input
    never holds back the fetching of the next. Every input in hand is heartbeaten
    (``in_progress``) three times per ack wait: a long digest keeps its input, while the inputs
    of a worker that died come back one ack wait later. Pull requests expire within
    ``FETCH_EXPIRY_S``, so a dead worker's open request holds nothing for long either.
    """

    def __init__(self, tract: Tract, spec: WorkerSpec) -> None:
        super().__init__(tract, spec)
        self.bound = False
        self.abandoned = 0
        self._resubscribe = asyncio.Event()
        self.last_turn = time.monotonic()
        """When the consumer loop last turned on a live connection: the organ's liveness signal."""
        self._in_hand: dict[asyncio.Task[None], Msg] = {}
        self._riding_out: set[asyncio.Task[None]] = set()
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
        self._wake_held_inputs()

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
