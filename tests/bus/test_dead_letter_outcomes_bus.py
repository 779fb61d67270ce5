"""Every paste gets an outcome: an input an organ dead-letters is rejected on ``border.rejected`` at once."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest

from envelopes.codec import encode
from envelopes.ids import new_id, new_traceparent
from envelopes.types import Rejected, UserInput
from organs.absorption import build_absorption
from organs.client import hand_in_paste
from organs.operations.dlq import list_letters
from organs.runtime.bus import BusSettings, Tract
from organs.runtime.dead_letter_outcomes import DEAD_LETTERED
from organs.signing import Signer, new_seed, seal_paste
from organs.stomach.large import PasteLimits
from organs.stomach.worker import build_stomach
from tests.bus.helpers import read_envelopes, wait_for_count
from tests.bus.test_cli_bus import ROOT, ichor
from tests.conftest import running_organ
from tests.support.envelopes import AT, fresh_paste

pytestmark = pytest.mark.bus

SMALL = PasteLimits(large_bytes=64, max_bytes=128)


async def test_the_client_gets_the_rejection_of_a_paste_the_stomach_dead_letters(
    tract: Tract, bus_settings: BusSettings
) -> None:
    async with running_organ("stomach", bus_settings, build_stomach(bus_settings, limits=SMALL)):
        paste, outcome = await hand_in_paste(tract, "x" * 500, origin=UserInput(actor="t"), timeout=20)
    [letter] = await list_letters(tract)
    assert isinstance(outcome.payload, Rejected)
    note = outcome.payload.dead_letter
    assert note is not None
    assert (note.organ, note.id, note.input_id, note.reason) == ("stomach", letter.id, paste.id, letter.reason)
    assert [reason.code for reason in outcome.payload.reasons] == [DEAD_LETTERED]
    assert outcome.trace_id == paste.trace_id
    assert outcome.chain.origin == paste.chain.origin
    assert [step.stage for step in outcome.chain.steps] == ["rejected"]


async def _dead_lettered_sealed_paste(
    tract: Tract, bus_settings: BusSettings, sealer: Signer, trusted: dict[str, str | list[str]]
) -> list[str]:
    """The outcome subjects that got a copy of the rejection of a too-large paste sealed by ``sealer`` (the stomach
    trusting ``trusted``); the rejection itself is on ``border.rejected``."""
    paste = seal_paste(fresh_paste("x" * 500), sealer)
    async with running_organ("stomach", bus_settings, build_stomach(bus_settings, limits=SMALL, trusted_keys=trusted)):
        await tract.js.publish(tract.subjects.stomach_in, encode(paste), headers={"Nats-Msg-Id": paste.id})
        assert await wait_for_count(tract, tract.subjects.border_rejected, 1, timeout=20) == 1
    # The organ has stopped: a copy for the sender was published before the input was let go, or never.
    stored = await tract.js.stream_info(tract.subjects.tract_stream, subjects_filter=tract.subjects.outcomes)
    return sorted(stored.state.subjects or {})


async def test_a_sealed_paste_the_stomach_dead_letters_is_rejected_on_its_senders_own_subject_too(
    tract: Tract, bus_settings: BusSettings
) -> None:
    alice = Signer.from_seed("alice", new_seed())
    subjects = await _dead_lettered_sealed_paste(tract, bus_settings, alice, {"alice": alice.public_key})
    assert subjects == [tract.subjects.outcome("alice")]
    [copy] = await read_envelopes(tract, tract.subjects.outcome("alice"))
    [rejection] = await read_envelopes(tract, tract.subjects.border_rejected)
    assert copy == rejection
    assert isinstance(copy.payload, Rejected) and copy.payload.dead_letter is not None


async def test_a_paste_sealed_with_a_key_no_one_trusts_gets_no_senders_copy_of_its_rejection(
    tract: Tract, bus_settings: BusSettings
) -> None:
    alice, mallory = Signer.from_seed("alice", new_seed()), Signer.from_seed("alice", new_seed())
    subjects = await _dead_lettered_sealed_paste(tract, bus_settings, mallory, {"alice": alice.public_key})
    assert subjects == []


async def test_an_undecodable_paste_is_rejected_with_the_id_and_trace_it_holds(
    tract: Tract, bus_settings: BusSettings
) -> None:
    document = msgspec.to_builtins(fresh_paste())
    document["created_at"] = "not a date"
    async with running_organ("stomach", bus_settings, build_stomach(bus_settings)):
        await tract.js.publish(tract.subjects.stomach_in, msgspec.msgpack.encode(document))
        assert await wait_for_count(tract, tract.subjects.border_rejected, 1, timeout=20) == 1
    [rejection] = await read_envelopes(tract, tract.subjects.border_rejected)
    [letter] = await list_letters(tract)
    assert isinstance(rejection.payload, Rejected) and rejection.payload.dead_letter is not None
    assert rejection.payload.dead_letter.input_id == document["id"]
    assert rejection.payload.dead_letter.id == letter.id
    assert rejection.trace_id == document["trace"][3:35]
    assert "created_at" in rejection.payload.reasons[0].message


async def test_bytes_that_are_no_envelope_are_rejected_under_their_traceparent_header(
    tract: Tract, bus_settings: BusSettings
) -> None:
    trace = new_traceparent()
    async with running_organ("stomach", bus_settings, build_stomach(bus_settings)):
        await tract.js.publish(tract.subjects.stomach_in, b'{"text": "a JSON body"}', headers={"traceparent": trace})
        assert await wait_for_count(tract, tract.subjects.border_rejected, 1, timeout=20) == 1
    [rejection] = await read_envelopes(tract, tract.subjects.border_rejected)
    assert isinstance(rejection.payload, Rejected) and rejection.payload.dead_letter is not None
    assert rejection.payload.dead_letter.input_id is None
    assert rejection.trace_id == trace[3:35]


async def test_an_envelope_the_absorption_dead_letters_is_rejected_once_however_often_it_is_sent(
    tract: Tract, bus_settings: BusSettings
) -> None:
    # A paste where a digest belongs: the absorption cannot package it.
    paste = fresh_paste()
    async with running_organ("absorption", bus_settings, build_absorption(bus_settings)):
        for copy in range(2):
            # A new message id each time, as a replay is: the same input dead-lettered twice.
            await tract.js.publish(tract.subjects.absorption_in, encode(paste), headers={"Nats-Msg-Id": new_id()})
            assert await wait_for_count(tract, tract.subjects.border_rejected, copy + 1, timeout=20) == copy + 1
    rejections = await read_envelopes(tract, tract.subjects.border_rejected)
    letters = await list_letters(tract)
    assert [
        r.payload.dead_letter.organ for r in rejections if isinstance(r.payload, Rejected) and r.payload.dead_letter
    ] == [
        "absorption",
        "absorption",
    ]
    assert {r.trace_id for r in rejections} == {paste.trace_id}
    # Two letters, two rejections: each names its own letter.
    assert sorted(
        r.payload.dead_letter.id for r in rejections if isinstance(r.payload, Rejected) and r.payload.dead_letter
    ) == sorted(letter.id for letter in letters)


def test_ichor_ingest_under_secure_returns_the_rejection_of_a_dead_lettered_paste(tmp_path: Path) -> None:
    from organs.runtime.server import free_port
    from tests.bus.test_health_bus import get, samples, wait_until_ready

    metrics_port = free_port()  # the stomach's, first of the tract
    environment = {
        **{key: value for key, value in os.environ.items() if key != "ICHOR_NATS_URL"},
        "ICHOR_LARGE_PASTE_BYTES": "64",
        "ICHOR_MAX_PASTE_BYTES": "128",
        "ICHOR_METRICS_PORT": str(metrics_port),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "organs.cli", "up", "--secure", "--port", "0", "--data", str(tmp_path / "data")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env=environment,
    )
    try:
        url = _embedded_url(process)
        exports = ichor("security", "env", str(tmp_path / "data" / "security"), "host")
        host = dict(line.removeprefix("export ").split("=", 1) for line in exports.stdout.splitlines())
        result = subprocess.run(
            [sys.executable, "-m", "organs.cli", "ingest", "-", "--nats", url, "--json", "--timeout", "60"],
            input="y" * 500,
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**environment, **host},
            timeout=90,
        )
        assert wait_until_ready(metrics_port)[0] == 200
        # The stomach's user may read its letters' count from the dead-letter stream.
        scraped = samples(get(metrics_port, "/metrics")[2])
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    assert result.stdout, result.stderr
    assert scraped['ichor_dead_letters{organ="stomach"}'] == 1
    outcome = msgspec.json.decode(result.stdout)
    assert result.returncode != 0
    assert outcome["kind"] == "rejected"
    assert outcome["payload"]["dead_letter"]["organ"] == "stomach"
    assert "paste.too_large" in outcome["payload"]["dead_letter"]["reason"]


def _embedded_url(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line.startswith("{") and '"nats.embedded_started"' in line:
            url: str = msgspec.json.decode(line)["url"]
            return url
    raise AssertionError("ichor up never reported its embedded server")


def test_the_rejection_of_one_letter_is_one_envelope() -> None:
    from organs.runtime.dead_letter_outcomes import dead_letter_rejection, read_input

    data = encode(fresh_paste())
    read = read_input(data, None)
    first = dead_letter_rejection(read, data, organ="stomach", instance="a", letter_id=7, reason="r", now=AT)
    again = dead_letter_rejection(read, data, organ="stomach", instance="a", letter_id=7, reason="r", now=AT)
    other = dead_letter_rejection(read, data, organ="stomach", instance="a", letter_id=8, reason="r", now=AT)
    assert first == again
    assert first.id != other.id


async def test_a_tract_too_full_for_the_rejection_holds_the_input_and_sends_it_once_room_returns(
    tmp_path: Path,
) -> None:
    """A refusal for want of room is an outage, not a poison input: the letter is kept once, the input is held
    without spending deliveries, and its rejection reaches the host once the tract has room again."""
    import nats.js.errors

    from organs.runtime.bus import connect, provision
    from organs.runtime.limits import StoreLimits
    from organs.runtime.server import EmbeddedServer
    from tests.bus.helpers import consumer_settled

    limit = 64 * 1024
    with EmbeddedServer(tmp_path / "nats") as server:
        settings = BusSettings(
            url=server.url, instance="t", limits=StoreLimits(tract_max_bytes=limit), ack_wait_s=1.0, max_deliver=3
        )
        tract = await connect(settings, name="filler")
        try:
            await provision(tract)
            await tract.js.publish(tract.subjects.stomach_in, b"not an envelope")
            with pytest.raises(nats.js.errors.APIError):  # the tract at its limit refuses every write after
                for _ in range(limit // 1024 + 1):
                    await tract.js.publish(tract.subjects.brain_in, b"x" * 1024)
            async with running_organ("stomach", settings, build_stomach(settings)) as workers:
                while not all(worker.bound for worker in workers):
                    await asyncio.sleep(0.05)
                await asyncio.sleep(4 * settings.ack_wait_s)  # past every delivery the input would have had
                held = await tract.js.consumer_info(tract.subjects.tract_stream, "stomach")
                await tract.js.purge_stream(tract.subjects.tract_stream, subject=tract.subjects.brain_in)
                rejected = await wait_for_count(tract, tract.subjects.border_rejected, 1, timeout=30)
                settled = await consumer_settled(tract, "stomach", timeout=30)
                letters = await list_letters(tract)
        finally:
            await tract.nc.close()
    assert held.num_ack_pending == 1, "the input is held while the tract has no room"
    assert [letter.organ for letter in letters] == ["stomach"]
    assert rejected == 1
    assert (settled.num_pending, settled.num_ack_pending) == (0, 0)
