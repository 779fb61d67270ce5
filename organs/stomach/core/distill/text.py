"""Head … tail renderings for code, notes and anything rendered cheaply.

Sizes are planned with the tuning's characters-per-token estimate; the caller measures the
result exactly and asks again with a smaller target if the estimate was short.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from organs.stomach.core.tuning import StomachTuning

__all__ = [
    "TIMES",
    "clip_line",
    "elision",
    "head_tail",
    "headings_of",
    "kept_and_ends",
    "kept_rendering",
    "plural",
    "thousands",
]

# The multiplication sign of counts and table dimensions, spelled by code point so no reader mistakes it for x.
TIMES = "\u00d7"
_DIGITS_TO_ZERO = str.maketrans("0123456789", "0000000000")


def thousands(number: int) -> str:
    return f"{number:,}"


def plural(number: int, noun: str) -> str:
    return f"{thousands(number)} {noun}" if number == 1 else f"{thousands(number)} {noun}s"


def clip_line(line: str, limit: int) -> str:
    """``line`` cut to ``limit`` characters, the cut stated."""
    return line if len(line) <= limit else f"{line[:limit]}… [{len(line) - limit:,} chars elided]"


def headings_of(lines: Sequence[str]) -> list[int]:
    """Each line's heading: the nearest line above it indented less (a diagnostic's file name, a YAML key's
    parent, a frame's exception), or -1 for a line at the outer edge, a blank line, or one under no heading."""
    heading_of = [-1] * len(lines)
    open_headings: list[tuple[int, int]] = []
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" \t"))
        while open_headings and open_headings[-1][0] >= indent:
            open_headings.pop()
        if open_headings:
            heading_of[index] = open_headings[-1][1]
        open_headings.append((indent, index))
    return heading_of


def elision(count: int, noun: str) -> str:
    return f"… [{plural(count, noun)} elided] …"


def head_tail(text: str, target_tokens: int, tuning: StomachTuning, *, noun: str = "line") -> str:
    """The first and last lines of ``text`` within about ``target_tokens``, the middle counted out.

    When not even one line from each end fits (a paste that is one enormous
    line), the cut falls between characters instead, and says how many.
    """
    budget_chars = max(int(target_tokens * tuning.chars_per_token), tuning.least_room_chars)
    if len(text) <= budget_chars:
        return text
    lines = text.split("\n")
    head_end, tail_start = 0, len(lines)
    used = len(elision(len(lines), noun)) + 1
    # Head lines before each tail line (``head_lines_per_tail_line``): the start of a segment usually says what it is.
    per_tail = tuning.head_lines_per_tail_line
    turn = 0
    while head_end < tail_start:
        take_head = turn % (per_tail + 1) != per_tail
        index = head_end if take_head else tail_start - 1
        cost = len(lines[index]) + 1
        if used + cost > budget_chars:
            break
        used += cost
        if take_head:
            head_end += 1
        else:
            tail_start -= 1
        turn += 1
    if head_end == 0 or tail_start == len(lines):
        return _character_cut(text, budget_chars, tuning.character_note_chars)
    if head_end >= tail_start:
        return text
    elided = tail_start - head_end
    return "\n".join([*lines[:head_end], elision(elided, noun), *lines[tail_start:]])


def _character_cut(text: str, budget_chars: int, note_chars: int) -> str:
    keep = max((budget_chars - note_chars) // 2, 1)
    elided = len(text) - 2 * keep
    if elided <= 0:
        return text
    return f"{text[:keep]}\n{elision(elided, 'character')}\n{text[-keep:]}"


def _shared_clip(lengths: list[int], spare: int, costed: int) -> int:
    """The length to clip lines at so that, costed at ``costed`` characters at most each already, they share
    ``spare`` more: short lines take only what they need, and the rest goes to the long ones."""
    room = spare + sum(min(length, costed) for length in lengths)
    for position, length in enumerate(sorted(lengths)):
        share = room // (len(lengths) - position)
        if length > share:
            return share
        room -= length
    return max(lengths, default=0)


def kept_and_ends(text: str, target_tokens: int, keep: Callable[[str], int], tuning: StomachTuning, *, why: str) -> str:
    """Head and tail like ``head_tail``, and before them the middle lines ``keep`` picks, within about the target.

    ``keep`` ranks a line (0: not picked). The picked lines take up to half the room, the higher ranks first
    and each rank in paste order, each clipped to ``kept_line_chars``, one line of each shape (digits aside);
    the head and tail fill the rest. Every gap says how many lines it elided, and a first line says
    why the middle lines were kept (``why``).
    """
    budget_chars = max(int(target_tokens * tuning.chars_per_token), tuning.least_room_chars)
    kept_line_chars = tuning.kept_line_chars
    if len(text) <= budget_chars:
        return text
    lines = text.split("\n")
    ranks = [keep(line) for line in lines]
    picked = sorted((index for index, rank in enumerate(ranks) if rank), key=lambda index: -ranks[index])
    if not picked:
        return head_tail(text, target_tokens, tuning)
    note = f"[kept: the first and last lines, and lines {why}]"
    used = len(note) + 1
    chosen: set[int] = set()
    shapes: set[str] = set()
    heading_of = headings_of(lines)
    for index in picked:
        # A line that repeats another but for its numbers (a stamp, a count) says nothing new.
        shape = lines[index][:kept_line_chars].translate(_DIGITS_TO_ZERO)
        if shape in shapes:
            continue
        shapes.add(shape)
        # A picked line comes with the heading it is indented under: a key says little without its section's. Only
        # the nearest: a deep document's every level would cost more lines than the one picked.
        with_headings = [index]
        if (heading := heading_of[index]) >= 0 and heading not in chosen:
            with_headings.append(heading)
        # A picked heading comes with the first line under it: what the section is begins there.
        if index + 1 < len(lines) and heading_of[index + 1] == index and index + 1 not in chosen:
            with_headings.append(index + 1)
        cost = sum(min(len(lines[line]), kept_line_chars) + tuning.kept_gap_chars for line in with_headings)
        if used + cost > budget_chars * tuning.kept_lines_share:
            # Too long for what is left of their share; a shorter line further on may still fit.
            continue
        chosen.update(with_headings)
        used += cost
    head, tail = 0, len(lines) - 1
    per_tail = tuning.head_lines_per_tail_line
    turn = 0
    while head <= tail:
        take_head = turn % (per_tail + 1) != per_tail
        index = head if take_head else tail
        cost = min(len(lines[index]), kept_line_chars) + 1
        if used + cost > budget_chars:
            break
        used += cost
        chosen.add(index)
        if take_head:
            head += 1
        else:
            tail -= 1
        turn += 1
    return kept_rendering(text, lines, chosen, note, budget_chars - used, tuning)


def kept_rendering(
    text: str, lines: list[str], chosen: set[int], note: str, spare_chars: int, tuning: StomachTuning
) -> str:
    """The chosen lines of ``text`` (its ``lines``) in order under ``note``, each gap counted, each line clipped;
    they were costed at ``kept_line_chars`` each at most, and ``spare_chars`` of the room is left."""
    kept_line_chars = tuning.kept_line_chars
    # The room the chosen lines were costed within is theirs: a few long lines share it rather than each being
    # cut at ``kept_line_chars`` (three lines of JSON, one 15,000 characters long, fill their target).
    clip_at = max(kept_line_chars, _shared_clip([len(lines[index]) for index in chosen], spare_chars, kept_line_chars))
    # Every line chosen is the text itself only when none of them had to be clipped.
    if len(chosen) == len(lines) and all(len(line) <= clip_at for line in lines):
        return text
    body = [note]
    previous = -1
    for index in sorted(chosen):
        if index > previous + 1:
            body.append(elision(index - previous - 1, "line"))
        line = lines[index]
        body.append(line if len(line) <= clip_at else line[:clip_at] + "…")
        previous = index
    if previous < len(lines) - 1:
        body.append(elision(len(lines) - 1 - previous, "line"))
    return "\n".join(body)
