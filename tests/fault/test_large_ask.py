"""A paste that is one ask paragraph larger than a message (#28) ends in an outcome that names its ask, with no dead
letter, and the stomach worker stays within its documented memory: the large-paste child stores the goal.

With the default border budget (1 MiB of prompt) an ask this long cannot be admitted; the honest outcome is a
refusal that says so and names where the ask is kept (``goal_ref``), fetched back byte for byte.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from nats.aio.msg import Msg

from envelopes.codec import decode
from envelopes.types import Envelope, Rejected, UserInput
from organs.anatomy import STOMACH
from organs.client import hand_in_paste
from organs.runtime.bus import Tract
from organs.runtime.server import EmbeddedServer
from organs.runtime.stored_text import fetch_text
from tests.bus.helpers import read_subject, subject_count
from tests.bus.test_large_paste_bus import ask_paragraph
from tests.fault.harness import FAULT_ENV, OrganProcesses, make_pastes, publish_all, rss_kib, wait_for_ends
from tests.fault.test_large_prose import WORKER_GROWTH_GOAL

pytestmark = [pytest.mark.bus, pytest.mark.slow, pytest.mark.serial]

# Past the default server's 8 MiB max_payload, and past ICHOR_LARGE_PASTE_BYTES: digested by the child.
ASK_BYTES = 12 * 1024 * 1024


async def _peak_while(task: asyncio.Task[object], pid: int) -> int:
    peak = 0
    while not task.done():
        peak = max(peak, rss_kib(pid))
        await asyncio.sleep(0.1)
    return peak


async def _ends_of(tract: Tract, trace_id: str, expected: int, timeout: float = 300.0) -> list[Envelope]:
    """The outcomes of the paste with ``trace_id``, once there are ``expected`` of them (or the timeout passed)."""
    deadline, ends = time.monotonic() + timeout, []
    while time.monotonic() < deadline:
        ends = [
            envelope
            for subject in (tract.subjects.brain_in, tract.subjects.border_rejected)
            for envelope in map(decode_message, await read_subject(tract, subject))
            if envelope.trace_id == trace_id
        ]
        if len(ends) >= expected:
            break
        await asyncio.sleep(0.5)
    return ends


def decode_message(msg: Msg) -> Envelope:
    return decode(msg.data)


async def _dead_letters(tract: Tract) -> int:
    subjects = tract.subjects
    return sum(
        [
            await subject_count(tract, subjects.dlq(organ), subjects.dlq_stream)
            for organ in ("stomach", "absorption", "border")
        ]
    )


async def test_a_12_mib_ask_paragraph_ends_in_an_outcome_naming_its_ask(
    tract: Tract, nats_server: EmbeddedServer
) -> None:
    ask = ask_paragraph(ASK_BYTES)
    with OrganProcesses(nats_server.url, env=dict(FAULT_ENV)) as organs:
        stomach = organs.processes[(STOMACH.name, 0)]
        # One small paste first: the worker has loaded everything it loads before its resting size is read.
        await publish_all(tract, make_pastes(1, "ask-warm-up"))
        await wait_for_ends(tract, 1, timeout=120)
        before = rss_kib(stomach.pid)
        started = time.monotonic()
        handing = asyncio.create_task(hand_in_paste(tract, ask, origin=UserInput(actor="asker"), timeout=300))
        peak = await _peak_while(handing, stomach.pid)
        paste, outcome = await handing
        # A deferred first digest has its follow-up, digested in full by the child: the worker is watched on.
        waiting = asyncio.create_task(_ends_of(tract, paste.trace_id, 2 if outcome.tier == "deferred" else 1))
        peak = max(peak, await _peak_while(waiting, stomach.pid))
        ends = await waiting
        ended_s = time.monotonic() - started
        letters = await _dead_letters(tract)
    stored = [await fetch_text(tract, ref) for ref in (getattr(end.payload, "goal_ref", None) for end in ends) if ref]
    growth = (peak - before) * 1024 / len(ask.encode())
    reasons = [
        f"{reason.code}: {reason.message[:90]}"
        for end in ends
        if isinstance(end.payload, Rejected)
        for reason in end.payload.reasons
    ]
    print(
        f"\n[fault:ask_12mib] ask_bytes={len(ask.encode())} ended_s={ended_s:.1f} "
        f"outcomes={[(end.kind, end.tier) for end in ends]} reasons={reasons} dead_lettered={letters} "
        f"goals_by_reference={len(stored)} worker_rss_before_mib={before // 1024} "
        f"worker_rss_peak_mib={peak // 1024} worker_growth_x={growth:.2f} goal_x={WORKER_GROWTH_GOAL}"
    )
    assert letters == 0 and len(ends) == (2 if outcome.tier == "deferred" else 1)
    assert not any(reason.startswith("dead_lettered") for reason in reasons)
    assert stored == [ask] * len(ends), "each outcome names where the ask is kept, and it is the ask byte for byte"
    assert growth <= WORKER_GROWTH_GOAL
