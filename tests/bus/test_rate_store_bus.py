"""The shared rate buckets on a real nats-server: one replica's concurrent decisions, and two replicas."""

from __future__ import annotations

import asyncio

import pytest

from organs.border.guard import GuardState, RateLimit
from organs.border.rate_store import SharedBuckets
from organs.runtime.bus import Tract

pytestmark = pytest.mark.bus

ACTOR = ("user", "ana")
RATE = RateLimit(capacity=1000, window_s=100.0)


async def _decide_once(buckets: SharedBuckets, now: float) -> bool:
    """One decision's read, token and write-back; True when the write was not overtaken."""
    async with buckets.holding([ACTOR]):
        state = GuardState()
        bucket, revision = await buckets.load(ACTOR)
        if bucket is not None:
            state.buckets[ACTOR] = bucket
        assert state.take(ACTOR, RATE, now)
        return await buckets.store(ACTOR, state.buckets[ACTOR], revision)


async def test_concurrent_decisions_of_one_replica_take_turns_and_never_overtake_each_other(tract: Tract) -> None:
    buckets = SharedBuckets(tract, RATE.window_s)
    written = await asyncio.gather(*(_decide_once(buckets, 1000.0) for _ in range(40)))
    assert written == [True] * 40
    bucket, _ = await SharedBuckets(tract, RATE.window_s).load(ACTOR)
    assert bucket is not None and bucket.tokens == RATE.capacity - 40


async def test_a_write_by_another_replica_fails_the_next_write_once_then_is_read_back(tract: Tract) -> None:
    first, second = SharedBuckets(tract, RATE.window_s), SharedBuckets(tract, RATE.window_s)
    assert await _decide_once(first, 1000.0)
    assert await _decide_once(second, 1000.0)
    assert not await _decide_once(first, 1000.0)
    assert await _decide_once(first, 1000.0)
    bucket, _ = await SharedBuckets(tract, RATE.window_s).load(ACTOR)
    assert bucket is not None and bucket.tokens == RATE.capacity - 3
