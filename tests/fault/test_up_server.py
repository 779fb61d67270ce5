"""``ichor up`` watches its embedded nats-server (#28): a killed server is logged and started again on the same
data directory and port, the organs resume and nothing is lost; a server that cannot start again stops ``ichor up``
with a non-zero exit. The server's own output is in the supervisor's log, one structured object per line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import nats.errors
import nats.js.errors
import pytest

from organs.runtime.bus import BusSettings, Tract, connect
from tests.bus.test_cli_bus import ROOT
from tests.fault.harness import make_pastes, publish_all, tally, wait_for_ends

pytestmark = [pytest.mark.bus, pytest.mark.slow, pytest.mark.serial]

# The goal for a killed server to be back.
BACK_GOAL_S = 5.0


class Up:
    """``ichor up`` as a process, its log read into events as it runs."""

    def __init__(self, data: Path, env: dict[str, str] | None = None) -> None:
        # The open mode, said so: these scenarios are about the server's life and the disk, and their clients
        # (publisher, counter) connect without an identity.
        self.process = subprocess.Popen(
            [sys.executable, "-m", "organs.cli", "up", "--insecure", "--port", "0", "--data", str(data)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=ROOT,
            env={**{key: value for key, value in os.environ.items() if key != "ICHOR_NATS_URL"}, **(env or {})},
        )
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with contextlib.suppress(json.JSONDecodeError):
                event = json.loads(line)
                if isinstance(event, dict):
                    self.events.append(event)

    def named(self, name: str) -> list[dict[str, Any]]:
        return [event for event in list(self.events) if event.get("event") == name]

    def wait_for(self, name: str, timeout: float, count: int = 1) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while len(self.named(name)) < count and time.monotonic() < deadline and self.process.poll() is None:
            time.sleep(0.05)
        found = self.named(name)
        assert len(found) >= count, f"ichor up never logged {name} ({count}); exit code {self.process.poll()}"
        return found[count - 1]

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=60)
        self._reader.join(timeout=10)
        return code


async def provisioned(url: str) -> Tract:
    tract = await connect(BusSettings(url=url), name="up-server-observer")
    for _ in range(300):
        with contextlib.suppress(nats.js.errors.NotFoundError):
            await tract.js.stream_info(tract.subjects.tract_stream)
            break
        await asyncio.sleep(0.1)
    return tract


async def _seconds_until_served(tract: Tract, since: float, patience_s: float = 60.0) -> float:
    """Seconds from ``since`` until the server answers a JetStream request again."""
    while time.monotonic() - since < patience_s:
        with contextlib.suppress(TimeoutError, nats.errors.Error, nats.js.errors.Error):
            await asyncio.wait_for(tract.js.stream_info(tract.subjects.tract_stream), timeout=0.5)
            return time.monotonic() - since
        await asyncio.sleep(0.05)
    return float("inf")


async def test_a_killed_server_is_started_again_and_nothing_is_lost(tmp_path: Path) -> None:
    up = Up(tmp_path / "data")
    try:
        started = up.wait_for("nats.embedded_started", timeout=30)
        tract = await provisioned(started["url"])
        before, after = make_pastes(100, "up-before"), make_pastes(100, "up-after")
        await publish_all(tract, before)
        killed_at = time.monotonic()
        os.kill(started["pid"], signal.SIGKILL)
        back_s = await _seconds_until_served(tract, killed_at)
        await publish_all(tract, after)
        await wait_for_ends(tract, len(before) + len(after), timeout=180)
        counts = await tally(tract, before + after)
        await tract.nc.close()
    finally:
        code = up.stop()
    [exited] = up.named("nats.embedded_exited")
    [restarted] = up.named("nats.embedded_restarted")
    ready = [event for event in up.named("nats.server") if event.get("message") == "Server is ready"]
    counts.print("up_server_killed", back_s=round(back_s, 2), restart_took_s=restarted["took_s"], exit_code=code)
    assert exited["exit_code"] == -signal.SIGKILL and exited["pid"] == started["pid"]
    assert restarted["url"] == started["url"] and restarted["pid"] != started["pid"]
    assert len(ready) == 2 and {event["level"] for event in ready} == {"info"}
    assert back_s <= BACK_GOAL_S * 2  # the goal is 5 s; a loaded 2-core machine gets slack
    assert (counts.lost, counts.duplicated, counts.dead_lettered) == (0, 0, 0)
    assert code == 0


async def test_a_server_that_cannot_start_again_stops_ichor_up_with_an_error(tmp_path: Path) -> None:
    up = Up(tmp_path / "data")
    started = up.wait_for("nats.embedded_started", timeout=30)
    port = int(started["url"].rsplit(":", 1)[1])
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
        os.kill(started["pid"], signal.SIGKILL)
        # Taken before the supervisor looks again (every half second): the server cannot listen there.
        for _ in range(100):
            try:
                squatter.bind(("127.0.0.1", port))
                break
            except OSError:
                time.sleep(0.01)
        squatter.listen()
        code = up.process.wait(timeout=90)
        up.stop()
    failures = up.named("nats.embedded_restart_failed")
    print(f"\n[fault:up_server_unrestartable] exit_code={code} attempts={len(failures)}")
    assert code == 1
    assert len(failures) == 3 and all("address already in use" in event["error"] for event in failures)
