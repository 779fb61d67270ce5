"""grep_frame's searches run apart: a ceiling on each one's memory, a cap on how many at once, and every
failure a tool error the model can read."""

from __future__ import annotations

import asyncio

import pytest

from envelopes.types import Frame
from organs.mcp.sandbox import GrepPool, SearchRefused
from organs.mcp.tools import call_tool
from tests.support.envelopes import served_frame

TEXT = "\n".join(f"line {number} {'ERROR boom' if number % 10 == 0 else 'ok'}" for number in range(1, 101))


async def test_a_search_runs_apart_and_finds_what_the_pure_search_finds() -> None:
    pool = GrepPool(workers=1)
    try:
        result = await pool.grep(TEXT, "ERROR", ignore_case=False, context=0, max_matches=50)
    finally:
        pool.close()
    assert result.matches == 10 and result.shown[0] == (10, True, "line 10 ERROR boom")


async def test_a_search_that_needs_more_memory_than_its_ceiling_is_refused_and_the_next_one_runs() -> None:
    pool = GrepPool(workers=1, memory_bytes=16 << 20)
    try:
        # 40 MB of text cannot even arrive in a worker capped at 16 MB more than it started with.
        with pytest.raises(SearchRefused, match=r"MiB|out of memory"):
            await pool.grep("x" * (40 << 20), "y", ignore_case=False, context=0, max_matches=1)
        assert (await pool.grep(TEXT, "boom", ignore_case=False, context=0, max_matches=5)).matches == 5
    finally:
        pool.close()


async def test_calls_beyond_the_concurrency_cap_are_refused_at_once() -> None:
    pool = GrepPool(workers=1)
    try:
        first = asyncio.ensure_future(pool.grep(TEXT, "ok", ignore_case=False, context=0, max_matches=5))
        await asyncio.sleep(0)  # the first is in flight (its worker is still starting)
        with pytest.raises(SearchRefused, match="1 searches are running already"):
            await pool.grep(TEXT, "ok", ignore_case=False, context=0, max_matches=5)
        assert (await first).matches == 5
    finally:
        pool.close()


class _BrokenSource:
    """A frame source whose lookups fail in a way no tool expects."""

    async def frame(self, frame_id: str, *, full: bool) -> Frame:
        raise RuntimeError("the frame cache is corrupt")


async def test_an_unexpected_failure_is_a_tool_error_with_a_message_not_a_protocol_error() -> None:
    pool = GrepPool(workers=1)
    frame_id = served_frame("ERROR boom").id
    try:
        for name, arguments in (
            ("get_frame", {"id": frame_id}),
            ("grep_frame", {"id": frame_id, "pattern": "boom"}),
            ("frame_lines", {"id": frame_id, "start": 1, "end": 1}),
        ):
            result = await call_tool(_BrokenSource(), name, arguments, pool)
            assert result.is_error, name
            assert "the server failed to answer (RuntimeError)" in result.content[0].text  # type: ignore[union-attr]
    finally:
        pool.close()


async def test_a_recursive_pattern_is_refused_as_a_tool_error() -> None:
    pool = GrepPool(workers=1)
    try:
        result = await call_tool(_BrokenSource(), "grep_frame", {"id": served_frame("x").id, "pattern": "(?0)"}, pool)
    finally:
        pool.close()
    assert result.is_error
    assert "recursion and subroutine calls" in result.content[0].text  # type: ignore[union-attr]
