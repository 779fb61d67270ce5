"""structlog, configured once per process.

JSON lines on stdout when stdout is not a terminal, the console renderer on a
terminal. No string in a line holds a credential: each is scrubbed with the
stomach's redaction rules. Every envelope-handling event carries organ, envelope_id, trace_id,
kind, tier, outcome and duration_ms (see ``envelope_fields``).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any

import structlog

from envelopes.types import Envelope
from organs.redaction import scrub_secrets, secret_free

__all__ = ["configure_logging", "envelope_fields", "get_logger", "message_fields"]

_configured = False
_as_json = True


def _drop_color_message(_: Any, __: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    event_dict.pop("color_message", None)
    return event_dict


def _scrub_secrets(_: Any, __: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    # Defence in depth: an exception text or a reason may quote a paste; no log line holds a credential.
    # Most lines hold no rule's keyword at all, which one pass over all their strings tells.
    strings: list[str] = []
    for value in event_dict.values():
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, list | tuple):
            strings.extend(item for item in value if isinstance(item, str))
    if secret_free(strings):
        return event_dict
    for key, value in event_dict.items():
        if isinstance(value, str):
            event_dict[key] = scrub_secrets(value)
        elif isinstance(value, list | tuple):
            event_dict[key] = [scrub_secrets(item) if isinstance(item, str) else item for item in value]
    return event_dict


def configure_logging(*, json: bool | None = None, level: str = "INFO", log_format: str = "auto") -> bool:
    """Configure structlog for this process (later calls are no-ops); returns whether it renders JSON.

    ``json`` wins over ``log_format`` (``ICHOR_LOG_FORMAT``: ``json``, ``console`` or ``auto``, which is
    JSON when stdout is not a terminal). Records of the standard library's loggers (uvicorn's, the MCP
    SDK's) are rendered the same way, so a process writes one format."""
    global _configured, _as_json
    if _configured:
        return _as_json
    _configured = True
    if json is None:
        json = {"json": True, "console": False}.get(log_format, not sys.stdout.isatty())
    as_json = _as_json = json
    renderer: Any = structlog.processors.JSONRenderer() if as_json else structlog.dev.ConsoleRenderer()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            _drop_color_message,
            _scrub_secrets,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stdout),
        cache_logger_on_first_use=True,
    )
    root = logging.getLogger()
    root.handlers = [_IntoStructlog()]
    # Libraries say much at info; their warnings always, all of it when debugging.
    root.setLevel(logging.DEBUG if level.upper() == "DEBUG" else logging.WARNING)
    return as_json


class _IntoStructlog(logging.Handler):
    """Hands a standard-library log record to structlog: its logger's name is the event, its text the message."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            structlog.get_logger("ichor").log(
                record.levelno, record.name, message=record.getMessage(), exc_info=record.exc_info or None
            )
        except Exception:  # a log record must never take its process down
            self.handleError(record)


def get_logger(organ: str) -> Any:
    return structlog.get_logger("ichor").bind(organ=organ)


def message_fields(headers: Mapping[str, str] | None) -> dict[str, Any]:
    """The keys a log line about a message not (yet) decoded carries: its id and trace from its headers."""
    headers = headers or {}
    traceparent = headers.get("traceparent", "")
    return {
        "envelope_id": headers.get("Nats-Msg-Id"),
        "trace_id": traceparent[3:35] if len(traceparent) == 55 else None,
        "traceparent": traceparent or None,
    }


def envelope_fields(envelope: Envelope) -> dict[str, Any]:
    """The keys every envelope-handling log line carries about its envelope."""
    return {
        "envelope_id": envelope.id,
        "trace_id": envelope.trace_id,
        "traceparent": envelope.trace,
        "kind": envelope.kind,
        "tier": envelope.tier,
    }
