"""The tract (stomach → absorption → border) against a raw three-hop JetStream relay.

    python -m bench.tract_bench [--n 500] [--warmup 30] [--paced 120] [--variants tract,raw,faststream]
    python -m bench.tract_bench --profile stomach      # one organ under pyinstrument

Each variant gets a fresh embedded nats-server and its own worker processes
(one per hop; ``--replicas`` per hop for the scaling bench). The producer
pre-encodes every input and publishes pipelined with ``publish_async`` and a
``Nats-Msg-Id``; a core subscription on the last subject(s) is the sink.

* **burst**: N inputs published back to back; throughput = outputs / (last
  arrival - first send); latency = arrival - send, so under a burst it includes
  the queueing behind earlier inputs.
* **paced**: inputs published at a fixed rate all variants can sustain (half
  the tract's burst throughput, capped), so latency is per-input service time
  with little queueing.

The relays carry the very bytes of the tract's input envelopes. Tract outputs
are matched to inputs by the envelope's trace id; relay outputs by a header.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import (
    Item,
    PhaseResult,
    Processes,
    Row,
    Sink,
    burst,
    embedded_server,
    emit_rows,
    log,
    mixed_paste,
    paced,
    subscribe_sink,
    wait_bound,
    wait_stream,
)

ORGANS = ("stomach", "absorption", "border")
ORGAN_DURABLES = {"stomach": "stomach", "absorption": "absorption", "border": "border"}
RELAY_STREAM = "BENCH_RELAY"
RELAY_SUBJECTS = ("relay.in", "relay.h1", "relay.h2", "relay.out")
KEY_HEADER = "Bench-Key"

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
    rss_kib: dict[int, int] = field(default_factory=dict)
    paced_rate: float = 0.0


def paste_items(numbers: range, make_text: Any = mixed_paste, relay: bool = False) -> list[Item]:
    """Encoded paste envelopes, as an upstream organ publishes them (or the same bytes for a relay)."""
    from envelopes.codec import encode
    from envelopes.types import UserInput
    from organs.secretion import paste_envelope

    items = []
    for number in numbers:
        paste = paste_envelope(
            make_text(number), origin=UserInput(actor="bench"), source="ichor-bench", instance="bench"
        )
        data = encode(paste)
        if relay:
            headers = {"Nats-Msg-Id": paste.id, KEY_HEADER: paste.trace_id}
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
            return None
        if isinstance(envelope.payload, Rejected):
            result.reasons.update(reason.code for reason in envelope.payload.reasons)
        return envelope.trace_id, f"{envelope.kind}:{envelope.tier}"

    return key_of


def relay_key_of(msg: Any) -> tuple[str, str] | None:
    return (msg.headers or {}).get(KEY_HEADER, ""), "relayed"


def spawn_tract(procs: Processes, url: str, replicas: int, profile: str | None, profile_dir: Path | None) -> None:
    for organ in ORGANS:
        for replica in range(replicas):
            args = ["-m", "organs.cli", "worker", organ, "--nats", url]
            if profile == organ and replica == 0 and profile_dir is not None:
                output = profile_dir / f"profile-{organ}.txt"
                args = ["-m", "pyinstrument", "--interval", "0.0005", "-o", str(output), *args]
            procs.spawn(f"{organ}#{replica}", args, env=TRACT_ENV)


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


async def run_variant(
    name: str,
    *,
    n: int,
    warmup: int,
    paced_n: int,
    rate: float | Callable[[float], float] | None,
    replicas: int = 1,
    make_text: Any = mixed_paste,
    profile: str | None = None,
    profile_dir: Path | None = None,
    timeout: float = 120.0,
    sample_rss: bool = False,
) -> VariantResult:
    """Run one variant (``tract``, ``raw`` or ``faststream``) on a fresh server and stop everything."""
    import nats
    from nats.js import api

    relay = name != "tract"
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
                spawn_tract(procs, server.url, replicas, profile, profile_dir)
                stream, durables = "ICHOR_TRACT", {d: replicas for d in ORGAN_DURABLES.values()}
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

            base = 10_000_000 * (1 + ("tract", "raw", "faststream").index(name))
            warm = await burst(js, sink, paste_items(range(base, base + warmup), make_text, relay), timeout=60)
            if warm.missing:
                procs.check()
                raise RuntimeError(f"{name}: {warm.missing} of {warmup} warm-up inputs never came out")
            items = paste_items(range(n), make_text, relay)
            log(f"{name}: warm ({warmup}); burst of {n}")
            result.burst = await burst(js, sink, items, timeout=timeout)
            if sample_rss:
                from bench.common import rss_kib

                result.rss_kib = {pid: rss_kib(pid) for pid in procs.pids()}
            if callable(rate):
                rate = rate(result.burst.throughput)
            if paced_n and rate:
                result.paced_rate = rate
                log(f"{name}: paced {paced_n} at {rate:.1f}/s")
                later = paste_items(range(base + warmup, base + warmup + paced_n), make_text, relay)
                result.paced = await paced(js, sink, later, rate=rate, timeout=timeout)
            result.categories = {k: v for k, v in sink.categories.items()}
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
    if result.paced is not None:
        p = result.paced
        text += (
            f" | paced {p.received}/{p.sent}: p50 {p.percentile(50) * 1000:,.1f} ms,"
            f" p99 {p.percentile(99) * 1000:,.1f} ms"
        )
    if result.name == "tract":
        text += f" | outputs {dict(sorted(result.categories.items()))}, follow-ups {result.follow_ups}"
        if result.reasons:
            text += f", rejection reasons {dict(result.reasons)}"
    if result.duplicates:
        text += f" | DUPLICATES {result.duplicates}"
    return text


def ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("nan")


def rows_for(results: dict[str, VariantResult]) -> list[Row]:
    tract, raw, fast = results.get("tract"), results.get("raw"), results.get("faststream")
    rows: list[Row] = []
    if tract and raw:
        t, r = tract.burst, raw.burst
        throughput = ratio(t.throughput, r.throughput)
        rows.append(
            Row(
                "tract", "throughput tract/raw relay (burst)", throughput, goal=">= 0.5", met=throughput >= 0.5,
                note=f"{t.throughput:,.1f} vs {r.throughput:,.1f} pastes/s, N={t.sent}",
            )
        )  # fmt: skip
        burst_p99 = ratio(t.percentile(99), r.percentile(99))
        rows.append(
            Row(
                "tract", "p99 latency tract/raw (burst)", burst_p99, goal="<= 3", met=burst_p99 <= 3,
                note=f"{t.percentile(99) * 1000:,.0f} vs {r.percentile(99) * 1000:,.0f} ms (includes queueing)",
            )
        )  # fmt: skip
        rows.append(
            Row(
                "tract", "p50 latency tract/raw (burst)", ratio(t.percentile(50), r.percentile(50)),
                note=f"{t.percentile(50) * 1000:,.0f} vs {r.percentile(50) * 1000:,.0f} ms",
            )
        )  # fmt: skip
        if tract.paced and raw.paced:
            tp, rp = tract.paced, raw.paced
            paced_p99 = ratio(tp.percentile(99), rp.percentile(99))
            rate = tract.paced_rate
            rows.append(
                Row(
                    "tract", "p99 latency tract/raw (paced)", paced_p99, goal="<= 3", met=paced_p99 <= 3,
                    note=f"{tp.percentile(99) * 1000:,.1f} vs {rp.percentile(99) * 1000:,.1f} ms at ~{rate:.0f}/s",
                )
            )  # fmt: skip
            rows.append(
                Row(
                    "tract", "p50 latency tract/raw (paced)", ratio(tp.percentile(50), rp.percentile(50)),
                    note=f"{tp.percentile(50) * 1000:,.1f} vs {rp.percentile(50) * 1000:,.1f} ms",
                )
            )  # fmt: skip
    if fast and raw:
        rows.append(
            Row(
                "tract", "throughput FastStream/raw relay (ref)", ratio(fast.burst.throughput, raw.burst.throughput),
                note=f"{fast.burst.throughput:,.1f} vs {raw.burst.throughput:,.1f} msgs/s",
            )
        )  # fmt: skip
        if fast.paced and raw.paced:
            rows.append(
                Row(
                    "tract", "p99 latency FastStream/raw (paced, ref)",
                    ratio(fast.paced.percentile(99), raw.paced.percentile(99)),
                    note=f"{fast.paced.percentile(99) * 1000:,.1f} vs {raw.paced.percentile(99) * 1000:,.1f} ms",
                )
            )  # fmt: skip
    if tract:
        outputs = sum(tract.categories.values())
        rejected = sum(v for k, v in tract.categories.items() if k.startswith("rejected"))
        missing = tract.burst.missing + (tract.paced.missing if tract.paced else 0)
        tiers = ", ".join(f"{k.split(':')[1]} {v}" for k, v in sorted(tract.categories.items()))
        rows.append(
            Row(
                "tract", "tract outputs rejected (count)", float(rejected), unit="", goal="0",
                met=rejected == 0 and missing == 0,
                note=f"{outputs} outputs, {missing} missing, {tract.duplicates} duplicate; tiers: {tiers}"
                + (f"; reasons {dict(tract.reasons)}" if tract.reasons else ""),
            )
        )  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="tract versus raw relay")
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--paced", type=int, default=120, help="inputs in the paced phase (0 skips it)")
    parser.add_argument("--rate", type=float, default=None, help="paced rate (default: half the tract's burst rate)")
    parser.add_argument("--rate-cap", type=float, default=25.0)
    parser.add_argument("--variants", default="tract,raw,faststream")
    parser.add_argument("--profile", choices=ORGANS, help="run this organ under pyinstrument (tract only)")
    parser.add_argument("--profile-dir", default="/tmp")
    args = parser.parse_args(argv)
    if args.profile:
        args.variants = "tract"
    results = asyncio.run(run_all(args))
    emit_rows(rows_for(results))
    if args.profile:
        print(f"profile written to {Path(args.profile_dir) / f'profile-{args.profile}.txt'}")
    return 0


async def run_all(args: argparse.Namespace) -> dict[str, VariantResult]:
    """Run the variants, the tract first: without ``--rate`` its burst decides the paced rate."""
    results: dict[str, VariantResult] = {}
    names = args.variants.split(",")
    if "tract" in names:
        names.remove("tract")
        names.insert(0, "tract")
    rate: float | None = args.rate
    for name in names:
        started = time.monotonic()

        def decide(burst_throughput: float) -> float:
            # A rate every variant sustains: half the tract's own burst throughput, capped.
            return max(1.0, min(args.rate_cap, 0.5 * burst_throughput))

        results[name] = await run_variant(
            name,
            n=args.n,
            warmup=args.warmup,
            paced_n=args.paced,
            rate=rate if rate is not None or name != "tract" else decide,
            profile=args.profile,
            profile_dir=Path(args.profile_dir),
        )
        if rate is None and results[name].paced_rate:
            rate = results[name].paced_rate
        line = describe(results[name])
        log(f"{line} ({time.monotonic() - started:.0f}s)")
        print(line, flush=True)
    return results


if __name__ == "__main__":
    sys.exit(main())
