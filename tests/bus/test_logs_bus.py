"""Logs as an operator reads them: one format per run, and a trace id on every line that names an envelope."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.bus.test_cli_bus import EXAMPLE, ROOT, ichor

pytestmark = pytest.mark.bus


def _up(data: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "organs.cli", "up", "--port", "0", "--data", str(data)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env={**{k: v for k, v in os.environ.items() if k != "ICHOR_NATS_URL"}, **env},
    )


def _url_from(process: subprocess.Popen[str], lines: list[str]) -> str:
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line)
        if "nats.embedded_started" in line:
            if line.startswith("{"):
                return str(json.loads(line)["url"])
            return re.sub(r"\x1b\[[0-9;]*m", "", line).split("url=")[1].split()[0]
    raise AssertionError("ichor up never reported its embedded server")


def _stopped(process: subprocess.Popen[str], lines: list[str]) -> list[str]:
    process.send_signal(signal.SIGTERM)
    rest, _ = process.communicate(timeout=60)
    return lines + rest.splitlines()


def test_every_line_is_json_and_every_line_naming_an_envelope_has_its_trace(tmp_path: Path) -> None:
    process = _up(tmp_path / "data", ICHOR_MAX_PASTE_BYTES="16384", ICHOR_LARGE_PASTE_BYTES="8192")
    lines: list[str] = []
    try:
        url = _url_from(process, lines)
        assert (
            ichor("ingest", str(EXAMPLE), "--nats", url, "--data", str(tmp_path / "data"), "--timeout", "60").returncode
            == 0
        )
        # Too large: the stomach dead-letters it and the host gets its rejection.
        assert (
            ichor(
                "ingest",
                "-",
                "--nats",
                url,
                "--data",
                str(tmp_path / "data"),
                "--timeout",
                "60",
                stdin="Why?\n\n" + "z" * 20000,
            ).returncode
            == 4
        )
    finally:
        lines = _stopped(process, lines)
    events: list[dict[str, Any]] = [json.loads(line) for line in lines if line.strip()]
    naming = [event for event in events if event.get("envelope_id")]
    assert {event["event"] for event in naming} >= {
        "stomach.digested",
        "envelope.handled",
        "border.admitted",
        "envelope.dead_lettered",
    }
    assert [event for event in naming if not event.get("trace_id")] == []
    [dead] = [event for event in events if event["event"] == "envelope.dead_lettered"]
    assert isinstance(dead["dead_letter_id"], int) and dead["rejection_id"]


def test_ichor_up_hands_its_log_format_to_its_workers(tmp_path: Path) -> None:
    process = _up(tmp_path / "data", ICHOR_LOG_FORMAT="console")
    lines: list[str] = []
    try:
        url = _url_from(process, lines)
        assert (
            ichor("ingest", str(EXAMPLE), "--nats", url, "--data", str(tmp_path / "data"), "--timeout", "60").returncode
            == 0
        )
    finally:
        lines = _stopped(process, lines)
    worker_lines = [line for line in lines if "envelope.handled" in line]
    assert len(worker_lines) == 3, "one per organ"
    assert [line for line in lines if line.lstrip().startswith("{")] == []


def test_debug_adds_each_input_as_received_and_what_it_gave(tmp_path: Path) -> None:
    process = _up(tmp_path / "data", ICHOR_LOG_LEVEL="debug")
    lines: list[str] = []
    try:
        url = _url_from(process, lines)
        assert (
            ichor("ingest", str(EXAMPLE), "--nats", url, "--data", str(tmp_path / "data"), "--timeout", "60").returncode
            == 0
        )
    finally:
        lines = _stopped(process, lines)
    events = [json.loads(line) for line in lines if line.strip()]
    received = [event for event in events if event["event"] == "envelope.received"]
    published = [event for event in events if event["event"] == "envelope.published"]
    assert sorted(event["organ"] for event in received) == ["absorption", "border", "stomach"]
    assert all(event["trace_id"] and event["delivered"] == 1 and event["bytes"] > 0 for event in received)
    assert {event["organ"]: len(event["outputs"]) for event in published} == {
        "stomach": 1,
        "absorption": 1,
        # The brain's copy and the sealed sender's own (the secure default's tenancy).
        "border": 2,
    }


def test_ichor_mcp_http_logs_its_servers_warnings_as_json(tmp_path: Path) -> None:
    import socket
    import time

    from organs.runtime.server import EmbeddedServer, free_port

    server = EmbeddedServer(tmp_path / "nats").start()
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "organs.cli", "mcp", "--http", str(port), "--nats", server.url],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                connection = socket.create_connection(("127.0.0.1", port), timeout=1)
                break
            except OSError:
                assert time.monotonic() < deadline and process.poll() is None, "ichor mcp --http did not listen"
                time.sleep(0.2)
        # Not HTTP at all: the HTTP server says so at warning level.
        with connection:
            connection.sendall(b"\x00\x01 not http\r\n\r\n")
            connection.recv(1024)
        time.sleep(0.5)
    finally:
        process.terminate()
        _, err = process.communicate(timeout=30)
        server.stop()
    events = [json.loads(line) for line in err.splitlines() if line.strip()]
    assert "mcp.serving" in {event["event"] for event in events}
    assert any(event["event"].startswith("uvicorn") and event["level"] == "warning" for event in events), err
