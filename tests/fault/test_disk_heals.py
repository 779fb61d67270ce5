"""A full disk heals without restarting the server (#28): once room returns, ``ichor up``'s keeper has the running
nats-server reload its configuration (JetStream off, then on), which reopens the store that kept its write error.

The disk is a small tmpfs filled by a ballast file while a stream takes writes: the server then reports the
critical write error and refuses every later write to that stream, even after the ballast is gone, until its
JetStream is started again. The scenario prints when writes resumed and that the server's pid never changed.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import nats.errors
import nats.js.errors
import pytest
import structlog
from nats.js import api

from organs.operations.supervisor import ServerKeeper
from organs.runtime.server import EmbeddedServer
from tests.fault.test_exhaustion import RESUME_GOAL_S, fill_disk
from tests.fault.test_storage_refusals import small_disk

pytestmark = [pytest.mark.bus, pytest.mark.slow, pytest.mark.serial]

PAYLOAD = b"x" * 16_384
WRITE_WAIT_S = 1.0
MAX_WRITES_WHILE_FULL = 20


async def _write(js: nats.js.JetStreamContext) -> bool:
    """One write to the stream: whether the server stored it."""
    try:
        await js.publish("heal.w", PAYLOAD, timeout=WRITE_WAIT_S)
    except (nats.errors.TimeoutError, nats.js.errors.APIError, nats.errors.NoRespondersError):
        return False
    return True


def _checked_until(keeper: ServerKeeper, patience_s: float) -> float:
    """Run the keeper's checks (as ``ichor up`` does, twice a second) until it reopened the storage: the seconds."""
    started = time.monotonic()
    while keeper.reopened == 0 and keeper.restarts == 0 and time.monotonic() - started < patience_s:
        keeper.check()
        time.sleep(0.5)
    return time.monotonic() - started


async def test_a_full_disk_heals_by_a_reload_with_no_server_restart(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", "16m") as disk:
        # The server's own limit far above the disk, so the disk itself fills.
        server = EmbeddedServer(disk / "nats", max_file_store=1 << 30)
        keeper = ServerKeeper(server, structlog.get_logger("keeper"))
        server.on_line = keeper.heard
        with server:
            pid = server.pid
            nc = await nats.connect(server.url)
            js = nc.jetstream()
            await js.add_stream(api.StreamConfig(name="HEAL", subjects=["heal.>"]))
            before = [await _write(js) for _ in range(3)]
            ballast = disk / "ballast"
            await asyncio.to_thread(fill_disk, ballast)
            # Written until the server meets the full disk and says so (its first write there usually does).
            while_full: list[bool] = []
            said: list[str] = []
            while not said and len(while_full) < MAX_WRITES_WHILE_FULL:
                while_full.append(await _write(js))
                said = [line for line in server.output_tail(200).splitlines() if "no space left" in line]
            ballast.unlink()
            freed_at = time.monotonic()
            # Room again, yet the store keeps its error until the keeper acts.
            after_free = await _write(js)
            checked_s = await asyncio.to_thread(_checked_until, keeper, 30.0)
            resumed = await _write(js)
            resumed_s = time.monotonic() - freed_at
            stored = (await js.stream_info("HEAL")).state.messages
            await nc.close()
            same_pid = server.pid == pid
    print(
        f"\n[fault:disk_heals] before={before} while_full={while_full} after_free_before_reload={after_free} "
        f"reopened_in_place={keeper.reopened} restarts={keeper.restarts} keeper_acted_after_s={checked_s:.2f} "
        f"writes_resumed_after_free_s={resumed_s:.2f} same_server_pid={same_pid} stored={stored}"
        f"\n  server_said={said[:1]}"
    )
    assert all(before) and not any(while_full) and said, "the disk filled and the server said so"
    assert not after_free, "a store that met the full disk keeps refusing after room returns"
    assert (keeper.reopened, keeper.restarts, same_pid) == (1, 0, True)
    assert resumed and resumed_s <= RESUME_GOAL_S
    # Everything stored before the disk filled, and the write after, is there: reopened, not recreated.
    assert stored == len(before) + 1
