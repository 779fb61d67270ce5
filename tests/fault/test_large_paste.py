"""Load: a 50 MB paste is digested apart; small pastes beside it keep their pace and the stomach its memory."""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import pytest

from envelopes.codec import decode, encode
from envelopes.ids import digest_text
from envelopes.types import Envelope, UserInput
from organs.anatomy import STOMACH
from organs.client import store_blob
from organs.runtime.bus import Tract
from organs.runtime.server import EmbeddedServer
from organs.secretion import paste_envelope
from organs.stomach.core.ingest import IngestConfig
from organs.stomach.large import LargeDigestRequest
from tests.fault.harness import FAULT_ENV, OrganProcesses, make_pastes, rss_kib, tally
from tests.support.envelopes import AT

pytestmark = [pytest.mark.bus, pytest.mark.slow, pytest.mark.serial]

LARGE_BYTES = 50 * 1024 * 1024
SMALL_PER_S = 20
ALONE_COUNT = 200
# Beside the large paste, small ones go on at the same pace until it is digested (at most this many).
BESIDE_MAX = 2000
# The goals: small pastes' p99 within 2x their p99 alone (printed, not asserted: a time on a shared 2-core machine
# is a benchmark's figure, not a test's); the stomach's RSS growth under 3x the paste, the worker's and its
# digester's each (the digester's over what it costs for a paste of a few lines: the interpreter, the modules, the
# tokenizer).
P99_GOAL = 2.0
RSS_GOAL = 3.0
RESTING_PASTE_BYTES = 4096
# What the test asserts of time is a ratio within the run: small pastes beside the large one did not wait for it.
# Digested in the worker's own loop (as before the digester), the pastes sent meanwhile waited out its first end
# (p99 2.8 s then); apart, their p99 is a few hundredths of its first end (0.035 s of 5.6 s alone, 0.2 s of 5.6 s
# on a loaded CI machine).
WAITED_SHARE = 0.25


def log_paste(size: int) -> str:
    """``size`` bytes of varied log lines: many templates, numbers, a few errors."""
    lines, total, n = [], 0, 0
    while total < size:
        level = "ERROR" if n % 997 == 0 else "INFO"
        line = (
            f"2026-11-29T{(n // 3600) % 24:02d}:{(n // 60) % 60:02d}:{n % 60:02d}.{n % 1000:03d}Z {level} "
            f"[worker-{n % 17}] job {n} stage {n % 5} took {n % 997} ms on shard {n % 31}"
        )
        lines.append(line)
        total += len(line) + 1
        n += 1
    return "\n".join(lines)


class Latencies:
    """Seconds from each small paste's publish to its end of the tract, by trace id."""

    def __init__(self) -> None:
        self.sent: dict[str, float] = {}
        self.seconds: dict[str, float] = {}
        self.tiers: dict[str, str | None] = {}
        self.follow_ups: set[str] = set()

    async def on_end(self, msg: object) -> None:
        end = decode(getattr(msg, "data", b""))
        if getattr(end.payload, "follow_up_of", None) is not None:
            self.follow_ups.add(end.trace_id)
        elif end.trace_id in self.sent and end.trace_id not in self.seconds:
            self.seconds[end.trace_id] = time.monotonic() - self.sent[end.trace_id]
            self.tiers[end.trace_id] = end.tier

    def digested(self, trace_id: str) -> bool:
        """Out in full: its first end, and the follow-up too when the first was deferred."""
        if trace_id not in self.seconds:
            return False
        return self.tiers[trace_id] != "deferred" or trace_id in self.follow_ups

    async def trickle(self, tract: Tract, pastes: list[Envelope]) -> None:
        for paste in pastes:
            self.sent[paste.trace_id] = time.monotonic()
            await tract.js.publish(
                tract.subjects.stomach_in, encode(paste), headers={"Nats-Msg-Id": paste.id, "traceparent": paste.trace}
            )
            await asyncio.sleep(1 / SMALL_PER_S)

    async def p99(self, pastes: list[Envelope], timeout: float = 120.0) -> float:
        deadline = time.monotonic() + timeout
        while any(paste.trace_id not in self.seconds for paste in pastes) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        samples = [self.seconds[paste.trace_id] for paste in pastes if paste.trace_id in self.seconds]
        assert len(samples) == len(pastes), f"{len(pastes) - len(samples)} small pastes never came out"
        return statistics.quantiles(samples, n=100)[98]


def child_pids(pid: int) -> list[int]:
    """The processes ``pid`` started (the large-paste digester, while one runs)."""
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            children += [int(child) for child in (task / "children").read_text().split()]
    return children


def is_digester(pid: int) -> bool:
    with contextlib.suppress(OSError):
        return b"organs.stomach.large" in Path(f"/proc/{pid}/cmdline").read_bytes()
    return False


def peak_kib(pid: int) -> int:
    """The process's peak resident memory so far (``VmHWM``), 0 once it is gone."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def resting_digester_kib() -> int:
    """The peak of a large-paste digester given a paste of a few lines: what a digest costs whatever its size."""
    with tempfile.TemporaryDirectory(prefix="ichor-resting-") as folder:
        text = log_paste(RESTING_PASTE_BYTES)
        paste = Path(folder, "paste")
        paste.write_bytes(text.encode())
        request = LargeDigestRequest(str(paste), str(Path(folder, "redacted")), IngestConfig(), None, digest_text(text))
        child = subprocess.Popen(
            [sys.executable, "-m", "organs.stomach.large"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(msgspec.msgpack.encode(request))
        child.stdin.close()
        peak = 0
        while child.poll() is None:
            peak = max(peak, peak_kib(child.pid))
            time.sleep(0.01)
        assert child.returncode == 0 and child.stdout.read(), "the digester digested the small paste"
        return peak


@dataclass
class Peaks:
    """The stomach's resident memory while the large paste is digested: the worker, its digesters (one for the
    deferred digest, one for the follow-up; each peak is its own ``VmHWM``) and their counting processes apart."""

    worker_before_kib: int
    digester_resting_kib: int
    worker_kib: int = 0
    digester_kib: dict[int, int] = field(default_factory=dict)
    counting_kib: int = 0

    def sample(self, pid: int) -> None:
        self.worker_kib = max(self.worker_kib, rss_kib(pid))
        for digester in filter(is_digester, child_pids(pid)):
            self.digester_kib[digester] = max(self.digester_kib.get(digester, 0), peak_kib(digester))
            self.counting_kib = max(self.counting_kib, sum(rss_kib(counter) for counter in child_pids(digester)))

    @property
    def digester_peak_kib(self) -> int:
        return max(self.digester_kib.values(), default=0)

    def multiples(self) -> tuple[float, float]:
        """Growth of the worker, and of its digester over a resting one, per byte of the paste."""
        worker = (self.worker_kib - self.worker_before_kib) * 1024 / LARGE_BYTES
        return worker, (self.digester_peak_kib - self.digester_resting_kib) * 1024 / LARGE_BYTES


async def test_small_pastes_keep_their_pace_while_a_50_mb_paste_is_digested_apart(
    tract: Tract, nats_server: EmbeddedServer
) -> None:
    organs = OrganProcesses(nats_server.url, env=dict(FAULT_ENV)).start()
    latencies = Latencies()
    ends = [
        await tract.nc.subscribe(subject, cb=latencies.on_end)
        for subject in (tract.subjects.brain_in, tract.subjects.border_rejected)
    ]
    text = log_paste(LARGE_BYTES)
    ref = await store_blob(tract, text.encode())
    large = paste_envelope(
        "",
        origin=UserInput(actor="large"),
        source="fault",
        instance="fault",
        intent="Which jobs failed?",
        text_ref=ref,
        input_digest=digest_text(text),
        now=AT,
    )
    del text
    stomach = organs.processes[(STOMACH.name, 0)]
    resting = await asyncio.to_thread(resting_digester_kib)
    try:
        warm_up = make_pastes(20, "warm-up")
        await latencies.trickle(tract, warm_up)
        await latencies.p99(warm_up)
        alone = make_pastes(ALONE_COUNT, "alone")
        await latencies.trickle(tract, alone)
        p99_alone = await latencies.p99(alone)
        peaks = Peaks(worker_before_kib=rss_kib(stomach.pid), digester_resting_kib=resting)
        started = time.monotonic()
        latencies.sent[large.trace_id] = started
        await tract.js.publish(
            tract.subjects.stomach_in, encode(large), headers={"Nats-Msg-Id": large.id, "traceparent": large.trace}
        )
        # Small pastes at the same pace for as long as the large one is digested, its follow-up included.
        beside = make_pastes(BESIDE_MAX, "beside")
        sent = 0
        while not latencies.digested(large.trace_id) and sent < BESIDE_MAX:
            await latencies.trickle(tract, beside[sent : sent + SMALL_PER_S // 4])
            sent += SMALL_PER_S // 4
            peaks.sample(stomach.pid)
        large_s = time.monotonic() - started
        beside = beside[:sent]
        p99_beside = await latencies.p99(beside)
        large_done = latencies.digested(large.trace_id)
    finally:
        for subscription in ends:
            await subscription.unsubscribe()
        organs.stop()
    result = await tally(tract, [*warm_up, *alone, *beside])
    worker_multiple, digester_multiple = peaks.multiples()
    result.print(
        "large_paste",
        p99_alone_s=round(p99_alone, 3),
        p99_beside_50mb_s=round(p99_beside, 3),
        p99_ratio=round(p99_beside / p99_alone, 2),
        p99_goal=P99_GOAL,
        small_alone=len(alone),
        small_beside=len(beside),
        median_beside_s=round(statistics.median(latencies.seconds[paste.trace_id] for paste in beside), 3),
        large_digested_s=round(large_s, 1),
        large_first_end_s=round(latencies.seconds.get(large.trace_id, -1), 1),
        large_tier=latencies.tiers.get(large.trace_id),
        worker_rss_before_mib=round(peaks.worker_before_kib / 1024),
        worker_rss_peak_mib=round(peaks.worker_kib / 1024),
        digester_rss_resting_mib=round(peaks.digester_resting_kib / 1024),
        digester_rss_peak_mib=round(peaks.digester_peak_kib / 1024),
        digesters=len(peaks.digester_kib),
        counting_rss_peak_mib=round(peaks.counting_kib / 1024),
        worker_growth_x=round(worker_multiple, 2),
        digester_growth_x=round(digester_multiple, 2),
        rss_goal_x=RSS_GOAL,
    )
    assert large_done, "the 50 MB paste was digested, its follow-up too"
    assert result.lost == 0 and result.duplicated == 0
    assert worker_multiple < RSS_GOAL
    assert peaks.digester_kib, "a digester was sampled while it digested"
    assert digester_multiple < RSS_GOAL
    large_first_end = latencies.seconds[large.trace_id]
    assert p99_beside < WAITED_SHARE * large_first_end, "small pastes beside the large one did not wait for it"


async def test_an_idle_stomach_keeps_no_large_paste_in_memory(tract: Tract, nats_server: EmbeddedServer) -> None:
    # Four pastes: a store that kept them would hold 28 MiB, past the 21 MiB (three pastes) the assertion allows.
    count, size = 4, 7 * 1024 * 1024
    organs = OrganProcesses(nats_server.url, env=dict(FAULT_ENV)).start()
    latencies = Latencies()
    ends = [
        await tract.nc.subscribe(subject, cb=latencies.on_end)
        for subject in (tract.subjects.brain_in, tract.subjects.border_rejected)
    ]
    stomach = organs.processes[(STOMACH.name, 0)]
    try:
        warm_up = make_pastes(20, "idle-warm-up")
        await latencies.trickle(tract, warm_up)
        await latencies.p99(warm_up)
        before_kib = rss_kib(stomach.pid)
        pastes = []
        for n in range(count):
            # Distinct pastes: each its own bytes, so no cache or store can share them.
            text = f"run {n}\n" + log_paste(size)
            ref = await store_blob(tract, text.encode())
            pastes.append(
                paste_envelope(
                    "",
                    origin=UserInput(actor=f"idle-{n}"),
                    text_ref=ref,
                    input_digest=digest_text(text),
                    source="fault",
                    instance="fault",
                    now=AT,
                )
            )
        for paste in pastes:
            latencies.sent[paste.trace_id] = time.monotonic()
            await tract.js.publish(
                tract.subjects.stomach_in, encode(paste), headers={"Nats-Msg-Id": paste.id, "traceparent": paste.trace}
            )
        deadline = time.monotonic() + 300
        while not all(latencies.digested(paste.trace_id) for paste in pastes) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        await asyncio.sleep(1)
        idle_kib = rss_kib(stomach.pid)
        digesters = child_pids(stomach.pid)
    finally:
        for subscription in ends:
            await subscription.unsubscribe()
        organs.stop()
    result = await tally(tract, pastes)
    result.print(
        "idle_after_large_pastes",
        pastes=count,
        paste_mib=round(size / 2**20, 1),
        rss_before_mib=round(before_kib / 1024),
        rss_idle_mib=round(idle_kib / 1024),
        digesters_left=len(digesters),
    )
    assert result.lost == 0 and result.duplicated == 0
    assert not digesters, "every digester exits with its digest"
    # Was 303 MiB after 16 such pastes (a cache of 16 by count); what is left is the allocator's (8-15 MiB measured).
    assert (idle_kib - before_kib) * 1024 < 3 * size, "an idle stomach holds none of the pastes"
