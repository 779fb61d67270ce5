"""What makes a record an alert, and which kind of alert it is.

Whether a line is an alert is ``organs.stomach.core.shapes.signals.is_alert``. Lines are
first judged by their digit-flattened shape (every digit read as ``0``), so the
alerts that hang on a number (an HTTP status, an exit status, a count of
failures) are judged again on the real line, and that number becomes a
separating value of the record's template: a ``404`` line and a ``200`` line of
an access log are two templates, each shown, instead of one with ``<*>``.
"""

from __future__ import annotations

import re

import ahocorasick_rs

from organs.stomach.core.shapes.signals import ALERT_LEVELS, LINE_PREFIX, is_alert, is_failed_test, level_of

__all__ = ["SEVERE_KINDS", "alert_kind", "kinds_text", "separating_spans"]

# The numbers that tell an alert line from an ordinary one of the same shape, each pattern searched only when
# the lower-cased window holds one of its stems: an HTTP status, an exit status, a count of failures. Each opens
# on a literal, so the regex engine skips ahead; a count's digits are read back from the word it counts.
_SEPARATING = (
    (
        "status",
        ('" ', "http/", "status"),
        re.compile(r"(?:\" |HTTP/\d(?:\.\d)?\"? |status(?:_code)?\"?[=:] ?\"?)(\d{3})\b"),
    ),
    # A W3C (IIS) line: the status, sub-status and win32 status after the request's method and path.
    (
        "status",
        ("get ", "post ", "put ", "delete ", "head "),
        re.compile(r"(?:GET|POST|PUT|DELETE|HEAD|PATCH|OPTIONS) [^\"\n]{0,600}? (\d{3}) \d{1,5} \d{1,10}\b"),
    ),
    ("exit", ("exit",), re.compile(r"exit(?:ed)?(?: with)? (?:status|code)[ :=]*(-?\d+)")),
    # A count of failures ("3 failed, 12 passed"): at most four digits, and not "<id> failed: <reason>".
    ("count", ("fail", "error"), re.compile(r"(?:Failures|Errors): (\d+)| (?:failed|failures?|errors?)\b(?!:)()")),
)
# Most line shapes hold none of the stems: one pass finds those a line holds, and rejects most lines.
_SEPARATING_STEM_FINDER = ahocorasick_rs.AhoCorasick(sorted({stem for _, stems, _ in _SEPARATING for stem in stems}))
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
# The kinds a level or a runtime names as an error or worse: before warnings and words of trouble.
SEVERE_KINDS = frozenset({"error", "critical", "fatal", "emergency", "panic", "BUG", "exception"})
_WORD_KINDS = re.compile(r"\b(?:(panic)|(BUG)|(\w*(?:Exception|Error)\b|Traceback)|(FAIL\w*|[Ff]ail\w*))")


def separating_spans(key: str, count_digits: int) -> tuple[tuple[int, int, str], ...]:
    """Where a digit-flattened line holds numbers that may tell an alert apart, and what each is (``status``,
    ``exit``, ``count`` of at most ``count_digits`` digits): the same places in each of its real lines hold their
    values (flattening keeps every position)."""
    window = key[:LINE_PREFIX]
    held = set(_SEPARATING_STEM_FINDER.find_matches_as_strings(window.lower(), overlapping=True))
    if not held:
        return ()
    spans: set[tuple[int, int, str]] = set()
    for what, stems, pattern in _SEPARATING:
        if held.isdisjoint(stems):
            continue
        for match in pattern.finditer(window):
            start, end = (
                match.span(1) if match.group(1) is not None else _count_before(window, match.start(), count_digits)
            )
            if start < end:
                spans.add((start, end, what))
    return tuple(sorted(spans))


def _count_before(window: str, position: int, count_digits: int) -> tuple[int, int]:
    """The run of digits that ends at ``position`` (empty when none)."""
    start = position
    while start > 0 and window[start - 1].isdigit():
        start -= 1
    if position - start > count_digits or (start > 0 and (window[start - 1].isalnum() or window[start - 1] == ".")):
        # Part of a version or a name (``v1.44 failed``), not a count.
        return position, position
    return start, position


def alert_kind(line: str, count_digits: int) -> str:
    """A short name of the alert a line raises (``error``, ``HTTP 404``, ``exit status``), or ``""`` for none."""
    if not is_alert(line):
        return ""
    level = level_of(line)
    if level is not None and level in ALERT_LEVELS:
        return _LEVEL_KINDS.get(level, level)
    for start, end, what in separating_spans(line, count_digits):
        value = line[start:end]
        if what == "status" and value[:1] in "45":
            return f"HTTP {value}"
        if what != "status" and value.strip("-0"):
            return "exit status" if what == "exit" else "failures"
    word = _WORD_KINDS.search(line, 0, LINE_PREFIX)
    if word is None:
        return "failed test" if is_failed_test(line) else "alert"
    panic, bug, exception, _failure = word.groups()
    return "panic" if panic else "BUG" if bug else "exception" if exception else "failure"


def kinds_text(kinds: dict[str, int], shown_count: int) -> str:
    """``"12 HTTP 404, 3 error"``: the ``shown_count`` most frequent kinds first, the rest counted as others."""
    ranked = sorted(kinds.items(), key=lambda item: (-item[1], item[0]))
    shown = [f"{count:,} {kind}" for kind, count in ranked[:shown_count]]
    others = sum(count for _, count in ranked[shown_count:])
    if others:
        shown.append(f"{others:,} other")
    return ", ".join(shown)
