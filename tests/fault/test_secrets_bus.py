"""No secret reaches the model (#12), on a real server with least-privileged organ processes.

Planted (generated) credentials of every supported kind go in as one paste; none of them
is in any envelope after the stomach, in any frame a host fetches (compact or full), or in
any organ's log; the operator user alone gets them back on ``frames.raw``.
"""

from __future__ import annotations

import asyncio
import signal

import msgspec
import pytest

from bench.planted_secrets import planted_pastes
from envelopes.codec import decode, encode
from envelopes.ids import digest_text
from envelopes.types import Admitted, FrameRequest, RawReply, UserInput, Yield
from organs.client import fetch_frame, hand_in_paste
from tests.support.secured import connect_as, provisioned_with_organs, secured

pytestmark = pytest.mark.bus

__all__ = ["secured"]

ASK = "Why does the deploy fail?"


async def test_planted_secrets_are_served_nowhere_and_return_only_to_the_operator(secured) -> None:  # type: ignore[no-untyped-def]
    server, directory, workers = secured
    errors: list[str] = []
    admin = await provisioned_with_organs(server.url, directory, workers, errors)
    host = await connect_as(server.url, directory, "host", errors)
    planted = planted_pastes(7)
    secrets = [secret for paste in planted for secret in paste.secrets]
    paste = ASK + "\n\n" + "\n\n".join(paste.text for paste in planted) + "\n"
    assert all(secret in paste for secret in secrets)
    _, outcome = await hand_in_paste(host, paste, origin=UserInput(actor="ana"), intent=ASK, timeout=90)
    assert isinstance(outcome.payload, Admitted), outcome.payload
    assert outcome.payload.goal == ASK

    carried = []
    for subject in (admin.subjects.absorption_in, admin.subjects.border_in, admin.subjects.brain_in):
        subscription = await admin.js.pull_subscribe(subject, stream=admin.subjects.tract_stream)
        carried += [msg.data for msg in await subscription.fetch(1, timeout=10)]
    assert len(carried) == 3
    for data in carried:
        assert not [secret for secret in secrets if secret.encode() in data]
    yielded = decode(carried[1]).payload
    assert isinstance(yielded, Yield)
    assert sum(redaction.count for report in yielded.report for redaction in report.redacted) >= len(planted)

    operator = await connect_as(server.url, directory, "operator", errors)
    raw_texts = []
    for frame in yielded.frames:
        for representation in ("compact", "full"):
            reply = await fetch_frame(host, frame.id, representation)
            assert reply.frame is not None and reply.frame.content is not None, reply.error
            assert not [secret for secret in secrets if secret in reply.frame.content]
        assert reply.frame.content_digest == frame.id == digest_text(reply.frame.content)
        answer = await operator.nc.request(
            admin.subjects.frames_raw, encode(FrameRequest(id=frame.id, representation="full")), timeout=10
        )
        raw = msgspec.msgpack.decode(answer.data, type=RawReply)
        assert raw.text is not None, raw.error
        raw_texts.append(raw.text)
    assert all(any(secret in text for text in raw_texts) for secret in secrets)

    # The host may not ask for raw bytes, nor read the raw store directly.
    with pytest.raises(Exception):  # noqa: B017 - a denied publish surfaces as a timeout or no responders
        await host.nc.request(admin.subjects.frames_raw, encode(FrameRequest(id=yielded.frames[0].id)), timeout=2)
    with pytest.raises(Exception):  # noqa: B017 - a denied JetStream API call surfaces as a timeout or an API error
        store = await asyncio.wait_for(host.js.object_store(admin.subjects.raw_bucket), 5)
        await asyncio.wait_for(store.get(decode(carried[0]).payload.source_ref.removeprefix("blake3:")), 5)  # type: ignore[union-attr]
    await asyncio.sleep(0.3)
    assert any("permissions violation for publish to" in error and "frames.raw" in error for error in errors)

    for worker in workers:
        worker.send_signal(signal.SIGTERM)
    logs = b"".join(worker.communicate(timeout=30)[0] for worker in workers)
    workers.clear()
    assert b"stomach.digested" in logs and b"redacted" in logs
    assert not [secret for secret in secrets if secret.encode() in logs]
    for tract in (operator, host, admin):
        await tract.nc.close()
