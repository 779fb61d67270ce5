"""Line-shape signals shared by the classifier and the distillers.

Every pattern here is applied to a bounded prefix of one line and is built so
that a failed attempt costs time linear in that prefix (no nested quantifiers
over the same characters), which keeps pathological pastes cheap.

The shapes of stack traces (headers, frames, the lines that belong to a trace
between them) live in ``organs.stomach.core.shapes.trace_shapes``.
"""

from __future__ import annotations

import re

import ahocorasick_rs

__all__ = [
    "ALERT_LEVELS",
    "LINE_PREFIX",
    "aligned_columns",
    "is_alert",
    "is_failed_test",
    "level_of",
]

# Only this much of a line is examined for shape, by every reader of a line's shape (the classifier, the
# distillers, the budget and the relevance model ask the same questions of the same line and must get the same
# answer), and the shapes' bounded patterns are written within it: the signals all live at the start. A bound of
# the shape definitions, as their patterns' own quantifier bounds are, not a setting of the pipeline.
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
    # a checker's finding, its level in parentheses after its code: "^-- SC2054 (warning): ..."
    r"|(?<= )\((?P<parenthesized>warning|error|fatal)\):"
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


# A level token names the line's level only near its start: further in, a level word is part of a message. Part of
# the shape ``level_of`` defines, for every reader, as ``LINE_PREFIX`` is.
_LEVEL_WINDOW = 160
# Every alternative of ``_LEVEL`` but the logcat letter spells one of these, in some case: a line
# whose window holds none of them (nor a logcat letter) is rejected by one pass that finds them all,
# which costs a fraction of the failed regex search over every position.
_LEVEL_STEM_FINDER = ahocorasick_rs.AhoCorasick(
    ["info", "warn", "err", "debug", "trace", "notice", "crit", "fatal", "severe", "alert", "emerg", "panic"]
)
_LOGCAT_LETTER = re.compile(r"\d [VDIWEF] ")
# glog's and klog's header (Kubernetes, PyTorch, many C++ services): the level letter fused to the date,
# "E0612 10:00:00.123456  1234 kubelet.go:123] …", opening the line, bracketed or after a bracketed prefix
# ("[rank0]:[E1218 20:27:21.426 …").
_GLOG_OPENINGS = frozenset("IWEF[")
_GLOG = re.compile(r"(?:\[[^\]\n]{1,30}\]:?)?\[?([IWEF])[01]\d[0-3]\d [0-2]\d:[0-5]\d:[0-5]\d\.\d{3,9}\b")


def level_of(line: str) -> str | None:
    """The lower-cased level token the line carries near its start, if any."""
    window = line[:_LEVEL_WINDOW]
    if not _LEVEL_STEM_FINDER.find_matches_as_indexes(window.lower()) and _LOGCAT_LETTER.search(window) is None:
        return _glog_level(window)
    match = _LEVEL.search(window)
    if match is None:
        return _glog_level(window)
    return next(group for group in match.groups() if group is not None).lower()


def _glog_level(window: str) -> str | None:
    # The first character rules out nearly every other line before the pattern is tried.
    found = _GLOG.match(window) if window[:1] in _GLOG_OPENINGS else None
    return None if found is None else found.group(1).lower()


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
_STATUS_FAILURE = re.compile(
    r"\| {0,3}[45]\d\d {0,3}\||(?i:(?:status|response)(?:_?code)?)[\"']?\s{0,2}[:=]\s{0,2}[\"']?[45]\d\d\b"
)

# Each pattern runs only on a line whose lowered window holds its stem. One pass over the lowered
# window finds the stems present; an ordinary line costs that pass and no regex. Every pattern opens
# with a literal (boundaries are checked by look-behinds after it), so a search skips to candidates.
_WORD_ALERTS: dict[str, re.Pattern[str]] = {
    "fail": re.compile(
        r"FAILURE\b(?<=\bFAILURE)|FAILED\b(?<=\bFAILED)|FAIL\b(?<=\bFAIL)"
        # failure words, unless a zero count stands right before or after them ("0 failed", "failed: 0")
        r"|ailed\b(?<=\b[Ff]ailed)(?<!\b0 [Ff]ailed)(?<![Nn]o [Ff]ailed)(?![:=] ?0\b)"
        r"|ailure\b(?<=\b[Ff]ailure)(?<!\b0 [Ff]ailure)(?<![Nn]o [Ff]ailure)(?![:=] ?0\b)"
    ),
    "err": re.compile(r"Error:|error(?<=\berror)(?:\[\w{1,20}\])?:(?! ?0\b)|Error [1-9]\d{0,3}\b"),
    "exception": re.compile(r"Exception(?=[:\s]|$)"),
    "fatal": re.compile(r"fatal:(?<![\w-]fatal:)|[Ff]atal [Ee]rror\b"),
    "panic": re.compile(r"panic:|panicked at\b|Kernel panic\b"),
    "bug:": re.compile(r"BUG:"),
    "traceback": re.compile(r"Traceback \(most recent call last\)"),
    "oops": re.compile(r"Oops\b"),
    "killed": re.compile(r"OOMKilled\b|Killed process\b"),
}
# Read on the lowered window: crash words, non-zero exit statuses and test failure counts.
_LOWERED_ALERTS: dict[str, re.Pattern[str]] = {
    "segfault": re.compile("segfault"),
    "segmentation fault": re.compile("segmentation fault"),
    "core dumped": re.compile("core dumped"),
    "exit": re.compile(r"exit(?:ed)?(?: with)?[ _](?:status|code)[:= ]{1,3}[\"']?-?(?:[1-9]\d{0,4}|0\d)"),
    "non-zero": re.compile(r"returned non-zero\b|non-zero exit\b"),
    # What a failing call says of its cause, in any program's words.
    "unable to": re.compile(r"(?<![\w-])unable to\b"),
    "could not": re.compile(r"(?<![\w-])could not\b"),
    "couldn't": re.compile(r"(?<![\w-])couldn't\b"),
    "cannot": re.compile(r"(?<![\w-])cannot\b"),
    "denied": re.compile(r"(?<![\w-])denied\b"),
    "refused": re.compile(r"(?<![\w-])refused\b"),
    "no such file": re.compile(r"no such file or directory"),
    "timed out": re.compile(r"(?<![\w-])timed out\b"),
    # "failures=1", "Failures: 4", "errors=2", an error code ("error 22", "Error 1" from make)
    "fail": re.compile(r"(?:failures?|failed|failing)[=:] ?[1-9]"),
    "err": re.compile(r"error(?<![a-z]error)(?:s?[=:] ?| -?)[1-9]"),
}
# "3 failed", "2 errors", "1 failing": a count word after a number, which must not be zero.
_COUNTED = re.compile(r" (?:failed|failures?|failing|errors?)\b")
_TRAILING_NUMBER = re.compile(r"(?<![\w.])\d{1,7}$")


def _counts_a_failure(lowered: str) -> bool:
    for match in _COUNTED.finditer(lowered):
        number = _TRAILING_NUMBER.search(lowered, max(match.start() - 8, 0), match.start())
        if number is not None and int(number.group()) > 0:
            return True
    return False


# Stems whose presence makes a level token worth reading (alert levels only) and the logcat letters.
_LEVEL_STEMS_OF_ALERTS = frozenset(
    ["warn", "err", "crit", "fatal", "severe", "alert", "emerg", "panic", " w ", " e ", " f "]
)
# Stems of a status column or a status key's value (``_STATUS_FAILURE``).
_STATUS_STEMS = frozenset(["status", "response", "|"])
_STEMS = tuple(sorted({*_WORD_ALERTS, *_LOWERED_ALERTS, *_LEVEL_STEMS_OF_ALERTS, *_STATUS_STEMS}))
# All stems found in one pass (a quarter of the time of a substring search per stem, measured on Loghub).
_STEM_FINDER = ahocorasick_rs.AhoCorasick(list(_STEMS))


# A test runner's mark of a failed test opening its line: vitest's and mocha's crosses, TAP's "not ok 3".
_FAILED_TEST_OPENINGS = frozenset(" \t×✗✘✕n")
_FAILED_TEST = re.compile(r"\s{0,12}(?:[×✗✘✕] (?!\d)\S|not ok \d)")


def is_failed_test(line: str) -> bool:
    """Whether the line is a test runner's report of a failed test (`` × tests/a.test.ts > x > y 5ms``)."""
    return _FAILED_TEST.match(line) is not None


def is_alert(line: str) -> bool:
    """Whether a reader scanning for trouble would stop at this line.

    Level words at or above a warning, bracketed or keyed levels, logcat letters, a 4xx/5xx
    status in a request line, a status column or under a status key, failure and panic words,
    a non-zero exit status, a test run's failure count and a failed test's mark. A zero count, an exit status of 0
    and a 2xx/3xx status are not alerts.
    """
    window = line[:LINE_PREFIX]
    lowered = window.lower()
    if window[:1] in _FAILED_TEST_OPENINGS and _FAILED_TEST.match(window) is not None:
        return True
    if _glog_level(window) in ALERT_LEVELS:
        return True
    stems = set(_STEM_FINDER.find_matches_as_strings(lowered, overlapping=True))
    if " /" in window:
        # A request line ("GET /cart HTTP/1.1"): its method is a stem too.
        stems.update(method for method in _METHODS if method + " " in window)
    if not stems:
        return window[1:2] == "/" and _LOGCAT_BRIEF.match(window) is not None
    if not stems.isdisjoint(_LEVEL_STEMS_OF_ALERTS):
        level = level_of(window)
        if level is not None and level in ALERT_LEVELS:
            return True
    for stem in stems:
        pattern = _WORD_ALERTS.get(stem)
        if pattern is not None and pattern.search(window) is not None:
            return True
        pattern = _LOWERED_ALERTS.get(stem)
        if pattern is not None and pattern.search(lowered) is not None:
            return True
    if ("fail" in stems or "err" in stems) and _counts_a_failure(lowered):
        return True
    if window[1:2] == "/" and _LOGCAT_BRIEF.match(window) is not None:
        return True
    if not stems.isdisjoint(_STATUS_STEMS) and _STATUS_FAILURE.search(window) is not None:
        return True
    if stems.isdisjoint(_METHODS):
        return False
    method_at = min(window.find(method + " ") for method in stems.intersection(_METHODS))
    return _REQUEST_FAILURE.match(window, method_at) is not None


_NOT_SPACE = re.compile(r"[^ ]")
# Occupied positions with gaps of at most one space: a gutter is two or more.
_COLUMN_RUN = re.compile(r"1(?:0?1)*")


def aligned_columns(lines: list[str]) -> list[tuple[int, int]]:
    """Column ranges separated by gutters (two or more spaces wide in every line)."""
    occupied = 0
    width = 0
    for line in lines:
        occupied |= int(_NOT_SPACE.sub("1", line).replace(" ", "0")[::-1] or "0", 2)
        width = max(width, len(line))
    # One pass over the occupancy bits, position 0 first: shifting the big int per
    # position would cost the width squared on one very long line.
    bits = format(occupied, "b")[::-1] if occupied else ""
    columns = [(run.start(), run.end()) for run in _COLUMN_RUN.finditer(bits)]
    if columns:
        columns[-1] = (columns[-1][0], width)
    return columns
