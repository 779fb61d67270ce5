"""Structured log lines: a source prefix, JSON lines and logfmt, mined on their fields instead of raw text.

``docker compose logs`` opens each line with ``service  | `` and ``kubectl logs
--prefix`` with ``[pod/name/container] ``: that prefix is a source column, so it
is set aside (the header counts the sources) and the rest is mined. A JSON line
(``{"level":"warn","msg":…}``, bunyan, pino, docker's json-file, caddy, zap) or a
logfmt line (``level=warn msg="…" key=value``) is mined as ``time LEVEL message
key=value…``: its level marks alerts and its message is the template, where the
raw text would hide both inside one quoted, masked value. Example and excerpt
lines stay the real lines.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import islice

import msgspec

from organs.stomach.core.shapes.line_shapes import LOGFMT_PAIR
from organs.stomach.core.tuning import LogConfig

__all__ = ["View", "structured_view"]

_SOURCE = re.compile(r"(?:\[(?P<pod>pod/[^\]\s]{1,200})\]|(?P<service>[A-Za-z0-9][\w.\-]{0,62}?) *\|) ")
_MESSAGE_KEYS = ("msg", "message", "MESSAGE", "@message", "log", "event", "text")
_LEVEL_KEYS = ("level", "lvl", "severity", "levelname", "log.level", "@level", "loglevel")
_TIME_KEYS = ("time", "ts", "timestamp", "@timestamp", "t", "datetime")
# Bunyan's and pino's numeric levels.
_NUMERIC_LEVELS = {10: "TRACE", 20: "DEBUG", 30: "INFO", 40: "WARN", 50: "ERROR", 60: "FATAL"}
_DECODER = msgspec.json.Decoder()


@dataclass(frozen=True, slots=True)
class View:
    """The lines to mine (one per real line) and what the header says about how they were read."""

    lines: Sequence[str]
    note: str


def _source_split(lines: Sequence[str], config: LogConfig) -> tuple[list[str], Counter[str]] | None:
    """Each line without its source prefix, and the sources, when nearly every line has one."""
    sample = [line for line in lines[: config.structured_sample] if line.strip()]
    if sum(1 for line in sample if _SOURCE.match(line)) < len(sample) * config.structured_share or not sample:
        return None
    stripped: list[str] = []
    sources: Counter[str] = Counter()
    for line in lines:
        match = _SOURCE.match(line)
        if match is None:
            stripped.append(line)
            continue
        sources[match.group("pod") or match.group("service")] += 1
        stripped.append(line[match.end() :])
    filled = sum(1 for line in lines if line.strip())
    return (stripped, sources) if filled and sources.total() >= filled * config.structured_share else None


def _scalar(value: object) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        value = value.strip()
        return f'"{value}"' if " " in value else value
    return None


def _level(value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return _NUMERIC_LEVELS.get(value - value % 10, str(value))
    return str(value).upper()


_READ_KEYS = frozenset(_MESSAGE_KEYS) | frozenset(_LEVEL_KEYS) | frozenset(_TIME_KEYS)


def _fielded(fields: dict[str, object], config: LogConfig, constant: frozenset[str] = frozenset()) -> str | None:
    """``time LEVEL message key=value…`` of a record's fields, or ``None`` without a message or a level.

    Keys in ``constant`` hold one value in nearly every line: the header states them once.
    """
    message = next((fields[key] for key in _MESSAGE_KEYS if isinstance(fields.get(key), str)), None)
    level = next((fields[key] for key in _LEVEL_KEYS if key in fields), None)
    if message is None and level is None:
        return None
    used = _READ_KEYS | constant
    time = next((str(fields[key]) for key in _TIME_KEYS if key in fields), None)
    parts = [part for part in (time, None if level is None else _level(level)) if part]
    if isinstance(message, str):
        parts.append(message.strip())
    extra = 0
    for key, value in fields.items():
        if key in used or extra >= config.structured_fields:
            continue
        shown = _scalar(value)
        if shown is not None:
            parts.append(f"{key}={shown[: config.structured_value_chars]}")
            extra += 1
    # A field's value may hold a line break (a JSON string's \n): the record stays one line, as it was received.
    return " ".join(parts).replace("\n", " ")


def _json_fields(line: str) -> dict[str, object] | None:
    text = line.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        value = _DECODER.decode(text)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, dict) else None


def _logfmt_fields(line: str, min_pairs: int) -> dict[str, object] | None:
    if line.count("=") < min_pairs:
        return None
    pairs = LOGFMT_PAIR.findall(line)
    if len(pairs) < min_pairs:
        return None
    return {key: value[1:-1] if value.startswith('"') else value for key, value in pairs}


def structured_view(lines: Sequence[str], config: LogConfig) -> View | None:
    """The lines to mine when the log has a source prefix or is JSON lines or logfmt, else ``None``."""
    notes: list[str] = []
    split = _source_split(lines, config)
    min_pairs = config.logfmt_min_pairs
    bodies = lines
    if split is not None:
        bodies, sources = split
        named = ", ".join(f"{name} {count:,}" for name, count in sources.most_common(config.header_values_shown))
        more = " …" if len(sources) > config.header_values_shown else ""
        notes.append(f"lines open with their source ({named}{more}): set aside in templates")
    sample = list(islice((body for body in bodies if body.strip()), config.structured_sample))
    readers: tuple[tuple[Callable[[str], dict[str, object] | None], str], ...] = (
        (_json_fields, "JSON"),
        (lambda line: _logfmt_fields(line, min_pairs), "logfmt"),
    )
    for reader, name in readers:
        readable = sum(
            1 for body in sample if (fields := reader(body)) is not None and _fielded(fields, config) is not None
        )
        if not sample or readable < len(sample) * config.structured_share:
            continue
        parsed = [reader(body) for body in bodies]
        constant = _constant_fields([fields for fields in parsed if fields is not None], config.header_constant_share)
        viewed = []
        for body, fields in zip(bodies, parsed, strict=True):
            shown = None if fields is None else _fielded(fields, config, frozenset(constant))
            viewed.append(body if shown is None else shown)
        notes.append(f"{name} lines mined as time LEVEL message key=value (e.g. lines are the real lines)")
        if constant:
            held = " ".join(f"{key}={value}" for key, value in constant.items())
            notes.append(f"nearly every line holds {held[: config.template_chars]}")
        return View(viewed, "; ".join(notes))
    return None if split is None else View(bodies, "; ".join(notes))


def _constant_fields(parsed: list[dict[str, object]], constant_share: float) -> dict[str, str]:
    """The fields other than time, level and message that hold one scalar value in nearly every line."""
    values: Counter[tuple[str, str]] = Counter()
    for fields in parsed:
        for key, value in fields.items():
            shown = None if key in _READ_KEYS else _scalar(value)
            if shown is not None:
                values[key, shown] += 1
    share = len(parsed) * constant_share
    return {key: value for (key, value), count in values.items() if count >= share and len(parsed) > 1}
