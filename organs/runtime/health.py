"""``/healthz``, ``/readyz`` and ``/metrics`` of one organ process, on the organ's own event loop.

* ``/healthz``: 200 while the process is alive and its event loop responsive (a ticker on the
  loop has run within ``STALL_S``); an answer that does not come at all means the loop is stuck.
* ``/readyz``: 200 once the organ is connected to NATS and every consumer is bound, else 503
  with the reason; a load balancer or compose sends work only to a ready organ.
* ``/metrics``: the Prometheus text format (``organs.runtime.metrics``).

A plain HTTP/1.1 server on ``asyncio.start_server``: one GET per connection, closed after the
answer, which is all a probe or a scraper needs.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import time
from collections.abc import Awaitable, Callable, Sequence
from importlib.metadata import version

import nats.errors

from envelopes.types import Envelope
from organs.errors import ConfigError
from organs.runtime.logs import get_logger
from organs.runtime.metrics import ConsumerView, OrganMetrics
from organs.runtime.usage import read_usage
from organs.runtime.worker import Output, Worker

__all__ = ["STALL_S", "HealthServer", "OrganProbes"]

# The package's version, as ``ichor --version`` prints it (read here: the runtime sits below the package root).
_VERSION = version("ichor-organs")

# A loop that has not run its ticker for this long is reported unhealthy.
STALL_S = 5.0
_TICK_S = 0.5
_READ_TIMEOUT_S = 5.0
# A scrape waits this long for the bus's view of a consumer.
_BUS_TIMEOUT_S = 1.0
_REASONS = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 503: "Service Unavailable"}
_TEXT = "text/plain; charset=utf-8"
_METRICS = "text/plain; version=0.0.4; charset=utf-8"

Readiness = Callable[[], tuple[bool, str]]
"""Ready or not, and why, in a few words."""


class HealthServer:
    """Serves the three paths for one organ on ``host:port`` until closed."""

    def __init__(self, organ: str, host: str, port: int, ready: Readiness, metrics: Callable[[], Awaitable[str]]):
        self.organ = organ
        self.host = host
        self.port = port
        self._ready = ready
        self._metrics = metrics
        self._server: asyncio.Server | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._last_tick = time.monotonic()
        self.log = get_logger(organ)

    async def start(self) -> HealthServer:
        try:
            self._server = await asyncio.start_server(self._answer, self.host, self.port)
        except OSError as error:
            raise ConfigError(
                f"ICHOR_METRICS_PORT={self.port} (host {self.host}) is not allowed: cannot listen there: {error}"
            ) from None
        self.port = self._server.sockets[0].getsockname()[1]
        self._ticker = asyncio.create_task(self._tick())
        self.log.info("health.serving", host=self.host, port=self.port, paths=["/healthz", "/readyz", "/metrics"])
        return self

    async def close(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), timeout=1.0)

    async def _tick(self) -> None:
        while True:
            self._last_tick = time.monotonic()
            await asyncio.sleep(_TICK_S)

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=_READ_TIMEOUT_S)
            method, _, rest = request.decode("latin-1").partition(" ")
            path = rest.partition(" ")[0].partition("?")[0]
            status, content_type, body = await self._respond(method, path)
            head = (
                f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode() + (b"" if method == "HEAD" else body))
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _respond(self, method: str, path: str) -> tuple[int, str, bytes]:
        if method not in ("GET", "HEAD"):
            return 405, _TEXT, b"GET only\n"
        if path == "/healthz":
            stalled_s = time.monotonic() - self._last_tick
            if stalled_s > STALL_S:
                return 503, _TEXT, f"event loop stalled {stalled_s:.1f} s\n".encode()
            return 200, _TEXT, b"ok\n"
        if path == "/readyz":
            ready, why = self._ready()
            return (200 if ready else 503), _TEXT, f"{why}\n".encode()
        if path == "/metrics":
            return 200, _METRICS, (await self._metrics()).encode()
        return 404, _TEXT, b"try /healthz, /readyz or /metrics\n"


class OrganProbes:
    """What the three paths report about one organ process: its workers, once it has them, and its metrics."""

    def __init__(self, organ: str) -> None:
        self.metrics = OrganMetrics(organ)
        self.workers: list[Worker] = []

    def attach(self, workers: Sequence[Worker]) -> None:
        """``serve_organ``'s ``on_ready``: the organ is connected and its consumers are made."""
        self.workers = list(workers)
        for worker in self.workers:
            worker.on_settled = functools.partial(self._observe, worker.spec.durable)

    def _observe(self, consumer: str, _: Envelope, outputs: Sequence[Output], seconds: float) -> None:
        self.metrics.observe(consumer, [output.envelope for output in outputs], seconds)

    def readiness(self) -> tuple[bool, str]:
        if not self.workers:
            return False, "starting: not connected to NATS yet"
        if not self.workers[0].tract.nc.is_connected:
            return False, "not connected to NATS"
        unbound = [worker.spec.durable for worker in self.workers if not worker.bound]
        if unbound:
            return False, f"consumer not bound: {', '.join(unbound)}"
        return True, "ready"

    async def scrape(self) -> str:
        views = [await self._view(worker) for worker in self.workers]
        connected = bool(self.workers) and self.workers[0].tract.nc.is_connected
        usage = await read_usage(self.workers[0].tract, self.metrics.organ) if connected else None
        return self.metrics.render(views, connected=connected, usage=usage, version=_VERSION)

    async def _view(self, worker: Worker) -> ConsumerView:
        stats = worker.stats
        view = ConsumerView(
            consumer=worker.spec.durable,
            subject=worker.spec.subject,
            processed=stats.processed,
            failed=stats.errors,
            dead_lettered=stats.dead_lettered,
            bound=worker.bound,
            refusal=stats.last_refusal.partition(":")[0],
        )
        try:
            info = await worker.tract.js.consumer_info(
                worker.tract.subjects.tract_stream, worker.spec.durable, timeout=_BUS_TIMEOUT_S
            )
        except (TimeoutError, nats.errors.Error):
            return view  # the bus's view is left out of this scrape rather than made up
        return dataclasses.replace(
            view, pending=info.num_pending, ack_pending=info.num_ack_pending, redelivered=info.num_redelivered
        )
