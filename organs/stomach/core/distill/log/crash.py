"""A crash inside a log: the runtime's report of what ended the process, kept whole as received.

A test run or a service's output that ends in a panic (``fatal error: concurrent map writes``, ``panic:``,
``Traceback (most recent call last):``, ``Exception in thread "main"``, ``thread 'x' panicked at``) holds the
answer in that report's first frames, and mining would mask them into ``/<*>:<*> +<*>``. The first such report
is read from its header through the lines a trace holds (frames, a Go function and its file line, markers,
indented lines, and a blank line only when a trace line follows it), up to ``LogConfig.crash_lines`` lines;
the templates view serves its head before any template and the rest right after the alert and ask templates.
"""

from __future__ import annotations

from collections.abc import Sequence

from organs.stomach.core.shapes.trace_shapes import is_go_function, is_trace_context, is_trace_frame, trace_header
from organs.stomach.core.tuning import LogConfig

__all__ = ["CRASH_HEADING", "crash_of"]

CRASH_HEADING = "the crash, as received:"
# Headers of a report that ends the process: an exception caught and logged (a ``Caused by:``, a typed error
# line) is a record like any other.
_ENDING = frozenset({"python", "jvm_thread", "go_panic", "rust", "dotnet", "native", "dart"})


def _in_trace(line: str) -> bool:
    return (
        is_trace_frame(line)
        or is_go_function(line)
        or trace_header(line) is not None
        or is_trace_context(line)
        or line[:1].isspace()
    )


def crash_of(lines: Sequence[str], config: LogConfig) -> list[str]:
    """The first process-ending report's lines (its header and at least ``crash_least_lines`` in all), or none."""
    for start, line in enumerate(lines):
        if trace_header(line) not in _ENDING:
            continue
        taken = [line]
        index = start + 1
        while index < len(lines) and len(taken) < config.crash_lines:
            current = lines[index]
            if not current.strip():
                if index + 1 >= len(lines) or not _in_trace(lines[index + 1]) or not lines[index + 1].strip():
                    break
            elif not _in_trace(current):
                break
            taken.append(current)
            index += 1
        if len(taken) >= config.crash_least_lines:
            return taken
    return []
