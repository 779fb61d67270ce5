"""What an organ hands the worker loop (``WorkerSpec``, its handler's ``Output``) and what the loop tells it
back (``Delivery``, ``WorkerStats``, the settled observer)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from envelopes.types import Envelope
from organs.runtime.dead_letter_outcomes import SealedBy

__all__ = ["Delivery", "Handler", "Output", "SettledObserver", "WorkerSpec", "WorkerStats"]


@dataclass(frozen=True)
class Output:
    subject: str
    envelope: Envelope
    msg_id: str | None = None
    """The ``Nats-Msg-Id`` when it cannot be the envelope's id: an input moved unchanged to another subject
    of the same stream, whose first id the duplicate window holds already."""


@dataclass(frozen=True)
class Delivery:
    """What the bus says about the message being handled."""

    subject: str
    num_pending: int
    stream_sequence: int = 0
    """The message's place in its stream: a redelivery keeps it, a replay of the same bytes gets a new one."""
    size: int = 0
    """The message's bytes, known before anything is decoded or fetched."""


Handler = Callable[[Envelope, Delivery], Awaitable[Sequence[Output]]]
SettledObserver = Callable[[Envelope, Sequence[Output], float], None]
"""Told of each input settled (acked): the input, the outputs it gave, the seconds it took."""


@dataclass(frozen=True)
class WorkerSpec:
    """One organ's consumer: which subject, which durable, which handler.

    ``gate`` (optional) is asked before each fetch; a low-priority consumer
    uses it to wait while higher-priority work is pending. ``sealed_by`` (a secure
    tract's organs give it) names the sender whose seal an input bears: the rejection
    of its dead letter is copied to that sender's own outcome subject.
    """

    organ: str
    durable: str
    subject: str
    handle: Handler
    batch: int = 32
    nak_delay_s: float = 1.0
    gate: Callable[[], bool] | None = None
    sealed_by: SealedBy | None = None


@dataclass
class WorkerStats:
    processed: int = 0
    errors: int = 0
    dead_lettered: int = 0
    total_ms: float = 0.0
    last_error: str = ""
    last_pending: int = 0
    last_refusal: str = ""
    """The server's refusal of this worker's last write, until a write succeeds again ("" when none)."""

    @property
    def average_ms(self) -> float:
        return self.total_ms / self.processed if self.processed else 0.0
