"""The classification ladder: from the least ambiguous shape to the most.

The order is load-bearing, because several shapes imitate each other:

1. a fenced ``` region's content (the fence lines left out) walks the ladder
   below: a fence is a hint, not a verdict. Its language tag is evidence: what
   the ladder reads as prose is code in a box, or a log when the tag names a
   program's output (```` ```log ````, ```` ```console ````);
2. a lone path-shaped token → path_ref;
3. an exception header plus stack frames, dominating the block → stack_trace;
4. a timestamped log (half the lines open with a clock, some line carries a
   level token) → log, ahead of tables so ``ts | LEVEL | msg`` is not a table;
   4b. clock-led delimited records whose last field is free text (half the
   lines open with a clock directly followed by ``|``, tab, comma or ``;``, and
   the last field holds words separated by spaces) → log even without a level
   token: each row is an event with a message, which is what a log is. A
   markdown table never opens a row with a clock (its rows open with ``|``),
   and a metrics CSV ends in values, not phrases, so both stay tables;
5. an explicitly delimited table (``|``, tab, comma with value-like cells) → table;
6. a weaker log (level tokens, bracketed prefixes, ``daemon[pid]:`` tags or a
   clock near the start, on half the lines) → log;
7. a whitespace-aligned table (kubectl, ps, docker) → table, last of the
   tabular signals because the padding after ``INFO`` looks like a column break;
7b. lines that mostly open with a long number (a sequence id or epoch) → log,
   an addition tried after the aligned tables, whose rows may open with a PID;
8. code-shaped lines → code; anything left → prose.

Accepted misreads (visible in every SegmentReport's reason):

* A CSV of sentences reads as prose: comma cells must read like values (at most
  ``MAX_CELL_WORDS`` words each, two on average), because English is full of
  commas. The block becomes a verbatim note: the column summary is lost, the
  evidence is not.
* A scheme-less token ending in a source extension (``example.com/a.rs``,
  ``something.rs``) reads as a path anchor: in a workspace paste that is what it
  overwhelmingly is. A hostname-first token without such an extension is prose.
* Syslog stamps and bare clocks identify a log but never bound it (see
  ``organs.stomach.timestamps``).

Only a bounded sample of a block (its first and last lines, each cut to
``LINE_PREFIX`` characters) is examined, so classifying costs the same for a
thousand lines as for a million.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass

from envelopes.types import SegmentKind
from organs.stomach.signals import LINE_PREFIX, is_trace_frame, level_of, trace_header
from organs.stomach.timestamps import leading_stamp

__all__ = ["MAX_CELL_WORDS", "Classification", "classify", "looks_like_path", "sample_lines"]

MAX_CELL_WORDS = 4
_SAMPLE_HEAD = 300
_SAMPLE_TAIL = 100

# Extensions that make a scheme-less token a path even when it looks hostname-first.
_SOURCE_EXTENSIONS = frozenset(
    [
        "rs",
        "py",
        "pyi",
        "ts",
        "tsx",
        "js",
        "jsx",
        "mjs",
        "cjs",
        "go",
        "java",
        "kt",
        "kts",
        "scala",
        "c",
        "h",
        "cc",
        "cpp",
        "hpp",
        "cxx",
        "cs",
        "fs",
        "rb",
        "php",
        "swift",
        "m",
        "mm",
        "sh",
        "bash",
        "zsh",
        "ps1",
        "pl",
        "lua",
        "r",
        "jl",
        "ex",
        "exs",
        "erl",
        "hs",
        "ml",
        "clj",
        "dart",
        "zig",
        "nim",
        "pony",
        "sql",
        "md",
        "rst",
        "adoc",
        "txt",
        "toml",
        "yaml",
        "yml",
        "json",
        "jsonc",
        "ini",
        "cfg",
        "conf",
        "xml",
        "html",
        "htm",
        "css",
        "scss",
        "vue",
        "svelte",
        "proto",
        "gradle",
        "lock",
        "mk",
        "cmake",
        "dockerfile",
        "tf",
        "hcl",
        "ipynb",
        "csv",
        "tsv",
        "log",
        "env",
    ]
)
_PATH_CHARS = re.compile(r"[\w.\-@+~%=,#]+")
_HOSTNAME = re.compile(r"(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,24}(?::\d+)?")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,30}://")
_WINDOWS_DRIVE = re.compile(r"[A-Za-z]:[\\/]")


@dataclass(frozen=True, slots=True)
class Classification:
    kind: SegmentKind
    reason: str


def sample_lines(text: str) -> list[str]:
    """The first and last lines of a block, each cut to the prefix where shape lives."""
    lines = text.split("\n", _SAMPLE_HEAD) if len(text) > 1_000_000 else text.split("\n")
    if len(lines) > _SAMPLE_HEAD + _SAMPLE_TAIL:
        tail = text[-LINE_PREFIX * _SAMPLE_TAIL :].split("\n")[1:][-_SAMPLE_TAIL:]
        lines = lines[:_SAMPLE_HEAD] + tail
    return [line[:LINE_PREFIX].rstrip() for line in lines]


def _extension(segment: str) -> str:
    dot = segment.rfind(".")
    return segment[dot + 1 :].lower() if dot > 0 else ""


def looks_like_path(token: str) -> bool:
    """Whether a single token names a file or directory rather than a URL or a word."""
    if not token or len(token) > 1024:
        return False
    if _SCHEME.match(token):
        return token.startswith("file://") and len(token) > len("file://")
    if _WINDOWS_DRIVE.match(token):
        return True
    if token.startswith("//"):
        return False
    segments = token.split("/")
    if token.startswith(("/", "./", "../", "~/")):
        named = [segment for segment in segments[1:] if segment]
        return bool(named) and all(_PATH_CHARS.fullmatch(segment) for segment in named)
    if not all(_PATH_CHARS.fullmatch(segment) for segment in segments if segment):
        return False
    has_source_extension = _extension(segments[-1]) in _SOURCE_EXTENSIONS
    if len(segments) == 1:
        return has_source_extension
    if _HOSTNAME.fullmatch(segments[0]) and not has_source_extension:
        return False
    return bool(segments[0]) and any(segments[1:])


def _path_rung(text: str) -> Classification | None:
    token = text.strip()
    if any(character.isspace() for character in token):
        return None
    if looks_like_path(token):
        return Classification("path_ref", f"rung 2: lone path-shaped token {token[:80]!r}")
    return None


def _panics_without_frames(first_header: tuple[int, str]) -> bool:
    """A Rust or Go panic opening the block is a trace even with no frames below it."""
    return first_header == (0, "rust") or first_header == (0, "go_panic")


def _trace_rung(lines: list[str]) -> Classification | None:
    headers: list[tuple[int, str]] = []
    frames = 0
    trace_lines = 0
    previous_was_python_frame = False
    for index, line in enumerate(lines):
        if (index - trace_lines) * 2 > len(lines) and not (headers and _panics_without_frames(headers[0])):
            # More than half the lines are not trace lines: no trace, whatever the rest holds.
            return None
        if is_trace_frame(line):
            frames += 1
            trace_lines += 1
            previous_was_python_frame = line.lstrip().startswith("File ")
            continue
        header = trace_header(line)
        if header is None and index + 1 < len(lines) and is_trace_frame(lines[index + 1]):
            # A logged line that announces the frames below it ("... ERROR x: java.io.IOException: y").
            header = "announced" if ("Exception" in line or "Error" in line or "panic" in line) else None
        if header is not None:
            headers.append((index, header))
            trace_lines += 1
        elif previous_was_python_frame or line.startswith(("During handling", "The above exception")):
            trace_lines += 1
        previous_was_python_frame = False
    if not headers:
        return None
    first_kind = headers[0][1]
    panicked_without_frames = frames == 0 and _panics_without_frames(headers[0])
    if frames == 0 and not panicked_without_frames:
        return None
    if not panicked_without_frames and trace_lines * 2 < len(lines):
        return None
    return Classification(
        "stack_trace",
        f"rung 3: stack trace ({first_kind} header, {frames} frames, {trace_lines}/{len(lines)} trace lines)",
    )


def _timestamped_log_rung(lines: list[str]) -> Classification | None:
    clocked = sum(1 for line in lines if leading_stamp(line) is not None)
    if clocked * 2 < len(lines):
        return None
    if not any(level_of(line) is not None for line in lines):
        return None
    return Classification(
        "log", f"rung 4: timestamped log ({clocked}/{len(lines)} lines start with a clock; level token present)"
    )


_DELIMITER_AFTER_STAMP = frozenset("|\t,;")
_TWO_LETTERS = re.compile(r"[A-Za-z]{2}")


def _reads_as_free_text(field: str) -> bool:
    """A word with two letters in a row followed by another word: prose, not a value.

    Checked word by word, so the cost stays linear in the field however it is spelled.
    """
    words = [word for word in field.split(" ") if word]
    return any(_TWO_LETTERS.search(word) for word in words[:-1])


def _delimited_record_log_rung(lines: list[str]) -> Classification | None:
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
    if records * 2 < len(lines):
        return None
    return Classification(
        "log", f"rung 4b: clock-led delimited records with a free-text last field ({records}/{len(lines)} lines)"
    )


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


def _comma_cells_read_like_values(lines: list[str], columns: int) -> bool:
    rows = [row for row in csv.reader(lines) if len(row) == columns]
    words = [len(cell.split()) for row in rows for cell in row]
    if not words or max(words) > MAX_CELL_WORDS:
        return False
    return sum(words) / len(words) <= 2.0


def _delimited_table_rung(lines: list[str]) -> Classification | None:
    if len(lines) < 2:
        return None
    pipe_columns, pipe_share = _same_count_share([_pipe_cells(line) for line in lines])
    if pipe_columns >= 2 and pipe_share >= 0.9:
        return Classification("table", f"rung 5: pipe-delimited table ({pipe_columns} columns)")
    tab_columns, tab_share = _same_count_share([line.count("\t") + 1 for line in lines])
    if tab_columns >= 2 and tab_share >= 0.9:
        return Classification("table", f"rung 5: tab-delimited table ({tab_columns} columns)")
    try:
        comma_counts = [len(row) for row in csv.reader(lines)]
    except csv.Error:
        return None
    if len(comma_counts) != len(lines):
        return None
    comma_columns, comma_share = _same_count_share(comma_counts)
    if comma_columns >= 2 and comma_share >= 0.9 and _comma_cells_read_like_values(lines, comma_columns):
        return Classification("table", f"rung 5: comma-delimited table ({comma_columns} columns, value-like cells)")
    return None


_BRACKETED_PREFIX = re.compile(r"\s*\[[^\]\n]{1,80}\] ")
_DAEMON_TAG = re.compile(r"[^\s\[]{1,80}\[\d{1,10}\]: ")
_EMBEDDED_CLOCK = re.compile(r"\d{1,2}:\d{2}:\d{2}")


def _weak_log_signal(line: str, single: bool) -> bool:
    level_window = 40 if single else 120
    level_match = level_of(line[:level_window])
    if level_match is not None and not line.endswith("?"):
        return True
    if single:
        return False
    return (
        _BRACKETED_PREFIX.match(line) is not None
        or _DAEMON_TAG.search(line, 0, 120) is not None
        or _EMBEDDED_CLOCK.search(line, 0, 80) is not None
    )


def _weak_log_rung(lines: list[str]) -> Classification | None:
    single = len(lines) == 1
    signalled = sum(1 for line in lines if _weak_log_signal(line, single))
    if signalled * 2 < len(lines) or signalled == 0:
        return None
    return Classification(
        "log", f"rung 6: log without leading timestamps ({signalled}/{len(lines)} lines carry a level, tag or clock)"
    )


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


def _aligned_table_rung(lines: list[str]) -> Classification | None:
    if len(lines) < 2 or any("\t" in line for line in lines):
        return None
    columns = aligned_columns(lines)
    if len(columns) < 2:
        return None
    filled = [sum(1 for start, end in columns if line[start:end].strip()) for line in lines]
    full_rows = sum(1 for count in filled if count >= len(columns) - 1)
    if full_rows * 10 < len(lines) * 8:
        return None
    return Classification("table", f"rung 7: whitespace-aligned table ({len(columns)} columns)")


_NUMBERED_RECORD = re.compile(r"(?:- )?\d{5,20} \S")


def _numbered_records_rung(lines: list[str]) -> Classification | None:
    # Machine records that open with a sequence number or epoch and carry no level or clock
    # up front. Tried after the aligned-table rung, because `ps` rows open with a PID too.
    numbered = sum(1 for line in lines if _NUMBERED_RECORD.match(line) is not None)
    if len(lines) < 3 or numbered * 10 < len(lines) * 8:
        return None
    return Classification("log", f"rung 7b: numbered machine records ({numbered}/{len(lines)} lines open with an id)")


_CODE_LINE = re.compile(
    r"\s*(?:(?:def|class|import|from|fn|pub|let|const|var|func|function|return|package|use|impl|struct|enum|"
    r"interface|type|async|await|#include|#define|#import|public|private|protected|static|try|catch|except|finally|"
    r"elif|else|switch|case)\b"
    r"|(?:if|for|while)\s*\(|[}\])];?\s*$|@\w|//|/\*|\*/|#!)"
    r"|.*(?:[;{]\s*$|\)\s*\{|=>|->|:=|==|!=|&&|\|\|)"
    r"|\s*[A-Za-z_][\w.]*(?:\[[^\]\n]{0,80}\])? ?[-+*/|&]?= \S"
)


def _code_rung(lines: list[str]) -> Classification | None:
    shaped = sum(1 for line in lines if _CODE_LINE.match(line) is not None)
    if shaped * 2 < len(lines) or shaped == 0:
        return None
    return Classification("code", f"rung 8: unfenced code ({shaped}/{len(lines)} code-shaped lines)")


# Fence tags that name a program's output rather than a language.
_OUTPUT_TAGS = frozenset(["log", "logs", "console", "output", "terminal", "shell-session", "sh-session"])


def classify(text: str, *, fenced: bool, language: str = "") -> Classification:
    """Walk the ladder for one block of a paste; the first rung that fires names the kind.

    ``fenced`` says the block is a fenced region's content and ``language`` its tag (rung 1).
    """
    found = _ladder(text)
    if not fenced:
        return found
    tag = f"```{language}" if language else "```"
    if found.kind == "prose":
        kind: SegmentKind = "log" if language in _OUTPUT_TAGS else "code"
        return Classification(kind, f"rung 1: fenced {tag} region, no shape inside, so {kind}")
    return Classification(found.kind, f"rung 1: fenced {tag} region, content read by the ladder: {found.reason}")


def _ladder(text: str) -> Classification:
    if "\n" not in text:
        path = _path_rung(text)
        if path is not None:
            return path
    lines = sample_lines(text)
    for rung in (
        _trace_rung,
        _timestamped_log_rung,
        _delimited_record_log_rung,
        _delimited_table_rung,
        _weak_log_rung,
        _aligned_table_rung,
        _numbered_records_rung,
        _code_rung,
    ):
        found = rung(lines)
        if found is not None:
            return found
    return Classification("prose", "rung 8: prose (no rung above fired)")
