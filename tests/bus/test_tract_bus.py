"""The whole tract against a real nats-server: paste in, prompt out."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from envelopes.ids import digest_text
from envelopes.types import Admitted, Digested, UserInput
from organs.absorption import build_absorption
from organs.border.worker import build_border
from organs.client import fetch_frame, hand_in_paste
from organs.runtime.bus import BusSettings, Tract
from organs.stomach import ingest_paste
from organs.stomach.frames_store import FrameStore
from organs.stomach.worker import build_stomach
from tests.bus.helpers import read_envelopes, read_subject, wait_for_count
from tests.conftest import running_organ
from tests.support.envelopes import AT
from tests.support.servers import small_tract

pytestmark = pytest.mark.bus

EXAMPLE = (Path(__file__).resolve().parents[2] / "examples" / "paste.txt").read_text()
ASK = (
    "Why does checkout time out against payments when payments itself reports no errors, "
    "and what should I change first?"
)


async def test_a_paste_becomes_an_admitted_prompt(tract: Tract, bus_settings: BusSettings) -> None:
    origin = UserInput(actor="ana", channel="test")
    async with (
        running_organ("stomach", bus_settings, build_stomach(bus_settings)),
        running_organ("absorption", bus_settings, build_absorption(bus_settings)),
        running_organ("border", bus_settings, build_border(bus_settings)),
    ):
        paste, outcome = await hand_in_paste(tract, EXAMPLE, origin=origin, timeout=60)
    assert isinstance(outcome.payload, Admitted), outcome.payload
    admitted = outcome.payload
    assert outcome.chain.origin == origin == admitted.meta.original_provenance
    assert outcome.chain.input_digest == paste.chain.input_digest == digest_text(EXAMPLE)
    assert [step.stage for step in outcome.chain.steps] == [
        "ingested",
        "classified",
        "digested",
        "yielded",
        "screened",
        "admitted",
    ]
    assert outcome.tier == admitted.meta.digestion_tier == "full"
    assert admitted.goal == ASK
    prompt = admitted.prompt
    assert ASK in prompt.text
    rendered = prompt.text.encode()
    covered = sorted(entry.byte_range for entry in prompt.inspection if entry.byte_range is not None)
    cursor = 0
    for start, end in covered:
        assert rendered[cursor:start] in (b"", b"\n\n"), "only separators lie between segments"
        cursor = end
    assert cursor == len(rendered) == prompt.bytes
    assert outcome.trace_id == paste.trace_id


async def test_the_stomach_stores_every_frame_losslessly(tract: Tract, bus_settings: BusSettings) -> None:
    async with running_organ("stomach", bus_settings, build_stomach(bus_settings)):
        paste, _ = await asyncio.gather(
            _publish_paste(tract, EXAMPLE), wait_for_count(tract, tract.subjects.absorption_in, 1)
        )
        [digested] = await read_envelopes(tract, tract.subjects.absorption_in)
        assert isinstance(digested.payload, Digested)
        assert digested.chain.origin == paste.chain.origin
        assert [step.stage for step in digested.chain.steps] == ["ingested", "classified", "digested"]
        assert digested.payload.frames, "the example carries evidence"
        for frame in digested.payload.frames:
            full = await fetch_frame(tract, frame.id, "full")
            assert full.frame is not None and full.frame.content is not None
            assert digest_text(full.frame.content) == frame.id
            assert EXAMPLE[frame.span[0] : frame.span[1]] == full.frame.content
            compact = await fetch_frame(tract, frame.id, "compact")
            assert compact.frame is not None and compact.frame.id == frame.id
        missing = await fetch_frame(tract, "blake3:" + "0" * 64, "full")
        assert missing.frame is None and missing.error and "no frame" in missing.error
        malformed = await fetch_frame(tract, "not-a-frame", "full")
        assert malformed.error and "blake3" in malformed.error
    # A paste that fits one message is kept in the index bucket; a stomach with a cold cache reads it back.
    source = digested.payload.source_ref
    assert await FrameStore(tract).get_paste(source) == EXAMPLE
    index = await tract.js.key_value(tract.subjects.frame_index_bucket)
    assert (await index.get("paste." + source.removeprefix("blake3:"))).value == EXAMPLE.encode()


async def _publish_paste(tract: Tract, text: str):  # type: ignore[no-untyped-def]
    from envelopes.codec import encode
    from organs.secretion import paste_envelope

    paste = paste_envelope(text, origin=UserInput(actor="ana"), source="test-host", instance="t", now=AT)
    await tract.js.publish(tract.subjects.stomach_in, encode(paste), headers={"Nats-Msg-Id": paste.id})
    return paste


async def test_a_paste_larger_than_a_message_travels_by_reference(tmp_path: Path) -> None:
    async with small_tract(tmp_path / "small", max_payload=256 * 1024, instance="big") as (settings, tract):
        lines = [
            f"2026-11-29T08:{m % 60:02d}:{m % 60:02d}Z INFO worker {m} finished job {m * 7}" for m in range(12_000)
        ]
        text = "\n".join(lines) + "\n\nWhy is the worker so slow?"
        assert len(text) > 256 * 1024
        async with (
            running_organ("stomach", settings, build_stomach(settings)),
            running_organ("absorption", settings, build_absorption(settings)),
            running_organ("border", settings, build_border(settings)),
        ):
            paste, outcome = await hand_in_paste(tract, text, origin=UserInput(actor="ana"), timeout=60)
            # Content addresses are the same locally: the log frame is larger than one message.
            [log_frame] = [frame for frame in ingest_paste(text).provider.frames if frame.kind == "log"]
            too_big = await fetch_frame(tract, log_frame.id, "full")
            assert too_big.frame is None and too_big.error is not None
            assert "object store" in too_big.error and paste.payload.text_ref.removeprefix("blake3:") in too_big.error  # type: ignore[union-attr]
            compact = await fetch_frame(tract, log_frame.id, "compact")
            assert compact.frame is not None and compact.frame.representation == "compact"
        assert paste.payload.text_ref == digest_text(text)  # type: ignore[union-attr]
        assert isinstance(outcome.payload, Admitted)
        assert outcome.payload.goal == "Why is the worker so slow?"


async def test_a_deferred_paste_is_digested_in_full_later(tract: Tract, bus_settings: BusSettings) -> None:
    async with (
        running_organ("stomach", bus_settings, build_stomach(bus_settings)),
        running_organ("absorption", bus_settings, build_absorption(bus_settings)),
        running_organ("border", bus_settings, build_border(bus_settings)),
    ):
        paste, outcome = await hand_in_paste(tract, EXAMPLE, origin=UserInput(actor="ana"), budget_tokens=0, timeout=60)
        assert outcome.tier == "deferred"
        assert await wait_for_count(tract, tract.subjects.brain_in, 2) == 2
        # The follow-up indexed the frames again, now with their compact renderings.
        for frame in ingest_paste(EXAMPLE).provider.frames:
            compact = await fetch_frame(tract, frame.id, "compact")
            assert compact.frame is not None and compact.frame.content is not None
    admitted = await read_envelopes(tract, tract.subjects.brain_in)
    [follow_up] = [env for env in admitted if env.payload.follow_up_of is not None]  # type: ignore[union-attr]
    assert follow_up.tier == "full"
    assert follow_up.chain.origin == paste.chain.origin
    assert follow_up.payload.follow_up_of == outcome.chain.steps[2].envelope_id  # type: ignore[union-attr]
    assert follow_up.payload.goal == ASK  # type: ignore[union-attr]


async def test_a_paste_naming_another_encoding_is_dead_lettered(tract: Tract, bus_settings: BusSettings) -> None:
    from envelopes.codec import encode
    from organs.secretion import paste_envelope

    paste = paste_envelope(
        "What is this?", origin=UserInput(actor="ana"), source="t", instance="t", encoding="gpt2", now=AT
    )
    async with running_organ("stomach", bus_settings, build_stomach(bus_settings)):
        await tract.js.publish(tract.subjects.stomach_in, encode(paste), headers={"Nats-Msg-Id": paste.id})
        dlq = tract.subjects.dlq("stomach")
        assert await wait_for_count(tract, dlq, 1, stream=tract.subjects.dlq_stream) == 1
    [letter] = await read_subject(tract, dlq, stream=tract.subjects.dlq_stream)
    assert letter.data == encode(paste)
    assert "encoding 'gpt2' is not accepted" in (letter.headers or {})["Ichor-Dlq-Reason"]
