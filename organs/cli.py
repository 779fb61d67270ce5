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
import asyncio
import contextlib
import dataclasses
import getpass
import json
import shlex
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, get_args

import msgspec
import nats.errors
import nats.js.errors
from nats.micro.service import ServiceStats

from envelopes.codec import encode_json, envelope_schema
from envelopes.subjects import Subjects
from envelopes.types import DEFAULT_ENCODING, FrameReply, Rejected, UserInput
from organs import __version__
from organs.anatomy import ABSORPTION, BORDER, ORGAN_NAMES, ORGANS, STOMACH
from organs.counting import counter_for
from organs.errors import BusUnavailableError, ConfigError, IchorError
from organs.operations.security import (
    generate_security,
    organ_environment,
    permissions,
    seed_path,
    user_environment,
    write_private,
)
from organs.operations.supervisor import ServerKeeper, Supervisor, lock_data_directory
from organs.runtime.bus import BusSettings, Tract, connect, provision
from organs.runtime.logs import configure_logging, get_logger
from organs.runtime.organ import OrganBuilder, run_organ
from organs.runtime.server import EmbeddedServer
from organs.settings import LogLevel, Settings
from organs.signing import load_signer, load_trusted_keys

__all__ = ["main"]

_Reply = TypeVar("_Reply")

EXIT_USAGE = 2
EXIT_TIMEOUT = 3
EXIT_REJECTED = 4
# How long ``ichor ingest`` tries to fetch an outcome's texts stored by reference before showing the reference.
STORED_TEXT_WAIT_S = 5.0


def _read_input(path: str) -> str:
    """The paste as bytes decoded UTF-8 with no newline translation, so a file, stdin and the bus agree.

    Text-mode reading would turn ``\\r`` and CRLF into ``\\n`` and shift every span and digest.
    """
    data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    return data.decode("utf-8")


DEFAULT_DATA = Path(".ichor/data")


def _data_dir(args: argparse.Namespace) -> Path:
    """The tract's data directory: ``--data``, else ``ICHOR_DATA``, else ``.ichor/data``."""
    given = getattr(args, "data", None)
    if given is not None:
        return Path(given)
    return Path(args.settings.data) if args.settings.data else DEFAULT_DATA


def _bus(args: argparse.Namespace, url: str | None = None, *, identity: str | None = None) -> BusSettings:
    """The bus settings of this command: ``--nats`` (or ``url``) over ``ICHOR_NATS_URL``.

    With an ``identity`` (``host``, ``operator``, ``admin``), a command run beside a secure ``ichor up``
    connects as that user with its seed from the data directory, unless the environment names
    credentials of its own; with no seed there it connects as it is (an ``--insecure`` tract).
    """
    settings = BusSettings.from_settings(args.settings, url or getattr(args, "nats", None))
    if identity is None or settings.nkey_file or settings.user:
        return settings
    data = _data_dir(args)
    security = data / "security"
    if (data / _INSECURE_MARK).exists() or not seed_path(security, identity).is_file():
        return settings
    return _as_user(settings, security, identity)


# Left in the data directory by ``ichor up --insecure`` (removed by a secure start): its server checks no
# identity, and a command beside it must not wait where only a secure tract answers (its own outcome subject).
_INSECURE_MARK = "INSECURE"


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
    bus = _bus(args)
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
    data = _data_dir(args)
    secure = not args.insecure
    security_dir = args.security or (data / "security")
    auth = ""
    mark = data / _INSECURE_MARK
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
            asyncio.run(_provision_as_admin(_bus(args, nats_url), security_dir))
        for organ in ORGAN_NAMES:
            supervisor.spawn(organ)
        if args.feed:
            settings = _bus(args, nats_url)
            if secure:
                settings = _as_user(settings, security_dir, "host")
            code = asyncio.run(_ingest(settings, _read_input(args.feed), _actor(args), None, args.timeout, False))
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


def _as_user(settings: BusSettings, security_dir: Path, user: str) -> BusSettings:
    environment = user_environment(security_dir, user)
    return dataclasses.replace(settings, user=user, nkey_file=environment["ICHOR_NATS_NKEY_FILE"], provision=False)


async def _provision_as_admin(settings: BusSettings, security_dir: Path) -> None:
    tract = await connect(_as_user(settings, security_dir, "admin"), name="ichor-admin")
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
    return asyncio.run(_provision(_bus(args)))


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


# --- ichor ingest --------------------------------------------------------------


async def _ingest(
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
        _ingest(
            _bus(args, identity="host"),
            _read_input(args.file),
            _actor(args),
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

    text = _read_input(args.file)
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
        return asyncio.run(_raw_frame(_bus(args, identity="operator"), args.id, args.json))
    return asyncio.run(_frame(_bus(args, identity="host"), args.id, args.full, args.json))


# --- ichor mcp ----------------------------------------------------------------


def cmd_mcp(args: argparse.Namespace) -> int:
    from organs.mcp import serve_http, serve_stdio
    from organs.mcp.server import LOOPBACK

    settings = _bus(args, identity="host")
    if args.http is None:
        asyncio.run(serve_stdio(settings))
        return 0
    # Beyond loopback a client must show the bearer token kept (and made, the first time) in the data directory.
    token_file = None if args.host in LOOPBACK else _data_dir(args) / "security" / "mcp.token"
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
    return asyncio.run(_tail(_bus(args, identity="operator"), args.json, args.limit))


# --- ichor status --------------------------------------------------------------

EXIT_NOT_READY = 5
EXIT_REFUSED = 6


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
    organs = asyncio.run(_gather_stats(_bus(args, identity="host"), args.wait))
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

    problems = asyncio.run(_storage_problems(_bus(args, identity="host")))
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
    return run_dlq(args, _bus(args, identity=identity))


def cmd_asyncapi(_: argparse.Namespace) -> int:
    from organs.asyncapi import asyncapi_document

    print(json.dumps(asyncapi_document(), indent=2))
    return 0


def cmd_schema(_: argparse.Namespace) -> int:
    print(json.dumps(envelope_schema(), indent=2))
    return 0


_Command = Callable[[str, Callable[[argparse.Namespace], int], str], argparse.ArgumentParser]

_DATA_HELP = "the tract's data directory, whose security/ holds this command's identity (default $ICHOR_DATA)"


def _add_tract_commands(command: _Command) -> None:
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

    _add_tract_commands(command)

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


def _actor(args: argparse.Namespace) -> str:
    return str(args.actor or args.settings.actor or getpass.getuser())


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


if __name__ == "__main__":
    sys.exit(main())
