"""The organs as classes (#23): each handler called with an envelope of the test's own, on a real nats-server,
with no worker loop around it."""

from __future__ import annotations

import pytest

from envelopes.ids import utc_now
from envelopes.types import Admitted, DeferredNotice, Digested, Rejected, Yield
from organs.absorption.worker import AbsorptionOrgan
from organs.border.worker import BorderOrgan
from organs.errors import PoisonError
from organs.runtime import Delivery, Worker
from organs.runtime.bus import BusSettings, Tract
from organs.runtime.faults import FaultInjectingWorker, worker_type
from organs.stomach.worker import StomachOrgan
from tests.support.envelopes import digested_envelope, fresh_paste

pytestmark = pytest.mark.bus

PASTE = "2026-11-29T08:14:02Z ERROR payment call failed: timeout after 5000ms\n\nWhy does checkout time out?"


async def test_the_stomach_digests_a_paste_and_stores_its_frames(tract: Tract, bus_settings: BusSettings) -> None:
    stomach = StomachOrgan(tract, bus_settings)
    paste = fresh_paste(PASTE)
    [output] = await stomach.handle_paste(paste, Delivery(subject=tract.subjects.stomach_in, num_pending=0))
    assert output.subject == tract.subjects.absorption_in
    digested = output.envelope.payload
    assert isinstance(digested, Digested)
    assert digested.goal == "Why does checkout time out?"
    [frame] = digested.frames
    assert (await stomach.store.record(frame.id)).compact.id == frame.id


async def test_the_main_backlog_holds_the_deferred_consumer(tract: Tract, bus_settings: BusSettings) -> None:
    stomach = StomachOrgan(tract, bus_settings)
    assert stomach.main_is_idle()
    await stomach.handle_paste(fresh_paste(PASTE), Delivery(subject=tract.subjects.stomach_in, num_pending=5))
    assert stomach.main_pending == 5 and not stomach.main_is_idle()


async def test_a_deferred_paste_queues_its_notice(tract: Tract, bus_settings: BusSettings) -> None:
    stomach = StomachOrgan(tract, bus_settings)
    delivery = Delivery(subject=tract.subjects.stomach_in, num_pending=stomach.config.deferred_backlog + 1)
    digested, notice = await stomach.handle_paste(fresh_paste(PASTE), delivery)
    assert digested.envelope.tier == "deferred"
    assert notice.subject == tract.subjects.stomach_deferred
    assert isinstance(notice.envelope.payload, DeferredNotice)
    assert notice.envelope.payload.deferred_envelope_id == digested.envelope.id


async def test_the_stomach_refuses_what_is_not_a_paste(tract: Tract, bus_settings: BusSettings) -> None:
    stomach = StomachOrgan(tract, bus_settings)
    with pytest.raises(PoisonError, match="the stomach takes a 'paste' envelope, got 'digested'"):
        await stomach.handle_paste(digested_envelope(), Delivery(subject=tract.subjects.stomach_in, num_pending=0))


async def test_absorption_yields_a_digest(tract: Tract, bus_settings: BusSettings) -> None:
    [output] = await AbsorptionOrgan(tract, bus_settings).handle(digested_envelope(), Delivery("x", 0))
    assert output.subject == tract.subjects.border_in
    assert isinstance(output.envelope.payload, Yield)


async def test_the_border_admits_once_and_rejects_the_replay(tract: Tract, bus_settings: BusSettings) -> None:
    # Through the stomach and absorption first, begun now: the replay ledger refuses an envelope begun long ago.
    paste = fresh_paste(PASTE, now=utc_now())
    [digested] = await StomachOrgan(tract, bus_settings).handle_paste(paste, Delivery(tract.subjects.stomach_in, 0))
    [yielded] = await AbsorptionOrgan(tract, bus_settings).handle(digested.envelope, Delivery("x", 0))
    border = BorderOrgan(tract, bus_settings)
    [admitted] = await border.handle(yielded.envelope, Delivery("x", 0, stream_sequence=1))
    assert admitted.subject == tract.subjects.brain_in
    assert isinstance(admitted.envelope.payload, Admitted)
    [replayed] = await border.handle(yielded.envelope, Delivery("x", 0, stream_sequence=2))
    assert replayed.subject == tract.subjects.border_rejected
    assert isinstance(replayed.envelope.payload, Rejected)
    assert {reason.code for reason in replayed.envelope.payload.reasons} == {"replay"}


def test_fault_injection_is_installed_only_when_a_switch_is_set() -> None:
    assert worker_type(BusSettings()) is Worker
    assert worker_type(BusSettings(kill_on=b"boom")) is FaultInjectingWorker
    assert worker_type(BusSettings(kill_before_ack=True)) is FaultInjectingWorker
