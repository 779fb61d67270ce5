"""A message's size as the server counts it, and a client that never sends one past ``max_payload``.

The server limits a message's headers and payload together, while nats-py checks the payload
alone. A message whose headers push it past the limit is refused with ``-ERR 'Maximum Payload
Violation'``, and nats-py answers any such error by closing its connection for good: one input
whose dead letter (its bytes plus a few headers) is a hundred bytes too large would silence its
organ. ``PayloadGuardedClient`` refuses such a publish itself, with ``MaxPayloadError``, before
anything reaches the wire, so the caller can keep the message another way and the connection lives.
"""

from __future__ import annotations

from collections.abc import Mapping

import nats.errors
from nats.aio.client import Client

__all__ = ["MessageTooLarge", "PayloadGuardedClient", "header_block_size", "message_size"]

_HEADER_LINE = b"NATS/1.0\r\n"
_LINE_END = 2
_KEY_SEPARATOR = 2  # ": "


def header_block_size(headers: Mapping[str, str] | None) -> int:
    """The bytes ``headers`` take on the wire (0 without headers), counted the way nats-py writes them."""
    if headers is None:
        return 0
    size = len(_HEADER_LINE) + _LINE_END
    for key, value in headers.items():
        if key.strip():
            size += len(key.strip().encode()) + _KEY_SEPARATOR + len(value.strip().encode()) + _LINE_END
    return size


def message_size(payload: bytes, headers: Mapping[str, str] | None) -> int:
    """What the server compares with its ``max_payload``: the header block and the payload together."""
    return len(payload) + header_block_size(headers)


class MessageTooLarge(nats.errors.MaxPayloadError):
    """A publish refused before sending: its headers and payload together exceed ``max_payload``."""

    def __init__(self, size: int, max_payload: int) -> None:
        super().__init__(size, max_payload)
        self.size = size
        self.max_payload = max_payload

    def __str__(self) -> str:
        return f"nats: maximum payload exceeded: {self.size} bytes with headers, max_payload {self.max_payload}"


class PayloadGuardedClient(Client):
    """A nats-py client whose publishes (and so requests and JetStream publishes) are refused locally when
    headers and payload together exceed the server's ``max_payload``."""

    async def publish(
        self, subject: str, payload: bytes = b"", reply: str = "", headers: dict[str, str] | None = None
    ) -> None:
        size = message_size(payload, headers)
        if headers is not None and size > self.max_payload:
            raise MessageTooLarge(size, self.max_payload)
        await super().publish(subject, payload, reply, headers)
