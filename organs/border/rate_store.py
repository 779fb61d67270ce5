"""The rate limit's token buckets on JetStream, shared by every border replica: one key per actor.

Each envelope's decision reads its actor's bucket, takes a token in memory
(the guard stays pure), and writes the bucket back only if no replica wrote it
meanwhile (compare-and-set on the key's revision); if one did, the envelope is
decided again on the fresh bucket. So N replicas admit the configured rate, not
N times it, and a restarted replica starts from the fleet's buckets. A key
expires once a bucket would have refilled completely, which is the same as no key.

Within one replica, decisions on the same key take turns (``holding``): the
worker decides many inputs at once, and a burst from one actor would otherwise
race itself on every write. A replica also remembers what it wrote last, so it
reads a key back only after another replica wrote it (its write then fails once).

Buckets are stamped by a ``RateClock``: the wall clock as read when the border started, advanced by the
monotonic clock, so a step of the host's clock (NTP, an operator, a VM resumed) while the border runs
neither refills nor freezes a bucket; stamps stay comparable between replicas on synchronised hosts.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable

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


# How many keys a replica remembers its own last write of; past it, the oldest is read back when next used.
_REMEMBERED_KEYS = 4096

Actor = tuple[str, str]

# A bucket's read or write is given up after this long (the input is retried later): the actor's other decisions
# wait behind it, and one lost with a broken connection would otherwise hold them all for the JetStream timeout.
_BUCKET_TIMEOUT_S = 2.0


class SharedBuckets:
    def __init__(self, tract: Tract, window_s: float) -> None:
        self._kv = KeyValueOnFirstUse(tract, tract.subjects.rates_bucket, max(1.0, window_s))
        self._turns: dict[Actor, tuple[asyncio.Lock, int]] = {}
        self._written: OrderedDict[Actor, tuple[TokenBucket, int]] = OrderedDict()

    @contextlib.asynccontextmanager
    async def holding(self, actors: Iterable[Actor]) -> AsyncIterator[None]:
        """Hold these keys against this replica's other decisions until the block ends (taken in one order)."""
        ordered = sorted(set(actors))
        for actor in ordered:
            lock, users = self._turns.get(actor, (asyncio.Lock(), 0))
            self._turns[actor] = (lock, users + 1)
        try:
            async with contextlib.AsyncExitStack() as stack:
                for actor in ordered:
                    await stack.enter_async_context(self._turns[actor][0])
                yield
        finally:
            for actor in ordered:
                lock, users = self._turns[actor]
                if users == 1:
                    del self._turns[actor]
                else:
                    self._turns[actor] = (lock, users - 1)

    async def load(self, actor: Actor) -> tuple[TokenBucket | None, int]:
        """The actor's bucket (``None``: full) and the revision a write must follow (0: no key)."""
        written = self._written.get(actor)
        if written is not None:
            bucket, revision = written
            # A copy: a decision takes its token in place, and counts only once it is stored.
            return TokenBucket(bucket.tokens, bucket.updated_at), revision
        try:
            entry = await asyncio.wait_for((await self._kv()).get(_key(actor)), _BUCKET_TIMEOUT_S)
        except KeyNotFoundError:
            return None, 0
        except (nats.errors.Error, APIError, TimeoutError) as error:
            raise TransientError(f"rate bucket: {error!r}") from error
        try:
            tokens, updated_at = _decode(entry.value or b"")
        except msgspec.DecodeError:
            return None, entry.revision or 0  # unreadable: treated as full, overwritten
        return TokenBucket(tokens, updated_at), entry.revision or 0

    async def store(self, actor: Actor, bucket: TokenBucket, revision: int) -> bool:
        """Write the bucket if ``revision`` is still the latest; False when another replica wrote first."""
        value = _encode((bucket.tokens, bucket.updated_at))
        kv = await self._kv()
        self._written.pop(actor, None)
        try:
            writing = kv.create(_key(actor), value) if revision == 0 else kv.update(_key(actor), value, last=revision)
            written = await asyncio.wait_for(writing, _BUCKET_TIMEOUT_S)
        except KeyWrongLastSequenceError:
            return False
        except (nats.errors.Error, APIError, TimeoutError) as error:
            raise TransientError(f"rate bucket: {error!r}") from error
        self._written[actor] = (bucket, written)
        if len(self._written) > _REMEMBERED_KEYS:
            self._written.popitem(last=False)
        return True
