"""What the ``ichor`` commands share: the paste read from a file or stdin, the data directory, the bus
settings with the identity a command needs, and the exit codes."""

from __future__ import annotations

import argparse
import dataclasses
import getpass
import sys
from collections.abc import Callable
from pathlib import Path

from organs.operations.security import seed_path, user_environment
from organs.runtime.bus import BusSettings

__all__ = [
    "DEFAULT_DATA",
    "EXIT_NOT_READY",
    "EXIT_REFUSED",
    "EXIT_REJECTED",
    "EXIT_TIMEOUT",
    "EXIT_USAGE",
    "INSECURE_MARK",
    "Command",
    "actor_of",
    "as_user",
    "bus_settings",
    "data_dir",
    "read_input",
]

# The exit codes besides 0 (success) and 1 (an error), as the ``ichor`` docstring lists them.
EXIT_USAGE = 2
EXIT_TIMEOUT = 3
EXIT_REJECTED = 4
EXIT_NOT_READY = 5
EXIT_REFUSED = 6


Command = Callable[[str, Callable[[argparse.Namespace], int], str], argparse.ArgumentParser]


def read_input(path: str) -> str:
    """The paste as bytes decoded UTF-8 with no newline translation, so a file, stdin and the bus agree.

    Text-mode reading would turn ``\\r`` and CRLF into ``\\n`` and shift every span and digest.
    """
    data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    return data.decode("utf-8")


DEFAULT_DATA = Path(".ichor/data")

# Left in the data directory by ``ichor up --insecure`` (removed by a secure start): its server checks no
# identity, and a command beside it must not wait where only a secure tract answers (its own outcome subject).
INSECURE_MARK = "INSECURE"


def data_dir(args: argparse.Namespace) -> Path:
    """The tract's data directory: ``--data``, else ``ICHOR_DATA``, else ``.ichor/data``."""
    given = getattr(args, "data", None)
    if given is not None:
        return Path(given)
    return Path(args.settings.data) if args.settings.data else DEFAULT_DATA


def bus_settings(args: argparse.Namespace, url: str | None = None, *, identity: str | None = None) -> BusSettings:
    """The bus settings of this command: ``--nats`` (or ``url``) over ``ICHOR_NATS_URL``.

    With an ``identity`` (``host``, ``operator``, ``admin``), a command run beside a secure ``ichor up``
    connects as that user with its seed from the data directory, unless the environment names
    credentials of its own; with no seed there it connects as it is (an ``--insecure`` tract).
    """
    settings = BusSettings.from_settings(args.settings, url or getattr(args, "nats", None))
    if identity is None or settings.nkey_file or settings.user:
        return settings
    data = data_dir(args)
    security = data / "security"
    if (data / INSECURE_MARK).exists() or not seed_path(security, identity).is_file():
        return settings
    return as_user(settings, security, identity)


def as_user(settings: BusSettings, security_dir: Path, user: str) -> BusSettings:
    environment = user_environment(security_dir, user)
    return dataclasses.replace(settings, user=user, nkey_file=environment["ICHOR_NATS_NKEY_FILE"], provision=False)


def actor_of(args: argparse.Namespace) -> str:
    return str(args.actor or args.settings.actor or getpass.getuser())
