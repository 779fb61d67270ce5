"""Absorption's and the border's cores on hostile digests: a yield, a verdict and a decision, never a crash.

Huge goals, ten thousand frames or anchors, NULs and odd Unicode, dishonest
costs and digests, foreign encodings: absorption packages each, the guard
screens it, the compiler compiles or refuses with a ``CompileError``, and
``border_decide`` admits or rejects with reasons; what may never cross is
rejected. The timings are ``bench/hostile_bench.py``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from envelopes.codec import decode, encode
from envelopes.ids import digest_text
from envelopes.types import Admitted, Envelope, Frame, Rejected, Yield
from organs.absorption.core import yield_context
from organs.border import BorderConfig, CompileError, GuardState, border_decide, compile, screen
from organs.border.guard import Admission, Rejection
from organs.border.prompt import builtin_modules, paste_modules
from tests.support.envelopes import AT, deferred_notice_envelope, digested_envelope, note_frame
from tests.support.hostile import valid_envelopes

ASK = "Why is this slow?"
VALID = valid_envelopes()


def digested_with(goal: str, frames: tuple[Frame, ...], *, anchors: tuple[str, ...] = ()) -> Envelope:
    """A digested envelope carrying exactly ``frames``, built the way the stomach secretes one."""
    return digested_envelope(goal, frames=frames, anchors=anchors)


def many_frames(count: int) -> tuple[Frame, ...]:
    frames, start = [], 0
    for n in range(count):
        frames.append(note_frame(f"evidence {n}", start=start))
        start += len(f"evidence {n}") + 2
    return tuple(frames)


def dishonest(frame: Frame, **changes: Any) -> Frame:
    return msgspec.structs.replace(frame, **changes)


HOSTILE_DIGESTS: dict[str, Callable[[], Envelope]] = {
    "huge goal (2 MB)": lambda: digested_with("why? " * 400_000, (note_frame("a"),)),
    "base64 and trigger words (900 KB)": lambda: digested_with("Ab+/" * 200_000 + " execute" * 5_000, ()),
    "10,000 frames": lambda: digested_with(ASK, many_frames(10_000)),
    "NUL goal": lambda: digested_with("why\x00?", (note_frame("ok"),)),
    "NUL frame": lambda: digested_with(ASK, (note_frame("a\x00b"), note_frame("\x00"))),
    "empty goal, no frames, no anchors": lambda: digested_with("", ()),
    "odd unicode": lambda: digested_with("\u202ewhy\u2028?\ufeff", (note_frame("e\u0301\U0001f4a5\u2029"),)),
    "10,000 anchors": lambda: digested_with(ASK, (), anchors=tuple(f"./src/{n}.py" for n in range(10_000))),
    "dishonest cost": lambda: digested_with(ASK, (dishonest(note_frame("abc"), token_cost=0),)),
    "dishonest digest": lambda: digested_with(
        ASK, (dishonest(note_frame("abc"), content_digest=digest_text("something else")),)
    ),
    "foreign encoding": lambda: digested_with(ASK, (dishonest(note_frame("abc"), encoding="o200k_base"),)),
    "frame tier differs": lambda: digested_with(ASK, (note_frame("abc", tier="shallow"),)),
}
# What the border must conclude: these may never be admitted.
MUST_REJECT = {
    "huge goal (2 MB)",
    "base64 and trigger words (900 KB)",
    "NUL goal",
    "NUL frame",
    "dishonest cost",
    "dishonest digest",
    "foreign encoding",
    "frame tier differs",
}


@pytest.mark.parametrize("case", list(HOSTILE_DIGESTS))
def test_absorption_and_border_cores_answer_hostile_digests(case: str) -> None:
    digested = HOSTILE_DIGESTS[case]()
    yielded = yield_context(digested, "absorption-fault", now=AT)
    assert isinstance(yielded.payload, Yield) and yielded.tier == digested.tier
    assert decode(encode(yielded)) == yielded, "absorption emitted an envelope the next hop cannot decode"

    config = BorderConfig()
    verdict = screen(yielded, config.policy, GuardState(), now=0.0)
    assert isinstance(verdict, Admission | Rejection)
    if isinstance(verdict, Admission):
        # The compiler's contract is to refuse with a CompileError (border_decide turns it into a
        # rejection); any other exception is a fault.
        try:
            modules = (
                *builtin_modules(config.builtins),
                *paste_modules(verdict.payload, digested.chain.origin, verdict.trust_of),
            )
            compiled = compile(modules, config.budget)
        except CompileError:
            pass
        else:
            assert config.budget.max_tokens is None or compiled.tokens <= config.budget.max_tokens

    decided = border_decide(yielded, config, GuardState(), instance="border-fault", now=0.0, at=AT)
    assert isinstance(decided.payload, Admitted | Rejected)
    assert decode(encode(decided)) == decided
    if case in MUST_REJECT:
        assert isinstance(decided.payload, Rejected), f"{case} was admitted"
        assert decided.payload.reasons and all(reason.code for reason in decided.payload.reasons)
    else:
        assert isinstance(decided.payload, Admitted), decided.payload
        assert decided.payload.goal == digested.payload.goal  # type: ignore[union-attr]


@pytest.mark.parametrize("envelope", [*VALID, deferred_notice_envelope()], ids=lambda envelope: envelope.kind)
def test_the_border_rejects_every_kind_but_a_yield_without_raising(envelope: Envelope) -> None:
    decided = border_decide(envelope, BorderConfig(), GuardState(), instance="border-fault", now=0.0, at=AT)
    if envelope.kind == "yield":
        # The valid yield is honest: the border admits it (a rejection here would be the bug).
        assert isinstance(decided.payload, Admitted), decided.payload
    else:
        assert isinstance(decided.payload, Rejected)
        assert "schema.kind" in {reason.code for reason in decided.payload.reasons}
