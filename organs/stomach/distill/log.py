"""Log distillation: group lines into templates, keep the alerts, state the totals.

A line's template is the line with its variable fields masked as ``<*>``:
numbers and any token carrying a digit (ids, hex, IPs, UUIDs, versions, paths
with digits), quoted values, ``key=value`` values and digit-free absolute paths.
The leading timestamp is set aside first, so it never splits a template. When
most lines open with a clock, a line without one continues the record above it
(a stack trace inside a log stays with the line that announced it).

The rendering lists each template once, in order of first appearance, with its
count, first and last time, and one real line; every distinct warn/error-level
line is kept with its repeat count. When that does not fit the token target,
the lowest-priority pieces go first (the masked spelling of a template, then
extra alert lines, then the least frequent non-alert templates) and the
rendering says how many templates and lines it left out. Nothing here knows any
particular log format beyond the generic signals in ``organs.stomach.signals``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from organs.accounting import count_tokens, count_tokens_many
from organs.stomach.distill.text import elision, head_tail, plural, thousands
from organs.stomach.signals import ALERT_LEVELS, level_of
from organs.stomach.timestamps import format_instant, leading_stamp

__all__ = ["LogDigest", "distill_log", "log_window", "mask_variables"]

_MASK_PREFIX = 1000
_EXAMPLE_CHARS = 400
_ALERT_LINES_PER_TEMPLATE = 8

_VARIABLE = re.compile(
    r"(?<![\w])\"[^\"\n]{0,200}\""
    r"|(?<![\w])'[^'\n]{0,200}'(?!\w)"
    r"|(?<==)[^\s,;&)\]}>\"']{1,200}"
    # a token carrying a digit; the look-behind pins attempts to token starts, the bounded lazy look-ahead keeps
    # each attempt linear
    r"|(?<![\w.:/@+\-#])(?=[\w.:/@+\-#]{0,300}?\d)[\w.:/@+\-#]+"
    r"|(?<![\w.])(?:/[\w.\-@+~]{1,200}){2,}"
)


def mask_variables(body: str) -> str:
    masked = _VARIABLE.sub("<*>", body[:_MASK_PREFIX])
    return masked if len(body) <= _MASK_PREFIX else masked + "<…>"


@dataclass(slots=True)
class _Template:
    masked: str
    first_record: int
    last_record: int
    count: int = 0
    line_count: int = 0
    alert: bool = False
    alert_lines: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LogDigest:
    rendering: str
    templates: int
    alerts: int


@dataclass(frozen=True, slots=True)
class _Record:
    start: int
    end: int
    stamp_end: int


def _records(lines: list[str]) -> tuple[list[_Record], int]:
    """Records (a head line plus its continuation lines) and how many lines opened with a clock."""
    stamp_ends = []
    clocked = 0
    for line in lines:
        stamp = leading_stamp(line)
        stamp_ends.append(-1 if stamp is None else stamp.end)
        clocked += stamp is not None
    continuations = clocked * 2 >= len(lines)
    records: list[_Record] = []
    for index, stamp_end in enumerate(stamp_ends):
        if continuations and stamp_end < 0 and records:
            previous = records[-1]
            records[-1] = _Record(previous.start, index + 1, previous.stamp_end)
        else:
            records.append(_Record(index, index + 1, max(stamp_end, 0)))
    return records, clocked


def log_window(lines: list[str]) -> tuple[str | None, str | None]:
    """The earliest and latest full-date instants the lines open with (min/max, so order does not matter)."""
    earliest: tuple[int, str] | None = None
    latest: tuple[int, str] | None = None
    for line in lines:
        stamp = leading_stamp(line)
        if stamp is None or stamp.instant is None:
            continue
        instant = stamp.instant
        key = (instant[0], instant[1].ljust(9, "0"))
        if earliest is None or key < (earliest[0], earliest[1].ljust(9, "0")):
            earliest = instant
        if latest is None or key > (latest[0], latest[1].ljust(9, "0")):
            latest = instant
    if earliest is None or latest is None:
        return None, None
    try:
        return format_instant(earliest), format_instant(latest)
    except ValueError:
        return None, None


def _clip(line: str) -> str:
    if len(line) <= _EXAMPLE_CHARS:
        return line
    return f"{line[:_EXAMPLE_CHARS]}… [{plural(len(line) - _EXAMPLE_CHARS, 'character')} elided]"


def _stamp_text(line: str, stamp_end: int) -> str:
    return line[:stamp_end].strip(" []()")


def _mine(lines: list[str], records: list[_Record]) -> dict[str, _Template]:
    templates: dict[str, _Template] = {}
    for number, record in enumerate(records):
        head = lines[record.start]
        masked = mask_variables(head[record.stamp_end:])
        template = templates.get(masked)
        if template is None:
            template = _Template(masked, number, number)
            templates[masked] = template
        template.count += 1
        template.line_count += record.end - record.start
        template.last_record = number
        level = level_of(head)
        if level is not None and level in ALERT_LEVELS:
            template.alert = True
            body = head[record.stamp_end:].strip()
            if body in template.alert_lines or len(template.alert_lines) < _ALERT_LINES_PER_TEMPLATE:
                template.alert_lines[body] = template.alert_lines.get(body, 0) + 1
    return templates


@dataclass(slots=True)
class _Piece:
    order: tuple[int, int]
    priority: int
    text: str
    tokens: int = 0


def _pieces(lines: list[str], records: list[_Record], templates: dict[str, _Template]) -> list[_Piece]:
    pieces: list[_Piece] = []
    ranked = sorted(templates.values(), key=lambda t: (not t.alert, -t.count, t.first_record))
    rank_of = {id(template): rank for rank, template in enumerate(ranked)}
    for template in templates.values():
        rank = rank_of[id(template)]
        first = records[template.first_record]
        last = records[template.last_record]
        example = lines[first.start]
        if template.count > 1:
            span = f"{_stamp_text(example, first.stamp_end)} → {_stamp_text(lines[last.start], last.stamp_end)}"
            span = span if first.stamp_end and last.stamp_end else ""
            prefix = f"×{thousands(template.count)} [{span}] " if span else f"×{thousands(template.count)} "
        else:
            prefix = "×1 "
        entry = prefix + _clip(example)
        continuation = first.end - first.start - 1
        if continuation:
            inner = "\n".join("    " + _clip(line) for line in lines[first.start + 1:first.start + 4])
            more = continuation - min(continuation, 3)
            entry += "\n" + inner + (f"\n    {elision(more, 'continuation line')}" if more else "")
        pieces.append(_Piece((template.first_record, 0), rank, entry))
        if template.count > 1:
            pieces.append(_Piece((template.first_record, 1), 10_000 + rank, "    ≈ " + _clip(template.masked)))
        extra_alerts = [(body, count) for body, count in template.alert_lines.items()
                        if body != example[first.stamp_end:].strip()]
        for position, (body, count) in enumerate(extra_alerts, start=2):
            pieces.append(_Piece((template.first_record, position), 5_000 + rank, f"    ! ×{count} {_clip(body)}"))
    return pieces


def distill_log(text: str, target_tokens: int, encoding: str, *, mine: bool = True) -> LogDigest:
    """A compact rendering of a log within about ``target_tokens`` (the caller measures it exactly)."""
    lines = text.split("\n")
    if not mine:
        header = f"[{plural(len(lines), 'line')} log · head and tail only (shallow tier)]"
        return LogDigest(header + "\n" + head_tail(text, max(target_tokens - 20, 1)), 0, 0)
    records, _ = _records(lines)
    templates = _mine(lines, records)
    alert_templates = [template for template in templates.values() if template.alert]
    alert_lines = sum(template.count for template in alert_templates)
    window_from, window_to = log_window([lines[record.start] for record in records])
    window = f" · {window_from} → {window_to}" if window_from else ""
    header = (
        f"[{plural(len(lines), 'line')} log · {plural(len(templates), 'template')} · "
        f"{thousands(alert_lines)} error/warn{window}]"
    )
    pieces = _pieces(lines, records, templates)
    for piece, tokens in zip(pieces, count_tokens_many([piece.text for piece in pieces], encoding), strict=True):
        piece.tokens = tokens + 1
    return LogDigest(_fit(header, pieces, templates, target_tokens, encoding), len(templates), len(alert_templates))


def _fit(header: str, pieces: list[_Piece], templates: dict[str, _Template], target: int, encoding: str) -> str:
    by_priority = sorted(pieces, key=lambda piece: piece.priority)
    allowance = target - count_tokens(header, encoding) - 30
    while True:
        chosen: list[_Piece] = []
        spent = 0
        for piece in by_priority:
            if spent + piece.tokens > allowance:
                continue
            chosen.append(piece)
            spent += piece.tokens
        rendering = _render(header, chosen, templates)
        measured = count_tokens(rendering, encoding)
        if measured <= target or not chosen:
            return rendering
        allowance -= measured - target + 8


def _render(header: str, chosen: list[_Piece], templates: dict[str, _Template]) -> str:
    shown_templates = {piece.order[0] for piece in chosen if piece.order[1] == 0}
    omitted = [template for template in templates.values() if template.first_record not in shown_templates]
    body = [piece.text for piece in sorted(chosen, key=lambda piece: piece.order)]
    lines = [header, "templates in order of first appearance (×count [first → last] first line; ≈ template):", *body]
    if omitted:
        omitted_lines = sum(template.line_count for template in omitted)
        lines.append(
            f"… [{plural(len(omitted), 'template')} ({plural(omitted_lines, 'line')}) not shown; fetch full] …"
        )
    return "\n".join(lines)
