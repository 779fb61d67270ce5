"""The absorption worker: ``<prefix>.absorption.in`` → ``<prefix>.border.in``.

A digest whose goal travels by reference (``Digested.goal_ref``) has its goal fetched for the core, which
counts its tokens for the yield's cost; the yield names the same reference and leaves the goal out again.
Frames whose contents travel by reference (``Frame.content_ref``) are passed on as they came: the yield's cost
takes each frame's ``token_cost``, which the border recounts on the text it fetches.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from envelopes.ids import utc_now
from envelopes.types import Digested, Envelope
from organs.absorption.core import yield_context
from organs.anatomy import ABSORPTION
from organs.runtime import BusSettings, Delivery, OrganBuilder, Output, Tract, WorkerSpec
from organs.runtime.stored_text import as_it_travels, with_goal
from organs.signing import Signer

__all__ = ["AbsorptionOrgan", "build_absorption"]


class AbsorptionOrgan:
    """Absorption on one tract: stateless, its one handler a method."""

    def __init__(self, tract: Tract, settings: BusSettings, *, signer: Signer | None = None) -> None:
        self.tract = tract
        self.settings = settings
        self.signer = signer

    def specs(self) -> Sequence[WorkerSpec]:
        (consumer,) = ABSORPTION.consumers
        return [
            WorkerSpec(
                organ=ABSORPTION.name,
                durable=consumer.durable,
                subject=consumer.address(self.tract.subjects),
                handle=self.handle,
            )
        ]

    async def handle(self, envelope: Envelope, _: Delivery) -> Sequence[Output]:
        if isinstance(envelope.payload, Digested):
            envelope = msgspec.structs.replace(envelope, payload=await with_goal(self.tract, envelope.payload))
        secreted = yield_context(envelope, self.settings.instance, signer=self.signer, now=utc_now())
        # The signature vouches for a goal by reference through its reference, so leaving it out keeps it whole.
        secreted = msgspec.structs.replace(secreted, payload=as_it_travels(secreted.payload))
        return [Output(self.tract.subjects.border_in, secreted)]


def build_absorption(settings: BusSettings, *, signer: Signer | None = None) -> OrganBuilder:
    """Absorption's builder for ``serve_organ``: an ``AbsorptionOrgan`` on the tract it is given."""

    async def build(tract: Tract) -> Sequence[WorkerSpec]:
        return AbsorptionOrgan(tract, settings, signer=signer).specs()

    return build
