"""Fixtures shared by every suite: a real nats-server per test, organs in-process."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from organs.runtime.bus import BusSettings, Tract, connect, provision
from organs.runtime.organ import OrganBuilder, serve_organ
from organs.runtime.server import EmbeddedServer
from organs.runtime.worker import Worker


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[EmbeddedServer]:
    """A real nats-server with JetStream on a free port, stopped after the test."""
    server = EmbeddedServer(tmp_path / "nats").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def bus_settings(nats_server: EmbeddedServer) -> BusSettings:
    return BusSettings(url=nats_server.url, instance="test-1")


@pytest.fixture
async def tract(bus_settings: BusSettings) -> AsyncIterator[Tract]:
    """A client connection with the tract provisioned."""
    connection = await connect(bus_settings, name="ichor-test")
    await provision(connection)
    try:
        yield connection
    finally:
        await connection.nc.close()


@contextlib.asynccontextmanager
async def running_organ(organ: str, settings: BusSettings, build: OrganBuilder) -> AsyncIterator[list[Worker]]:
    """Serve an organ in this event loop until the block exits, then stop it cleanly."""
    stop = asyncio.Event()
    ready: asyncio.Future[list[Worker]] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(serve_organ(organ, settings, build, stop, on_ready=ready.set_result))
    try:
        done, _ = await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED, timeout=20)
        if task in done:
            task.result()
        yield await ready
    finally:
        stop.set()
        await asyncio.wait_for(task, timeout=20)
