"""The border worker: ``<prefix>.border.in`` → ``<prefix>.brain.in`` or ``<prefix>.border.rejected``."""

from __future__ import annotations

import time
from collections.abc import Sequence

from envelopes.types import Admitted, Envelope, Rejected, Yield
from organs.anatomy import BORDER
from organs.border.decide import BorderConfig, border_decide
from organs.border.guard import GuardState
from organs.runtime import (
    BusSettings,
    Delivery,
    OrganBuilder,
    Output,
    Tract,
    WorkerSpec,
    call_core,
    envelope_fields,
    get_logger,
)

__all__ = ["build_border"]


def build_border(settings: BusSettings, config: BorderConfig | None = None) -> OrganBuilder:
    border_config = config or BorderConfig.from_env()
    log = get_logger(BORDER.name)

    async def build(tract: Tract) -> Sequence[WorkerSpec]:
        # Rate-limit buckets are this replica's memory; see GuardState.
        state = GuardState()

        async def handle(envelope: Envelope, _: Delivery) -> Sequence[Output]:
            frames = envelope.payload.frames if isinstance(envelope.payload, Yield) else ()
            served = sum(len(frame.content or "") for frame in frames)
            decision = await call_core(
                served, border_decide, envelope, border_config, state, instance=settings.instance, now=time.time()
            )
            payload = decision.payload
            if isinstance(payload, Admitted):
                log.info(
                    "border.admitted",
                    **envelope_fields(decision),
                    outcome="admitted",
                    prompt_tokens=payload.prompt.tokens,
                    findings=[f"{finding.pattern}@{finding.segment_id}" for finding in payload.findings],
                )
                return [Output(tract.subjects.brain_in, decision)]
            assert isinstance(payload, Rejected)
            log.warning(
                "border.rejected",
                **envelope_fields(decision),
                outcome="rejected",
                reasons=[f"{reason.code}: {reason.message}" for reason in payload.reasons],
            )
            return [Output(tract.subjects.border_rejected, decision)]

        (consumer,) = BORDER.consumers
        return [
            WorkerSpec(
                organ=BORDER.name, durable=consumer.durable, subject=consumer.address(tract.subjects), handle=handle
            )
        ]

    return build
