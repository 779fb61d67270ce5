"""What the stomach worker keeps of a digest: the payload, the frame records, the redacted text.

An ``IngestBundle`` holds every evidence segment's text; ``DigestParts`` holds only what the
worker stores and publishes, so it is small enough to come back from a child process that
digested a large paste (see ``organs.stomach.large``). Pure: no I/O.
"""

from __future__ import annotations

import msgspec

from envelopes.types import DegradationTier, Digested, FrameRecord
from organs.errors import PoisonError
from organs.stomach.core.ingest import IngestBundle, IngestConfig, ingest_paste
from organs.text_views import HandedText, digest_in_pieces

__all__ = ["DigestParts", "digest_parts", "digested_payload", "frame_records"]


class DigestParts(msgspec.Struct, frozen=True):
    """One paste's digest as the worker stores and publishes it.

    ``served_ref`` is the frames-store key of what ``frames.get`` serves: the paste itself, or the paste with its
    secrets redacted (then ``redacted`` counts the values replaced, by kind, and the redacted text is stored too).
    """

    payload: Digested
    tier: DegradationTier
    source_digest: str
    served_ref: str
    records: tuple[FrameRecord, ...]
    redacted: dict[str, int]


def digested_payload(bundle: IngestBundle, follow_up_of: str | None = None) -> Digested:
    return Digested(
        goal=bundle.query.goal,
        anchors=bundle.query.anchors,
        frames=bundle.provider.frames,
        report=bundle.report,
        budget_tokens=bundle.query.budget_tokens,
        encoding=bundle.encoding,
        source_ref=bundle.source_digest,
        tier_reason=bundle.tier_reason,
        follow_up_of=follow_up_of,
    )


def frame_records(bundle: IngestBundle, served_ref: str) -> list[FrameRecord]:
    # A deferred paste is indexed with its references: rendering them now is the work deferral
    # puts off. The follow-up digest indexes the same frame ids again with their renderings.
    # With secrets redacted, full text is served from the redacted paste; the raw one is only named.
    redaction = bundle.redaction
    return [
        FrameRecord(
            paste_ref=served_ref,
            span=redaction.span(bundle.provider.span(frame.id)),
            compact=frame if bundle.tier == "deferred" else bundle.provider.serve(frame.id, "compact"),
            raw_ref=bundle.source_digest if redaction.changed else None,
            raw_span=bundle.provider.span(frame.id) if redaction.changed else None,
        )
        for frame in bundle.provider.frames
    ]


def digest_parts(
    text: str | HandedText, config: IngestConfig, intent: str | None, expected: str
) -> tuple[DigestParts, str | None]:
    """Digest ``text``, check it is the paste ``expected`` names, and return its parts with the redacted text
    (``None`` when no secret was found, so the paste is served as received). A paste handed over is let go of
    as the digest goes (see ``ingest_paste``)."""
    bundle = ingest_paste(text, config, intent=intent)
    # The core digests the whole paste anyway; its digest is the check, before anything is stored.
    if bundle.source_digest != expected:
        raise PoisonError(f"the paste's bytes digest to {bundle.source_digest}, not {expected}")
    redaction = bundle.redaction
    redacted_text = redaction.text if redaction.changed else None
    served_ref = bundle.source_digest if redacted_text is None else digest_in_pieces(redacted_text)
    parts = DigestParts(
        payload=digested_payload(bundle),
        tier=bundle.tier,
        source_digest=bundle.source_digest,
        served_ref=served_ref,
        records=tuple(frame_records(bundle, served_ref)),
        redacted=redaction.totals(),
    )
    return parts, redacted_text
