"""What makes a record an alert, and which kind of alert it is.

Whether a line is an alert is ``organs.stomach.signals.is_alert``. Lines are
first judged by their digit-flattened shape (every digit read as ``0``), so the
alerts that hang on a number (an HTTP status, an exit status, a count of
failures) are judged again on the real line, and that number becomes a
separating value of the record's template: a ``404`` line and a ``200`` line of
an access log are two templates, each shown, instead of one with ``<*>``.
"""

from __future__ import annotations

import re

from organs.stomach.signals import ALERT_LEVELS, LINE_PREFIX, is_alert, level_of

__all__ = ["alert_kind", "kinds_text", "might_separate", "separating_values"]

# The numbers that tell an alert line from an ordinary one of the same shape.
_SEPARATING = re.compile(
    r"(?:\" |HTTP/\d(?:\.\d)?\"? |\bstatus(?:_code)?\"?[=:] ?\"?)(\d{3})\b"
    r"|\bexit(?:ed)?(?: with)? (?:status|code)[ :=]*(-?\d+)"
    r"|(\d+) (?:failed|failures?|errors?)\b"
    r"|(?:Failures|Errors): (\d+)"
)
# Every alternative of ``_SEPARATING`` spells one of these, in some case (see ``signals._ALERT_STEMS``).
_SEPARATING_STEMS = ('" 0', "http/", "status", "exit", "fail", "error")
_LEVEL_KINDS = {
    "warning": "warn",
    "w": "warn",
    "err": "error",
    "e": "error",
    "severe": "error",
    "crit": "critical",
    "f": "fatal",
    "emerg": "emergency",
}
_WORD_KINDS = re.compile(r"\b(?:(panic)|(BUG)|(\w*(?:Exception|Error)\b|Traceback)|(FAIL\w*|[Ff]ail\w*))")
_KINDS_SHOWN = 4


def might_separate(key: str) -> bool:
    """Whether a digit-flattened line holds a number that may tell an alert apart (judge its real lines)."""
    window = key[:LINE_PREFIX]
    lowered = window.lower()
    return any(stem in lowered for stem in _SEPARATING_STEMS) and _SEPARATING.search(window) is not None


def separating_values(line: str) -> str:
    """The separating numbers of a real line, joined (``""`` for none)."""
    return "|".join(
        next(group for group in match.groups() if group is not None)
        for match in _SEPARATING.finditer(line, 0, LINE_PREFIX)
    )


def alert_kind(line: str) -> str:
    """A short name of the alert a line raises (``error``, ``HTTP 404``, ``exit status``), or ``""`` for none."""
    if not is_alert(line):
        return ""
    level = level_of(line)
    if level is not None and level in ALERT_LEVELS:
        return _LEVEL_KINDS.get(level, level)
    for match in _SEPARATING.finditer(line, 0, LINE_PREFIX):
        status, exit_status, failed, summary = match.groups()
        if status is not None and status[0] in "45":
            return f"HTTP {status}"
        if exit_status is not None and exit_status.lstrip("-") != "0":
            return "exit status"
        if (failed or summary or "0") != "0":
            return "failures"
    word = _WORD_KINDS.search(line, 0, LINE_PREFIX)
    if word is None:
        return "alert"
    panic, bug, exception, _failure = word.groups()
    return "panic" if panic else "BUG" if bug else "exception" if exception else "failure"


def kinds_text(kinds: dict[str, int]) -> str:
    """``"12 HTTP 404, 3 error"``: the most frequent kinds first, the rest counted as others."""
    ranked = sorted(kinds.items(), key=lambda item: (-item[1], item[0]))
    shown = [f"{count:,} {kind}" for kind, count in ranked[:_KINDS_SHOWN]]
    others = sum(count for _, count in ranked[_KINDS_SHOWN:])
    if others:
        shown.append(f"{others:,} other")
    return ", ".join(shown)
