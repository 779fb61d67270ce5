"""``ichor dlq ls | show ID | replay ID | purge``: the dead-letter stream, for operators.

Exit codes are the ``ichor`` command's: 0 done, 1 an error (the bus unreachable, no such
letter, no dead-letter stream), 2 bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

import msgspec
import nats.errors
from nats.js.errors import APIError, NotFoundError

from organs.anatomy import ORGAN_NAMES
from organs.errors import IchorError
from organs.operations.dlq import get_letter, list_letters, preview, purge_letters, replay_letter
from organs.runtime.bus import BusSettings, Tract, connect
from organs.runtime.refusals import describe_bus_error

__all__ = ["add_dlq_arguments", "run_dlq"]

PREVIEW_BYTES = 4096


def add_dlq_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("ls", help="list dead letters, oldest first: id, time, organ, size, reason")
    listing.add_argument("--organ", choices=ORGAN_NAMES)
    listing.add_argument("--json", action="store_true", help="a JSON array of the letters ([] when none)")
    show = actions.add_parser("show", help="one letter: its reason, headers and bytes (decoded, or escaped, or hex)")
    show.add_argument("id", type=int)
    show.add_argument("--json", action="store_true")
    show.add_argument("--bytes", type=int, default=PREVIEW_BYTES, help="show at most this much of the bytes")
    show.add_argument("--raw", action="store_true", help="do not redact credentials in what is shown")
    replay = actions.add_parser("replay", help="put a letter back on the subject it failed on, to be processed again")
    replay.add_argument("id", type=int)
    replay.add_argument("--keep", action="store_true", help="keep the letter in the dead-letter stream too")
    purge = actions.add_parser("purge", help="remove every dead letter, or only those of --organ")
    purge.add_argument("--organ", choices=ORGAN_NAMES)
    for action in (listing, show, replay, purge):
        action.add_argument("--nats", help="NATS URL (default $ICHOR_NATS_URL or nats://127.0.0.1:4222)")
        action.add_argument("--data", type=Path, help="the tract's data directory (its security/ holds the identity)")


def run_dlq(args: argparse.Namespace, settings: BusSettings) -> int:
    return asyncio.run(_run(args, settings))


async def _run(args: argparse.Namespace, settings: BusSettings) -> int:
    tract = await connect(settings, name="ichor-dlq", persistent=False)
    try:
        return await _act(args, tract)
    except NotFoundError as error:
        raise IchorError(
            f"no dead-letter stream {tract.subjects.dlq_stream} on {settings.url} ({error.description}); "
            "ichor provision makes it"
        ) from None
    except APIError as error:
        raise IchorError(describe_bus_error(error)) from None
    except TimeoutError:
        refused = tract.refusals.last_refused
        if refused is not None:
            who = f"user {settings.user!r}" if settings.user else "this client"
            raise IchorError(
                f"the server refused {who} a request on {refused}: its permissions forbid it "
                "(dead letters are read by the operator and replayed or purged by the admin)"
            ) from None
        raise IchorError(f"JetStream on {settings.url} did not answer in time") from None
    except nats.errors.Error as error:
        raise IchorError(f"JetStream on {settings.url}: {describe_bus_error(error)}") from None
    finally:
        await tract.nc.close()


async def _act(args: argparse.Namespace, tract: Tract) -> int:
    if args.action == "ls":
        letters = await list_letters(tract, args.organ)
        if args.json:
            # One array, so that no letters is `[]`, which a reader parses like any other answer.
            print(msgspec.json.encode(letters).decode())
            return 0
        print(f"{'id':>6}  {'at':<24} {'organ':<10} {'bytes':>9}  reason")
        for letter in letters:
            print(f"{letter.id:>6}  {letter.at:<24} {letter.organ:<10} {letter.size:>9}  {letter.reason[:100]}")
        print(f"{len(letters)} dead letter(s)", file=sys.stderr)
        return 0
    if args.action == "show":
        letter, data = await get_letter(tract, args.id)
        form, shown = preview(data, args.bytes, redact=not args.raw)
        if args.json:
            document = {**msgspec.to_builtins(letter), "form": form, "content": shown}
            print(json.dumps(document))
            return 0
        print(f"id:      {letter.id}\norgan:   {letter.organ}\nat:      {letter.at}\nsubject: {letter.subject}")
        print(f"bytes:   {letter.size}\nreason:  {letter.reason}\nheaders:")
        for key, value in sorted(letter.headers.items()):
            print(f"  {key}: {value}")
        print(f"content ({form}):\n{shown}")
        return 0
    if args.action == "replay":
        replayed = await replay_letter(tract, args.id, keep=args.keep)
        kept = "kept in" if replayed.kept else "removed from"
        print(
            f"replayed dead letter {replayed.id} to {replayed.subject} as {replayed.msg_id} "
            f"(tract sequence {replayed.sequence}); {kept} {tract.subjects.dlq_stream}"
        )
        return 0
    removed = await purge_letters(tract, args.organ)
    print(f"purged {removed} dead letter(s){f' of {args.organ}' if args.organ else ''}")
    return 0
