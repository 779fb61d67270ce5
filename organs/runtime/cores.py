"""Where an organ's pure core runs: on the event loop for a small input, on a thread for a large one."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["INLINE_CORE_CHARS", "call_core"]


# Up to this many characters of input, a pure core runs on the event loop: it then takes a few
# milliseconds, and measured under a burst, handing it to a thread cost the stomach and the border
# about a third more CPU per input (the GIL passing between the thread and the loop).
INLINE_CORE_CHARS = 64 * 1024

_P = ParamSpec("_P")
_T = TypeVar("_T")


async def call_core(size: int, core: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """``core(*args, **kwargs)`` for an input of ``size`` characters: inline when small, else on a thread
    so that a long digest does not stall the loop's other inputs, heartbeats and acks."""
    if size <= INLINE_CORE_CHARS:
        return core(*args, **kwargs)
    return await asyncio.to_thread(core, *args, **kwargs)
