"""Poison input (#28): one message the server's limits make hard to keep must never stop an organ.

A message just under the server's ``max_payload`` cannot be dead-lettered as is (the dead letter's
headers push it past the limit, and a server that refuses a publish closes the connection), so it is
kept cut, with the cut stated and the place of its whole bytes; the organ keeps serving.
"""

from __future__ import annotations

import signal
import time

import pytest

from envelopes.ids import digest_bytes
from envelopes.types import Admitted, UserInput
from organs.client import hand_in_paste
from organs.operations.dlq import get_letter, list_letters
from tests.bus.helpers import wait_for_count
from tests.support.secured import EXAMPLE, connect_as, provisioned_with_organs, secured

pytestmark = pytest.mark.bus

__all__ = ["secured"]

# What the issue measured: the server refused the dead letter by 100-120 bytes.
NEAR_MAX_SHORTFALL = 110


@pytest.mark.serial
async def test_a_near_max_message_from_upstream_is_dead_lettered_and_the_stomach_keeps_serving(secured) -> None:  # type: ignore[no-untyped-def]
    server, directory, workers = secured
    errors: list[str] = []
    admin = await provisioned_with_organs(server.url, directory, workers, errors)
    upstream = await connect_as(server.url, directory, "upstream", errors)
    host = await connect_as(server.url, directory, "host", errors)
    started = time.monotonic()
    poison = b"\x92\xa3" + b"x" * (upstream.nc.max_payload - NEAR_MAX_SHORTFALL - 2)
    await upstream.js.publish(admin.subjects.stomach_in, poison)
    dlq = admin.subjects.dlq("stomach")
    await wait_for_count(admin, dlq, 1, timeout=60, stream=admin.subjects.dlq_stream)
    [letter] = await list_letters(admin, "stomach")
    _, kept = await get_letter(admin, letter.id)

    _, outcome = await hand_in_paste(host, EXAMPLE, origin=UserInput(actor="after-poison"), timeout=60)
    served_after_s = time.monotonic() - started
    assert isinstance(outcome.payload, Admitted), outcome.payload
    assert letter.reason.startswith("undecodable envelope"), letter.reason
    assert poison.startswith(kept) and len(kept) < len(poison)
    assert letter.headers["Ichor-Dlq-Bytes"] == str(len(poison))
    assert letter.headers["Ichor-Dlq-Digest"] == digest_bytes(poison)
    stream, _, sequence = letter.headers["Ichor-Dlq-Whole"].partition(" ")
    whole = await admin.js.get_msg(stream, int(sequence))
    assert whole.data == poison
    assert [worker.poll() for worker in workers] == [None] * len(workers)
    print(
        f"\n[fault:near-max] payload={len(poison)} max_payload={upstream.nc.max_payload} dead_lettered=1 "
        f"kept_bytes={len(kept)} ordinary_paste=admitted served_after_s={served_after_s:.1f} restarts_by_hand=0"
    )
    for worker in workers:
        worker.send_signal(signal.SIGTERM)
    for tract in (upstream, host, admin):
        await tract.nc.close()
