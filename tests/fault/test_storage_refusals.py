"""The server refuses writes: a stream at its byte limit, then a server out of storage.

Each scenario fills the tract from outside until the server refuses a paste, starts the organs
on what was accepted, and prints what the workers' logs and ``ichor status`` said. The goal:
the cause named in both (the log's ``refusal`` and status's exit 6 with a sentence).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import nats.js.errors
import pytest

from envelopes.codec import encode
from envelopes.types import Envelope
from organs.anatomy import ORGAN_NAMES
from organs.operations.supervisor import spawn_worker
from organs.runtime.bus import BusSettings, Tract, connect, provision
from organs.runtime.limits import StoreLimits
from organs.runtime.refusals import Refusal, refusal_of, unconfirmed_write
from organs.runtime.server import EmbeddedServer, free_port
from tests.bus.test_cli_bus import ROOT
from tests.bus.test_health_bus import get, samples
from tests.fault.harness import FAULT_ENV, make_pastes, wait_for_ends

pytestmark = pytest.mark.bus

NO_LIMITS = StoreLimits(0, 0, 0, 0, 0, 0, 0, 0, 0)
PUBLISH_WAIT_S = 3.0
LIMIT_VARIABLES = (
    "ICHOR_TRACT_MAX_BYTES",
    "ICHOR_DLQ_MAX_BYTES",
    "ICHOR_FRAMES_MAX_BYTES",
    "ICHOR_RAW_MAX_BYTES",
    "ICHOR_INDEX_MAX_BYTES",
    "ICHOR_UPLOADS_MAX_BYTES",
    "ICHOR_UPLOADS_SENDER_MAX_BYTES",
)


async def fill(tract: Tract, run: str) -> tuple[list[Envelope], Refusal]:
    """Pastes published one by one until the server refuses one (or leaves it unconfirmed): those it
    accepted, and why it refused."""
    accepted = []
    for paste in make_pastes(20_000, run):
        try:
            await tract.js.publish(
                tract.subjects.stomach_in, encode(paste), headers={"Nats-Msg-Id": paste.id}, timeout=PUBLISH_WAIT_S
            )
        except (nats.js.errors.APIError, TimeoutError) as error:
            refusal = refusal_of(error) or unconfirmed_write(error, tract.nc.is_connected, PUBLISH_WAIT_S)
            assert refusal is not None, error
            return accepted, refusal
        accepted.append(paste)
    raise AssertionError("the server never refused a paste")


def start_organs(
    url: str, logs: Path, env: dict[str, str], metrics_port: int | None = None
) -> list[subprocess.Popen[bytes]]:
    """One worker per organ, each logging to its own file; with ``metrics_port``, the stomach serves its metrics
    there (the only ones read: a port beside a free one may be taken by another test)."""
    logs.mkdir(parents=True, exist_ok=True)
    return [
        spawn_worker(
            organ,
            url,
            env={
                **FAULT_ENV,
                **env,
                **({"ICHOR_METRICS_PORT": str(metrics_port)} if metrics_port and not index else {}),
            },
            stdout=(logs / f"{organ}.log").open("wb"),
        )
        for index, organ in enumerate(ORGAN_NAMES)
    ]


def stop_organs(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        process.wait(timeout=30)


def refusals_logged(logs: Path) -> list[dict[str, object]]:
    events = []
    for log in logs.glob("*.log"):
        for line in log.read_text().splitlines():
            if line.startswith("{") and '"refusal"' in line:
                event = json.loads(line)
                if event.get("refusal"):
                    events.append(event)
    return events


def wait_for_refusal_logged(logs: Path, timeout: float = 60.0) -> tuple[float, list[dict[str, object]]]:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if events := refusals_logged(logs):
            return round(time.monotonic() - started, 2), events
        time.sleep(0.2)
    return float("inf"), []


def wait_until_ready(url: str, env: dict[str, str], timeout: float = 60.0) -> bool:
    """Whether ``ichor status`` found every organ ready within ``timeout`` seconds."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if ichor(url, "status", "--wait", "1", env=env).returncode == 0:
            return True
        time.sleep(0.5)
    return False


def ichor(
    url: str, *args: str, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "organs.cli", *args, "--nats", url],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


async def test_a_stream_at_its_byte_limit_is_named_in_the_log_and_by_status(tmp_path: Path) -> None:
    limit = 64 * 1024
    env = {"ICHOR_TRACT_MAX_BYTES": str(limit)}
    with EmbeddedServer(tmp_path / "nats") as server:
        settings = BusSettings(url=server.url, instance="filler", limits=StoreLimits(tract_max_bytes=limit))
        tract = await connect(settings, name="filler")
        organs: list[subprocess.Popen[bytes]] = []
        try:
            await provision(tract)
            accepted, refused = await fill(tract, "limit")
            # Larger than the room a refused paste left.
            paste = "Why is the tract full?\n\n" + "ERROR [disk] write refused\n" * 200
            ingest = ichor(server.url, "ingest", "-", "--timeout", "5", env=env, stdin=paste)
            metrics_port = free_port()
            organs = start_organs(server.url, tmp_path / "logs", env, metrics_port)
            named_after_s, events = wait_for_refusal_logged(tmp_path / "logs")
            status = ichor(server.url, "status", "--wait", "1")
            refused_series = samples(get(metrics_port, "/metrics")[2])
            # The operator's answer: lift the limit; the organs' own retries then carry every paste through.
            lifted = ichor(server.url, "provision", env={"ICHOR_TRACT_MAX_BYTES": "0"})
            drained_s = await wait_for_ends(tract, len(accepted), timeout=120)
            after = ichor(server.url, "status", "--wait", "1")
        finally:
            stop_organs(organs)
            await tract.nc.close()
    first = events[0] if events else {}
    print(
        f"\n[fault:stream_limit] max_bytes={limit} accepted={len(accepted)} client_refused={refused.cause} "
        f"named_in_log_after_s={named_after_s} log_refusal={first.get('refusal')} log_reason={first.get('reason')!r}"
        f"\n  ingest_exit={ingest.returncode} ingest_said={ingest.stderr.strip()!r}"
        f"\n  status_exit={status.returncode} status_said={status.stderr.strip()!r}"
        f"\n  lifted_exit={lifted.returncode} drained_after_lift_s={round(drained_s, 2)}"
        f" status_after={after.returncode}"
    )
    assert refused.cause == "limit.max_bytes"
    assert first.get("refusal") == "limit.max_bytes" and "maximum bytes exceeded" in str(first.get("reason"))
    assert ingest.returncode == 1 and "limit.max_bytes" in ingest.stderr and len(ingest.stderr.splitlines()) == 1
    assert refused_series['ichor_write_refused{organ="stomach",consumer="stomach",cause="limit.max_bytes"}'] == 1
    assert status.returncode == 6
    assert "stream ICHOR_TRACT is at its byte limit" in status.stderr
    assert "the server refused its last write: limit.max_bytes" in status.stderr
    assert lifted.returncode == 0 and drained_s < 120
    assert after.returncode == 0, after.stderr


@pytest.mark.slow
async def test_a_server_out_of_storage_is_named_in_the_log_and_by_status(tmp_path: Path) -> None:
    env = dict.fromkeys(LIMIT_VARIABLES, "0")
    with EmbeddedServer(tmp_path / "nats", max_file_store=512 * 1024) as server:
        tract = await connect(BusSettings(url=server.url, instance="filler", limits=NO_LIMITS), name="filler")
        organs: list[subprocess.Popen[bytes]] = []
        try:
            await provision(tract)
            accepted, refused = await fill(tract, "storage")
            organs = start_organs(server.url, tmp_path / "logs", env)
            named_after_s, events = wait_for_refusal_logged(tmp_path / "logs")
            status = ichor(server.url, "status", "--wait", "1", env=env)
        finally:
            stop_organs(organs)
            await tract.nc.close()
    first = events[0] if events else {}
    print(
        f"\n[fault:storage_exhausted] max_file_store=524288 accepted={len(accepted)} client_refused={refused.cause} "
        f"named_in_log_after_s={named_after_s} log_refusal={first.get('refusal')} log_reason={first.get('reason')!r}"
        f"\n  status_exit={status.returncode} status_said={status.stderr.strip()!r}"
    )
    assert refused.cause == "server.insufficient_resources"
    assert first.get("refusal") == "server.insufficient_resources"
    assert status.returncode == 6
    assert "server.insufficient_resources" in status.stderr


@contextlib.contextmanager
def small_disk(path: Path, size: str) -> Iterator[Path]:
    """A filesystem of ``size`` at ``path`` (tmpfs; root only), unmounted afterwards."""
    path.mkdir(parents=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"a small filesystem cannot be mounted here: {mounted.stderr.decode().strip()}")
    try:
        yield path
    finally:
        if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(path)], check=True)


@pytest.mark.slow
async def test_a_full_disk_is_named_in_the_log_and_by_status(tmp_path: Path) -> None:
    # The server's own storage limit far above the disk, so the disk itself fills (no space left on device):
    # the server then answers no write at all, and the silence is what the organs can name.
    env = dict.fromkeys(LIMIT_VARIABLES, "0")
    with small_disk(tmp_path / "disk", "2m") as disk, EmbeddedServer(disk / "nats", max_file_store=1 << 30) as server:
        tract = await connect(BusSettings(url=server.url, instance="filler", limits=NO_LIMITS), name="filler")
        organs = start_organs(server.url, tmp_path / "logs", env)
        try:
            await provision(tract)
            # The organs bound to their streams first: a disk filled while they start refuses their own setup.
            assert await asyncio.to_thread(wait_until_ready, server.url, env), "the organs never became ready"
            accepted, refused = await fill(tract, "disk")
            named_after_s, events = wait_for_refusal_logged(tmp_path / "logs")
            status = ichor(server.url, "status", "--wait", "1", env=env)
        finally:
            stop_organs(organs)
            await tract.nc.close()
        server_said = [line for line in server.output_tail(200).splitlines() if "no space left" in line][:1]
    first = events[0] if events else {}
    print(
        f"\n[fault:disk_full] disk=2MiB accepted={len(accepted)} client_refused={refused.cause} "
        f"named_in_log_after_s={named_after_s} log_refusal={first.get('refusal')} log_reason={first.get('reason')!r}"
        f"\n  status_exit={status.returncode} status_said={status.stderr.strip()!r}"
        f"\n  server_said={server_said}"
    )
    assert server_said, "the disk filled"
    assert refused.cause == "server.write_unconfirmed"
    assert first.get("refusal") == "server.write_unconfirmed" and "disk may be full" in str(first.get("reason"))
    assert status.returncode == 6
    assert "server.write_unconfirmed" in status.stderr and "disk may be full" in status.stderr
