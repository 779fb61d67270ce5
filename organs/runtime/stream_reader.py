"""Reading what the tract carries through its stream, never through a plain subscription.

A plain subscriber sees every message published on a subject, including one the
stream refused as a duplicate (the same ``Nats-Msg-Id`` again inside the window):
a crash redelivery of the border, a replay. A reader through the stream sees each
stored message once, in order.

``follow_stream`` reads the stored messages one by one from the stream's next
sequence on (``STREAM.MSG.GET`` with ``next_by_subj``): a read-only request that
needs no consumer, because the right to create one would also be the right to
rewrite an organ's durable consumer (the server lets an ephemeral create name an
existing consumer and updates it). A plain subscription to the same subjects
only wakes the reader up; what it delivers is never what the reader reads.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import nats.errors
from nats.js import api
from nats.js.errors import NotFoundError

from organs.runtime.bus import Tract, stream_info

__all__ = ["StreamFollower", "follow_stream"]

# How long an idle reader waits for a wake-up before it looks again anyway (a wake-up can be lost on a reconnect).
_IDLE_LOOK_S = 1.0


class StreamFollower:
    """Calls ``cb`` with each message ``stream`` stores under ``subjects`` from sequence ``start`` on."""

    def __init__(
        self,
        tract: Tract,
        stream: str,
        subjects: Sequence[str],
        cb: Callable[[api.RawStreamMsg], Awaitable[None]],
        start: int,
    ) -> None:
        self.tract, self.stream, self.subjects, self.cb = tract, stream, tuple(subjects), cb
        self.next_sequence = start
        self._woken = asyncio.Event()
        self._stopped = False
        self._wakers: list[Any] = []
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        async def wake(_: Any) -> None:
            self._woken.set()

        self._wakers = [await self.tract.nc.subscribe(subject, cb=wake) for subject in self.subjects]
        self._task = asyncio.create_task(self._follow())

    async def _next_stored(self) -> api.RawStreamMsg | None:
        """The first message at or after the cursor on any of the subjects; None when there is none yet."""
        found = []
        for subject in self.subjects:
            with contextlib.suppress(NotFoundError):
                found.append(
                    await self.tract.js.get_msg(self.stream, seq=self.next_sequence, subject=subject, next=True)
                )
        return min(found, key=lambda msg: msg.seq or 0, default=None)

    async def _follow(self) -> None:
        while not self._stopped:
            self._woken.clear()
            try:
                msg = await self._next_stored()
            except (nats.errors.Error, TimeoutError):
                # The bus is away (a reconnect, a server restart): look again once it may be back.
                await asyncio.sleep(_IDLE_LOOK_S)
                continue
            if msg is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._woken.wait(), timeout=_IDLE_LOOK_S)
                continue
            self.next_sequence = (msg.seq or self.next_sequence) + 1
            if not self._stopped:
                await self.cb(msg)

    async def unsubscribe(self) -> None:
        # Stopped, never cancelled: a request cancelled half-written leaves the connection unusable.
        self._stopped = True
        self._woken.set()
        if self._task is not None:
            await self._task
        for waker in self._wakers:
            await waker.unsubscribe()


async def follow_stream(
    tract: Tract,
    subjects: Sequence[str],
    cb: Callable[[api.RawStreamMsg], Awaitable[None]],
    *,
    stream: str | None = None,
) -> StreamFollower:
    """Call ``cb`` with each message the stream (default: the tract's) stores from now on under ``subjects``;
    ``unsubscribe()`` on the result ends it."""
    name = stream or tract.subjects.tract_stream
    info = await stream_info(tract, name)
    follower = StreamFollower(tract, name, subjects, cb, start=info.state.last_seq + 1)
    await follower.start()
    return follower
