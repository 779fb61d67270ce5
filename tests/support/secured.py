"""A secured server with its organs each running as its own least-privileged user, and connections as any user
of its security: what the security and tenant scenarios set up before they attack."""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from nats.aio.msg import Msg

from envelopes.types import Admitted, Envelope, UserInput
from organs.anatomy import ORGAN_NAMES
from organs.client import hand_in_paste
from organs.operations.security import generate_security, organ_environment, user_environment
from organs.operations.supervisor import spawn_worker
from organs.runtime.bus import BusSettings, Tract, connect, provision
from organs.runtime.server import EmbeddedServer
from tests.bus.helpers import read_subject

__all__ = [
    "EXAMPLE",
    "Secured",
    "admitted",
    "connect_as",
    "provisioned_with_organs",
    "report",
    "secured",
    "secured_server",
    "victims_admitted_paste",
    "with_organs",
]

EXAMPLE = (Path(__file__).resolve().parents[2] / "examples" / "paste.txt").read_text()

Secured = tuple[EmbeddedServer, Path, list[subprocess.Popen[bytes]]]
"""The server, its security directory and the organ processes started on it (stopped with the server)."""


@contextlib.contextmanager
def secured_server(folder: Path, tenants: tuple[str, ...] = ()) -> Iterator[Secured]:
    """A server under a freshly generated security (with ``tenants`` besides the host); the organs a test
    starts on it are stopped before it is."""
    directory = generate_security(folder / "security", tenants=tenants)
    server = EmbeddedServer(folder / "nats", extra_config=(directory / "auth.conf").read_text()).start()
    workers: list[subprocess.Popen[bytes]] = []
    try:
        yield server, directory, workers
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            worker.wait(timeout=20)
        server.stop()


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[Secured]:
    """A secured server with no tenant but the host (a suite imports the fixture to use it)."""
    with secured_server(tmp_path) as server:
        yield server


async def connect_as(url: str, directory: Path, user: str, errors: list[str]) -> Tract:
    """A connection as ``user`` of the security in ``directory``; the server's errors on it go to ``errors``."""
    environment = user_environment(directory, user)

    async def record(error: Exception) -> None:
        errors.append(str(error))

    settings = BusSettings(url=url, user=user, nkey_file=environment["ICHOR_NATS_NKEY_FILE"], provision=False)
    return await connect(settings, name=f"test-{user}", error_cb=record)


async def provisioned_with_organs(
    url: str,
    directory: Path,
    workers: list[subprocess.Popen[bytes]],
    errors: list[str],
    extra_env: dict[str, str] | None = None,
) -> Tract:
    """Provision as admin, then start each organ as its own least-privileged user; returns the admin."""
    admin = await connect_as(url, directory, "admin", errors)
    await provision(admin)
    for organ in ORGAN_NAMES:
        environment = {**organ_environment(directory, organ), **(extra_env or {})}
        workers.append(spawn_worker(organ, url, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    return admin


@contextlib.asynccontextmanager
async def with_organs(secured: Secured, errors: list[str], *users: str) -> AsyncIterator[list[Tract]]:
    """The admin (the tract provisioned, the organs started) and a connection as each of ``users``, in that
    order, all closed on leaving; the server's errors on each go to ``errors``."""
    server, directory, workers = secured
    tracts = [await provisioned_with_organs(server.url, directory, workers, errors)]
    try:
        for user in users:
            tracts.append(await connect_as(server.url, directory, user, errors))
        yield tracts
    finally:
        for tract in tracts:
            await tract.nc.close()


async def admitted(tract: Tract, actor: str, text: str = EXAMPLE, **fields: str) -> tuple[Envelope, Envelope]:
    """``text`` handed in by ``actor`` through ``tract`` and its outcome, which must be an admission."""
    paste, outcome = await hand_in_paste(tract, text, origin=UserInput(actor=actor), timeout=60, **fields)
    assert isinstance(outcome.payload, Admitted), outcome.payload
    return paste, outcome


async def victims_admitted_paste(
    secured: Secured, errors: list[str], actor: str = "victim"
) -> tuple[Tract, Tract, Msg]:
    """Organs started as their own users, and one paste from the host admitted: the admin, the host, and the
    genuine message the absorption organ sent the border."""
    server, directory, workers = secured
    admin = await provisioned_with_organs(server.url, directory, workers, errors)
    host = await connect_as(server.url, directory, "host", errors)
    await admitted(host, actor)
    [genuine] = await read_subject(admin, admin.subjects.border_in)
    return admin, host, genuine


def report(finding: int, attack: str, outcome: str) -> None:
    """One row of the security scenario: the issue's finding, the attack, and refused at the door /
    rejected with reason / admitted (run with ``-s`` and keep the ``[security]`` lines for the table)."""
    print(f"[security] #{finding} | {attack} | {outcome}")
