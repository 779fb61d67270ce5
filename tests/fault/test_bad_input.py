"""Bad input fed to the workers on a real nats-server.

Every undecodable or unprocessable envelope lands in the organ's dead-letter
subject with its exact bytes and an ``Ichor-Dlq-Reason``; a decodable envelope
that is not a yield is the border's to reject; every good paste reaches the
brain; the workers keep consuming afterwards. What the decoder and each pure
core do with the same input is tested beside them, without a bus:
``tests/test_envelopes_hostile.py``, ``tests/stomach/test_stomach_hostile.py``,
``tests/border/test_border_hostile.py``.
"""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import msgspec
import pytest

from envelopes.codec import encode
from envelopes.ids import digest_text
from envelopes.types import Admitted, Envelope, Rejected
from organs.absorption import build_absorption
from organs.absorption.core import yield_context
from organs.anatomy import ORGANS, organ_named
from organs.border.worker import build_border
from organs.runtime.bus import BusSettings, Tract
from organs.stomach.worker import build_stomach
from tests.bus.helpers import consumer_settled, read_envelopes, read_subject, subject_count, wait_for_count
from tests.conftest import running_organ
from tests.support.envelopes import AT, deferred_notice_envelope, digested_envelope, fresh_paste, note_frame
from tests.support.hostile import msgpack_str, nested_arrays, raw_map, replaced, splice
from tests.support.servers import small_tract

ASK = "Why is this slow?"

# Each organ's main consumer: the one its input subject feeds.
ORGAN_DURABLES = {organ.name: organ.consumers[0].durable for organ in ORGANS}


@dataclasses.dataclass
class Bad:
    """One bad message: where it goes, its exact bytes, and where it must end up."""

    name: str
    organ: str  # the organ whose input subject receives it
    data: bytes
    outcome: str = "dlq"  # "dlq", or "rejected" for a decodable envelope the border must refuse


def bad_batch() -> list[Bad]:
    """Bad messages for every input subject; every one has distinct bytes."""
    paste_map = raw_map(fresh_paste())
    digested = digested_envelope(goal="Why is the bus test bad?")
    yielded = yield_context(digested_envelope(goal="Why is this yield bad?"), "absorption-fault", now=AT)
    digested_map = raw_map(digested)
    dishonest_cost = msgspec.structs.replace(note_frame("abc"), token_cost=99)
    batch: list[Bad] = [Bad("stomach: msgpack nil", "stomach", b"\xc0")]
    for number, organ in enumerate(ORGAN_DURABLES):
        # ``number`` and ``organ`` go into each message so that no two share their bytes.
        batch += [
            Bad(f"{organ}: empty", organ, b"" if number == 0 else b" " * number),
            Bad(f"{organ}: garbage", organ, f"\x92\xa3not an envelope for {organ}".encode()),
            Bad(f"{organ}: json", organ, f'{{"v": 1, "organ": "{organ}"}}'.encode()),
            Bad(f"{organ}: truncated", organ, encode(fresh_paste(f"cut short for {organ}"))[:-7]),
            Bad(
                f"{organ}: invalid utf-8",
                organ,
                splice(paste_map, ("source",), msgpack_str(organ.encode() + b"\xed\xa0\x80")),
            ),
            Bad(
                f"{organ}: 10,000 nested arrays",
                organ,
                splice(paste_map, ("payload", "text"), nested_arrays(10_000 + number)),
            ),
            Bad(
                f"{organ}: schema from the future",
                organ,
                msgspec.msgpack.encode(replaced(paste_map, ("v",), 99 + number)),
            ),
            Bad(
                f"{organ}: payload tag unknown",
                organ,
                msgspec.msgpack.encode(replaced(paste_map, ("payload", "kind"), f"x-{organ}")),
            ),
        ]
    wrong_digest = fresh_paste("these bytes are not the digested ones", input_digest=digest_text("other bytes"))
    missing_ref = fresh_paste("", text_ref=digest_text("never stored"), input_digest=digest_text("never stored"))
    batch += [
        Bad("stomach: digest does not match text", "stomach", encode(wrong_digest)),
        Bad("stomach: text_ref not in the store", "stomach", encode(missing_ref)),
        Bad("stomach: a digested envelope", "stomach", encode(digested_envelope(goal="Why send me a digest?"))),
        Bad("stomach: a deferred notice on the main subject", "stomach", encode(deferred_notice_envelope())),
        Bad("stomach: a yield", "stomach", encode(yielded)),
        Bad("absorption: a paste", "absorption", encode(fresh_paste("a paste for absorption"))),
        Bad(
            "absorption: a yield",
            "absorption",
            encode(yield_context(digested_envelope(goal="Why twice?"), "a", now=AT)),
        ),
        Bad(
            "absorption: a digest without a tier",
            "absorption",
            msgspec.msgpack.encode(replaced(digested_map, ("tier",), None)),
        ),
        Bad(
            "absorption: a digest with an unknown tier",
            "absorption",
            msgspec.msgpack.encode(replaced(digested_map, ("tier",), "raw")),
        ),
        # Decodable envelopes are the border's to judge: it answers them with a rejection, not a dead letter.
        Bad("border: a paste", "border", encode(fresh_paste("a paste for the border")), "rejected"),
        Bad("border: a digest", "border", encode(digested_envelope(goal="Why skip absorption?")), "rejected"),
        Bad(
            "border: a dishonest yield",
            "border",
            encode(yield_context(digested_envelope(ASK, frames=(dishonest_cost,)), "absorption-fault", now=AT)),
            "rejected",
        ),
    ]
    assert len({bad.data for bad in batch}) == len(batch), "bad messages must be told apart by their bytes"
    return batch


def good_paste(n: int) -> Envelope:
    evidence = f"2026-11-29T08:00:0{n % 10}Z ERROR [api] request {n} failed: upstream timeout"
    return fresh_paste(f"{evidence}\n\n./services/api/handler_{n}.py\n\nWhy did request {n} fail?")


def input_subject(tract: Tract, organ: str) -> str:
    return organ_named(organ).consumers[0].address(tract.subjects)


async def publish_raw(tract: Tract, subject: str, data: bytes, case: str) -> None:
    # A fresh id per message: the stream dedupes Nats-Msg-Id across every subject it holds.
    await tract.js.publish(subject, data, headers={"Nats-Msg-Id": uuid.uuid4().hex, "X-Fault-Case": case})


async def publish_good(tract: Tract, envelope: Envelope) -> None:
    await tract.js.publish(tract.subjects.stomach_in, encode(envelope), headers={"Nats-Msg-Id": envelope.id})


@pytest.mark.bus
async def test_bad_envelopes_are_dead_lettered_and_good_pastes_pass(tract: Tract, bus_settings: BusSettings) -> None:
    batch = bad_batch()
    goods = [good_paste(n) for n in range(4)]
    async with (
        running_organ("stomach", bus_settings, build_stomach(bus_settings)) as stomach,
        running_organ("absorption", bus_settings, build_absorption(bus_settings)) as absorption,
        running_organ("border", bus_settings, build_border(bus_settings)) as border,
    ):
        # Interleave: a good paste after every few bad messages, so poison never blocks what follows it.
        for position, bad in enumerate(batch):
            if position % (len(batch) // len(goods) + 1) == 0:
                await publish_good(tract, goods[position // (len(batch) // len(goods) + 1)])
            await publish_raw(tract, input_subject(tract, bad.organ), bad.data, bad.name)
        expected_letters = sum(1 for bad in batch if bad.outcome == "dlq")
        # The border judges some; every dead letter is rejected too, so that its host hears of it.
        expected_rejections = sum(1 for bad in batch if bad.outcome == "rejected") + expected_letters
        dlq = tract.subjects.dlq_stream
        assert await wait_for_count(tract, tract.subjects.brain_in, len(goods), timeout=60) == len(goods)
        for organ, durable in ORGAN_DURABLES.items():
            wanted = sum(1 for bad in batch if bad.organ == organ and bad.outcome == "dlq")
            assert await wait_for_count(tract, tract.subjects.dlq(organ), wanted, stream=dlq) == wanted
            info = await consumer_settled(tract, durable)
            assert info.num_pending == 0 and info.num_ack_pending == 0, f"{organ} left work behind"
        assert await wait_for_count(tract, tract.subjects.border_rejected, expected_rejections) == expected_rejections

        # Still consuming: one more good paste goes all the way through.
        await publish_good(tract, good_paste(99))
        assert await wait_for_count(tract, tract.subjects.brain_in, len(goods) + 1, timeout=60) == len(goods) + 1
        workers = [*stomach, *absorption, *border]
        assert all(worker.bound for worker in workers)
        assert sum(worker.stats.dead_lettered for worker in workers) == expected_letters

    letters: list[tuple[str, bytes, dict[str, str]]] = []
    for organ in ORGAN_DURABLES:
        for msg in await read_subject(tract, tract.subjects.dlq(organ), stream=tract.subjects.dlq_stream):
            letters.append((organ, msg.data, dict(msg.headers or {})))
    print(f"[bus] {len(batch)} bad messages: {len(letters)} dead letters, {expected_rejections} rejections")
    by_case = {headers.get("X-Fault-Case", "?"): (organ, data, headers) for organ, data, headers in letters}
    assert len(by_case) == len(letters) == expected_letters
    for bad in batch:
        if bad.outcome != "dlq":
            assert bad.name not in by_case, f"{bad.name} was dead-lettered; the border should judge it"
            continue
        assert bad.name in by_case, f"{bad.name} is missing from the DLQ"
        organ, data, headers = by_case[bad.name]
        assert organ == bad.organ
        assert data == bad.data, f"{bad.name}: the dead letter does not hold the original bytes"
        assert headers.get("Ichor-Dlq-Reason", "").strip(), f"{bad.name}: no reason"
        assert headers["Ichor-Dlq-Subject"] == input_subject(tract, bad.organ)
        print(f"[bus] {bad.name}: {headers['Ichor-Dlq-Reason'][:100]}")

    rejections = await read_envelopes(tract, tract.subjects.border_rejected)
    assert all(isinstance(envelope.payload, Rejected) and envelope.payload.reasons for envelope in rejections)
    noted = [e.payload.dead_letter for e in rejections if isinstance(e.payload, Rejected) and e.payload.dead_letter]
    assert len({(note.organ, note.id) for note in noted}) == len(noted) == expected_letters
    admitted = [envelope.payload for envelope in await read_envelopes(tract, tract.subjects.brain_in)]
    asks = [f"Why did request {n} fail?" for n in (*range(len(goods)), 99)]
    assert sorted(payload.goal for payload in admitted if isinstance(payload, Admitted)) == sorted(asks)


@pytest.mark.bus
async def test_deep_nesting_in_an_unknown_field_is_dead_lettered_not_fatal(
    tract: Tract, bus_settings: BusSettings
) -> None:
    poison = splice(raw_map(digested_envelope()), ("x_extra",), nested_arrays(5_000))
    async with running_organ("absorption", bus_settings, build_absorption(bus_settings)):
        await publish_raw(tract, tract.subjects.absorption_in, poison, "deep unknown field")
        follower = digested_envelope(goal="Am I still served?")
        await tract.js.publish(tract.subjects.absorption_in, encode(follower), headers={"Nats-Msg-Id": follower.id})
        dlq = tract.subjects.dlq("absorption")
        assert await wait_for_count(tract, dlq, 1, timeout=8, stream=tract.subjects.dlq_stream) == 1
        assert await wait_for_count(tract, tract.subjects.border_in, 1, timeout=15) == 1
    [letter] = await read_subject(tract, dlq, stream=tract.subjects.dlq_stream)
    assert letter.data == poison and (letter.headers or {}).get("Ichor-Dlq-Reason")


@pytest.mark.bus
async def test_a_digest_too_large_for_a_message_is_dead_lettered_not_fatal(tmp_path: Path) -> None:
    async with small_tract(tmp_path / "small", max_payload=128 * 1024, instance="fault") as (small_settings, small):
        # 50 KB in: ten thousand one-word notes, each the user's words, so none joins another; even capped at
        # max_blocks, ~0.5 MB of digest out.
        oversized = fresh_paste("Ok.\n\n" * 10_000 + ASK)
        assert len(encode(oversized)) < 64 * 1024
        async with running_organ("stomach", small_settings, build_stomach(small_settings)):
            await publish_good(small, oversized)
            await publish_good(small, good_paste(1))
            dlq = small.subjects.dlq("stomach")
            assert await wait_for_count(small, dlq, 1, timeout=15, stream=small.subjects.dlq_stream) == 1
            assert await wait_for_count(small, small.subjects.absorption_in, 1, timeout=20) == 1
        [letter] = await read_subject(small, dlq, stream=small.subjects.dlq_stream)
        assert letter.data == encode(oversized)
        assert await subject_count(small, small.subjects.stomach_in) == 2
