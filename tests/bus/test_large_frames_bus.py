"""A digest whose frames pass the server's max payload, against a real nats-server with small messages: the frames'
contents (and the frame-index records that hold them) go by reference to the frames object store, the paste ends
admitted with nothing dead-lettered, and every frame is served whole by ``frames.get`` or, past a reply, by the
reference it answers with."""

from __future__ import annotations

from pathlib import Path

import pytest

from envelopes.codec import decode_frame_record, encode
from envelopes.ids import digest_text, utc_now
from envelopes.types import Admitted, Digested, UserInput, Yield
from organs.absorption import build_absorption
from organs.border.decide import DEFAULT_BUDGET_BYTES, BorderConfig
from organs.border.segments import PromptBudget
from organs.border.worker import build_border
from organs.client import fetch_frame, hand_in_paste, store_blob, with_stored_texts
from organs.mcp.frames import BusFrames
from organs.runtime.stored_text import with_frame_text, with_frame_texts
from organs.secretion import paste_envelope
from organs.stomach.large import PasteLimits
from organs.stomach.worker import build_stomach
from tests.bus.helpers import dead_letter_count, read_envelopes, read_subject, subject_count, wait_for_count
from tests.bus.test_large_paste_bus import SMALL_MAX_PAYLOAD, secure_organs
from tests.conftest import running_organ
from tests.support.servers import small_tract

pytestmark = pytest.mark.bus

ASK = "Why do the workers time out on queue 7?"
# Every frame served whole: the budget the failing case had.
WHOLE_BUDGET = 10**7
# A prompt budget the whole log fits in (the default would serve it as a reference, honestly).
ROOMY_BORDER = BorderConfig(budget=PromptBudget(max_bytes=DEFAULT_BUDGET_BYTES, max_tokens=1_000_000))


def worker_paste(log_lines: int, table_rows: int) -> str:
    """A log of ``log_lines`` varied lines, a CSV table of ``table_rows`` rows, then the ask in a paragraph of its
    own: served whole, the log passes a 128 KiB message and the table is between its room for an envelope
    (64 KiB less) and a message."""
    levels = ("INFO", "INFO", "WARN", "INFO", "ERROR")
    log = [
        f"2026-12-01T09:{n // 60 % 60:02d}:{n % 60:02d}Z {levels[n % 5]} [worker-{n % 13}] queue {n % 11} "
        f"job {n * 7919 % 100_003} took {n * 37 % 4_001} ms (attempt {n % 4 + 1})"
        for n in range(log_lines)
    ]
    rows = [
        f"{n},worker-{n % 13},queue-{n % 11},{n * 37 % 4_001},{'ok' if n % 5 else 'timeout'}" for n in range(table_rows)
    ]
    return "\n".join(log) + "\n\nid,worker,queue,ms,status\n" + "\n".join(rows) + "\n\n" + ASK


@pytest.mark.parametrize(
    "limits",
    [PasteLimits(), PasteLimits(large_bytes=2_000, max_bytes=1_000_000)],
    ids=["digested_by_the_worker", "digested_apart"],
)
async def test_a_digest_whose_frames_pass_max_payload_is_admitted_with_its_frames_by_reference(
    tmp_path: Path, limits: PasteLimits
) -> None:
    text = worker_paste(2_200, 2_500)
    origin = UserInput(actor="ana", channel="test")
    async with (
        small_tract(tmp_path / "small", max_payload=SMALL_MAX_PAYLOAD, instance="frames") as (settings, tract),
        running_organ("stomach", settings, build_stomach(settings, limits=limits)),
        running_organ("absorption", settings, build_absorption(settings)),
        running_organ("border", settings, build_border(settings, ROOMY_BORDER)),
    ):
        paste, outcome = await hand_in_paste(tract, text, origin=origin, budget_tokens=WHOLE_BUDGET, timeout=120)
        expected = 2 if outcome.tier == "deferred" else 1
        assert await wait_for_count(tract, tract.subjects.brain_in, expected, timeout=120) == expected
        digests = await read_envelopes(tract, tract.subjects.absorption_in)
        yields = await read_envelopes(tract, tract.subjects.border_in)
        whole = await with_stored_texts(tract, outcome)
        letters, refused = await dead_letter_count(tract), await subject_count(tract, tract.subjects.border_rejected)
        digest_sizes = [len(msg.data) for msg in await read_subject(tract, tract.subjects.absorption_in)]
        last = digests[-1].payload
        assert isinstance(last, Digested)
        by_reference = [frame for frame in last.frames if frame.content_ref is not None]
        replies = [await fetch_frame(tract, frame.id) for frame in last.frames]
        index = await tract.js.key_value(tract.subjects.frame_index_bucket)
        keys = [frame.id.removeprefix("blake3:") for frame in by_reference]
        records = [decode_frame_record((await index.get(key)).value or b"") for key in keys]
        fetched = [await with_frame_text(tract, reply.frame) for reply in replies if reply.frame is not None]
        yielded_texts = (await with_frame_texts(tract, yields[-1].payload)).frames  # type: ignore[type-var]
        mcp = BusFrames(settings)
        try:
            through_mcp = [await mcp.frame(frame.id, full=False) for frame in last.frames]
            full_through_mcp = [await mcp.frame(frame.id, full=True) for frame in by_reference]
        finally:
            await mcp.close()
    print(
        f"\n[bus:frames_by_reference] large_bytes={limits.large_bytes} paste_bytes={len(text.encode())} "
        f"max_payload={SMALL_MAX_PAYLOAD} budget_tokens={WHOLE_BUDGET} outcome={outcome.kind}/{outcome.tier} "
        f"digest_message_bytes={digest_sizes} frames_by_reference="
        f"{[(frame.content_ref.size if frame.content_ref else 0) for frame in by_reference]} "
        f"dead_lettered={letters} rejected={refused}"
    )
    assert (letters, refused) == (0, 0)
    assert isinstance(outcome.payload, Admitted) and isinstance(whole.payload, Admitted)
    assert by_reference, "a frame served whole passes the max payload: it travels by reference"
    for frame in by_reference:
        assert frame.content == "" and frame.content_ref is not None
        assert frame.content_ref.digest == frame.content_digest and frame.token_cost > 0
    assert len(by_reference) == 2, "the log first, and still too large: the table too"
    # The largest texts go first: the short ask, with room for it once the frames are out, stays inline.
    assert last.goal == ASK and last.goal_ref is None
    # The yield carries the same references, its texts left out again.
    for sent in yields:
        assert isinstance(sent.payload, Yield)
        assert all(frame.content == "" for frame in sent.payload.frames if frame.content_ref is not None)
    # The frame-index record names the content it could not hold; the reply too, past a reply's room.
    for record in records:
        assert record.compact.content == "" and record.compact.content_ref is not None
    # A reply carries what fits a message (the table, fetched in by the stomach); past that, the reference.
    answered_by_reference = {reply.frame.id for reply in replies if reply.frame and not reply.frame.content}
    too_large = {frame.id for frame in by_reference if frame.content_ref and frame.content_ref.size > SMALL_MAX_PAYLOAD}
    assert answered_by_reference == too_large and len(too_large) == 1
    assert {record.compact.id for record in records} - answered_by_reference, "a stored record's frame served whole"
    for reply, resolved in zip(replies, fetched, strict=True):
        assert reply.frame is not None
        # Stated: a frame answered by its reference says where the text is (what `ichor frame` prints).
        by_its_reference = reply.frame.id in answered_by_reference
        assert (reply.error is not None and "object store" in reply.error) == by_its_reference
        assert resolved.content is not None and digest_text(resolved.content) == resolved.content_digest
    # The evidence reaches the prompt: the border fetched the texts it counted and checked.
    prompt = whole.payload.prompt.text
    for frame in yielded_texts:
        assert all(line in prompt for line in (frame.content or "").splitlines()), frame.kind
    for shown in through_mcp:
        assert shown.content and digest_text(shown.content) == shown.content_digest
    for shown in full_through_mcp:
        assert digest_text(shown.content or "") == shown.id
    assert whole.chain.origin == origin and whole.chain.input_digest == paste.chain.input_digest


async def test_a_frame_text_altered_in_the_store_is_refused_by_frames_get_and_dead_lettered_by_the_border(
    tmp_path: Path,
) -> None:
    text = worker_paste(2_200, 2_500)
    async with small_tract(tmp_path / "small", max_payload=SMALL_MAX_PAYLOAD, instance="altered") as (settings, tract):
        paste = paste_envelope(
            "",
            origin=UserInput(actor="ana"),
            text_ref=await store_blob(tract, text.encode()),
            input_digest=digest_text(text),
            budget_tokens=WHOLE_BUDGET,
            source="t",
            instance="t",
            now=utc_now(),
        )
        async with running_organ("stomach", settings, build_stomach(settings)):
            await tract.js.publish(tract.subjects.stomach_in, encode(paste), headers={"Nats-Msg-Id": paste.id})
            assert await wait_for_count(tract, tract.subjects.absorption_in, 1, timeout=60) == 1
            [digested] = await read_envelopes(tract, tract.subjects.absorption_in)
            assert isinstance(digested.payload, Digested)
            [table] = [frame for frame in digested.payload.frames if frame.kind == "table"]
            served = (await fetch_frame(tract, table.id)).frame
            assert served is not None and served.content_ref is not None and table.content_ref is not None
            # The objects the table's texts are kept under (the digest's rendering, the record's), other bytes now.
            store = await tract.js.object_store(tract.subjects.frames_bucket)
            for name in {table.content_ref.name, served.content_ref.name}:
                await store.put(name, b"id,status\n1,ok\n")
            refused = await fetch_frame(tract, table.id)
        async with (
            running_organ("absorption", settings, build_absorption(settings)),
            running_organ("border", settings, build_border(settings, ROOMY_BORDER)),
        ):
            dlq = tract.subjects.dlq("border")
            assert await wait_for_count(tract, dlq, 1, stream=tract.subjects.dlq_stream, timeout=60) == 1
            assert await wait_for_count(tract, tract.subjects.border_rejected, 1, timeout=60) == 1
        [letter] = await read_subject(tract, dlq, stream=tract.subjects.dlq_stream)
        admitted = await subject_count(tract, tract.subjects.brain_in)
    reason = (letter.headers or {})["Ichor-Dlq-Reason"]
    print(f"\n[bus:frame_text_altered] frames.get: {refused.error}\nborder dead letter: {reason}")
    assert refused.frame is None and refused.error is not None and "stored text" in refused.error
    assert table.content_ref.name in reason and f"not the {table.content_ref.size:,} bytes" in reason
    assert admitted == 0


@pytest.mark.slow
async def test_under_the_secure_default_frames_by_reference_pass_every_signature_and_permission(
    tmp_path: Path,
) -> None:
    text = worker_paste(2_200, 2_500)
    # The border's budget fits the evidence whole.
    async with secure_organs(tmp_path, {"ICHOR_BORDER_BUDGET_TOKENS": "1000000"}) as (admin, host):
        _, outcome = await hand_in_paste(
            host, text, origin=UserInput(actor="ana"), budget_tokens=WHOLE_BUDGET, timeout=120
        )
        letters = await dead_letter_count(admin)
        [digested] = await read_envelopes(admin, admin.subjects.absorption_in)
        # The tenant asks its own frames subject: the frames of its paste, the largest by reference, stated.
        replies = [await fetch_frame(host, frame.id) for frame in getattr(digested.payload, "frames", ())]
    assert isinstance(outcome.payload, Admitted), outcome.payload
    assert letters == 0
    assert isinstance(digested.payload, Digested)
    assert sum(frame.content_ref is not None for frame in digested.payload.frames) == 2
    assert [step.stage for step in outcome.chain.steps if step.signature] == ["digested", "yielded", "admitted"]
    assert all(reply.frame is not None for reply in replies)
    assert [reply.frame.content == "" for reply in replies if reply.frame] == [True, False]
