"""Searching and slicing a frame's full text: pure, bounded in work, time and output.

A pattern comes from a model, so it is treated as untrusted input. Before it is
compiled, ``safe_pattern`` refuses what makes backtracking run away: a quantifier
on a group that itself holds a quantifier or an alternation (``(a+)+``,
``(a|aa)*``), backreferences, recursion and subroutine calls (``(?R)``, ``(?0)``,
``(?1)``, ``(?&name)``, ``(?P>name)``), and patterns longer than ``MAX_PATTERN_CHARS``.
What passes is matched with the ``regex`` engine under a deadline, only over the
first ``MAX_LINE_CHARS`` characters of each line, so even a pattern the check
missed stops in time; the result says where and why it stopped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import regex

__all__ = [
    "MAX_LINE_CHARS",
    "MAX_PATTERN_CHARS",
    "MAX_RANGE_LINES",
    "GrepResult",
    "LineRange",
    "PatternRefused",
    "grep_lines",
    "line_range",
    "safe_pattern",
]

MAX_PATTERN_CHARS = 256
MAX_LINE_CHARS = 4096
MAX_RANGE_LINES = 2000
DEFAULT_GREP_SECONDS = 2.0

_QUANTIFIER_OPENERS = frozenset("*+?{")
_BACKREFERENCE_DIGITS = frozenset("123456789")
# A named backreference ``(?P=name)``, or a call of the whole pattern or a group: ``(?R)``, ``(?0)``, ``(?1)``,
# ``(?+1)``, ``(?-1)``, ``(?&name)``, ``(?P>name)``. A call re-enters a group (each nesting costs memory without
# a bound the deadline can see); ``(?-i)`` and ``(?-i:...)`` are scoped flags, not calls.
_CALL_OR_BACKREFERENCE = regex.compile(r"\(\?(?:P[=>]|&|R|[+-]?\d)")


class PatternRefused(ValueError):
    """A pattern that is malformed or could run away; the message says which and why."""


@dataclass
class _Group:
    holds_quantifier: bool = False
    holds_alternation: bool = False


def _class_end(pattern: str, start: int) -> int:
    """The index just past the character class opening at ``start`` (``[``)."""
    index = start + 1
    if index < len(pattern) and pattern[index] == "^":
        index += 1
    if index < len(pattern) and pattern[index] == "]":
        index += 1  # a leading ']' is a literal
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "[":
            index = _class_end(pattern, index)  # the regex engine nests classes (set operations)
            continue
        if char == "]":
            return index + 1
        index += 1
    raise PatternRefused("a character class '[' is never closed")


def _is_quantifier(pattern: str, index: int) -> bool:
    if index >= len(pattern) or pattern[index] not in _QUANTIFIER_OPENERS:
        return False
    if pattern[index] != "{":
        return True
    close = pattern.find("}", index)
    # '{' is a quantifier only as {n}, {n,} , {,m} or {n,m}; otherwise it is a literal brace.
    return close != -1 and regex.fullmatch(r"\d*,?\d*", pattern[index + 1 : close]) is not None


def _check_structure(pattern: str) -> None:
    stack: list[_Group] = [_Group()]
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            escaped = pattern[index + 1 : index + 2]
            if escaped in _BACKREFERENCE_DIGITS or escaped in ("g", "k"):
                raise PatternRefused(f"backreferences ({pattern[index : index + 3]!r}) are not allowed")
            index += 2
            closed = None
        elif char == "[":
            index = _class_end(pattern, index)
            closed = None
        elif char == "(":
            called = _CALL_OR_BACKREFERENCE.match(pattern, index)
            if called is not None:
                raise PatternRefused(
                    f"backreferences, recursion and subroutine calls ({called.group()!r}...) are not allowed"
                )
            stack.append(_Group())
            index += 1
            continue
        elif char == ")":
            if len(stack) == 1:
                raise PatternRefused("a ')' has no matching '('")
            closed = stack.pop()
            index += 1
        else:
            if char == "|":
                stack[-1].holds_alternation = True
            index += 1
            closed = None
        if _is_quantifier(pattern, index):
            if closed is not None and (closed.holds_quantifier or closed.holds_alternation):
                what = "a quantifier" if closed.holds_quantifier else "an alternation"
                raise PatternRefused(
                    f"a repeated group that holds {what} (like '(a+)+' or '(a|ab)*') can backtrack without end; "
                    "repeat a single item instead"
                )
            for group in stack:
                group.holds_quantifier = True
        if closed is not None:
            stack[-1].holds_quantifier |= closed.holds_quantifier
            stack[-1].holds_alternation |= closed.holds_alternation
    if len(stack) != 1:
        raise PatternRefused("a '(' is never closed")


def safe_pattern(pattern: str, *, ignore_case: bool = False) -> regex.Pattern[str]:
    """Compile ``pattern`` or raise ``PatternRefused`` saying why it is refused."""
    if not pattern:
        raise PatternRefused("the pattern is empty")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternRefused(f"the pattern has {len(pattern)} characters; at most {MAX_PATTERN_CHARS}")
    _check_structure(pattern)
    try:
        return regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
    except regex.error as error:
        raise PatternRefused(f"not a valid regular expression: {error}") from None


@dataclass(frozen=True, slots=True)
class GrepResult:
    """Matching lines (1-based numbers) with their context, and how the search ended."""

    shown: tuple[tuple[int, bool, str], ...]  # (line number, is a match, line text)
    matches: int
    total_lines: int
    searched_lines: int
    stopped: str | None  # why the search stopped before the last line, if it did
    long_lines: int  # lines only partly searched (longer than MAX_LINE_CHARS)


def grep_lines(
    text: str,
    pattern: regex.Pattern[str],
    *,
    context: int = 2,
    max_matches: int = 200,
    seconds: float = DEFAULT_GREP_SECONDS,
) -> GrepResult:
    """The lines of ``text`` that ``pattern`` matches, each with ``context`` lines around it.

    Stops at ``max_matches`` matching lines or when ``seconds`` have passed,
    whichever comes first, and says so in ``stopped``.
    """
    lines = text.splitlines()
    deadline = time.monotonic() + seconds
    matched: list[int] = []
    stopped: str | None = None
    long_lines = 0
    searched = 0
    for number, line in enumerate(lines):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            stopped = f"the time limit of {seconds:g} s ran out at line {number + 1:,}"
            break
        if len(line) > MAX_LINE_CHARS:
            long_lines += 1
        try:
            found = pattern.search(line, 0, MAX_LINE_CHARS, timeout=remaining) is not None
        except TimeoutError:
            stopped = f"the time limit of {seconds:g} s ran out at line {number + 1:,}"
            break
        searched = number + 1
        if found:
            matched.append(number)
            if len(matched) >= max_matches:
                if number + 1 < len(lines):
                    stopped = f"reached max_lines={max_matches} matching lines at line {number + 1:,}"
                break
    shown: dict[int, bool] = {}
    for number in matched:
        for neighbour in range(max(0, number - context), min(len(lines), number + context + 1)):
            shown[neighbour] = shown.get(neighbour, False) or neighbour == number
    return GrepResult(
        shown=tuple((number + 1, is_match, lines[number]) for number, is_match in sorted(shown.items())),
        matches=len(matched),
        total_lines=len(lines),
        searched_lines=searched,
        stopped=stopped,
        long_lines=long_lines,
    )


@dataclass(frozen=True, slots=True)
class LineRange:
    """Lines ``start``..``end`` (1-based, inclusive) of a text that has ``total_lines``."""

    start: int
    end: int
    total_lines: int
    lines: tuple[str, ...]
    clamped: bool  # the range asked for was longer than MAX_RANGE_LINES or ran past the end


def line_range(text: str, start: int, end: int) -> LineRange:
    """Lines ``start`` to ``end`` of ``text``, at most ``MAX_RANGE_LINES`` of them; raises
    ``ValueError`` for a range that starts past the last line or ends before it starts."""
    lines = text.splitlines()
    if start < 1 or end < start:
        raise ValueError(f"a line range is 1 <= start <= end; got start={start}, end={end}")
    if start > len(lines):
        raise ValueError(f"the frame has {len(lines):,} lines; start={start:,} is past the last")
    last = min(end, len(lines), start + MAX_RANGE_LINES - 1)
    return LineRange(start, last, len(lines), tuple(lines[start - 1 : last]), clamped=last != end)
