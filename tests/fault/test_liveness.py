"""The supervisor restarts a worker that runs but makes no progress (#28), and only such a worker."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest

from organs.operations.supervisor import Supervisor
from organs.runtime.server import EmbeddedServer

pytestmark = pytest.mark.bus

# Short, so the scenario is quick; the default is ``organs.runtime.liveness.STALE_AFTER_S``.
STALL_AFTER_S = 4.0
# Nothing listens here.
DEAD_URL = "nats://127.0.0.1:9"


class RecordedLog:
    """The supervisor's structured log, kept as (level, event, fields)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, dict[str, Any]]] = []

    def __getattr__(self, level: str) -> Any:
        return lambda event, **fields: self.events.append((level, event, fields))

    def named(self, event: str) -> list[dict[str, Any]]:
        return [fields for _, name, fields in self.events if name == event]


def _checked_until(supervisor: Supervisor, done: Any, timeout: float) -> float:
    started = time.monotonic()
    while not done() and time.monotonic() - started < timeout:
        supervisor.check()
        time.sleep(0.2)
    return time.monotonic() - started


@pytest.mark.serial
def test_a_worker_that_stops_making_progress_is_killed_and_restarted(tmp_path: Path) -> None:
    log = RecordedLog()
    with EmbeddedServer(tmp_path / "nats") as server:
        supervisor = Supervisor(server.url, log, liveness_dir=tmp_path / "liveness", stall_after_s=STALL_AFTER_S)
        try:
            supervisor.spawn("stomach")
            beat = tmp_path / "liveness" / "stomach"
            _checked_until(supervisor, beat.exists, timeout=60)
            frozen = supervisor.children["stomach"]
            # Alive to the kernel, silent to the bus: what a wedged loop looks like from outside.
            frozen.send_signal(signal.SIGSTOP)
            waited_s = _checked_until(supervisor, lambda: supervisor.children["stomach"] is not frozen, timeout=60)
            replaced = supervisor.children["stomach"]
            assert replaced is not frozen and replaced.poll() is None
        finally:
            supervisor.stop()
    [stalled] = log.named("supervisor.worker_stalled")
    assert stalled["worker"] == "stomach" and stalled["silent_s"] >= STALL_AFTER_S  # rounded to 0.1 s
    print(f"\n[fault:stalled_worker] restarted_after_s={waited_s:.1f} stall_after_s={STALL_AFTER_S}")


def test_a_worker_waiting_for_its_server_is_not_restarted(tmp_path: Path) -> None:
    log = RecordedLog()
    supervisor = Supervisor(DEAD_URL, log, liveness_dir=tmp_path / "liveness", stall_after_s=STALL_AFTER_S)
    try:
        supervisor.spawn("stomach")
        first = supervisor.children["stomach"]
        _checked_until(supervisor, lambda: False, timeout=STALL_AFTER_S * 3)
        assert supervisor.children["stomach"] is first and first.poll() is None
    finally:
        supervisor.stop()
    assert log.named("supervisor.worker_stalled") == []
