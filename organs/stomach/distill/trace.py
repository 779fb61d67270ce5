"""Stack-trace distillation: exception and message, the cause chain, the frames that matter.

Each section of a trace (the first exception, then every ``Caused by``,
"During handling…" or further header) keeps its header and message lines, its
first ``_FRAMES_AT_EACH_END`` frames and its last ones (the top and the
innermost, whichever end a runtime prints first) and counts the frames between.
A frame repeated back to back (recursion) is shown once with its count.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from organs.stomach.distill.text import elision, plural
from organs.stomach.signals import is_trace_frame, trace_header

__all__ = ["TraceDigest", "distill_trace"]

_FRAMES_AT_EACH_END = 3
_LINE_CHARS = 300


@dataclass(frozen=True, slots=True)
class TraceDigest:
    rendering: str
    exception: str


@dataclass(slots=True)
class _Section:
    header: list[str] = field(default_factory=list)
    frames: list[list[str]] = field(default_factory=list)


def _clip(line: str) -> str:
    return line if len(line) <= _LINE_CHARS else f"{line[:_LINE_CHARS]}… [{len(line) - _LINE_CHARS:,} chars elided]"


def _sections(lines: list[str]) -> list[_Section]:
    sections = [_Section()]
    for line in lines:
        current = sections[-1]
        if is_trace_frame(line):
            current.frames.append([line])
        elif current.frames and (trace_header(line) is not None or line.startswith(("During handling", "The above"))):
            sections.append(_Section(header=[line]))
        elif current.frames and line.startswith((" ", "\t")):
            # Source text under a Python frame, or the file line under a Go function line.
            current.frames[-1].append(line)
        elif current.frames:
            sections.append(_Section(header=[line]))
        else:
            current.header.append(line)
    return sections


def _collapsed(frames: list[list[str]]) -> list[tuple[list[str], int]]:
    runs: list[tuple[list[str], int]] = []
    for frame in frames:
        if runs and runs[-1][0] == frame:
            runs[-1] = (frame, runs[-1][1] + 1)
        else:
            runs.append((frame, 1))
    return runs


def _render_frames(frames: list[list[str]]) -> list[str]:
    runs = _collapsed(frames)
    keep = _FRAMES_AT_EACH_END
    shown = runs if len(runs) <= 2 * keep + 1 else [*runs[:keep], ([], 0), *runs[-keep:]]
    elided = sum(count for _, count in runs[keep:-keep]) if len(runs) > 2 * keep + 1 else 0
    rendered: list[str] = []
    for frame, count in shown:
        if not frame:
            rendered.append("    " + elision(elided, "frame"))
            continue
        rendered.extend(_clip(line) for line in frame)
        if count > 1:
            rendered.append(f"    [previous frame repeated {count - 1:,} more times]")
    return rendered


def distill_trace(text: str) -> TraceDigest:
    lines = text.split("\n")
    sections = _sections(lines)
    total_frames = sum(len(section.frames) for section in sections)
    exception = next(
        (line.strip() for section in sections for line in section.header if trace_header(line) not in (None, "python")),
        lines[0].strip(),
    )
    causes = max(len(sections) - 1, 0)
    summary = (
        f"[stack trace · {_clip(exception)[:160]} · {plural(total_frames, 'frame')}"
        f" · {plural(causes, 'chained section')}]"
    )
    body = [summary]
    for section in sections:
        body.extend(_clip(line) for line in section.header[:6])
        if len(section.header) > 6:
            body.append(elision(len(section.header) - 6, "line"))
        body.extend(_render_frames(section.frames))
    return TraceDigest("\n".join(body), exception)
