"""How an organ emits an envelope: the one place output envelopes are built.

The output id derives from the input id and the organ, the origin is carried
over untouched, steps are only appended, and the trace continues the input's.
"""

from __future__ import annotations

from envelopes.ids import child_traceparent, derive_id, utc_now
from envelopes.types import (
    SCHEMA_VERSION,
    AnyPayload,
    DegradationTier,
    Envelope,
    Organ,
    OrganSecretion,
    Stage,
    Step,
)

__all__ = ["secrete"]


def secrete(
    parent: Envelope,
    *,
    organ: Organ,
    instance: str,
    dest: Organ,
    payload: AnyPayload,
    stages: tuple[Stage, ...],
    tier: DegradationTier | None,
    now: str | None = None,
    role: str = "out",
) -> Envelope:
    """Build the envelope ``organ`` emits in answer to ``parent``.

    ``stages`` are appended to the chain, in order, each naming the new id.
    """
    at = now or utc_now()
    envelope_id = derive_id(parent.id, organ, role)
    chain = parent.chain
    for stage in stages:
        chain = chain.append(Step(stage=stage, organ=organ, instance=instance, at=at, envelope_id=envelope_id))
    return Envelope(
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
    )
