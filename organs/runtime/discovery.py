"""Each organ answers the NATS micro-service protocol (``$SRV.PING|INFO|STATS``).

Stock NATS tooling (``nats micro ls``, ``nats micro stats``) lists and
monitors the organs this way. Each consumer an organ runs is reported as one
endpoint whose stats are the envelopes it handled: requests = processed
envelopes, errors = retries and dead letters, processing time in nanoseconds.
Readiness (connected, stream provisioned, consumer bound) rides in the
endpoint's ``data`` and in the service metadata.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from nats.aio.client import Client
from nats.micro.service import EndpointInfo, EndpointStats, ServiceInfo, ServicePing, ServiceStats

from organs.runtime.worker import Worker

__all__ = ["SERVICE_VERSION", "register_service", "service_name"]

SERVICE_VERSION = "0.1.0"


def service_name(organ: str) -> str:
    return f"ichor-{organ.replace('_', '-')}"


async def register_service(
    nc: Client,
    organ: str,
    instance: str,
    workers: Callable[[], Sequence[Worker]],
    started: datetime,
    description: str,
    facts: Mapping[str, str] | None = None,
) -> None:
    """Answer PING, INFO and STATS for this organ instance on ``nc``, with the ``nats.micro`` reply types;
    ``facts`` join the metadata (the token encoding and the counting backend in use)."""
    name = service_name(organ)
    instance_id = (nc.client_id and f"{instance}-{nc.client_id}") or instance

    def metadata() -> dict[str, str]:
        bound = all(worker.bound for worker in workers())
        ready = "true" if nc.is_connected and bound else "false"
        # The server's last refusal of a write, for ``ichor status`` to name.
        refusal = next((worker.stats.last_refusal for worker in workers() if worker.stats.last_refusal), "")
        return {**(facts or {}), "organ": organ, "instance": instance, "ready": ready, "refusal": refusal}

    def endpoint_stats(worker: Worker) -> EndpointStats:
        stats = worker.stats
        return EndpointStats(
            name=worker.spec.durable,
            subject=worker.spec.subject,
            queue_group=worker.spec.durable,
            num_requests=stats.processed,
            num_errors=stats.errors,
            last_error=stats.last_error,
            processing_time=int(stats.total_ms * 1_000_000),
            average_processing_time=int(stats.average_ms * 1_000_000),
            data={"dead_lettered": stats.dead_lettered, "pending": stats.last_pending, "bound": worker.bound},
        )

    def reply_for(kind: str) -> bytes:
        reply: ServicePing | ServiceInfo | ServiceStats
        if kind == "info":
            endpoints = [
                EndpointInfo(name=worker.spec.durable, subject=worker.spec.subject, queue_group=worker.spec.durable)
                for worker in workers()
            ]
            reply = ServiceInfo(
                name=name,
                id=instance_id,
                version=SERVICE_VERSION,
                description=description,
                endpoints=endpoints,
                metadata=metadata(),
            )
        elif kind == "stats":
            reply = ServiceStats(
                id=instance_id,
                name=name,
                version=SERVICE_VERSION,
                started=started,
                endpoints=[endpoint_stats(worker) for worker in workers()],
                metadata=metadata(),
            )
        else:
            reply = ServicePing(id=instance_id, name=name, version=SERVICE_VERSION, metadata=metadata())
        return json.dumps(reply.to_dict()).encode()

    for verb, kind in (("PING", "ping"), ("INFO", "info"), ("STATS", "stats")):

        async def answer(msg: Any, kind: str = kind) -> None:
            await msg.respond(reply_for(kind))

        for subject in (f"$SRV.{verb}", f"$SRV.{verb}.{name}", f"$SRV.{verb}.{name}.{instance_id}"):
            await nc.subscribe(subject, cb=answer)
