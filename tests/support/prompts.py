"""Reading an admitted envelope's prompt in tests: the payload, and what its evidence cost."""

from __future__ import annotations

from envelopes.types import Admitted, Envelope

__all__ = ["admitted_payload", "evidence_tokens"]

# Frames served in full and the pointers to frames an earlier turn delivered: the paste's evidence.
_EVIDENCE_PREFIXES = ("frame/", "paste/delivered/")


def admitted_payload(envelope: Envelope) -> Admitted:
    assert isinstance(envelope.payload, Admitted), envelope.payload
    return envelope.payload


def evidence_tokens(admitted: Admitted) -> int:
    """The tokens the prompt spends on the paste's evidence."""
    return sum(entry.tokens for entry in admitted.prompt.inspection if entry.segment_id.startswith(_EVIDENCE_PREFIXES))
