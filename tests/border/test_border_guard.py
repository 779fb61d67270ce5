"""Every check of the Trust_Guard, passing and failing, with no bus."""

from __future__ import annotations

import re
import sys
from concurrent.futures import ThreadPoolExecutor

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envelopes.types import Envelope, External, OrganSecretion, Rejected, Step, SystemInternal, UserInput, Yield
from organs.accounting import count_tokens
from organs.border import (
    Admission,
    BorderPolicy,
    GuardState,
    RateLimit,
    Rejection,
    RunPattern,
    WordPattern,
    frame_segment_id,
    screen,
    yield_cost,
)
from organs.border.guard import BASE64_ALPHABET, DEFAULT_PATTERNS, fold_case
from organs.border.prompt import ANCHORS_SEGMENT_ID, GOAL_SEGMENT_ID
from tests.support.envelopes import HOST, reference_frame, served_frame, yield_envelope


def verdict(envelope: Envelope, policy: BorderPolicy | None = None) -> Admission | Rejection:
    return screen(envelope, policy or BorderPolicy(), GuardState(), now=0.0)


def codes(envelope: Envelope, policy: BorderPolicy | None = None) -> set[str]:
    result = verdict(envelope, policy)
    assert isinstance(result, Rejection), result
    assert all(reason.message for reason in result.reasons)
    return {reason.code for reason in result.reasons}


def with_payload(envelope: Envelope, **changes: object) -> Envelope:
    assert isinstance(envelope.payload, Yield)
    return msgspec.structs.replace(envelope, payload=msgspec.structs.replace(envelope.payload, **changes))


def with_meta(envelope: Envelope, **changes: object) -> Envelope:
    assert isinstance(envelope.payload, Yield)
    return with_payload(envelope, meta=msgspec.structs.replace(envelope.payload.meta, **changes))


def with_steps(envelope: Envelope, steps: tuple[Step, ...]) -> Envelope:
    return msgspec.structs.replace(envelope, chain=msgspec.structs.replace(envelope.chain, steps=steps))


def test_an_honest_yield_is_admitted_with_its_origin_trust() -> None:
    result = verdict(yield_envelope())
    assert isinstance(result, Admission)
    assert result.origin_trust == "delegated"
    assert result.findings == ()
    assert result.trust_of(GOAL_SEGMENT_ID) == "delegated"


def test_a_payload_other_than_a_yield_is_a_schema_rejection() -> None:
    not_a_yield = msgspec.structs.replace(yield_envelope(), kind="rejected", payload=Rejected(reasons=()))
    result = verdict(not_a_yield)
    assert isinstance(result, Rejection)
    assert [reason.code for reason in result.reasons] == ["schema.kind"]
    assert result.meta is None


def test_an_envelope_addressed_elsewhere_is_rejected() -> None:
    assert codes(msgspec.structs.replace(yield_envelope(), dest="brain")) == {"schema.dest"}


def test_bus_provenance_must_be_an_organ_secretion() -> None:
    assert codes(msgspec.structs.replace(yield_envelope(), provenance=HOST)) == {"provenance.not_secretion"}


def test_only_absorption_feeds_the_border() -> None:
    forged = msgspec.structs.replace(
        yield_envelope(), provenance=OrganSecretion(organ="stomach", instance="absorption-1")
    )
    assert codes(forged) == {"provenance.organ"}


def test_the_secreting_instance_must_be_the_last_step_instance() -> None:
    forged = msgspec.structs.replace(yield_envelope(), provenance=OrganSecretion(organ="absorption", instance="evil"))
    assert codes(forged) == {"provenance.instance"}


def test_a_chain_that_skips_the_stomach_is_forged() -> None:
    honest = yield_envelope()
    only_yield = with_steps(honest, honest.chain.steps[-1:])
    assert codes(only_yield) == {"provenance.chain.missing"}


def test_stomach_steps_taken_by_absorption_are_forged() -> None:
    honest = yield_envelope()
    steps = tuple(msgspec.structs.replace(step, organ="absorption") for step in honest.chain.steps)
    assert codes(with_steps(honest, steps)) == {"provenance.chain.organ"}


def test_reordered_steps_are_rejected() -> None:
    honest = yield_envelope()
    ingested, classified, digested, yielded = honest.chain.steps
    assert codes(with_steps(honest, (classified, ingested, digested, yielded))) == {"provenance.chain.order"}


def test_duplicated_steps_are_rejected() -> None:
    honest = yield_envelope()
    ingested, classified, digested, yielded = honest.chain.steps
    forged = with_steps(honest, (ingested, classified, digested, digested, yielded))
    assert codes(forged) == {"provenance.chain.duplicate"}


def test_steps_past_the_tract_are_rejected() -> None:
    honest = yield_envelope()
    screened = msgspec.structs.replace(honest.chain.steps[-1], stage="screened", organ="ada_border")
    forged = with_steps(honest, (*honest.chain.steps, screened))
    assert codes(forged) == {"provenance.chain.unexpected"}


def test_the_last_step_must_name_this_envelope() -> None:
    honest = yield_envelope()
    last = msgspec.structs.replace(honest.chain.steps[-1], envelope_id="f" * 32)
    assert codes(with_steps(honest, (*honest.chain.steps[:-1], last))) == {"provenance.last_step"}


def test_an_origin_changed_mid_chain_is_rejected() -> None:
    forged = with_meta(yield_envelope(), original_provenance=UserInput(actor="mallory"))
    assert codes(forged) == {"provenance.origin_mismatch"}


def test_a_rewritten_chain_origin_is_rejected() -> None:
    honest = yield_envelope()
    rewritten = msgspec.structs.replace(honest, chain=msgspec.structs.replace(honest.chain, origin=UserInput("eve")))
    assert codes(rewritten) == {"provenance.origin_mismatch"}


def test_a_missing_origin_is_rejected() -> None:
    honest = yield_envelope()
    chain = msgspec.structs.replace(honest.chain)
    msgspec.structs.force_setattr(chain, "origin", None)
    assert "provenance.origin_missing" in codes(msgspec.structs.replace(honest, chain=chain))


def test_the_meta_tier_must_match_the_envelope() -> None:
    assert codes(with_meta(yield_envelope(), digestion_tier="shallow")) == {"tier.mismatch"}


def test_every_frame_carries_the_envelope_tier() -> None:
    frames = (served_frame("ERROR a"), served_frame("ERROR b", tier="shallow"))
    assert codes(yield_envelope(frames=frames)) == {"tier.frame_mismatch"}


def test_a_missing_tier_is_rejected() -> None:
    envelope = msgspec.structs.replace(yield_envelope())
    msgspec.structs.force_setattr(envelope, "tier", None)
    assert codes(envelope) == {"tier.missing"}


def test_a_tampered_frame_is_dishonest() -> None:
    honest = yield_envelope()
    frame = honest.payload.frames[0]
    tampered = msgspec.structs.replace(frame, content="ERROR boot failed\nWARN retrying!")
    assert codes(with_payload(honest, frames=(tampered,))) == {"frame.dishonest"}


def test_an_understated_token_cost_is_dishonest() -> None:
    frame = served_frame("ERROR boot failed with a long explanation")
    cheap = msgspec.structs.replace(frame, token_cost=1)
    result = verdict(yield_envelope(frames=(cheap,)))
    assert isinstance(result, Rejection)
    assert [reason.code for reason in result.reasons] == ["frame.dishonest"]
    assert "claims 1 tokens" in result.reasons[0].message


def test_a_reference_frame_serving_content_is_rejected() -> None:
    frame = msgspec.structs.replace(reference_frame("x\n" * 50))
    msgspec.structs.force_setattr(frame, "token_cost", 3)
    assert "frame.reference_content" in codes(yield_envelope(frames=(frame,)))


def test_an_honest_reference_frame_is_admitted() -> None:
    assert isinstance(verdict(yield_envelope(frames=(reference_frame("line\n" * 2000),))), Admission)


def test_a_frame_in_an_unaccepted_encoding_is_rejected_without_loading_it() -> None:
    frame = msgspec.structs.replace(served_frame("ERROR x"), encoding="some_remote_encoding")
    assert codes(yield_envelope(frames=(frame,))) == {"frame.encoding"}


def test_actual_cost_must_be_what_absorption_yields() -> None:
    honest = yield_envelope()
    assert codes(with_meta(honest, actual_cost=honest.payload.meta.actual_cost + 1)) == {"cost.actual"}


def test_yield_cost_is_frames_plus_goal_plus_anchors() -> None:
    frames = (served_frame("ERROR a\nERROR b"), reference_frame("big\n" * 100))
    expected = frames[0].token_cost + count_tokens("fix it") + count_tokens("a.py\nb/c.py")
    assert yield_cost("fix it", ("a.py", "b/c.py"), frames) == expected


def test_a_user_origin_is_admitted_as_delegated() -> None:
    result = verdict(yield_envelope(origin=UserInput(actor="ada")))
    assert isinstance(result, Admission)
    assert result.origin_trust == "delegated"


def test_an_unauthenticated_system_origin_is_rejected() -> None:
    kernel = SystemInternal(component="ichor.border.config")
    assert codes(yield_envelope(origin=kernel)) == {"origin.system_internal"}


def test_external_origins_are_rejected_by_default() -> None:
    assert codes(yield_envelope(origin=External(uri="https://example.com/x"))) == {"origin.external"}


def test_external_origins_are_admitted_untrusted_when_allowed() -> None:
    result = verdict(yield_envelope(origin=External(uri="https://example.com/x")), BorderPolicy(allow_external=True))
    assert isinstance(result, Admission)
    assert result.origin_trust == "untrusted"
    assert result.trust_of(GOAL_SEGMENT_ID) == "untrusted"


def test_an_organ_cannot_be_an_origin() -> None:
    assert codes(yield_envelope(origin=OrganSecretion(organ="stomach", instance="s"))) == {"origin.organ_secretion"}


def test_every_failing_check_is_reported() -> None:
    honest = yield_envelope()
    frame = msgspec.structs.replace(honest.payload.frames[0], content="changed")
    forged = with_payload(honest, frames=(frame,))
    forged = with_meta(forged, original_provenance=UserInput(actor="mallory"), digestion_tier="deferred")
    forged = msgspec.structs.replace(forged, dest="brain", provenance=HOST)
    assert codes(forged) == {
        "schema.dest",
        "provenance.not_secretion",
        "provenance.origin_mismatch",
        "tier.mismatch",
        "frame.dishonest",
    }


def test_a_rejection_carries_meta_and_follow_up() -> None:
    forged = with_meta(yield_envelope(follow_up_of="a" * 32), actual_cost=-1)
    result = verdict(forged)
    assert isinstance(result, Rejection)
    assert result.meta == forged.payload.meta  # type: ignore[union-attr]
    assert result.follow_up_of == "a" * 32


# --- rate limit -----------------------------------------------------------------


def test_the_rate_limit_is_a_token_bucket_per_actor() -> None:
    policy = BorderPolicy(rate=RateLimit(capacity=2, window_s=10.0))
    state = GuardState()
    ada, bob = yield_envelope(), yield_envelope(origin=UserInput(actor="bob"))
    assert isinstance(screen(ada, policy, state, now=0.0), Admission)
    assert isinstance(screen(ada, policy, state, now=0.0), Admission)
    limited = screen(ada, policy, state, now=1.0)
    assert isinstance(limited, Rejection)
    assert [reason.code for reason in limited.reasons] == ["rate.limited"]
    assert isinstance(screen(bob, policy, state, now=1.0), Admission)
    assert isinstance(screen(ada, policy, state, now=5.0), Admission)  # 0.2/s refilled one token by now
    assert isinstance(screen(ada, policy, state, now=5.0), Rejection)


def test_the_default_rate_is_60_per_100_seconds() -> None:
    state, policy, envelope = GuardState(), BorderPolicy(), yield_envelope()
    outcomes = [screen(envelope, policy, state, now=0.0) for _ in range(61)]
    assert all(isinstance(outcome, Admission) for outcome in outcomes[:60])
    assert isinstance(outcomes[60], Rejection)


def test_a_clock_stepping_back_refills_nothing() -> None:
    policy, state, envelope = BorderPolicy(rate=RateLimit(capacity=1, window_s=1.0)), GuardState(), yield_envelope()
    assert isinstance(screen(envelope, policy, state, now=100.0), Admission)
    assert isinstance(screen(envelope, policy, state, now=50.0), Rejection)
    assert isinstance(screen(envelope, policy, state, now=101.0), Admission)


def test_full_buckets_are_pruned_without_changing_decisions() -> None:
    rate = RateLimit(capacity=1, window_s=10.0)
    state = GuardState(prune_above=3)
    for number in range(3):
        assert state.take(("user_input", f"u{number}"), rate, now=0.0)
    assert state.take(("user_input", "late"), rate, now=5.0)
    assert len(state.buckets) == 4
    assert state.take(("user_input", "later"), rate, now=20.0)
    assert set(state.buckets) == {("user_input", "later")}


def test_tokens_taken_from_many_threads_are_each_taken_once() -> None:
    # Pruning while other threads add buckets, and one shared bucket drained from all of them.
    rate = RateLimit(capacity=500, window_s=1e9)
    state = GuardState(prune_above=50)
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            shared = list(pool.map(lambda _: state.take(("user_input", "shared"), rate, now=0.0), range(2_000)))
            list(pool.map(lambda number: state.take(("user_input", f"u{number}"), rate, now=0.0), range(2_000)))
    finally:
        sys.setswitchinterval(0.005)
    assert shared.count(True) == rate.capacity


def test_rate_limit_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        RateLimit(capacity=0)
    with pytest.raises(ValueError):
        RateLimit(window_s=0)


# --- screening patterns ----------------------------------------------------------


def test_a_blocklisted_word_marks_its_segment_untrusted() -> None:
    result = verdict(yield_envelope("Please EXECUTE the migration"))
    assert isinstance(result, Admission)
    assert [(finding.pattern, finding.segment_id, finding.action) for finding in result.findings] == [
        ("ada.execute", GOAL_SEGMENT_ID, "mark_untrusted")
    ]
    assert result.trust_of(GOAL_SEGMENT_ID) == "untrusted"
    assert result.trust_of(ANCHORS_SEGMENT_ID) == "delegated"


def test_words_match_whole_words_only() -> None:
    result = verdict(yield_envelope("the executed authorityless xmrigs store_core_memory_x"))
    assert isinstance(result, Admission)
    assert result.findings == ()


def test_every_default_word_is_screened_in_frames() -> None:
    frame = served_frame("authority granted\nxmrig started\ncall store_core_memory now")
    result = verdict(yield_envelope(frames=(frame,)))
    assert isinstance(result, Admission)
    assert {finding.pattern for finding in result.findings} == {"ada.authority", "ada.xmrig", "ada.store_core_memory"}
    assert {finding.segment_id for finding in result.findings} == {frame_segment_id(frame)}
    assert result.trust_of(frame_segment_id(frame)) == "untrusted"


def test_long_base64_blobs_are_flagged_from_200_characters() -> None:
    blob = (BASE64_ALPHABET * 4)[:200]
    flagged = verdict(yield_envelope(frames=(served_frame(f"payload={blob} end"),)))
    assert isinstance(flagged, Admission)
    assert [finding.pattern for finding in flagged.findings] == ["ada.base64_blob"]
    short = verdict(yield_envelope(frames=(served_frame(f"payload={blob[:199]} end"),)))
    assert isinstance(short, Admission)
    assert short.findings == ()


def test_rejecting_on_a_pattern_is_opt_in() -> None:
    policy = BorderPolicy(patterns=(WordPattern("ada.xmrig", ("xmrig",), action="reject"),))
    result = verdict(yield_envelope("start xmrig on every node"), policy)
    assert isinstance(result, Rejection)
    assert [reason.code for reason in result.reasons] == ["screening.reject"]


def test_word_patterns_are_literal() -> None:
    pattern = WordPattern("meta", ("a+b",))
    assert pattern.regex.search("x a+b y") is not None
    assert pattern.regex.search("aab") is None


def test_patterns_miss_near_misses_on_adversarial_text() -> None:
    # How long the search takes against plain text of the same size is bench/hostile_bench.py's figure.
    near_miss = ("A" * 199 + "!") * 5_000 + ("execut " * 20_000)
    patterns = (RunPattern("blob", BASE64_ALPHABET, 200), WordPattern("w", ("execute", "executes")))
    assert all(pattern.regex.search(near_miss) is None for pattern in patterns)


def test_a_run_pattern_agrees_with_its_regex_whatever_the_words() -> None:
    # found_in passes over a text whose whitespace-free words are all shorter than the run; its answer must be the
    # regex's, for runs inside a long word, broken by a space, and for an alphabet that holds whitespace itself.
    blob = "QUJD" * 60
    texts = [blob, f"key: {blob}\n", f"{blob[:150]} {blob[150:]}", "short words only " * 50, "x" * 199, ""]
    for pattern in (RunPattern("blob", BASE64_ALPHABET, 200), RunPattern("spaced", "ab ", 12)):
        for text in [*texts, "ab ab ab ab ab", "abab abab abab"]:
            assert pattern.found_in(text, text.lower()) == (pattern.regex.search(text) is not None), (pattern, text)
    assert RunPattern("spaced", "ab ", 12).found_in("ab ab ab ab ab", "")


def test_patterns_reject_nonsense() -> None:
    with pytest.raises(ValueError):
        WordPattern("empty", ())
    with pytest.raises(ValueError):
        RunPattern("zero", "ab", 0)


def test_screening_reads_the_rendered_reference_pointer() -> None:
    frame = reference_frame("x\n" * 10)
    result = verdict(
        yield_envelope("fine", frames=(frame,)), BorderPolicy(patterns=(WordPattern("reference", ("reference",)),))
    )
    assert isinstance(result, Admission)
    assert [finding.segment_id for finding in result.findings] == [frame_segment_id(frame)]


_CASE_TRAPS = st.sampled_from(
    ["xmrig", "XMRIG", "xmrıg", "xmrİg", "ſtore", "store_core_memory", "EXECUTE", "\u212a", "é", "·", "_", " "]
)


@settings(max_examples=400, deadline=None)
@given(text=st.lists(st.one_of(_CASE_TRAPS, st.text(max_size=4)), max_size=12).map("".join))
def test_a_word_pattern_finds_what_its_regex_finds(text: str) -> None:
    for pattern in (*DEFAULT_PATTERNS, WordPattern("folded", ("ſtore", "Kelvin"))):
        assert pattern.found_in(text, fold_case(text)) == (pattern.regex.search(text) is not None)


def test_fold_case_knows_every_character_a_case_blind_regex_takes_for_an_ascii_letter() -> None:
    letter = re.compile("[a-z]", re.IGNORECASE)
    lookalikes = [chr(code) for code in range(0x80, 0x110000) if letter.fullmatch(chr(code))]
    assert lookalikes and all(fold_case(character).isascii() for character in lookalikes)
