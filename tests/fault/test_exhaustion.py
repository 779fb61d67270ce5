"""Self-healing after exhaustion (#28): pastes accepted before the server ran out of room are held, not spent, and
all come out once there is room again; the embedded server that ran out of disk is started again by ``ichor up``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import datetime
from pathlib import Path

import nats.errors
import nats.js.errors
import pytest

from organs.runtime.bus import BusSettings, Tract, connect, provision
from organs.runtime.limits import StoreLimits
from organs.runtime.server import EmbeddedServer
from tests.bus.helpers import subject_count
from tests.fault.harness import make_pastes, publish_all, tally, wait_for_ends
from tests.fault.test_storage_refusals import (
    LIMIT_VARIABLES,
    fill,
    ichor,
    refusals_logged,
    small_disk,
    start_organs,
    stop_organs,
)
from tests.fault.test_up_server import Up, provisioned

pytestmark = [pytest.mark.bus, pytest.mark.slow]

# The figure: the limit is lifted two minutes after the organs first met it.
LIFT_AFTER_S = 120.0


# Not serial: it asserts outcomes only (every accepted paste admitted once, none dead-lettered), no time or memory
# figure, and it spends its two minutes waiting; in the parallel run that wait overlaps the other tests.
@pytest.mark.waits
async def test_every_paste_accepted_before_a_stream_limit_ends_admitted_once_it_is_lifted(tmp_path: Path) -> None:
    limit = 64 * 1024
    env = {"ICHOR_TRACT_MAX_BYTES": str(limit)}
    with EmbeddedServer(tmp_path / "nats") as server:
        settings = BusSettings(url=server.url, instance="filler", limits=StoreLimits(tract_max_bytes=limit))
        tract = await connect(settings, name="filler")
        organs = []
        try:
            await provision(tract)
            accepted, refused = await fill(tract, "lifted")
            organs = start_organs(server.url, tmp_path / "logs", env)
            await asyncio.sleep(LIFT_AFTER_S)
            held = [event for event in refusals_logged(tmp_path / "logs") if event.get("outcome") == "held"]
            lifted = ichor(server.url, "provision", env={"ICHOR_TRACT_MAX_BYTES": "0"})
            started = time.monotonic()
            await wait_for_ends(tract, len(accepted), timeout=180)
            drained_s = time.monotonic() - started
            counts = await tally(tract, accepted)
        finally:
            stop_organs(organs)
            await tract.nc.close()
    counts.print(
        "stream_limit_lifted",
        refused=refused.cause,
        lifted_after_s=LIFT_AFTER_S,
        held_retries_logged=len(held),
        drained_after_lift_s=round(drained_s, 1),
    )
    assert lifted.returncode == 0 and held
    assert (counts.admitted, counts.lost, counts.duplicated, counts.dead_lettered) == (len(accepted), 0, 0, 0)


# The figures: the disk stays full this long, and writes resume within the goal once it is freed.
DISK_FULL_S = 30.0
RESUME_GOAL_S = 10.0
NO_RESERVATIONS = dict.fromkeys(LIMIT_VARIABLES, "0")


def fill_disk(path: Path) -> int:
    """Write ``path`` until the disk under it is full; the bytes written."""
    written = 0
    with path.open("wb") as ballast:
        try:
            while True:
                ballast.write(b"\0" * (256 * 1024))
                ballast.flush()
                written += 256 * 1024
        except OSError:
            pass
    return written


@pytest.mark.serial
async def test_pastes_in_flight_when_the_disk_fills_all_end_admitted_once_it_is_freed(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", "64m") as disk:
        up = Up(disk / "data", env=NO_RESERVATIONS)
        try:
            started = up.wait_for("nats.embedded_started", timeout=30)
            tract = await provisioned(started["url"])
            pastes = make_pastes(500, "disk-full")
            await publish_all(tract, pastes)
            ballast = disk / "ballast"
            filled = await asyncio.to_thread(fill_disk, ballast)
            before = await stored_ends(tract)
            await asyncio.sleep(DISK_FULL_S)
            during = await stored_ends(tract)
            ballast.unlink()
            freed_at = time.time()
            resumed_s = await _seconds_until_ends_grow(tract, during, patience_s=60)
            await wait_for_ends(tract, len(pastes), timeout=180)
            counts = await tally(tract, pastes)
            await tract.nc.close()
        finally:
            code = up.stop()
    restarted = up.named("nats.embedded_restarted")
    reopened = up.named("nats.embedded_storage_reopened")
    admitted = [event for event in up.named("border.admitted") if _at(event) > freed_at]
    server_said = [event for event in up.named("nats.server") if "no space left" in str(event.get("message"))]
    counts.print(
        "disk_full",
        disk_mib=64,
        ballast_bytes=filled,
        ends_when_full=before,
        ends_while_full=during,
        writes_resumed_after_free_s=round(resumed_s, 2),
        server_restarts_by_supervisor=len(restarted),
        server_restarted_after_free_s=[round(_at(event) - freed_at, 2) for event in restarted],
        storage_reopened_in_place=len(reopened),
        storage_reopened_after_free_s=[round(_at(event) - freed_at, 2) for event in reopened],
        server_said_no_space=len(server_said),
        first_admitted_after_free_s=round(min(_at(event) for event in admitted) - freed_at, 2),
        restarts_by_hand=0,
    )
    # Whether the server itself hit the full disk (and said so, in ichor up's log) depends on what it was writing
    # in those 30 s; it is printed above (server_said_no_space), and what must hold either way follows: its storage
    # is reopened in place, never by a restart.
    assert not restarted, "a full disk heals by a configuration reload, with no restart of the server"
    if reopened:
        assert server_said, "the storage was reopened for a full disk, and the server's own words are in the log"
    assert resumed_s <= RESUME_GOAL_S * 2  # the goal is 10 s; a loaded 2-core machine gets slack
    assert (counts.admitted, counts.lost, counts.duplicated, counts.dead_lettered) == (len(pastes), 0, 0, 0)
    assert code == 0


def _at(event: dict[str, object]) -> float:
    return datetime.fromisoformat(str(event["timestamp"]).replace("Z", "+00:00")).timestamp()


async def stored_ends(tract: Tract) -> int:
    """The tract's ends as its stream counts them: no consumer is made (a full disk refuses one)."""
    subjects = tract.subjects
    return await subject_count(tract, subjects.brain_in) + await subject_count(tract, subjects.border_rejected)


async def _seconds_until_ends_grow(tract: Tract, ends: int, patience_s: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < patience_s:
        with contextlib.suppress(TimeoutError, nats.errors.Error, nats.js.errors.Error):
            # Short: a request in flight when the server restarted is lost, and would wait out the JetStream timeout.
            if await asyncio.wait_for(stored_ends(tract), timeout=1.0) > ends:
                return time.monotonic() - started
        await asyncio.sleep(0.2)
    return float("inf")
