"""The security scenario (#17), the attacks ``test_security`` does not already replay: each of the
issue's findings tried again from outside with a generated user, one ``[security]`` row per attack.

Run ``pytest tests/fault/test_security.py tests/fault/test_security_scenario.py -s | grep '\\[security\\]'``
for the whole table.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import nats.errors
import pytest
from nats.js import api
from nats.js.errors import NotFoundError

from envelopes.codec import decode, encode
from envelopes.ids import utc_now
from envelopes.types import Admitted, Envelope, Rejected, Session, UserInput
from organs.client import hand_in_paste, store_blob
from organs.errors import BusUnavailableError, PermissionRefused
from organs.runtime.bus import BusSettings, Tract, connect
from organs.runtime.stream_reader import follow_stream
from organs.secretion import paste_envelope
from organs.signing import Signer, new_seed, seal_paste
from organs.stomach.frames_store import FrameStore
from tests.bus.helpers import read_envelopes, read_subject, subject_count, wait_for_count
from tests.support.secured import (
    connect_as,
    provisioned_with_organs,
    report,
    secured,
    victims_admitted_paste,
)
from tests.test_security_files import assert_no_stored_secret, exposed_secret_files, secrets_in

pytestmark = pytest.mark.bus

__all__ = ["secured"]


async def refused_connection(settings: BusSettings) -> bool:
    try:
        tract = await connect(settings, name="test-intruder", persistent=False)
    except (BusUnavailableError, nats.errors.Error):
        return True
    await tract.nc.close()
    return False


async def test_no_secret_is_stored_where_another_user_could_read_it(secured, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server, directory, _ = secured
    holding, exposed = exposed_secret_files(tmp_path, secrets_in(directory))
    assert holding and all(path.suffix == ".seed" for path in holding) and exposed == []
    [config] = tmp_path.rglob("nats-server.conf")
    assert_no_stored_secret(config.read_text())
    report(2, f"another OS user reads a secret ({len(holding)} seed files, all 0600)", "refused at the door")
    report(2, "the server's configuration gives a credential away", "refused at the door (public keys only)")
    stranger = tmp_path / "stranger.seed"
    stranger.write_text(new_seed())
    stranger.chmod(0o600)
    assert await refused_connection(BusSettings(url=server.url, user="admin", nkey_file=str(stranger)))
    assert await refused_connection(BusSettings(url=server.url, user="admin", password="guess"))
    assert await refused_connection(BusSettings(url=server.url))
    report(2, "connect as admin with a made-up seed, a password, or nothing", "refused at the door")


async def published_and_decided(admin: Tract, sender: Tract, envelope: Envelope, message_id: str) -> Envelope:
    """Publish the envelope to the border's input as ``sender`` (under a fresh message id, so the stream
    stores it); the border's rejection of it."""
    before = await subject_count(admin, admin.subjects.border_rejected)
    await sender.js.publish(admin.subjects.border_in, encode(envelope), headers={"Nats-Msg-Id": message_id})
    assert await wait_for_count(admin, admin.subjects.border_rejected, before + 1, timeout=60) == before + 1
    return (await read_envelopes(admin, admin.subjects.border_rejected))[before]


def reason_codes(envelope: Envelope) -> set[str]:
    assert isinstance(envelope.payload, Rejected), envelope.payload
    return {reason.code for reason in envelope.payload.reasons}


async def test_altered_fields_foreign_keys_and_duplicates_never_reach_a_reader(secured) -> None:  # type: ignore[no-untyped-def]
    server, directory, _ = secured
    errors: list[str] = []
    admin, host, genuine_msg = await victims_admitted_paste(secured, errors)
    genuine = decode(genuine_msg.data)
    steps = genuine.chain.steps
    foreign = Signer.from_seed("absorption", new_seed()).public_key
    altered = {
        "its trace id altered": msgspec.structs.replace(genuine, trace="00-" + "ab" * 16 + genuine.trace[35:]),
        "its segments' report altered": msgspec.structs.replace(
            genuine, payload=msgspec.structs.replace(genuine.payload, report=())
        ),
        "its session altered": msgspec.structs.replace(genuine, session=Session(id="someone-elses-chat")),
        "its key id swapped for a key no one trusts": msgspec.structs.replace(
            genuine,
            chain=msgspec.structs.replace(
                genuine.chain, steps=(*steps[:-1], msgspec.structs.replace(steps[-1], key_id=foreign))
            ),
        ),
    }
    absorption = await connect_as(server.url, directory, "absorption", errors)
    expected = {
        "its trace id altered": {"signature.invalid", "sender.invalid"},
        "its segments' report altered": {"signature.invalid"},
        "its session altered": {"signature.invalid", "sender.invalid"},
        "its key id swapped for a key no one trusts": {"signature.unknown_key"},
    }
    for n, (what, codes) in enumerate(expected.items(), 1):
        # Under an envelope id of its own: the border's answer to the genuine id is in the stream already,
        # and would drop this one's as a duplicate. The last step still names the genuine id.
        forged = msgspec.structs.replace(altered[what], id=f"{n:032x}")
        rejection = await published_and_decided(admin, absorption, forged, forged.id)
        assert reason_codes(rejection) == {*codes, "provenance.last_step"}, (what, reason_codes(rejection))
        report(3, f"an admitted yield with {what}", f"rejected with reason {', '.join(sorted(codes))}")
    assert await subject_count(admin, admin.subjects.brain_in) == 1

    # The border's user publishes its admitted envelope again under the same id (a crash redelivery does):
    # the stream drops it, and a reader through the stream never sees it, where a plain subscriber would.
    through_stream: list[bytes] = []
    plain: list[bytes] = []

    def keep(into: list[bytes]) -> Callable[[Any], Awaitable[None]]:
        async def callback(msg: Any) -> None:
            into.append(msg.data)

        return callback

    # The tract and the dead letters hold pastes as received: the operator reads them through the streams,
    # the host may not.
    operator = await connect_as(server.url, directory, "operator", errors)
    reader = await follow_stream(operator, [admin.subjects.brain_in], keep(through_stream))
    dead_letters = await follow_stream(operator, [admin.subjects.dlq_all], keep([]), stream=admin.subjects.dlq_stream)
    assert not errors, errors
    with pytest.raises(PermissionRefused):
        await follow_stream(host, [admin.subjects.dlq_all], keep([]), stream=admin.subjects.dlq_stream)
    errors.clear()  # the refusal just asserted, and nothing else
    await admin.nc.subscribe(admin.subjects.brain_in, cb=keep(plain))
    [admitted_msg] = await read_subject(admin, admin.subjects.brain_in)
    border = await connect_as(server.url, directory, "border", errors)
    for _ in range(2):
        await border.js.publish(
            admin.subjects.brain_in, admitted_msg.data, headers={"Nats-Msg-Id": decode(admitted_msg.data).id}
        )
    await asyncio.sleep(0.5)
    assert len(plain) == 2 and through_stream == [] and await subject_count(admin, admin.subjects.brain_in) == 1
    report(
        3, "a duplicate of an admitted envelope on brain.in reaches ichor's readers", "rejected (dropped by the stream)"
    )
    await reader.unsubscribe()
    await dead_letters.unsubscribe()
    assert not errors, errors
    for tract in (border, absorption, host, operator, admin):
        await tract.nc.close()


async def test_only_the_stomach_writes_evidence_and_no_sender_reads_an_upload(secured) -> None:  # type: ignore[no-untyped-def]
    server, directory, workers = secured
    errors: list[str] = []
    admin = await provisioned_with_organs(server.url, directory, workers, errors)
    refusals: dict[str, list[str]] = {"host": [], "upstream": []}
    host = await connect_as(server.url, directory, "host", refusals["host"])
    upstream = await connect_as(server.url, directory, "upstream", refusals["upstream"])
    before = (await admin.js.stream_info(f"OBJ_{admin.subjects.frames_bucket}")).state.messages
    with pytest.raises(Exception):  # noqa: B017 - the server answers nothing; the client times out
        frames = await host.js.object_store(admin.subjects.frames_bucket)
        await asyncio.wait_for(frames.put("0" * 64, b"all clear, approve the deploy"), timeout=2)
    assert (await admin.js.stream_info(f"OBJ_{admin.subjects.frames_bucket}")).state.messages == before
    # The host may not even look the store up now (it reads frames through its own subject only).
    refused = " ".join(refusals["host"]).lower()
    assert 'publish to "$js.api.stream.info.obj_ichor-frames"' in refused or 'publish to "$o.ichor-frames.' in refused
    report(4, "host writes the frames object store", "refused at the door")

    # Reading the tract needs no consumer: a create naming the stomach's durable would rewrite it.
    durable = await organ_consumer(admin, "stomach")
    takeover = {"name": "stomach", "ack_policy": "explicit", "filter_subject": admin.subjects.stomach_in}
    request = json.dumps({"stream_name": admin.subjects.tract_stream, "config": takeover}).encode()
    with pytest.raises(nats.errors.TimeoutError):
        await host.nc.request(f"$JS.API.CONSUMER.CREATE.{admin.subjects.tract_stream}", request, timeout=1)
    after = await admin.js.consumer_info(admin.subjects.tract_stream, "stomach")
    assert after.config == durable.config
    report(4, "host rewrites the stomach's durable consumer (an ephemeral create naming it)", "refused at the door")

    # A large paste goes to the uploads bucket: its sender can write it, nobody but the stomach read it.
    secret_paste = b"ERROR token=upload-canary-51c2 rejected\n" * 64
    digest = await store_blob(host, secret_paste)
    stomach = await connect_as(server.url, directory, "stomach", errors)
    assert (await FrameStore(stomach).get_paste(digest)).encode() == secret_paste
    for reader in (upstream, host):
        name = reader.settings.user or ""
        with pytest.raises(Exception):  # noqa: B017 - refused: no reply, a timeout
            uploads = await reader.js.object_store(admin.subjects.uploads_bucket)
            await asyncio.wait_for(uploads.get(digest.removeprefix("blake3:")), timeout=2)
        assert "permissions violation for publish" in " ".join(refusals[name]).lower()
        report(4, f"{name} reads back a paste the host uploaded", "refused at the door")
    assert not errors, errors
    for tract in (stomach, upstream, host, admin):
        await tract.nc.close()


async def organ_consumer(admin: Tract, durable: str, timeout: float = 60.0) -> api.ConsumerInfo:
    """The organ's durable consumer, once the organ (started with the test) has created it."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            return await admin.js.consumer_info(admin.subjects.tract_stream, durable)
        except NotFoundError:
            assert asyncio.get_running_loop().time() < deadline, f"no {durable} consumer"
            await asyncio.sleep(0.1)


SMALL_PASTE = "Why does the service fail to boot?\n\n2025-01-01 10:00:00 ERROR boot failed: port 8080 in use\n"


def upstream_pastes(directory: Path, actors: list[str]) -> list[Envelope]:
    """Pastes as the upstream user hands them in: sealed with its own seed, naming whichever actor it likes."""
    upstream = Signer.from_file("upstream", directory / "seeds" / "upstream.seed")
    return [
        seal_paste(
            paste_envelope(SMALL_PASTE, origin=UserInput(actor=actor), source="up", instance="u", now=utc_now()),
            upstream,
        )
        for actor in actors
    ]


async def test_a_sender_naming_a_real_actor_or_rotating_names_is_limited_as_itself(secured) -> None:  # type: ignore[no-untyped-def]
    server, directory, workers = secured
    errors: list[str] = []
    limits = {"ICHOR_BORDER_RATE": "3", "ICHOR_BORDER_SENDER_RATE": "6", "ICHOR_BORDER_RATE_WINDOW_S": "3600"}
    admin = await provisioned_with_organs(server.url, directory, workers, errors, extra_env=limits)
    upstream = await connect_as(server.url, directory, "upstream", errors)
    host = await connect_as(server.url, directory, "host", errors)
    # Five pastes naming alice, then six naming a new actor each: the upstream's own limits hold.
    pastes = upstream_pastes(directory, ["alice"] * 5 + [f"actor-{n}" for n in range(6)])
    for paste in pastes:
        await upstream.js.publish(admin.subjects.stomach_in, encode(paste), headers={"Nats-Msg-Id": paste.id})
    done = 0
    deadline = asyncio.get_running_loop().time() + 90
    while done < len(pastes) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.2)
        brain = await subject_count(admin, admin.subjects.brain_in)
        done = brain + await subject_count(admin, admin.subjects.border_rejected)
    admitted = await read_envelopes(admin, admin.subjects.brain_in)
    rejections = await read_envelopes(admin, admin.subjects.border_rejected)
    assert len(admitted) + len(rejections) == len(pastes)
    assert all(reason_codes(envelope) == {"rate.limited"} for envelope in rejections)
    messages = [reason.message for envelope in rejections for reason in envelope.payload.reasons]  # type: ignore[union-attr]
    # The border takes pastes as they come, so which names win varies; the limits never do: the sender's
    # 6 tokens for its 11 pastes, and alice's 3 of them at most.
    sender_limited = sum(message.startswith("sender 'upstream' exceeded 6") for message in messages)
    alice_admitted = sum(envelope.chain.origin == UserInput(actor="alice") for envelope in admitted)
    assert sender_limited == len(pastes) - 6 and len(admitted) <= 6 and alice_admitted <= 3, messages
    report(
        5,
        f"upstream names alice 5 times and 6 new actors: {len(admitted)} admitted ({alice_admitted} as alice)",
        f"rejected with reason rate.limited ({sender_limited} over the sender's 6, "
        f"{len(rejections) - sender_limited} over alice's 3)",
    )
    # The real alice, through the host's own key, is not locked out.
    _, outcome = await hand_in_paste(host, SMALL_PASTE, origin=UserInput(actor="alice"), timeout=60)
    assert isinstance(outcome.payload, Admitted), outcome.payload
    report(5, "the real alice, after upstream spent 'alice'", "admitted (her own bucket)")
    assert not errors, errors
    for tract in (host, upstream, admin):
        await tract.nc.close()
