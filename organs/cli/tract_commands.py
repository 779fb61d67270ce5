"""The commands that run the tract: ``ichor up`` (NATS and the three organs, supervised), ``provision``,
``security`` and ``worker``."""

from __future__ import annotations

import argparse
import asyncio
import shlex
import signal
import sys
import time
from pathlib import Path
from typing import Any

from envelopes.subjects import Subjects
from envelopes.types import DEFAULT_ENCODING
from organs.anatomy import ABSORPTION, BORDER, ORGAN_NAMES, STOMACH
from organs.cli.client_commands import ingest
from organs.cli.common import INSECURE_MARK, Command, actor_of, as_user, bus_settings, data_dir, read_input
from organs.counting import counter_for
from organs.errors import IchorError
from organs.operations.security import (
    generate_security,
    organ_environment,
    permissions,
    user_environment,
    write_private,
)
from organs.operations.supervisor import ServerKeeper, Supervisor, lock_data_directory
from organs.runtime.bus import BusSettings, connect, provision
from organs.runtime.logs import configure_logging, get_logger
from organs.runtime.organ import OrganBuilder, run_organ
from organs.runtime.server import EmbeddedServer
from organs.settings import Settings
from organs.signing import load_signer, load_trusted_keys

__all__ = ["add_tract_commands"]


def _organ_builder(organ: str, bus: BusSettings, settings: Settings) -> OrganBuilder:
    match organ:
        case STOMACH.name:
            from organs.stomach.large import PasteLimits
            from organs.stomach.worker import build_stomach, ingest_config

            return build_stomach(
                bus,
                ingest_config(settings),
                signer=load_signer(STOMACH.wire_name, settings),
                limits=PasteLimits.from_settings(settings),
                trusted_keys=load_trusted_keys(settings),
            )
        case ABSORPTION.name:
            from organs.absorption.worker import build_absorption

            return build_absorption(bus, signer=load_signer(ABSORPTION.wire_name, settings))
        case BORDER.name:
            from organs.border.worker import border_config, build_border

            return build_border(bus, border_config(settings))
    raise IchorError(f"unknown organ {organ!r}; expected one of {', '.join(ORGAN_NAMES)}")


# --- ichor worker ------------------------------------------------------------


def cmd_worker(args: argparse.Namespace) -> int:
    # Before the organ is built: its loggers bind at build time and must render JSON.
    configure_logging(level=args.settings.log_level, log_format=args.settings.log_format)
    bus = bus_settings(args)
    encoding = args.settings.encoding or DEFAULT_ENCODING
    run_organ(
        args.organ,
        bus,
        _organ_builder(args.organ, bus, args.settings),
        warm_up=lambda: counter_for(encoding).describe(),
        health=None if args.settings.metrics_port is None else (args.settings.metrics_host, args.settings.metrics_port),
        liveness=Path(args.settings.liveness_file) if args.settings.liveness_file else None,
    )
    return 0


# --- ichor up ----------------------------------------------------------------


_LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


def _announce_security(args: argparse.Namespace, log: Any, security_dir: Path) -> None:
    """Say, at every start, what this tract's security is and what a client needs."""
    if args.insecure:
        warning = (
            "ichor up: --insecure: NO authentication, NO permissions, NO signatures. Any client that reaches "
            f"{args.host}:{args.port} reads every paste (raw secrets included) and can speak as any organ. "
            "For a throwaway experiment only."
        )
        print(warning, file=sys.stderr, flush=True)
        log.warning("security.off", host=args.host, hint="drop --insecure for per-user nkeys and signing")
        return
    log.info(
        "security.ready",
        directory=str(security_dir),
        users=sorted(permissions(Subjects()).keys()),
        hint=f"ichor ingest/frame/tail/status/dlq/mcp here find their identity in {security_dir}; "
        f"elsewhere: ichor security env {security_dir} host",
    )
    if args.host not in _LOOPBACK and not args.nats:
        log.warning("nats.exposed", host=args.host, hint="clients authenticate with their nkey seeds")


def cmd_up(args: argparse.Namespace) -> int:
    as_json = configure_logging(level=args.settings.log_level, log_format=args.settings.log_format)
    log = get_logger("supervisor")
    stop_requested = False

    def request_stop(*_: object) -> None:
        nonlocal stop_requested
        stop_requested = True

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    nats_url = args.nats or args.settings.nats_url
    data = data_dir(args)
    secure = not args.insecure
    security_dir = args.security or (data / "security")
    auth = ""
    mark = data / INSECURE_MARK
    if secure:
        generate_security(security_dir)
        auth = (security_dir / "auth.conf").read_text()
        mark.unlink(missing_ok=True)
    else:
        data.mkdir(parents=True, exist_ok=True)
        mark.write_text("ichor up --insecure runs on this directory: no authentication, no permissions.\n")
    _announce_security(args, log, security_dir)
    server = None
    keeper = None
    if not nats_url:
        # Held until this process exits; a second ``ichor up`` on the same directory is refused.
        data_lock = lock_data_directory(data)
        log.info("data.locked", data_dir=str(data), lock=data_lock.name)
        server = EmbeddedServer(
            data, host=args.host, port=args.port, extra_config=auth, binary=args.settings.nats_server
        )
        keeper = ServerKeeper(server, log, server_log=get_logger("nats-server"))
        # Its output goes to this process's log, structured, and is watched for a failed storage.
        server.on_line = keeper.heard
        server.start()
        nats_url = server.url
        log.info("nats.embedded_started", url=nats_url, data_dir=str(data), pid=server.pid, secure=secure)
    environments = {organ: organ_environment(security_dir, organ) for organ in ORGAN_NAMES} if secure else {}
    if args.settings.metrics_port is not None:
        # Each worker its own port: the base plus the organ's place in the tract (stomach +0, absorption +1, border +2).
        for index, organ in enumerate(ORGAN_NAMES):
            environments.setdefault(organ, {})["ICHOR_METRICS_PORT"] = str(args.settings.metrics_port + index)
    for organ in ORGAN_NAMES:
        # The workers write through this process: on a terminal or not, every line is in one format.
        environments.setdefault(organ, {})["ICHOR_LOG_FORMAT"] = "json" if as_json else "console"
    supervisor = Supervisor(
        nats_url, log, environments, log_level=args.settings.log_level, liveness_dir=data / "liveness"
    )
    try:
        if secure:
            asyncio.run(_provision_as_admin(bus_settings(args, nats_url), security_dir))
        for organ in ORGAN_NAMES:
            supervisor.spawn(organ)
        if args.feed:
            settings = bus_settings(args, nats_url)
            if secure:
                settings = as_user(settings, security_dir, "host")
            code = asyncio.run(ingest(settings, read_input(args.feed), actor_of(args), None, args.timeout, False))
            log.info("up.fed", file=args.feed, exit_code=code)
        log.info("up.serving", url=nats_url, secure=secure, hint="Ctrl-C stops everything")
        while not stop_requested:
            if keeper is not None:
                keeper.check()
            supervisor.check()
            time.sleep(0.5)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        supervisor.stop()
        if server is not None:
            server.stop()
            log.info("nats.embedded_stopped")
    return 0


async def _provision_as_admin(settings: BusSettings, security_dir: Path) -> None:
    tract = await connect(as_user(settings, security_dir, "admin"), name="ichor-admin")
    try:
        await provision(tract)
    finally:
        await tract.nc.close()


# --- ichor provision -----------------------------------------------------------


async def _provision(settings: BusSettings) -> int:
    tract = await connect(settings, name="ichor-provision", persistent=False)
    try:
        await provision(tract)
    finally:
        await tract.nc.close()
    names = settings.subjects
    print(
        f"provisioned {names.tract_stream}, {names.dlq_stream}, {names.exhausted_stream}, {names.frames_bucket}, "
        f"{names.frame_index_bucket}"
    )
    return 0


def cmd_provision(args: argparse.Namespace) -> int:
    return asyncio.run(_provision(bus_settings(args)))


# --- ichor security ------------------------------------------------------------


def _write_env_file(path: Path, environment: dict[str, str]) -> None:
    write_private(path, "".join(f"{key}={value}\n" for key, value in environment.items()))


def cmd_security(args: argparse.Namespace) -> int:
    directory = generate_security(args.directory, tenants=args.tenant)
    if args.action == "env":
        if args.user is None:
            raise IchorError("ichor security env needs a user: " + ", ".join(permissions(Subjects())))
        environment = (
            organ_environment(directory, args.user)
            if args.user in ORGAN_NAMES
            else user_environment(directory, args.user)
        )
        for key, value in environment.items():
            print(f"export {key}={shlex.quote(value)}")
        return 0
    write_private(
        directory / "server.conf", "jetstream {\n  store_dir: /data\n}\nmax_payload: 8MB\ninclude ./auth.conf\n"
    )
    # Paths as the containers see them: each service mounts its own seed there (compose.yaml's secrets).
    for user in (*ORGAN_NAMES, "admin"):
        environment = organ_environment(directory, user) if user in ORGAN_NAMES else user_environment(directory, user)
        for key in ("ICHOR_NATS_NKEY_FILE", "ICHOR_SIGNING_SEED_FILE", "ICHOR_TRUSTED_KEYS_FILE"):
            if key in environment:
                environment[key] = environment[key].replace(str(directory), "/etc/ichor/security")
        (directory / "env").mkdir(mode=0o700, exist_ok=True)
        _write_env_file(directory / "env" / f"{user}.env", environment)
    print(f"wrote users, permissions and keys to {directory} (secrets are mode 0600; keep them out of git)")
    return 0


def add_tract_commands(command: Command) -> None:
    """The commands that run the tract: up, provision, security, worker."""
    up = command("up", cmd_up, "start NATS (embedded unless --nats) and the three organs, supervised")
    up.add_argument("--nats", help="an existing NATS URL; without it an embedded nats-server starts")
    up.add_argument("--host", default="127.0.0.1", help="the address the embedded server binds (loopback by default)")
    up.add_argument("--port", type=int, default=4222, help="embedded server port (0 picks a free one)")
    up.add_argument("--data", type=Path, help="data directory (default $ICHOR_DATA or .ichor/data)")
    up.add_argument("--feed", help="after start, ingest this file once and print the outcome")
    up.add_argument("--actor", help="the user_input actor of --feed (default $ICHOR_ACTOR or your login)")
    up.add_argument("--timeout", type=float, default=60.0)
    mode = up.add_mutually_exclusive_group()
    mode.add_argument("--secure", action="store_true", help="the default: per-user nkeys, permissions, signatures")
    mode.add_argument("--insecure", action="store_true", help="no authentication at all (a throwaway experiment)")
    up.add_argument("--security", type=Path, help="where credentials and keys are kept (default DATA/security)")

    provision_command = command("provision", cmd_provision, "create or update the tract's streams and stores")
    provision_command.add_argument("--nats")

    security = command("security", cmd_security, "generate per-organ users, permissions and signing keys")
    security.add_argument("action", choices=("init", "env"), help="init: write the files; env: print a user's exports")
    security.add_argument("directory", type=Path)
    security.add_argument("user", nargs="?", help="with env: an organ, host, upstream, operator, admin or a tenant")
    security.add_argument(
        "--tenant", action="append", default=[], help="another host with its own identity, seeing only its own pastes"
    )

    worker = command("worker", cmd_worker, "run one organ's worker against a NATS server")
    worker.add_argument("organ", choices=ORGAN_NAMES)
    worker.add_argument("--nats", help="NATS URL (default $ICHOR_NATS_URL or nats://127.0.0.1:4222)")
