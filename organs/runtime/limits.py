"""How much the server keeps: a byte limit and an age for every stream and store of the tract.

Each limit refuses new writes when reached (``discard: new``) rather than drop what is stored:
an envelope not yet digested, a dead letter or a frame is never deleted to make room. A
refused write is named in the worker's log and by ``ichor status``. 0 means "no limit".

The server reserves every stream's ``max_bytes`` against its own storage limit
(``max_file_store``, by default three quarters of the free disk) when the stream is created,
so the defaults add up to about 3.6 GiB per server (the uploads buckets included).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from nats.js import JetStreamContext, api
from nats.js.errors import BadRequestError, NotFoundError

from envelopes.subjects import Subjects
from organs.anatomy import SENDERS

__all__ = [
    "DAY_S",
    "GIB",
    "MIB",
    "UPLOADS_TTL_S",
    "StoreLimits",
    "apply_bucket_limits",
    "object_store_config",
    "stream_limits",
]

MIB = 1 << 20
GIB = 1 << 30
DAY_S = 24 * 3600
# How long an uploaded paste waits for the stomach: far longer than any redelivery schedule.
UPLOADS_TTL_S = float(DAY_S)


@dataclass(frozen=True)
class StoreLimits:
    """The documented defaults; the ``ICHOR_*`` settings of the same names override them."""

    tract_max_bytes: int = 1 * GIB
    dlq_max_bytes: int = 256 * MIB
    dlq_max_age_s: float = 30 * DAY_S
    frames_max_bytes: int = 1 * GIB
    raw_max_bytes: int = 256 * MIB
    index_max_bytes: int = 64 * MIB
    store_max_age_s: float = 30 * DAY_S
    """Frames, raw pastes and the frame index alike: a frame outlives the envelopes that name it."""
    uploads_max_bytes: int = 256 * MIB
    """The uploads bucket of senders without one of their own (a tract without ``--secure`` users)."""
    uploads_sender_max_bytes: int = 256 * MIB
    """Each named sender's own uploads bucket: its quota, for the day its uploads are kept."""

    def bucket_limits(self, subjects: Subjects) -> dict[str, tuple[int, float]]:
        """The backing stream of each bucket, with its (max bytes, max age)."""
        return {
            f"OBJ_{subjects.frames_bucket}": (self.frames_max_bytes, self.store_max_age_s),
            f"OBJ_{subjects.raw_bucket}": (self.raw_max_bytes, self.store_max_age_s),
            f"KV_{subjects.frame_index_bucket}": (self.index_max_bytes, self.store_max_age_s),
            **{f"OBJ_{bucket}": (max_bytes, UPLOADS_TTL_S) for bucket, max_bytes in self.uploads(subjects).items()},
        }

    def uploads(self, subjects: Subjects) -> dict[str, int]:
        """Each uploads bucket, with its byte limit: the shared one, and one per sender (its quota)."""
        return {
            subjects.uploads_bucket: self.uploads_max_bytes,
            **{subjects.uploads_bucket_of(sender): self.uploads_sender_max_bytes for sender in SENDERS},
        }


def _bytes(limit: int) -> int:
    return limit if limit > 0 else -1


def _age(limit: float) -> float | None:
    return limit if limit > 0 else None


def stream_limits(max_bytes: int, max_age_s: float = 0.0) -> dict[str, Any]:
    """The ``StreamConfig`` fields of a limit that refuses new writes when reached."""
    limits: dict[str, Any] = {"max_bytes": _bytes(max_bytes), "discard": api.DiscardPolicy.NEW}
    if max_age_s > 0:
        limits["max_age"] = max_age_s
    return limits


def object_store_config(bucket: str, max_bytes: int, max_age_s: float, replicas: int) -> api.ObjectStoreConfig:
    return api.ObjectStoreConfig(
        bucket=bucket,
        storage=api.StorageType.FILE,
        replicas=replicas,
        max_bytes=_bytes(max_bytes),
        ttl=_age(max_age_s),
    )


async def apply_bucket_limits(js: JetStreamContext, subjects: Subjects, limits: StoreLimits) -> None:
    """Bring buckets made before their limits were set (or changed) to the configured ones."""
    for stream, (max_bytes, max_age_s) in limits.bucket_limits(subjects).items():
        try:
            info = await js.stream_info(stream)
        except NotFoundError:
            continue
        config = info.config
        wanted_age = _age(max_age_s)
        if config.max_bytes == _bytes(max_bytes) and (config.max_age or None) == wanted_age:
            continue
        config.max_bytes = _bytes(max_bytes)
        config.max_age = wanted_age or 0
        # A limit the server cannot reserve leaves the bucket as it was; provisioning says so elsewhere.
        with contextlib.suppress(BadRequestError):
            await js.update_stream(config)
