"""The border's replay ledger on JetStream: one key per admitted envelope id in ``<prefix>-admitted``.

JetStream's duplicate window (minutes) drops a republished envelope only while
it lasts, and only when the replay keeps its ``Nats-Msg-Id``. The ledger keeps
every admitted id for days, with the tract-stream sequence it arrived at: the
same message delivered again (a crash before its ack) has the same sequence and
is decided again, identically; the same envelope published again has a new
sequence and is a replay. Claims use ``create``, so border replicas agree on one.
An envelope older than the ledger remembers is a replay too (its first step's
time is signed), so no replay is admitted whenever it comes.
"""

from __future__ import annotations

from datetime import datetime

import nats.errors
from nats.js.errors import APIError, KeyWrongLastSequenceError

from envelopes.types import Envelope
from organs.errors import TransientError
from organs.runtime.bus import KeyValueOnFirstUse, Tract

__all__ = ["DEFAULT_LEDGER_TTL_S", "ReplayLedger", "older_than_ledger"]

DEFAULT_LEDGER_TTL_S = 30 * 24 * 3600.0
"""Far longer than any redelivery (ack waits of a minute, a tract stream kept for a week)."""


def older_than_ledger(envelope: Envelope, now: float, ttl_s: float) -> bool:
    """Whether the envelope began longer ago than the ledger remembers (its id may be forgotten)."""
    steps = envelope.chain.steps
    if not steps:
        return False
    began = datetime.fromisoformat(steps[0].at.replace("Z", "+00:00")).timestamp()
    return now - began > ttl_s


class ReplayLedger:
    def __init__(self, tract: Tract, ttl_s: float = DEFAULT_LEDGER_TTL_S) -> None:
        self.ttl_s = ttl_s
        self._kv = KeyValueOnFirstUse(tract, tract.subjects.admitted_bucket, ttl_s)

    async def claim(self, envelope_id: str, stream_sequence: int) -> int | None:
        """Record ``envelope_id`` as admitted from ``stream_sequence``; ``None`` if this message may
        be admitted (first time, or the same message redelivered), else the sequence that was."""
        mark = str(stream_sequence).encode()
        try:
            bucket = await self._kv()
            try:
                await bucket.create(envelope_id, mark)
                return None
            except (KeyWrongLastSequenceError, APIError):
                entry = await bucket.get(envelope_id)
        except (nats.errors.Error, APIError, TimeoutError) as error:
            raise TransientError(f"replay ledger {envelope_id}: {error!r}") from error
        return None if entry.value == mark else int(entry.value or b"0")
