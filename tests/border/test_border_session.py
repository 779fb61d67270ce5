"""No paste sent twice in one conversation: the session record and the compiled second turn, pure."""

from __future__ import annotations

import msgspec

from envelopes import codec
from envelopes.types import Admitted, Envelope, Session
from organs.border import BorderConfig, GuardState, border_decide, frame_segment_id
from organs.border.prompt import GOAL_SEGMENT_ID
from organs.border.session import SessionRecord, delivered_frames
from tests.support.envelopes import AT, served_frame, yield_envelope
from tests.support.prompts import admitted_payload, evidence_tokens

LOG = "\n".join(f"2026-03-01T10:00:{n % 60:02d}Z INFO request {n} served in {n % 17} ms" for n in range(60))


def decide(envelope: Envelope, delivered: dict[str, int] | None = None) -> Admitted:
    return admitted_payload(
        border_decide(envelope, BorderConfig(), GuardState(), instance="b", now=0.0, at=AT, delivered=delivered)
    )


def test_a_turn_never_counts_its_own_frames_as_delivered() -> None:
    record = SessionRecord().with_turn("t1", ("f1", "f2")).with_turn("t2", ("f3",))
    assert record.turn_number("t1") == 1 and record.turn_number("t3") == 3
    assert record.delivered_before("t1") == {}
    assert record.delivered_before("t2") == {"f1": 1, "f2": 1}
    assert record.delivered_before("t3") == {"f1": 1, "f2": 1, "f3": 2}
    # A redelivery or a deferred paste's follow-up is the same turn: its frames merge into it.
    merged = record.with_turn("t1", ("f2", "f4"))
    assert merged.turns[0].frames == ("f1", "f2", "f4") and len(merged.turns) == 2
    # A frame sent again later is pointed at where it was sent last.
    assert record.with_turn("t3", ("f1",)).delivered_before("t4")["f1"] == 3


def test_the_second_turn_of_the_same_paste_costs_a_few_percent_of_the_first() -> None:
    frame = served_frame(LOG)
    envelope = yield_envelope("Why is request 7 slow?", frames=(frame,))
    first = decide(envelope)
    carried = delivered_frames((frame,), first.prompt, {})
    assert carried == (frame.id,)
    record = SessionRecord().with_turn("turn-1", carried)
    second = decide(envelope, record.delivered_before("turn-2"))
    assert f"[frame {frame.id[:15]}… · already in this conversation, turn 1 · {frame.token_cost:,} tokens]" in (
        second.prompt.text
    )
    assert LOG not in second.prompt.text
    assert second.goal == first.goal and second.prompt.text.endswith("\n\nWhy is request 7 slow?")
    ratio = evidence_tokens(second) / evidence_tokens(first)
    print(f"second turn evidence {evidence_tokens(second)} / first {evidence_tokens(first)} tokens = {ratio:.3f}")
    assert ratio <= 0.05
    # The reference line carries nothing new, so the turn records no delivery of it.
    assert delivered_frames((frame,), second.prompt, record.delivered_before("turn-2")) == ()


def test_the_goal_is_never_replaced_even_when_it_repeats_a_frame() -> None:
    frame = served_frame(LOG + "\nERROR disk full")
    second = decide(yield_envelope("ERROR disk full", frames=(frame,)), {frame.id: 1})
    goal = next(entry for entry in second.prompt.inspection if entry.segment_id == GOAL_SEGMENT_ID)
    assert goal.byte_range is not None
    assert second.prompt.text.encode()[goal.byte_range[0] : goal.byte_range[1]] == b"ERROR disk full"
    reference = next(entry for entry in second.prompt.inspection if entry.segment_id == "paste/delivered/1")
    assert reference.disposition == "included" and reference.tokens < 40
    assert all(entry.segment_id != frame_segment_id(frame) for entry in second.prompt.inspection)


def test_the_session_travels_in_the_envelope() -> None:
    envelope = msgspec.structs.replace(yield_envelope(), session=Session(id="chat-42", resend=True))
    assert codec.decode(codec.encode(envelope)).session == Session(id="chat-42", resend=True)
