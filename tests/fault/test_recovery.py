"""Faults: what a dead worker held comes out in seconds; a live worker's long digest stays its own."""

from __future__ import annotations

import asyncio
import time

import nats.js.errors
import pytest

from envelopes.types import UserInput
from organs.anatomy import STOMACH
from organs.client import hand_in_paste
from organs.runtime.bus import Tract
from organs.runtime.server import EmbeddedServer
from tests.bus.helpers import subject_count
from tests.fault.harness import FAULT_ENV, OrganProcesses, ends_reached, make_pastes, publish_all, tally, wait_for_ends

pytestmark = [pytest.mark.bus, pytest.mark.slow, pytest.mark.serial]

# The goal is 5 s (an ack wait of 3 s, then the survivor's own pace); a loaded 2-core machine gets slack.
IN_FLIGHT_GOAL_S = 5.0
IN_FLIGHT_LIMIT_S = 12.0


async def wait_for_ready_stomachs(tract: Tract, replicas: int) -> None:
    """Until ``replicas`` stomachs have a pull request open, so that a burst is shared between them."""
    main = STOMACH.consumers[0]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            info = await tract.js.consumer_info(tract.subjects.tract_stream, main.durable)
            if (info.num_waiting or 0) >= replicas:
                return
        except nats.js.errors.NotFoundError:
            pass
        await asyncio.sleep(0.1)
    raise AssertionError(f"{replicas} stomachs never all waited for input")


async def test_what_a_killed_stomach_held_comes_out_within_seconds(tract: Tract, nats_server: EmbeddedServer) -> None:
    pastes = make_pastes(80, "sigkill")
    main = STOMACH.consumers[0]
    with OrganProcesses(nats_server.url) as organs:
        organs.spawn(STOMACH.name, replica=1)
        # Both replicas take their share at once; one of them dies holding it.
        await wait_for_ready_stomachs(tract, replicas=2)
        await publish_all(tract, pastes)
        while (await tract.js.consumer_info(tract.subjects.tract_stream, main.durable)).num_ack_pending < 20:
            await asyncio.sleep(0.01)
        organs.kill(STOMACH.name, replica=0)
        killed_at = time.monotonic()
        at_kill = await ends_reached(tract)
        # A paste published after the kill must not be handed to the dead worker's open pull request.
        late = make_pastes(1, "sigkill-late")
        await publish_all(tract, late)
        await wait_for_ends(tract, len(pastes) + 1, timeout=60, organs=organs)
        all_out_s = round(time.monotonic() - killed_at, 2)
        await asyncio.sleep(1)
    info = await tract.js.consumer_info(tract.subjects.tract_stream, main.durable)
    redelivered = info.delivered.consumer_seq - await subject_count(tract, main.address(tract.subjects))
    result = await tally(tract, [*pastes, *late])
    result.print(
        "sigkill_in_flight",
        ends_at_kill=at_kill,
        redelivered=redelivered,
        all_out_after_kill_s=all_out_s,
        goal_s=IN_FLIGHT_GOAL_S,
    )
    assert redelivered > 0, "the killed replica held inputs"
    assert result.lost == 0
    assert result.duplicated == 0
    assert all_out_s <= IN_FLIGHT_LIMIT_S


async def test_a_long_digest_is_not_taken_over_by_a_second_replica(tract: Tract, nats_server: EmbeddedServer) -> None:
    # The digest takes several ack waits: only heartbeats keep the second replica from taking it.
    ack_wait_s = 0.5
    # Full tier for the whole paste, so the digest is long on a quiet machine as well as a busy one.
    full_tier = {"ICHOR_SHALLOW_CHARS": str(1 << 30), "ICHOR_DEFERRED_CHARS": str(1 << 31)}
    with OrganProcesses(nats_server.url, env={"ICHOR_ACK_WAIT_S": str(ack_wait_s), **full_tier}) as organs:
        organs.spawn(STOMACH.name, replica=1)
        lines = [
            f"2026-11-29T08:{n % 60:02d}:01Z INFO [api-{n % 13}] request {n} took {n % 97}ms" for n in range(200_000)
        ]
        started = time.monotonic()
        _, outcome = await hand_in_paste(
            tract, "\n".join(lines), origin=UserInput(actor="long-digest"), intent="Why is it slow?", timeout=120
        )
        digest_s = round(time.monotonic() - started, 2)
        await asyncio.sleep(2 * ack_wait_s)
    deliveries = 0
    for consumer in STOMACH.consumers:
        info = await tract.js.consumer_info(tract.subjects.tract_stream, consumer.durable)
        deliveries += info.delivered.consumer_seq
    inputs = sum([await subject_count(tract, consumer.address(tract.subjects)) for consumer in STOMACH.consumers])
    print(
        f"\n[fault:long_digest] seconds={digest_s} ack_wait_s={ack_wait_s} stomach_inputs={inputs} "
        f"stomach_deliveries={deliveries} outcome={outcome.kind}"
    )
    assert digest_s > 3 * ack_wait_s, "the digest must outlast the ack wait for the scenario to mean anything"
    assert deliveries == inputs


async def test_small_pastes_are_not_held_back_by_a_long_digest(tract: Tract, nats_server: EmbeddedServer) -> None:
    # The long paste is digested in full on the main consumer, beside the small ones.
    with OrganProcesses(
        nats_server.url, env={**FAULT_ENV, "ICHOR_DEFERRED_CHARS": "100000000", "ICHOR_SHALLOW_CHARS": "100000000"}
    ) as organs:
        lines = [
            f"2026-11-29T08:{n % 60:02d}:01Z INFO [api-{n % 13}] request {n} took {n % 97}ms" for n in range(150_000)
        ]
        small = make_pastes(40, "beside-long")
        await wait_for_ready_stomachs(tract, replicas=1)
        started = time.monotonic()
        long_digest = asyncio.create_task(
            hand_in_paste(tract, "\n".join(lines), origin=UserInput(actor="long"), intent="Why slow?", timeout=120)
        )
        await asyncio.sleep(0.5)  # the long paste is in hand first
        await publish_all(tract, small)
        small_out_s = round(await wait_for_ends(tract, len(small), timeout=120, organs=organs), 2)
        await long_digest
        long_s = round(time.monotonic() - started, 2)
        await asyncio.sleep(1)
    result = await tally(tract, small)
    result.print("long_digest_beside_small", small_all_out_s=small_out_s, long_digest_s=long_s)
    assert result.lost == 0
    assert result.duplicated == 0
    assert small_out_s < long_s
