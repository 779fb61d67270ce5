"""The shared rate buckets on a real nats-server: one replica's concurrent decisions, two replicas, and the
batches a replica settles its tokens in."""

from __future__ import annotations

import asyncio

import pytest

from organs.border.guard import GuardState, RateLimit
from organs.border.rate_store import SETTLE_AFTER_S, SETTLE_EVERY, SharedBuckets
from organs.runtime.bus import Tract

pytestmark = pytest.mark.bus

ACTOR = ("user", "ana")
RATE = RateLimit(capacity=1000, window_s=100.0)


async def _fleet_tokens(tract: Tract) -> float:
    """The actor's tokens as a replica that never decided reads them from the shared store."""
    bucket, _ = await SharedBuckets(tract, RATE.window_s).load(ACTOR)
    assert bucket is not None
    return bucket.tokens


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
    await buckets.settle()
    assert await _fleet_tokens(tract) == RATE.capacity - 40


async def test_a_replicas_first_write_of_a_key_that_another_replica_wrote_fails_once_then_reads_it_back(
    tract: Tract,
) -> None:
    first, second = SharedBuckets(tract, RATE.window_s), SharedBuckets(tract, RATE.window_s)
    assert await _decide_once(first, 1000.0)
    bucket, revision = await second.load(ACTOR)
    assert await _decide_once(first, 1000.0)
    await first.settle()
    state = GuardState()
    assert bucket is not None
    state.buckets[ACTOR] = bucket
    assert state.take(ACTOR, RATE, 1000.0)
    assert not await second.store(ACTOR, state.buckets[ACTOR], revision)
    assert await _decide_once(second, 1000.0)
    await second.settle()
    assert await _fleet_tokens(tract) == RATE.capacity - 3


async def test_tokens_settled_late_by_a_replica_that_lost_a_race_are_taken_from_the_fleets_bucket(tract: Tract) -> None:
    first, second = SharedBuckets(tract, RATE.window_s), SharedBuckets(tract, RATE.window_s)
    assert await _decide_once(first, 1000.0)
    assert await _decide_once(second, 1000.0)
    # Held in memory, the first replica's next tokens are written after the second's: merged, none lost.
    assert await _decide_once(first, 1000.0)
    assert await _decide_once(first, 1000.0)
    await first.settle()
    assert await _fleet_tokens(tract) == RATE.capacity - 4


async def test_a_replica_settles_its_tokens_once_a_batch_is_taken(tract: Tract) -> None:
    buckets = SharedBuckets(tract, RATE.window_s, settle_after_s=3600.0)
    assert await _decide_once(buckets, 1000.0)  # a key's first token is written at once
    for _ in range(SETTLE_EVERY - 1):
        assert await _decide_once(buckets, 1000.0)
    # Another replica sees the batch late: the first token only, until the batch is full.
    assert await _fleet_tokens(tract) == RATE.capacity - 1
    assert await _decide_once(buckets, 1000.0)
    await asyncio.sleep(0.5)
    assert await _fleet_tokens(tract) == RATE.capacity - 1 - SETTLE_EVERY


async def test_a_replica_settles_its_tokens_shortly_after_the_first_of_a_batch(tract: Tract) -> None:
    buckets = SharedBuckets(tract, RATE.window_s)
    assert await _decide_once(buckets, 1000.0)
    assert await _decide_once(buckets, 1000.0)
    assert await _decide_once(buckets, 1000.0)
    await asyncio.sleep(SETTLE_AFTER_S + 0.5)
    assert await _fleet_tokens(tract) == RATE.capacity - 3
