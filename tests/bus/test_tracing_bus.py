"""Each hop is a span of the paste's trace when opentelemetry is installed."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from envelopes.codec import encode
from organs.absorption import build_absorption
from organs.runtime.bus import BusSettings, Tract
from tests.bus.helpers import consumer_settled, read_envelopes, wait_for_count
from tests.conftest import running_organ
from tests.support.envelopes import digested_envelope

pytestmark = pytest.mark.bus

EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="module", autouse=True)
def tracer_provider() -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
    trace.set_tracer_provider(provider)


async def test_a_hop_continues_the_envelope_trace(tract: Tract, bus_settings: BusSettings) -> None:
    digested = digested_envelope()
    async with running_organ("absorption", bus_settings, build_absorption(bus_settings)):
        await tract.js.publish(tract.subjects.absorption_in, encode(digested), headers={"Nats-Msg-Id": digested.id})
        await wait_for_count(tract, tract.subjects.border_in, 1)
        await consumer_settled(tract, "absorption")
    [span] = [span for span in EXPORTER.get_finished_spans() if span.attributes["messaging.message.id"] == digested.id]
    assert span.name == "absorption digested"
    assert format(span.context.trace_id, "032x") == digested.trace_id
    assert span.parent is not None and format(span.parent.span_id, "016x") == digested.trace[36:52]
    [out] = await read_envelopes(tract, tract.subjects.border_in)
    assert out.trace_id == digested.trace_id
