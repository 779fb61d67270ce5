"""An organ's figures in the Prometheus text format (version 0.0.4), from the standard library.

``OrganMetrics.observe`` is told of every input a worker settled (its outputs and the time it
took); ``render`` writes those figures with each consumer's counts and the bus's view of it.
Every series carries ``organ`` and ``consumer`` (the durable), so one scrape config serves
every organ and replica. Names follow Prometheus's conventions: ``_total`` for counters,
``_seconds`` for durations, base units.
"""

from __future__ import annotations

import bisect
import math
import platform
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from envelopes.types import Admitted, Digested, Envelope, Paste, Rejected, Yield
from organs.anatomy import ORGANS

__all__ = [
    "HANDLING_BUCKETS_S",
    "PASTE_TO_PROMPT_BUCKETS_S",
    "ConsumerView",
    "OrganMetrics",
    "StreamUsage",
    "TractUsage",
    "seconds_between",
    "tokens_of",
]

# From a small paste handled inline (milliseconds) to a deferred full digest (a minute).
HANDLING_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# A paste's whole trip, queues included: from a fraction of a second to a backlog of minutes.
PASTE_TO_PROMPT_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0)


def tokens_of(envelope: Envelope) -> tuple[int | None, int | None, str]:
    """Tokens an envelope took in and gave out at its hop, and the outcome that hop names."""
    payload = envelope.payload
    match payload:
        case Paste():
            return None, None, "submitted"
        case Digested():
            return sum(f.full_tokens for f in payload.frames), sum(f.token_cost for f in payload.frames), "digested"
        case Yield():
            return sum(f.full_tokens for f in payload.frames), payload.meta.actual_cost, "yielded"
        case Admitted():
            return payload.meta.actual_cost, payload.prompt.tokens, "admitted"
        case Rejected():
            return (payload.meta.actual_cost if payload.meta else None), 0, "rejected"
    return None, None, envelope.kind


@dataclass(frozen=True)
class ConsumerView:
    """One consumer as a scrape sees it: the worker's counts and, when the bus answered, the consumer's."""

    consumer: str
    subject: str
    processed: int
    failed: int
    dead_lettered: int
    bound: bool
    pending: int | None = None
    ack_pending: int | None = None
    redelivered: int | None = None
    refusal: str = ""
    """The cause of the server's refusal of the worker's last write ("" when its last write was stored)."""


@dataclass(frozen=True)
class StreamUsage:
    """One stream (the tract's, the dead letters', a store's) as the server reports it at a scrape."""

    stream: str
    messages: int
    bytes: int
    max_bytes: int | None
    """Its byte limit, ``None`` when unlimited."""


@dataclass(frozen=True)
class TractUsage:
    """What a scrape read from the server: the organ's letters in the dead-letter stream and its streams' usage."""

    dead_letters: int | None
    streams: tuple[StreamUsage, ...] = ()


def seconds_between(start: str, end: str) -> float:
    """Seconds from one RFC 3339 UTC time of the contract to another (fractions past microseconds dropped)."""

    def moment(text: str) -> datetime:
        whole, _, fraction = text.removesuffix("Z").partition(".")
        return datetime.fromisoformat(f"{whole}.{(fraction or '0')[:6]:0<6}+00:00")

    return (moment(end) - moment(start)).total_seconds()


@dataclass
class _Histogram:
    bounds: tuple[float, ...] = HANDLING_BUCKETS_S
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    count: int = 0

    def observe(self, seconds: float) -> None:
        if not self.counts:
            self.counts = [0] * len(self.bounds)
        index = bisect.bisect_left(self.bounds, seconds)
        if index < len(self.counts):
            self.counts[index] += 1
        self.total += seconds
        self.count += 1


class OrganMetrics:
    """What one organ process has settled since it started."""

    def __init__(self, organ: str) -> None:
        self.organ = organ
        self.outputs: Counter[tuple[str, str, str]] = Counter()
        self.tokens_in: Counter[str] = Counter()
        self.tokens_out: Counter[str] = Counter()
        self.rejections: Counter[str] = Counter()
        self.handling: dict[str, _Histogram] = {}
        self.paste_to_prompt = _Histogram(PASTE_TO_PROMPT_BUCKETS_S)
        # The organ that publishes prompts exposes their paste-to-prompt time from its first scrape on.
        self.measures_prompts = any(entry.name == organ and "brain_in" in entry.outputs for entry in ORGANS)

    def observe(self, consumer: str, outputs: Iterable[Envelope], seconds: float) -> None:
        self.handling.setdefault(consumer, _Histogram()).observe(seconds)
        for envelope in outputs:
            self.outputs[(consumer, envelope.kind, envelope.tier or "none")] += 1
            tokens_in, tokens_out, _ = tokens_of(envelope)
            self.tokens_in[consumer] += tokens_in or 0
            self.tokens_out[consumer] += tokens_out or 0
            if isinstance(envelope.payload, Rejected):
                for reason in envelope.payload.reasons:
                    self.rejections[reason.code] += 1
            received = envelope.chain.received
            if isinstance(envelope.payload, Admitted) and envelope.payload.follow_up_of is None and received:
                # A paste's first prompt, from when the host made the paste (a follow-up is not a new trip).
                self.paste_to_prompt.observe(max(0.0, seconds_between(received.created_at, envelope.created_at)))

    def render(
        self, consumers: Sequence[ConsumerView], *, connected: bool, usage: TractUsage | None = None, version: str = ""
    ) -> str:
        lines: list[str] = []
        organ = ("organ", self.organ)

        def family(name: str, kind: str, help_text: str, samples: Iterable[tuple[str, dict[str, str], float]]) -> None:
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {kind}")
            for suffix, labels, value in samples:
                lines.append(f"{name}{suffix}{_labels(dict([organ, *labels.items()]))} {_number(value)}")

        def per_consumer(attribute: str) -> list[tuple[str, dict[str, str], float]]:
            return [
                ("", {"consumer": view.consumer}, float(getattr(view, attribute)))
                for view in consumers
                if getattr(view, attribute) is not None
            ]

        family(
            "ichor_build_info",
            "gauge",
            "1, labelled with the version of the organs and of the Python running them.",
            [("", {"version": version, "python": platform.python_version()}, 1.0)],
        )
        family("ichor_bus_connected", "gauge", "1 while the organ is connected to NATS.", [("", {}, float(connected))])
        family("ichor_consumer_bound", "gauge", "1 while the consumer is bound to its durable.", per_consumer("bound"))
        family(
            "ichor_write_refused",
            "gauge",
            "1 while the server refuses the consumer's writes, labelled with the cause.",
            [("", {"consumer": view.consumer, "cause": view.refusal}, 1.0) for view in consumers if view.refusal],
        )
        family("ichor_inputs_processed_total", "counter", "Inputs handled and acked.", per_consumer("processed"))
        family(
            "ichor_inputs_failed_total",
            "counter",
            "Failed attempts at an input: retried (nak) or dead-lettered.",
            per_consumer("failed"),
        )
        family("ichor_inputs_dead_lettered_total", "counter", "Inputs dead-lettered.", per_consumer("dead_lettered"))
        family("ichor_consumer_pending", "gauge", "Inputs the consumer has not delivered yet.", per_consumer("pending"))
        family(
            "ichor_consumer_ack_pending", "gauge", "Inputs delivered and not yet acked.", per_consumer("ack_pending")
        )
        family(
            "ichor_consumer_redelivered",
            "gauge",
            "Inputs delivered more than once and not yet acked.",
            per_consumer("redelivered"),
        )
        self._flow_families(family)
        if usage is not None:
            _usage_families(family, usage)
        return "\n".join(lines) + "\n"

    def _flow_families(
        self, family: Callable[[str, str, str, Iterable[tuple[str, dict[str, str], float]]], None]
    ) -> None:
        """The families of what flowed through: outputs, tokens in and out, rejections, handling times."""
        family(
            "ichor_outputs_total",
            "counter",
            "Envelopes published, by kind and digestion tier.",
            [
                ("", {"consumer": consumer, "kind": kind, "tier": tier}, float(count))
                for (consumer, kind, tier), count in sorted(self.outputs.items())
            ],
        )
        family(
            "ichor_tokens_in_total",
            "counter",
            "Tokens taken in at this hop (the named encoding).",
            [("", {"consumer": consumer}, float(count)) for consumer, count in sorted(self.tokens_in.items())],
        )
        family(
            "ichor_tokens_out_total",
            "counter",
            "Tokens given out at this hop (the named encoding).",
            [("", {"consumer": consumer}, float(count)) for consumer, count in sorted(self.tokens_out.items())],
        )
        family(
            "ichor_rejections_total",
            "counter",
            "Envelopes rejected, by reason code.",
            [("", {"reason": reason}, float(count)) for reason, count in sorted(self.rejections.items())],
        )
        if self.measures_prompts or self.paste_to_prompt.count:
            family(
                "ichor_paste_to_prompt_seconds",
                "histogram",
                "Seconds from a paste's created_at to its prompt's admission, queues included.",
                _buckets({}, self.paste_to_prompt),
            )
        family(
            "ichor_handling_seconds",
            "histogram",
            "Seconds from taking an input to acking it.",
            [
                sample
                for consumer, histogram in sorted(self.handling.items())
                for sample in _buckets({"consumer": consumer}, histogram)
            ],
        )


_Family = Callable[[str, str, str, Iterable[tuple[str, dict[str, str], float]]], None]


def _usage_families(family: _Family, usage: TractUsage) -> None:
    if usage.dead_letters is not None:
        family(
            "ichor_dead_letters",
            "gauge",
            "The organ's letters in the dead-letter stream now (kept across restarts, until replayed or purged).",
            [("", {}, float(usage.dead_letters))],
        )
    streams = sorted(usage.streams, key=lambda stream: stream.stream)
    family(
        "ichor_stream_messages",
        "gauge",
        "Messages a stream or store holds.",
        [("", {"stream": s.stream}, float(s.messages)) for s in streams],
    )
    family(
        "ichor_stream_bytes",
        "gauge",
        "Bytes a stream or store holds.",
        [("", {"stream": s.stream}, float(s.bytes)) for s in streams],
    )
    family(
        "ichor_stream_max_bytes",
        "gauge",
        "A stream's or store's byte limit (absent when unlimited).",
        [("", {"stream": s.stream}, float(s.max_bytes)) for s in streams if s.max_bytes is not None],
    )


def _buckets(labels: dict[str, str], histogram: _Histogram) -> list[tuple[str, dict[str, str], float]]:
    samples = []
    running = 0
    for bound, count in zip(histogram.bounds, histogram.counts or [0] * len(histogram.bounds), strict=True):
        running += count
        samples.append(("_bucket", {**labels, "le": _number(bound)}, float(running)))
    samples.append(("_bucket", {**labels, "le": "+Inf"}, float(histogram.count)))
    samples.append(("_sum", labels, histogram.total))
    samples.append(("_count", labels, float(histogram.count)))
    return samples


def _labels(labels: dict[str, str]) -> str:
    return "{" + ",".join(f'{key}="{_escape(value)}"' for key, value in labels.items()) + "}"


def _escape(value: str) -> str:
    # The text format's three escapes in label values: backslash, double quote, line feed.
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return str(int(value)) if float(value).is_integer() else repr(float(value))
