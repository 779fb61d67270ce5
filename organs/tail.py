"""``ichor tail``: one line per envelope per hop, as the tract carries it."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import Any

import msgspec
import nats.errors
from nats.js.errors import NotFoundError

from envelopes.codec import DecodeError, decode
from envelopes.types import Envelope
from organs.errors import PermissionRefused
from organs.redaction import scrub_secrets
from organs.runtime import metrics
from organs.runtime.bus import Tract
from organs.runtime.stream_reader import follow_stream

__all__ = ["TailLine", "describe", "follow"]

_COLOURS = {"paste": "36", "digested": "34", "yield": "35", "admitted": "32", "rejected": "31", "dead_letter": "31;1"}


class TailLine(msgspec.Struct, frozen=True):
    at: str
    hop: str
    kind: str
    tier: str | None
    origin: str
    tokens_in: int | None
    tokens_out: int | None
    outcome: str
    envelope_id: str | None
    trace_id: str | None
    reason: str | None = None


def _origin(envelope: Envelope) -> str:
    origin = msgspec.to_builtins(envelope.chain.origin)
    label = next((str(value) for key, value in origin.items() if key != "kind"), "")
    return f"{origin['kind']}:{label}"


def _unread_line(at: str, hop: str, kind: str, reason: str) -> TailLine:
    """A line for a message with no envelope to read (a dead letter, undecodable bytes): its kind is its outcome."""
    return TailLine(
        at=at,
        hop=hop,
        kind=kind,
        tier=None,
        origin="?",
        tokens_in=None,
        tokens_out=None,
        outcome=kind,
        envelope_id=None,
        trace_id=None,
        reason=scrub_secrets(reason),
    )


def describe(subject: str, data: bytes, headers: dict[str, str] | None, prefix: str) -> TailLine:
    hop = subject.removeprefix(prefix + ".")
    if hop.startswith("dlq."):
        reason = (headers or {}).get("Ichor-Dlq-Reason", "")
        return _unread_line((headers or {}).get("Ichor-Dlq-At", ""), hop, "dead_letter", reason)
    try:
        envelope = decode(data)
    except DecodeError as error:
        return _unread_line("", hop, "undecodable", str(error))
    tokens_in, tokens_out, outcome = metrics.tokens_of(envelope)
    return TailLine(
        at=envelope.created_at,
        hop=hop,
        kind=envelope.kind,
        tier=envelope.tier,
        origin=_origin(envelope),
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        outcome=outcome,
        envelope_id=envelope.id,
        trace_id=envelope.trace_id,
    )


def render(line: TailLine, colour: bool) -> str:
    tokens = (
        ""
        if line.tokens_in is None and line.tokens_out is None
        else f"{line.tokens_in or 0:>7} → {line.tokens_out or 0:<6}"
    )
    text = (
        f"{line.at[11:23]:<12} {line.hop:<18} {line.kind:<11} {line.tier or '-':<8} "
        f"{line.origin[:24]:<24} {tokens:<16} {line.outcome}"
    )
    if line.reason:
        text += f" ({line.reason[:80]})"
    if colour:
        return f"\x1b[{_COLOURS.get(line.kind, '0')}m{text}\x1b[0m"
    return text


async def follow(tract: Tract, *, as_json: bool, stop: asyncio.Event, limit: int | None = None) -> int:
    """Print every envelope the tract's streams store from now on until ``stop`` (or ``limit`` lines).

    Read through the streams, so a message a stream dropped as a duplicate is never shown."""
    prefix = tract.subjects.prefix
    colour = sys.stdout.isatty() and not as_json
    printed = 0
    done = asyncio.Event()

    async def show(msg: Any) -> None:
        nonlocal printed
        if done.is_set():
            return
        line = describe(msg.subject, msg.data, msg.headers, prefix)
        print(msgspec.json.encode(line).decode() if as_json else render(line, colour), flush=True)
        printed += 1
        if limit is not None and printed >= limit:
            done.set()

    subjects = tract.subjects
    subscriptions = []
    for stream, followed in (
        (subjects.tract_stream, subjects.tract_subjects),
        (subjects.dlq_stream, [subjects.dlq_all]),
    ):
        # A tail started before the tract is provisioned waits for its streams.
        while not stop.is_set():
            try:
                follower = await follow_stream(tract, followed, show, stream=stream)
            except NotFoundError:
                await asyncio.sleep(0.2)
                continue
            except PermissionRefused:
                # The dead letters hold pastes as received: under a secure tract only the operator reads them.
                print(f"ichor tail: skipping {stream} (this user may not read it)", file=sys.stderr)
                break
            subscriptions.append(follower)
            # On stderr, apart from the lines: where reading starts, and that it has.
            print(f"ichor tail: following {stream} from sequence {follower.next_sequence}", file=sys.stderr)
            break
    waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(done.wait())]
    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    for waiter in waiters:
        waiter.cancel()
    for subscription in subscriptions:
        # On a connection the server closed there is nothing left to unsubscribe from.
        with contextlib.suppress(nats.errors.Error):
            await subscription.unsubscribe()
    return printed
