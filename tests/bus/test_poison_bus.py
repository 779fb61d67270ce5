"""What a message near the server's ``max_payload`` must not do (#28): close a connection, or be lost.

The scenario with the whole tract under its least-privileged users is ``tests/fault/test_poison.py``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from nats.js import api

from envelopes.ids import digest_bytes
from organs.errors import BusUnavailableError
from organs.operations.dlq import get_letter, list_letters, replay_letter
from organs.runtime.bus import BusSettings, Tract
from organs.runtime.dead_letters import CUT, WHOLE
from organs.runtime.organ import serve_organ
from organs.runtime.payload import MessageTooLarge
from organs.runtime.worker import Worker, dead_letter
from organs.stomach.worker import build_stomach
from tests.bus.helpers import read_subject
from tests.support.servers import small_tract

pytestmark = pytest.mark.bus

SMALL_PAYLOAD = 64 * 1024


async def _taken(tract: Tract, data: bytes) -> object:
    """``data`` stored on the stomach's input and taken by a consumer, as a worker holds it."""
    await tract.js.publish(tract.subjects.stomach_in, data)
    taker = await tract.js.pull_subscribe(
        tract.subjects.stomach_in,
        stream=tract.subjects.tract_stream,
        config=api.ConsumerConfig(ack_policy=api.AckPolicy.EXPLICIT, inactive_threshold=5.0),
    )
    [msg] = await taker.fetch(1, timeout=5)
    return msg


async def test_a_publish_whose_headers_pass_max_payload_is_refused_before_sending(tmp_path: Path) -> None:
    async with small_tract(tmp_path, max_payload=SMALL_PAYLOAD, instance="guard") as (_, tract):
        payload = b"x" * (SMALL_PAYLOAD - 10)
        with pytest.raises(MessageTooLarge):
            await tract.nc.publish("ichor.test.big", payload, headers={"Ichor-Dlq-Reason": "twenty bytes of it"})
        await tract.nc.flush(timeout=2)
        assert tract.nc.is_connected and tract.nc.last_error is None


async def test_a_dead_letter_past_max_payload_is_kept_cut_and_names_its_whole_input(tmp_path: Path) -> None:
    async with small_tract(tmp_path, max_payload=SMALL_PAYLOAD, instance="cut") as (_, tract):
        near_max = (bytes(range(256)) * (SMALL_PAYLOAD // 256))[: SMALL_PAYLOAD - 110]
        msg = await _taken(tract, near_max)
        await dead_letter(tract, "stomach", msg, "undecodable envelope: test")  # type: ignore[arg-type]
        [letter] = await list_letters(tract, "stomach")
        _, kept = await get_letter(tract, letter.id)
        assert tract.nc.is_connected
        assert near_max.startswith(kept) and 0 < len(kept) < len(near_max)
        assert f"kept the first {len(kept)} of {len(near_max)} bytes" in letter.headers[CUT]
        assert letter.headers[WHOLE] == f"{tract.subjects.tract_stream} 1"
        assert letter.headers["Ichor-Dlq-Digest"] == digest_bytes(near_max)


async def test_a_letter_kept_cut_is_replayed_with_its_whole_bytes(tmp_path: Path) -> None:
    async with small_tract(tmp_path, max_payload=SMALL_PAYLOAD, instance="replay") as (_, tract):
        near_max = b"y" * (SMALL_PAYLOAD - 110)
        msg = await _taken(tract, near_max)
        await dead_letter(tract, "stomach", msg, "undecodable envelope: test")  # type: ignore[arg-type]
        [letter] = await list_letters(tract, "stomach")
        await replay_letter(tract, letter.id)
        stored = await read_subject(tract, tract.subjects.stomach_in)
        assert [len(each.data) for each in stored] == [len(near_max), len(near_max)]
        assert stored[-1].data == near_max


async def test_an_organ_whose_connection_is_closed_under_it_stops_with_an_error(bus_settings: BusSettings) -> None:
    stop = asyncio.Event()
    ready: asyncio.Future[list[Worker]] = asyncio.get_running_loop().create_future()
    serving = asyncio.create_task(
        serve_organ("stomach", bus_settings, build_stomach(bus_settings), stop, on_ready=ready.set_result)
    )
    [worker, *_] = await asyncio.wait_for(ready, timeout=20)
    # What nats-py does on any protocol error from the server: close the connection for good.
    await worker.tract.nc.close()
    with pytest.raises(BusUnavailableError, match="closed"):
        await asyncio.wait_for(serving, timeout=20)
    assert stop.is_set()
