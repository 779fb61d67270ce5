"""Large pastes: refused above a maximum, otherwise each digested by a child process, apart.

A digest of tens of megabytes spends seconds at a time inside C calls that hold the GIL (splitting,
translating, hashing the whole text); on a thread beside the worker's event loop it stalled every
small paste, heartbeat and ack for as long (measured: small pastes' p99 84 times their p99 alone
beside a 50 MB paste). A child process takes a core of its own and never the loop.

The child moves the paste's bytes too, over a connection of its own as the worker's user: it
fetches the paste from the store into a temporary file, digests it, and stores what it made. Each
50 MB fetch kept the worker's event loop busy for over a second with the client's chunk handling,
and the small pastes published meanwhile were the slowest of the run (their p99 was 2.2 to 3.8
times their p99 alone, against a goal of 2). The file also means the worker holds no copy of a large
paste in memory. A fresh child digests each large paste and exits, which hands its peak memory back
to the system at once instead of keeping it in an idle process. A digest too large for a message (a paste
that is one long ask, or evidence served whole under a large budget) has its goal and frames' contents stored
by the child as well, and the parts it hands back name them. Running ``python -m
organs.stomach.large`` is the child: it reads a ``LargeDigestRequest`` on stdin and writes a
``LargeDigestReply`` on stdout. A request without ``bus`` only digests the file it names (the
memory benchmark measures the digest alone that way).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import msgspec

from organs.errors import FrameNotFound, PoisonError, TransientError
from organs.runtime.bus import BusSettings, connect
from organs.runtime.stored_text import digest_by_reference
from organs.settings import Settings, variable_of
from organs.stomach.core.ingest import IngestConfig
from organs.stomach.core.parts import DigestParts, digest_parts
from organs.stomach.frames_store import FrameStore
from organs.text_views import HandedText

__all__ = [
    "ApartDigester",
    "LargeDigestReply",
    "LargeDigestRequest",
    "PasteLimits",
    "digest_file",
    "digest_on_the_bus",
]

_UTF8 = ("utf-8", "surrogatepass")
_DEFAULTS = Settings()
CHILD_NICENESS = 10
ORPHAN_CHECK_S = 0.5


@dataclass(frozen=True)
class PasteLimits:
    """``ICHOR_LARGE_PASTE_BYTES`` and ``ICHOR_MAX_PASTE_BYTES`` (see ``organs.settings`` for the defaults)."""

    large_bytes: int = _DEFAULTS.large_paste_bytes
    max_bytes: int = _DEFAULTS.max_paste_bytes

    @classmethod
    def from_settings(cls, settings: Settings) -> PasteLimits:
        return cls(large_bytes=settings.large_paste_bytes, max_bytes=settings.max_paste_bytes)

    def is_large(self, size: int) -> bool:
        return size > self.large_bytes

    def refusal(self, size: int) -> str | None:
        """Why a paste of ``size`` bytes is refused, or ``None`` when it is not."""
        if size <= self.max_bytes:
            return None
        return (
            f"paste.too_large: the paste is {size:,} bytes, more than {variable_of('max_paste_bytes')}="
            f"{self.max_bytes:,}; split it, or raise the limit"
        )


class LargeDigestRequest(msgspec.Struct, frozen=True):
    """Digest the paste in ``paste_path``; with ``bus``, fetch it there first when ``fetch_ref`` names a stored
    paste, and store the parts after."""

    paste_path: str
    redacted_path: str
    config: IngestConfig
    intent: str | None
    expected: str
    bus: BusSettings | None = None
    fetch_ref: str | None = None


class LargeDigestReply(msgspec.Struct, frozen=True):
    parts: DigestParts | None = None
    poison: str | None = None


def digest_file(request: LargeDigestRequest) -> LargeDigestReply:
    """The child's work: digest the paste in ``paste_path``; a redacted text goes to ``redacted_path``."""
    # Handed over, not held here: the digest lets the paste go once it is cut into blocks.
    text = HandedText(Path(request.paste_path).read_bytes().decode(*_UTF8))
    try:
        parts, redacted = digest_parts(text, request.config, request.intent, request.expected)
    except PoisonError as error:
        return LargeDigestReply(poison=str(error))
    except Exception as error:
        return LargeDigestReply(poison=f"core raised {type(error).__name__}: {error}")
    if redacted is not None:
        Path(request.redacted_path).write_bytes(redacted.encode(*_UTF8))
    return LargeDigestReply(parts=parts)


async def digest_on_the_bus(request: LargeDigestRequest) -> LargeDigestReply:
    """The child's work with ``bus`` set: fetch, digest (on a thread, so the connection answers the server's
    pings meanwhile), store."""
    assert request.bus is not None
    tract = await connect(request.bus, f"{request.bus.instance}-large-{os.getpid()}", persistent=False)
    try:
        store = FrameStore(tract)
        paste, redacted = Path(request.paste_path), Path(request.redacted_path)
        if request.fetch_ref is not None:
            try:
                await store.fetch_paste_into(request.fetch_ref, paste)
            except FrameNotFound as error:
                return LargeDigestReply(poison=str(error))
        reply = await asyncio.to_thread(digest_file, request)
        if reply.parts is None:
            return reply
        await _store_parts(store, reply.parts, paste, redacted)
        # Stored here, not by the worker, so that the worker never holds a goal or a frame of the paste's size.
        payload = await digest_by_reference(tract, reply.parts.payload)
        return msgspec.structs.replace(reply, parts=msgspec.structs.replace(reply.parts, payload=payload))
    finally:
        await tract.nc.close()


async def _store_parts(store: FrameStore, parts: DigestParts, paste: Path, redacted: Path) -> None:
    if parts.served_ref == parts.source_digest:
        await store.store_file(paste, parts.source_digest, list(parts.records))
        return
    # It held secrets: served redacted, and kept as received where only the stomach's user reads.
    await store.store_raw_file(paste, parts.source_digest)
    await store.store_file(redacted, parts.served_ref, list(parts.records))


async def _digest_in_child(request: LargeDigestRequest) -> DigestParts:
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        __name__,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await child.communicate(msgspec.msgpack.encode(request))
    except BaseException:
        # A worker stopping (or an input given up) takes its child with it.
        with contextlib.suppress(ProcessLookupError):
            child.kill()
        await child.wait()
        raise
    if child.returncode != 0:
        # Killed (out of memory, say) or broken: the input comes back, and is dead-lettered once its deliveries
        # run out, with this reason in the log of each attempt.
        last = err.decode(errors="replace").strip().splitlines()[-1:] or [""]
        raise TransientError(f"the large-paste digester exited with {child.returncode}: {last[0]}")
    reply = msgspec.msgpack.decode(out, type=LargeDigestReply)
    if reply.poison is not None:
        raise PoisonError(reply.poison)
    assert reply.parts is not None
    return reply.parts


class ApartDigester:
    """Digests large pastes in child processes, and keeps a deferred paste's file for its follow-up.

    A large paste is digested twice: at once, deferred, and later in full. When the follow-up comes back to
    this worker, the file the first digest fetched is still on disk, and the paste is not fetched again (a
    50 MB fetch is over a second of the server's and the digester's time). At most ``keep_bytes`` are kept,
    the oldest paste first to go; a follow-up another replica takes fetches the paste as before.
    """

    def __init__(self, bus: BusSettings, keep_bytes: int) -> None:
        self.bus = bus
        self.keep_bytes = keep_bytes
        self._folder = tempfile.TemporaryDirectory(prefix="ichor-large-kept-")
        atexit.register(self._folder.cleanup)
        self._kept: OrderedDict[str, int] = OrderedDict()

    def kept(self) -> list[str]:
        """The refs of the pastes kept on disk, oldest first."""
        return list(self._kept)

    def _kept_path(self, ref: str) -> Path:
        return Path(self._folder.name, ref.removeprefix("blake3:"))

    def _keep(self, ref: str, path: Path) -> None:
        size = path.stat().st_size
        if size > self.keep_bytes or ref in self._kept:
            return
        path.replace(self._kept_path(ref))
        self._kept[ref] = size
        while sum(self._kept.values()) > self.keep_bytes:
            dropped, _ = self._kept.popitem(last=False)
            self._kept_path(dropped).unlink(missing_ok=True)

    def _take(self, ref: str, path: Path) -> bool:
        if self._kept.pop(ref, None) is None:
            return False
        self._kept_path(ref).replace(path)
        return True

    async def digest(
        self, *, ref: str | None, text: str | None, config: IngestConfig, intent: str | None, expected: str
    ) -> DigestParts:
        """Digest a large paste (stored under ``ref``, or given as ``text``) in a child process that stores its
        parts."""
        with tempfile.TemporaryDirectory(prefix="ichor-large-") as folder:
            paste, redacted = Path(folder, "paste"), Path(folder, "redacted")
            fetch_ref = None
            if text is not None:
                await asyncio.to_thread(paste.write_bytes, text.encode(*_UTF8))
            elif ref is None or not self._take(ref, paste):
                fetch_ref = ref
            request = LargeDigestRequest(
                str(paste), str(redacted), config, intent, expected, bus=self.bus, fetch_ref=fetch_ref
            )
            parts = await _digest_in_child(request)
            if parts.tier == "deferred":
                self._keep(parts.source_digest, paste)
            return parts


def _exit_when_orphaned(parent: int) -> None:
    """A worker killed outright (SIGKILL, out of memory) cannot kill its digester; the digester then stops itself."""
    while os.getppid() == parent:
        time.sleep(ORPHAN_CHECK_S)
    os._exit(1)


def _main() -> None:
    threading.Thread(target=_exit_when_orphaned, args=(os.getppid(),), daemon=True).start()
    # Background work: on a busy machine the scheduler serves the tract's small pastes first.
    with contextlib.suppress(OSError):
        os.nice(CHILD_NICENESS)
    request = msgspec.msgpack.decode(sys.stdin.buffer.read(), type=LargeDigestRequest)
    reply = digest_file(request) if request.bus is None else asyncio.run(digest_on_the_bus(request))
    sys.stdout.buffer.write(msgspec.msgpack.encode(reply))
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    _main()
