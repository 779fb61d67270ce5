"""Line-shape signals shared by the classifier and the distillers.

Every pattern here is applied to a bounded prefix of one line and is built so
that a failed attempt costs time linear in that prefix (no nested quantifiers
over the same characters), which keeps pathological pastes cheap.

The shapes of stack traces (headers, frames, the lines that belong to a trace
between them) live in ``organs.stomach.trace_shapes`` and are re-exported here.
"""

from __future__ import annotations

import re

from organs.stomach.trace_shapes import (
    STRONG_HEADERS,
    is_go_function,
    is_trace_context,
    is_trace_frame,
    kernel_prefix_end,
    trace_header,
)

__all__ = [
    "ALERT_LEVELS",
    "LINE_PREFIX",
    "STRONG_HEADERS",
    "is_alert",
    "is_go_function",
    "is_trace_context",
    "is_trace_frame",
    "kernel_prefix_end",
    "level_of",
    "trace_header",
]

# Only this much of a line is examined for shape: the signals all live at the start.
LINE_PREFIX = 400

_UPPER_LEVELS = "TRACE|DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|ERR|CRITICAL|CRIT|FATAL|SEVERE|ALERT|EMERGENCY|EMERG|PANIC"
_LOWER_LEVELS = _UPPER_LEVELS.lower()
_LEVEL = re.compile(
    rf"(?<![\w-])(?P<upper>{_UPPER_LEVELS})(?![\w-])"
    rf"|\[(?P<bracketed>{_LOWER_LEVELS}|{_UPPER_LEVELS}|Info|Warning|Warn|Error|Debug|Notice|Fatal|Critical)\]"
    rf"|(?:level|severity|lvl)=\"?(?P<keyed>{_LOWER_LEVELS}|{_UPPER_LEVELS})\b"
    # a capitalised level standing as a field: "2016-09-28 04:30:30, Info   CBS", "| Warning |"
    r"|(?<=[\s,|])(?P<field>Info|Warning|Warn|Error|Debug|Notice|Fatal|Critical)(?=\s\s|\s?[|,\]])"
    # syslog daemons: "sshd[42]: error: ..."
    rf"|(?<=: )(?P<daemon>error|warning|fatal|crit|alert|emerg)(?=:)"
    # logcat: "1702  2395 W ActivityManager: ..."
    r"|(?<=\d )(?P<letter>[VDIWEF])(?= [\w.$/-]{1,80}:)"
)

ALERT_LEVELS = frozenset(
    [
        "warning",
        "warn",
        "error",
        "err",
        "critical",
        "crit",
        "fatal",
        "severe",
        "alert",
        "emergency",
        "emerg",
        "panic",
        "w",
        "e",
        "f",
    ]
)


_LEVEL_WINDOW = 160
# Every alternative of ``_LEVEL`` but the logcat letter spells one of these, in some case: a line
# whose window holds none of them (nor a logcat letter) is rejected by substring searches, which
# cost a fraction of the failed regex search over every position.
_LEVEL_STEMS = ("info", "warn", "err", "debug", "trace", "notice", "crit", "fatal", "severe", "alert", "emerg", "panic")
_LOGCAT_LETTER = re.compile(r"\d [VDIWEF] ")


def level_of(line: str) -> str | None:
    """The lower-cased level token the line carries near its start, if any."""
    window = line[:_LEVEL_WINDOW]
    lowered = window.lower()
    if not any(stem in lowered for stem in _LEVEL_STEMS) and _LOGCAT_LETTER.search(window) is None:
        return None
    match = _LEVEL.search(window)
    if match is None:
        return None
    return next(group for group in match.groups() if group is not None).lower()


# --- alerts: the lines a reader looks for first ------------------------------------------

_METHODS = ("GET", "POST", "PUT", "DELETE", "HEAD", "PATCH", "OPTIONS", "CONNECT")
_METHOD = "(?:" + "|".join(_METHODS) + ")"
# Android's "E/Tag( 123): message" and the bare "E/Tag: message" of logcat's brief format.
_LOGCAT_BRIEF = re.compile(r"[EFW]/[\w.$-]{1,80}\s{0,4}(?:\(\s{0,8}\d{1,10}\))?:")
# A 4xx/5xx status where each access-log shape puts it: the field right after the quoted
# request (common, combined), or the status, sub-status and win32 status of a W3C line.
# Matched once, at the line's first request method. Anywhere else a 404 is a byte count,
# a path segment or an id.
_REQUEST_FAILURE = re.compile(
    rf"{_METHOD} (?:[^\"\n]{{0,2000}}\" [45]\d\d\b|[^\n\"]{{0,600}}?(?<= )[45]\d\d \d{{1,5}} \d{{1,10}}\b)"
)
# A status column ("| 404 |") or the value of a status key (JSON, logfmt).
_STATUS_FAILURE = re.compile(r"\| {0,3}[45]\d\d {0,3}\||(?i:status(?:_?code)?)[\"']?\s{0,2}[:=]\s{0,2}[\"']?[45]\d\d\b")

# Each pattern runs only on a line whose lowered window holds one of its stems, so an ordinary
# line costs a few substring searches and no regex at all.
_WORD_ALERTS: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (
        ("fail",),
        re.compile(
            r"\b(?:FAILURE|FAILED|FAIL)\b"
            # failure words, unless a zero count stands right before or after them ("0 failed", "failed: 0")
            r"|(?<!\b0 )(?<![Nn]o )\b[Ff]ail(?:ed|ure)\b(?![:=] ?0\b)"
            # test failure summaries: "3 failed", "failures=1", "Failures: 4"
            r"|(?i:\b[1-9]\d{0,6} (?:failed|failures?|failing)\b|\b(?:failures?|failed|failing)[=:] ?[1-9])"
        ),
    ),
    (
        ("err",),
        re.compile(
            r"(?<![\w-])\w{0,100}Error:|(?<![\w-])error(?:\[\w{1,20}\])?:(?! ?0\b)|\bError [1-9]\d{0,3}\b"
            r"|(?i:\b[1-9]\d{0,6} errors?\b|\berrors?[=:] ?[1-9])"
        ),
    ),
    (("exception",), re.compile(r"\w{0,100}Exception(?=[:\s]|$)")),
    (("fatal",), re.compile(r"(?<![\w-])fatal:|(?i:\bfatal error\b)")),
    (("panic",), re.compile(r"\bpanic:|\bpanicked at\b|\bKernel panic\b")),
    (("bug:",), re.compile(r"\bBUG:")),
    (("traceback",), re.compile(r"\bTraceback \(most recent call last\)")),
    (("oops",), re.compile(r"\bOops\b")),
    (("segfault", "segmentation fault", "core dumped"), re.compile(r"(?i:segfault|segmentation fault|core dumped)")),
    (("killed",), re.compile(r"\bOOMKilled\b|\bKilled process\b")),
    (
        ("exit", "non-zero", "status="),
        re.compile(
            r"(?i:\bexit(?:ed)?(?: with)?[ _](?:status|code)[:= ]{1,3}[\"']?-?(?:[1-9]\d{0,4}|0\d))"
            r"|(?i:\breturned non-zero\b|\bnon-zero exit\b)|\bstatus=[1-9]\d{0,3}/"
        ),
    ),
)
_LEVEL_HINTS = ("warn", "err", "crit", "fatal", "severe", "alert", "emerg", "panic")


def is_alert(line: str) -> bool:
    """Whether a reader scanning for trouble would stop at this line.

    Level words at or above a warning, bracketed or keyed levels, logcat letters, a 4xx/5xx
    status in a request line, a status column or under a status key, failure and panic words,
    a non-zero exit status and a test run's failure count. A zero count, an exit status of 0
    and a 2xx/3xx status are not alerts.
    """
    window = line[:LINE_PREFIX]
    lowered = window.lower()
    if any(hint in lowered for hint in _LEVEL_HINTS) or _LOGCAT_LETTER.search(window) is not None:
        level = level_of(window)
        if level is not None and level in ALERT_LEVELS:
            return True
    for stems, pattern in _WORD_ALERTS:
        if any(stem in lowered for stem in stems) and pattern.search(window) is not None:
            return True
    if window[1:2] == "/" and _LOGCAT_BRIEF.match(window) is not None:
        return True
    method_at = min((found for found in (window.find(method + " ") for method in _METHODS) if found >= 0), default=-1)
    if method_at >= 0 and _REQUEST_FAILURE.match(window, method_at) is not None:
        return True
    return ("|" in window or "status" in lowered) and _STATUS_FAILURE.search(window) is not None
