"""Where the stomach keeps what it digests, on JetStream.

The whole paste goes to the ``<prefix>-frames`` object store once, named by
its blake3 hex (content-addressed: storing the same bytes again is skipped).
Each frame id maps, in the ``<prefix>-frame-index`` key-value bucket, to the
paste and the span that hold its full bytes, plus its compact rendering (for a deferred
paste, its reference until the follow-up digest indexes the frame again) — one
small write per frame, pipelined, instead of one object per frame.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict

from nats.js.errors import KeyNotFoundError, ObjectNotFoundError
from nats.js.object_store import ObjectStore

from envelopes.codec import decode_frame_record, encode
from envelopes.ids import digest_bytes
from envelopes.types import FrameRecord
from organs.runtime.bus import Tract
from organs.runtime.errors import PoisonError

__all__ = ["FrameNotFound", "FrameStore"]


class FrameNotFound(LookupError):
    pass


def _hex(ref: str) -> str:
    return ref.removeprefix("blake3:")


class FrameStore:
    """The frames object store and the frame index, with a small cache of pastes."""

    def __init__(self, tract: Tract, cached_pastes: int = 16, remembered_refs: int = 65536) -> None:
        self.tract = tract
        self._cache: OrderedDict[str, str] = OrderedDict()
        self._cache_size = cached_pastes
        # A ref is the hash of its content, so "already stored" never goes stale.
        self._stored: OrderedDict[str, None] = OrderedDict()
        self._stored_size = remembered_refs
        self._store: ObjectStore | None = None

    async def _objects(self) -> ObjectStore:
        if self._store is None:
            self._store = await self.tract.js.object_store(self.tract.subjects.frames_bucket)
        return self._store

    async def put_paste(self, text: str, ref: str) -> None:
        """Store the paste under ``ref`` unless it is already there."""
        if ref not in self._stored:
            store = await self._objects()
            try:
                await store.get_info(_hex(ref))
            except ObjectNotFoundError:
                await store.put(_hex(ref), text.encode("utf-8", "surrogatepass"))
            self._stored[ref] = None
            while len(self._stored) > self._stored_size:
                self._stored.popitem(last=False)
        self._remember(ref, text)

    async def get_paste(self, ref: str) -> str:
        """The paste stored under ``ref``; its bytes are checked against the ref."""
        if ref in self._cache:
            self._cache.move_to_end(ref)
            return self._cache[ref]
        store = await self._objects()
        try:
            result = await store.get(_hex(ref))
        except ObjectNotFoundError as error:
            raise FrameNotFound(f"no paste {ref} in the frames store") from error
        data = bytes(result.data or b"")
        if digest_bytes(data) != ref:
            raise PoisonError(f"stored paste {ref} does not match its digest")
        text = data.decode("utf-8", "surrogatepass")
        self._remember(ref, text)
        return text

    def _remember(self, ref: str, text: str) -> None:
        self._cache[ref] = text
        self._cache.move_to_end(ref)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    async def index(self, records: list[FrameRecord]) -> None:
        """Write every frame's record, pipelined; returns once all are stored."""
        bucket = self.tract.subjects.frame_index_bucket
        futures = [
            await self.tract.js.publish_async(f"$KV.{bucket}.{_hex(record.compact.id)}", encode(record))
            for record in records
        ]
        await asyncio.wait_for(asyncio.gather(*futures), timeout=10.0)

    async def record(self, frame_id: str) -> FrameRecord:
        kv = await self.tract.js.key_value(self.tract.subjects.frame_index_bucket)
        try:
            entry = await kv.get(_hex(frame_id))
        except KeyNotFoundError as error:
            raise FrameNotFound(f"no frame {frame_id}") from error
        return decode_frame_record(entry.value or b"")
