"""Line-shape signals shared by the classifier and the distillers.

Every pattern here is applied to a bounded prefix of one line and is built so
that a failed attempt costs time linear in that prefix (no nested quantifiers
over the same characters), which keeps pathological pastes cheap.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = [
    "ALERT_LEVELS",
    "LINE_PREFIX",
    "is_alert",
    "is_trace_frame",
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


_FRAME = re.compile(
    # JVM, .NET, JavaScript and Rust "at" frames: at a.b.C.m(File.java:12), at f (x.js:1:2), at /x.rs:3:5
    r"\s*at (?:async )?[^\s(]{1,300}(?:\(| \(|:\d)"
    # Python
    r"|\s*File \"[^\"]{1,400}\", line \d"
    # elided JVM frames
    r"|\s*\.\.\. \d+ (?:more|common frames omitted)"
    # Go: \t/path/file.go:12 +0x1d
    r"|\s+\S{1,300}\.go:\d+(?: \+0x[0-9a-f]+)?\s*$"
    # Rust backtrace: "  12: std::rt::lang_start"
    r"|\s*\d{1,4}: (?:[\w<>$]+::|0x[0-9a-f]+ - )"
)


def is_trace_frame(line: str) -> bool:
    return _FRAME.match(line, 0, LINE_PREFIX) is not None


_HEADER = re.compile(
    r"\s*(?:"
    r"(?P<python>Traceback \(most recent call last\):)"
    r"|(?P<jvm_thread>Exception in thread \"[^\"]{0,200}\" )"
    r"|(?P<cause>Caused by: )"
    r"|(?P<go_panic>panic: )"
    r"|(?P<goroutine>goroutine \d+ \[)"
    r"|(?P<rust>thread '[^']{0,200}' panicked at )"
    r"|(?P<dotnet>Unhandled [Ee]xception[.:] )"
    # An exception type opening the line and followed by a colon or the line end:
    # "java.lang.IllegalStateException: boom", "TypeError: x is undefined", "ValueError".
    # A sentence that mentions an error never opens with the bare type name and a colon.
    r"|(?P<typed>(?:[A-Za-z_$][\w$]*(?:\.|::))*[\w$]*(?:Error|Exception|Panic|Fault|Throwable)"
    r"(?::|\s*$))"
    r")"
)


def trace_header(line: str) -> str | None:
    """The kind of exception header the line is, or ``None``."""
    match = _HEADER.match(line, 0, LINE_PREFIX)
    if match is None:
        return None
    return match.lastgroup


def _not_word(character: str) -> bool:
    return not (character.isalnum() or character == "_")


# Alerts beyond a level word: failure and panic words, exception type names, HTTP 4xx/5xx statuses
# (after a request's closing quote, an HTTP version or a status key), non-zero exit statuses and test
# failure summaries. Each check is (stems, pattern, what may stand before a match): the pattern is searched
# only when the window holds a stem (a lower-cased substring every match spells), and opens on a literal,
# so the regex engine skips ahead instead of trying every position; a word boundary before the match is
# checked on the one character there.
_ALERT_CHECKS: tuple[tuple[tuple[str, ...], re.Pattern[str], Callable[[str], bool] | None], ...] = (
    (
        ("fail", "bug", "panic", "oops", "fatal", "error"),
        re.compile(r"(?:FAILURE|FAILED|FAIL|BUG|PANIC|Oops)\b|(?:panic|fatal|error|Error|FAIL|FAILED|BUG):"),
        _not_word,
    ),
    # An exception type name: ``NullPointerException``, ``TypeError``.
    (("exception", "error"), re.compile(r"(?:Exception|Error)\b"), str.islower),
    (
        ("traceback", "segmentation", "core dumped", "out of memory", "exception"),
        re.compile(
            r"Traceback \(most recent call last\)|[Ss]egmentation fault|core dumped|[Oo]ut of memory"
            r"|[Uu]n(?:handled|caught) [Ee]xception"
        ),
        None,
    ),
    (
        ('" 4', '" 5', "http/", "status"),
        re.compile(r"(?:\" |HTTP/\d(?:\.\d)?\"? |status(?:_code)?\"?[=:] ?\"?)[45]\d\d\b"),
        None,
    ),
    (("exit",), re.compile(r"exit(?:ed)?(?: with)? (?:status|code)[ :=]*-?[1-9]\d*|non-zero exit"), None),
    (
        ("fail", "error"),
        re.compile(r"[1-9]\d* (?:failed|failures?|errors?)\b|(?:Failures|Errors): [1-9]"),
        lambda character: _not_word(character) and character != ".",
    ),
)


_ALERT_STEMS = tuple(sorted({stem for stems, _, _ in _ALERT_CHECKS for stem in stems}))


def is_alert(line: str) -> bool:
    """Whether a reader looking for what went wrong would look at this line: an alert level or a check above."""
    level = level_of(line)
    if level is not None and level in ALERT_LEVELS:
        return True
    window = line[:LINE_PREFIX]
    lowered = window.lower()
    found = {stem for stem in _ALERT_STEMS if stem in lowered}
    if not found:
        return False
    for stems, pattern, before in _ALERT_CHECKS:
        if found.isdisjoint(stems):
            continue
        for match in pattern.finditer(window):
            start = match.start()
            if before is None or start == 0 or before(window[start - 1]):
                return True
    return False
