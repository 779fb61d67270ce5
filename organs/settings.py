"""Every ``ICHOR_*`` environment variable, read once at start into one typed, checked value.

``Settings.from_environ(os.environ)`` is the only place the package reads its
configuration from the environment; commands and workers take the result and hand
each part to what needs it. A field ``name`` is the variable ``ICHOR_NAME``; an
empty variable counts as unset. msgspec converts the strings and checks each
constraint, and a value that cannot be used raises one ``ConfigError`` whose
message names the variable, the value and what is allowed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import msgspec

from envelopes.types import EncodingName
from organs.errors import ConfigError

__all__ = ["ENV_PREFIX", "LogFormat", "LogLevel", "Settings", "redelivery_backoff_s", "variable_of"]

ENV_PREFIX = "ICHOR_"

Positive = Annotated[int, msgspec.Meta(ge=1)]
NonNegative = Annotated[int, msgspec.Meta(ge=0)]
PositiveSeconds = Annotated[float, msgspec.Meta(gt=0)]
# One or more comma-separated server URLs, as nats-py takes them.
NatsUrls = Annotated[
    str,
    msgspec.Meta(
        pattern=r"^((nats|tls|ws|wss)://)?[^\s,/]+(,((nats|tls|ws|wss)://)?[^\s,/]+)*$",
        description="one or more comma-separated server URLs such as nats://host:4222",
    ),
]
SubjectPrefix = Annotated[
    str,
    msgspec.Meta(
        pattern=r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$",
        description="dot-separated subject tokens of letters, digits, - and _ (no wildcards)",
    ),
]
Word = Annotated[str, msgspec.Meta(pattern=r"^\S+$", description="text without white space")]
LogLevel = Literal["debug", "info", "warning", "error", "critical"]
# ``auto``: JSON lines off a terminal, the console renderer on one (``ichor up`` hands its choice to its workers).
LogFormat = Literal["auto", "json", "console"]

_TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
_FALSE_WORDS = frozenset({"0", "false", "no", "off"})


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """The configuration of one process. Defaults are the documented ones; ``None`` means "not set"."""

    # The bus.
    nats_url: NatsUrls | None = None
    prefix: SubjectPrefix = "ichor"
    replicas: Annotated[int, msgspec.Meta(ge=1, le=5)] = 1
    # JetStream deduplicates redeliveries only within this window, so the whole redelivery schedule
    # (``redelivery_backoff_s``) must fit inside it.
    duplicate_window_s: Annotated[int, msgspec.Meta(ge=120)] = 120
    max_age_s: Positive = 7 * 24 * 3600
    # A worker heartbeats every input it holds three times per ack wait, so a short wait only
    # decides how soon the inputs of a worker that died come back, never cuts a long digest short.
    ack_wait_s: PositiveSeconds = 3.0
    # Deliveries of one input before it is dead-lettered, a crash of its worker included.
    max_deliver: Annotated[int, msgspec.Meta(ge=2, le=20)] = 6
    # What the server keeps (0: no limit); a limit refuses new writes, never drops stored ones.
    tract_max_bytes: NonNegative = 1 << 30
    dlq_max_bytes: NonNegative = 256 << 20
    dlq_max_age_s: NonNegative = 30 * 24 * 3600
    frames_max_bytes: NonNegative = 1 << 30
    raw_max_bytes: NonNegative = 256 << 20
    index_max_bytes: NonNegative = 64 << 20
    # The uploads bucket of senders without their own, and each named sender's own (its quota, per day kept).
    uploads_max_bytes: NonNegative = 256 << 20
    uploads_sender_max_bytes: NonNegative = 256 << 20
    store_max_age_s: NonNegative = 30 * 24 * 3600
    # A worker serves /healthz, /readyz and /metrics here (unset: no server); ``ichor up`` gives
    # its workers this port plus their index in the tract (stomach +0, absorption +1, border +2).
    metrics_port: Annotated[int, msgspec.Meta(ge=1, le=65533)] | None = None
    # Where that server listens: loopback unless told (a container sets 0.0.0.0 for its scraper).
    metrics_host: Word = "127.0.0.1"
    # A worker touches this file while it makes progress; ``ichor up`` restarts one whose file goes stale.
    liveness_file: str | None = None
    instance: Word | None = None
    nats_user: Word | None = None
    nats_password: str | None = None
    # The file holding the user's nkey seed: the server checks a signature, never stores a secret.
    nats_nkey_file: str | None = None
    provision: bool = True
    nats_server: str | None = None
    # The stomach's core (unset: the core's own defaults).
    budget_tokens: Positive | None = None
    shallow_chars: Positive | None = None
    deferred_chars: Positive | None = None
    shallow_backlog: NonNegative | None = None
    deferred_backlog: NonNegative | None = None
    max_blocks: Positive | None = None
    encoding: EncodingName | None = None
    # A paste over this many bytes is digested on its own consumer (``<prefix>.stomach.large``), in a child
    # process, so that it neither holds a place among the small pastes nor takes their CPU.
    large_paste_bytes: Positive = 2 * 1024 * 1024
    # A paste over this many bytes is refused: dead-lettered with a reason that names this setting.
    max_paste_bytes: Positive = 128 * 1024 * 1024
    # Personal-data categories to pseudonymise, comma-separated (the stomach checks the names).
    redact: str | None = None
    # The border.
    border_allow_external: bool = False
    border_rate: Positive | None = None
    border_rate_window_s: PositiveSeconds | None = None
    # Envelopes per window of one authenticated sender (its seal's key), every actor it names together.
    border_sender_rate: Positive | None = None
    border_budget_tokens: Positive | None = None
    # A credential in the goal (never rewritten): reject the yield, or admit it with a finding.
    border_secret_in_goal: Literal["reject", "admit"] = "reject"
    kernel_instructions: str | None = None
    # The frame tools the host lets the model call, comma-separated, or "none".
    frame_tools: str | None = None
    session_ttl_s: PositiveSeconds | None = None
    workspace_instructions: str | None = None
    # Signed secretions.
    signing_seed_file: str | None = None
    signing_seed: str | None = None
    trusted_keys_file: str | None = None
    # The command line and the process.
    # The tract's data directory: ``ichor up`` keeps its store and credentials there, the commands find theirs.
    data: str | None = None
    actor: str | None = None
    log_level: LogLevel = "info"
    log_format: LogFormat = "auto"
    # Test-only fault injection: a worker dies after publishing its outputs and before acking its input.
    fault_kill_before_ack: bool = False
    # Test-only fault injection: a worker dies on every delivery of an input whose bytes hold this text.
    fault_kill_on: str | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read and check every ``ICHOR_*`` variable of ``environ`` (default: this process's environment)."""
        env = os.environ if environ is None else environ
        raw = {name: env[variable_of(name)] for name in cls.__struct_fields__ if env.get(variable_of(name))}
        for name in _BOOLEAN_FIELDS & raw.keys():
            raw[name] = _boolean(raw[name])
        if "log_level" in raw:
            raw["log_level"] = raw["log_level"].lower()
        try:
            settings = msgspec.convert(raw, cls, strict=False)
        except msgspec.ValidationError as error:
            name = _field_of(error)
            raise ConfigError(_refusal(name, raw.get(name, ""))) from None
        schedule = settings.redelivery_backoff_s()
        if sum(schedule) >= settings.duplicate_window_s:
            raise ConfigError(
                f"{variable_of('ack_wait_s')}={settings.ack_wait_s:g} with {variable_of('max_deliver')}="
                f"{settings.max_deliver} is not allowed: its redeliveries span {sum(schedule):g} s, which must stay "
                f"below {variable_of('duplicate_window_s')}={settings.duplicate_window_s}"
            )
        if settings.large_paste_bytes > settings.max_paste_bytes:
            raise ConfigError(
                f"{variable_of('large_paste_bytes')}={settings.large_paste_bytes} is not allowed: at most "
                f"{variable_of('max_paste_bytes')}={settings.max_paste_bytes}"
            )
        if settings.nats_nkey_file is not None and not os.access(settings.nats_nkey_file, os.R_OK):
            raise ConfigError(
                f"{variable_of('nats_nkey_file')}={settings.nats_nkey_file!r} is not allowed: a readable nkey seed file"
            )
        if settings.nats_server is not None and not os.access(settings.nats_server, os.X_OK):
            raise ConfigError(
                f"{variable_of('nats_server')}={settings.nats_server!r} is not allowed: the path of an executable"
            )
        liveness = settings.liveness_file
        if liveness is not None and not os.access(os.path.dirname(liveness) or ".", os.W_OK):
            raise ConfigError(f"{variable_of('liveness_file')}={liveness!r} is not allowed: a file in a writable place")
        return settings

    def redelivery_backoff_s(self) -> tuple[float, ...]:
        """How long each delivery of an input may go unsettled before the next: the ack wait, doubling, capped.

        The same schedule spaces the retries of transient failures, so an outage of the bus is ridden out
        for about a minute before an input is dead-lettered as undeliverable.
        """
        return redelivery_backoff_s(self.ack_wait_s, self.max_deliver)

    def frame_tool_names(self) -> tuple[str, ...] | None:
        """The frame tools named by ``ICHOR_FRAME_TOOLS`` (``none``: no tool), or ``None`` when it is unset."""
        if self.frame_tools is None:
            return None
        if self.frame_tools.strip().lower() == "none":
            return ()
        return tuple(tool.strip() for tool in self.frame_tools.split(",") if tool.strip())


# The longest wait between two deliveries of one input, unless the ack wait itself is longer.
BACKOFF_CAP_S = 30.0


def redelivery_backoff_s(ack_wait_s: float, max_deliver: int) -> tuple[float, ...]:
    """The wait after each of the first ``max_deliver - 1`` deliveries (JetStream's ``BackOff``)."""
    cap = max(ack_wait_s, BACKOFF_CAP_S)
    return tuple(min(ack_wait_s * 2**attempt, cap) for attempt in range(max_deliver - 1))


def variable_of(name: str) -> str:
    """The environment variable of the field ``name``."""
    return ENV_PREFIX + name.upper()


def _info() -> dict[str, Any]:
    info = msgspec.inspect.type_info(Settings)
    assert isinstance(info, msgspec.inspect.StructType)
    return {field.name: field.type for field in info.fields}


_FIELD_TYPES = _info()
_BOOLEAN_FIELDS = frozenset(name for name, kind in _FIELD_TYPES.items() if isinstance(kind, msgspec.inspect.BoolType))


def _boolean(raw: str) -> Any:
    word = raw.strip().lower()
    if word in _TRUE_WORDS:
        return True
    if word in _FALSE_WORDS:
        return False
    return raw  # msgspec refuses it, and the refusal names the variable


def _field_of(error: msgspec.ValidationError) -> str:
    found = re.search(r"at `\$\.(\w+)`", str(error))
    return found.group(1) if found else ""


def _allowed(kind: Any) -> str:
    """What a field accepts, in words, from its type and constraints."""
    if isinstance(kind, msgspec.inspect.Metadata):
        return str((kind.extra_json_schema or {}).get("description") or _allowed(kind.type))
    if isinstance(kind, msgspec.inspect.UnionType):
        return " or ".join(
            _allowed(member) for member in kind.types if not isinstance(member, msgspec.inspect.NoneType)
        )
    if isinstance(kind, msgspec.inspect.BoolType):
        return "a boolean (1/0, true/false, yes/no, on/off)"
    if isinstance(kind, msgspec.inspect.LiteralType):
        return "one of " + ", ".join(str(value) for value in kind.values)
    if isinstance(kind, msgspec.inspect.IntType | msgspec.inspect.FloatType):
        noun = "an integer" if isinstance(kind, msgspec.inspect.IntType) else "a number"
        bounds = [
            f"{symbol} {value}"
            for symbol, value in ((">=", kind.ge), (">", kind.gt), ("<=", kind.le), ("<", kind.lt))
            if value is not None
        ]
        return " ".join([noun, " and ".join(bounds)]).strip()
    return "text"


def _refusal(name: str, value: str) -> str:
    if name not in _FIELD_TYPES:
        return f"the {ENV_PREFIX}* settings cannot be read"
    return f"{variable_of(name)}={value!r} is not allowed: {_allowed(_FIELD_TYPES[name])}"
