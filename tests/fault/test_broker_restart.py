"""Faults: after the broker is killed and back, the tract resumes within seconds and stops cleanly afterwards."""

from __future__ import annotations

import asyncio
import subprocess
import time

import pytest

from organs.anatomy import ORGANS
from organs.runtime.bus import BusSettings, Tract, connect
from organs.runtime.server import EmbeddedServer
from tests.bus.helpers import subject_count
from tests.fault.harness import OrganProcesses, make_pastes, publish_all, tally, wait_for_ends

pytestmark = [pytest.mark.bus, pytest.mark.slow, pytest.mark.serial]

# The goal is 2 s from the server being ready again; a loaded 2-core machine gets slack.
RESUME_GOAL_S = 2.0
RESUME_LIMIT_S = 6.0
# A worker stopping gives its inputs STOP_GRACE_S and its connection DRAIN_TIMEOUT_S.
STOP_LIMIT_S = 8.0
# More ends than one organ's batch in hand: the tract flows again.
FLOWING_ENDS = 64


async def _resumed_after(settings: BusSettings, patience_s: float) -> dict[str, float]:
    """Seconds until each organ's consumer hands out an input beyond what it had when this fresh client first
    looked, and until the tract's ends grew by more than the border could have held in flight (a publish
    buffered through the outage is flushed on reconnect, which is no proof of the loops fetching again)."""
    started = time.monotonic()
    observer = await connect(settings, name="ichor-restart-observer")
    stream = observer.subjects.tract_stream
    durables = [organ.consumers[0].durable for organ in ORGANS]
    try:
        baseline = {durable: await _delivered(observer, stream, durable) for durable in durables}
        baseline_ends = await tract_ends(observer)
        resumed: dict[str, float] = {}
        while len(resumed) <= len(durables) and time.monotonic() - started < patience_s:
            for durable in durables:
                if durable not in resumed and await _delivered(observer, stream, durable) > baseline[durable]:
                    resumed[durable] = round(time.monotonic() - started, 2)
            if "ends" not in resumed and await tract_ends(observer) > baseline_ends + FLOWING_ENDS:
                resumed["ends"] = round(time.monotonic() - started, 2)
            await asyncio.sleep(0.02)
        return resumed
    finally:
        await observer.nc.close()


async def _delivered(tract: Tract, stream: str, durable: str) -> int:
    return (await tract.js.consumer_info(stream, durable)).delivered.consumer_seq


async def tract_ends(tract: Tract) -> int:
    return await subject_count(tract, tract.subjects.brain_in) + await subject_count(
        tract, tract.subjects.border_rejected
    )


def _stop_timed(organs: OrganProcesses) -> tuple[float, list[int | None]]:
    """Seconds for every worker to exit on SIGTERM, and their exit codes (None: it had to be killed)."""
    started = time.monotonic()
    for process in organs.processes.values():
        process.terminate()
    codes: list[int | None] = []
    for process in organs.processes.values():
        try:
            codes.append(process.wait(timeout=max(0.1, STOP_LIMIT_S * 2 - (time.monotonic() - started))))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            codes.append(None)
    return time.monotonic() - started, codes


async def test_the_tract_resumes_within_seconds_of_a_broker_restart_and_stops_cleanly(
    tract: Tract, nats_server: EmbeddedServer
) -> None:
    # Down long enough for every organ to have lost its connection and retried (test_crash_and_restart has 1 s).
    down_s = 5.0
    pastes = make_pastes(1000, "restart")
    organs = OrganProcesses(nats_server.url).start()
    try:
        await publish_all(tract, pastes)
        await wait_for_ends(tract, 100, timeout=60, organs=organs)
        nats_server.kill()
        await asyncio.sleep(down_s)
        nats_server.start()
        resumed = await _resumed_after(tract.settings, patience_s=30.0)
        resume_s = max(resumed.values(), default=float("inf"))
        await wait_for_ends(tract, len(pastes), timeout=240, organs=organs)
        await asyncio.sleep(1)
        stop_s, codes = _stop_timed(organs)
    finally:
        organs.stop()
    result = await tally(tract, pastes)
    result.print(
        "broker_restart_resume",
        down_s=down_s,
        resume_after_back_s=resume_s,
        resumed=resumed,
        goal_s=RESUME_GOAL_S,
        stop_s=round(stop_s, 2),
        exit_codes=codes,
    )
    assert result.lost == 0
    assert result.duplicated == 0
    assert len(resumed) == len(ORGANS) + 1, f"the tract did not resume within 30 s: {resumed}"
    assert resume_s <= RESUME_LIMIT_S
    assert None not in codes, "every worker stopped on SIGTERM without being killed"
    assert stop_s <= STOP_LIMIT_S
