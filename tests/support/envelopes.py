"""Envelopes and frames to test with, built along the real path (a paste, the stomach's three
steps, absorption's yield), so each chain is exactly what the next hop expects. Tests then
break one thing at a time with ``msgspec.structs.replace``."""

from __future__ import annotations

from typing import Any

from envelopes.ids import digest_text
from envelopes.types import (
    SCHEMA_VERSION,
    AnyProvenance,
    DeferredNotice,
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
from organs.accounting import DEFAULT_ENCODING, count_tokens, yield_cost
from organs.secretion import paste_envelope, secrete
from organs.signing import Signer, seal_paste

__all__ = [
    "AT",
    "HOST",
    "deferred_notice_envelope",
    "digested_envelope",
    "fresh_paste",
    "host_paste",
    "note_frame",
    "reference_frame",
    "served_frame",
    "yield_envelope",
]

# The time every test envelope is stamped with: the cores take the time, they never read a clock.
AT = "2025-01-02T03:04:05.000Z"
HOST = UserInput(actor="ada", channel="cli")
_PASTE_ID = "0123456789abcdef0123456789abcdef"
_TRACE = "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"


def served_frame(
    content: str,
    *,
    kind: FrameKind = "log",
    tier: DegradationTier = "full",
    full: str | None = None,
    start: int = 0,
    title: str | None = None,
) -> Frame:
    """A frame served whole (or, with ``full``, compact), with honest digests and counts."""
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
        span=(start, start + len(full_text)),
        lines=full_text.count("\n") + 1,
        title=(full_text.splitlines()[0] if full_text else "") if title is None else title,
        tier=tier,
    )


def note_frame(text: str, tier: DegradationTier = "full", start: int = 0) -> Frame:
    return served_frame(text, kind="note", tier=tier, start=start, title=f"note · {text.count(chr(10)) + 1} lines")


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


def host_paste(text: str = "paste", origin: AnyProvenance = HOST) -> Envelope:
    """A paste with a fixed id and trace, so what is derived from it is the same on every run."""
    return Envelope(
        v=SCHEMA_VERSION,
        id=_PASTE_ID,
        kind="paste",
        source="host",
        dest="stomach",
        provenance=origin,
        chain=ProvenanceChain(origin=origin, input_digest=digest_text(text)),
        tier=None,
        trace=_TRACE,
        created_at=AT,
        payload=Paste(text=text),
    )


def fresh_paste(text: str = "the build failed at step 3\n\nWhy does the build fail?", **fields: Any) -> Envelope:
    """A paste as a host hands it in (``organs.secretion.paste_envelope``): a fresh id on every call.
    ``fields`` are the paste's optional ones (``intent``, ``budget_tokens``, ``input_digest``, ...)."""
    return paste_envelope(
        text, origin=UserInput(actor="fresh"), source="test-host", instance="t", **{"now": AT, **fields}
    )


def deferred_notice_envelope() -> Envelope:
    """The stomach's note to itself that a paste was deferred, as its worker secretes one."""
    parent = fresh_paste()
    notice = DeferredNotice(paste_ref=digest_text("nowhere"), deferred_envelope_id=parent.id)
    return secrete(
        parent,
        organ="stomach",
        instance="stomach-1",
        dest="stomach",
        payload=notice,
        stages=(),
        tier="deferred",
        role="x",
        now=AT,
    )


def digested_envelope(
    goal: str = "Why does the build fail?",
    evidence: str = "the build failed at step 3",
    *,
    origin: AnyProvenance | None = None,
    tier: DegradationTier = "full",
    anchors: tuple[str, ...] = ("./src/net",),
    frames: tuple[Frame, ...] | None = None,
    paste: Envelope | None = None,
) -> Envelope:
    """A digested envelope as the stomach would emit it: ``goal`` plus one note of ``evidence``,
    or plus exactly ``frames`` when they are given. Each call has a fresh paste id unless
    ``paste`` is given."""
    if frames is None:
        frames = (note_frame(evidence, tier),)
    text = "\n\n".join([*(frame.content or "" for frame in frames), goal])
    if paste is None:
        paste = paste_envelope(text, origin=origin or UserInput(actor="ana"), source="test-host", instance="t", now=AT)
    return secrete(
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
            source_ref=digest_text(text),
            tier_reason="within budget",
        ),
        stages=("ingested", "classified", "digested"),
        tier=tier,
        now=AT,
    )


def yield_envelope(
    goal: str = "Why does the service crash on start?",
    *,
    anchors: tuple[str, ...] = ("src/app/main.py",),
    frames: tuple[Frame, ...] | None = None,
    origin: AnyProvenance = HOST,
    tier: DegradationTier = "full",
    follow_up_of: str | None = None,
    sealed_by: Signer | None = None,
) -> Envelope:
    """An honest yield envelope as absorption would emit it, from a fixed paste (sealed by ``sealed_by``)."""
    if frames is None:
        frames = (served_frame("ERROR boot failed\nWARN retrying", tier=tier),)
    paste = host_paste(goal, origin)
    if sealed_by is not None:
        paste = seal_paste(paste, sealed_by)
    digested = digested_envelope(goal, origin=origin, tier=tier, anchors=anchors, frames=frames, paste=paste)
    assert isinstance(digested.payload, Digested)
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
                source_ref=digested.payload.source_ref,
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
