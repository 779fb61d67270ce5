"""Where the stomach keeps what it digests, on JetStream.

Each frame id maps, in the ``<prefix>-frame-index`` key-value bucket, to the
paste and the span that hold its full bytes, plus its compact rendering (for a deferred
paste, its reference until the follow-up digest indexes the frame again) — one
small write per frame, pipelined, instead of one object per frame. A record that would not fit a message
names its compact content, stored in the frames object store (``Frame.content_ref``), instead of holding it.

The whole paste is stored once under its blake3 hex (content-addressed: the
same bytes are never stored twice by one stomach). A paste that fits in one
message is a key ``paste.<hex>`` of the same bucket, written in the same
pipelined batch as its frames' records; the object store's put costs four
sequential round trips, which was a fifth of the stomach's time per paste. A
larger paste goes to the ``<prefix>-frames`` object store, where a sender has
usually put it already (a paste too large for a message travels by reference).

A paste whose evidence held secrets is stored twice: redacted as above (all that
``frames.get`` serves), and as received in the ``<prefix>-raw`` object store,
which only the stomach's user may read (the operator asks on ``frames.raw``).

Recent pastes are kept in memory up to ``cache_bytes`` in all (64 MiB), the least recently used
first to go; a paste larger than a quarter of that is never kept, so one large paste cannot evict
every small one. A large paste is streamed between a file and the store (``fetch_paste_into``,
``store_file``), never held whole by the worker.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

import msgspec
from nats.js.errors import KeyNotFoundError, NotFoundError, ObjectNotFoundError
from nats.js.kv import KeyValue
from nats.js.object_store import ObjectStore

from envelopes.codec import decode_frame_record, encode
from envelopes.ids import digest_bytes
from envelopes.types import FrameRecord
from organs.anatomy import SENDERS
from organs.errors import FrameNotFound, PoisonError
from organs.runtime.bus import Tract, inline_room, stream_info
from organs.runtime.stored_text import frame_by_reference, put_once
from organs.text_views import utf8_size

__all__ = ["FRAME_ID", "MIN_FRAME_PREFIX", "SHORT_FRAME_ID", "FrameNotFound", "FrameStore"]

MIN_FRAME_PREFIX = 12
"""The fewest hex digits of a frame id that ``FrameStore.resolve`` takes (48 bits: unambiguous in any real store)."""
FRAME_ID = re.compile(r"blake3:[0-9a-f]{64}")
SHORT_FRAME_ID = re.compile(rf"blake3:([0-9a-f]{{{MIN_FRAME_PREFIX},63}})")
"""A frame id cut short, as a prompt's table shows it: its hex is the prefix ``FrameStore.resolve`` takes."""


# Frame keys are bare hex; a paste is prefixed, for a paste of one segment has its frame's hex.
_PASTE_KEY_PREFIX = "paste."
# ``owner.<sender>.<frame hex>``: that sender handed in a paste holding the frame (see ``FrameStore.own``).
_OWNER_KEY_PREFIX = "owner."


_V = TypeVar("_V")


def _hex(ref: str) -> str:
    return ref.removeprefix("blake3:")


def _keep_recent(recent: OrderedDict[str, _V], key: str, value: _V, limit: int) -> None:
    """Put ``key`` last in ``recent`` and drop the oldest entries beyond ``limit``."""
    recent[key] = value
    recent.move_to_end(key)
    while len(recent) > limit:
        recent.popitem(last=False)


class PasteCache:
    """Recent pastes by ref, bounded by the memory their texts take rather than by their number."""

    def __init__(self, limit_bytes: int) -> None:
        self.limit_bytes = limit_bytes
        self.held_bytes = 0
        self._texts: OrderedDict[str, str] = OrderedDict()

    def get(self, ref: str) -> str | None:
        text = self._texts.get(ref)
        if text is not None:
            self._texts.move_to_end(ref)
        return text

    def keep(self, ref: str, text: str) -> None:
        size = sys.getsizeof(text)
        if ref in self._texts or size > self.limit_bytes // 4:
            return
        self._texts[ref] = text
        self.held_bytes += size
        while self.held_bytes > self.limit_bytes:
            _, dropped = self._texts.popitem(last=False)
            self.held_bytes -= sys.getsizeof(dropped)

    def __len__(self) -> int:
        return len(self._texts)


INDEX_CONFIRM_S = 5.0


class FrameStore:
    """The frames object store and the frame index, with a cache of recent pastes bounded by bytes."""

    def __init__(self, tract: Tract, cache_bytes: int = 64 << 20, remembered_refs: int = 65536) -> None:
        self.tract = tract
        self._cache = PasteCache(cache_bytes)
        # A ref is the hash of its content, so "already stored" never goes stale; refs are of one size, so their
        # number bounds their bytes (about 7 MB at the default).
        self._stored: OrderedDict[str, None] = OrderedDict()
        self._stored_size = remembered_refs
        self._store: ObjectStore | None = None
        self._raw: ObjectStore | None = None
        self._uploads: list[ObjectStore] | None = None
        self._index: KeyValue | None = None

    async def _objects(self) -> ObjectStore:
        if self._store is None:
            self._store = await self.tract.js.object_store(self.tract.subjects.frames_bucket)
        return self._store

    async def _raw_objects(self) -> ObjectStore:
        if self._raw is None:
            self._raw = await self.tract.js.object_store(self.tract.subjects.raw_bucket)
        return self._raw

    async def _uploaded_objects(self) -> list[ObjectStore]:
        """The uploads buckets: the shared one, then each named sender's own."""
        if self._uploads is None:
            subjects = self.tract.subjects
            buckets = (subjects.uploads_bucket, *(subjects.uploads_bucket_of(sender) for sender in SENDERS))
            self._uploads = [await self.tract.js.object_store(bucket) for bucket in buckets]
        return self._uploads

    async def store_raw(self, text: str, ref: str) -> None:
        """Keep a paste as received (it held secrets) where only the stomach can read it."""
        raw = await self._raw_objects()
        if ref not in self._stored:
            try:
                await raw.get_info(_hex(ref))
            except ObjectNotFoundError:
                await raw.put(_hex(ref), text.encode("utf-8", "surrogatepass"))
            _keep_recent(self._stored, ref, None, self._stored_size)
        self._cache.keep(ref, text)

    async def store_raw_file(self, path: Path, ref: str) -> None:
        """``store_raw`` for a paste in a file, streamed from it."""
        if ref not in self._stored:
            await _put_file(await self._raw_objects(), _hex(ref), path)
            _keep_recent(self._stored, ref, None, self._stored_size)

    async def store_file(self, path: Path, ref: str, records: list[FrameRecord]) -> None:
        """``store`` for a paste in a file: one that fits a message goes to the index, a larger one is streamed."""
        writes = [await self._record_write(record) for record in records]
        unstored = ref not in self._stored
        if unstored:
            if path.stat().st_size <= self._inline_paste_bytes():
                writes.append((_PASTE_KEY_PREFIX + _hex(ref), await asyncio.to_thread(path.read_bytes)))
            else:
                await _put_file(await self._objects(), _hex(ref), path)
        await self._write_index(writes)
        if unstored:
            _keep_recent(self._stored, ref, None, self._stored_size)

    async def fetch_paste_into(self, ref: str, path: Path) -> None:
        """Write the paste stored under ``ref`` to ``path``, a large one streamed; the reader checks its digest."""
        try:
            data = await self._index_value(_PASTE_KEY_PREFIX + _hex(ref))
        except KeyNotFoundError:
            pass
        else:
            await asyncio.to_thread(path.write_bytes, data)
            return
        for store in await self._paste_stores():
            with path.open("wb") as file:
                try:
                    await store.get(_hex(ref), writeinto=file)
                    return
                except ObjectNotFoundError:
                    continue
        raise FrameNotFound(f"no paste {ref} in the frames store")

    async def paste_size(self, ref: str) -> int:
        """The bytes of the paste stored under ``ref``: of the paste this stomach holds in memory, else asked of
        the store without fetching it (a deferred paste's follow-up comes back to the stomach that stored it)."""
        cached = self._cache.get(ref)
        if cached is not None:
            return utf8_size(cached)
        for store in await self._paste_stores():
            try:
                info = await store.get_info(_hex(ref))
            except ObjectNotFoundError:
                continue
            return int(info.size or 0)
        try:
            return len(await self._index_value(_PASTE_KEY_PREFIX + _hex(ref)))
        except KeyNotFoundError as error:
            raise FrameNotFound(f"no paste {ref} in the frames store") from error

    async def _paste_stores(self) -> list[ObjectStore]:
        """Where a paste too large for one message may be, in the order ``get_paste`` looks: the frames store,
        the raw store, then the uploads buckets, where its sender put it."""
        return [await self._objects(), await self._raw_objects(), *await self._uploaded_objects()]

    async def store(self, text: str, ref: str, records: list[FrameRecord]) -> None:
        """Store the paste under ``ref`` (unless this stomach already has) and every frame's record;
        returns once all are acknowledged."""
        writes = [await self._record_write(record) for record in records]
        unstored = ref not in self._stored
        if unstored:
            data = text.encode("utf-8", "surrogatepass")
            if len(data) <= self._inline_paste_bytes():
                writes.append((_PASTE_KEY_PREFIX + _hex(ref), data))
            else:
                await self._put_object(ref, data)
        await self._write_index(writes)
        if unstored:
            _keep_recent(self._stored, ref, None, self._stored_size)
        self._cache.keep(ref, text)

    async def _record_write(self, record: FrameRecord) -> tuple[str, bytes]:
        """A frame's key and record; a record too large for a message names its compact content, stored apart."""
        value = encode(record)
        if len(value) > self._inline_paste_bytes():
            compact = await frame_by_reference(self.tract, record.compact)
            value = encode(msgspec.structs.replace(record, compact=compact))
        return _hex(record.compact.id), value

    def _inline_paste_bytes(self) -> int:
        return inline_room(self.tract)

    async def _put_object(self, ref: str, data: bytes) -> None:
        await put_once(await self._objects(), _hex(ref), data)

    async def _write_index(self, writes: list[tuple[str, bytes]]) -> None:
        bucket = self.tract.subjects.frame_index_bucket
        futures = [await self.tract.js.publish_async(f"$KV.{bucket}.{key}", value) for key, value in writes]
        # A server with room confirms these in milliseconds; one without (a full disk) answers none, and the paste
        # is held and tried again after this wait, so it bounds how soon the tract resumes once room returns.
        await asyncio.wait_for(asyncio.gather(*futures), timeout=INDEX_CONFIRM_S)

    async def get_paste(self, ref: str) -> str:
        """The paste stored under ``ref``; its bytes are checked against the ref."""
        cached = self._cache.get(ref)
        if cached is not None:
            return cached
        data = await self._stored_bytes(ref)
        if digest_bytes(data) != ref:
            raise PoisonError(f"stored paste {ref} does not match its digest")
        text = data.decode("utf-8", "surrogatepass")
        self._cache.keep(ref, text)
        return text

    async def _stored_bytes(self, ref: str) -> bytes:
        try:
            return await self._index_value(_PASTE_KEY_PREFIX + _hex(ref))
        except KeyNotFoundError:
            pass
        store = await self._objects()
        try:
            result = await store.get(_hex(ref))
        except ObjectNotFoundError:
            result = await self._raw_object(ref)
        return bytes(result.data or b"")

    async def _raw_object(self, ref: str) -> ObjectStore.ObjectResult:
        try:
            return await (await self._raw_objects()).get(_hex(ref))
        except ObjectNotFoundError:
            pass
        # A paste too large for one message, as its sender uploaded it: read once, then kept in the frames store.
        for uploads in await self._uploaded_objects():
            try:
                return await uploads.get(_hex(ref))
            except ObjectNotFoundError:
                continue
        raise FrameNotFound(f"no paste {ref} in the frames store")

    async def _index_value(self, key: str) -> bytes:
        if self._index is None:
            self._index = await self.tract.js.key_value(self.tract.subjects.frame_index_bucket)
        entry = await self._index.get(key)
        return entry.value or b""

    async def own(self, sender: str, frame_ids: Iterable[str]) -> None:
        """Record that ``sender`` handed in these frames: a tenant is served only the frames it handed in."""
        await self._write_index([(f"{_OWNER_KEY_PREFIX}{sender}.{_hex(frame_id)}", b"") for frame_id in frame_ids])

    async def resolve(self, prefix: str, owner: str | None = None) -> str:
        """The id (``blake3:<64 hex>``) of the one frame whose hex starts with ``prefix``: among the frames
        ``owner`` handed in (a tenant), or among all of them (``None``: the shared frames subject, which an open
        tract's clients ask and, under security, only ``admin`` may publish to).

        ``FrameNotFound`` when none or several match, in the same words for either: another tenant's frame is
        not among a tenant's, so its prefix gets the answer a prefix of no frame at all gets."""
        found = await self._frames_starting(prefix, owner)
        if not found:
            raise FrameNotFound(f"no frame starts with {prefix}")
        if len(found) > 1:
            shown = ", ".join(_hex(frame_id)[:16] for frame_id in found[:5])
            raise FrameNotFound(f"{len(found)} frames start with {prefix} ({shown}…): give more digits")
        return found[0]

    async def _frames_starting(self, prefix: str, owner: str | None) -> list[str]:
        bucket = self.tract.subjects.frame_index_bucket
        # A frame's own key is its bare hex; an owner's mark of it is the same hex under the owner's prefix.
        keys = f"$KV.{bucket}." if owner is None else f"$KV.{bucket}.{_OWNER_KEY_PREFIX}{owner}."
        try:
            info = await stream_info(self.tract, f"KV_{bucket}", subjects_filter=f"{keys}>")
        except NotFoundError:
            return []
        subjects = info.state.subjects or {}
        return sorted(
            f"blake3:{subject.removeprefix(keys)}" for subject in subjects if subject.startswith(keys + prefix)
        )

    async def owned_by(self, sender: str, frame_id: str) -> bool:
        try:
            await self._index_value(f"{_OWNER_KEY_PREFIX}{sender}.{_hex(frame_id)}")
        except KeyNotFoundError:
            return False
        return True

    async def record(self, frame_id: str) -> FrameRecord:
        try:
            return decode_frame_record(await self._index_value(_hex(frame_id)))
        except KeyNotFoundError as error:
            raise FrameNotFound(f"no frame {frame_id}") from error


async def _put_file(store: ObjectStore, name: str, path: Path) -> None:
    """Put the file at ``path`` under ``name`` unless it is there already, read in chunks as it is sent."""
    try:
        await store.get_info(name)
    except ObjectNotFoundError:
        with path.open("rb") as file:
            await store.put(name, file)
