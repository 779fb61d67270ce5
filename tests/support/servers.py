"""A tract on its own small server, for the tests of what does not fit in one message."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from organs.runtime.bus import BusSettings, Tract, connect, provision
from organs.runtime.server import EmbeddedServer

__all__ = ["small_tract"]


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
