"""Faults of operation: stop signals in every state, whole log lines, one ``ichor up`` per data directory."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import nats.js.errors
import pytest

from envelopes.types import UserInput
from organs.anatomy import STOMACH
from organs.client import hand_in_paste
from organs.operations.supervisor import spawn_worker
from organs.runtime.bus import BusSettings, Tract, connect
from organs.runtime.server import EmbeddedServer
from tests.bus.test_cli_bus import ROOT, start_up
from tests.fault.harness import make_pastes, publish_all, wait_for_ends

pytestmark = pytest.mark.bus

# "Within a few seconds": the stop grace is 2 s; a loaded 2-core machine gets slack.
STOP_LIMIT_S = 8.0
# Nothing listens here.
DEAD_URL = "nats://127.0.0.1:9"


def _seconds_to_stop(process: subprocess.Popen[bytes]) -> float:
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return float("inf")
    return round(time.monotonic() - sent, 2)


@pytest.mark.serial
def test_sigterm_stops_a_worker_that_cannot_reach_its_server(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    with log.open("wb") as output:
        worker = spawn_worker(STOMACH.name, DEAD_URL, stdout=output, stderr=subprocess.STDOUT)
    # Past the start, into the connection attempts: it has said more than once that the server refused it.
    deadline = time.monotonic() + 30
    while log.read_text().count('"bus.error"') < 3 and worker.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert log.read_text().count('"bus.error"') >= 3, log.read_text()[-2000:]
    assert worker.poll() is None, "the worker waits for its server rather than dying"
    stopped_s = _seconds_to_stop(worker)
    print(f"\n[fault:sigterm_unconnected] stopped_after_s={stopped_s} exit_code={worker.returncode}")
    assert stopped_s <= STOP_LIMIT_S
    assert worker.returncode == 0


@pytest.mark.slow
@pytest.mark.serial
async def test_sigterm_stops_a_worker_mid_digest_and_hands_the_paste_on(
    tract: Tract, nats_server: EmbeddedServer
) -> None:
    # Digested by the worker itself, not handed to the large-paste digester: the worker is what is stopped.
    env = {"ICHOR_ACK_WAIT_S": "1", "ICHOR_LARGE_PASTE_BYTES": str(64 << 20), "ICHOR_MAX_PASTE_BYTES": str(128 << 20)}
    doomed = spawn_worker(STOMACH.name, nats_server.url, env=env, stdout=subprocess.DEVNULL)
    others = [
        spawn_worker(organ, nats_server.url, env=env, stdout=subprocess.DEVNULL) for organ in ("absorption", "border")
    ]
    lines = [f"2026-11-29T08:{n % 60:02d}:01Z WARN [db-{n % 7}] slow query {n} took {n % 89}ms" for n in range(40_000)]
    replacement = None
    try:
        digest = asyncio.create_task(
            hand_in_paste(tract, "\n".join(lines), origin=UserInput(actor="mid-digest"), intent="Why?", timeout=120)
        )
        # Until the stomach holds the paste and is digesting it.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(nats.js.errors.NotFoundError):
                info = await tract.js.consumer_info(tract.subjects.tract_stream, STOMACH.consumers[0].durable)
                if info.num_ack_pending:
                    break
            await asyncio.sleep(0.1)
        await asyncio.sleep(1)
        stopped_s = await asyncio.to_thread(_seconds_to_stop, doomed)
        replacement = spawn_worker(STOMACH.name, nats_server.url, env=env, stdout=subprocess.DEVNULL)
        _, outcome = await digest
    finally:
        for process in [doomed, *others, *([replacement] if replacement else [])]:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=30)
    print(f"\n[fault:sigterm_mid_digest] stopped_after_s={stopped_s} outcome={outcome.kind}")
    assert stopped_s <= STOP_LIMIT_S
    assert outcome.kind in ("admitted", "rejected")


def test_a_second_ichor_up_on_the_same_data_directory_is_refused(tmp_path: Path) -> None:
    first, _ = start_up(tmp_path / "data")
    try:
        started = time.monotonic()
        second = subprocess.run(
            [sys.executable, "-m", "organs.cli", "up", "--port", "0", "--data", str(tmp_path / "data")],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )
        refused_s = round(time.monotonic() - started, 2)
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=30)
    print(f"\n[fault:second_up] exit_code={second.returncode} refused_after_s={refused_s} stderr={second.stderr!r}")
    assert second.returncode == 1
    assert len(second.stderr.splitlines()) == 1
    assert "is in use by another ichor up" in second.stderr
    assert first.returncode == 0


@pytest.mark.slow
async def test_ichor_up_forwards_whole_log_lines(tmp_path: Path) -> None:
    # The open mode: this measures the supervisor's log forwarding under load, not who may publish.
    process, url = start_up(tmp_path / "data", "--insecure")
    assert process.stdout is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout or ()), daemon=True)
    reader.start()
    tract = await connect(BusSettings(url=url), name="log-lines", persistent=False)
    try:
        pastes = make_pastes(1000, "loglines")
        # Until the organs have provisioned the tract.
        for _ in range(300):
            with contextlib.suppress(nats.js.errors.NotFoundError):
                await tract.js.stream_info(tract.subjects.tract_stream)
                break
            await asyncio.sleep(0.1)
        await publish_all(tract, pastes)
        await wait_for_ends(tract, len(pastes), timeout=240)
    finally:
        await tract.nc.close()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        reader.join(timeout=10)
    objects = [line for line in lines if line.strip()]
    broken = [line for line in objects if not _one_object(line)]
    handled = sum(1 for line in objects if '"envelope.handled"' in line)
    print(f"\n[fault:log_lines] lines={len(objects)} handled={handled} not_one_object={len(broken)}")
    assert handled >= 3 * len(pastes)
    assert broken == []


def _one_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except json.JSONDecodeError:
        return False
