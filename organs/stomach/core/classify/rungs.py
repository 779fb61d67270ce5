"""The rungs of the classification ladder, each a test of one shape over a block's sample.

Each rung takes the sampled lines (escapes removed, each cut to ``LINE_PREFIX``)
and names a kind with its reason, or passes. The order they are tried in, why it
is load-bearing, and each rung's label (``rung 4c: ...``), are ``organs.stomach.core.classify.ladder``'s ``LADDER``.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass

from envelopes.types import SegmentKind
from organs.stomach.core.distill.text import plural
from organs.stomach.core.shapes.line_shapes import (
    LOGFMT_PAIR,
    box_as_pipes,
    commented_out,
    is_box_border,
    is_box_level,
    is_boxed,
    is_comment_line,
    is_compiler_diagnostic,
    is_json_record,
    is_pointer,
    is_psql_rule,
    is_test_report,
    is_tool_level,
    labelled_stamp_end,
    listing_key,
    source_column_end,
    unboxed,
)
from organs.stomach.core.shapes.signals import aligned_columns, level_of
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
    "aligned_table_rung",
    "clocked_samples_rung",
    "code_rung",
    "delimited_record_log_rung",
    "delimited_table_rung",
    "diagnostics_rung",
    "json_lines_rung",
    "listing_rung",
    "numbered_records_rung",
    "record_log_rung",
    "result_table_rung",
    "source_column_rung",
    "test_report_rung",
    "timestamped_log_rung",
    "trace_rung",
    "weak_log_rung",
]


@dataclass(frozen=True, slots=True)
class Classification:
    kind: SegmentKind
    reason: str


def _carried(count: int, total: int, tuning: ClassifyTuning) -> bool:
    """Whether ``count`` of ``total`` lines are enough for a shape to name the block (``signal_tenths``)."""
    return count * 10 >= total * tuning.signal_tenths


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
    if not strong_opening and not _carried(trace_lines, len(lines), tuning):
        return None
    return Classification(
        "stack_trace",
        f"stack trace ({first_kind} header, {frames} frames, {trace_lines}/{len(lines)} trace lines)",
    )


def _bare_backtrace(lines: list[str], frames: int, trace_lines: int, tuning: ClassifyTuning) -> Classification | None:
    """A backtrace printed without the exception that raised it: a debugger's ``bt``, or frames pasted alone."""
    opens = bool(lines) and (is_trace_frame(lines[0]) or is_thread_heading(lines[0]))
    if not opens or frames < tuning.bare_trace_frames or not _carried(trace_lines, len(lines), tuning):
        return None
    return Classification(
        "stack_trace", f"a backtrace with no header ({frames} frames, {trace_lines}/{len(lines)} trace lines)"
    )


def timestamped_log_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    clocked = sum(1 for line in lines if leading_stamp(line) is not None)
    if not _carried(clocked, len(lines), tuning):
        return None
    if not any(level_of(line) is not None for line in lines):
        return None
    return Classification(
        "log", f"timestamped log ({clocked}/{len(lines)} lines start with a clock; level token present)"
    )


_DELIMITER_AFTER_STAMP = frozenset("|\t,;")
_TWO_LETTERS = re.compile(r"[A-Za-z]{2}")


def _reads_as_free_text(field: str) -> bool:
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
        if _reads_as_free_text(last_field):
            records += 1
    if not _carried(records, len(lines), tuning):
        return None
    return Classification(
        "log", f"clock-led delimited records with a free-text last field ({records}/{len(lines)} lines)"
    )


def json_lines_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    records = sum(1 for line in lines if is_json_record(line))
    if not _carried(records, len(lines), tuning) or records == 0:
        return None
    return Classification("log", f"JSON lines with log fields ({records}/{len(lines)} lines)")


def source_column_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    # docker compose and kubectl prefix each line with the service or pod that wrote it: a source
    # column, which a two-column pipe table imitates. The sources repeat and what follows them reads
    # as messages; a table's first column names each row once and its cells are values.
    if len(lines) < 2:
        return None
    sources: set[str] = set()
    messages = 0
    prefixed = 0
    for line in lines:
        found = source_column_end(line)
        if found is None:
            continue
        prefixed += 1
        sources.add(found[0])
        rest = line[found[1] :]
        messages += is_json_record(rest) or _reads_as_free_text(rest) or leading_stamp(rest) is not None
    if (
        prefixed * 10 < len(lines) * tuning.row_tenths
        or len(sources) > max(tuning.sources_always_allowed, prefixed // tuning.source_one_in)
        or not _carried(messages, prefixed, tuning)
    ):
        return None
    return Classification(
        "log", f"lines prefixed by a source column ({len(sources)} sources, {prefixed}/{len(lines)} lines)"
    )


def _diagnostic(line: str) -> bool:
    # A line that asks ("error: x when I run y?") is the user's, whatever it quotes.
    if line.endswith("?"):
        return False
    text, boxed = unboxed(line)
    return is_compiler_diagnostic(text) or (boxed and is_box_level(text))


def _written(lines: list[str]) -> list[str]:
    """The lines that hold something: blank lines (a whitespace-only line inside a fence, say) and a box's bare
    borders take no side in a share."""
    return [line for line in lines if line.strip() and not is_box_border(line)]


def diagnostics_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    written = _written(lines)
    diagnostics = sum(1 for line in written if _diagnostic(line))
    # A pointer and the source line it stands under are a diagnostic's quote: they count for no side.
    quoted = sum(2 for line in written[1:] if is_pointer(line))
    if diagnostics == 0 or not (
        _diagnostic(written[0]) or diagnostics * tuning.diagnostic_one_in >= len(written) - quoted
    ):
        return None
    return Classification("log", f"compiler or build diagnostics ({diagnostics}/{len(written)} lines)")


def test_report_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    written = _written(lines)
    reported = sum(1 for line in written if is_test_report(line))
    if not written or reported < min(2, len(written)) or reported * tuning.diagnostic_one_in < len(written):
        return None
    return Classification("log", f"a test run's report ({reported}/{len(written)} runner lines)")


def _same_count_share(counts: list[int]) -> tuple[int, float]:
    """The most common count and the share of rows that have it (ties go to the larger count)."""
    tally: dict[int, int] = {}
    for count in counts:
        tally[count] = tally.get(count, 0) + 1
    best = max(tally, key=lambda count: (tally[count], count))
    return best, tally[best] / len(counts)


def _pipe_cells(line: str) -> int:
    inner = line.strip()
    inner = inner.removeprefix("|").removesuffix("|")
    return inner.count("|") + 1 if "|" in inner else 1


def _comma_cells_read_like_values(lines: list[str], columns: int, tuning: ClassifyTuning) -> bool:
    rows = [row for row in csv.reader(lines) if len(row) == columns]
    words = [len(cell.split()) for row in rows for cell in row]
    # With many columns kept line after line, a long cell is a name or a description column, not
    # the sign of comma-spliced prose: only the mean must stay value-like.
    if not words or (columns < tuning.many_columns and max(words) > tuning.cell_words):
        return False
    return sum(words) / len(words) <= tuning.mean_cell_words


# A row of three quoted cells or more, comma-separated from its first character (a cut line may end mid-cell).
_QUOTED_ROW = re.compile(r'"[^"]*"(?:,"[^"]*"){2,}')


def delimited_table_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    if len(lines) < 2:
        return None
    least_share = tuning.column_tenths / 10
    cells = [_pipe_cells(box_as_pipes(line)) for line in lines]
    # A title above the table ("[+] Group: Lateral Movement") is not one of its rows.
    if len(cells) > 2 and cells[0] == 1:
        cells = cells[1:]
    pipe_columns, pipe_share = _same_count_share(cells)
    if pipe_columns >= 2 and pipe_share >= least_share:
        return Classification("table", f"pipe-delimited table ({pipe_columns} columns)")
    drawn = [line for line in lines if line.strip()]
    if sum(map(is_boxed, drawn)) >= len(drawn) * least_share:
        # Boxes side by side (a query plan) share no column count, but each line is drawn: a table of boxes.
        return Classification("table", "box-drawn table (its rows drawn in boxes)")
    tab_columns, tab_share = _same_count_share([line.count("\t") + 1 for line in lines])
    if tab_columns >= 2 and tab_share >= least_share:
        return Classification("table", f"tab-delimited table ({tab_columns} columns)")
    quoted = sum(1 for line in lines if _QUOTED_ROW.match(line) is not None)
    if quoted >= len(lines) * least_share:
        # Every cell quoted, line after line, is a CSV export whatever its cells say (a report's descriptions).
        return Classification("table", f"comma-delimited table ({quoted} rows of quoted cells)")
    try:
        comma_counts = [len(row) for row in csv.reader(lines)]
    except csv.Error:
        return None
    if len(comma_counts) != len(lines):
        return None
    comma_columns, comma_share = _same_count_share(comma_counts)
    if (
        comma_columns >= 2
        and comma_share >= least_share
        and _comma_cells_read_like_values(lines, comma_columns, tuning)
    ):
        return Classification("table", f"comma-delimited table ({comma_columns} columns, value-like cells)")
    return None


_ROW_COUNT = re.compile(r"\(\d{1,12} rows?\)\s*$")


def result_table_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    # A SQL client's results: a header over a dashed rule, rows, "(N rows)"; the statements that
    # produced them may stand above, as they do in a pasted session.
    ruled = sum(
        1
        for index, line in enumerate(lines[1:], start=1)
        if is_psql_rule(line) and lines[index - 1].strip() and not is_psql_rule(lines[index - 1])
    )
    counted = sum(1 for line in lines if _ROW_COUNT.match(line.strip()) is not None)
    boxed = sum(1 for line in lines if line.startswith("+-") and is_psql_rule(line))
    # A box's rows are walled ("| 7 | cart |"); a frame of dashes around other lines (a server printing its
    # config between two rules) is no result set.
    walled = sum(1 for line in lines if line.startswith("|"))
    if not ((ruled and counted) or (boxed >= 2 and walled)):
        return None
    return Classification("table", f"SQL client result table ({max(ruled, boxed // 2)} result sets)")


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


# A sample's clock (``06:02:47``, ``06:02:47 PM``) and a cell of a sample's row (``95.19``, ``1,024``, ``7%``).
_SAMPLE_CLOCK = re.compile(r"\d{1,2}:\d{2}(?::\d{2})?")
_SAMPLE_VALUE = re.compile(r"[-+]?\d[\d.,]*%?")


def _sample_line(fields: list[str]) -> str | None:
    """``row`` for a clock and numbers (one label allowed), ``header`` for a clock and column names, else None."""
    fields = fields[2:] if len(fields) > 1 and fields[1] in ("AM", "PM") else fields[1:]
    if not fields:
        return None
    words = sum(1 for field in fields if _SAMPLE_VALUE.fullmatch(field) is None)
    if words <= 1 and len(fields) >= 2:
        return "row"
    return "header" if words == len(fields) >= 3 else None


def clocked_samples_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    """Samples taken on a clock (sar, iostat, pidstat): rows of a clock and numbers under header rows of a clock
    and column names, a blank line between one resource's table and the next; a log's clock is followed by
    words."""
    written = [line.split() for line in lines if line.strip()]
    kinds = [_sample_line(fields) if fields and _SAMPLE_CLOCK.fullmatch(fields[0]) else None for fields in written]
    rows, headers = kinds.count("row"), kinds.count("header")
    if headers == 0 or rows < tuning.sample_rows or (rows + headers) * 10 < len(written) * tuning.row_tenths:
        return None
    return Classification("table", f"samples on a clock ({rows} rows under {plural(headers, 'header')})")


# "  PID TTY          TIME CMD", "NAME   READY   STATUS": a header row of upper-case column names.
_COLUMN_HEADER = re.compile(r"\s*[A-Z][A-Z0-9_%/()-]*(?: +[A-Z][A-Z0-9_%/()-]*){2,30}\s*$")


def weak_log_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    if len(lines) > 1 and _COLUMN_HEADER.match(lines[0]) is not None:
        # A table with a clock column reads as a log line by line: its header row says it is a table.
        return None
    single = len(lines) == 1
    signalled = sum(1 for line in lines if _weak_log_signal(line, single, tuning))
    if not _carried(signalled, len(lines), tuning) or signalled == 0:
        return None
    return Classification(
        "log", f"log without leading timestamps ({signalled}/{len(lines)} lines carry a level, tag or clock)"
    )


_RULE = re.compile(r"\s*[-=]{3,}[-=+\s]*")


def aligned_table_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    if len(lines) < 2 or any("\t" in line for line in lines):
        return None
    # A JSON document's nesting lines its keys up in columns: it opens with its brace or bracket alone.
    if lines[0].strip() in ("{", "["):
        return None
    # A rule over or under the header (``-------``) is the table's drawing, not a row: it fills every gutter.
    within = tuning.header_rule_lines
    head = [line for line in lines[:within] if _RULE.fullmatch(line) is None]
    lines = [*head, *lines[within:]] if head else lines
    columns = aligned_columns(lines)
    if len(columns) < 2:
        return None
    filled = [sum(1 for start, end in columns if line[start:end].strip()) for line in lines]
    full_rows = sum(1 for count in filled if count >= len(columns) - 1)
    if full_rows * 10 < len(lines) * tuning.row_tenths:
        return None
    return Classification("table", f"whitespace-aligned table ({len(columns)} columns)")


def listing_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    # kubectl describe and its kin: "Key:    value" with the values aligned, nested keys indented.
    keyed = sum(1 for line in lines if listing_key(line))
    aligned = sum(1 for line in lines if listing_key(line) and ":  " in line)
    covered = sum(1 for line in lines if listing_key(line) or line.startswith((" ", "\t")))
    if (
        aligned < tuning.listing_aligned_keys
        or not _carried(keyed, len(lines), tuning)
        or covered * 10 < len(lines) * tuning.listing_tenths
    ):
        return None
    return Classification("table", f"aligned key/value listing ({keyed}/{len(lines)} keyed lines)")


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
    if not _carried(records, len(lines), tuning):
        return None
    return Classification("log", f"key=value records ({records}/{len(lines)} lines hold {tuning.record_pairs}+ pairs)")


def traces_log_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    # A program's own lines between the tracebacks it printed (a server's startup banners, each failed boot's
    # backtrace): no one trace opens the block, but its frames are a good part of it. Tried before code, whose
    # keywords a frame's words imitate (Ruby's "from /app/x.rb:19:in `setup'").
    written = _written(lines)
    frames = sum(1 for line in written if is_trace_frame(line))
    if frames == 0 or frames * tuning.frame_one_in < len(written):
        return None
    return Classification("log", f"a program's lines among its tracebacks ({frames}/{len(written)} lines are frames)")


_CODE_LINE = re.compile(
    r"\s*(?:(?:def|class|import|from|fn|pub|let|const|var|func|function|return|package|use|impl|struct|enum|"
    r"interface|type|async|await|#include|#define|#import|public|private|protected|static|try|catch|except|finally|"
    r"elif|else|switch|case)\b"
    r"|(?:if|for|while)\s*\(|[}\])];?\s*$|@\w|//|/\*|\*/|#!)"
    r"|.*(?:[;{]\s*$|\)\s*\{|=>|->|:=|==|!=|&&|\|\|)"
    r"|\s*[A-Za-z_][\w.]*(?:\[[^\]\n]{0,80}\])? ?[-+*/|&]?= \S"
    # a config's padded keys ("pid-file        = /run/db.pid") and a rules file's options ("-w /etc/passwd -p wa")
    r"|\s*[A-Za-z_][\w.-]{0,60}[ \t]{1,40}= \S|\s*--?[A-Za-z][\w-]{0,40}(?: \S|\s*$)"
    # INI, systemd units, .env: "[Unit]", "Description=queue worker", "FOO=bar"
    r"|\[[\w .:\"/-]{1,80}\]\s*$|[A-Za-z_][\w.-]{0,60}=\S"
    # YAML and JSON keys: "kind: Deployment", "  name:", "- image: web", "\"version\": \"1.0\","; a YAML key is
    # lower-case and its value a few words, where a prose label ("Context: we run…") is capitalised or says more
    r"|\s*(?:- )?[a-z_][\w.-]{0,60}:(?:\s*$| (?:\S{1,200} ){0,2}\S{1,200}$)|\s*\"[^\"\n]{1,80}\"\s?:\s?\S|\s*[{\[]\s*$"
    # SQL and Dockerfile statements, shell control words
    r"|(?:SELECT|FROM|WHERE|JOIN|LEFT JOIN|INNER JOIN|GROUP BY|ORDER BY|HAVING|LIMIT|INSERT INTO|UPDATE|DELETE FROM"
    r"|CREATE|ALTER|DROP|WITH|VALUES|RUN|CMD|COPY|ADD|WORKDIR|ENV|EXPOSE|ENTRYPOINT|ARG|LABEL|USER|VOLUME) \S"
    r"|\s*(?:fi|done|esac|then|do|else)\s*$|\s*(?:set -[a-z]|export \w|if \[|for \w{1,40} in |while \[|echo )"
    # unified diffs
    r"|diff --git |@@ -\d|(?:---|\+\+\+) [ab]/|index [0-9a-f]{7,40}\.\."
)


_PLAIN_WORD = re.compile(r"[A-Za-z][a-z'’]*[,;:]?|[a-z]+[.?!]?")
# A sentence ends somewhere in the line (a long line is read clipped, so its end may not be seen).
_SENTENCE_ENDS = re.compile(r"^[A-Za-z(\"'].*?[a-z)\"'][.?!](?:\s|$)")


def _reads_as_sentence(line: str, tuning: ClassifyTuning) -> bool:
    """Whether a line is someone writing a sentence (``ClassifyTuning.sentence_least_words``) rather than code."""
    stripped = line.strip()
    if _SENTENCE_ENDS.match(stripped) is None:
        return False
    words = stripped.split()
    return len(words) >= tuning.sentence_least_words and _mostly_plain(words, tuning)


def _mostly_plain(words: list[str], tuning: ClassifyTuning) -> bool:
    """Whether at most one word in ``sentence_odd_word_one_in`` is anything but a plain word."""
    plain = sum(1 for word in words if _PLAIN_WORD.fullmatch(word) is not None)
    return (len(words) - plain) * tuning.sentence_odd_word_one_in <= len(words)


def _code_shaped(line: str) -> bool:
    directive = commented_out(line)
    return _CODE_LINE.match(line) is not None or (directive is not None and _CODE_LINE.match(directive) is not None)


def code_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    # A config's comments ("## Set failure mode to syslog") say what its lines do: its lines decide, a directive
    # commented out (";pm.max_requests = 500") among them, and its blank lines say nothing.
    lines = [line for line in lines if line.strip() and not is_comment_line(line)]
    shaped = sum(1 for line in lines if _code_shaped(line) and not _reads_as_sentence(line, tuning))
    if not _carried(shaped, len(lines), tuning) or shaped == 0:
        return None
    return Classification("code", f"unfenced code ({shaped}/{len(lines)} code-shaped lines)")


def _wordy(line: str, tuning: ClassifyTuning) -> bool:
    """Whether a line is mostly plain words, as people write: a few of them, at most one in three anything else."""
    words = line.split()
    return len(words) >= tuning.wordy_least_words and _mostly_plain(words, tuning)


# A line that is a JSON document written on one line: an object or an array of them, with keys.
_JSON_DOCUMENT = re.compile(r'\s*\[?\s*\{\s*"[^"]{1,200}"\s*:')


def json_document_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    # A JSON document minified onto one line (an API's response, a bundler's metafile, a schema) is data, not the
    # user's words; JSON lines with a log's fields were read as a log above.
    written = _written(lines)
    documents = sum(1 for line in written if _JSON_DOCUMENT.match(line) is not None and line.count('":') >= 2)
    if documents == 0 or not _carried(documents, len(written), tuning):
        return None
    return Classification("code", f"JSON documents ({documents}/{len(written)} lines)")


# A line that opens a nested block (``if {``, ``defmodule Board do``, ``{deps, [``, ``<module name="x">``) and one
# that closes it.
_OPENS = re.compile(r"(?:[{\[(]|\bdo|->)\s*(?:(?:#|//|%).*)?$|^\s*<[A-Za-z][\w:.-]*(?:\s[^<>]*)?(?<!/)>\s*$")
_CLOSES = re.compile(r"\s*(?:[}\])]|end\b|</[A-Za-z])")


def nested_source_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    # Source and configuration in a language no rung knows (Tcl, Elixir, an Erlang term file, a daemon's braces)
    # nest: lines open blocks that later lines close. A program's output seldom does, and never balanced.
    written = _written(lines)
    opens = sum(1 for line in written if _OPENS.search(line) is not None)
    closes = sum(1 for line in written if _CLOSES.match(line) is not None)
    if len(written) < tuning.machine_least_lines or opens * tuning.nested_one_in < len(written):
        return None
    if not opens <= closes * tuning.nested_balance <= opens * tuning.nested_balance**2:
        return None
    return Classification("code", f"nested source ({opens} lines open a block, {closes} close one)")


def machine_text_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    # What no rung above read, over many lines few of which are plain words, is a program's output (a tool's
    # report, a debugger's session, a status dump): people write words. A block that asks is the user's.
    written = _written(lines)
    if len(written) < tuning.machine_least_lines or any(line.rstrip().endswith("?") for line in written):
        return None
    wordy = sum(1 for line in written if _wordy(line, tuning))
    if wordy * tuning.machine_wordy_one_in > len(written):
        return None
    return Classification("log", f"a program's output ({wordy}/{len(written)} lines read as words)")
