"""Faults: organs SIGKILLed mid-load, the broker restarted, replicas side by side."""

from __future__ import annotations

import asyncio
import time

import pytest

from organs.runtime.bus import Tract
from organs.runtime.server import EmbeddedServer
from tests.fault.harness import OrganProcesses, ends_reached, make_pastes, publish_all, tally, wait_for_ends

pytestmark = [pytest.mark.bus, pytest.mark.slow]


async def test_killing_each_organ_in_turn_loses_and_duplicates_nothing(
    tract: Tract, nats_server: EmbeddedServer
) -> None:
    # Enough that the last kill (after three times 150 more ends) still finds hundreds of pastes in the tract.
    pastes = make_pastes(1000, "crash")
    recovery: list[float] = []
    with OrganProcesses(nats_server.url) as organs:
        await publish_all(tract, pastes)
        for organ in ("stomach", "absorption", "border"):
            await wait_for_ends(tract, await ends_reached(tract) + 150, timeout=60, organs=organs)
            organs.kill(organ)
            killed_at = time.monotonic()
            before = await ends_reached(tract)
            organs.spawn(organ)
            await wait_for_ends(tract, before + 1, timeout=60, organs=organs)
            recovery.append(round(time.monotonic() - killed_at, 2))
        await wait_for_ends(tract, len(pastes), timeout=240, organs=organs)
        # Give a late duplicate, if there were one, the time to show up.
        await asyncio.sleep(1)
    result = await tally(tract, pastes)
    result.print("crash", recovery_s=recovery, peak_rss_kib=organs.peak_rss_kib)
    assert result.lost == 0
    assert result.duplicated == 0
    assert result.dead_lettered == 0


async def test_a_broker_restart_mid_load_loses_and_duplicates_nothing(
    tract: Tract, nats_server: EmbeddedServer
) -> None:
    # The broker goes down after 200 ends, with hundreds of pastes still to go through it.
    pastes = make_pastes(600, "broker")
    with OrganProcesses(nats_server.url) as organs:
        await publish_all(tract, pastes)
        await wait_for_ends(tract, 200, timeout=60, organs=organs)
        nats_server.stop()
        stopped_at = time.monotonic()
        await asyncio.sleep(1)
        nats_server.start()
        assert nats_server.url == tract.settings.url, "same port, same data directory"
        before = await ends_reached(tract)
        resumed = await wait_for_ends(tract, before + 50, timeout=60, organs=organs)
        recovery = round(time.monotonic() - stopped_at, 2)
        await wait_for_ends(tract, len(pastes), timeout=180, organs=organs)
        await asyncio.sleep(1)
    result = await tally(tract, pastes)
    result.print(
        "broker_restart", recovery_s=recovery, resumed_within_s=round(resumed, 2), peak_rss_kib=organs.peak_rss_kib
    )
    assert result.lost == 0
    assert result.duplicated == 0


async def test_two_replicas_per_organ_process_nothing_twice(tract: Tract, nats_server: EmbeddedServer) -> None:
    pastes = make_pastes(1000, "replicas")
    with OrganProcesses(nats_server.url, replicas=2) as organs:
        await publish_all(tract, pastes)
        elapsed = await wait_for_ends(tract, len(pastes), timeout=180, organs=organs)
        await asyncio.sleep(1)
    result = await tally(tract, pastes)
    result.print(
        "scale_out",
        seconds=round(elapsed, 2),
        pastes_per_s=round(len(pastes) / elapsed, 1),
        peak_rss_kib=organs.peak_rss_kib,
    )
    assert result.lost == 0
    assert result.duplicated == 0
