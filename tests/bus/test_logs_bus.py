"""Logs as an operator reads them: one format per run, and a trace id on every line that names an envelope."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from organs.runtime.server import EmbeddedServer
from tests.bus.test_cli_bus import EXAMPLE, ROOT, ichor
from tests.support.servers import mcp_over_http

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


def _ingest(url: str, data: Path, paste: str | None) -> int:
    """The exit code of ``ichor ingest`` of ``paste`` on its stdin (None: the example paste's file)."""
    source = str(EXAMPLE) if paste is None else "-"
    return ichor("ingest", source, "--nats", url, "--data", str(data), "--timeout", "60", stdin=paste).returncode


def _logged_by_up(data: Path, pastes: tuple[str | None, ...] = (None,), **env: str) -> tuple[list[str], list[int]]:
    """What ``ichor up`` (with ``env``) printed from its start to its stop while each of ``pastes`` was handed
    in by ``ichor ingest`` (None: the example paste), and the exit code of each ingest."""
    process = _up(data, **env)
    lines: list[str] = []
    exits: list[int] = []
    try:
        url = _url_from(process, lines)
        exits = [_ingest(url, data, paste) for paste in pastes]
    finally:
        lines = _stopped(process, lines)
    return lines, exits


def test_every_line_is_json_and_every_line_naming_an_envelope_has_its_trace(tmp_path: Path) -> None:
    # The second paste is too large: the stomach dead-letters it and the host gets its rejection.
    too_large = "Why?\n\n" + "z" * 20000
    limits = {"ICHOR_MAX_PASTE_BYTES": "16384", "ICHOR_LARGE_PASTE_BYTES": "8192"}
    lines, exits = _logged_by_up(tmp_path / "data", (None, too_large), **limits)
    assert exits == [0, 4]
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
    lines, exits = _logged_by_up(tmp_path / "data", ICHOR_LOG_FORMAT="console")
    assert exits == [0]
    worker_lines = [line for line in lines if "envelope.handled" in line]
    assert len(worker_lines) == 3, "one per organ"
    assert [line for line in lines if line.lstrip().startswith("{")] == []


def test_debug_adds_each_input_as_received_and_what_it_gave(tmp_path: Path) -> None:
    lines, exits = _logged_by_up(tmp_path / "data", ICHOR_LOG_LEVEL="debug")
    assert exits == [0]
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


async def test_ichor_mcp_http_logs_its_servers_warnings_as_json(tmp_path: Path) -> None:
    server = EmbeddedServer(tmp_path / "nats").start()
    try:
        async with mcp_over_http(server.url) as served:
            # Not HTTP at all: the HTTP server says so at warning level.
            reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
            writer.write(b"\x00\x01 not http\r\n\r\n")
            await reader.read(1024)
            writer.close()
            await asyncio.sleep(0.5)
    finally:
        server.stop()
    events = [json.loads(line) for line in served.stderr.splitlines() if line.strip()]
    assert "mcp.serving" in {event["event"] for event in events}
    levels = [event["level"] for event in events if event["event"].startswith("uvicorn")]
    assert "warning" in levels, served.stderr
