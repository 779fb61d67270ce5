"""Faults: an input that kills its worker on every delivery is dead-lettered once its deliveries run out."""

from __future__ import annotations

import asyncio
import time

import pytest

from envelopes.types import UserInput
from organs.anatomy import STOMACH
from organs.runtime.bus import Tract
from organs.runtime.server import EmbeddedServer
from organs.secretion import paste_envelope
from tests.bus.helpers import read_subject, wait_for_count
from tests.fault.harness import OrganProcesses, make_pastes, publish_all, tally, wait_for_ends
from tests.support.envelopes import AT

pytestmark = [pytest.mark.bus, pytest.mark.slow]

MAX_DELIVER = 3
KILLER = "zq-kills-its-worker-zq"


async def _restart_when_dead(organs: OrganProcesses, organ: str, deaths: list[float]) -> None:
    """A supervisor's restart policy: a worker that died is started again at once."""
    while True:
        if organs.processes[(organ, 0)].poll() is not None:
            deaths.append(time.monotonic())
            organs.spawn(organ)
        await asyncio.sleep(0.05)


async def test_an_input_that_keeps_killing_its_worker_is_dead_lettered(
    tract: Tract, nats_server: EmbeddedServer
) -> None:
    env = {"ICHOR_ACK_WAIT_S": "1", "ICHOR_MAX_DELIVER": str(MAX_DELIVER), "ICHOR_FAULT_KILL_ON": KILLER}
    organs = OrganProcesses(nats_server.url, env=env).start()
    deaths: list[float] = []
    restarter = asyncio.create_task(_restart_when_dead(organs, STOMACH.name, deaths))
    pastes = make_pastes(30, "killer")
    killer = paste_envelope(
        f"ERROR {KILLER} in the middle of a log\nWhy?",
        origin=UserInput(actor="killer"),
        source="fault",
        instance="t",
        now=AT,
    )
    dlq = tract.subjects.dlq(STOMACH.name)
    try:
        started = time.monotonic()
        await publish_all(tract, [killer, *pastes])
        letters = await wait_for_count(tract, dlq, 1, timeout=90, stream=tract.subjects.dlq_stream)
        dead_lettered_s = round(time.monotonic() - started, 2)
        await wait_for_ends(tract, len(pastes), timeout=60, organs=organs)
    finally:
        restarter.cancel()
        organs.stop()
    [letter] = await read_subject(tract, dlq, stream=tract.subjects.dlq_stream)
    reason = (letter.headers or {}).get("Ichor-Dlq-Reason", "")
    result = await tally(tract, pastes)
    result.print("worker_killer", worker_deaths=len(deaths), dead_lettered_after_s=dead_lettered_s, reason=repr(reason))
    assert letters == 1
    assert letter.data.find(KILLER.encode()) >= 0, "the dead letter keeps the input's bytes"
    assert f"delivered {MAX_DELIVER} times" in reason
    assert len(deaths) == MAX_DELIVER - 1
    assert result.lost == 0
    assert result.duplicated == 0
