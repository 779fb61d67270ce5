"""What a conversation already carries: the frames each turn of a session delivered.

Pure: the border worker reads a ``SessionRecord`` from its key-value bucket,
hands ``delivered_before`` to the compiler, and writes back ``with_turn`` once
the prompt is admitted. A turn is keyed by the paste's trace id, so a redelivered
envelope, or the follow-up digest of a deferred paste, is the same turn again:
its own frames never count as "already delivered" to itself.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from envelopes.types import CompiledPrompt, Frame
from organs.border.prompt import frame_segment_id

__all__ = ["SessionRecord", "Turn", "delivered_frames"]


class Turn(msgspec.Struct, frozen=True):
    trace_id: str
    frames: tuple[str, ...]


class SessionRecord(msgspec.Struct, frozen=True):
    """The turns of one session in order; turn numbers count from 1."""

    turns: tuple[Turn, ...] = ()

    def turn_number(self, trace_id: str) -> int:
        """The number of the turn with ``trace_id``, or the next number if it is new."""
        for number, turn in enumerate(self.turns, start=1):
            if turn.trace_id == trace_id:
                return number
        return len(self.turns) + 1

    def delivered_before(self, trace_id: str) -> dict[str, int]:
        """Frame id to the latest turn that carried it, over the turns before ``trace_id``'s.

        The latest, because a host that asked for a frame again holds it from then on.
        """
        delivered: dict[str, int] = {}
        for number, turn in enumerate(self.turns[: self.turn_number(trace_id) - 1], start=1):
            delivered.update(dict.fromkeys(turn.frames, number))
        return delivered

    def with_turn(self, trace_id: str, frames: tuple[str, ...]) -> SessionRecord:
        """This record with ``frames`` added to the turn of ``trace_id`` (a new turn if it has none)."""
        number = self.turn_number(trace_id)
        if number > len(self.turns):
            return SessionRecord((*self.turns, Turn(trace_id, frames)))
        known = self.turns[number - 1]
        merged = Turn(trace_id, (*known.frames, *(frame for frame in frames if frame not in known.frames)))
        return SessionRecord((*self.turns[: number - 1], merged, *self.turns[number:]))


def delivered_frames(frames: tuple[Frame, ...], prompt: CompiledPrompt, already: Mapping[str, int]) -> tuple[str, ...]:
    """The ids of the ``frames`` this ``prompt`` renders (whole, truncated, or as a pointer to its bytes).

    One in ``already`` was compiled as a line pointing back to an earlier turn;
    it carries nothing new and is left out.
    """
    carried = {entry.segment_id for entry in prompt.inspection if entry.disposition in ("included", "truncated")}
    return tuple(frame.id for frame in frames if frame.id not in already and frame_segment_id(frame) in carried)
