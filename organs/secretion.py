"""How an organ emits an envelope: the one place output envelopes are built.

The output id derives from the input id and the organ, the origin is carried
over untouched, steps are only appended, the trace continues the input's and
the session (the host's conversation, if any) is carried along.
"""

from __future__ import annotations

import msgspec

from envelopes.ids import child_traceparent, derive_id, digest_text, new_id, new_traceparent
from envelopes.types import (
    SCHEMA_VERSION,
    AnyPayload,
    AnyProvenance,
    DegradationTier,
    Envelope,
    Organ,
    OrganSecretion,
    Paste,
    ProvenanceChain,
    Session,
    Stage,
    Step,
)
from organs.anatomy import STOMACH
from organs.signing import Signer, paste_fields, sign_last_step

__all__ = ["paste_envelope", "secrete"]


def secrete(
    parent: Envelope,
    *,
    organ: Organ,
    instance: str,
    dest: Organ,
    payload: AnyPayload,
    stages: tuple[Stage, ...],
    tier: DegradationTier | None,
    now: str,
    role: str = "out",
    signer: Signer | None = None,
) -> Envelope:
    """Build the envelope ``organ`` emits in answer to ``parent``.

    ``stages`` are appended to the chain, in order, each naming the new id;
    with a ``signer``, the last of them is signed (see ``organs.signing``).
    ``now`` (RFC 3339 UTC) stamps the new steps and the envelope: the worker reads the clock.
    """
    at = now
    envelope_id = derive_id(parent.id, organ, role)
    chain = parent.chain
    if isinstance(parent.payload, Paste):
        # What the stomach received, signed with its steps, the border holds the seal to (and the paste's time
        # its paste-to-prompt time reads). Always written from the paste itself: a value the sender put there
        # could echo a lifted seal.
        chain = msgspec.structs.replace(chain, received=paste_fields(parent))
    for stage in stages:
        chain = chain.append(Step(stage=stage, organ=organ, instance=instance, at=at, envelope_id=envelope_id))
    envelope = Envelope(
        v=SCHEMA_VERSION,
        id=envelope_id,
        kind=payload.__struct_config__.tag,  # type: ignore[arg-type]
        source=organ,
        dest=dest,
        provenance=OrganSecretion(organ=organ, instance=instance),
        chain=chain,
        tier=tier,
        trace=child_traceparent(parent.trace, envelope_id),
        created_at=at,
        payload=payload,
        session=parent.session,
    )
    return sign_last_step(envelope, signer) if signer is not None and stages else envelope


def paste_envelope(
    text: str,
    *,
    origin: AnyProvenance,
    source: str,
    instance: str,
    intent: str | None = None,
    budget_tokens: int | None = None,
    encoding: str | None = None,
    text_ref: str | None = None,
    input_digest: str | None = None,
    now: str,
    session: Session | None = None,
) -> Envelope:
    """The envelope an upstream organ publishes to hand a paste to the stomach.

    ``origin`` starts the provenance chain; ``source`` names the upstream
    organ, whose ``organ_secretion`` is the bus-level provenance. When the
    text travels by reference (``text_ref``), ``input_digest`` is its digest.
    """
    envelope_id = new_id()
    return Envelope(
        v=SCHEMA_VERSION,
        id=envelope_id,
        kind="paste",
        source=source,
        dest=STOMACH.wire_name,
        provenance=OrganSecretion(organ=source, instance=instance),
        chain=ProvenanceChain(origin=origin, input_digest=input_digest or digest_text(text)),
        tier=None,
        trace=new_traceparent(),
        created_at=now,
        payload=Paste(text=text, intent=intent, budget_tokens=budget_tokens, encoding=encoding, text_ref=text_ref),
        session=session,
    )
