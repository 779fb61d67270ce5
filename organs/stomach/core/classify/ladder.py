"""The classification ladder: from the least ambiguous shape to the most.

The order is load-bearing, because several shapes imitate each other:

1. a fenced ``` region's content (the fence lines are markup, outside the
   block) walks the ladder below: a fence is a hint, not a verdict. A trace, a
   log or a table keeps its kind; content that reads as prose is a log when
   the tag names a program's output (``log``, ``console``) or when an untagged
   box holds many lines of it (a debugger's session, a profiler's samples:
   output no rung knows), else code (a command or a snippet in the box the
   user drew). A programming-language tag (``python``, ``java``) lets only
   a trace override code;
2. a lone path-shaped token → path_ref;
   3r. a JVM thread dump or crash report, or a debugger's backtrace of every
   thread, opening the block (``structures.report_opened``) → stack_trace;
3. an exception header plus stack frames, dominating the block, or a block
   opening with a header only a runtime prints (``Traceback …``, ``panic:``,
   ``Unhandled exception:``, ``PHP Fatal error:``) → stack_trace;
   3t. a block whose last line closes a tool run (a tally, a count of errors,
   a verdict: ``line_shapes.closes_run``) → log;
   3b. a terminal session or CI job: a block opening with a prompt
   (``$ make``) or a CI runner's section marker (``~~~ Running hook``).
   Several commands, or a CI job, are the log of a run → log; a single
   command's output decides the kind (a table under ``$ kubectl get pods``),
   and output that reads as prose is a log;
4. a timestamped log (half the lines open with a clock, some line carries a
   level token) → log, ahead of tables so ``ts | LEVEL | msg`` is not a table;
   4b. clock-led delimited records whose last field is free text → log even
   without a level token (a markdown table never opens a row with a clock, and
   a metrics CSV ends in values, not phrases, so both stay tables);
   4c. JSON lines carrying log fields (level, msg, time) → log;
   4d. a source column (``web-1  | …`` from docker compose, ``[pod/x/c] …``
   from kubectl) whose sources repeat and whose rest reads as messages → log,
   ahead of the pipe table it imitates;
   4e. compiler and build diagnostics (``file:3:5: error:``, ``error[E0599]:``,
   ``make: ***``) → log;
   4f. a test run's report (banners, per-test results, counts) → log;
5. an explicitly delimited table (``|`` or a box's walls, tab, comma with value-like cells), or boxes drawn
   side by side (a query plan) → table;
   5b. a SQL client's results (a header over a dashed rule, ``(N rows)``) → table;
   5c. samples on a clock (sar, iostat): rows of a clock and numbers under header rows of a clock and column
   names → table, ahead of the records and the weaker log their clocks imitate;
   5d. multi-line records: a first line that opens with a clock (or a short
   label and a clock, ``# Time: …``) and carries a level, or opens one of
   several such records, with continuation lines between them → log;
6. a weaker log (level tokens, ``npm info``-style tool levels, .NET's
   ``info: Category[0]``, bracketed prefixes, dmesg uptime stamps,
   ``daemon[pid]:`` tags or a clock near the start, on half the lines) → log,
   unless the first line is a header row of upper-case column names (``ps``);
7. a whitespace-aligned table (kubectl, ps, docker) → table, last of the
   tabular signals because the padding after ``INFO`` looks like a column break;
   7a. an aligned ``Key:   value`` listing (kubectl describe) → table;
   7b. lines that mostly open with a long number (a sequence id or epoch, or a pid joined to a compact clock) → log,
   tried after the aligned tables, whose rows may open with a PID;
   7c. lines that mostly hold three key=value pairs or more (logfmt, Linux
   audit records) → log: a config file holds one pair a line;
   7d. a third of the lines or more are frames, though no trace opens the block (a
   server's banners between the backtraces of its failed boots) → log;
   7e. rows that mostly open with three numbers or more, then a name (a profiler's report: its right-aligned
   counts close the gutters 7 reads columns by) → table;
8. code-shaped lines (including INI sections, ``KEY=value``, lower-case YAML
   keys, JSON keys, SQL and Dockerfile statements, shell control words and
   unified diffs) → code;
   8j. JSON documents written one to a line (an API's response, a metafile) → code;
   8n. lines that open blocks (``{``, ``[``, ``do``, an XML element) and later
   lines that close them, balanced (Tcl, Elixir, an Erlang term file, a daemon's
   braces, an XML config) → code;
   8m. many lines, few of them plain words, none asking (a tool's report, a
   status dump no rung knows) → log; anything left → prose.

Accepted misreads (visible in every SegmentReport's reason):

* A CSV of sentences reads as prose: comma cells must read like values (at most
  ``ClassifyTuning.cell_words`` words each when there are few columns, two on average),
  because English is full of commas. The block becomes a verbatim note: the
  column summary is lost, the evidence is not.
* A scheme-less token ending in a source extension (``example.com/a.rs``,
  ``something.rs``) reads as a path anchor: in a workspace paste that is what it
  overwhelmingly is. A hostname-first token without such an extension is prose.
* Syslog stamps and bare clocks identify a log but never bound it (see
  ``organs.stomach.core.shapes.timestamps``).
* A prose line that opens with a compiler-diagnostic shape (unless it asks,
  ending in ``?``) or a clock and a level reads as a log: the shape is what
  tools print, rarely what people write.
* A block whose first sampled lines (``ClassifyTuning.trace_probe_lines``) hold no trace line is never a trace:
  a log with a trace further down stays a log.

Blocks arrive in the paste's normal form (``organs.stomach.core.blocks.normal``: no
escapes, carriage-return redraws rendered). Only a bounded sample of a block
(its first and last lines, each cut to ``LINE_PREFIX`` characters) is
examined, so classifying costs the same for a thousand lines as for a million.
The rungs themselves are in ``organs.stomach.core.classify``'s ``rungs`` (traces and logs, and
what every rung shares), ``table_rungs`` and ``text_rungs`` (a tool's messages, code and data); the line
shapes they count, in ``organs.stomach.core.shapes.signals``, ``trace_shapes`` and ``line_shapes``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from envelopes.types import SegmentKind
from organs.stomach.core.blocks.structures import report_opened
from organs.stomach.core.classify.rungs import (
    Classification,
    delimited_record_log_rung,
    json_lines_rung,
    key_value_records_rung,
    numbered_records_rung,
    record_log_rung,
    timestamped_log_rung,
    trace_rung,
    traces_log_rung,
    weak_log_rung,
)
from organs.stomach.core.classify.table_rungs import (
    aligned_table_rung,
    clocked_samples_rung,
    delimited_table_rung,
    listing_rung,
    numeric_rows_rung,
    result_table_rung,
)
from organs.stomach.core.classify.text_rungs import (
    code_rung,
    diagnostics_rung,
    json_document_rung,
    machine_text_rung,
    nested_source_rung,
    source_column_rung,
    test_report_rung,
)
from organs.stomach.core.distill.text import plural
from organs.stomach.core.shapes.line_shapes import closes_run, is_ci_marker, is_prompt
from organs.stomach.core.shapes.signals import LINE_PREFIX
from organs.stomach.core.tuning import ClassifyTuning
from organs.text_views import first_lines

__all__ = [
    "FENCE_LABEL",
    "LADDER",
    "PATH_LABEL",
    "Classification",
    "classify",
    "looks_like_path",
    "sample_lines",
]

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


def sample_lines(text: str, tuning: ClassifyTuning) -> list[str]:
    """The first and last lines of a block, each cut to the prefix where shape lives.

    The block is the paste's normal form (``organs.stomach.core.blocks.normal``): no escapes, no carriage returns.
    """
    head, tail_lines = tuning.sample_head_lines, tuning.sample_tail_lines
    if len(text) > tuning.huge_block_chars:
        # A huge block is read only as far as the head needs; when more lines follow, its last lines are the tail.
        lines = first_lines(text, head + 1)
        read = sum(len(line) + 1 for line in lines[:-1])
        sampled = len(lines) > head and text.find("\n", read) >= 0
    else:
        lines = text.split("\n")
        sampled = len(lines) > head + tail_lines
    if sampled:
        tail = text[-LINE_PREFIX * tail_lines :].split("\n")[1:][-tail_lines:]
        lines = lines[:head] + tail
    return _dedented([line[:LINE_PREFIX].rstrip() for line in lines])


def _dedented(lines: list[str]) -> list[str]:
    """The lines without the indentation every one that is not blank opens with (a log quoted in a post, each line
    tabbed in): shared, it is the quote's, not a column or a nesting level of the block."""
    indents = [line[: len(line) - len(line.lstrip(" \t"))] for line in lines if line.strip()]
    shared = indents[0] if indents else ""
    for indent in indents[1:]:
        while not indent.startswith(shared):
            shared = shared[:-1]
    return [line[len(shared) :] for line in lines] if shared else lines


def _extension(segment: str) -> str:
    dot = segment.rfind(".")
    return segment[dot + 1 :].lower() if dot > 0 else ""


def looks_like_path(token: str, tuning: ClassifyTuning | None = None) -> bool:
    """Whether a single token names a file or directory rather than a URL or a word."""
    if not token or len(token) > (tuning or ClassifyTuning()).path_chars:
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


def _path_rung(text: str, tuning: ClassifyTuning) -> Classification | None:
    token = text.strip()
    if any(character.isspace() for character in token):
        return None
    if looks_like_path(token, tuning):
        return Classification("path_ref", f"rung {PATH_LABEL}: lone path-shaped token {token[: tuning.quote_chars]!r}")
    return None


def _console_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    # A pasted terminal session or CI job: prompts (or a CI runner's section marker) and what ran.
    # Several commands, or a CI job, make a log of the run; one command's output decides the kind
    # (``$ kubectl get pods`` is a table), and output that reads as prose is still a run's record.
    if len(lines) < 2 or not (is_prompt(lines[0]) or is_ci_marker(lines[0])):
        return None
    prompts = sum(1 for line in lines if is_prompt(line))
    if prompts >= 2 or is_ci_marker(lines[0]):
        return Classification(
            "log", f"a terminal session or CI job ({plural(prompts, 'command')} over {len(lines)} lines)"
        )
    output = lines[1:]
    found = _walk(output, tuning, console=False)
    kind: SegmentKind = "log" if found.kind in ("prose", "path_ref") else found.kind
    return Classification(kind, f"a terminal session (a command, then output: {found.reason})")


def report_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    """A JVM thread dump, a crash report (JVM, Apple, a sanitizer's) or a debugger's backtrace
    (``organs.stomach.core.blocks.structures``) is one trace-like report."""
    opened = report_opened("\n".join(lines[: tuning.opening_lines]), tuning)
    return None if opened is None else Classification("stack_trace", f"a {opened}")


def tool_run_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    """A block whose last line closes a tool run (``line_shapes.closes_run``) is that run's log."""
    last = next((line for line in reversed(lines) if line.strip()), "")
    closing = last.strip()[: tuning.closing_quote_chars]
    return Classification("log", f"a tool run, closing with {closing!r}") if closes_run(last) else None


# Every rung reads the sampled lines with the classifier's tuning, and fires with a kind or passes.
Rung = Callable[[list[str], ClassifyTuning], Classification | None]

# The labels of the two rungs tried before the walk: a fenced region's content, and a lone path.
FENCE_LABEL = "1"
PATH_LABEL = "2"
# Each rung with its label, in the order they are tried: the label a reason opens with is read from here, so
# reordering the ladder is one edit (and the module docstring lists the rungs in this order, a test checks).
LADDER: tuple[tuple[str, Rung], ...] = (
    ("3r", report_rung),
    ("3", trace_rung),
    ("3t", tool_run_rung),
    ("3b", _console_rung),
    ("4", timestamped_log_rung),
    ("4b", delimited_record_log_rung),
    ("4c", json_lines_rung),
    ("4d", source_column_rung),
    ("4e", diagnostics_rung),
    ("4f", test_report_rung),
    ("5", delimited_table_rung),
    ("5b", result_table_rung),
    ("5c", clocked_samples_rung),
    ("5d", record_log_rung),
    ("6", weak_log_rung),
    ("7", aligned_table_rung),
    ("7a", listing_rung),
    ("7b", numbered_records_rung),
    ("7c", key_value_records_rung),
    ("7d", traces_log_rung),
    ("7e", numeric_rows_rung),
    ("8", code_rung),
    ("8j", json_document_rung),
    ("8n", nested_source_rung),
    ("8m", machine_text_rung),
)
# What no rung fired on is prose, under the code rung's label (code and prose share the ladder's last step).
_PROSE_LABEL = next(label for label, rung in LADDER if rung is code_rung)


def _walk(lines: list[str], tuning: ClassifyTuning, *, console: bool = True) -> Classification:
    for label, rung in LADDER:
        if rung is _console_rung and not console:
            continue
        found = rung(lines, tuning)
        if found is not None:
            return Classification(found.kind, f"rung {label}: {found.reason}")
    return Classification("prose", f"rung {_PROSE_LABEL}: prose (no rung above fired)")


# Fence tags that name a program's output rather than a language.
_OUTPUT_TAGS = frozenset(["log", "logs", "console", "output", "terminal", "shell-session", "sh-session", "text"])
# Tags that name a programming language: the box holds source, unless it holds a trace, whose shape no
# source file has. Shell, data and untagged boxes hold whatever the ladder reads in them.
_SOURCE_TAGS = frozenset(
    [
        "python",
        "py",
        "java",
        "kotlin",
        "kt",
        "scala",
        "groovy",
        "javascript",
        "js",
        "jsx",
        "typescript",
        "ts",
        "tsx",
        "go",
        "golang",
        "rust",
        "rs",
        "c",
        "h",
        "cpp",
        "c++",
        "cc",
        "csharp",
        "cs",
        "fsharp",
        "ruby",
        "rb",
        "php",
        "swift",
        "objc",
        "dart",
        "lua",
        "perl",
        "r",
        "julia",
        "elixir",
        "erlang",
        "haskell",
        "clojure",
        "zig",
        "sql",
        "html",
        "css",
        "scss",
        "vue",
        "svelte",
    ]
)


def _fenced(text: str, language: str, tuning: ClassifyTuning) -> Classification:
    """A fenced region's content: it walks the ladder; the fence and its tag are evidence, not a verdict."""
    tag = f"```{language}" if language else "```"
    found = _walk(sample_lines(text, tuning), tuning) if text.strip() else Classification("prose", "empty")
    if found.kind in ("prose", "path_ref"):
        output = language in _OUTPUT_TAGS or (not language and text.count("\n") + 1 >= tuning.boxed_output_lines)
        kind: SegmentKind = "log" if output else "code"
        return Classification(kind, f"rung {FENCE_LABEL}: fenced {tag} region, no shape inside, so {kind}")
    if language in _SOURCE_TAGS and found.kind != "stack_trace":
        return Classification(
            "code", f"rung {FENCE_LABEL}: fenced {tag} region holds source (the ladder read: {found.reason})"
        )
    return Classification(
        found.kind, f"rung {FENCE_LABEL}: fenced {tag} region, content read by the ladder: {found.reason}"
    )


def classify(text: str, *, fenced: bool, language: str = "", tuning: ClassifyTuning | None = None) -> Classification:
    """Walk the ladder for one block of a paste; the first rung that fires names the kind.

    ``fenced`` says the block is a fenced region's content and ``language`` its tag (rung 1); ``tuning`` holds
    the ladder's numbers.
    """
    tuning = tuning or ClassifyTuning()
    if fenced:
        return _fenced(text, language, tuning)
    if "\n" not in text:
        path = _path_rung(text, tuning)
        if path is not None:
            return path
    return _walk(sample_lines(text, tuning), tuning)
