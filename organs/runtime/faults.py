"""Fault injection for the crash tests, kept out of the worker loop: installed only when a switch is set.

``ICHOR_FAULT_KILL_ON`` (``BusSettings.kill_on``) kills the worker's process with SIGKILL when an input's
bytes hold the pattern, before the input is decoded (not on its last delivery: that one is dead-lettered);
``ICHOR_FAULT_KILL_BEFORE_ACK`` (``BusSettings.kill_before_ack``) kills it after an input's outputs are stored
but before the input is acked, the window exactly-once must survive. A worker of a process with neither set is
a plain ``Worker``.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Sequence
from typing import Any

from nats.aio.msg import Msg

from envelopes.types import Envelope
from organs.runtime.bus import BusSettings
from organs.runtime.worker import Output, Worker

__all__ = ["FaultInjectingWorker", "worker_type"]


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class FaultInjectingWorker(Worker):
    """A ``Worker`` that dies where the settings' fault switches say."""

    async def _handle_delivery(
        self, msg: Msg, started: float
    ) -> tuple[Envelope, Sequence[Output], list[asyncio.Future[Any]]] | None:
        # Past the last-delivery check: the input's last delivery is dead-lettered, not died on.
        kill_on = self.tract.settings.kill_on
        if kill_on is not None and kill_on in msg.data:
            _die()
        return await super()._handle_delivery(msg, started)

    async def _ack(self, msg: Msg) -> None:
        if self.tract.settings.kill_before_ack:
            _die()
        await super()._ack(msg)


def worker_type(settings: BusSettings) -> type[Worker]:
    """The worker class for a process with these settings: the fault-injecting one only when a switch is set."""
    if settings.kill_on is not None or settings.kill_before_ack:
        return FaultInjectingWorker
    return Worker
