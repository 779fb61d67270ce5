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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On pytest-xdist's workers (``make test``), start the tests that mostly wait (marked ``waits``) first and
    spread the bus tests evenly among the others. Every worker sorts the same way, as pytest-xdist requires; a
    run without workers keeps the collected order.
    """
    if not hasattr(config, "workerinput"):
        return
    # The scheduler's first batch, for the first worker, begins with the first item: a long wait started there
    # overlaps the rest of the run on the other workers, where one started late would be the run's tail.
    waiting = [item for item in items if item.get_closest_marker("waits")]
    rest = [item for item in items if not item.get_closest_marker("waits")]
    items[:] = waiting + _interleaved(rest)


def _interleaved(items: list[pytest.Item]) -> list[pytest.Item]:
    """The bus tests spread evenly among the others.

    A bus test spends much of its time waiting on a server, a subprocess or a redelivery; in the order
    they are collected the bus tests come together, and the workers would wait at once while a core
    idles. Spread out, one worker's wait is the other's turn to compute.
    """
    bus = [item for item in items if item.get_closest_marker("bus")]
    others = [item for item in items if not item.get_closest_marker("bus")]
    if not bus or not others:
        return items

    def place(index: int, count: int) -> float:
        return (index + 0.5) / count

    spread = sorted(
        [(place(index, len(bus)), 0, index, item) for index, item in enumerate(bus)]
        + [(place(index, len(others)), 1, index, item) for index, item in enumerate(others)],
        key=lambda entry: entry[:3],
    )
    return [item for *_, item in spread]


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
