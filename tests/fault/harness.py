"""A tract of real organ processes for fault scenarios, and the figures they print."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import nats.errors
import nats.js.errors

from envelopes.codec import decode, encode
from envelopes.types import Envelope, UserInput
from organs.anatomy import ORGAN_NAMES, ORGANS
from organs.operations.supervisor import spawn_worker
from organs.runtime.bus import Tract
from organs.secretion import paste_envelope
from tests.bus.helpers import read_subject, subject_count
from tests.support.envelopes import AT

FAULT_ENV = {"ICHOR_ACK_WAIT_S": "3"}


def rss_kib(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)


@dataclass
class OrganProcesses:
    """One or more ``ichor worker`` processes per organ, killable and restartable; ``with`` starts and stops them."""

    url: str
    replicas: int = 1
    env: dict[str, str] = field(default_factory=lambda: dict(FAULT_ENV))
    processes: dict[tuple[str, int], subprocess.Popen[bytes]] = field(default_factory=dict)
    peak_rss_kib: dict[str, int] = field(default_factory=dict)

    def start(self) -> OrganProcesses:
        for organ in ORGAN_NAMES:
            for replica in range(self.replicas):
                self.spawn(organ, replica)
        return self

    def __enter__(self) -> OrganProcesses:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def spawn(self, organ: str, replica: int = 0) -> None:
        self.processes[(organ, replica)] = spawn_worker(
            organ,
            self.url,
            env={**self.env, "ICHOR_INSTANCE": f"{organ}-{replica}"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def kill(self, organ: str, replica: int = 0) -> None:
        process = self.processes[(organ, replica)]
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)

    def sample_rss(self) -> None:
        for (organ, _), process in self.processes.items():
            self.peak_rss_kib[organ] = max(self.peak_rss_kib.get(organ, 0), rss_kib(process.pid))

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def make_pastes(count: int, run: str) -> list[Envelope]:
    """Distinct small mixed pastes, each with its own origin actor."""
    pastes = []
    for n in range(count):
        text = (
            f"2026-11-29T08:{n % 60:02d}:01Z INFO [api] request {n} served in {n % 97}ms\n"
            f"2026-11-29T08:{n % 60:02d}:02Z ERROR [api] request {n + 1} failed: upstream timeout\n\n"
            f"./services/api/handler_{n % 7}.py\n\n"
            f"Why did request {n + 1} fail?"
        )
        pastes.append(
            paste_envelope(text, origin=UserInput(actor=f"{run}-{n}"), source="fault", instance="fault", now=AT)
        )
    return pastes


async def publish_all(tract: Tract, pastes: list[Envelope]) -> None:
    futures = [
        await tract.js.publish_async(
            tract.subjects.stomach_in, encode(paste), headers={"Nats-Msg-Id": paste.id, "traceparent": paste.trace}
        )
        for paste in pastes
    ]
    await asyncio.gather(*futures)


async def _patiently(read: Callable[[], Awaitable[int]], patience_s: float) -> int:
    """``read()``, retried while a broker or node is away, for at most ``patience_s``."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            return await read()
        except (TimeoutError, nats.errors.Error, nats.js.errors.Error):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def _stored_ends(tract: Tract) -> int:
    """Messages stored at the tract's ends: an upper bound of ``ends_reached``, from the stream's counts alone."""
    admitted = await subject_count(tract, tract.subjects.brain_in)
    return admitted + await subject_count(tract, tract.subjects.border_rejected)


async def _pastes_ended(tract: Tract) -> int:
    ends = [
        *await read_subject(tract, tract.subjects.brain_in),
        *await read_subject(tract, tract.subjects.border_rejected),
    ]
    return sum(getattr(decode(msg.data).payload, "follow_up_of", None) is None for msg in ends)


async def ends_reached(tract: Tract, patience_s: float = 60.0) -> int:
    """Pastes that reached the end of the tract (a deferred paste's follow-up is not one more); waits out a
    broker or node that is away."""
    return await _patiently(lambda: _pastes_ended(tract), patience_s)


async def wait_for_ends(tract: Tract, at_least: int, timeout: float, organs: OrganProcesses | None = None) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if organs is not None:
            organs.sample_rss()
        # The stream's counts are cheap and bound the ends from above: every message is read only once they allow it.
        if await _patiently(lambda: _stored_ends(tract), 60.0) >= at_least and await ends_reached(tract) >= at_least:
            break
        await asyncio.sleep(0.2)
    return time.monotonic() - started


@dataclass
class Tally:
    sent: int
    admitted: int
    rejected: int
    dead_lettered: int
    lost: int
    duplicated: int
    follow_ups: int

    def print(self, scenario: str, **extra: object) -> None:
        figures = " ".join(f"{key}={value}" for key, value in {**self.__dict__, **extra}.items())
        print(f"\n[fault:{scenario}] {figures}")


async def tally(tract: Tract, pastes: list[Envelope]) -> Tally:
    """Count ends of the tract by origin: one admitted-or-rejected per paste, follow-ups apart."""
    ends = [
        decode(msg.data)
        for subject in (tract.subjects.brain_in, tract.subjects.border_rejected)
        for msg in await read_subject(tract, subject)
    ]
    firsts = [end for end in ends if getattr(end.payload, "follow_up_of", None) is None]
    by_origin = Counter(msgspec_origin(end) for end in firsts)
    expected = {msgspec_origin(paste) for paste in pastes}
    letters = sum(
        [
            await subject_count(tract, organ.dead_letter_subject(tract.subjects), tract.subjects.dlq_stream)
            for organ in ORGANS
        ]
    )
    return Tally(
        sent=len(pastes),
        admitted=sum(1 for end in firsts if end.kind == "admitted"),
        rejected=sum(1 for end in firsts if end.kind == "rejected"),
        dead_lettered=letters,
        lost=len(expected - set(by_origin)),
        duplicated=sum(count - 1 for count in by_origin.values()),
        follow_ups=len(ends) - len(firsts),
    )


def msgspec_origin(envelope: Envelope) -> str:
    origin = envelope.chain.origin
    return getattr(origin, "actor", repr(origin))
