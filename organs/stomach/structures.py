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
  and runs to its ``END.`` line.

Either stops at a fence or at the user's own sentences (a line that reads as prose), so the
user's words are never joined to the evidence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from organs.stomach.split import Block

__all__ = ["join_reports", "report_opened"]

# Only a block's first lines are read for the heading that opens a report.
_OPENING_LINES = 4
_HEAD_CHARS = 2048
_THREAD_DUMP = re.compile(r"^Full thread dump ", re.MULTILINE)
_CRASH_REPORT = re.compile(r"^#\s+A fatal error has been detected by the Java Runtime Environment", re.MULTILINE)
_THREAD_PART = re.compile(
    r'"[^"\n]*"(?:\s|:|$)|\s+(?:at |- |java\.lang\.Thread\.State)|Threads class SMR info:|JNI global refs'
    r"|Found one Java-level deadlock|Found \d+ deadlocks?\.|Java stack information|={5,}$|Heap\b"
    r"|Locked ownable synchronizers"
)
# A line the user wrote: a capitalised sentence of six words or more that ends as a sentence does.
_SENTENCE = re.compile(r"^[A-Z][a-z'’]*(?: [\w'’,()/-]+){5,}[.?!]$")
_CRASH_END = re.compile(r"^END\.$", re.MULTILINE)


def _head(text: str) -> str:
    return "\n".join(text.lstrip("\n").split("\n")[:_OPENING_LINES])


def _first_line(text: str) -> str:
    return next((line for line in text.split("\n") if line.strip()), "")


def _user_words(text: str) -> bool:
    return any(_SENTENCE.match(line.strip()) for line in text.split("\n")[:_OPENING_LINES])


def report_opened(head: str) -> str | None:
    """``"thread dump"`` or ``"crash report"`` when the text's first lines open one, else None."""
    head = _head(head)
    if _THREAD_DUMP.search(head):
        return "thread dump"
    return "crash report" if _CRASH_REPORT.search(head) else None


def _run_end(text: str, heads: Sequence[str], blocks: Sequence[Block], start: int) -> int:
    """The index after the last block of the report that opens at ``start`` (``start + 1`` if it joins none)."""
    dump = _THREAD_DUMP.search(heads[start]) is not None
    if not dump and _CRASH_REPORT.search(heads[start]) is None:
        return start + 1

    def ends_report(index: int) -> bool:
        return not dump and _CRASH_END.search(text, blocks[index].start, blocks[index].end) is not None

    end = start + 1
    if ends_report(start):
        return end
    while end < len(blocks) and not blocks[end].fenced and not _user_words(heads[end]):
        if dump and _THREAD_PART.match(_first_line(heads[end])) is None:
            break
        end += 1
        if ends_report(end - 1):
            break
    return end


def join_reports(text: str, blocks: Sequence[Block]) -> list[Block]:
    """The blocks, with each run that one thread dump or crash report spans joined into one (module docstring)."""
    # Only each block's head is read (and searched for a report's end): a large paste is not copied again.
    heads = [_head(text[block.start : min(block.end, block.start + _HEAD_CHARS)]) for block in blocks]
    joined: list[Block] = []
    index = 0
    while index < len(blocks):
        end = _run_end(text, heads, blocks, index) if not blocks[index].fenced else index + 1
        first, last = blocks[index], blocks[end - 1]
        joined.append(first if end == index + 1 else replace(first, end=last.end, remainder=last.remainder))
        index = end
    return joined
