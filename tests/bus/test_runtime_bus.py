"""The runtime against a real nats-server: exactly-once hops, dead letters, drains."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from pathlib import Path

import pytest

from envelopes.codec import encode
from envelopes.types import Envelope, Yield
from organs.absorption import build_absorption
from organs.operations.supervisor import spawn_worker
from organs.runtime.bus import BusSettings, Tract, connect, provision
from organs.runtime.server import EmbeddedServer
from tests.bus.helpers import (
    consumer_settled,
    duplicates,
    read_envelopes,
    read_subject,
    subject_count,
    wait_for_count,
)
from tests.conftest import running_organ
from tests.support.envelopes import digested_envelope

pytestmark = pytest.mark.bus


def quiet_worker(url: str, **env: str) -> subprocess.Popen[bytes]:
    """An absorption worker process; its logs are not the test's."""
    return spawn_worker("absorption", url, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


async def publish(tract: Tract, subject: str, envelope: Envelope) -> None:
    await tract.js.publish(subject, encode(envelope), headers={"Nats-Msg-Id": envelope.id})


def test_embedded_server_serves_jetstream_and_leaves_no_process(tmp_path: Path) -> None:
    server = EmbeddedServer(tmp_path / "n").start()
    pid = server.pid
    assert pid is not None and Path(f"/proc/{pid}").exists()

    async def use_jetstream() -> int:
        tract = await connect(BusSettings(url=server.url), name="probe")
        await provision(tract)
        await tract.js.publish(tract.subjects.stomach_in, b"x")
        count = await subject_count(tract, tract.subjects.stomach_in)
        await tract.nc.close()
        return count

    assert asyncio.run(use_jetstream()) == 1
    server.stop()
    assert not server.running
    stat = Path(f"/proc/{pid}/stat")
    # Gone, or at worst a zombie already reaped by nobody else: never still running.
    assert not stat.exists() or stat.read_text().split()[2] == "Z"


async def test_provisioning_twice_keeps_the_stream(tract: Tract) -> None:
    await tract.js.publish(tract.subjects.stomach_in, b"kept")
    await provision(tract)
    assert await subject_count(tract, tract.subjects.stomach_in) == 1
    info = await tract.js.stream_info(tract.subjects.tract_stream)
    assert info.config.duplicate_window >= 120


async def test_absorption_worker_forwards_a_yield(tract: Tract, bus_settings: BusSettings) -> None:
    digested = digested_envelope()
    async with running_organ("absorption", bus_settings, build_absorption(bus_settings)):
        await publish(tract, tract.subjects.absorption_in, digested)
        assert await wait_for_count(tract, tract.subjects.border_in, 1) == 1
        await consumer_settled(tract, "absorption")
    [out] = await read_envelopes(tract, tract.subjects.border_in)
    assert isinstance(out.payload, Yield)
    assert out.chain.origin == digested.chain.origin


async def test_poison_goes_to_the_dead_letter_queue_and_the_worker_keeps_consuming(
    tract: Tract, bus_settings: BusSettings
) -> None:
    garbage = b"\x92\xa3not an envelope"
    wrong_kind = digested_envelope()
    wrong_kind_yield = None
    async with running_organ("absorption", bus_settings, build_absorption(bus_settings)) as workers:
        await tract.js.publish(tract.subjects.absorption_in, garbage, headers={"X-Upstream": "fuzzer"})
        # A yield sent to absorption is valid on the wire but not its input: the core refuses it.
        await publish(tract, tract.subjects.absorption_in, digested_envelope(goal="first"))
        assert await wait_for_count(tract, tract.subjects.border_in, 1) == 1
        [wrong_kind_yield] = await read_envelopes(tract, tract.subjects.border_in)
        # Without a Nats-Msg-Id: the stream already holds this id on the border subject.
        await tract.js.publish(tract.subjects.absorption_in, encode(wrong_kind_yield))
        await publish(tract, tract.subjects.absorption_in, wrong_kind)
        assert await wait_for_count(tract, tract.subjects.border_in, 2) == 2
        await consumer_settled(tract, "absorption")
        assert workers[0].stats.dead_lettered == 2
    letters = await read_subject(tract, tract.subjects.dlq("absorption"), stream=tract.subjects.dlq_stream)
    assert len(letters) == 2
    by_bytes = {msg.data: msg.headers or {} for msg in letters}
    assert garbage in by_bytes and encode(wrong_kind_yield) in by_bytes
    assert "undecodable envelope" in by_bytes[garbage]["Ichor-Dlq-Reason"]
    assert by_bytes[garbage]["X-Upstream"] == "fuzzer"
    assert by_bytes[garbage]["Ichor-Dlq-Subject"] == tract.subjects.absorption_in
    assert "digested" in by_bytes[encode(wrong_kind_yield)]["Ichor-Dlq-Reason"]


async def test_sigkill_between_publish_and_ack_duplicates_nothing(tract: Tract, nats_server: EmbeddedServer) -> None:
    digested = digested_envelope()
    await publish(tract, tract.subjects.absorption_in, digested)
    doomed = quiet_worker(nats_server.url, ICHOR_FAULT_KILL_BEFORE_ACK="1", ICHOR_ACK_WAIT_S="2")
    assert await asyncio.to_thread(doomed.wait, 30) == -signal.SIGKILL
    assert await subject_count(tract, tract.subjects.border_in) == 1
    info = await tract.js.consumer_info(tract.subjects.tract_stream, "absorption")
    assert info.num_ack_pending == 1  # published downstream, never acked

    survivor = quiet_worker(nats_server.url, ICHOR_ACK_WAIT_S="2")
    try:
        info = await consumer_settled(tract, "absorption")
        assert info.num_ack_pending == 0
        assert info.delivered.consumer_seq == 2, "the input came back once, after the crash"
    finally:
        survivor.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(survivor.wait, 30) == 0
    outputs = await read_envelopes(tract, tract.subjects.border_in)
    assert len(outputs) == 1


async def test_sigterm_with_envelopes_in_flight_loses_none(tract: Tract, nats_server: EmbeddedServer) -> None:
    inputs = [digested_envelope(goal=f"ask {n}?", evidence=f"evidence {n}") for n in range(400)]
    await asyncio.gather(*(publish(tract, tract.subjects.absorption_in, envelope) for envelope in inputs))
    worker = quiet_worker(nats_server.url)
    await wait_for_count(tract, tract.subjects.border_in, 50)
    worker.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(worker.wait, 30) == 0
    stopped_at = await subject_count(tract, tract.subjects.border_in)
    info = await tract.js.consumer_info(tract.subjects.tract_stream, "absorption")
    assert info.num_ack_pending == 0, "a drained worker leaves nothing half-done"
    assert stopped_at < len(inputs), "the stop came mid-stream"

    finisher = quiet_worker(nats_server.url)
    try:
        await consumer_settled(tract, "absorption")
    finally:
        finisher.send_signal(signal.SIGTERM)
        await asyncio.to_thread(finisher.wait, 30)
    outputs = await read_envelopes(tract, tract.subjects.border_in)
    assert len(outputs) == len(inputs)
    assert not duplicates([out.chain.steps[0].envelope_id for out in outputs])
    assert {out.payload.goal for out in outputs} == {f"ask {n}?" for n in range(400)}  # type: ignore[union-attr]
