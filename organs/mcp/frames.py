"""Where ``ichor mcp`` gets frames: the stomach, over ``<prefix>.frames.get``.

The connection is made on first use and made again after the bus went away, so
the server starts (and answers every call) whether or not the bus is up; a call
that cannot reach it fails with ``FrameUnavailable`` saying so. A full frame too
large for one message is read where the stomach keeps it (the frame index and
the frames object store), and so is the text of a compact frame the stomach
answers by reference (``Frame.content_ref``: it would not fit the reply). Full
texts are cached by id: an id is the digest of its text, so a cached text is
never stale.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Protocol

import nats.errors

from envelopes.types import Frame
from organs.client import fetch_frame, frames_subject
from organs.errors import FrameTampered, IchorError, PoisonError
from organs.frame_check import whole_frame
from organs.runtime.bus import BusSettings, Tract, connect, inline_room
from organs.runtime.stored_text import with_frame_text

__all__ = ["BusFrames", "FrameSource", "FrameUnavailable", "UnknownFrame"]


class FrameUnavailable(Exception):
    """The frame could not be fetched (the bus or the stomach is away); the message says what to do."""


class UnknownFrame(FrameUnavailable):
    """The stomach answered: no such frame, or a malformed id."""


class FrameSource(Protocol):
    async def frame(self, frame_id: str, *, full: bool) -> Frame: ...


class BusFrames:
    """Frames fetched from the stomach over the bus, full texts cached up to ``cache_bytes``."""

    def __init__(self, settings: BusSettings, *, timeout: float = 10.0, cache_bytes: int = 64 << 20) -> None:
        self.settings = settings
        self.timeout = timeout
        self._tract: Tract | None = None
        self._full: OrderedDict[str, Frame] = OrderedDict()
        self._cached_bytes = 0
        self._cache_limit = cache_bytes

    async def close(self) -> None:
        if self._tract is not None and not self._tract.nc.is_closed:
            await self._tract.nc.close()
        self._tract = None

    async def _connection(self) -> Tract:
        if self._tract is None or self._tract.nc.is_closed:
            try:
                self._tract = await connect(self.settings, name="ichor-mcp", persistent=False)
            except IchorError as error:
                raise FrameUnavailable(f"the bus is down: {error}; start it with `ichor up`") from None
        return self._tract

    async def _ask(self, frame_id: str, representation: str) -> Frame:
        tract = await self._connection()
        try:
            reply = await fetch_frame(tract, frame_id, representation, timeout=self.timeout)
        except FrameTampered as error:
            raise FrameUnavailable(f"refused to serve a tampered frame: {error}") from None
        except nats.errors.NoRespondersError:
            raise FrameUnavailable(
                f"no stomach answers on {frames_subject(tract)}; are the organs up (`ichor status`)?"
            ) from None
        except (TimeoutError, nats.errors.Error, OSError) as error:
            raise FrameUnavailable(f"the bus did not answer on {frames_subject(tract)}: {error!r}") from None
        if reply.frame is None:
            raise UnknownFrame(reply.error or f"no frame {frame_id}")
        if reply.frame.content_ref is None or reply.frame.content:
            return reply.frame
        # Too large for the stomach's reply: the frame names its content in the frames store, read from there.
        try:
            return await with_frame_text(tract, reply.frame)
        except PoisonError as error:
            raise FrameUnavailable(f"refused to serve a tampered frame: {error}") from None
        except (IchorError, TimeoutError, nats.errors.Error, OSError) as error:
            raise FrameUnavailable(f"the frames store did not answer: {error!r}") from None

    async def frame(self, frame_id: str, *, full: bool) -> Frame:
        if not full:
            return await self._ask(frame_id, "compact")
        if frame_id in self._full:
            self._full.move_to_end(frame_id)
            return self._full[frame_id]
        compact = await self._ask(frame_id, "compact")
        tract = await self._connection()
        if compact.full_bytes > inline_room(tract):
            frame = await self._stored_full(tract, compact)
        else:
            frame = await self._ask(frame_id, "full")
        self._remember(frame)
        return frame

    async def _stored_full(self, tract: Tract, compact: Frame) -> Frame:
        # The stomach's own reader of its storage, so the layout is known in one place.
        from organs.stomach.frames_store import FrameNotFound, FrameStore

        store = FrameStore(tract, cache_bytes=0)
        try:
            record = await store.record(compact.id)
            text = (await store.get_paste(record.paste_ref))[record.span[0] : record.span[1]]
        except FrameNotFound as error:
            raise UnknownFrame(str(error)) from None
        except (TimeoutError, nats.errors.Error, OSError) as error:
            raise FrameUnavailable(f"the frames store did not answer: {error!r}") from None
        try:
            return whole_frame(compact, text)
        except FrameTampered as error:
            raise FrameUnavailable(f"refused to serve a tampered frame: {error}") from None

    def _remember(self, frame: Frame) -> None:
        size = len(frame.content or "")
        if size > self._cache_limit:
            return
        self._full[frame.id] = frame
        self._cached_bytes += size
        while self._cached_bytes > self._cache_limit:
            _, dropped = self._full.popitem(last=False)
            self._cached_bytes -= len(dropped.content or "")
