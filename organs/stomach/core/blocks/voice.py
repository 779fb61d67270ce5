"""Whose words a block is: someone talking between pieces of evidence, or a program's message that reads as
sentences (``structures`` joins the latter to the run it belongs to)."""

from __future__ import annotations

import re

from organs.stomach.core.tuning import ClassifyTuning

__all__ = ["in_someones_voice", "speaks_in_person", "wraps_into"]

_LOWER_WORD = re.compile(r"[a-z]+,?")


# What marks someone's own voice between pieces of evidence: a person speaking (I, my, we), a question, a line
# introducing what follows, a chat's lowercase opening, or a narrator's word opening it (then, here, after, same).
_PERSON_TEXT = r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|we|we're|we've|our|us)\b"
_PERSON = re.compile(_PERSON_TEXT)
_VOICE = re.compile(rf"{_PERSON_TEXT}|\?|^\S+(?: \S+){{2,}}:\s*$", re.MULTILINE)
_NARRATION_TEXT = """here here's then after afterwards now also and but so ok okay same this that again later meanwhile
    finally next update edit note below above"""
_NARRATION = frozenset(_NARRATION_TEXT.split())


def speaks_in_person(text: str) -> bool:
    """Whether a block says I, my, we: a person, not a program (whose lines may open in lowercase or ask)."""
    return _PERSON.search(text) is not None


def in_someones_voice(text: str) -> bool:
    """Whether a block that reads as sentences is someone talking (``_VOICE``, ``_NARRATION``), not a program's
    message in full sentences."""
    if _VOICE.search(text) is not None or text[:1].islower():
        return True
    first = text.split(maxsplit=1)[0].strip(",.:;!").lower() if text.strip() else ""
    return first in _NARRATION


def wraps_into(block: str, following: str, tuning: ClassifyTuning) -> bool:
    """Whether a block's last line is a sentence cut at a program's line width that the next block goes on with:
    a long line of words ending in a lowercase word (no sentence's last mark), the next block opening in lowercase."""
    last = block.rstrip().rsplit("\n", 1)[-1].strip()
    words = last.split()
    return (
        len(last) >= tuning.wrapped_line_chars
        # Columns aligned by runs of spaces are a table's header, not a sentence.
        and "   " not in last
        and bool(_LOWER_WORD.fullmatch(words[-1]))
        and sum(1 for word in words if _LOWER_WORD.fullmatch(word)) * 2 >= len(words)
        and following.lstrip(" ")[:1].islower()
    )
