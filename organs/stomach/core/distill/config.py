"""A configuration file that is mostly comments, served as its settings first.

The files people paste when a service misbehaves are often the shipped ones: a ``www.conf``, an ``sshd_config``, a
``redis.conf``, hundreds of comment lines documenting every directive around the few dozen lines in effect. Head and
tail kept the documentation of the first and last directives and elided the settings in between. Here the lines in
effect (the settings, section headers, anything not a comment) come first, in order, a blank line where the file had
one between them; then, while the room lasts, the comment lines holding the ask's terms and their neighbours, then
the comments right above each setting (what documents it), nearest first. One note says how many comment lines were
left out.
When the settings alone do not fit, they are cut as any code is (``text.kept_and_ends``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from organs.stomach.core.distill.text import kept_and_ends, plural
from organs.stomach.core.shapes.line_shapes import commented_out, is_comment_line
from organs.stomach.core.tuning import StomachTuning

__all__ = ["settings_first"]


def _is_comment(line: str) -> bool:
    """A comment, or a directive commented out: neither is in effect."""
    return is_comment_line(line, slashes=True) or commented_out(line) is not None


def settings_first(
    text: str, target_tokens: int, keep: Callable[[str], int], tuning: StomachTuning, *, why: str
) -> str | None:
    """The text's settings and, in the room left, its comments most worth keeping; None when it is not mostly
    comments (``StomachTuning.config_comment_share`` of its written lines, at least ``config_least_comments``)."""
    lines = text.split("\n")
    comments = [_is_comment(line) for line in lines]
    count = sum(comments)
    written = sum(1 for line in lines if line.strip())
    if count < tuning.config_least_comments or count < written * tuning.config_comment_share:
        return None
    budget_chars = max(int(target_tokens * tuning.chars_per_token), tuning.least_room_chars)
    settings = [index for index, line in enumerate(lines) if line.strip() and not comments[index]]
    note = f"[a config, its settings first: {plural(count, 'comment line')} of {len(lines):,} left out but those {why}]"
    used = len(note) + 1 + sum(len(lines[index]) + 1 for index in settings)
    if used > budget_chars:
        only = "\n".join(lines[index] for index in settings)
        rest = max(target_tokens - int(len(note) / tuning.chars_per_token) - 1, 1)
        return note + "\n" + kept_and_ends(only, rest, keep, tuning, why=why)
    chosen = set(settings)
    for index in _comments_by_worth(lines, comments, settings, keep):
        cost = len(lines[index]) + 1
        if used + cost <= budget_chars:
            chosen.add(index)
            used += cost
    return "\n".join([note, *_in_order(lines, sorted(chosen))])


def _comments_by_worth(
    lines: list[str], comments: list[bool], settings: list[int], keep: Callable[[str], int]
) -> Iterator[int]:
    """The comment lines, those holding the ask's terms first (the highest ranks first), then the lines either side
    of those, then those right above each setting, one line further up each round."""
    ranks = {index: keep(lines[index]) for index, is_comment in enumerate(comments) if is_comment}
    ranked = sorted((index for index, rank in ranks.items() if rank), key=lambda index: -ranks[index])
    yield from ranked
    seen = set(ranked)
    # A comment's sentence often goes on in the next line, or began in the one before.
    for index in ranked:
        for near in (index + 1, index - 1):
            if 0 <= near < len(lines) and comments[near] and near not in seen:
                seen.add(near)
                yield near
    reach = 1
    while True:
        found = False
        for setting in settings:
            index = setting - reach
            if index < 0 or not all(comments[line] for line in range(index, setting)):
                continue
            found = True
            if index not in seen:
                seen.add(index)
                yield index
        if not found:
            return
        reach += 1


def _in_order(lines: list[str], chosen: list[int]) -> list[str]:
    """The chosen lines in order, one blank line where a blank line stood between two of them."""
    body: list[str] = []
    previous = -1
    for index in chosen:
        if body and any(not lines[between].strip() for between in range(previous + 1, index)):
            body.append("")
        body.append(lines[index])
        previous = index
    return body
