"""The border's session records on JetStream: one key per session in ``<prefix>-sessions``.

The bucket forgets a session ``ttl`` seconds after its last turn. Replicas of
the border may serve turns of one session at once, so a turn is written with
optimistic concurrency: read, add the turn, write if nobody wrote meanwhile,
else read again.
"""

from __future__ import annotations

import msgspec
import nats.errors
from nats.js.errors import APIError, KeyNotFoundError, KeyWrongLastSequenceError

from organs.border.session import SessionRecord
from organs.errors import TransientError
from organs.runtime.bus import KeyValueOnFirstUse, Tract

__all__ = ["SessionStore"]

_ATTEMPTS = 8
_decode_record = msgspec.msgpack.Decoder(SessionRecord).decode
_encode_record = msgspec.msgpack.Encoder().encode


class SessionStore:
    def __init__(self, tract: Tract, ttl_s: float) -> None:
        self._kv = KeyValueOnFirstUse(tract, tract.subjects.sessions_bucket, ttl_s)

    async def _read(self, session_id: str) -> tuple[SessionRecord, int | None]:
        bucket = await self._kv()
        try:
            entry = await bucket.get(session_id)
        except KeyNotFoundError:
            return SessionRecord(), None
        try:
            return _decode_record(entry.value or b""), entry.revision
        except msgspec.DecodeError:
            # A record this border cannot read is replaced: the worst outcome is a frame sent again.
            return SessionRecord(), entry.revision

    async def read(self, session_id: str) -> SessionRecord:
        try:
            record, _ = await self._read(session_id)
        except (nats.errors.Error, APIError, TimeoutError) as error:
            raise TransientError(f"session {session_id}: {error!r}") from error
        return record

    async def record_turn(self, session_id: str, trace_id: str, frames: tuple[str, ...]) -> None:
        """Add ``frames`` to the turn of ``trace_id`` in the session's record."""
        try:
            for _ in range(_ATTEMPTS):
                record, revision = await self._read(session_id)
                value = _encode_record(record.with_turn(trace_id, frames))
                bucket = await self._kv()
                try:
                    if revision is None:
                        await bucket.create(session_id, value)
                    else:
                        await bucket.update(session_id, value, last=revision)
                    return
                except (KeyWrongLastSequenceError, APIError):
                    continue  # another replica wrote this session meanwhile; add the turn to theirs
        except (nats.errors.Error, APIError, TimeoutError) as error:
            raise TransientError(f"session {session_id}: {error!r}") from error
        raise TransientError(f"session {session_id}: {_ATTEMPTS} writers raced; retrying the envelope")
