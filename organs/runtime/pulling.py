"""What every pull loop of the runtime shares: which errors mean the bus, how long a fetch waits, a stoppable sleep.

The worker's consumer loop and the exhausted-deliveries loop (``organs.runtime.dead_letters``) both use them.
"""

from __future__ import annotations

import asyncio
import contextlib

import nats.errors
import nats.js.errors

from organs.errors import TransientError

__all__ = ["BUS_ERRORS", "BUS_OR_API_ERRORS", "BUS_OR_STALL_ERRORS", "FETCH_ERRORS", "FETCH_EXPIRY_S", "sleep_unless"]

# Errors that mean "the bus is away or slow", never "this envelope is bad".
BUS_ERRORS: tuple[type[BaseException], ...] = (
    TimeoutError,
    nats.errors.ConnectionClosedError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.NoRespondersError,
    nats.errors.OutboundBufferLimitError,
    nats.errors.StaleConnectionError,
    nats.js.errors.NoStreamResponseError,
    nats.js.errors.ServiceUnavailableError,
    TransientError,
)
BUS_OR_API_ERRORS: tuple[type[BaseException], ...] = (*BUS_ERRORS, nats.js.errors.APIError)
# Any client error while fetching: bind the consumer anew rather than let the worker die.
FETCH_ERRORS: tuple[type[BaseException], ...] = (*BUS_OR_API_ERRORS, nats.errors.Error)
BUS_OR_STALL_ERRORS: tuple[type[BaseException], ...] = (*BUS_ERRORS, nats.js.errors.TooManyStalledMsgsError)

# A pull request the server has not filled by then expires, so a worker that died leaves no
# request open that new inputs would be handed to.
FETCH_EXPIRY_S = 1.0


async def sleep_unless(stop: asyncio.Event, seconds: float) -> None:
    """Sleep ``seconds``, or less once ``stop`` is set."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)
