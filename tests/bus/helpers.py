"""Reading the tract's stream back in bus tests."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import nats.errors
from nats.aio.msg import Msg
from nats.js import api

from envelopes.codec import decode
from envelopes.types import Envelope
from organs.runtime.bus import Tract


async def subject_count(tract: Tract, subject: str, stream: str | None = None) -> int:
    info = await tract.js.stream_info(stream or tract.subjects.tract_stream, subjects_filter=subject)
    return (info.state.subjects or {}).get(subject, 0)


async def dead_letter_count(tract: Tract) -> int:
    """How many dead letters every organ of the tract has written."""
    return sum(
        [
            await subject_count(tract, tract.subjects.dlq(organ), tract.subjects.dlq_stream)
            for organ in ("stomach", "absorption", "border")
        ]
    )


async def read_subject(tract: Tract, subject: str, stream: str | None = None) -> list[Msg]:
    """Every message stored on ``subject``, read with a throwaway consumer."""
    total = await subject_count(tract, subject, stream)
    if total == 0:
        return []
    subscription = await tract.js.pull_subscribe(
        subject,
        stream=stream or tract.subjects.tract_stream,
        config=api.ConsumerConfig(ack_policy=api.AckPolicy.NONE, inactive_threshold=5.0),
    )
    messages: list[Msg] = []
    while len(messages) < total:
        try:
            messages.extend(await subscription.fetch(min(256, total - len(messages)), timeout=2.0))
        except nats.errors.TimeoutError:
            break
    await subscription.unsubscribe()
    return messages


async def read_envelopes(tract: Tract, subject: str) -> list[Envelope]:
    return [decode(msg.data) for msg in await read_subject(tract, subject)]


async def wait_for_count(
    tract: Tract, subject: str, expected: int, timeout: float = 30.0, stream: str | None = None
) -> int:
    deadline = time.monotonic() + timeout
    count = await subject_count(tract, subject, stream)
    while count < expected and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        count = await subject_count(tract, subject, stream)
    return count


async def consumer_settled(tract: Tract, durable: str, timeout: float = 30.0) -> api.ConsumerInfo:
    """Wait until the durable has nothing pending and nothing unacked."""
    deadline = time.monotonic() + timeout
    while True:
        info = await tract.js.consumer_info(tract.subjects.tract_stream, durable)
        if (info.num_pending == 0 and info.num_ack_pending == 0) or time.monotonic() > deadline:
            return info
        await asyncio.sleep(0.05)


def duplicates(ids: list[str]) -> dict[str, int]:
    return {key: count for key, count in Counter(ids).items() if count > 1}
