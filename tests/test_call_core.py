"""Where a pure core runs: on the event loop when its input is small, on a thread when it is large."""

from __future__ import annotations

import threading

import pytest

from organs.runtime import INLINE_CORE_CHARS, call_core


def _thread_of(_text: str, *, tag: str) -> tuple[int, str]:
    return threading.get_ident(), tag


async def test_a_small_input_runs_inline_and_a_large_one_on_a_thread() -> None:
    loop_thread = threading.get_ident()
    small = await call_core(INLINE_CORE_CHARS, _thread_of, "x", tag="small")
    large = await call_core(INLINE_CORE_CHARS + 1, _thread_of, "x", tag="large")
    assert small == (loop_thread, "small")
    assert large[0] != loop_thread and large[1] == "large"


@pytest.mark.parametrize("size", [1, INLINE_CORE_CHARS + 1])
async def test_a_core_error_reaches_the_caller_either_way(size: int) -> None:
    def failing(_size: int) -> None:
        raise ValueError("bad paste")

    with pytest.raises(ValueError, match="bad paste"):
        await call_core(size, failing, size)
