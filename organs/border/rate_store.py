"""The rate limit's token buckets on JetStream, shared by every border replica: one key per actor.

Each envelope's decision reads its actor's bucket, takes a token in memory
(the guard stays pure), and writes the bucket back only if no replica wrote it
meanwhile (compare-and-set on the key's revision); if one did, the envelope is
decided again on the fresh bucket. So N replicas admit the configured rate, not
N times it, and a restarted replica starts from the fleet's buckets. A key
expires once a bucket would have refilled completely, which is the same as no key.

Buckets are stamped by a ``RateClock``: the wall clock as read when the border started, advanced by the
monotonic clock, so a step of the host's clock (NTP, an operator, a VM resumed) while the border runs
neither refills nor freezes a bucket; stamps stay comparable between replicas on synchronised hosts.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import msgspec
import nats.errors
from nats.js.errors import APIError, KeyNotFoundError, KeyWrongLastSequenceError

from envelopes.ids import digest_text
from organs.border.guard import TokenBucket
from organs.errors import TransientError
from organs.runtime.bus import KeyValueOnFirstUse, Tract

__all__ = ["RateClock", "SharedBuckets"]

_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(tuple[float, float]).decode


class RateClock:
    """Seconds since the epoch that only ever move forward at the monotonic clock's pace."""

    def __init__(self, wall: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._offset = wall() - monotonic()

    def __call__(self) -> float:
        return self._offset + self._monotonic()


def _key(actor: tuple[str, str]) -> str:
    # An actor is any string a sender chose; its digest is always a valid key.
    return digest_text("\0".join(actor)).removeprefix("blake3:")


class SharedBuckets:
    def __init__(self, tract: Tract, window_s: float) -> None:
        self._kv = KeyValueOnFirstUse(tract, tract.subjects.rates_bucket, max(1.0, window_s))

    async def load(self, actor: tuple[str, str]) -> tuple[TokenBucket | None, int]:
        """The actor's bucket (``None``: full) and the revision a write must follow (0: no key)."""
        try:
            entry = await (await self._kv()).get(_key(actor))
        except KeyNotFoundError:
            return None, 0
        except (nats.errors.Error, APIError, TimeoutError) as error:
            raise TransientError(f"rate bucket: {error!r}") from error
        try:
            tokens, updated_at = _decode(entry.value or b"")
        except msgspec.DecodeError:
            return None, entry.revision or 0  # unreadable: treated as full, overwritten
        return TokenBucket(tokens, updated_at), entry.revision or 0

    async def store(self, actor: tuple[str, str], bucket: TokenBucket, revision: int) -> bool:
        """Write the bucket if ``revision`` is still the latest; False when another replica wrote first."""
        value = _encode((bucket.tokens, bucket.updated_at))
        kv = await self._kv()
        try:
            if revision == 0:
                await kv.create(_key(actor), value)
            else:
                await kv.update(_key(actor), value, last=revision)
        except KeyWrongLastSequenceError:
            return False
        except (nats.errors.Error, APIError, TimeoutError) as error:
            raise TransientError(f"rate bucket: {error!r}") from error
        return True
