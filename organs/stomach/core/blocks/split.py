"""Cut a paste into blocks: fenced ``` regions whole, everything else at blank lines.

A block's span starts at its first non-blank line (indentation included) and
ends after the last non-whitespace character. A fenced block is the fence's
content: the fence lines are markup, left outside the span with the whitespace,
and the opening fence's language tag (```` ```python ````) rides on the block as
evidence for the classifier. Lines end at ``\\n``.

Blocks are cut from the paste's normal form (``organs.stomach.core.blocks.normal``), where a
line that only held escape sequences is blank; the caller maps spans back to the
received text.

A blank line does not always end what it sits in: a stack trace whose causes or
goroutines are set apart by blank lines, an exception head followed by its frames,
and a test report whose sections are separated by blank lines are each one block
(see ``_continues``).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from organs.stomach.core.blocks.intent import ask_strength, own_words, speaks_to_reader
from organs.stomach.core.blocks.voice import speaks_in_person
from organs.stomach.core.shapes.line_shapes import is_banner, is_pointer
from organs.stomach.core.shapes.trace_shapes import is_trace_context, is_trace_frame, trace_header
from organs.stomach.core.tuning import AskTuning, ClassifyTuning

__all__ = ["Block", "split_blocks"]


@dataclass(frozen=True, slots=True)
class Block:
    start: int
    end: int
    fenced: bool
    # A block that holds the rest of a paste cut at ``max_blocks``: evidence, never the goal.
    remainder: bool = False
    # The first word of an opening fence's info string, lower-cased ("python", "log", "console").
    language: str = ""
    # The block was cut from a paste already in its normal form: its received text is what it serves.
    normal: bool = False
    # How many blank-line blocks a run of them that none of the user's words broke joined into this one
    # (``structures.join_shattered_runs``); 1 for a block as cut.
    parts: int = 1


def _is_fence(text: str, start: int, end: int) -> bool:
    # A fence may be indented by up to three spaces, as in CommonMark.
    position = start
    while position < end and position - start < 3 and text[position] == " ":
        position += 1
    return text.startswith("```", position, end)


# A blank line (empty, or only whitespace: ``\s`` is ``str.isspace``'s whitespace): the paste's first line, or
# one after a line end. The blocks are the runs between them; a regex matching each run whole would keep a
# backtracking entry for every line of it (2.4 times a large log's size).
_BLANK_FIRST_LINE = re.compile(r"[^\S\n]*(?=\n|\Z)")
_BLANK_LINE = re.compile(r"\n[^\S\n]*(?=\n|\Z)")


def split_blocks(
    text: str, max_blocks: int | None = None, ask: AskTuning | None = None, reading: ClassifyTuning | None = None
) -> list[Block]:
    """The paste's blocks in order; with ``max_blocks``, the last one holds all the rest.

    The cap bounds the work and memory a paste of countless tiny blocks can demand;
    the remainder is still one span, so nothing leaves the spans but whitespace. The ask
    is looked for past the cap too (``_asks_set_apart``, bounded by ``ask``): it is set apart from the
    remainder, whose pieces are evidence. ``reading`` says how much of a block's end is read to join it to
    the next and how the user's words are told (``_continues``).
    """
    reading = reading or ClassifyTuning()
    if "```" not in text:
        # No fence can open: the blocks are the runs of non-blank lines, found in one regex pass.
        blocks = _merge_continuations(text, _unfenced_blocks(text, max_blocks), reading)
    else:
        blocks = _merge_continuations(text, _blocks_by_line(text, max_blocks, reading), reading)
    if max_blocks is not None and blocks and blocks[-1].remainder:
        return [*blocks[:-1], *_asks_set_apart(text, blocks[-1], max_blocks, ask or AskTuning(), reading)]
    return blocks


# Past the cap, the ask is looked for among the remainder's short paragraphs, within bounds (``AskTuning``).


def _ask_candidates(text: str, rest: Block, max_blocks: int, tuning: AskTuning) -> list[tuple[int, int]]:
    """The remainder's short paragraphs that may be the ask, in order (at most twice the cap of them)."""
    short = tuning.paragraph_chars
    blank = _BLANK_LINE.search(text, max(rest.start, rest.end - tuning.tail_chars), rest.end)
    tail_start = rest.start if rest.end - rest.start <= tuning.tail_chars or blank is None else blank.end() + 1
    questions: deque[tuple[int, int]] = deque(maxlen=max_blocks)
    for count, (start, end) in enumerate(_non_blank_runs(text, rest.start, tail_start)):
        if count >= tuning.question_runs * max_blocks:
            break
        if end - start <= short and text.find("?", start, end) >= 0:
            questions.append((start, end))
    last: deque[tuple[int, int]] = deque(maxlen=max_blocks)
    for start, end in _non_blank_runs(text, tail_start, rest.end):
        if end - start <= short:
            last.append((start, end))
            if text.find("?", start, end) >= 0:
                questions.append((start, end))
    return sorted({*questions, *last})


def _asks_set_apart(text: str, rest: Block, max_blocks: int, tuning: AskTuning, reading: ClassifyTuning) -> list[Block]:
    """The remainder ``rest``, with the strongest asks among its short paragraphs (``_ask_candidates``) set apart
    as blocks of their own; what lies between them stays remainder."""
    found = [
        (ask_strength(text[start:end], reading), start, end)
        for start, end in _ask_candidates(text, rest, max_blocks, tuning)
    ]
    strongest = max((strength for strength, _, _ in found), default=0)
    if strongest == 0:
        return [rest]
    asks = [(start, end) for strength, start, end in found if strength == strongest][-tuning.most_set_apart :]
    pieces: list[Block] = []
    position = rest.start
    for start, end in asks:
        if start > position:
            pieces.append(Block(position, _rstrip_end(text, position, start), fenced=False, remainder=True))
        pieces.append(Block(start, _rstrip_end(text, start, end), fenced=False))
        after = _BLANK_LINES.match(text, min(end + 1, rest.end), rest.end)
        position = after.end() if after is not None else rest.end
    if position < rest.end:
        pieces.append(Block(position, rest.end, fenced=False, remainder=True))
    return pieces


def _non_blank_runs(text: str, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int]]:
    """Each run of lines that hold a non-whitespace character in ``text[start:end]`` (``start`` at a line's
    start): where it starts and where its last line ends."""
    end = len(text) if end is None else end
    region = start
    first = _BLANK_FIRST_LINE.match(text, region, end)
    start = region if first is None else first.end() + 1
    for blank in _BLANK_LINE.finditer(text, region, end):
        # The blank line starts after the line end matched first.
        if blank.start() + 1 > start:
            yield start, blank.start()
        start = blank.end() + 1
    if start < end:
        yield start, end


def _unfenced_blocks(text: str, max_blocks: int | None) -> list[Block]:
    blocks: list[Block] = []
    for start, end in _non_blank_runs(text):
        if max_blocks is not None and len(blocks) >= max_blocks - 1:
            blocks.append(Block(start, _rstrip_end(text, start, len(text)), fenced=False, remainder=True))
            break
        blocks.append(Block(start, _rstrip_end(text, start, end), fenced=False))
    return blocks


def _blocks_by_line(text: str, max_blocks: int | None, tuning: ClassifyTuning) -> list[Block]:
    blocks: list[Block] = []
    block_start = -1
    last_content_end = -1
    fence_start = -1
    language = ""
    position = 0
    length = len(text)
    while position < length:
        newline = text.find("\n", position)
        line_end = length if newline < 0 else newline
        next_position = line_end + 1
        starts_block = (
            fence_start < 0 and block_start < 0 and not (text[position:line_end].isspace() or position == line_end)
        )
        if max_blocks is not None and starts_block and len(blocks) >= max_blocks - 1:
            blocks.append(Block(position, _rstrip_end(text, position, length), fenced=False, remainder=True))
            return blocks
        if fence_start >= 0:
            if _is_fence(text, position, line_end):
                blocks.extend(_fenced_content(text, fence_start, position, language))
                fence_start = -1
        elif _is_fence(text, position, line_end):
            if block_start >= 0:
                blocks.append(Block(block_start, last_content_end, fenced=False))
                block_start = -1
            fence_start = min(next_position, length)
            language = _language(text[position:line_end], tuning)
        elif text[position:line_end].isspace() or position == line_end:
            if block_start >= 0:
                blocks.append(Block(block_start, last_content_end, fenced=False))
                block_start = -1
        else:
            if block_start < 0:
                block_start = position
            last_content_end = _rstrip_end(text, position, line_end)
        position = next_position
    if fence_start >= 0:
        # An unclosed fence runs to the end of the paste: the user opened a box and never shut it.
        blocks.extend(_fenced_content(text, fence_start, length, language))
    elif block_start >= 0:
        blocks.append(Block(block_start, last_content_end, fenced=False))
    return blocks


# Trailing whitespace is looked for this many characters at a time: a block's span is never copied whole for it.
_STRIP_CHARS = 4096


def _rstrip_end(text: str, start: int, end: int) -> int:
    """Where ``text[start:end].rstrip()`` ends in ``text``."""
    while end - start > _STRIP_CHARS:
        kept = text[end - _STRIP_CHARS : end].rstrip()
        if kept:
            return end - _STRIP_CHARS + len(kept)
        end -= _STRIP_CHARS
    return start + len(text[start:end].rstrip())


_BLANK_LINES = re.compile(r"(?:[^\S\n]*\n)*")


def _language(fence_line: str, tuning: ClassifyTuning) -> str:
    info = fence_line.strip().lstrip("`").split(maxsplit=1)
    return info[0].lower()[: tuning.language_chars] if info else ""


def _fenced_content(text: str, start: int, stop: int, language: str) -> list[Block]:
    """The block of a fence's content, from its first non-blank line; none when the fence holds only whitespace."""
    blanks = _BLANK_LINES.match(text, start, stop)
    first = blanks.end() if blanks is not None else start
    end = _rstrip_end(text, first, stop)
    return [Block(first, end, fenced=True, language=language)] if end > first else []


# A chained trace says so on the line before the next exception.
_CHAIN_LINE = re.compile(r"\s*(?:During handling of the above exception|The above exception was|nested exception is)")
# The final tally that closes a report: "=== 3 failed, 1 passed in 0.12s ===", "test result: FAILED. 1 passed".
_TALLY = re.compile(r"[=\s]*\d+ (?:failed|passed|errors?)\b.{0,200}\bin [\d.]+ ?m?s\b|\s*test result: ")


def _last_lines(text: str, block: Block, tuning: ClassifyTuning) -> list[str]:
    """The block's last lines (``closing_lines``): the shape it ends in."""
    start = block.end
    for _ in range(tuning.closing_lines):
        start = text.rfind("\n", block.start, start)
        if start < 0:
            start = block.start
            break
    return text[start : block.end].lstrip("\n").split("\n")


def _first_line(text: str, block: Block) -> str:
    newline = text.find("\n", block.start, block.end)
    return text[block.start : block.end if newline < 0 else newline]


def _in_trace(lines: list[str]) -> bool:
    return any(is_trace_frame(line) or trace_header(line) is not None for line in lines)


def _continues(text: str, previous: Block, block: Block, report_open: bool, tuning: ClassifyTuning) -> bool:
    """Whether ``block`` goes on with what ``previous`` holds, across the blank lines between them.

    * a checker's pointer under a quoted line that was empty;
    * frames, a ``Caused by:``, a goroutine header or a chaining line after a block with trace lines in
      its tail (or only a trace's context: ``SIGQUIT: quit``), frames after a line that names an exception or
      error, and a trace's context (registers) after trace lines;
    * any exception header after a line that chains one exception to the next;
    * anything but the user's words (an ask, a line introducing what follows, a few lines saying I or we)
      inside a test report that a banner opened and that no tally or other block closed yet (``_report_state``).
    """
    first = _first_line(text, block)
    if is_pointer(first):
        # A checker's pointer (``^``, ``^~~~``, ``^-- SC2086``) stands under the line it quotes: when that line is
        # empty, the blank line before the pointer is the quote, not a break.
        return True
    tail = _last_lines(text, previous, tuning)
    header = trace_header(first)
    if is_trace_frame(first) and ("exception" in tail[-1].lower() or "error" in tail[-1].lower()):
        # An exception head set apart from its frames ("... nested exception is: x.YException: z").
        return True
    if is_trace_frame(first) or header in ("cause", "goroutine") or _CHAIN_LINE.match(first) is not None:
        return _in_trace(tail) or all(is_trace_context(line) for line in tail if line.strip())
    if is_trace_context(first) and _in_trace(tail):
        # What a runtime prints around a dump's stacks (the registers after a Go dump's goroutines) is the dump's.
        return True
    if header is not None and _CHAIN_LINE.match(tail[-1]) is not None:
        return True
    body = text[block.start : block.end]
    # A few lines in someone's voice after the report ("it's been fine since, I just want to know why") are theirs.
    said = body.count("\n") < tuning.introduction_lines and own_words(body, tuning) and speaks_in_person(body)
    return report_open and not said and not speaks_to_reader(body, tuning)


def _report_state(text: str, block: Block, still_open: bool, tuning: ClassifyTuning) -> bool:
    """Whether a test report is open after ``block``.

    A banner on the block's first or last line opens one; a final tally closes it, and so does any
    block that did not join it (the user's words, a fence): a report is one run of blocks.
    """
    tail = _last_lines(text, block, tuning)
    if any(_TALLY.match(line) is not None for line in tail):
        return False
    return still_open or any(is_banner(line) for line in (_first_line(text, block), tail[-1]))


def _merge_continuations(text: str, blocks: list[Block], tuning: ClassifyTuning) -> list[Block]:
    merged: list[Block] = []
    report_open = False
    for block in blocks:
        previous = merged[-1] if merged else None
        joined = (
            previous is not None
            and not previous.fenced
            and not block.fenced
            and not previous.remainder
            and _continues(text, previous, block, report_open, tuning)
        )
        if joined:
            assert previous is not None
            merged[-1] = Block(previous.start, block.end, fenced=False, remainder=block.remainder)
        else:
            merged.append(block)
        report_open = not block.fenced and _report_state(text, block, report_open and joined, tuning)
    return merged
