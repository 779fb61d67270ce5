"""The absorption worker: ``<prefix>.absorption.in`` → ``<prefix>.border.in``."""

from __future__ import annotations

from collections.abc import Sequence

from envelopes.ids import utc_now
from envelopes.types import Envelope
from organs.absorption.core import yield_context
from organs.anatomy import ABSORPTION
from organs.runtime import BusSettings, Delivery, OrganBuilder, Output, Tract, WorkerSpec
from organs.signing import Signer

__all__ = ["build_absorption"]


def build_absorption(settings: BusSettings, *, signer: Signer | None = None) -> OrganBuilder:

    async def build(tract: Tract) -> Sequence[WorkerSpec]:
        async def handle(envelope: Envelope, _: Delivery) -> Sequence[Output]:
            return [
                Output(
                    tract.subjects.border_in, yield_context(envelope, settings.instance, signer=signer, now=utc_now())
                )
            ]

        (consumer,) = ABSORPTION.consumers
        return [
            WorkerSpec(
                organ=ABSORPTION.name, durable=consumer.durable, subject=consumer.address(tract.subjects), handle=handle
            )
        ]

    return build
