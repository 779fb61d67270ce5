"""Reading what the tract carries through its stream, never through a plain subscription.

A plain subscriber sees every message published on a subject, including one the
stream refused as a duplicate (the same ``Nats-Msg-Id`` again inside the window):
a crash redelivery of the border, a replay. A reader through the stream sees each
stored message once, in order. ``follow_stream`` starts an ordered consumer
(ephemeral, in memory, pushed to the reader's own inbox, no acks) at the messages
stored from now on; it ends when the reader unsubscribes or goes away.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from nats.js import api

from organs.runtime.bus import Tract

__all__ = ["follow_stream"]


async def follow_stream(
    tract: Tract, subjects: Sequence[str], cb: Callable[[Any], Awaitable[None]], *, stream: str | None = None
) -> Any:
    """Call ``cb`` with each message the stream (default: the tract's) stores from now on under ``subjects``;
    returns the subscription (``unsubscribe()`` ends it)."""
    config = api.ConsumerConfig(filter_subjects=list(subjects)) if len(subjects) > 1 else None
    return await tract.js.subscribe(
        subjects[0],
        stream=stream or tract.subjects.tract_stream,
        cb=cb,
        ordered_consumer=True,
        deliver_policy=api.DeliverPolicy.NEW,
        config=config,
    )
