"""Builders of honest envelopes along the tract, for the border's unit tests.

Each builder walks the real path: a paste from the host, the stomach's three
steps, absorption's yield, so the chain is exactly what the border expects.
Tests then break one thing at a time with ``msgspec.structs.replace``.
"""

from __future__ import annotations

from envelopes.ids import digest_text
from envelopes.types import (
    SCHEMA_VERSION,
    AnyProvenance,
    DegradationTier,
    Digested,
    Envelope,
    Frame,
    FrameKind,
    Paste,
    ProvenanceChain,
    UserInput,
    Yield,
    YieldMeta,
)
from organs.accounting import DEFAULT_ENCODING, count_tokens
from organs.border import yield_cost
from organs.secretion import secrete

AT = "2025-01-02T03:04:05.000Z"
PASTE_ID = "0123456789abcdef0123456789abcdef"
TRACE = "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"
HOST = UserInput(actor="ada", channel="cli")


def served_frame(
    content: str,
    *,
    kind: FrameKind = "log",
    tier: DegradationTier = "full",
    full: str | None = None,
) -> Frame:
    full_text = content if full is None else full
    return Frame(
        id=digest_text(full_text),
        kind=kind,
        representation="compact" if full is not None else "full",
        content=content,
        content_digest=digest_text(content),
        token_cost=count_tokens(content),
        full_bytes=len(full_text.encode()),
        full_tokens=count_tokens(full_text),
        encoding=DEFAULT_ENCODING,
        span=(0, len(full_text)),
        lines=full_text.count("\n") + 1,
        title=full_text.splitlines()[0] if full_text else "",
        tier=tier,
    )


def reference_frame(full: str, *, kind: FrameKind = "log", tier: DegradationTier = "full") -> Frame:
    return Frame(
        id=digest_text(full),
        kind=kind,
        representation="reference",
        content=None,
        content_digest=None,
        token_cost=0,
        full_bytes=len(full.encode()),
        full_tokens=count_tokens(full),
        encoding=DEFAULT_ENCODING,
        span=(0, len(full)),
        lines=full.count("\n") + 1,
        title="",
        tier=tier,
    )


def paste_envelope(text: str = "paste", origin: AnyProvenance = HOST) -> Envelope:
    return Envelope(
        v=SCHEMA_VERSION,
        id=PASTE_ID,
        kind="paste",
        source="host",
        dest="stomach",
        provenance=origin,
        chain=ProvenanceChain(origin=origin, input_digest=digest_text(text)),
        tier=None,
        trace=TRACE,
        created_at=AT,
        payload=Paste(text=text),
    )


def yield_envelope(
    goal: str = "Why does the service crash on start?",
    *,
    anchors: tuple[str, ...] = ("src/app/main.py",),
    frames: tuple[Frame, ...] | None = None,
    origin: AnyProvenance = HOST,
    tier: DegradationTier = "full",
    follow_up_of: str | None = None,
) -> Envelope:
    """An honest yield envelope as absorption would emit it."""
    if frames is None:
        frames = (served_frame("ERROR boot failed\nWARN retrying", tier=tier),)
    paste = paste_envelope(goal, origin)
    digested = secrete(
        paste,
        organ="stomach",
        instance="stomach-1",
        dest="absorption",
        payload=Digested(
            goal=goal,
            anchors=anchors,
            frames=frames,
            report=(),
            budget_tokens=4096,
            encoding=DEFAULT_ENCODING,
            source_ref=digest_text(goal),
            tier_reason="within budget",
        ),
        stages=("ingested", "classified", "digested"),
        tier=tier,
        now=AT,
    )
    return secrete(
        digested,
        organ="absorption",
        instance="absorption-1",
        dest="ada_border",
        payload=Yield(
            summary="a crash on start",
            extractions=(),
            meta=YieldMeta(
                original_provenance=origin,
                digestion_tier=tier,
                source_ref=digest_text(goal),
                actual_cost=yield_cost(goal, anchors, frames),
            ),
            goal=goal,
            anchors=anchors,
            frames=frames,
            follow_up_of=follow_up_of,
        ),
        stages=("yielded",),
        tier=tier,
        now=AT,
    )
