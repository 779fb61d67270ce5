"""The tract (stomach → absorption → border) against a raw three-hop JetStream relay.

    python -m bench.tract_bench [--n 500] [--paced 300] [--rate 20] [--variants tract,tract-full,raw,faststream,cores]
    python -m bench.tract_bench --profile stomach      # one organ under pyinstrument (tract-full only)

Each variant gets a fresh embedded nats-server and its own worker processes
(one per hop, or ``replicas`` per hop for the scaling bench), all stopped at
the end. The producer pre-encodes every input and publishes pipelined with
``publish_async`` and a ``Nats-Msg-Id``; core subscriptions on the last
subject(s) are the sink (plus ``ichor.dlq.>`` for the tract's dead letters).

Phases, in order, after a warm-up:

* **paced**: inputs published at a fixed rate every variant sustains (open
  loop), so latency = arrival - send is service time with little queueing;
* **burst**: N inputs back to back; throughput = outputs / (last arrival -
  first send); latency then includes queueing behind earlier inputs. Relays
  run three bursts and the median counts.

Variants: ``tract`` (default config: the stomach steps down under backlog),
``tract-full`` (every paste at full tier), ``raw`` (bench/relay_hop.py),
``faststream`` (bench/faststream_hop.py), ``cores`` (the pure cores in-process,
no bus). The relays carry the very bytes of the tract's input envelopes. Tract
outputs are matched to inputs by the envelope's trace id; relay outputs by a
header. CPU per input of every process is read from /proc during the bursts.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import (
    HOP_KEY_HEADER,
    Item,
    PhaseResult,
    Processes,
    Row,
    Sink,
    burst,
    cpu_seconds,
    embedded_server,
    emit_rows,
    log,
    mixed_paste,
    paced,
    server_traffic,
    subscribe_sink,
    wait_bound,
    wait_stream,
)
from envelopes.ids import utc_now
from organs.anatomy import ORGAN_NAMES, ORGANS
from organs.operations.supervisor import worker_arguments

RELAY_STREAM = "BENCH_RELAY"
RELAY_SUBJECTS = ("relay.in", "relay.h1", "relay.h2", "relay.out")

# The border's per-actor rate limit (60 per 100 s by default) would reject a
# benchmark's flood from one actor; the bench measures throughput, not the limit.
TRACT_ENV = {"ICHOR_BORDER_RATE": "1000000000"}


@dataclass
class VariantResult:
    name: str
    burst: PhaseResult
    paced: PhaseResult | None
    categories: dict[str, int] = field(default_factory=dict)
    reasons: collections.Counter[str] = field(default_factory=collections.Counter)
    duplicates: int = 0
    follow_ups: int = 0
    burst_categories: dict[str, int] = field(default_factory=dict)
    follow_ups_expected: int = 0
    last_follow_up_at: float = 0.0
    paced_rate: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)
    bursts: list[PhaseResult] = field(default_factory=list)
    dead_letters: collections.Counter[str] = field(default_factory=collections.Counter)
    traffic: dict[str, int] = field(default_factory=dict)
    """The server's messages and bytes in and out during the bursts (``/varz``), per burst."""

    def cpu_ms_per_input(self, prefix: str) -> float:
        spent = sum(seconds for label, seconds in self.cpu.items() if label.startswith(prefix))
        return spent / self.burst.sent * 1000 if self.burst.sent else float("nan")

    @property
    def complete_throughput(self) -> float:
        """Burst inputs per second until the last deferred follow-up came out too."""
        if not self.follow_ups_expected or self.follow_ups < self.follow_ups_expected:
            return float("nan")
        first_send = self.burst.first_send
        return self.burst.sent / (self.last_follow_up_at - first_send) if first_send else float("nan")


def paste_items(numbers: range, make_text: Any = mixed_paste, relay: bool = False) -> list[Item]:
    """Encoded paste envelopes, as an upstream organ publishes them (or the same bytes for a relay)."""
    from envelopes.codec import encode
    from envelopes.types import UserInput
    from organs.secretion import paste_envelope

    items = []
    for number in numbers:
        paste = paste_envelope(
            make_text(number), origin=UserInput(actor="bench"), source="ichor-bench", instance="bench", now=utc_now()
        )
        data = encode(paste)
        if relay:
            headers = {"Nats-Msg-Id": paste.id, HOP_KEY_HEADER: paste.trace_id}
            items.append(Item(paste.trace_id, RELAY_SUBJECTS[0], data, headers))
        else:
            headers = {"Nats-Msg-Id": paste.id, "traceparent": paste.trace, "Ichor-Kind": "paste"}
            items.append(Item(paste.trace_id, "ichor.stomach.in", data, headers))
    return items


def tract_key_of(result: VariantResult) -> Any:
    from envelopes.codec import decode
    from envelopes.types import Rejected

    def key_of(msg: Any) -> tuple[str, str] | None:
        envelope = decode(msg.data)
        if getattr(envelope.payload, "follow_up_of", None) is not None:
            result.follow_ups += 1
            result.last_follow_up_at = time.time()
            return None
        if isinstance(envelope.payload, Rejected):
            result.reasons.update(reason.code for reason in envelope.payload.reasons)
        return envelope.trace_id, f"{envelope.kind}:{envelope.tier}"

    return key_of


def relay_key_of(msg: Any) -> tuple[str, str] | None:
    return (msg.headers or {}).get(HOP_KEY_HEADER, ""), "relayed"


def spawn_tract(
    procs: Processes, url: str, replicas: int, env: dict[str, str], profile: str | None, profile_dir: Path | None
) -> None:
    for organ in ORGAN_NAMES:
        for replica in range(replicas):
            args = worker_arguments(organ, url)
            if profile == organ and replica == 0 and profile_dir is not None:
                output = profile_dir / f"profile-{organ}.txt"
                args = ["-m", "pyinstrument", "--interval", "0.0005", "-o", str(output), *args]
            procs.spawn(f"{organ}#{replica}", args, env=env)


def spawn_relay(procs: Processes, url: str, script: str, replicas: int) -> None:
    for hop in range(3):
        for replica in range(replicas):
            procs.spawn(
                f"hop{hop}#{replica}",
                [
                    str(Path(__file__).with_name(script)),
                    "--nats", url,
                    "--stream", RELAY_STREAM,
                    "--durable", f"hop{hop}",
                    "--inbound", RELAY_SUBJECTS[hop],
                    "--outbound", RELAY_SUBJECTS[hop + 1],
                    "--tag", f"h{hop + 1}",
                ],
            )  # fmt: skip


def is_tract(name: str) -> bool:
    return name.startswith("tract")


async def run_variant(
    name: str,
    *,
    n: int,
    warmup: int,
    paced_n: int = 0,
    rate: float = 0.0,
    replicas: int = 1,
    make_text: Any = mixed_paste,
    env: dict[str, str] | None = None,
    wait_follow_ups: bool = False,
    profile: str | None = None,
    profile_dir: Path | None = None,
    timeout: float = 120.0,
    bursts: int = 1,
    on_warm: Callable[[Processes], None] | None = None,
    on_burst_done: Callable[[Processes], None] | None = None,
) -> VariantResult:
    """One variant on a fresh server: warm up, paced phase, burst; everything stopped after.

    ``name`` is ``tract...`` (the organs) or ``raw`` / ``faststream`` (the relays).
    """
    import nats
    from nats.js import api

    relay = not is_tract(name)
    with embedded_server() as server, Processes() as procs:
        nc = await nats.connect(server.url, name=f"bench-{name}")
        try:
            js = nc.jetstream(timeout=10)
            if relay:
                await js.add_stream(
                    api.StreamConfig(
                        name=RELAY_STREAM,
                        subjects=list(RELAY_SUBJECTS),
                        storage=api.StorageType.FILE,
                        duplicate_window=120,
                    )
                )
                spawn_relay(procs, server.url, "relay_hop.py" if name == "raw" else "faststream_hop.py", replicas)
                stream, durables = RELAY_STREAM, {f"hop{hop}": replicas for hop in range(3)}
            else:
                spawn_tract(procs, server.url, replicas, {**TRACT_ENV, **(env or {})}, profile, profile_dir)
                stream, durables = "ICHOR_TRACT", {organ.consumers[0].durable: replicas for organ in ORGANS}
            try:
                await wait_stream(js, stream)
                await wait_bound(js, stream, durables)
            except TimeoutError:
                procs.check()
                raise
            result = VariantResult(name, PhaseResult(0, 0, 0.0, [], 0), None)
            key_of = relay_key_of if relay else tract_key_of(result)
            sinks = [RELAY_SUBJECTS[-1]] if relay else ["ichor.brain.in", "ichor.border.rejected"]
            sink: Sink = await subscribe_sink(nc, sinks, key_of)
            if not relay:

                async def dead_letter(msg: Any) -> None:
                    headers = msg.headers or {}
                    reason = headers.get("Ichor-Dlq-Reason", "?")[:160]
                    result.dead_letters[f"{headers.get('Ichor-Dlq-Organ', '?')}: {reason}"] += 1

                await nc.subscribe("ichor.dlq.>", cb=dead_letter)

            # Distinct numbers per phase, so no two inputs of a run are the same paste.
            warm = await burst(
                js, sink, paste_items(range(1_000_000, 1_000_000 + warmup), make_text, relay), timeout=60
            )
            if warm.missing:
                procs.check()
                raise RuntimeError(
                    f"{name}: {warm.missing} of {warmup} warm-up inputs never came out;"
                    f" dead letters: {dict(result.dead_letters) or 'none'}"
                )
            if on_warm is not None:
                on_warm(procs)
            if paced_n:
                log(f"{name}: paced {paced_n} at {rate:g}/s")
                items = paste_items(range(2_000_000, 2_000_000 + paced_n), make_text, relay)
                result.paced = await paced(js, sink, items, rate=rate, timeout=timeout)
                result.paced_rate = rate
            before = dict(sink.categories)
            pids = {**procs.named_pids(), "nats-server": server.pid, "bench (producer+sink)": os.getpid()}
            cpu_before = {label: cpu_seconds(pid) for label, pid in pids.items()}
            traffic_before = server_traffic(server.monitor_port)
            for repeat in range(bursts):
                log(f"{name}: burst of {n}" + (f" ({repeat + 1}/{bursts})" if bursts > 1 else ""))
                numbers = range(n) if repeat == 0 else range(3_000_000 + repeat * n, 3_000_000 + (repeat + 1) * n)
                result.bursts.append(await burst(js, sink, paste_items(numbers, make_text, relay), timeout=timeout))
            # The median burst by throughput stands for the variant; a short burst on a shared machine is noisy.
            result.burst = sorted(result.bursts, key=lambda phase: phase.throughput)[len(result.bursts) // 2]
            spent = {label: cpu_seconds(pid) - cpu_before[label] for label, pid in pids.items()}
            result.cpu = {label: seconds / bursts for label, seconds in spent.items()}
            traffic_after = server_traffic(server.monitor_port)
            result.traffic = {key: (traffic_after[key] - traffic_before[key]) // bursts for key in traffic_after}
            result.burst_categories = {k: v - before.get(k, 0) for k, v in sink.categories.items()}
            if on_burst_done is not None:
                on_burst_done(procs)
            if wait_follow_ups:
                deferred = sum(v for k, v in sink.categories.items() if k.endswith(":deferred"))
                deadline = time.monotonic() + timeout
                while result.follow_ups < deferred and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                result.follow_ups_expected = deferred
            result.categories = dict(sink.categories)
            result.duplicates = sink.duplicates
            procs.check()
            return result
        finally:
            await nc.close()


def describe(result: VariantResult) -> str:
    b = result.burst
    text = (
        f"{result.name:<10} burst {b.received}/{b.sent} in {b.seconds:.2f}s = {b.throughput:,.1f}/s, "
        f"p50 {b.percentile(50) * 1000:,.0f} ms, p99 {b.percentile(99) * 1000:,.0f} ms"
    )
    if len(result.bursts) > 1:
        text += f" (median of {len(result.bursts)}: " + ", ".join(f"{x.throughput:,.0f}/s" for x in result.bursts) + ")"
    if result.paced is not None:
        p = result.paced
        text += (
            f" | paced {p.received}/{p.sent} at {result.paced_rate:g}/s: p50 {p.percentile(50) * 1000:,.1f} ms,"
            f" p99 {p.percentile(99) * 1000:,.1f} ms"
        )
    if is_tract(result.name):
        text += f" | burst tiers {dict(sorted(result.burst_categories.items()))}"
        if result.follow_ups_expected:
            text += (
                f", deferred follow-ups {result.follow_ups}/{result.follow_ups_expected}"
                f" (complete {result.complete_throughput:,.1f}/s)"
            )
        if result.reasons:
            text += f", rejection reasons {dict(result.reasons)}"
        if result.dead_letters:
            text += f", DEAD LETTERS {dict(result.dead_letters)}"
    if result.duplicates:
        text += f" | DUPLICATES {result.duplicates}"
    if result.cpu:
        spent = ", ".join(f"{label} {seconds / b.sent * 1000:.2f}" for label, seconds in result.cpu.items())
        text += f"\n{'':<10} burst CPU ms per input: {spent}; wall {b.seconds / b.sent * 1000:.2f} ms per input"
    return text


def ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("nan")


def relay_note(relay: VariantResult) -> str:
    return f" (relay: median of {len(relay.bursts)} bursts)" if len(relay.bursts) > 1 else ""


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f}" if seconds >= 0.1 else f"{seconds * 1000:,.1f}"


def around_the_cores(full: VariantResult, serial: float) -> list[Row]:
    """What the organ processes and the server spend per full-tier paste beyond the pure cores' CPU, and the
    bytes the server takes in per paste."""
    sent = full.burst.sent
    organs = sum(seconds for label, seconds in full.cpu.items() if "#" in label) / sent
    server = full.cpu.get("nats-server", 0.0) / sent
    around_ms = (organs + server - serial) * 1000
    rows = [
        Row(
            "tract", "CPU around the cores per full-tier paste (organs + server - cores)", around_ms, unit="ms",
            goal="<= 1", met=around_ms <= 1.0,
            note=f"organs {organs * 1000:.2f} + server {server * 1000:.2f} - cores {serial * 1000:.2f} ms",
        )
    ]  # fmt: skip
    if full.traffic:
        t = full.traffic
        kb_in = t["in_bytes"] / sent / 1000
        rows.append(
            Row(
                "tract", "server bytes in per full-tier paste (/varz)", kb_in, unit="KB", goal="<= 16",
                met=kb_in <= 16,
                note=f"{t['in_msgs'] / sent:.1f} messages in, {t['out_msgs'] / sent:.1f} out, "
                f"{t['out_bytes'] / sent / 1000:.1f} KB out per paste",
            )
        )  # fmt: skip
    return rows


def _at_most(metric: str, value: float, limit: float, note: str) -> Row:
    return Row("tract", metric, value, goal=f"<= {limit:g}", met=value <= limit, note=note)


def _at_least(metric: str, value: float, limit: float, note: str) -> Row:
    return Row("tract", metric, value, goal=f">= {limit:g}", met=value >= limit, note=note)


def rows_for(results: dict[str, VariantResult]) -> list[Row]:
    from organs.counting import counter_for

    tract, full, raw, fast = (results.get(name) for name in ("tract", "tract-full", "raw", "faststream"))
    rows: list[Row] = []
    cores = results.get("cores")
    organs = (
        {}
        if cores is None
        else {label: seconds for label, seconds in cores.cpu.items() if label not in COUNTING_FLOORS}
    )
    if cores is not None and full is not None:
        serial = sum(organs.values())
        # The pure cores back to back on one core, against the tract's full-tier throughput.
        value = full.burst.throughput * serial
        detail = ", ".join(f"{organ} {seconds * 1000:.1f}" for organ, seconds in organs.items())
        rows.append(
            _at_least(
                "tract full-tier / pure cores run serially", value, 1.5,
                f"{full.burst.throughput:,.1f} vs {1 / serial:,.1f}/s; cores ms per paste: {detail}",
            )
        )  # fmt: skip
        rows.extend(around_the_cores(full, serial))
    if raw is None:
        return rows
    r = raw.burst
    if cores is not None and cores.cpu.get(COUNTING_FLOOR):
        # Even if the organs did nothing but count and the bus cost what the raw relay's does, the CPUs of
        # this machine could pass no more than this; with tiktoken counting, as before, for comparison.
        relay_cpu = sum(raw.cpu.values()) / r.sent
        for label, name in ((COUNTING_FLOOR, counter_for().backend), (TIKTOKEN_FLOOR, "tiktoken")):
            floor = cores.cpu[label]
            bound = (os.cpu_count() or 1) / (floor + relay_cpu)
            rows.append(
                Row(
                    "tract", f"bound tract/raw from exact counting alone ({name})", ratio(bound, r.throughput),
                    note=f"{floor * 1000:.2f} ms of counts per paste + {relay_cpu * 1000:.2f} ms of relay CPU per "
                    f"input on {os.cpu_count()} CPUs: at most {bound:,.0f}/s",
                )
            )  # fmt: skip
        floor, codec = cores.cpu[COUNTING_FLOOR], cores.cpu["codec"]
        # Three hops that only pass bytes on, each envelope decoded and encoded once per hop, and the counts: the
        # least any build of the tract spends in its organs with this client and codec; the CPU / floor goal
        # cannot be met below it.
        hops_cpu = sum(seconds for label, seconds in raw.cpu.items() if "#" in label) / r.sent
        rows.append(
            Row(
                "tract", "least tract CPU per paste / exact counting floor (relay hops + codec + counts)",
                (hops_cpu + codec + floor) / floor,
                note=f"{hops_cpu * 1000:.2f} ms of three relay hops per input + {codec * 1000:.2f} ms of envelope "
                f"codec + {floor * 1000:.2f} ms of counts",
            )
        )  # fmt: skip
        if full is not None:
            organ_cpu = sum(seconds for label, seconds in full.cpu.items() if "#" in label) / full.burst.sent
            value = organ_cpu / floor
            rows.append(
                _at_most(
                    "tract CPU per paste / exact counting floor",
                    value,
                    2,
                    f"{organ_cpu * 1000:.2f} ms of organ CPU per full-tier paste vs {floor * 1000:.2f} ms",
                )
            )
    if tract is not None:
        t = tract.burst
        value = ratio(t.throughput, r.throughput)
        tiers = ", ".join(f"{k.split(':')[1]} {v}" for k, v in sorted(tract.burst_categories.items()))
        rows.append(
            _at_least(
                "throughput tract/raw (burst, default tiers)",
                value,
                0.5,
                f"{t.throughput:,.1f} vs {r.throughput:,.1f}/s, N={t.sent}{relay_note(raw)}; tiers {tiers}",
            )
        )
        if tract.follow_ups_expected:
            value = ratio(tract.complete_throughput, r.throughput)
            rows.append(
                Row(
                    "tract", "throughput incl. deferred follow-ups/raw", value,
                    note=f"{tract.complete_throughput:,.1f}/s until {tract.follow_ups}/{tract.follow_ups_expected}"
                    " full re-digests were out",
                )
            )  # fmt: skip
    if full is not None:
        t = full.burst
        value = ratio(t.throughput, r.throughput)
        rows.append(
            _at_least(
                "throughput tract/raw (burst, all full tier)",
                value,
                0.35,
                f"{t.throughput:,.1f} vs {r.throughput:,.1f}/s, N={t.sent}{relay_note(raw)}",
            )
        )
    if tract is not None:
        t = tract.burst
        if tract.paced and raw.paced:
            tp, rp = tract.paced, raw.paced
            value = ratio(tp.percentile(99), rp.percentile(99))
            rows.append(
                _at_most(
                    "p99 latency tract/raw (paced)",
                    value,
                    3,
                    f"{ms(tp.percentile(99))} vs {ms(rp.percentile(99))} ms, {tp.sent} at {tract.paced_rate:g}/s",
                )
            )
            rows.append(
                Row(
                    "tract", "p50 latency tract/raw (paced)", ratio(tp.percentile(50), rp.percentile(50)),
                    note=f"{ms(tp.percentile(50))} vs {ms(rp.percentile(50))} ms",
                )
            )  # fmt: skip
        value = ratio(t.percentile(99), r.percentile(99))
        rows.append(
            _at_most(
                "p99 latency tract/raw (burst)",
                value,
                3,
                f"{ms(t.percentile(99))} vs {ms(r.percentile(99))} ms; mostly queueing behind the burst",
            )
        )
    if fast is not None:
        rows.append(
            Row(
                "tract", "throughput FastStream/raw (reference)", ratio(fast.burst.throughput, r.throughput),
                note=f"{fast.burst.throughput:,.1f} vs {r.throughput:,.1f}/s",
            )
        )  # fmt: skip
        if fast.paced and raw.paced:
            fp, rp = fast.paced, raw.paced
            rows.append(
                Row(
                    "tract", "p99 latency FastStream/raw (paced, ref)", ratio(fp.percentile(99), rp.percentile(99)),
                    note=f"{ms(fp.percentile(99))} vs {ms(rp.percentile(99))} ms",
                )
            )  # fmt: skip
    for variant in (tract, full):
        if variant is None:
            continue
        outputs = sum(variant.categories.values())
        rejected = sum(v for k, v in variant.categories.items() if k.startswith("rejected"))
        missing = variant.burst.missing + (variant.paced.missing if variant.paced else 0)
        rows.append(
            Row(
                "tract", f"{variant.name} outputs rejected", float(rejected), unit="", goal="0",
                met=rejected == 0 and missing == 0 and variant.duplicates == 0 and not variant.dead_letters,
                note=f"{outputs} outputs, {missing} missing, {variant.duplicates} duplicated,"
                f" {sum(variant.dead_letters.values())} dead-lettered"
                + (f"; reasons {dict(variant.reasons)}" if variant.reasons else ""),
            )
        )  # fmt: skip
    return rows


# The exact token counting any build must do per paste, timed in the ``cores`` variant; not an organ. Timed
# with the serving backend, and with the tiktoken reference for comparison.
COUNTING_FLOOR = "exact counting floor"
TIKTOKEN_FLOOR = "exact counting floor, tiktoken"
COUNTING_FLOORS = (COUNTING_FLOOR, TIKTOKEN_FLOOR)

# Every paste digested at full tier: the stomach never steps down for backlog.
FULL_TIER_ENV = {"ICHOR_SHALLOW_BACKLOG": "1000000000", "ICHOR_DEFERRED_BACKLOG": "1000000000"}


def pure_cores(n: int) -> dict[str, float]:
    """Seconds per paste of each organ's pure core (and the codec), in this process, no bus.

    The same pastes, every one at full tier: what the three organs compute per
    paste when nothing else runs, the floor under the tract's CPU per paste.
    """
    from envelopes.codec import decode, encode
    from organs.absorption.core import yield_context
    from organs.accounting import encoding_for
    from organs.border.decide import BorderConfig, border_decide
    from organs.border.guard import BorderPolicy, GuardState, RateLimit
    from organs.counting import counter_for
    from organs.stomach import IngestConfig, ingest_paste
    from organs.stomach.worker import digest_paste

    config = IngestConfig()
    border = BorderConfig(policy=BorderPolicy(rate=RateLimit(capacity=1_000_000_000)))
    state = GuardState()
    spent = {"stomach": 0.0, "absorption": 0.0, "border": 0.0, "codec": 0.0, COUNTING_FLOOR: 0.0, TIKTOKEN_FLOOR: 0.0}
    reference = encoding_for(config.encoding)
    items = paste_items(range(5_000_000, 5_000_000 + n + 5))
    for index, item in enumerate(items):
        # CPU of this thread, not the wall clock: on a loaded machine the wall clock counts other jobs' turns.
        clock = time.thread_time
        t0 = clock()
        paste = decode(item.data)
        t1 = clock()
        digested = digest_paste(paste, ingest_paste(paste.payload.text, config), instance="bench", now=utc_now())
        t2 = clock()
        digested = decode(encode(digested))
        t3 = clock()
        yielded = yield_context(digested, "bench", now=utc_now())
        t4 = clock()
        yielded = decode(encode(yielded))
        t5 = clock()
        admitted = border_decide(yielded, border, state, instance="bench", now=time.time(), at=utc_now())
        t6 = clock()
        encode(admitted)
        t7 = clock()
        frames = digested.payload.frames  # type: ignore[union-attr]
        text = paste.payload.text  # type: ignore[union-attr]
        served = [frame.content for frame in frames if frame.content is not None]
        # The counts no build can skip: every segment in full and the served text (the stomach), and the
        # served text again (the border must not take a sender's word for it).
        floor_texts = [text[frame.span[0] : frame.span[1]] for frame in frames] + served + served
        counter = counter_for(config.encoding)
        for counted in floor_texts:
            counter.count_afresh(counted)
        t8 = clock()
        for counted in floor_texts:
            reference.encode_ordinary(counted)
        t9 = clock()
        if index < 5:
            continue  # warm-up: the encoding loads on first use
        spent["stomach"] += t2 - t1
        spent["absorption"] += t4 - t3
        spent["border"] += t6 - t5
        spent["codec"] += (t1 - t0) + (t3 - t2) + (t5 - t4) + (t7 - t6)
        spent[COUNTING_FLOOR] += t8 - t7
        spent[TIKTOKEN_FLOOR] += t9 - t8
    return {organ: seconds / n for organ, seconds in spent.items()}


async def run_all(args: argparse.Namespace) -> dict[str, VariantResult]:
    results: dict[str, VariantResult] = {}
    for name in args.variants.split(","):
        started = time.monotonic()
        if name == "cores":
            cores = pure_cores(args.cores_n)
            results[name] = VariantResult(name, PhaseResult(args.cores_n, args.cores_n, 0.0, [], 0), None)
            results[name].cpu = cores
            line = "cores      pure cores per paste, in-process: " + ", ".join(
                f"{organ} {seconds * 1000:.2f} ms" for organ, seconds in cores.items()
            )
            log(line)
            print(line, flush=True)
            continue
        results[name] = await run_variant(
            name,
            n=args.n,
            warmup=args.warmup,
            paced_n=0 if name == "tract-full" else args.paced,
            rate=args.rate,
            env=FULL_TIER_ENV if name == "tract-full" else None,
            wait_follow_ups=name == "tract",
            bursts=1 if is_tract(name) else args.relay_bursts,
            profile=args.profile,
            profile_dir=Path(args.profile_dir),
        )
        line = describe(results[name])
        log(f"{line} ({time.monotonic() - started:.0f}s)")
        print(line, flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="tract versus raw relay")
    parser.add_argument("--n", type=int, default=500, help="inputs in the burst")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--paced", type=int, default=300, help="inputs in the paced phase (0 skips it)")
    parser.add_argument("--rate", type=float, default=20.0, help="paced rate, inputs per second")
    parser.add_argument("--relay-bursts", type=int, default=3, help="bursts per relay; the median counts")
    parser.add_argument("--variants", default="tract,tract-full,raw,faststream,cores")
    parser.add_argument("--cores-n", type=int, default=100, help="pastes for the in-process pure-core timing")
    parser.add_argument("--profile", choices=ORGAN_NAMES, help="run this organ under pyinstrument (tract only)")
    parser.add_argument("--profile-dir", default="/tmp")
    args = parser.parse_args(argv)
    if args.profile:
        args.variants = "tract-full"
    results = asyncio.run(run_all(args))
    emit_rows(rows_for(results))
    if args.profile:
        print(f"profile written to {Path(args.profile_dir) / f'profile-{args.profile}.txt'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
