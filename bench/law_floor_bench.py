"""The floor the laws put under any tract built on nats-py: three hops that do only what the laws require.

    python -m bench.law_floor_bench [--n 300] [--repeats 3] [--without PARTS ...]   # PARTS: signing,frames,ledger

Three hop processes (``bench/law_floor_hop.py``) in a row on a real nats-server (stomach, absorption,
border), each with a pass-through core: the output envelope it emits for an input is computed beforehand
by the real pure cores (and looked up by the input's id), so what the hops spend is what the laws cost
around a core:

* JetStream consume and exactly-once per hop: a durable pull consumer, every output published with its
  envelope id as ``Nats-Msg-Id`` and its publish ack awaited before the input is acked;
* the real envelope types decoded (strictly) and encoded with msgspec;
* signed secretions: the stomach checks the paste's seal (it serves a tenant only the frames it sealed), the
  border every signature of the chain and the seal (absorption checks none, as in the tract); each hop signs
  its output's last step (``organs.signing``): four checks and three signatures per paste;
* honest, lossless frames: the stomach writes one frame-index key per frame of the paste (its record);
* rate limits shared by replicas: the border takes each token from a bucket held in memory and settles it
  with a compare-and-set write of the shared key once per ``SETTLE_EVERY`` tokens (as ``rate_store`` does);
* no replay admitted: the border claims each admitted envelope's id in the ledger (a key created only if
  absent, confirmed) before its prompt is published.

Nothing else: no logs, metrics, heartbeats, spans, dead-letter plumbing. The paste is not stored again
(the tract stream holds it), so the floor is below what the stomach does today by that write.

Measured per paste over each burst: CPU of the three hops (``/proc``) and of the server, and the bytes
the server takes in (``/varz``); the pure cores' CPU per paste is timed in this process as the tract
bench does. Floor "around the cores" = hops + server - codec (the tract bench counts the codec among the
cores). Its throughput bound on this machine's CPUs: ratio to the serial cores <= ncpu * cores /
(cores + around).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from bench.common import (
    HOP_KEY_HEADER,
    Item,
    Processes,
    Row,
    burst,
    cpu_seconds,
    embedded_server,
    emit_rows,
    log,
    server_traffic,
    subscribe_sink,
    wait_bound,
)
from bench.law_floor_hop import (
    ADMITTED,
    FRAME_INDEX,
    HOPS,
    PARTS,
    RATES,
    STREAM,
    SUBJECTS,
    DigestSigner,
    HopTable,
    HopWork,
    signer_for,
    wire_name,
)
from organs.signing import Signer

# --- the inputs, computed by the real cores ------------------------------------------------------------------


@dataclass
class Prepared:
    items: list[Item]
    tables: dict[str, HopTable]
    sizes: dict[str, float]
    """Mean bytes per paste of each envelope and of the frame records."""
    frames: float
    stored: dict[str, int] = field(default_factory=dict)
    """Keys in the frame index and the ledger once the run is over (``measure``)."""


def _unsigned_last(envelope: Any) -> Any:
    steps = envelope.chain.steps
    last = msgspec.structs.replace(steps[-1], signature=None, key_id=None)
    return msgspec.structs.replace(envelope, chain=msgspec.structs.replace(envelope.chain, steps=(*steps[:-1], last)))


def prepare(numbers: range, without: frozenset[str] = frozenset()) -> Prepared:
    """Every input and what each hop emits for it, from the real pure cores; ``without`` names the laws' parts
    left out (``signing``, ``frames``, ``ledger``), to see what each costs."""
    from bench.common import mixed_paste
    from envelopes.codec import encode
    from envelopes.ids import utc_now
    from envelopes.types import Paste, UserInput
    from organs.absorption.core import yield_context
    from organs.border.decide import BorderConfig, border_decide
    from organs.border.guard import BorderPolicy, GuardState, RateLimit
    from organs.secretion import paste_envelope
    from organs.signing import new_seed, seal_paste
    from organs.stomach import IngestConfig, ingest_paste
    from organs.stomach.core.parts import frame_records
    from organs.stomach.worker import digest_paste

    signing = "signing" not in without
    digests = "whole-claims" in without
    seeds = {hop: new_seed() for hop in (*HOPS, "sender")} if signing else {}
    kind = DigestSigner if digests else Signer
    signers = {hop: kind.from_seed(wire_name(hop) if hop != "sender" else "bench", s) for hop, s in seeds.items()}
    trusted = {signer.organ: signer.public_key for signer in signers.values()} if signing else None
    unlimited = RateLimit(capacity=1_000_000_000)
    # The border's core checks whole-claim signatures only; digest signatures are checked by the hops alone.
    policy = BorderPolicy(rate=unlimited, sender_rate=unlimited, trusted_keys=None if digests else trusted)
    border = BorderConfig(policy=policy, signer=signers.get("border"))
    state = GuardState()
    config = IngestConfig()
    tables = {
        hop: HopTable(
            seeds.get(hop),
            trusted,
            {},
            ledger="ledger" not in without,
            digest_claims=digests,
            store_paste="+paste" in without,
            confirmed_ack="+ack-sync" in without,
            task_per_input="+tasks" in without,
        )
        for hop in HOPS
    }
    sizes = dict.fromkeys(("paste", "digested", "yield", "admitted", "frame records"), 0.0)
    frames = 0
    items = []
    for number in numbers:
        paste = paste_envelope(
            mixed_paste(number), origin=UserInput(actor="bench"), source="ichor-bench", instance="bench", now=utc_now()
        )
        if "sender" in signers:
            paste = seal_paste(paste, signers["sender"])
        payload = paste.payload
        assert isinstance(payload, Paste) and payload.text is not None
        bundle = ingest_paste(payload.text, config, intent=payload.intent)
        if bundle.redaction.changed:
            raise RuntimeError(f"bench paste {number} held a secret; the floor stores no redacted copy")
        digested = digest_paste(paste, bundle, instance="bench", now=utc_now(), signer=signers.get("stomach"))
        yielded = yield_context(digested, "bench", now=utc_now(), signer=signers.get("absorption"))
        admitted = border_decide(yielded, border, state, instance="bench", now=time.time(), at=utc_now())
        if admitted.kind != "admitted":
            raise RuntimeError(f"the border core did not admit bench paste {number}: {admitted.payload}")
        records = frame_records(bundle, bundle.source_digest)
        tables["stomach"].outputs[paste.id] = encode(_unsigned_last(digested) if signing else digested)
        tables["stomach"].records[paste.id] = [] if "frames" in without else records
        tables["absorption"].outputs[digested.id] = encode(_unsigned_last(yielded) if signing else yielded)
        tables["border"].outputs[yielded.id] = encode(_unsigned_last(admitted) if signing else admitted)
        data = encode(paste)
        for name, envelope in (("paste", paste), ("digested", digested), ("yield", yielded), ("admitted", admitted)):
            sizes[name] += len(encode(envelope))
        sizes["frame records"] += 0 if "frames" in without else sum(len(encode(record)) for record in records)
        frames += len(records)
        items.append(Item(paste.trace_id, SUBJECTS[0], data, {"Nats-Msg-Id": paste.id, HOP_KEY_HEADER: paste.trace_id}))
    count = max(1, len(numbers))
    return Prepared(items, tables, {k: v / count for k, v in sizes.items()}, frames / count)


# --- the run -------------------------------------------------------------------------------------------------


@dataclass
class Repeat:
    hops_ms: dict[str, float]
    server_ms: float
    in_kb: float
    in_msgs: float
    throughput: float

    @property
    def total_ms(self) -> float:
        return sum(self.hops_ms.values()) + self.server_ms


async def measure(n: int, repeats: int, warmup: int, without: frozenset[str]) -> tuple[list[Repeat], Prepared]:
    import nats
    from nats.js import api

    left_out = f" (without {', '.join(sorted(without))})" if without else ""
    log(f"law floor: preparing {warmup + n * repeats} inputs with the real cores{left_out}")
    prepared = prepare(range(7_000_000, 7_000_000 + warmup + n * repeats), without)
    results: list[Repeat] = []
    with embedded_server() as server, Processes() as procs, tempfile.TemporaryDirectory() as scratch:
        nc = await nats.connect(server.url, name="floor-bench")
        try:
            js = nc.jetstream(timeout=10)
            await js.add_stream(
                api.StreamConfig(name=STREAM, subjects=list(SUBJECTS), storage=api.StorageType.FILE,
                                 duplicate_window=120)
            )  # fmt: skip
            await js.create_key_value(api.KeyValueConfig(bucket=FRAME_INDEX, history=1))
            await js.create_key_value(api.KeyValueConfig(bucket=RATES, history=1))
            await js.create_key_value(api.KeyValueConfig(bucket=ADMITTED, history=1))
            for hop in HOPS:
                path = Path(scratch) / f"{hop}.table"
                path.write_bytes(msgspec.msgpack.encode(prepared.tables[hop]))
                procs.spawn(hop, ["-m", "bench.law_floor_hop", "--hop", hop, "--nats", server.url,
                                  "--table", str(path)])  # fmt: skip
            await wait_bound(js, STREAM, dict.fromkeys(HOPS, 1))

            def key_of(msg: Any) -> tuple[str, str]:
                return (msg.headers or {}).get(HOP_KEY_HEADER, ""), "admitted"

            sink = await subscribe_sink(nc, [SUBJECTS[-1]], key_of)
            warm = await burst(js, sink, prepared.items[:warmup], timeout=120)
            if warm.missing:
                procs.check()
                raise RuntimeError(f"law floor: {warm.missing} of {warmup} warm-up inputs never came out")
            pids = {**procs.named_pids(), "nats-server": server.pid}
            for repeat in range(repeats):
                chunk = prepared.items[warmup + repeat * n : warmup + (repeat + 1) * n]
                before = {label: cpu_seconds(pid) for label, pid in pids.items()}
                traffic_before = server_traffic(server.monitor_port)
                phase = await burst(js, sink, chunk, timeout=180)
                spent = {label: (cpu_seconds(pid) - before[label]) / n * 1000 for label, pid in pids.items()}
                traffic = server_traffic(server.monitor_port)
                if phase.missing or sink.duplicates:
                    procs.check()
                    raise RuntimeError(f"law floor: {phase.missing} missing, {sink.duplicates} duplicated")
                result = Repeat(
                    hops_ms={hop: spent[hop] for hop in HOPS},
                    server_ms=spent["nats-server"],
                    in_kb=(traffic["in_bytes"] - traffic_before["in_bytes"]) / n / 1000,
                    in_msgs=(traffic["in_msgs"] - traffic_before["in_msgs"]) / n,
                    throughput=phase.throughput,
                )
                results.append(result)
                line = ", ".join(f"{hop} {ms:.2f}" for hop, ms in result.hops_ms.items())
                log(
                    f"law floor {repeat + 1}/{repeats}: CPU ms per paste {line}, server {result.server_ms:.2f}"
                    f" (total {result.total_ms:.2f}); in {result.in_kb:.1f} KB, {result.in_msgs:.1f} msgs per paste;"
                    f" {result.throughput:,.0f}/s"
                )
            procs.check()
            # What the hops left in the state buckets: every frame record and every claim, none lost.
            for bucket in (FRAME_INDEX, ADMITTED):
                prepared.stored[bucket] = (await js.stream_info(f"KV_{bucket}")).state.messages
        finally:
            await nc.close()
    return results, prepared


def signing_costs(prepared: Prepared, samples: int = 200) -> dict[str, tuple[float, float, float]]:
    """CPU ms per paste of each hop's checks, its signing and its output's encoding alone, in this process."""
    from envelopes.codec import decode, encode

    if prepared.tables["stomach"].seed is None:
        return {}
    costs = {}
    clock = time.thread_time
    envelopes = [decode(item.data) for item in prepared.items[:samples]]
    for hop in HOPS:
        table = prepared.tables[hop]
        work = HopWork(hop, table, signer_for(hop, table))
        t0 = clock()
        for envelope in envelopes:
            work.check(envelope)
        t1 = clock()
        signed = [work.sign(envelope) for envelope in envelopes]
        t2 = clock()
        for envelope in signed:
            encode(envelope)
        t3 = clock()
        costs[hop] = tuple((t - u) / len(envelopes) * 1000 for t, u in ((t1, t0), (t2, t1), (t3, t2)))
        envelopes = signed
    return costs  # type: ignore[return-value]


def _span(values: list[float], digits: int = 2) -> str:
    low, high = min(values), max(values)
    return f"{low:.{digits}f}" if f"{low:.{digits}f}" == f"{high:.{digits}f}" else f"{low:.{digits}f}-{high:.{digits}f}"


def rows_for(
    results: list[Repeat], prepared: Prepared, cores: dict[str, float], without: frozenset[str] = frozenset()
) -> list[Row]:
    from bench.tract_bench import COUNTING_FLOORS

    organs = {label: seconds * 1000 for label, seconds in cores.items() if label not in COUNTING_FLOORS}
    serial = sum(organs.values())
    codec = organs.get("codec", 0.0)
    arounds = [result.total_ms - codec for result in results]
    cpus = os.cpu_count() or 1
    bounds = [cpus * serial / (serial + around) for around in arounds]
    per_hop = "; ".join(f"{hop} {_span([r.hops_ms[hop] for r in results])}" for hop in HOPS)
    envelope_sizes = ", ".join(f"{name} {size / 1000:.1f}" for name, size in prepared.sizes.items())
    shown = {"whole-claims": "whole claims: digests signed"}
    left_out = sorted(shown.get(part, part) for part in without if not part.startswith("+"))
    added = sorted(part for part in without if part.startswith("+"))
    label = "".join(
        [f" (without {', '.join(left_out)})" if left_out else "", f" (with {', '.join(added)})" if added else ""]
    )
    # The floor is a bound: the run the machine disturbed least stands for it, and the goal is out of reach of
    # any build only if even that run misses it.
    least, best_bound, least_kb = min(arounds), max(bounds), min(r.in_kb for r in results)

    def reach(within: bool, keeping: str = "the laws") -> str:
        # Not a goal of the floor's own: whether the tract's goal is within reach of any build keeping the laws.
        return "the tract's goal is within reach here: " if within else f"OUT OF REACH of any build keeping {keeping}: "

    return [
        Row(
            "law floor", f"CPU around the cores per paste at the laws' floor{label}", least, unit="ms",
            goal="tract: <= 1",
            note=reach(least <= 1.0) + f"least of {len(results)} runs ({_span(arounds)} ms): hops {per_hop}; "
            f"server {_span([r.server_ms for r in results])}; less codec {codec:.2f}",
        ),
        Row(
            "law floor", f"bound on tract / pure cores run serially at the floor ({cpus} CPUs){label}", best_bound,
            goal="tract: >= 1.5",
            note=reach(best_bound >= 1.5) + f"{cpus} x {serial:.2f} / ({serial:.2f} + around) = {_span(bounds)}; "
            "cores ms: " + ", ".join(f"{organ} {ms:.2f}" for organ, ms in organs.items()),
        ),
        Row(
            "law floor", f"server bytes in per paste at the floor{label}", least_kb, unit="KB", goal="tract: <= 16",
            note=reach(least_kb <= 16, "these envelope types") + f"{_span([r.in_kb for r in results], 1)} KB, "
            f"{_span([r.in_msgs for r in results], 1)} messages in; KB per paste: {envelope_sizes}; "
            f"{prepared.frames:.1f} frames",
        ),
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the laws' floor on nats-py: three law-keeping pass-through hops")
    parser.add_argument("--n", type=int, default=300, help="pastes per burst")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--cores-n", type=int, default=100)
    parser.add_argument(
        "--without",
        action="append",
        help="parts of the laws to leave out, comma-separated (signing, frames, ledger; empty: none; whole-claims:"
        " sign each claim's blake3 digest instead; +paste, +ack-sync: add what the tract does beyond the laws,"
        " the paste's copy in the frame index, confirmed acks, a task per input); repeat it"
        " for several runs; by default one run with every part and one without signing (the tract bench's config)",
    )
    args = parser.parse_args(argv)
    from bench.tract_bench import pure_cores

    choices = [frozenset(part for part in spec.split(",") if part) for spec in args.without or ["", "signing"]]
    for without in choices:
        unknown = without - PARTS
        if unknown:
            parser.error(f"--without takes {', '.join(sorted(PARTS))}; not {', '.join(sorted(unknown))}")
    cores = pure_cores(args.cores_n)
    rows: list[Row] = []
    for without in choices:
        results, prepared = asyncio.run(measure(args.n, args.repeats, args.warmup, without))
        report(results, prepared)
        rows.extend(rows_for(results, prepared, cores, without))
    emit_rows(rows)
    return 0


def report(results: list[Repeat], prepared: Prepared) -> None:
    costs = signing_costs(prepared)
    if costs:
        line = "; ".join(
            f"{hop} checks {check:.3f}, signing {sign:.3f}, encoding {code:.3f}"
            for hop, (check, sign, code) in costs.items()
        )
        print(f"law floor: in-process CPU ms per paste: {line}", flush=True)
    for result in results:
        hops = ", ".join(f"{hop} {ms:.2f}" for hop, ms in result.hops_ms.items())
        print(
            f"law floor: CPU ms per paste: {hops}, server {result.server_ms:.2f} (total {result.total_ms:.2f}); "
            f"server in {result.in_kb:.1f} KB, {result.in_msgs:.1f} messages per paste; {result.throughput:,.0f}/s",
            flush=True,
        )


if __name__ == "__main__":
    sys.exit(main())
