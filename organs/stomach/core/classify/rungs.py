"""The rungs that read a block as what a running program writes, and what every rung shares.

A trace or a log is told by shapes a program stamps on line after line (a clock, a level, a frame, a record's id
or key=value pairs) whatever it says; the table rungs (``table_rungs``) and the text and code rungs
(``text_rungs``) read shapes of another kind. The share a shape must carry (``carried``), the lines that count
in it (``written_lines``) and the test for free text (``reads_as_free_text``) are here with ``Classification``
because all three rooms lean on them: the other two import this module and it imports neither.

Each rung takes the sampled lines (escapes removed, each cut to ``LINE_PREFIX``)
and names a kind with its reason, or passes. The order they are tried in, why it
is load-bearing, and each rung's label (``rung 4c: ...``), are ``organs.stomach.core.classify.ladder``'s ``LADDER``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from envelopes.types import SegmentKind
from organs.stomach.core.shapes.line_shapes import (
    LOGFMT_PAIR,
    is_box_border,
    is_json_record,
    is_tool_level,
    labelled_stamp_end,
)
from organs.stomach.core.shapes.signals import level_of
from organs.stomach.core.shapes.timestamps import leading_stamp
from organs.stomach.core.shapes.trace_shapes import (
    STRONG_HEADERS,
    is_go_function,
    is_thread_heading,
    is_trace_context,
    is_trace_frame,
    kernel_prefix_end,
    trace_header,
)
from organs.stomach.core.tuning import ClassifyTuning

__all__ = [
    "Classification",
    "carried",
    "delimited_record_log_rung",
    "json_lines_rung",
    "key_value_records_rung",
    "numbered_records_rung",
    "reads_as_free_text",
    "record_log_rung",
    "timestamped_log_rung",
    "trace_rung",
    "traces_log_rung",
    "weak_log_rung",
    "written_lines",
]


@dataclass(frozen=True, slots=True)
class Classification:
    kind: SegmentKind
    reason: str


def carried(count: int, total: int, tuning: ClassifyTuning) -> bool:
    """Whether ``count`` of ``total`` lines are enough for a shape to name the block (``signal_tenths``)."""
    return count * 10 >= total * tuning.signal_tenths


def written_lines(lines: list[str]) -> list[str]:
    """The lines that hold something: blank lines (a whitespace-only line inside a fence, say) and a box's bare
    borders take no side in a share."""
    return [line for line in lines if line.strip() and not is_box_border(line)]


def trace_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    headers: list[tuple[int, str]] = []
    frames = 0
    trace_lines = 0
    inside = False
    strong_opening = False
    following_is_frame = bool(lines) and is_trace_frame(lines[0])
    for index, line in enumerate(lines):
        if (index - trace_lines) * 10 > len(lines) * (10 - tuning.signal_tenths) and not strong_opening:
            # Too many lines are not trace lines for the rest to make a trace, whatever it holds.
            return None
        if index == tuning.trace_probe_lines and trace_lines == 0:
            # A block whose first lines hold no trace line is at most a log with a trace further down.
            return None
        is_frame = following_is_frame
        following_is_frame = index + 1 < len(lines) and is_trace_frame(lines[index + 1])
        if is_frame or (following_is_frame and is_go_function(line)):
            frames += 1
            trace_lines += 1
            inside = True
            continue
        header = trace_header(line)
        if header is None and following_is_frame:
            # A logged line that announces the frames below it ("... ERROR x: java.io.IOException: y").
            header = "announced" if ("Exception" in line or "Error" in line or "panic" in line) else None
        if header is not None:
            headers.append((index, header))
            strong_opening = strong_opening or (index == 0 and header in STRONG_HEADERS)
            trace_lines += 1
            inside = True
        elif is_trace_context(line) or (inside and line.startswith((" ", "\t"))):
            # Markers, carets and registers; and under a frame, its source line or message continuation.
            trace_lines += 1
        else:
            inside = False
    if not headers:
        return _bare_backtrace(lines, frames, trace_lines, tuning)
    first_kind = headers[0][1]
    # A chain of exceptions printed without frames ("X: a / nested exception is: / Y: b") is still a trace.
    header_chain = headers[0][0] == 0 and len(headers) >= 2
    if frames == 0 and not (strong_opening or header_chain):
        return None
    if not strong_opening and not carried(trace_lines, len(lines), tuning):
        return None
    return Classification(
        "stack_trace",
        f"stack trace ({first_kind} header, {frames} frames, {trace_lines}/{len(lines)} trace lines)",
    )


def _bare_backtrace(lines: list[str], frames: int, trace_lines: int, tuning: ClassifyTuning) -> Classification | None:
    """A backtrace printed without the exception that raised it: a debugger's ``bt``, or frames pasted alone."""
    opens = bool(lines) and (is_trace_frame(lines[0]) or is_thread_heading(lines[0]))
    if not opens or frames < tuning.bare_trace_frames or not carried(trace_lines, len(lines), tuning):
        return None
    return Classification(
        "stack_trace", f"a backtrace with no header ({frames} frames, {trace_lines}/{len(lines)} trace lines)"
    )


def timestamped_log_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    clocked = sum(1 for line in lines if leading_stamp(line) is not None)
    if not carried(clocked, len(lines), tuning):
        return None
    if not any(level_of(line) is not None for line in lines):
        return None
    return Classification(
        "log", f"timestamped log ({clocked}/{len(lines)} lines start with a clock; level token present)"
    )


_DELIMITER_AFTER_STAMP = frozenset("|\t,;")
_TWO_LETTERS = re.compile(r"[A-Za-z]{2}")


def reads_as_free_text(field: str) -> bool:
    """A word with two letters in a row followed by another word: prose, not a value.

    Checked word by word, so the cost stays linear in the field however it is spelled.
    """
    words = [word for word in field.split(" ") if word]
    return any(_TWO_LETTERS.search(word) for word in words[:-1])


def delimited_record_log_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    if len(lines) < 2:
        return None
    records = 0
    for line in lines:
        stamp = leading_stamp(line)
        if stamp is None or stamp.end >= len(line) or line[stamp.end] not in _DELIMITER_AFTER_STAMP:
            continue
        last_field = line[line.rfind(line[stamp.end]) + 1 :]
        if reads_as_free_text(last_field):
            records += 1
    if not carried(records, len(lines), tuning):
        return None
    return Classification(
        "log", f"clock-led delimited records with a free-text last field ({records}/{len(lines)} lines)"
    )


def json_lines_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    records = sum(1 for line in lines if is_json_record(line))
    if not carried(records, len(lines), tuning) or records == 0:
        return None
    return Classification("log", f"JSON lines with log fields ({records}/{len(lines)} lines)")


def _record_start(line: str) -> bool:
    """Whether a line opens a log record: a clock at its start, or after a short label (``# Time:``)."""
    if leading_stamp(line) is not None:
        return True
    label_end = labelled_stamp_end(line)
    return label_end > 0 and leading_stamp(line[label_end:]) is not None


def record_log_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    # Multi-line records: a clocked header line, then continuation lines (a trace inside the record,
    # wrapped JSON, the query of a slow-query log). A clocked first line with a level is one record;
    # otherwise the block must open with a record and hold another.
    if not lines or not _record_start(lines[0]):
        return None
    starts = sum(1 for line in lines if _record_start(line))
    leveled = level_of(lines[0]) is not None and leading_stamp(lines[0]) is not None
    if starts < 2 and not leveled:
        return None
    return Classification("log", f"multi-line log records ({starts} record headers over {len(lines)} lines)")


_BRACKETED_PREFIX = re.compile(r"\s*\[[^\]\n]{1,80}\] ")
_DAEMON_TAG = re.compile(r"[^\s\[]{1,80}\[\d{1,10}\]: ")
# .NET's console logger: "info: Microsoft.Hosting.Lifetime[0]", "fail: Shop.Api[13]".
_DOTNET_LEVEL = re.compile(r"(?:trce|dbug|info|warn|fail|crit): [\w.]{1,200}\[\d{1,10}\]")
_EMBEDDED_CLOCK = re.compile(r"\d{1,2}:\d{2}:\d{2}")


def _weak_log_signal(line: str, single: bool, tuning: ClassifyTuning) -> bool:
    level_window = tuning.weak_level_chars_alone if single else tuning.weak_level_chars
    level_match = level_of(line[:level_window])
    if (level_match is not None or is_tool_level(line)) and not line.endswith("?"):
        return True
    if single:
        return False
    return (
        _BRACKETED_PREFIX.match(line) is not None
        or kernel_prefix_end(line) > 0
        or is_tool_level(line)
        or _DOTNET_LEVEL.match(line) is not None
        or _DAEMON_TAG.search(line, 0, tuning.weak_tag_chars) is not None
        or _EMBEDDED_CLOCK.search(line, 0, tuning.weak_clock_chars) is not None
    )


# "  PID TTY          TIME CMD", "NAME   READY   STATUS": a header row of upper-case column names.
_COLUMN_HEADER = re.compile(r"\s*[A-Z][A-Z0-9_%/()-]*(?: +[A-Z][A-Z0-9_%/()-]*){2,30}\s*$")


def weak_log_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    if len(lines) > 1 and _COLUMN_HEADER.match(lines[0]) is not None:
        # A table with a clock column reads as a log line by line: its header row says it is a table.
        return None
    single = len(lines) == 1
    signalled = sum(1 for line in lines if _weak_log_signal(line, single, tuning))
    if not carried(signalled, len(lines), tuning) or signalled == 0:
        return None
    return Classification(
        "log", f"log without leading timestamps ({signalled}/{len(lines)} lines carry a level, tag or clock)"
    )


# A sequence number or epoch, or numbers joined by colons and dots (a pid and a compact date and time:
# " 12480:20180217:212904.319"), of five digits or more in all, then the record.
_NUMBERED_RECORD = re.compile(r"\s{0,8}(?:- )?(\d{1,20}(?:[:.]\d{1,20}){0,3}) \S")


def _numbered(line: str, tuning: ClassifyTuning) -> bool:
    found = _NUMBERED_RECORD.match(line)
    return found is not None and sum(digit.isdigit() for digit in found.group(1)) >= tuning.numbered_record_digits


def numbered_records_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    # Machine records that open with a sequence number or epoch and carry no level or clock
    # up front. Tried after the aligned-table rung, because `ps` rows open with a PID too.
    numbered = sum(1 for line in lines if _numbered(line, tuning))
    if len(lines) < tuning.numbered_least_lines or numbered * 10 < len(lines) * tuning.row_tenths:
        return None
    return Classification("log", f"numbered machine records ({numbered}/{len(lines)} lines open with an id)")


def key_value_records_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    # Records of several key=value fields each (logfmt, Linux audit, many daemons' text output): a config file
    # holds one pair a line, so several on most lines are events. Tried before code, which reads "a=b" as a setting.
    if len(lines) < tuning.record_least_lines:
        return None
    least = tuning.record_pairs
    records = sum(1 for line in lines if line.count("=") >= least and len(LOGFMT_PAIR.findall(line)) >= least)
    if not carried(records, len(lines), tuning):
        return None
    return Classification("log", f"key=value records ({records}/{len(lines)} lines hold {tuning.record_pairs}+ pairs)")


def traces_log_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    # A program's own lines between the tracebacks it printed (a server's startup banners, each failed boot's
    # backtrace): no one trace opens the block, but its frames are a good part of it. Tried before code, whose
    # keywords a frame's words imitate (Ruby's "from /app/x.rb:19:in `setup'").
    written = written_lines(lines)
    frames = sum(1 for line in written if is_trace_frame(line))
    if frames == 0 or frames * tuning.frame_one_in < len(written):
        return None
    return Classification("log", f"a program's lines among its tracebacks ({frames}/{len(written)} lines are frames)")
