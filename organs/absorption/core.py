"""The absorption organ's pure core (M5): package a digest into a yield.

Stateless: the output depends only on the input envelope, the instance name
and the time given; nothing is remembered between calls.
"""

from __future__ import annotations

from envelopes.types import Digested, Envelope, Extraction, Frame, Yield, YieldMeta
from organs.accounting import yield_cost
from organs.anatomy import ABSORPTION, BORDER
from organs.errors import PoisonError
from organs.secretion import secrete
from organs.signing import Signer

__all__ = ["summarize", "yield_context"]


def _frame_line(frame: Frame) -> str:
    served = "by reference" if frame.representation == "reference" else f"{frame.token_cost:,} tokens served"
    return f"{frame.title} ({frame.full_tokens:,} tokens, {served})"


def _redacted(digested: Digested) -> dict[str, int]:
    """Kind → how many values of it the stomach replaced in the whole paste."""
    totals: dict[str, int] = {}
    for segment in digested.report:
        for redaction in segment.redacted:
            totals[redaction.kind] = totals.get(redaction.kind, 0) + redaction.count
    return totals


def summarize(digested: Digested, tier: str) -> str:
    """One paragraph for people: what the paste became and what it costs."""
    frames = "; ".join(_frame_line(frame) for frame in digested.frames) or "no evidence"
    anchors = f"{len(digested.anchors)} anchor(s)" if digested.anchors else "no anchors"
    redacted = _redacted(digested)
    replaced = (
        f" Replaced before serving: {', '.join(f'{kind} ×{count}' for kind, count in redacted.items())}."
        if redacted
        else ""
    )
    return f"Digested paste at tier {tier} ({digested.tier_reason}): {anchors}; evidence: {frames}.{replaced}"


def _extractions(digested: Digested) -> tuple[Extraction, ...]:
    return (
        *(Extraction(key="anchor", value=anchor) for anchor in digested.anchors),
        *(Extraction(key=f"frame.{frame.kind}", value=frame.id) for frame in digested.frames),
        Extraction(key="tier_reason", value=digested.tier_reason),
        *(Extraction(key=f"redacted.{kind}", value=str(count)) for kind, count in _redacted(digested).items()),
    )


def yield_context(digested: Envelope, instance: str, *, now: str, signer: Signer | None = None) -> Envelope:
    """Package a ``digested`` envelope into the yield the border expects.

    ``meta.original_provenance`` is ``chain.origin`` itself; the tier is the
    input's; ``source_ref`` is the frames-store key of the whole paste;
    ``actual_cost`` is ``organs.accounting.yield_cost`` of what is yielded.
    """
    payload = digested.payload
    if not isinstance(payload, Digested):
        raise PoisonError(f"absorption takes a 'digested' envelope, got {digested.kind!r}")
    if digested.tier is None:
        raise PoisonError("a digested envelope without a tier would degrade silently")
    meta = YieldMeta(
        original_provenance=digested.chain.origin,
        digestion_tier=digested.tier,
        source_ref=payload.source_ref,
        actual_cost=yield_cost(payload.goal, payload.anchors, payload.frames, payload.encoding),
    )
    return secrete(
        digested,
        organ=ABSORPTION.wire_name,
        instance=instance,
        dest=BORDER.wire_name,
        payload=Yield(
            summary=summarize(payload, digested.tier),
            extractions=_extractions(payload),
            meta=meta,
            goal=payload.goal,
            anchors=payload.anchors,
            frames=payload.frames,
            follow_up_of=payload.follow_up_of,
            encoding=payload.encoding,
            report=payload.report,
            goal_ref=payload.goal_ref,
        ),
        stages=("yielded",),
        tier=digested.tier,
        now=now,
        signer=signer,
    )
