"""The CLI as a script reads it: `ichor tail` when the server goes, `ichor frame` by a short id, `[]` for nothing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from envelopes.types import UserInput
from organs.absorption import build_absorption
from organs.border.worker import build_border
from organs.client import hand_in_paste
from organs.runtime.bus import BusSettings, Tract
from organs.runtime.server import EmbeddedServer
from organs.stomach.worker import build_stomach
from tests.bus.test_cli_bus import ROOT, ichor
from tests.conftest import running_organ

pytestmark = pytest.mark.bus

PASTE = (
    "Why does the nightly export stop?\n\n"
    + "\n".join(f"2026-11-30T01:{n:02d}:00Z INFO export shard {n} done" for n in range(30))
    + "\n2026-11-30T01:31:00Z ERROR export shard 31 failed: connection reset by peer\n"
)


def test_tail_says_the_server_went_away_and_exits_non_zero(tmp_path: Path) -> None:
    server = EmbeddedServer(tmp_path / "nats").start()
    try:
        assert ichor("provision", "--nats", server.url).returncode == 0
        tail = subprocess.Popen(
            [sys.executable, "-m", "organs.cli", "tail", "--nats", server.url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert tail.stderr is not None
        # It says where it reads from once it follows both streams.
        assert "following" in tail.stderr.readline() and "following" in tail.stderr.readline()
    finally:
        server.stop()
    _, err = tail.communicate(timeout=60)
    assert tail.returncode == 1
    assert f"ichor tail: the server at {server.url} went away" in err
    assert "Traceback" not in err


async def test_frame_takes_an_unambiguous_prefix_of_twelve_hex_digits(tract: Tract, bus_settings: BusSettings) -> None:
    async with (
        running_organ("stomach", bus_settings, build_stomach(bus_settings)),
        running_organ("absorption", bus_settings, build_absorption(bus_settings)),
        running_organ("border", bus_settings, build_border(bus_settings)),
    ):
        _, outcome = await hand_in_paste(tract, PASTE, origin=UserInput(actor="t"), timeout=30)
        [frame_id, *_] = re.findall(r"blake3:[0-9a-f]{64}", outcome.payload.prompt.text)  # type: ignore[union-attr]
        short, bare, cut = frame_id[:19], frame_id.removeprefix("blake3:")[:14], frame_id[:24] + "…"
        results = [
            await _ichor_async("frame", given, "--json", "--nats", bus_settings.url) for given in (short, bare, cut)
        ]
        too_short = await _ichor_async("frame", frame_id[:18], "--nats", bus_settings.url)
        unknown = await _ichor_async("frame", "blake3:" + "0" * 12, "--nats", bus_settings.url)
    for code, out, err in results:
        assert code == 0, err
        assert json.loads(out)["id"] == frame_id
    assert too_short[0] == 1 and "the first 12 or more" in too_short[2]
    assert unknown[0] == 1 and "no frame starts with 000000000000" in unknown[2]


async def _ichor_async(*args: str) -> tuple[int, str, str]:
    import asyncio

    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "organs.cli",
        *args,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def test_json_outputs_are_an_empty_array_when_there_is_nothing(nats_server: EmbeddedServer) -> None:
    assert ichor("provision", "--nats", nats_server.url).returncode == 0
    letters = ichor("dlq", "ls", "--json", "--nats", nats_server.url)
    status = ichor("status", "--json", "--wait", "0.2", "--nats", nats_server.url)
    assert (letters.returncode, letters.stdout) == (0, "[]\n")
    assert json.loads(status.stdout) == []
