"""``ichor mcp`` as a real subprocess, driven by the ``mcp`` package's own client, against a real tract."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import ResourceLink, TextContent

from envelopes.codec import encode
from envelopes.ids import digest_text
from envelopes.types import Digested, Envelope, Frame, UserInput
from organs.client import store_blob
from organs.mcp.schemas import FrameLinesArgs, GetFrameArgs, GrepFrameArgs, input_schema
from organs.runtime.bus import BusSettings, Tract
from organs.runtime.server import free_port
from organs.secretion import paste_envelope
from organs.stomach.worker import build_stomach
from tests.bus.helpers import read_envelopes, wait_for_count
from tests.conftest import running_organ
from tests.support.envelopes import AT
from tests.support.servers import mcp_over_http, small_tract

pytestmark = pytest.mark.bus

ROOT = Path(__file__).resolve().parents[2]
LOG_LINES = 2000


def _log_line(number: int) -> str:
    # Every 97th line fails, so the count of failures is known exactly.
    if number % 97 == 0:
        return f"2026-03-01T10:{number // 60 % 60:02d}:{number % 60:02d}Z ERROR upload {number} failed: disk quota"
    return f"2026-03-01T10:{number // 60 % 60:02d}:{number % 60:02d}Z INFO upload {number} stored in {number % 13} ms"


LOG = "\n".join(_log_line(number) for number in range(1, LOG_LINES + 1))
PASTE = LOG + "\n\nWhy do some uploads fail?"
FAILED_LINES = [number for number in range(1, LOG_LINES + 1) if number % 97 == 0]


def _server(url: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "organs.cli", "mcp", "--nats", url], cwd=str(ROOT), env=dict(os.environ)
    )


async def _digest(tract: Tract, paste: Envelope | None = None) -> Frame:
    """Hand ``paste`` (by default one of ``PASTE``) to a real stomach; the log frame it made."""
    if paste is None:
        paste = paste_envelope(PASTE, origin=UserInput(actor="ana"), source="test-host", instance="t", now=AT)
    await tract.js.publish(tract.subjects.stomach_in, encode(paste), headers={"Nats-Msg-Id": paste.id})
    assert await wait_for_count(tract, tract.subjects.absorption_in, 1) == 1
    [digested] = await read_envelopes(tract, tract.subjects.absorption_in)
    assert isinstance(digested.payload, Digested)
    [log_frame] = [frame for frame in digested.payload.frames if frame.kind == "log"]
    return log_frame


def _text(result: object) -> str:
    content = result.content  # type: ignore[attr-defined]
    return "\n".join(block.text for block in content if isinstance(block, TextContent))


async def test_the_tools_serve_a_frame_whole_grepped_and_by_lines(tract: Tract, bus_settings: BusSettings) -> None:
    async with running_organ("stomach", bus_settings, build_stomach(bus_settings)):
        log_frame = await _digest(tract)
        async with Client(_server(bus_settings.url), read_timeout_seconds=60) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == {"get_frame", "grep_frame", "frame_lines"}
            for name, args in (
                ("get_frame", GetFrameArgs),
                ("grep_frame", GrepFrameArgs),
                ("frame_lines", FrameLinesArgs),
            ):
                assert tools[name].input_schema == input_schema(args), "the schema is the msgspec type's"
            [template] = (await client.list_resource_templates()).resource_templates
            assert template.uri_template == "ichor://frame/{hex}"
            assert "get_frame" in (client.instructions or "")

            whole = await client.call_tool("get_frame", {"id": log_frame.id, "full": True})
            assert not whole.is_error
            header, _, body = _text(whole).partition("\n")
            assert header.startswith(f"[frame {log_frame.id} · log · full")
            assert body == LOG and digest_text(body) == log_frame.id
            [link] = [block for block in whole.content if isinstance(block, ResourceLink)]
            assert link.uri == "ichor://frame/" + log_frame.id.removeprefix("blake3:")
            resource = await client.read_resource(link.uri)
            assert digest_text(resource.contents[0].text) == log_frame.id  # type: ignore[union-attr]

            compact = await client.call_tool("get_frame", {"id": log_frame.id})
            assert not compact.is_error and len(_text(compact)) < len(LOG)

            grep = await client.call_tool(
                "grep_frame", {"id": log_frame.id, "pattern": r"ERROR upload \d+", "context": 0}
            )
            assert not grep.is_error
            lines = _text(grep).splitlines()
            assert f"{len(FAILED_LINES)} matching lines in {LOG_LINES:,} of {LOG_LINES:,}" in lines[0]
            assert [line for line in lines[1:] if line != "--"] == [f"{n}:{_log_line(n)}" for n in FAILED_LINES]

            bounded = await client.call_tool("grep_frame", {"id": log_frame.id, "pattern": "INFO", "max_lines": 5})
            bounded_lines = _text(bounded).splitlines()
            assert "stopped: reached max_lines=5" in bounded_lines[1]
            assert [
                line.split(":", 1)[0] for line in bounded_lines[2:] if line[: line.index("2026")].endswith(":")
            ] == ["1", "2", "3", "4", "5"]

            window = await client.call_tool("frame_lines", {"id": log_frame.id, "start": 96, "end": 98})
            assert _text(window).splitlines()[1:] == [f"{n}:{_log_line(n)}" for n in (96, 97, 98)]


async def test_every_error_is_a_tool_error_with_a_message(tract: Tract, bus_settings: BusSettings) -> None:
    unknown = "blake3:" + "0" * 64
    async with Client(_server(bus_settings.url), read_timeout_seconds=60) as client:
        # The bus is up but no stomach serves frames yet.
        absent = await client.call_tool("get_frame", {"id": unknown})
        assert absent.is_error and "no stomach answers" in _text(absent)
        async with running_organ("stomach", bus_settings, build_stomach(bus_settings)):
            log_frame = await _digest(tract)
            cases = {
                "no frame": ("get_frame", {"id": unknown, "full": True}),
                "pattern refused": ("grep_frame", {"id": log_frame.id, "pattern": "(a+)+$"}),
                "backreferences": ("grep_frame", {"id": log_frame.id, "pattern": r"(\w)\1"}),
                "not a valid regular expression": ("grep_frame", {"id": log_frame.id, "pattern": "[z-a]"}),
                "bad arguments for get_frame": ("get_frame", {"id": "frame-1"}),
                "bad arguments for grep_frame": ("grep_frame", {"id": log_frame.id}),
                "past the last": ("frame_lines", {"id": log_frame.id, "start": 5000, "end": 5001}),
                "1 <= start <= end": ("frame_lines", {"id": log_frame.id, "start": 9, "end": 3}),
                "unknown tool": ("drop_frame", {"id": log_frame.id}),
            }
            for expected, (name, arguments) in cases.items():
                result = await client.call_tool(name, arguments)
                assert result.is_error, (name, arguments)
                assert expected in _text(result), (expected, _text(result))
            with pytest.raises(MCPError, match="no frame"):
                await client.read_resource("ichor://frame/" + "0" * 64)
            with pytest.raises(MCPError, match="not a frame URI"):
                await client.read_resource("ichor://frame/xyz")
            # Still serving after every error.
            assert not (await client.call_tool("frame_lines", {"id": log_frame.id, "start": 1, "end": 1})).is_error


async def test_with_the_bus_down_a_call_says_so(tmp_path: Path) -> None:
    dead = f"nats://127.0.0.1:{free_port()}"
    async with Client(_server(dead), read_timeout_seconds=60) as client:
        result = await client.call_tool("get_frame", {"id": "blake3:" + "1" * 64})
        assert result.is_error and "the bus is down" in _text(result)
        assert {tool.name for tool in (await client.list_tools()).tools} == {"get_frame", "grep_frame", "frame_lines"}


async def test_streamable_http_serves_the_same_tools(tract: Tract, bus_settings: BusSettings) -> None:
    async with running_organ("stomach", bus_settings, build_stomach(bus_settings)):
        log_frame = await _digest(tract)
        async with (
            mcp_over_http(bus_settings.url) as served,
            Client(served.endpoint, read_timeout_seconds=60) as client,
        ):
            lines = await client.call_tool("frame_lines", {"id": log_frame.id, "start": 1, "end": 2})
            assert _text(lines).splitlines()[1:] == [f"1:{_log_line(1)}", f"2:{_log_line(2)}"]


async def test_a_frame_larger_than_a_message_is_read_from_the_store(tmp_path: Path) -> None:
    async with small_tract(tmp_path / "small", max_payload=128 * 1024, instance="small") as (settings, tract):
        big_log = "\n".join(_log_line(number) for number in range(1, 4001))
        text = big_log + "\n\nWhy do some uploads fail?"
        assert len(big_log) > 128 * 1024
        async with running_organ("stomach", settings, build_stomach(settings)):
            reference = await store_blob(tract, text.encode())
            paste = paste_envelope(
                "",
                origin=UserInput(actor="ana"),
                source="t",
                instance="t",
                text_ref=reference,
                input_digest=reference,
                now=AT,
            )
            log_frame = await _digest(tract, paste)
            async with Client(_server(settings.url), read_timeout_seconds=60) as client:
                whole = await client.call_tool("get_frame", {"id": log_frame.id, "full": True})
                assert not whole.is_error, _text(whole)
                assert digest_text(_text(whole).partition("\n")[2]) == log_frame.id
                last = await client.call_tool("frame_lines", {"id": log_frame.id, "start": 4000, "end": 4000})
                assert _text(last).splitlines()[1:] == [f"4000:{_log_line(4000)}"]


def _post(port: int, headers: dict[str, str]) -> int:
    """The HTTP status of an MCP ``initialize`` request to the server on ``port`` with ``headers``."""
    import json
    import urllib.error
    import urllib.request

    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/mcp",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


async def test_beyond_loopback_http_needs_the_bearer_token_from_the_data_directory_and_checks_host(
    bus_settings: BusSettings, tmp_path: Path
) -> None:
    async with mcp_over_http(bus_settings.url, "--host", "0.0.0.0", "--data", str(tmp_path)) as served:
        port = served.port
        token_file = tmp_path / "security" / "mcp.token"
        assert oct(token_file.stat().st_mode & 0o777) == "0o600"
        token = token_file.read_text().strip()
        here = {"Host": f"127.0.0.1:{port}"}
        statuses = await asyncio.gather(
            asyncio.to_thread(_post, port, here),
            asyncio.to_thread(_post, port, {**here, "Authorization": "Bearer not-the-token"}),
            asyncio.to_thread(_post, port, {**here, "Authorization": f"Bearer {token}"}),
            asyncio.to_thread(_post, port, {"Host": f"evil.example:{port}", "Authorization": f"Bearer {token}"}),
            asyncio.to_thread(
                _post, port, {**here, "Origin": "http://evil.example", "Authorization": f"Bearer {token}"}
            ),
        )
        assert statuses[:3] == [401, 401, 200]
        assert statuses[3] >= 400 and statuses[4] >= 400, statuses
    assert "mcp.unauthorized" in served.stderr
