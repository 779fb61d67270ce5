"""Running one organ as a process: connect, provision, serve, drain on a signal."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import nats.errors

from organs.errors import BusUnavailableError
from organs.runtime.bus import BusSettings, Tract, connect, provision
from organs.runtime.discovery import register_service
from organs.runtime.faults import worker_type
from organs.runtime.health import HealthServer, OrganProbes
from organs.runtime.liveness import beat_while, making_progress
from organs.runtime.logs import get_logger
from organs.runtime.worker import Worker, WorkerSpec

__all__ = ["OrganBuilder", "run_organ", "serve_organ"]

_T = TypeVar("_T")

# ``ichor worker``'s exit code when its connection was closed under it (its supervisor restarts it).
EXIT_CONNECTION_CLOSED = 75
# How long a stopping organ waits for its last publishes and acks to be flushed.
DRAIN_TIMEOUT_S = 3.0

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
    closed_unasked = False
    tract: Tract | None = None

    async def reconnected() -> None:
        log.info("bus.reconnected")
        for worker in workers:
            worker.on_reconnected()

    async def disconnected() -> None:
        log.warning("bus.disconnected")

    async def error(exception: Exception) -> None:
        log.warning("bus.error", error=repr(exception))

    async def closed() -> None:
        # nats-py closes a connection for good on a server's protocol error and never reconnects it: an
        # organ left so would look alive and serve nothing, so it stops and its supervisor starts it anew.
        nonlocal closed_unasked
        if not stop.is_set():
            closed_unasked = True
            log.error("bus.closed", error=repr(tract.nc.last_error) if tract else None, action="exit")
            stop.set()

    facts = dict(await asyncio.to_thread(warm_up)) if warm_up is not None else {}
    # A server that cannot be reached is waited for, but never longer than a stop signal.
    tract = await _unless_stopped(
        stop,
        connect(
            settings,
            name=f"ichor-{organ}-{settings.instance}",
            reconnected_cb=reconnected,
            disconnected_cb=disconnected,
            error_cb=error,
            closed_cb=closed,
        ),
    )
    if tract is None:
        log.info("organ.stopped", processed=0, reason="stopped before the bus was reached")
        return workers
    if settings.provision:
        await _unless_stopped(stop, provision(tract))
    if stop.is_set():
        await tract.nc.close()
        log.info("organ.stopped", processed=0, reason="stopped while provisioning")
        return workers
    # The crash tests' fault switches install a worker that dies where they say; otherwise a plain one.
    worker = worker_type(tract.settings)
    workers.extend(worker(tract, spec) for spec in await build(tract))
    await register_service(
        tract.nc, organ, settings.instance, lambda: workers, datetime.now(UTC), f"Ichor {organ} organ", facts
    )
    log.info("organ.started", instance=settings.instance, subjects=[w.spec.subject for w in workers], **facts)
    if on_ready is not None:
        on_ready(workers)
    await asyncio.gather(*(worker.run(stop) for worker in workers))
    await _drain_or_close(tract)
    log.info("organ.stopped", processed=sum(w.stats.processed for w in workers))
    if closed_unasked:
        raise BusUnavailableError(f"the connection of organ {organ} to {settings.url} was closed; it stopped")
    return workers


async def _drain_or_close(tract: Tract) -> None:
    """Drain flushes pending publishes and acks before the connection closes; a server that is
    away cannot be drained to, and the inputs it holds come back to another replica anyway."""
    try:
        await asyncio.wait_for(tract.nc.drain(), timeout=DRAIN_TIMEOUT_S)
    except (TimeoutError, nats.errors.Error):
        await tract.nc.close()


async def _unless_stopped(stop: asyncio.Event, work: Awaitable[_T]) -> _T | None:
    """The result of ``work``, or ``None`` once ``stop`` is set first (``work`` is then cancelled)."""
    task = asyncio.ensure_future(work)
    stopped = asyncio.create_task(stop.wait())
    await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
    return None


def run_organ(
    organ: str,
    settings: BusSettings,
    build: OrganBuilder,
    warm_up: Callable[[], Mapping[str, str]] | None = None,
    health: tuple[str, int] | None = None,
    liveness: Path | None = None,
) -> None:
    """The process entry of ``ichor worker``: SIGTERM or SIGINT stops it within seconds, in any state.

    With ``health`` (host, port), ``/healthz``, ``/readyz`` and ``/metrics`` are served there from the start;
    with ``liveness``, that file is touched while the organ makes progress (``organs.runtime.liveness``).
    """

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        probes = OrganProbes(organ)
        if liveness is not None:
            beating = asyncio.create_task(beat_while(liveness, lambda: making_progress(probes.workers), stop))
        server = None
        if health is not None:
            server = await HealthServer(organ, *health, ready=probes.readiness, metrics=probes.scrape).start()
        try:
            workers = await serve_organ(organ, settings, build, stop, on_ready=probes.attach, warm_up=warm_up)
        except BusUnavailableError as error:
            # The connection was closed under it: exit non-zero, at once (a digest may still run on a thread).
            print(f"ichor worker {organ}: {error}", file=sys.stderr)
            _leave_now(EXIT_CONNECTION_CLOSED)
        finally:
            if server is not None:
                await server.close()
            if liveness is not None:
                beating.cancel()
        if any(worker.abandoned for worker in workers):
            # An abandoned digest still runs on a thread that cannot be interrupted, and the
            # interpreter would wait for it at exit; its input is nak'ed already, so leave now.
            _leave_now(0)

    asyncio.run(main())


def _leave_now(code: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
