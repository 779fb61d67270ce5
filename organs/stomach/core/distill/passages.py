"""Code or a note over its target, served as its opening and then the lines that answer the ask, in order.

A config dump or a document pasted whole answers the ask in a few places, rarely at its ends. The lines are
scored by the paste's relevance model (``organs.stomach.core.relevance.LineScorer``: the ask's terms weighted by
their rarity in the text, alerts, what the ask compares, and the context a scored line lends the lines around
it); the opening (``StomachTuning.passage_head_share`` of the room) is kept for what the text is, then the best
lines, each with the heading it is indented under, while the room lasts. Every gap says how many lines it elided.
"""

from __future__ import annotations

from collections.abc import Sequence

from organs.stomach.core.distill.text import kept_rendering
from organs.stomach.core.tuning import StomachTuning

__all__ = ["answering_lines"]


def answering_lines(
    text: str, target_tokens: int, scores: Sequence[float], heading_of: Sequence[int], tuning: StomachTuning
) -> str:
    """The text within about ``target_tokens``: its opening, then its lines by ``scores`` (one per line, best
    first; a line scoring nothing is not picked) with their headings (``heading_of``: ``text.headings_of``), in
    order (``text.kept_rendering``)."""
    budget_chars = max(int(target_tokens * tuning.chars_per_token), tuning.least_room_chars)
    if len(text) <= budget_chars:
        return text
    lines = text.split("\n")
    clip_at = tuning.kept_line_chars
    note = "[kept: its first lines, and the lines that answer the ask, in order]"
    used = len(note) + 1
    chosen: set[int] = set()

    sizes = [min(len(line), clip_at) + 1 for line in lines]

    def cost_of(indices: Sequence[int]) -> int:
        # A line kept alone in a gap cuts it in two: one more elision note.
        return sum(
            sizes[index] + (tuning.kept_gap_chars if index - 1 not in chosen and index + 1 not in chosen else 0)
            for index in indices
        )

    opening = 0
    for index in range(len(lines)):
        cost = cost_of([index])
        if opening + cost > budget_chars * tuning.passage_head_share:
            break
        opening += cost
        chosen.add(index)
    used += opening
    for index in sorted(range(len(lines)), key=lambda index: (-scores[index], index)):
        if scores[index] <= 0:
            break
        if index in chosen or used + sizes[index] > budget_chars:
            continue
        # A key says little without its section's heading: the nearest one comes with it.
        taking = [index] if (heading := heading_of[index]) < 0 or heading in chosen else [index, heading]
        cost = cost_of(taking)
        if used + cost <= budget_chars:
            chosen.update(taking)
            used += cost
    return kept_rendering(text, lines, chosen, note, budget_chars - used, tuning)
