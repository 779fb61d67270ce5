"""The organs of the tract, each named once: what every other module reads about them.

An organ has two names. ``name`` is its name on the bus and on the machine: the
``ichor worker`` argument, its subjects' and durables' stem, its dead-letter
subject ``<prefix>.dlq.<name>``, its NATS user and the ``organ`` of its logs and
``$SRV`` replies. ``wire_name`` is its name inside envelopes, which the design
fixes: provenance steps, ``organ_secretion``, the identity its signing key is
trusted under and, for the border, the ``dest`` of a yield (``ada_border``,
Ada's Trust_Guard).
"""

from __future__ import annotations

from dataclasses import dataclass

from envelopes.subjects import Subjects
from envelopes.types import Organ

__all__ = [
    "ABSORPTION",
    "BORDER",
    "ORGANS",
    "ORGAN_NAMES",
    "SENDERS",
    "STOMACH",
    "Consumer",
    "OrganEntry",
    "organ_named",
]


@dataclass(frozen=True)
class Consumer:
    """One durable pull consumer: its name and the ``Subjects`` attribute it reads."""

    durable: str
    subject: str

    def address(self, subjects: Subjects) -> str:
        return str(getattr(subjects, self.subject))


@dataclass(frozen=True)
class OrganEntry:
    """One organ: its names, the consumers it reads, the subjects it publishes to."""

    name: str
    wire_name: Organ
    consumers: tuple[Consumer, ...]
    outputs: tuple[str, ...]
    """``Subjects`` attributes this organ publishes envelopes to."""
    serves_frames: bool = False

    @property
    def nats_user(self) -> str:
        return self.name

    @property
    def durables(self) -> tuple[str, ...]:
        return tuple(consumer.durable for consumer in self.consumers)

    def input_subjects(self, subjects: Subjects) -> tuple[str, ...]:
        return tuple(consumer.address(subjects) for consumer in self.consumers)

    def output_subjects(self, subjects: Subjects) -> tuple[str, ...]:
        return tuple(str(getattr(subjects, attribute)) for attribute in self.outputs)

    def dead_letter_subject(self, subjects: Subjects) -> str:
        return subjects.dlq(self.name)


STOMACH = OrganEntry(
    name="stomach",
    wire_name="stomach",
    consumers=(
        Consumer("stomach", "stomach_in"),
        Consumer("stomach-deferred", "stomach_deferred"),
        Consumer("stomach-large", "stomach_large"),
    ),
    outputs=("absorption_in", "stomach_deferred", "stomach_large"),
    serves_frames=True,
)
ABSORPTION = OrganEntry(
    name="absorption",
    wire_name="absorption",
    consumers=(Consumer("absorption", "absorption_in"),),
    outputs=("border_in",),
)
BORDER = OrganEntry(
    name="border",
    wire_name="ada_border",
    consumers=(Consumer("border", "border_in"),),
    outputs=("brain_in", "border_rejected", "outcomes"),
)

ORGANS: tuple[OrganEntry, ...] = (STOMACH, ABSORPTION, BORDER)
"""In the order of the tract."""
ORGAN_NAMES: tuple[str, ...] = tuple(organ.name for organ in ORGANS)


SENDERS = ("host", "upstream")
"""The users that hand pastes in and seal them: the border trusts their keys as senders, and each has its own
uploads bucket, whose byte limit is its quota."""


def organ_named(name: str) -> OrganEntry:
    """The organ whose bus name or wire name is ``name``."""
    for organ in ORGANS:
        if name in (organ.name, organ.wire_name):
            return organ
    raise KeyError(name)
