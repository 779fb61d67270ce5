"""The commands of a tract's clients: ``ichor ingest``, ``digest`` (the stomach's core, no bus), ``frame``,
``mcp``, ``tail``, ``status``, ``dlq``, and the contract documents ``schema`` and ``asyncapi``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import nats.errors
import nats.js.errors
from nats.micro.service import ServiceStats

from envelopes.codec import encode_json, envelope_schema
from envelopes.types import FrameReply, Rejected, UserInput
from organs.anatomy import ORGAN_NAMES
from organs.cli.common import (
    EXIT_NOT_READY,
    EXIT_REFUSED,
    EXIT_REJECTED,
    EXIT_TIMEOUT,
    Command,
    actor_of,
    bus_settings,
    data_dir,
    read_input,
)
from organs.errors import BusUnavailableError, IchorError
from organs.runtime.bus import BusSettings, Tract, connect, provision

# How long ``ichor ingest`` tries to fetch an outcome's texts stored by reference before showing the reference.
STORED_TEXT_WAIT_S = 5.0

__all__ = ["add_client_commands", "ingest"]

_Reply = TypeVar("_Reply")


# --- ichor ingest --------------------------------------------------------------


async def ingest(
    settings: BusSettings,
    text: str,
    actor: str,
    intent: str | None,
    timeout: float,
    as_json: bool,
    session: str | None = None,
    resend: bool = False,
) -> int:
    from organs.client import hand_in_paste, with_stored_texts

    tract = await connect(settings, name="ichor-ingest", persistent=False)
    try:
        if settings.provision:
            await provision(tract)
        _, outcome = await hand_in_paste(
            tract,
            text,
            origin=UserInput(actor=actor),
            intent=intent,
            timeout=timeout,
            session=session,
            resend=resend,
        )
        # A goal or prompt too large for a message is named, not carried: shown whole where this user may read it
        # (a tenant of a secure tract may not, and is shown the reference).
        with contextlib.suppress(IchorError, nats.errors.Error, TimeoutError):
            outcome = await asyncio.wait_for(with_stored_texts(tract, outcome), timeout=STORED_TEXT_WAIT_S)
    except TimeoutError:
        print(f"ichor ingest: no admitted or rejected envelope within {timeout}s; are the organs up?", file=sys.stderr)
        return EXIT_TIMEOUT
    finally:
        await tract.nc.close()
    if as_json:
        print(encode_json(outcome).decode())
    else:
        from organs.pills import render_outcome

        render_outcome(outcome)
    return EXIT_REJECTED if isinstance(outcome.payload, Rejected) else 0


def _session_id(value: str) -> str:
    from envelopes.types import SESSION_ID_PATTERN

    if SESSION_ID_PATTERN.fullmatch(value) is None:
        raise argparse.ArgumentTypeError(f"{value!r} is not 1 to 128 characters of [A-Za-z0-9_-]")
    return value


def cmd_ingest(args: argparse.Namespace) -> int:
    return asyncio.run(
        ingest(
            bus_settings(args, identity="host"),
            read_input(args.file),
            actor_of(args),
            args.intent,
            args.timeout,
            args.json,
            session=args.session,
            resend=args.resend,
        )
    )


# --- ichor digest --------------------------------------------------------------


def cmd_digest(args: argparse.Namespace) -> int:
    from organs.stomach import ingest_paste
    from organs.stomach.worker import ingest_config

    text = read_input(args.file)
    config = ingest_config(args.settings)
    if args.budget is not None:
        config = dataclasses.replace(config, budget_tokens=args.budget)
    bundle = ingest_paste(text, config, intent=args.intent)
    if args.json:
        document = {
            "goal": bundle.query.goal,
            "anchors": list(bundle.query.anchors),
            "budget_tokens": bundle.query.budget_tokens,
            "tier": bundle.tier,
            "tier_reason": bundle.tier_reason,
            "encoding": bundle.encoding,
            "source_digest": bundle.source_digest,
            "report": bundle.report,
            "frames": bundle.provider.frames,
        }
        print(msgspec.json.encode(document).decode())
        return 0
    from organs.pills import render_digest

    render_digest(bundle)
    return 0


# --- ichor frame ---------------------------------------------------------------


async def _ask_once(
    settings: BusSettings, request: Callable[[Tract], Awaitable[_Reply]], silence: str
) -> _Reply | None:
    """One request over a short-lived connection; None, after saying ``silence``, when nobody answers."""
    tract = await connect(settings, name="ichor-frame", persistent=False)
    try:
        return await request(tract)
    except (TimeoutError, nats.errors.NoRespondersError):
        print(f"ichor frame: {silence}", file=sys.stderr)
        return None
    finally:
        await tract.nc.close()


async def _raw_frame(settings: BusSettings, frame_id: str, as_json: bool) -> int:
    from organs.client import fetch_raw

    silence = "no answer on the raw subject; are the organs up? (only the operator user may ask it)"
    reply = await _ask_once(settings, lambda tract: fetch_raw(tract, frame_id), silence)
    if reply is None:
        return EXIT_TIMEOUT
    if reply.error is not None or reply.text is None:
        print(f"ichor frame: {reply.error}", file=sys.stderr)
        return 1
    if as_json:
        print(encode_json(reply).decode())
    else:
        sys.stdout.write(reply.text)
    return 0


async def _frame(settings: BusSettings, frame_id: str, full: bool, as_json: bool) -> int:
    from organs.client import fetch_frame, resolve_frame_id

    async def ask(tract: Tract) -> FrameReply:
        # The short id a prompt or a table shows is enough when only one frame starts with it.
        return await fetch_frame(tract, await resolve_frame_id(tract, frame_id), "full" if full else "compact")

    silence = "no stomach answered on the frames subject; are the organs up?"
    reply = await _ask_once(settings, ask, silence)
    if reply is None:
        return EXIT_TIMEOUT
    if reply.error is not None or reply.frame is None:
        print(f"ichor frame: {reply.error}", file=sys.stderr)
        return 1
    if as_json:
        print(encode_json(reply.frame).decode())
    elif reply.frame.content is None:
        print(f"ichor frame: {frame_id} is served by reference (no compact rendering yet); ask with --full")
    else:
        sys.stdout.write(reply.frame.content)
    return 0


def cmd_frame(args: argparse.Namespace) -> int:
    if args.raw:
        # The bytes as received are the operator's alone.
        return asyncio.run(_raw_frame(bus_settings(args, identity="operator"), args.id, args.json))
    return asyncio.run(_frame(bus_settings(args, identity="host"), args.id, args.full, args.json))


# --- ichor mcp ----------------------------------------------------------------


def cmd_mcp(args: argparse.Namespace) -> int:
    from organs.mcp import serve_http, serve_stdio
    from organs.mcp.server import LOOPBACK

    settings = bus_settings(args, identity="host")
    if args.http is None:
        asyncio.run(serve_stdio(settings))
        return 0
    # Beyond loopback a client must show the bearer token kept (and made, the first time) in the data directory.
    token_file = None if args.host in LOOPBACK else data_dir(args) / "security" / "mcp.token"
    asyncio.run(serve_http(settings, args.host, args.http, token_file=token_file, allowed_hosts=tuple(args.allow_host)))
    return 0


# --- ichor tail ----------------------------------------------------------------


async def _tail(settings: BusSettings, as_json: bool, limit: int | None) -> int:
    from organs.tail import follow

    stop, gone = asyncio.Event(), asyncio.Event()

    async def closed() -> None:
        # The client gave up reconnecting: nothing more will come, so the tail ends instead of waiting forever.
        gone.set()
        stop.set()

    tract = await connect(settings, name="ichor-tail", persistent=False, closed_cb=closed)
    loop = asyncio.get_running_loop()
    signalled = asyncio.Event()

    def on_signal() -> None:
        signalled.set()
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal)
    try:
        await follow(tract, as_json=as_json, stop=stop, limit=limit)
    except (nats.errors.Error, TimeoutError) as error:
        if not gone.is_set():
            raise BusUnavailableError(f"lost the server at {settings.url}: {error!r}") from error
    finally:
        await tract.nc.close()
    if gone.is_set() and not signalled.is_set():
        raise BusUnavailableError(f"the server at {settings.url} went away; stopped following")
    return 0


def cmd_tail(args: argparse.Namespace) -> int:
    # The tract carries pastes as received: following it is the operator's.
    return asyncio.run(_tail(bus_settings(args, identity="operator"), args.json, args.limit))


# --- ichor status --------------------------------------------------------------


async def _storage_problems(settings: BusSettings) -> list[str]:
    from organs.operations.storage import storage_problems

    tract = await connect(settings, name="ichor-status", persistent=False)
    try:
        return await storage_problems(tract)
    finally:
        await tract.nc.close()


async def _gather_stats(settings: BusSettings, wait: float) -> list[ServiceStats]:
    """Every organ's ``$SRV.STATS`` reply that arrives within ``wait`` seconds (other services' are left out)."""
    tract = await connect(settings, name="ichor-status", persistent=False)
    replies: list[ServiceStats] = []
    try:
        inbox = tract.nc.new_inbox()

        async def collect(msg: Any) -> None:
            reply = ServiceStats.from_dict(json.loads(msg.data))
            if reply.metadata.get("organ"):
                replies.append(reply)

        subscription = await tract.nc.subscribe(inbox, cb=collect)
        await tract.nc.publish("$SRV.STATS", b"", reply=inbox)
        await asyncio.sleep(wait)
        await subscription.unsubscribe()
    finally:
        await tract.nc.close()
    return sorted(replies, key=lambda reply: (reply.metadata["organ"], reply.id))


def cmd_status(args: argparse.Namespace) -> int:
    organs = asyncio.run(_gather_stats(bus_settings(args, identity="host"), args.wait))
    if args.json:
        print(json.dumps([reply.to_dict() for reply in organs]))
    else:
        print(f"{'organ':<11} {'instance':<28} {'ready':<5} {'processed':>9} {'errors':>6} {'avg ms':>8}  last error")
        for reply in organs:
            processed = sum(endpoint.num_requests for endpoint in reply.endpoints)
            errors = sum(endpoint.num_errors for endpoint in reply.endpoints)
            total_ns = sum(endpoint.processing_time for endpoint in reply.endpoints)
            average = total_ns / processed / 1e6 if processed else 0.0
            last_error = next((endpoint.last_error for endpoint in reply.endpoints if endpoint.last_error), "")
            print(
                f"{reply.metadata['organ']:<11} {reply.id[:28]:<28} {reply.metadata['ready']:<5} "
                f"{processed:>9} {errors:>6} {average:>8.2f}  {last_error[:60]}"
            )
    ready = {reply.metadata["organ"] for reply in organs if reply.metadata.get("ready") == "true"}
    missing = [organ for organ in ORGAN_NAMES if organ not in ready]
    if missing:
        print(f"ichor status: not ready or missing: {', '.join(missing)}", file=sys.stderr)
    from organs.operations.storage import organ_refusals

    problems = asyncio.run(_storage_problems(bus_settings(args, identity="host")))
    problems += organ_refusals({reply.id: reply.metadata for reply in organs})
    for problem in problems:
        print(f"ichor status: {problem}", file=sys.stderr)
    if problems:
        return EXIT_REFUSED
    return EXIT_NOT_READY if missing else 0


def cmd_dlq(args: argparse.Namespace) -> int:
    from organs.operations.dlq_command import run_dlq

    # Dead letters hold pastes as received: reading them is the operator's; replaying or purging, the admin's.
    identity = "operator" if args.action in ("ls", "show") else "admin"
    return run_dlq(args, bus_settings(args, identity=identity))


def cmd_asyncapi(_: argparse.Namespace) -> int:
    from organs.asyncapi import asyncapi_document

    print(json.dumps(asyncapi_document(), indent=2))
    return 0


def cmd_schema(_: argparse.Namespace) -> int:
    print(json.dumps(envelope_schema(), indent=2))
    return 0


_DATA_HELP = "the tract's data directory, whose security/ holds this command's identity (default $ICHOR_DATA)"


def add_client_commands(command: Command) -> None:
    """The commands of the tract's clients: ingest, digest, frame, mcp, tail, status, dlq, schema, asyncapi."""
    ingest = command("ingest", cmd_ingest, "publish a paste as an upstream organ would and print its outcome")
    ingest.add_argument("file", nargs="?", default="-")
    ingest.add_argument("--intent", help="the ask, when the host already knows it")
    ingest.add_argument("--actor", help="the user_input actor recorded as the origin (default $ICHOR_ACTOR or login)")
    ingest.add_argument("--json", action="store_true", help="print the whole envelope as JSON")
    ingest.add_argument("--timeout", type=float, default=30.0)
    ingest.add_argument(
        "--session", type=_session_id, help="the conversation's id: frames an earlier turn carried come as references"
    )
    ingest.add_argument("--resend", action="store_true", help="with --session: send every frame again in full")
    ingest.add_argument("--nats")
    ingest.add_argument("--data", type=Path, help=_DATA_HELP)

    digest = command("digest", cmd_digest, "run the stomach's core locally, no bus")
    digest.add_argument("file", nargs="?", default="-")
    digest.add_argument("--json", action="store_true")
    digest.add_argument("--budget", type=int, help="token budget for served frames")
    digest.add_argument("--intent")

    frame = command("frame", cmd_frame, "re-query a frame over the bus, compact or --full")
    frame.add_argument("id")
    shown = frame.add_mutually_exclusive_group()
    shown.add_argument("--full", action="store_true", help="the full text, with secrets redacted")
    shown.add_argument("--raw", action="store_true", help="the bytes as received (operator user only)")
    frame.add_argument("--json", action="store_true")
    frame.add_argument("--nats")
    frame.add_argument("--data", type=Path, help=_DATA_HELP)

    mcp = command("mcp", cmd_mcp, "serve frames to a model as MCP tools and resources (stdio, or --http PORT)")
    mcp.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on this port instead of stdio")
    mcp.add_argument(
        "--host",
        default="127.0.0.1",
        help="with --http: the address to bind (loopback by default; beyond it, clients need DATA/security/mcp.token)",
    )
    mcp.add_argument(
        "--allow-host", action="append", default=[], help="beyond loopback: another Host name clients may use"
    )
    mcp.add_argument("--nats")
    mcp.add_argument("--data", type=Path, help=_DATA_HELP)

    tail = command("tail", cmd_tail, "follow the tract live: one line per envelope per hop")
    tail.add_argument("--nats")
    tail.add_argument("--data", type=Path, help=_DATA_HELP)
    tail.add_argument("--json", action="store_true", help="JSON lines instead of columns")
    tail.add_argument("--limit", type=int, help="stop after this many lines")

    status = command("status", cmd_status, "list the organs on the bus ($SRV.STATS); non-zero if one is missing")
    status.add_argument("--nats")
    status.add_argument("--data", type=Path, help=_DATA_HELP)
    status.add_argument("--json", action="store_true")
    status.add_argument("--wait", type=float, default=0.5, help="seconds to collect replies")

    from organs.operations.dlq_command import add_dlq_arguments

    add_dlq_arguments(command("dlq", cmd_dlq, "list, show, replay or purge dead letters"))

    command("schema", cmd_schema, "print the JSON Schema of the envelope")
    command("asyncapi", cmd_asyncapi, "print the AsyncAPI 3.0 document of the tract")
