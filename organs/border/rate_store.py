"""The rate limit's token buckets on JetStream, shared by every border replica: one key per actor.

Each envelope's decision reads its actor's bucket, takes a token in memory
(the guard stays pure), and writes the bucket back only if no replica wrote it
meanwhile (compare-and-set on the key's revision); if one did, the envelope is
decided again on the fresh bucket. So N replicas admit the configured rate, not
N times it, and a restarted replica starts from the fleet's buckets. A key
expires once a bucket would have refilled completely, which is the same as no key.

Within one replica, decisions on the same key take turns (``holding``): the
worker decides many inputs at once, and a burst from one actor would otherwise
race itself on every write.

Once a replica has read or written a key, it holds that bucket in memory and settles it with the
shared store in batches: a write carries every token taken since the last one, made once
``SETTLE_EVERY`` tokens are taken or ``SETTLE_AFTER_S`` after the first of them, whichever comes first
(a write per decision was a round trip per envelope, and decisions on one key waited for it). A
settling write that finds another replica wrote first reads the fleet's bucket and takes this
replica's unsettled tokens from it, so none is forgotten. What this costs is stated: another replica
sees up to one batch (``SETTLE_EVERY`` tokens or ``SETTLE_AFTER_S`` seconds of them) late, so the fleet
may admit up to one batch per replica over the rate, and a replica killed before it settles takes its
last batch with it.

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
from dataclasses import dataclass

import msgspec
import nats.errors
from nats.js.errors import APIError, KeyNotFoundError, KeyWrongLastSequenceError

from envelopes.ids import digest_text
from organs.border.guard import TokenBucket
from organs.errors import TransientError
from organs.runtime.bus import KeyValueOnFirstUse, Tract
from organs.runtime.logs import get_logger

__all__ = ["SETTLE_AFTER_S", "SETTLE_EVERY", "RateClock", "SharedBuckets"]

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


# How many keys a replica holds in memory; past it, the oldest is settled and read back when next used.
_REMEMBERED_KEYS = 4096

# A batch: tokens taken on one key before they are written to the shared store, or how long after the first.
SETTLE_EVERY = 16
SETTLE_AFTER_S = 0.05

Actor = tuple[str, str]

# A bucket's read or write is given up after this long (the input is retried later): the actor's other decisions
# wait behind it, and one lost with a broken connection would otherwise hold them all for the JetStream timeout.
_BUCKET_TIMEOUT_S = 2.0


@dataclass
class _Held:
    """A key's bucket as this replica knows it: every token it took, ``unsettled`` of them not yet written."""

    bucket: TokenBucket
    revision: int
    unsettled: int = 0


class SharedBuckets:
    def __init__(
        self, tract: Tract, window_s: float, *, settle_every: int = SETTLE_EVERY, settle_after_s: float = SETTLE_AFTER_S
    ) -> None:
        self._kv = KeyValueOnFirstUse(tract, tract.subjects.rates_bucket, max(1.0, window_s))
        self._turns: dict[Actor, tuple[asyncio.Lock, int]] = {}
        self._held: OrderedDict[Actor, _Held] = OrderedDict()
        self._settle_every = settle_every
        self._settle_after_s = settle_after_s
        self._settling: dict[Actor, asyncio.Task[None]] = {}
        self._due: dict[Actor, asyncio.TimerHandle] = {}
        self._log = get_logger("border")

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
        held = self._held.get(actor)
        if held is not None:
            # A copy: a decision takes its token in place, and counts only once it is stored.
            return TokenBucket(held.bucket.tokens, held.bucket.updated_at), held.revision
        return await self._read(actor)

    async def _read(self, actor: Actor) -> tuple[TokenBucket | None, int]:
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
        """Count the bucket a decision left; False when another replica wrote first (decide again).

        A bucket this replica holds is kept in memory and settled in a batch later; a key used here for the
        first time is written now, so that a race with another replica is found before the decision counts.
        """
        held = self._held.get(actor)
        if held is not None:
            if held.revision != revision:
                # Settled while the decision ran on a thread (a large input), perhaps merged with the fleet's bucket.
                return False
            # Decisions on a key take turns, so this bucket was made from the held one: it has every token taken.
            took = (bucket.tokens, bucket.updated_at) != (held.bucket.tokens, held.bucket.updated_at)
            held.bucket = bucket
            held.unsettled += took
            self._held.move_to_end(actor)
            self._schedule(actor, held)
            return True
        written = await self._write(actor, bucket, revision)
        if written is None:
            return False
        self._hold(actor, _Held(bucket, written))
        return True

    async def settle(self) -> None:
        """Write every unsettled token now (and wait for writes already under way)."""
        for actor, held in list(self._held.items()):
            if held.unsettled and actor not in self._settling:
                self._start_settling(actor)
        await asyncio.gather(*self._settling.values(), return_exceptions=True)

    def _hold(self, actor: Actor, held: _Held) -> None:
        self._held[actor] = held
        while len(self._held) > _REMEMBERED_KEYS:
            oldest, dropped = next(iter(self._held.items()))
            if dropped.unsettled or oldest in self._settling:
                break  # settled first; let go of once written
            self._held.popitem(last=False)

    def _schedule(self, actor: Actor, held: _Held) -> None:
        if not held.unsettled or actor in self._settling:
            return
        if held.unsettled >= self._settle_every:
            self._start_settling(actor)
        elif actor not in self._due:
            loop = asyncio.get_running_loop()
            self._due[actor] = loop.call_later(self._settle_after_s, self._start_settling, actor)

    def _start_settling(self, actor: Actor) -> None:
        due = self._due.pop(actor, None)
        if due is not None:
            due.cancel()
        if actor not in self._settling:
            task = asyncio.create_task(self._settle_one(actor))
            self._settling[actor] = task
            task.add_done_callback(lambda _: self._settling.pop(actor, None))

    async def _settle_one(self, actor: Actor) -> None:
        """Write the held bucket until no token is left unsettled; a lost race merges with the fleet's bucket."""
        held = self._held.get(actor)
        while held is not None and held.unsettled:
            settling = held.unsettled
            try:
                written = await self._write(actor, held.bucket, held.revision)
                if written is None:
                    # Another replica wrote: its bucket, less every token this replica took and never wrote.
                    fleet, revision = await self._read(actor)
                    if fleet is not None:
                        held.bucket = TokenBucket(fleet.tokens - held.unsettled, fleet.updated_at)
                    held.revision = revision
                    continue
            except TransientError as error:
                # Kept unsettled: the next decision on this key schedules the write again.
                self._log.warning("border.rate_settle_failed", error=str(error), unsettled=held.unsettled)
                return
            held.revision = written
            held.unsettled -= settling

    async def _write(self, actor: Actor, bucket: TokenBucket, revision: int) -> int | None:
        """Write the bucket if ``revision`` is still the latest: its new revision, or None when another
        replica wrote first."""
        value = _encode((bucket.tokens, bucket.updated_at))
        kv = await self._kv()
        try:
            writing = kv.create(_key(actor), value) if revision == 0 else kv.update(_key(actor), value, last=revision)
            return int(await asyncio.wait_for(writing, _BUCKET_TIMEOUT_S))
        except KeyWrongLastSequenceError:
            return None
        except (nats.errors.Error, APIError, TimeoutError) as error:
            raise TransientError(f"rate bucket: {error!r}") from error
