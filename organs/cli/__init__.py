"""The ``ichor`` command.

    ichor up [--nats URL] [--host ADDR] [--port P] [--data DIR] [--feed FILE] [--insecure]
    ichor worker {stomach|absorption|border} [--nats URL]
    ichor ingest [FILE|-] [--intent TEXT] [--actor NAME] [--json] [--timeout S] [--session ID [--resend]]
    ichor digest [FILE|-] [--json] [--budget N]
    ichor frame ID [--full | --raw] [--json]
    ichor mcp [--http PORT] [--host ADDR]
    ichor tail [--json] [--limit N]
    ichor status [--json]
    ichor dlq {ls|show ID|replay ID|purge} [--organ ORGAN]

``ichor up`` is secure unless ``--insecure``: at first start it writes per-user nkeys and
signing keys into DATA/security, and the commands that talk to the tract (ingest, frame,
tail, status, dlq, mcp) connect with the identity they need from there (DATA is
``--data``, else ``$ICHOR_DATA``, else ``.ichor/data``), so no flag is needed on the
same machine. Credentials named in the environment (``ICHOR_NATS_NKEY_FILE`` and friends) win.
    ichor schema
    ichor asyncapi

Exit codes: 0 success, 1 an error, 2 bad usage, 3 a timeout waiting on the
tract, 4 the paste was rejected by the border, 5 an organ is missing or not ready,
6 the server refuses writes (JetStream down, a stream at its limit, storage exhausted).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import get_args

import msgspec
import nats.js.errors

from organs import __version__
from organs.anatomy import ORGANS
from organs.cli.client_commands import add_client_commands
from organs.cli.common import EXIT_USAGE
from organs.cli.tract_commands import add_tract_commands
from organs.errors import ConfigError, IchorError
from organs.settings import LogLevel, Settings
from organs.signing import load_signer

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ichor", description="Ichor organs: digest a paste and deliver it to the brain."
    )
    parser.add_argument("--version", action="version", version=f"ichor {__version__}")
    parser.add_argument(
        "--log-level",
        type=str.lower,
        choices=get_args(LogLevel),
        help="how much the logs say (default $ICHOR_LOG_LEVEL or info)",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, handler: Callable[[argparse.Namespace], int], help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(handler=handler)
        return sub

    add_tract_commands(command)
    add_client_commands(command)
    return parser


def _settings() -> Settings:
    """Every ICHOR_* variable, read and checked once: a bad one stops the command before it starts.

    The organs' own checks run too (the stomach's and the border's knobs, the key and seed
    files), so that ``ichor up`` refuses a bad one at once rather than leave each worker it
    supervises in a restart loop.
    """
    from organs.border.worker import border_config
    from organs.stomach.worker import ingest_config

    settings = Settings.from_environ()
    ingest_config(settings)
    border_config(settings)
    for organ in ORGANS:
        load_signer(organ.wire_name, settings)
    return settings


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        args.settings = _settings()
        if args.log_level is not None:
            args.settings = msgspec.structs.replace(args.settings, log_level=args.log_level)
        return int(args.handler(args))
    except ConfigError as error:
        print(f"ichor {args.command}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except IchorError as error:
        print(f"ichor {args.command}: {error}", file=sys.stderr)
        return 1
    except (OSError, UnicodeDecodeError) as error:
        print(f"ichor {args.command}: {error}", file=sys.stderr)
        return 1
    except nats.js.errors.APIError as error:
        # A write the server refused (a stream at its limit, storage exhausted) or a request it turned down.
        from organs.runtime.refusals import describe_bus_error

        print(f"ichor {args.command}: {describe_bus_error(error)}", file=sys.stderr)
        return 1
