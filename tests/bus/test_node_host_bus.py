"""The Node.js host of examples/node-host speaks the contract with no Python: against a real tract."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from organs.absorption import build_absorption
from organs.border.worker import build_border
from organs.runtime.bus import BusSettings, Tract
from organs.stomach.large import PasteLimits
from organs.stomach.worker import build_stomach
from tests.bus.helpers import read_envelopes
from tests.bus.test_cli_bus import ROOT, ichor
from tests.conftest import running_organ
from tests.support.node import node_or_skip, npm_installed

pytestmark = pytest.mark.bus

EXAMPLE = ROOT / "examples" / "node-host"
PASTE = ROOT / "examples" / "paste.txt"


def node_host() -> Path:
    """The example's host.mjs beside its installed dependencies (installed once, cached)."""
    folder = npm_installed("node-host", json.loads((EXAMPLE / "package.json").read_text()))
    shutil.copy(EXAMPLE / "host.mjs", folder / "host.mjs")
    return folder / "host.mjs"


async def run_host(host: Path, url: str, paste: Path, **env: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        node_or_skip(),
        str(host),
        str(paste),
        env={**os.environ, "ICHOR_NATS_URL": url, "ICHOR_TIMEOUT_S": "60", **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=90)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_the_node_host_prints_the_admitted_prompt(tract: Tract, bus_settings: BusSettings) -> None:
    host = node_host()
    async with (
        running_organ("stomach", bus_settings, build_stomach(bus_settings)),
        running_organ("absorption", bus_settings, build_absorption(bus_settings)),
        running_organ("border", bus_settings, build_border(bus_settings)),
    ):
        code, out, err = await run_host(host, bus_settings.url, PASTE, ICHOR_ACTOR="node-ana")
    assert code == 0, err
    [admitted] = await read_envelopes(tract, tract.subjects.brain_in)
    assert out == admitted.payload.prompt.text + "\n"  # type: ignore[union-attr]
    assert admitted.chain.origin.actor == "node-ana"  # type: ignore[union-attr]
    # The goal reached the brain byte for byte from a paste built in another language.
    assert admitted.payload.goal in PASTE.read_text()  # type: ignore[union-attr]


async def test_the_node_host_says_why_a_paste_was_rejected_and_exits_non_zero(
    tract: Tract, bus_settings: BusSettings, tmp_path: Path
) -> None:
    host = node_host()
    big = tmp_path / "big.txt"
    big.write_text("Why is this so long?\n\n" + "x" * 400)
    async with running_organ("stomach", bus_settings, build_stomach(bus_settings, limits=PasteLimits(64, 128))):
        code, out, err = await run_host(host, bus_settings.url, big)
    assert (code, out) == (2, "")
    assert "dead_lettered" in err and "paste.too_large" in err and "ichor dlq show" in err


def test_the_node_host_hands_in_as_the_secure_host_user(tmp_path: Path) -> None:
    host = node_host()
    process = subprocess.Popen(
        [sys.executable, "-m", "organs.cli", "up", "--secure", "--port", "0", "--data", str(tmp_path / "data")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env={key: value for key, value in os.environ.items() if key != "ICHOR_NATS_URL"},
    )
    try:
        url = _embedded_url(process)
        exports = ichor("security", "env", str(tmp_path / "data" / "security"), "host")
        credentials = dict(line.removeprefix("export ").split("=", 1) for line in exports.stdout.splitlines())
        anonymous = subprocess.run(
            [node_or_skip(), str(host), str(PASTE)],
            env={**os.environ, "ICHOR_NATS_URL": url},
            capture_output=True,
            text=True,
            timeout=60,
        )
        admitted = subprocess.run(
            [node_or_skip(), str(host), str(PASTE)],
            env={**os.environ, "ICHOR_NATS_URL": url, "ICHOR_TIMEOUT_S": "60", **credentials},
            capture_output=True,
            text=True,
            timeout=90,
        )
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    assert anonymous.returncode == 1 and "ichor node host:" in anonymous.stderr
    assert admitted.returncode == 0, admitted.stderr
    assert "[frame blake3:" in admitted.stdout


def _embedded_url(process: subprocess.Popen[str]) -> str:
    from tests.bus.test_dead_letter_outcomes_bus import _embedded_url as read_url

    return read_url(process)
