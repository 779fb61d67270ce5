"""Writes the server refuses, named: a stream at its limit, JetStream out of storage or switched off.

The server says why it refused a write in a JetStream error code; a log that prints only the
exception's class (``ServiceUnavailableError()``) hides it. ``refusal_of`` turns such an error
into a ``Refusal`` whose ``cause`` is a stable, machine-readable name and whose ``detail`` is
a sentence an operator can act on.

nats-py leaves the future of an asynchronous publish unresolved when the stream answers with
an error (the error escapes its reply callback instead), so a refused publish looked like a
timeout; ``RefusalAwareJetStream`` settles that future with the server's error.
"""

from __future__ import annotations

from typing import Any

import msgspec
import nats.errors
import nats.js.errors
from nats.aio.msg import Msg
from nats.js import JetStreamContext

__all__ = [
    "Refusal",
    "RefusalAwareJetStream",
    "describe_bus_error",
    "exhaustion_of",
    "named_by_exhaustion",
    "refusal_of",
    "unconfirmed_write",
]

# JetStream's error codes (nats-server's errors.json) for a write the server will not store.
_BY_ERR_CODE: dict[int, tuple[str, str]] = {
    10023: (
        "server.insufficient_resources",
        "JetStream storage is exhausted: the disk is full or the server's max_file_store/max_memory_store is reached",
    ),
    10047: (
        "server.storage_reservation",
        "the server cannot reserve the storage a stream's max_bytes asks for (max_file_store or the disk is smaller)",
    ),
    10028: ("server.memory_resources", "JetStream memory storage is exhausted"),
    10039: ("server.jetstream_disabled", "JetStream is not enabled for this account"),
    10076: ("server.jetstream_disabled", "JetStream is not enabled on the server (or it switched itself off)"),
    10054: ("limit.max_msg_size", "the message is larger than the stream's max_msg_size"),
    10027: ("limit.max_streams", "the account's limit on streams is reached"),
}
# err_code 10077 carries the store's own words: which limit refused the message.
_STORE_FAILED = 10077
_BY_DESCRIPTION: tuple[tuple[str, str, str], ...] = (
    ("maximum bytes", "limit.max_bytes", "a stream is at its byte limit (max_bytes) and refuses new messages"),
    ("maximum messages", "limit.max_msgs", "a stream is at its message limit (max_msgs) and refuses new messages"),
    ("no space left", "server.disk_full", "the server's disk is full"),
    ("resource", "server.insufficient_resources", "JetStream storage is exhausted"),
)


# A refusal for want of room, by the family it belongs to: what a dead letter caused by it is named.
_EXHAUSTION = {
    "limit.max_bytes": "limit.max_bytes",
    "limit.max_msgs": "limit.max_msgs",
    "server.insufficient_resources": "server.out_of_storage",
    "server.disk_full": "server.out_of_storage",
    "server.memory_resources": "server.out_of_storage",
    "server.write_unconfirmed": "server.out_of_storage",
    "server.jetstream_disabled": "server.out_of_storage",
    "server.jetstream_unavailable": "server.out_of_storage",
}


def exhaustion_of(cause: str | None) -> str | None:
    """``limit.max_bytes``, ``limit.max_msgs`` or ``server.out_of_storage`` when the refusal ``cause`` is the server
    wanting room (a stream at its limit, storage exhausted, a full disk, JetStream switched off after one), else
    ``None``: no fault of the input, so it is held and retried rather than spending its deliveries."""
    return None if cause is None else _EXHAUSTION.get(cause)


def named_by_exhaustion(reason: str, last_refusal: str) -> str:
    """``reason`` for running out of deliveries, named by its family when the worker's last refusal
    (``str(Refusal)``, "" when none) was the server wanting room: such deliveries were spent by an outage."""
    family = exhaustion_of(last_refusal.partition(":")[0]) if last_refusal else None
    return f"{family}: {reason}; the server's last refusal: {last_refusal}" if family else reason


class Refusal(msgspec.Struct, frozen=True):
    """Why the server would not store a write: ``cause`` a stable name, ``detail`` in words."""

    cause: str
    detail: str

    def __str__(self) -> str:
        return f"{self.cause}: {self.detail}"


def refusal_of(error: BaseException) -> Refusal | None:
    """The refusal ``error`` reports, or ``None`` when it is not the server declining to store a write."""
    if isinstance(error, nats.js.errors.NoStreamResponseError):
        return Refusal("server.no_stream", "no stream answered for the subject (JetStream down or the stream missing)")
    if not isinstance(error, nats.js.errors.APIError):
        return None
    said = f" (JetStream {error.code}, err_code {error.err_code}: {error.description})"
    if error.err_code in _BY_ERR_CODE:
        cause, detail = _BY_ERR_CODE[error.err_code]
        return Refusal(cause, detail + said)
    description = (error.description or "").lower()
    unavailable = error.code == 503 or isinstance(error, nats.js.errors.ServiceUnavailableError)
    if error.err_code == _STORE_FAILED or unavailable:
        for words, cause, detail in _BY_DESCRIPTION:
            if words in description:
                return Refusal(cause, detail + said)
    if unavailable:
        # A bare 503 (no JSON error) is JetStream not answering: disabled after an out-of-storage
        # error, or without a leader in a cluster.
        return Refusal("server.jetstream_unavailable", "JetStream did not serve the request" + said)
    return None


def unconfirmed_write(error: BaseException, connected: bool, waited_s: float) -> Refusal | None:
    """A write the server neither stored nor refused while the connection was up, or ``None``.

    A server whose disk is full answers no write at all (its log says "no space left on device"),
    so the silence itself is the cause a worker can name.
    """
    if not connected or not isinstance(error, TimeoutError):
        return None
    return Refusal(
        "server.write_unconfirmed",
        f"the server is connected but confirmed no write within {waited_s:g} s: its disk may be full or JetStream "
        "stalled (the server's log names which)",
    )


def describe_bus_error(error: BaseException) -> str:
    """The error in words for a log or a reason: the named refusal, else the server's own message."""
    refusal = refusal_of(error)
    if refusal is not None:
        return f"the server refused the write: {refusal}"
    if isinstance(error, nats.js.errors.APIError | nats.errors.Error):
        return f"{type(error).__name__}: {error}"
    return repr(error)


class RefusalAwareJetStream(JetStreamContext):
    """A JetStream context whose asynchronous publishes fail with the server's error when it refuses one."""

    async def _handle_async_reply(self, msg: Msg) -> None:
        try:
            await super()._handle_async_reply(msg)
        except nats.js.errors.APIError as error:
            future = self._publish_async_futures.get(_reply_token(self, msg))
            if future is not None and not future.done():
                future.set_exception(error)


def _reply_token(js: Any, msg: Msg) -> str:
    # The reply subject is the inbox prefix, a 22-character unique id and the token, dot-separated
    # (how nats-py builds it in publish_async).
    return str(msg.subject[len(js._nc._inbox_prefix) + 22 + 2 :])
