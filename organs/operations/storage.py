"""What ``ichor status`` says about the server's storage: JetStream down, a stream at its limit, a refusal.

A stream whose limit discards new messages refuses every write once it is full, and a server
out of storage refuses them all: the organs then look alive while nothing moves. These checks
name the cause, so that ``ichor status`` can exit non-zero with it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping

import msgspec
import nats.errors
from nats.js.errors import APIError, NotFoundError

from organs.runtime.bus import Tract
from organs.runtime.refusals import describe_bus_error

__all__ = ["FULL_AT", "StreamUse", "full_streams", "organ_refusals", "storage_problems", "tract_streams"]

# A stream this close to its limit refuses the next paste of any size.
FULL_AT = 0.95
# JetStream answers a read in milliseconds; a user without the right to ask gets no answer at all.
READ_TIMEOUT_S = 2.0


class StreamUse(msgspec.Struct, frozen=True):
    """One stream's use against its limits (``-1`` or ``0``: no limit)."""

    name: str
    bytes: int
    max_bytes: int
    messages: int
    max_msgs: int


def full_streams(streams: Iterable[StreamUse]) -> list[str]:
    """A sentence for each stream at (or within 5 % of) one of its limits."""
    problems = []
    for use in streams:
        if use.max_bytes > 0 and use.bytes >= FULL_AT * use.max_bytes:
            problems.append(
                f"stream {use.name} is at its byte limit ({use.bytes:,} of max_bytes {use.max_bytes:,}): "
                "new writes are refused; raise its ICHOR_*_MAX_BYTES, or purge it (ichor dlq purge for dead letters)"
            )
        elif use.max_msgs > 0 and use.messages >= FULL_AT * use.max_msgs:
            problems.append(
                f"stream {use.name} is at its message limit ({use.messages:,} of max_msgs {use.max_msgs:,}): "
                "new writes are refused"
            )
    return problems


def organ_refusals(metadata_by_instance: Mapping[str, Mapping[str, str]]) -> list[str]:
    """A sentence for each organ instance whose last write the server refused."""
    return [
        f"{metadata.get('organ', instance)} ({instance}): the server refused its last write: {metadata['refusal']}"
        for instance, metadata in sorted(metadata_by_instance.items())
        if metadata.get("refusal")
    ]


def tract_streams(tract: Tract) -> tuple[str, ...]:
    """The streams of the tract and of its stores."""
    subjects = tract.subjects
    return (
        subjects.tract_stream,
        subjects.dlq_stream,
        *tract.settings.limits.bucket_limits(subjects).keys(),
    )


async def storage_problems(tract: Tract) -> list[str]:
    """What keeps the server from storing the tract's writes, in words; empty when nothing does.

    A stream that does not exist yet (no organ has started) or that this user may not read is
    passed over: neither refuses a write.
    """
    js = tract.js
    try:
        account = await asyncio.wait_for(js.account_info(), timeout=READ_TIMEOUT_S)
    except (APIError, nats.errors.Error, TimeoutError) as error:
        return [f"JetStream unavailable on {tract.settings.url}: {describe_bus_error(error)}"]
    problems = []
    limit = account.limits.max_storage
    if limit > 0 and account.storage >= FULL_AT * limit:
        problems.append(f"the account's JetStream storage is full ({account.storage:,} of {limit:,} bytes)")
    # Read at once: a stream this user may not read costs one timeout, not one per stream.
    readings = await asyncio.gather(
        *(asyncio.wait_for(js.stream_info(name), timeout=READ_TIMEOUT_S) for name in tract_streams(tract)),
        return_exceptions=True,
    )
    uses = []
    for name, info in zip(tract_streams(tract), readings, strict=True):
        if isinstance(info, NotFoundError | TimeoutError | nats.errors.Error):
            continue
        if isinstance(info, APIError):
            problems.append(f"stream {name} cannot be read: {describe_bus_error(info)}")
            continue
        if isinstance(info, BaseException):
            raise info
        uses.append(
            StreamUse(
                name=name,
                bytes=info.state.bytes,
                max_bytes=info.config.max_bytes or -1,
                messages=info.state.messages,
                max_msgs=info.config.max_msgs or -1,
            )
        )
    return problems + full_streams(uses)
