"""Line shapes of machine output that is not a classic one-line-per-event log.

Each test looks at one line (already cut to a bounded prefix by the caller) and
is anchored, so a miss costs time linear in that prefix. The classifier counts
them over a block's sample; none decides a kind alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = [
    "LOGFMT_PAIR",
    "announces_body",
    "box_as_pipes",
    "closes_run",
    "commented_out",
    "is_banner",
    "is_box_border",
    "is_box_level",
    "is_boxed",
    "is_ci_marker",
    "is_comment_line",
    "is_compiler_diagnostic",
    "is_json_record",
    "is_pointer",
    "is_prompt",
    "is_psql_rule",
    "is_row_count",
    "is_rule_line",
    "is_source_quote",
    "is_test_report",
    "is_tool_level",
    "is_wordless",
    "labelled_stamp_end",
    "listing_key",
    "source_column_end",
    "unboxed",
]


# A logfmt pair: a key, "=", and a quoted value (escapes and all) or a bare one (``level=warn msg="a b" ms=12``).
LOGFMT_PAIR = re.compile(r"([A-Za-z_][\w.\-]{0,60})=(\"(?:[^\"\\]|\\.){0,2000}\"|[^\s\"]*)")


def _opens_with(pattern: str) -> Callable[[str], bool]:
    """A test of whether a line opens with ``pattern`` (anchored at its first character)."""
    match = re.compile(pattern).match

    def opens_with(line: str) -> bool:
        return match(line) is not None

    return opens_with


# A JSON object per line that carries a log's fields: a level, a message, a time ("time", "start_time",
# "created_at"), or an access log's request and status.
_JSON_LOG_KEY = re.compile(
    r"\"(?:level|lvl|severity|levelname|log\.level|msg|message|log|time|ts|timestamp|@timestamp|date"
    r"|[\w.]{1,30}_(?:time|at)|method|status|status_code|response_code)\"\s?:"
)


def is_json_record(line: str) -> bool:
    stripped = line.lstrip()
    return stripped.startswith('{"') and _JSON_LOG_KEY.search(stripped, 0, 400) is not None


# docker compose's "web-1  | line" and "web_1 | line", kubectl's "[pod/web-7d/app] line".
# pm2's "1|strapi   | " names its process by id and name.
_SOURCE_COLUMN = re.compile(
    r"(?P<name>(?:\d{1,4}\|)?[A-Za-z0-9][\w.-]{0,62}) {0,40}\| |\[pod/[\w.-]{1,120}/[\w.-]{1,120}\] "
)


def source_column_end(line: str) -> tuple[str, int] | None:
    """The source named at a line's start and where the line's own text begins, if it has one."""
    match = _SOURCE_COLUMN.match(line)
    if match is None:
        return None
    return match.group("name") or match.group(0).strip(), match.end()


# "# Time: 2021-01-26T23:45:57Z", "Date: ...": a short label, then the record's stamp.
_LABEL = re.compile(r"#? ?[A-Za-z][\w@ -]{0,15}: ")


def labelled_stamp_end(line: str) -> int:
    """Where a stamp starts after a short label opening the line (0 when there is no label)."""
    match = _LABEL.match(line)
    return match.end() if match is not None else 0


# gcc/clang/javac/tsc "file:12:3: error: …", rustc/cargo "error[E0599]: …" and "  --> src/a.rs:4:5",
# make's "make: *** [x.o] Error 1" and "make[1]: Entering directory", MSBuild "file(12,3): error CS…",
# tsc's and eslint's pretty form "src/a.ts:12:3 - error TS2345: …".
is_compiler_diagnostic = _opens_with(
    r"[^\s:]{1,300}:\d+(?::\d+)?: (?:fatal error|error|warning|note|remark|info)\b"
    # a linter's finding located to a file's line and column, whatever its words: "engine.go:33:21: Error return …"
    r"|[^\s:]{1,300}\.\w{1,10}:\d+:\d+: \S"
    r"|[^\s:]{1,300}:\d+:\d+ - (?:error|warning)\b"
    r"|[^\s(]{1,300}\(\d+(?:,\d+)?\): (?:error|warning) [A-Z]{1,4}\d{1,6}:"
    r"|(?:error|warning)(?:\[[A-Z]{0,3}\d{1,6}\]|\[[a-z][\w/@.-]{1,60}\])?: "
    r"|\s{0,8}--> [^\s:]{1,300}:\d+:\d+"
    r"|g?make(?:\[\d{1,3}\])?: (?:\*\*\*|Entering directory|Leaving directory|Nothing to be done)"
    r"|In file included from |[^\s:]{1,300}: In function "
    r"|\d{1,6} (?:errors?|warnings?) generated\."
    # Terraform, Helm and other CLIs: "Error: Invalid reference", "  on main.tf line 12, in resource …:"
    r"|(?:Error|Warning): [A-Z]|\s{0,8}on [^\s:]{1,300} line \d+"
    # shellcheck and linters of its form: "In deploy.sh line 12:", then the line and a pointer under it with the
    # rule and its level ("       ^--^ SC2086 (info): Double quote …")
    r"|In [^\s:]{1,300} line \d+:\s*$|\s{0,300}\^[-~^]* [A-Z]{1,4}\d{1,6} \((?:error|warning|info|style|note)\): "
)


# Test runners: pytest banners and results, unittest, go test, cargo test, jest/vitest/mocha/playwright.
is_test_report = _opens_with(
    r"={3,} .{0,120}(?:test session starts|FAILURES|ERRORS|short test summary|warnings summary|passed|failed"
    r"|error|skipped|no tests ran).{0,120} ={3,}\s*$"
    r"|_{3,} .{1,200} _{3,}\s*$"
    r"|collected \d+ items?|(?:FAILED|PASSED|ERROR|SKIPPED|XFAIL|XPASS) [\w/.-]{1,200}(?:::|\.py)"
    r"|[\w/.-]{1,200}\.py::\S{1,200} (?:PASSED|FAILED|ERROR|SKIPPED)"
    r"|(?:=== RUN|--- (?:FAIL|PASS|SKIP):|ok  \t|FAIL\t|PASS$|FAIL$)"
    # testify's failure fields under a go test's "--- FAIL:"
    r"|\s{1,12}(?:Error Trace|Test|Messages):\s"
    r"|running \d+ tests?$|test [\w:]{1,200} \.\.\. (?:ok|FAILED|ignored)|test result: "
    r"|\s{0,8}(?:Tests?|Test Suites|Suites):\s{1,4}\d"
    r"|\s{0,8}(?:[✓✔✗✘✕×●]|ok \d|not ok \d)\s{1,4}|\s{0,2}(?:PASS|FAIL) {1,2}\S"
    r"|\s{0,8}\d{1,6} (?:passed|failed|skipped|flaky|pending|passing|failing)\b"
    r"|Ran \d+ tests? in |(?:OK|FAILED) \((?:failures|errors|skipped)="
    # pytest's failure sections: the progress line, the failing source line, the explanation, the location
    r"|[\w/.-]{1,200}\.py [.FEsxX]{1,400}\s{0,80}\[\s{0,2}\d{1,3}%\]|>\s{3,}\S|E(?: {1,12}\S|\s*$)"
    r"|[\w/.-]{1,200}\.py:\d+: \w{1,100}(?:Error|Exception|Failed|Warning)\b"
)


# Box-drawn diagnostics (Terraform and other HashiCorp tools): "╷", "│ Error: …", "│   on main.tf line 3", "╵".
_BOX_BORDERS = "│┃║╷╵"


def is_box_border(line: str) -> bool:
    """A line that is only a box's border (its top, its bottom, or an empty row)."""
    stripped = line.strip()
    return bool(stripped) and stripped[0] in _BOX_BORDERS and not stripped[1:].strip()


# A table drawn with box characters (``┌──┬──┐``, ``│ a │ b │``) read as a pipe-delimited one: its junctions and
# walls as pipes, its rules as dashes.
_BOX_WALLS = "│┃║┆┊┌┬┐├┼┤└┴┘╭╮╯╰╔╦╗╠╬╣╚╩╝╒╤╕╞╪╡╘╧╛╓╥╖╟╫╢╙╨╜"
_BOX_RULES = "─━═┄┈"
_BOX_TABLE = str.maketrans(_BOX_WALLS + _BOX_RULES, "|" * len(_BOX_WALLS) + "-" * len(_BOX_RULES))


def box_as_pipes(line: str) -> str:
    """The line with a box-drawn table's walls and junctions as pipes and its rules as dashes."""
    return line.translate(_BOX_TABLE)


def is_boxed(line: str) -> bool:
    """A line drawn inside boxes: it opens and closes with a box's wall or corner (a query plan's boxes side by
    side, a diagram), whatever its cells."""
    stripped = line.strip()
    return len(stripped) > 1 and stripped[0] in _BOX_WALLS and stripped[-1] in _BOX_WALLS


def unboxed(line: str) -> tuple[str, bool]:
    """A line without the border a box draws at its left, and whether it had one."""
    stripped = line.lstrip()
    if stripped[:1] in _BOX_BORDERS:
        return stripped[1:].lstrip(), True
    return line, False


# A box's "Error: …" or "Warning: …" row, read without its border: a diagnostic whatever the case of its first word.
is_box_level = _opens_with(r"(?:Error|Warning): \S")


# "npm info it worked", "npm ERR! code E404", "yarn warn …", "pnpm WARN …": a tool, then its level; or the line's
# number in its debug log ("12 silly getCurrentBranch" in npm-debug.log, lerna-debug.log).
is_tool_level = _opens_with(
    r"(?:[a-z][\w@./-]{0,30}|\d{1,7}) (?:info|verb|verbose|http|sill|silly|timing|notice|warn|WARN|ERR!|error|debug)"
    r"(?= |$)"
)


# "$ npm test", "PS C:\src> dotnet build", "C:\src>npm i", "user@host:~/src$ make", "(venv) user@host:~$ make",
# "[root@centos7 ~]# kind create cluster"
is_prompt = _opens_with(
    r"(?:\$|❯|➜|PS [A-Za-z]:\\[^>\n]{0,200}>|[A-Za-z]:\\[^>\n]{0,200}>"
    r"|(?:\([\w.-]{1,40}\) )?[\w.-]{1,64}@[\w.-]{1,64}:[^$#\n]{0,200}[$#]"
    r"|\[[\w.-]{1,64}@[\w.-]{1,64}(?: [^\]\n]{0,200})?\][$#])"
    r" ?\S"
)


# Section markers of CI runners: Buildkite's "~~~ " and "+++ " groups (its "--- " would be a diff's first
# line too), GitHub Actions' "##[group]" and "::group::", GitLab's "section_start:", a Docker build's "Step 2/7 :".
is_ci_marker = _opens_with(
    r"(?:~~~|\+\+\+) \S|##\[\w{1,20}\]|::\w{1,20}(?: [^:\n]{0,200})?::|section_start:\d|Step \d+/\d+ : "
)


# psql's "----+-----" and MySQL's "+----+-----+" under a header row.
is_psql_rule = _opens_with(r"\+?-{3,}(?:\+-{3,}){0,100}\+?\s*$")
# A SQL client's count of the rows it printed: "(4 rows)".
is_row_count = _opens_with(r"\s*\(\d{1,12} rows?\)\s*$")
# A rule drawn under or over a table's header: dashes or equals signs, and the pipes, pluses and colons between its
# columns ("----+----", "|---|:--:|", "=======").
is_rule_line = _opens_with(r"[\s|+:]*[-=]{3,}[-=\s|+:]*$")
# A title framed by rules: a test report's ("==== test session starts ====", "---- FAILURES ----"), a script's
# for each thing it looped over ("=== cciss,3 ===").
is_banner = _opens_with(r"[=_-]{3,} ?\S.{0,120}? ?[=_-]{3,}\s*$")


# A line that announces the lines under it: a heading of words ending in a colon or a rule ("1. Failure: parser
# reads dates (@test-dates.R#4) ------", "Caused by:"), its body below.
announces_body = _opens_with(r".*\w\S*(?::| [-=]{3,})\s*$")


# kubectl describe, systemctl status, docker info: "Key:        value" with the values aligned.
listing_key = _opens_with(r"\s{0,12}[A-Za-z][\w .()/-]{0,40}:(?: {2,}\S|\s*$)")


# How tools close a run: test runners' tallies, linters' and type checkers' counts, compilers' verdicts,
# package managers' last error lines, a memory checker's summary, build tools' outcomes.
_RUN_CLOSE = re.compile(
    r"=+ .*\b(?:passed|failed|errors?|skipped|deselected)\b.*=+|Found \d+ errors?\b.*|Success: no issues found.*"
    r"|\[\*\] \d+ fixable.*|error: could not compile .*|\d+ (?:errors?|warnings?)|make(?:\[\d+\])?: \*\*\* .*"
    r"|npm (?:ERR!|error) .*|ERROR: .*|==\d+== ERROR SUMMARY: .*|✖ \d+ problems? .*|Tests?: .*\b(?:passed|failed)\b.*"
    r"|BUILD (?:SUCCESSFUL|FAILED).*|\[(?:ERROR|INFO)\] BUILD (?:SUCCESS|FAILURE).*|Node\.js v[\d.]+"
    r"|\d+ files? inspected, (?:no|\d+) offenses? detected.*"
    # mocha's tallies: "104 passing (5m)", "7 pending", "22 failing"
    r"|\d+ (?:passing|pending|failing)(?: \(\w+\))?"
    # A run's last word on how long it took: "Build completed unsuccessfully in 0:26:43", "Total wall time: 0:00:01".
    r"|Build (?:completed|finished|failed|succeeded)(?: \w+)? in \d[\d:.]*\s?\w*"
    r"|Total (?:wall |elapsed |run )?time: +\d[\d:.]*(?: \w+)?"
)


# The source a diagnostic quotes under itself: rustc's, clippy's and ruff's gutter (" 42 | let x", "   |     ^^^"),
# a code frame's, its quoted lines marked (" > 594 |   var dirs"), esbuild's and miette's box gutter (" 2 │ …"), or a
# pointer alone ("    ^~~~~", "~~~~~~~").
_SOURCE_QUOTE = re.compile(r"\s*(?:>\s*)?\d*\s*[|│┆](?: .*)?|\s*[\^~][\^~\-]*(?:\s.*)?")


# A checker's pointer under the line it quotes, with or without its finding ("      ^", "  ^~~~~", "^-- SC2086 …").
is_pointer = _opens_with(r"[ \t]*\^[\^~\-]*(?:[ \t]|$)")


def is_source_quote(line: str) -> bool:
    """Whether a line is the source a tool's diagnostic quotes, or the pointer under it: the diagnostic's own
    line says what is wrong, and where; the quote repeats the code."""
    return _SOURCE_QUOTE.fullmatch(line) is not None


# A letter or a digit: a line without one (a blank, a gutter, a pointer, a brace) says nothing of its own.
_WORD_CHARACTER = re.compile(r"[^\W_]")


def is_wordless(line: str) -> bool:
    """Whether a line holds no letter and no digit: shown alone, away from its neighbours, it tells nothing."""
    return _WORD_CHARACTER.search(line) is None


def closes_run(line: str) -> bool:
    """Whether the line closes a tool run: a tally, a count of errors, a verdict."""
    return _RUN_CLOSE.fullmatch(line.strip()) is not None


# A comment line of a script or a config: "#" or an INI file's ";" (and, where asked, "//"), then a space, the
# marker again or the line's end. Not "#include", "#!": those are code.
_COMMENT_LINE = re.compile(r"\s*(?:#|;)(?:[#;\s]|$)")
_SLASHED_COMMENT = re.compile(r"\s*//(?:/|\s|$)")
# The marker before a directive commented out (";listen.backlog = 511", "#PermitRootLogin yes"); a preprocessor
# line is none.
_COMMENTED_OUT = re.compile(
    r"\s*[#;](?!(?:include|define|if|ifdef|ifndef|endif|else|elif|pragma|undef)\b)"
    r"(?=[A-Za-z_][\w.-]*\s*(?:[=:]|\s\S))"
)


def is_comment_line(line: str, *, slashes: bool = False) -> bool:
    """Whether ``line`` is a comment (``#``, ``;``, with ``slashes`` also ``//``), not a directive commented out."""
    return _COMMENT_LINE.match(line) is not None or (slashes and _SLASHED_COMMENT.match(line) is not None)


def commented_out(line: str) -> str | None:
    """The directive ``line`` holds behind a comment marker, without the marker; None when it holds none."""
    found = _COMMENTED_OUT.match(line)
    return None if found is None else line[found.end() :]
