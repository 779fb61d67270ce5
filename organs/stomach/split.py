"""Cut a paste into blocks: fenced ``` regions whole, everything else at blank lines.

A block's span starts at its first non-blank line (indentation included) and
ends after the last non-whitespace character, so the only text left outside
every span is whitespace. Lines end at ``\\n``; a ``\\r`` before it is trailing
whitespace like any other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Block", "split_blocks"]


@dataclass(frozen=True, slots=True)
class Block:
    start: int
    end: int
    fenced: bool
    # The block that holds the rest of a paste cut at ``max_blocks``.
    remainder: bool = False


def _is_fence(text: str, start: int, end: int) -> bool:
    # A fence may be indented by up to three spaces, as in CommonMark.
    position = start
    while position < end and position - start < 3 and text[position] == " ":
        position += 1
    return text.startswith("```", position, end)


# A run of lines that each hold a non-whitespace character (``\s`` is ``str.isspace``'s whitespace).
_NON_BLANK_RUN = re.compile(r"^[^\S\n]*\S.*(?:\n[^\S\n]*\S.*)*", re.MULTILINE)


def split_blocks(text: str, max_blocks: int | None = None) -> list[Block]:
    """The paste's blocks in order; with ``max_blocks``, the last one holds all the rest.

    The cap bounds the work and memory a paste of countless tiny blocks can demand;
    the remainder is still one span, so nothing leaves the spans but whitespace.
    """
    if "```" not in text:
        # No fence can open: the blocks are the runs of non-blank lines, found in one regex pass.
        return _unfenced_blocks(text, max_blocks)
    return _blocks_by_line(text, max_blocks)


def _unfenced_blocks(text: str, max_blocks: int | None) -> list[Block]:
    blocks: list[Block] = []
    for run in _NON_BLANK_RUN.finditer(text):
        if max_blocks is not None and len(blocks) >= max_blocks - 1:
            blocks.append(Block(run.start(), _rstrip_end(text, run.start(), len(text)), fenced=False, remainder=True))
            break
        blocks.append(Block(run.start(), _rstrip_end(text, run.start(), run.end()), fenced=False))
    return blocks


def _blocks_by_line(text: str, max_blocks: int | None) -> list[Block]:
    blocks: list[Block] = []
    block_start = -1
    last_content_end = -1
    fence_start = -1
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
                blocks.append(Block(fence_start, _rstrip_end(text, fence_start, line_end), fenced=True))
                fence_start = -1
        elif _is_fence(text, position, line_end):
            if block_start >= 0:
                blocks.append(Block(block_start, last_content_end, fenced=False))
                block_start = -1
            fence_start = position
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
        blocks.append(Block(fence_start, _rstrip_end(text, fence_start, length), fenced=True))
    elif block_start >= 0:
        blocks.append(Block(block_start, last_content_end, fenced=False))
    return blocks


def _rstrip_end(text: str, start: int, end: int) -> int:
    return start + len(text[start:end].rstrip())
