"""Terminal sessions a paste's blank lines cut: a block of prompts joined to the output under it, and a session's
commands' output between two prompts joined into one block."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from organs.stomach.core.blocks.split import Block
from organs.stomach.core.blocks.structures import line_count, reader, users_head
from organs.stomach.core.blocks.voice import in_someones_voice
from organs.stomach.core.shapes.line_shapes import is_prompt
from organs.stomach.core.tuning import ClassifyTuning

__all__ = ["join_commands", "join_sessions"]


def join_commands(
    text: str, blocks: Sequence[Block], tuning: ClassifyTuning, received: Callable[[int, int], str] | None = None
) -> list[Block]:
    """The blocks, with a block of shell prompts (``$ chainsaw hunt …``), or of one prompt and its output's banner,
    joined to the block after it, its output set apart by a blank line, unless that block is fenced or the user's
    words."""
    read = reader(text, received)
    joined: list[Block] = []
    for block in blocks:
        previous = joined[-1] if joined else None
        head = read(block.start, min(block.end, block.start + tuning.opening_chars))
        if (
            previous is not None
            and not previous.fenced
            and not block.fenced
            and not previous.remainder
            and _opens_output(
                read(previous.start, min(previous.end, previous.start + tuning.opening_chars)), head, tuning
            )
            and not users_head(head, line_count(text, block), tuning)
        ):
            joined[-1] = replace(previous, end=block.end, remainder=block.remainder)
        else:
            joined.append(block)
    return joined


def _opens_output(text: str, after: str, tuning: ClassifyTuning) -> bool:
    """Whether a block opens the output of the block ``after`` it: shell prompts alone, or one prompt and the
    banner its output opens with (sar's ``Linux 6.1 (host)  12/07/26``: at most ``command_banner_lines`` lines
    under it) when what follows is no command of its own."""
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines or not is_prompt(lines[0]):
        return False
    if all(is_prompt(line) for line in lines):
        return True
    return len(lines) - 1 <= tuning.command_banner_lines and not is_prompt(after.lstrip("\n").split("\n", 1)[0])


def join_sessions(
    text: str, blocks: Sequence[Block], tuning: ClassifyTuning, received: Callable[[int, int], str] | None = None
) -> list[Block]:
    """The blocks, with a terminal session its commands' output cut at blank lines joined into one: from a block
    opening with a shell prompt over the blocks after it up to the last that holds a prompt, while none between
    is fenced or the user's words in their own voice (what a command printed between two prompts is its output,
    however it reads)."""
    read = reader(text, received)
    heads = [read(block.start, min(block.end, block.start + tuning.opening_chars)) for block in blocks]
    opens = [
        not block.fenced and is_prompt(head.lstrip("\n").split("\n", 1)[0])
        for block, head in zip(blocks, heads, strict=True)
    ]
    joined: list[Block] = []
    index = 0
    while index < len(blocks):
        block = blocks[index]
        last = index
        if opens[index]:
            probe = index + 1
            # A block opening with its own prompt is the next command's, set apart by the user.
            while probe < len(blocks) and not blocks[probe].fenced and not blocks[probe - 1].remainder:
                if opens[probe]:
                    break
                body = read(blocks[probe].start, blocks[probe].end)
                if users_head(heads[probe], line_count(text, blocks[probe]), tuning) and in_someones_voice(
                    body.strip()
                ):
                    break
                if any(map(is_prompt, body.split("\n"))):
                    last = probe
                probe += 1
        if last > index:
            joined.append(replace(block, end=blocks[last].end, remainder=blocks[last].remainder))
        else:
            joined.append(block)
        index = last + 1
    return joined
