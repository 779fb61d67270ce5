"""Reports that blank lines do not end: a JVM thread dump and a JVM crash report, each kept one block.

A thread dump separates every thread with a blank line, and a crash report (``hs_err_pid``) every
section; cut at blank lines, either became dozens of segments (tables, notes, code), each compacted
alone, the deadlock report at the end or the crashed thread's frames lost among them. ``join_reports``
joins a run of blocks that one such report opens into one block, while the blocks that follow read as
its parts:

* a thread dump opens with ``Full thread dump``; its parts start with a thread's quoted name, a
  frame or state line, or one of the dump's own headings (``JNI global refs``, ``Found one
  Java-level deadlock:``, ``Java stack information for the threads listed above:``, ``Heap``);
* a crash report opens with ``A fatal error has been detected by the Java Runtime Environment``
  and runs to its ``END.`` line; an Android tombstone opens with its row of ``*** *** ***``
  (in a logcat or not) and runs on through its sections (backtrace, stack, memory map);

* a debugger's backtrace of every thread (gdb's ``thread apply all bt``) opens with a thread's
  heading (``Thread 2 (Thread 0x7f… (LWP 18636) …):``) or the debugger's thread notices; its
  parts start with another heading, a frame (``#3 …``) or a notice.

A tool run (a linter, compiler, test runner, package manager, build tool) also separates its
records with blank lines; ``join_tool_runs`` joins the blocks before a block that ends as such a
run ends (``Found 241 errors.``, ``=== 3 failed, 80 passed in 0.62s ===``, ``error: could not
compile …``, ``5 errors``, ``ERROR SUMMARY: …``) back to the previous run's end.

Every join stops at a fence or at the user's own sentences (a line that reads as prose), so the
user's words are never joined to the evidence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from organs.stomach.core.blocks.intent import own_words
from organs.stomach.core.blocks.split import Block
from organs.stomach.core.tuning import ClassifyTuning

__all__ = ["closes_run", "join_reports", "join_tool_runs", "report_opened", "written_by_user"]

_THREAD_DUMP = re.compile(r"^Full thread dump ", re.MULTILINE)
_CRASH_REPORT = re.compile(
    r"^(?:#\s+A fatal error has been detected by the Java Runtime Environment|(?:.*DEBUG\s*: )?\*\*\* \*\*\* \*\*\* )",
    re.MULTILINE,
)
_THREAD_PART = re.compile(
    r'"[^"\n]*"(?:\s|:|$)|\s+(?:at |- |java\.lang\.Thread\.State)|Threads class SMR info:|JNI global refs'
    r"|Found one Java-level deadlock|Found \d+ deadlocks?\.|Java stack information|={5,}$|Heap\b"
    r"|Locked ownable synchronizers"
)
_BACKTRACE = re.compile(r"^(?:Thread \d+ \(Thread 0x[0-9a-f]+ \(LWP \d+\)|\[Thread debugging using )", re.MULTILINE)
_BACKTRACE_PART = re.compile(r"Thread \d+ \(|#\d+\s|\[New |\[Thread |\[Inferior |\s+\S+ = ")
# How tools close a run: test runners' tallies, linters' and type checkers' counts, compilers' verdicts,
# package managers' last error lines, a memory checker's summary, build tools' outcomes.
_RUN_CLOSE = re.compile(
    r"=+ .*\b(?:passed|failed|errors?|skipped|deselected)\b.*=+|Found \d+ errors?\b.*|Success: no issues found.*"
    r"|\[\*\] \d+ fixable.*|error: could not compile .*|\d+ (?:errors?|warnings?)|make(?:\[\d+\])?: \*\*\* .*"
    r"|npm (?:ERR!|error) .*|ERROR: .*|==\d+== ERROR SUMMARY: .*|✖ \d+ problems? .*|Tests?: .*\b(?:passed|failed)\b.*"
    r"|BUILD (?:SUCCESSFUL|FAILED).*|\[(?:ERROR|INFO)\] BUILD (?:SUCCESS|FAILURE).*|Node\.js v[\d.]+"
)
# A line the user wrote: a capitalised sentence of six words or more, none of them a code or number (a tool's
# message opens with its code: "B018 Found useless expression."), that ends as a sentence does.
_SENTENCE = re.compile(r"^[A-Z][A-Za-z'’]*(?: [A-Za-z'’,.?!;:()/-]+){5,}[.?!]$")
# A short block in someone's own words (``intent.own_words``, at most ``ClassifyTuning.introduction_lines``)
# introduces the run, not part of it: each of its lines written as a sentence or a clause ends, or six words long.
_WRITTEN = re.compile(r"[.?!:,;)]$|(?:\S+\s+){5}\S")
# The user's words introducing what follows: a capitalised sentence of four words or more ending in a colon, with
# none of the digits, paths, brackets or assignments that tools' own lines carry.
_INTRODUCTION = re.compile(r"^[A-Z][\w'’]*(?: [A-Za-z'’,-]+){3,}[.?!:]$")
_CRASH_END = re.compile(r"^END\.$", re.MULTILINE)


def _head(text: str, tuning: ClassifyTuning) -> str:
    """A block's opening: its first ``opening_lines`` lines."""
    return "\n".join(text.lstrip("\n").split("\n")[: tuning.opening_lines])


def _heads(text: str, blocks: Sequence[Block], tuning: ClassifyTuning) -> list[str]:
    """Each block's opening, read from its head only: a large paste is not copied again."""
    return [_head(_head_text(text, block, tuning), tuning) for block in blocks]


def _head_text(text: str, block: Block, tuning: ClassifyTuning) -> str:
    return text[block.start : min(block.end, block.start + tuning.opening_chars)]


def _first_line(text: str) -> str:
    return next((line for line in text.split("\n") if line.strip()), "")


def _user_words(text: str, tuning: ClassifyTuning) -> bool:
    return any(_SENTENCE.match(line.strip()) for line in text.split("\n")[: tuning.opening_lines])


def written_by_user(text: str, tuning: ClassifyTuning | None = None) -> bool:
    """Whether a short block reads as someone writing to the reader: a few lines in their own words
    (``organs.stomach.core.blocks.intent.own_words``), each ending as a sentence or clause does or six words long."""
    tuning = tuning or ClassifyTuning()
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if not lines or len(lines) > tuning.introduction_lines:
        return False
    return own_words(text, tuning) and all(_WRITTEN.search(line) for line in lines)


def _before_run(text: str, line_count: int, tuning: ClassifyTuning) -> bool:
    """Whether a block before a tool run is not part of it: the user's sentence (one that introduces the run with
    a colon too), a short block in someone's own words, or a lone word such as a path."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if len(lines) == 1 and " " not in lines[0]:
        return True
    if line_count <= tuning.introduction_lines and written_by_user(text, tuning):
        return True
    return _user_words(text, tuning) or any(_INTRODUCTION.match(line) for line in lines[: tuning.opening_lines])


def report_opened(head: str, tuning: ClassifyTuning) -> str | None:
    """``"thread dump"``, ``"crash report"`` or ``"backtrace"`` when the text's first lines open one, else None."""
    head = _head(head, tuning)
    if _THREAD_DUMP.search(head):
        return "thread dump"
    if _BACKTRACE.search(head):
        return "backtrace"
    return "crash report" if _CRASH_REPORT.search(head) else None


def _run_end(text: str, heads: Sequence[str], blocks: Sequence[Block], start: int, tuning: ClassifyTuning) -> int:
    """The index after the last block of the report that opens at ``start`` (``start + 1`` if it joins none)."""
    opened = report_opened(heads[start], tuning)
    if opened is None:
        return start + 1
    dump = opened != "crash report"
    parts = _THREAD_PART if opened == "thread dump" else _BACKTRACE_PART

    def ends_report(index: int) -> bool:
        return not dump and _CRASH_END.search(text, blocks[index].start, blocks[index].end) is not None

    end = start + 1
    if ends_report(start):
        return end
    while end < len(blocks) and not blocks[end].fenced and not _user_words(heads[end], tuning):
        if dump and parts.match(_first_line(heads[end])) is None:
            break
        end += 1
        if ends_report(end - 1):
            break
    return end


def join_reports(text: str, blocks: Sequence[Block], tuning: ClassifyTuning) -> list[Block]:
    """The blocks, with each run that one thread dump or crash report spans joined into one (module docstring)."""
    heads = _heads(text, blocks, tuning)
    joined: list[Block] = []
    index = 0
    while index < len(blocks):
        end = _run_end(text, heads, blocks, index, tuning) if not blocks[index].fenced else index + 1
        first, last = blocks[index], blocks[end - 1]
        joined.append(first if end == index + 1 else replace(first, end=last.end, remainder=last.remainder))
        index = end
    return joined


def closes_run(line: str) -> bool:
    """Whether the line closes a tool run (a tally, a count of errors, a verdict; module docstring)."""
    return _RUN_CLOSE.fullmatch(line.strip()) is not None


def _closes_run(text: str, block: Block, tuning: ClassifyTuning) -> bool:
    tail = text[max(block.start, block.end - tuning.opening_chars) : block.end].rstrip()
    return closes_run(tail[tail.rfind("\n") + 1 :])


def join_tool_runs(text: str, blocks: Sequence[Block], tuning: ClassifyTuning) -> list[Block]:
    """The blocks, with each tool run (module docstring) joined into one: from a block whose last line closes a
    run, back over the blocks before it up to a fence, the user's words, a report or the previous run's end."""
    heads = _heads(text, blocks, tuning)
    closing = [_closes_run(text, block, tuning) and not block.fenced for block in blocks]
    joined: list[Block] = []
    for index, block in enumerate(blocks):
        joined.append(block)
        if not closing[index] or _user_words(heads[index], tuning):
            continue
        start = len(joined) - 1
        while start > 0:
            before = joined[start - 1]
            head = _head(_head_text(text, before, tuning), tuning)
            line_count = text.count("\n", before.start, before.end) + 1
            if (
                before.fenced
                or _before_run(head, line_count, tuning)
                or report_opened(head, tuning)
                or _closes_run(text, before, tuning)
            ):
                break
            start -= 1
        if start < len(joined) - 1:
            joined[start:] = [replace(joined[start], end=block.end, remainder=block.remainder)]
    return joined
