"""Back-pressure: a burst far beyond what the stomach digests steps the tiers down, then recovers."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest

from envelopes.codec import decode
from organs.runtime.bus import Tract
from organs.runtime.server import EmbeddedServer
from tests.bus.helpers import read_subject
from tests.fault.harness import OrganProcesses, make_pastes, publish_all, tally, wait_for_ends

pytestmark = [pytest.mark.bus, pytest.mark.slow]

RSS_BOUND_KIB = 400 * 1024


async def test_a_burst_steps_down_to_shallow_then_deferred_and_is_digested_later(
    tract: Tract, nats_server: EmbeddedServer
) -> None:
    pastes = make_pastes(800, "burst")
    with OrganProcesses(nats_server.url) as organs:
        started = time.monotonic()
        await publish_all(tract, pastes)
        burst_published_s = time.monotonic() - started
        drained = await wait_for_ends(tract, len(pastes), timeout=240, organs=organs)
        # The follow-ups of deferred pastes come once the main subject is idle.
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            result = await tally(tract, pastes)
            tiers = Counter(
                decode(msg.data).tier
                for msg in await read_subject(tract, tract.subjects.brain_in)
                if decode(msg.data).payload.follow_up_of is None  # type: ignore[union-attr]
            )
            if result.follow_ups >= tiers["deferred"]:
                break
            organs.sample_rss()
            await asyncio.sleep(0.5)
    result.print(
        "backpressure",
        burst_published_s=round(burst_published_s, 2),
        drained_s=round(drained, 2),
        tiers=dict(tiers),
        peak_rss_kib=organs.peak_rss_kib,
    )
    assert result.lost == 0 and result.duplicated == 0
    assert tiers["shallow"] > 0, "a backlog above one steps down to shallow"
    assert tiers["deferred"] > 0, "a deep backlog defers"
    assert result.follow_ups == tiers["deferred"], "every deferred paste is digested in full once the burst passes"
    assert all(rss < RSS_BOUND_KIB for rss in organs.peak_rss_kib.values()), organs.peak_rss_kib
