"""One span per hop when opentelemetry-api is installed (the ``otel`` extra).

The span continues the envelope's W3C ``traceparent``, so every hop of one
paste lands in one trace. Without opentelemetry, or until a tracer provider is
set (the API's default records nothing), no span is built: the traceparent still
travels in the headers, the envelope and every log line.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from envelopes.types import Envelope

__all__ = ["hop_span"]

try:
    from opentelemetry import trace
    from opentelemetry.propagate import extract
except ImportError:  # the otel extra is optional
    trace = None  # type: ignore[assignment]


@contextlib.contextmanager
def hop_span(organ: str, envelope: Envelope) -> Iterator[Any]:
    if trace is None or isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        yield None
        return
    tracer = trace.get_tracer("ichor.organs")
    with tracer.start_as_current_span(
        f"{organ} {envelope.kind}",
        context=extract({"traceparent": envelope.trace}),
        kind=trace.SpanKind.CONSUMER,
        attributes={
            "messaging.system": "nats",
            "messaging.message.id": envelope.id,
            "ichor.organ": organ,
            "ichor.kind": envelope.kind,
            "ichor.tier": envelope.tier or "",
        },
    ) as span:
        yield span
