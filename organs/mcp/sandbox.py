"""Where ``grep_frame`` searches: apart from the server, each search with a ceiling on its memory.

A pattern comes from a model. The checks of ``organs.mcp.grep`` refuse what is known to run away
and the search has a deadline, but neither bounds memory. So each search runs in a worker
process whose address space is capped (``MAX_CALL_BYTES`` over what the process held when it
started): a search that needs more fails there with ``MemoryError`` (or the worker dies), and
the server, untouched, answers with a tool error. At most ``MAX_CONCURRENT_CALLS`` searches run
at once; a call beyond that is refused at once rather than queued without end.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from organs.mcp.grep import GrepResult, grep_lines, safe_pattern

__all__ = ["MAX_CALL_BYTES", "MAX_CONCURRENT_CALLS", "GrepPool", "SearchRefused"]

MAX_CALL_BYTES = 512 << 20
MAX_CONCURRENT_CALLS = 4


class SearchRefused(Exception):
    """A search that was not run, or failed where it ran; the message says why, for the model."""


def _cap_memory(limit: int) -> None:
    """Cap this (worker) process's address space at what it holds now plus ``limit`` bytes."""
    import resource

    with open("/proc/self/statm") as statm:
        held = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (held + limit, held + limit))


def _search(text: str, pattern: str, ignore_case: bool, context: int, max_matches: int) -> GrepResult:
    # Compiled here, from the pattern the server already checked: a compiled pattern does not cross processes.
    return grep_lines(text, safe_pattern(pattern, ignore_case=ignore_case), context=context, max_matches=max_matches)


class GrepPool:
    """Worker processes for searches (started on first use), ``workers`` at once, each capped at ``memory_bytes``."""

    def __init__(self, workers: int = MAX_CONCURRENT_CALLS, memory_bytes: int = MAX_CALL_BYTES) -> None:
        self.workers = workers
        self.memory_bytes = memory_bytes
        self._running = 0
        self._pool: ProcessPoolExecutor | None = None

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # Spawned, not forked: the server's threads and bus connection stay out of the workers.
            self._pool = ProcessPoolExecutor(
                self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_cap_memory,
                initargs=(self.memory_bytes,),
            )
        return self._pool

    async def grep(self, text: str, pattern: str, *, ignore_case: bool, context: int, max_matches: int) -> GrepResult:
        if self._running >= self.workers:
            raise SearchRefused(f"{self.workers} searches are running already (the most at once); try again shortly")
        self._running += 1
        try:
            loop = asyncio.get_running_loop()
            job = (text, pattern, ignore_case, context, max_matches)
            return await loop.run_in_executor(self._executor(), _search, *job)
        except MemoryError:
            raise SearchRefused(
                f"the search needed more than {self.memory_bytes >> 20} MiB; use a narrower pattern or frame_lines"
            ) from None
        except BrokenProcessPool:
            # A worker died (killed for its memory, say): start afresh for the next call.
            self.close()
            raise SearchRefused("the search's worker died (out of memory?); use a narrower pattern") from None
        finally:
            self._running -= 1

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
