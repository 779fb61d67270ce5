"""What a scrape reads from the server: the organ's dead letters and the usage of the streams it uses.

Read from the streams themselves at each scrape, so the figures survive any restart of the organ and
every replica reports the same. Each organ asks only about the streams its user may ask about (under
``--secure``, ``organs.operations.security``): the tract, the dead letters, and its own stores. A stream the
server does not answer about is left out of that scrape rather than made up.
"""

from __future__ import annotations

import asyncio

import nats.errors

from envelopes.subjects import Subjects
from organs.anatomy import BORDER, STOMACH
from organs.errors import PermissionRefused
from organs.runtime.bus import Tract, stream_info
from organs.runtime.metrics import StreamUsage, TractUsage

__all__ = ["organ_streams", "read_usage"]

_ASK_TIMEOUT_S = 1.0
_UNANSWERED = (PermissionRefused, TimeoutError, nats.errors.Error)


def organ_streams(subjects: Subjects, organ: str) -> tuple[str, ...]:
    """The streams whose usage ``organ`` reports: the tract's and the dead letters', then its own stores."""
    streams = [subjects.tract_stream, subjects.dlq_stream]
    if organ == STOMACH.name:
        streams += [
            f"OBJ_{subjects.frames_bucket}",
            f"OBJ_{subjects.raw_bucket}",
            f"OBJ_{subjects.uploads_bucket}",
            f"KV_{subjects.frame_index_bucket}",
        ]
    if organ == BORDER.name:
        streams += [
            f"KV_{bucket}" for bucket in (subjects.sessions_bucket, subjects.rates_bucket, subjects.admitted_bucket)
        ]
    return tuple(streams)


async def _usage_of(tract: Tract, stream: str) -> StreamUsage | None:
    try:
        info = await asyncio.wait_for(stream_info(tract, stream), timeout=_ASK_TIMEOUT_S)
    except _UNANSWERED:
        return None
    limit = info.config.max_bytes
    return StreamUsage(
        stream=stream,
        messages=info.state.messages,
        bytes=info.state.bytes,
        max_bytes=limit if limit is not None and limit > 0 else None,
    )


async def _dead_letters(tract: Tract, organ: str) -> int | None:
    subjects = tract.subjects
    try:
        info = await asyncio.wait_for(
            stream_info(tract, subjects.dlq_stream, subjects_filter=subjects.dlq(organ)), timeout=_ASK_TIMEOUT_S
        )
    except _UNANSWERED:
        return None
    return int((info.state.subjects or {}).get(subjects.dlq(organ), 0))


async def read_usage(tract: Tract, organ: str) -> TractUsage:
    usages = [await _usage_of(tract, stream) for stream in organ_streams(tract.subjects, organ)]
    return TractUsage(
        dead_letters=await _dead_letters(tract, organ), streams=tuple(usage for usage in usages if usage is not None)
    )
