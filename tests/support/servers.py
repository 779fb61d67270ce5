"""Servers the tests start: a tract on its own small server, for what does not fit in one message, and
``ichor mcp`` over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from organs.runtime.bus import BusSettings, Tract, connect, provision
from organs.runtime.server import EmbeddedServer, free_port

__all__ = ["McpOverHttp", "mcp_over_http", "small_tract"]

ROOT = Path(__file__).resolve().parents[2]


@contextlib.asynccontextmanager
async def small_tract(data_dir: Path, *, max_payload: int, instance: str) -> AsyncIterator[tuple[BusSettings, Tract]]:
    """A provisioned tract on a fresh server whose messages hold at most ``max_payload`` bytes."""
    server = EmbeddedServer(data_dir, max_payload=max_payload).start()
    try:
        settings = BusSettings(url=server.url, instance=instance)
        tract = await connect(settings, name=instance)
        try:
            await provision(tract)
            yield settings, tract
        finally:
            await tract.nc.close()
    finally:
        server.stop()


@dataclass
class McpOverHttp:
    """An ``ichor mcp --http`` process: where it listens, and (once it has stopped) what it wrote to stderr."""

    port: int
    stderr: str = ""

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


@contextlib.asynccontextmanager
async def mcp_over_http(nats_url: str, *options: str) -> AsyncIterator[McpOverHttp]:
    """``ichor mcp --http`` (with ``options``) on a free port against ``nats_url``, once it accepts connections;
    stopped on leaving."""
    served = McpOverHttp(free_port())
    command = ["mcp", "--http", str(served.port), *options, "--nats", nats_url]
    process = subprocess.Popen(
        [sys.executable, "-m", "organs.cli", *command],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not _accepts(served.port):
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "ichor mcp --http did not start listening"
            await asyncio.sleep(0.2)
        yield served
    finally:
        process.terminate()
        served.stderr = process.communicate(timeout=30)[1]
