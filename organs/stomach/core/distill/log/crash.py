"""A crash inside a log: the runtime's report of what ended the process, kept whole as received.

A test run or a service's output that ends in a panic (``fatal error: concurrent map writes``, ``panic:``,
``Traceback (most recent call last):``, ``Exception in thread "main"``, ``thread 'x' panicked at``) holds the
answer in that report's first frames, and mining would mask them into ``/<*>:<*> +<*>``. The report is read
from its header through the lines a trace holds (frames, a Go function and its file line, markers,
indented lines, and a blank line only when a trace line follows it), up to ``LogConfig.crash_lines`` lines (a
Python traceback, innermost last, through its exception line, up to ``crash_message_lines`` indented lines its
message goes on over, and a remote traceback it raised on, its last lines kept; the lines of carets under its
frames' source are left out when served). The templates view serves its innermost lines before any template and
the rest right after the alert and ask templates. A log that holds several such reports (each failed request's
traceback) has no one crash: its records are mined as usual.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from organs.stomach.core.shapes.trace_shapes import is_go_function, is_trace_context, is_trace_frame, trace_header
from organs.stomach.core.tuning import LogConfig

__all__ = ["CRASH_HEADING", "Crash", "crash_of"]

CRASH_HEADING = "the crash, as received:"
# Headers of a report that ends the process: an exception caught and logged (a ``Caused by:``, a typed error
# line) is a record like any other.
_ENDING = frozenset({"python", "jvm_thread", "go_panic", "rust", "dotnet", "native", "dart"})
# What every such header holds: a text holding none is not searched (a substring test runs at memory speed), and only
# the lines holding one are read as headers (reading every line costs more).
_HINT_WORDS = (
    "Traceback (most",
    "Exception in thread",
    "panic: ",
    "panicked at",
    "atal error: ",
    "nhandled ",
    "==ERROR: ",
    "EXCEPTION CAUGHT",
)
_HINT = re.compile("|".join(map(re.escape, _HINT_WORDS)))


@dataclass(frozen=True, slots=True)
class Crash:
    """The report's lines as received, and whether its innermost frame is its last (Python's "most recent call
    last": then its last lines are the ones kept and served first)."""

    lines: tuple[str, ...]
    innermost_last: bool


def _in_trace(line: str) -> bool:
    return (
        is_trace_frame(line)
        or is_go_function(line)
        or trace_header(line) is not None
        or is_trace_context(line)
        or line[:1].isspace()
    )


def _only_report(text: str, lines: Sequence[str]) -> int | None:
    """The line that opens the log's one process-ending report, or None when it holds none or several. The text
    is searched for the words such headers hold in one pass; only the lines holding them are read as headers."""
    if not any(word in text for word in _HINT_WORDS):
        return None
    starts: set[int] = set()
    line = 0
    position = 0
    for hint in _HINT.finditer(text):
        line += text.count("\n", position, hint.start())
        position = hint.start()
        if line not in starts and line < len(lines) and trace_header(lines[line]) in _ENDING:
            starts.add(line)
            if len(starts) > 1:
                return None
    return next(iter(starts), None)


def crash_of(text: str, lines: Sequence[str], config: LogConfig) -> Crash | None:
    """The log's process-ending report (its header and at least ``crash_least_lines`` lines in all), or None. A
    log holding several such reports (a service logging each failed request's traceback) has no one crash."""
    start = _only_report(text, lines)
    if start is None:
        return None
    innermost_last = trace_header(lines[start]) == "python"
    bound = config.crash_read_lines if innermost_last else config.crash_lines
    taken = [lines[start]]
    index = start + 1
    while index < len(lines) and len(taken) < bound:
        current = lines[index]
        if not current.strip():
            if index + 1 >= len(lines) or not _in_trace(lines[index + 1]) or not lines[index + 1].strip():
                break
        elif not _in_trace(current) and not (innermost_last and _exception_line(current)):
            break
        taken.append(current)
        index += 1
        # A remote error's traceback goes on under the exception line it raised locally (a task runner's).
        if innermost_last and _exception_line(current) and not (index < len(lines) and _chained(lines[index])):
            # The exception's message may go on, indented, over lines of its own (a driver's "Is the server
            # running on host ...?").
            message_ends = min(index + config.crash_message_lines, len(lines))
            while index < message_ends and len(taken) < bound and _message_goes_on(lines[index]):
                taken.append(lines[index])
                index += 1
            break
    if len(taken) < config.crash_least_lines:
        return None
    if innermost_last and len(taken) > config.crash_lines:
        taken = [taken[0], *taken[len(taken) - config.crash_lines + 1 :]]
    return Crash(tuple(taken), innermost_last)


def _message_goes_on(line: str) -> bool:
    """Whether a line after a Python exception line is more of its message: indented, and no frame."""
    return line[:1].isspace() and bool(line.strip()) and not is_trace_frame(line)


def _chained(line: str) -> bool:
    """Whether a line after a Python exception line carries the traceback on: a frame or a marker under one."""
    return is_trace_frame(line) or is_trace_context(line)


def _exception_line(line: str) -> bool:
    """A Python traceback's closing line: the exception's type and message, at the margin."""
    return not line[:1].isspace() and trace_header(line) == "typed"
