"""Running one organ as a process: connect, provision, serve, drain on a signal."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from organs.runtime.bus import BusSettings, Tract, connect, provision
from organs.runtime.discovery import register_service
from organs.runtime.logs import get_logger
from organs.runtime.worker import Worker, WorkerSpec

__all__ = ["OrganBuilder", "run_organ", "serve_organ"]

OrganBuilder = Callable[[Tract], Awaitable[Sequence[WorkerSpec]]]
"""Given a live tract, set up the organ's services and return its consumers."""


async def serve_organ(
    organ: str,
    settings: BusSettings,
    build: OrganBuilder,
    stop: asyncio.Event,
    on_ready: Callable[[list[Worker]], Any] | None = None,
    warm_up: Callable[[], Mapping[str, str]] | None = None,
) -> list[Worker]:
    """Serve until ``stop`` is set, then finish in-flight batches and drain the connection.

    ``warm_up`` (say, choosing and checking the token counter) runs on a thread before the organ
    connects, so its cost is paid at start, not by the first envelope; the facts it returns (the
    encoding, the counting backend) are named in the start line and the ``$SRV`` metadata.
    """
    log = get_logger(organ)
    workers: list[Worker] = []

    async def reconnected() -> None:
        log.info("bus.reconnected")
        for worker in workers:
            worker.on_reconnected()

    async def disconnected() -> None:
        log.warning("bus.disconnected")

    async def error(exception: Exception) -> None:
        log.warning("bus.error", error=repr(exception))

    facts = dict(await asyncio.to_thread(warm_up)) if warm_up is not None else {}
    tract = await connect(
        settings,
        name=f"ichor-{organ}-{settings.instance}",
        reconnected_cb=reconnected,
        disconnected_cb=disconnected,
        error_cb=error,
    )
    if settings.provision:
        await provision(tract)
    workers.extend(Worker(tract, spec) for spec in await build(tract))
    await register_service(
        tract.nc, organ, settings.instance, lambda: workers, datetime.now(UTC), f"Ichor {organ} organ", facts
    )
    log.info("organ.started", instance=settings.instance, subjects=[w.spec.subject for w in workers], **facts)
    if on_ready is not None:
        on_ready(workers)
    await asyncio.gather(*(worker.run(stop) for worker in workers))
    # Drain flushes pending publishes and acks before the connection closes.
    await tract.nc.drain()
    log.info("organ.stopped", processed=sum(w.stats.processed for w in workers))
    return workers


def run_organ(
    organ: str, settings: BusSettings, build: OrganBuilder, warm_up: Callable[[], Mapping[str, str]] | None = None
) -> None:
    """The process entry of ``ichor worker``: SIGTERM or SIGINT stops it cleanly."""

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await serve_organ(organ, settings, build, stop, warm_up=warm_up)

    asyncio.run(main())
