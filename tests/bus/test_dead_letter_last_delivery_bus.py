"""An input whose dead letter cannot be stored on its last delivery is held until it can be, never left stuck."""

from __future__ import annotations

import asyncio
import dataclasses
import time

import pytest
from nats.aio.msg import Msg

from organs.absorption import build_absorption
from organs.runtime.bus import BusSettings, Tract, provision
from tests.bus.helpers import consumer_settled, read_subject, subject_count, wait_for_count
from tests.conftest import running_organ

pytestmark = pytest.mark.bus


SETTINGS_OF_TWO_DELIVERIES = {"ack_wait_s": 1.0, "max_deliver": 2}


async def _both_deliveries_spent_with_no_dead_letter_stream(tract: Tract, garbage: bytes) -> None:
    """Publish ``garbage`` with the dead-letter stream gone, so every dead letter is refused ("no responders"),
    and wait until both its deliveries are out: the first nak'ed (its letter refused), the last held."""
    await tract.js.delete_stream(tract.subjects.dlq_stream)
    await tract.js.publish(tract.subjects.absorption_in, garbage)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        info = await tract.js.consumer_info(tract.subjects.tract_stream, "absorption")
        if info.delivered.consumer_seq >= 2:
            return
        await asyncio.sleep(0.1)


async def _one_dead_letter(tract: Tract) -> Msg:
    """The dead letter, once it is stored (within 10 s); it must be the only one."""
    dlq = tract.subjects.dlq("absorption")
    assert await wait_for_count(tract, dlq, 1, timeout=10, stream=tract.subjects.dlq_stream) == 1
    [letter] = await read_subject(tract, dlq, stream=tract.subjects.dlq_stream)
    return letter


async def test_a_dead_letter_refused_on_the_last_delivery_is_stored_once_the_stream_is_back(
    tract: Tract, bus_settings: BusSettings
) -> None:
    settings = dataclasses.replace(bus_settings, **SETTINGS_OF_TWO_DELIVERIES)
    garbage = b"\x92\xa3not an envelope"
    async with running_organ("absorption", settings, build_absorption(settings)):
        await _both_deliveries_spent_with_no_dead_letter_stream(tract, garbage)
        await asyncio.sleep(1.5)  # the last delivery's letter refused too, and more than one ack wait passes
        await provision(tract)
        letter = await _one_dead_letter(tract)
        info = await consumer_settled(tract, "absorption", timeout=10)
    assert info.num_ack_pending == 0
    assert letter.data == garbage
    assert "delivered 2 times (ICHOR_MAX_DELIVER=2)" in (letter.headers or {})["Ichor-Dlq-Reason"]


async def test_an_input_whose_last_delivery_is_handed_back_unsettled_is_dead_lettered_from_its_advisory(
    tract: Tract, bus_settings: BusSettings
) -> None:
    settings = dataclasses.replace(bus_settings, **SETTINGS_OF_TWO_DELIVERIES)
    garbage = b"\x92\xa3not an envelope either"
    async with running_organ("absorption", settings, build_absorption(settings)):
        await _both_deliveries_spent_with_no_dead_letter_stream(tract, garbage)
        await asyncio.sleep(0.5)
    # The worker stopped holding the last delivery, its dead letter still refused: the server delivers it no more.
    await provision(tract)
    assert await subject_count(tract, tract.subjects.dlq("absorption"), stream=tract.subjects.dlq_stream) == 0
    async with running_organ("absorption", settings, build_absorption(settings)):
        letter = await _one_dead_letter(tract)
    assert letter.data == garbage
    assert (
        "delivered 2 times (ICHOR_MAX_DELIVER) and its last delivery was never settled"
        in ((letter.headers or {})["Ichor-Dlq-Reason"])
    )
