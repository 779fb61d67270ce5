"""The pure search behind grep_frame and frame_lines: what is refused, what is bounded."""

from __future__ import annotations

import pytest
import regex

from organs.mcp.grep import (
    MAX_LINE_CHARS,
    MAX_PATTERN_CHARS,
    MAX_RANGE_LINES,
    PatternRefused,
    grep_lines,
    line_range,
    safe_pattern,
)

TEXT = "\n".join(f"line {number} {'ERROR boom' if number % 10 == 0 else 'ok'}" for number in range(1, 101))


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("(a+)+$", "holds a quantifier"),
        ("(?:x*y?)*z", "holds a quantifier"),
        ("((ab)+c)+", "holds a quantifier"),
        ("(a|aa)+b", "holds an alternation"),
        (r"(\w)\1", "backreferences"),
        (r"(?P<w>\w)(?P=w)", "backreferences"),
        ("(?0)", "recursion and subroutine calls"),
        ("(a)(?1)", "recursion and subroutine calls"),
        ("(?P<n>a)(?P>n)", "recursion and subroutine calls"),
        ("(?R)", "recursion and subroutine calls"),
        ("(?<n>a)(?&n)", "recursion and subroutine calls"),
        ("(a)(?+1)(b)", "recursion and subroutine calls"),
        ("(a)(?-1)", "recursion and subroutine calls"),
        ("", "empty"),
        ("a" * (MAX_PATTERN_CHARS + 1), "at most"),
        ("(unclosed", "never closed"),
        ("[unclosed", "never closed"),
        ("stray)", "no matching"),
        ("[z-a]", "not a valid regular expression"),
    ],
)
def test_a_pattern_that_could_run_away_or_is_malformed_is_refused(pattern: str, reason: str) -> None:
    with pytest.raises(PatternRefused, match=reason):
        safe_pattern(pattern)


@pytest.mark.parametrize(
    "pattern",
    [
        "ERROR|WARN",
        r"(ERROR|WARN) \d+",
        r"status=(5\d\d)",
        "[()+*]+",
        r"\(a+\)+",
        "x{2,3}",
        "(?i)boom",
        r"(abc)+",
        "(?-i:abc)",
        r"\(?1\)",
        "[(?0)]",
    ],
)
def test_ordinary_patterns_pass(pattern: str) -> None:
    assert isinstance(safe_pattern(pattern), regex.Pattern)


def test_grep_shows_matches_with_context_and_numbers() -> None:
    result = grep_lines(TEXT, safe_pattern("ERROR"), context=1, max_matches=200)
    assert result.matches == 10 and result.stopped is None and result.searched_lines == 100
    assert [(number, is_match) for number, is_match, _ in result.shown[:3]] == [(9, False), (10, True), (11, False)]
    assert result.shown[-1][0] == 100, "context stops at the last line"


def test_grep_stops_at_max_matches_and_says_so() -> None:
    result = grep_lines(TEXT, safe_pattern("line"), context=0, max_matches=7)
    assert result.matches == 7 and result.stopped is not None and "max_lines=7" in result.stopped


def test_grep_stops_in_time_even_for_a_pattern_the_check_would_miss() -> None:
    # Compiled directly, bypassing the check, to prove the deadline alone bounds the work.
    runaway = regex.compile(r"(a+)+b")
    text = "\n".join(["a" * 2000] * 50)
    result = grep_lines(text, runaway, seconds=0.2)
    assert result.stopped is not None and "time limit" in result.stopped
    assert result.searched_lines < 50


def test_only_the_start_of_a_long_line_is_searched() -> None:
    text = "x" * (MAX_LINE_CHARS + 10) + "NEEDLE"
    result = grep_lines(text, safe_pattern("NEEDLE"))
    assert result.matches == 0 and result.long_lines == 1


def test_line_range_is_one_based_inclusive_and_clamped() -> None:
    selected = line_range(TEXT, 9, 11)
    assert selected.lines == ("line 9 ok", "line 10 ERROR boom", "line 11 ok") and not selected.clamped
    tail = line_range(TEXT, 99, 500)
    assert (tail.start, tail.end, tail.clamped) == (99, 100, True)
    long_text = "\n".join(str(number) for number in range(MAX_RANGE_LINES * 2))
    assert line_range(long_text, 1, MAX_RANGE_LINES * 2).end == MAX_RANGE_LINES
    with pytest.raises(ValueError, match="past the last"):
        line_range(TEXT, 101, 102)
    with pytest.raises(ValueError, match="start <= end"):
        line_range(TEXT, 5, 4)
