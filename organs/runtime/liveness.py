"""A worker process's liveness signal: a file it touches while it makes progress, read by its supervisor.

A process that runs is not yet an organ that works: its connection may be closed for good, its
event loop stuck, its consumer loop wedged. The organ touches its liveness file (``ICHOR_LIVENESS_FILE``)
once a second only while its event loop runs and every consumer loop has turned lately on a connection
that is not closed; ``ichor up``'s supervisor restarts a worker whose file is older than
``STALE_AFTER_S``. A worker waiting for a server that is away still turns its loops, so it is not
restarted for that: a restart would not bring the server back.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from organs.runtime.pulling import sleep_unless

if TYPE_CHECKING:
    from organs.runtime.worker import Worker

__all__ = ["BEAT_S", "STALE_AFTER_S", "TURN_STALE_S", "beat_age_s", "beat_while", "making_progress", "touch"]

BEAT_S = 1.0
# A consumer loop turns at least once per fetch expiry (1 s), or per JetStream API timeout (10 s) when
# its server is slow to bind it; one that has not turned for this long is wedged.
TURN_STALE_S = 30.0
# The supervisor's patience with a file that is not touched (a loaded 2-core machine gets slack).
STALE_AFTER_S = 45.0


def touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()


async def beat_while(path: Path, alive: Callable[[], bool], stop: asyncio.Event) -> None:
    """Touch ``path`` every ``BEAT_S`` while ``alive()``, until ``stop`` is set."""
    while not stop.is_set():
        if alive():
            # A full disk or a removed directory only means no beat: the supervisor then judges.
            with contextlib.suppress(OSError):
                touch(path)
        await sleep_unless(stop, BEAT_S)


def making_progress(workers: list[Worker]) -> bool:
    """Every consumer loop turned within ``TURN_STALE_S`` on a connection that is not closed (or none yet:
    the organ is starting)."""
    now = time.monotonic()
    return all(not worker.tract.nc.is_closed and now - worker.last_turn < TURN_STALE_S for worker in workers)


def beat_age_s(path: Path, since: float) -> float:
    """Seconds since ``path`` was last touched, or since ``since`` (wall-clock) if it was not touched after it."""
    try:
        touched = path.stat().st_mtime
    except OSError:
        touched = since
    return time.time() - max(touched, since)
