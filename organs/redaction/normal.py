"""The normal form the rules match on, and where each of its characters came from in the text received.

Obfuscation hides a credential from a pattern without hiding it from a reader: a zero-width
space or a soft hyphen inside a key, a bidi override before ``password=``, fullwidth letters,
a Cyrillic ``а`` among Latin ones. The rules run on a normal form with those undone:
invisible format characters removed, fullwidth and mathematical letters and digits made
ASCII (their NFKC form), and look-alike Cyrillic and Greek letters made Latin inside a word
that holds Latin letters (a word wholly in Cyrillic or Greek is left alone: it is text, not
a disguise). ``origins`` maps each character of the form back to the received text, so what
is redacted is the bytes received, invisible characters and all.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

__all__ = ["NormalForm", "normal_form"]

_INVISIBLE = "\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
# Look-alikes of Latin letters (Cyrillic, Greek), as they are used to pass for them.
_LOOKALIKES = str.maketrans(
    {
        **dict(zip("аеорсухіјѕԁһԛԝ", "aeopcyxijsdhqw", strict=True)),
        **dict(zip("АВЕКМНОРСТХЅІЈ", "ABEKMHOPCTXSIJ", strict=True)),
        **dict(zip("αεινορτυχ", "aeivoptux", strict=True)),
        **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "ABEZHIKMNOPTYX", strict=True)),
    }
)
_LOOKALIKE_CHARACTERS = "".join(chr(code) for code in _LOOKALIKES)
# Fullwidth ASCII and the mathematical alphanumerics: NFKC makes each one ASCII character.
_WIDE = "\uff01-\uff5e\U0001d400-\U0001d7ff"
_SUSPECT = re.compile(f"[{_INVISIBLE}{_WIDE}{_LOOKALIKE_CHARACTERS}]")
_INVISIBLE_CHARACTER = re.compile(f"[{_INVISIBLE}]")
_WORD_LETTER = re.compile(f"[A-Za-z{_LOOKALIKE_CHARACTERS}{_INVISIBLE}]")


@dataclass(frozen=True, slots=True)
class NormalForm:
    """``text`` to match on; ``origins[i]`` is where its character ``i`` was received (None: it is the text)."""

    text: str
    origins: list[int] | None = None

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The received span of the form's ``[start, end)``."""
        if self.origins is None:
            return start, end
        return self.origins[start], self.origins[end - 1] + 1


def _in_a_latin_word(text: str, at: int) -> bool:
    """Whether the look-alike at ``at`` stands in a word that also holds an ASCII letter."""
    for step in (-1, 1):
        index = at + step
        while 0 <= index < len(text) and _WORD_LETTER.match(text, index):
            if text[index].isascii():
                return True
            index += step
    return False


def _folded(text: str, at: int) -> str:
    character = text[at]
    if _INVISIBLE_CHARACTER.match(character):
        return ""
    if character in _LOOKALIKE_CHARACTERS:
        return character.translate(_LOOKALIKES) if _in_a_latin_word(text, at) else character
    wide = unicodedata.normalize("NFKC", character)
    return wide if wide.isascii() else character


def normal_form(text: str) -> NormalForm:
    """``text``'s normal form; the text itself (no copy, no map) when nothing in it needs undoing."""
    if text.isascii() or _SUSPECT.search(text) is None:
        return NormalForm(text)
    pieces: list[str] = []
    origins: list[int] = []
    done = 0
    changed = False
    for suspect in _SUSPECT.finditer(text):
        at = suspect.start()
        folded = _folded(text, at)
        if folded == text[at]:
            continue
        changed = True
        pieces.append(text[done:at])
        origins.extend(range(done, at))
        pieces.append(folded)
        origins.extend([at] * len(folded))
        done = at + 1
    if not changed:
        return NormalForm(text)
    pieces.append(text[done:])
    origins.extend(range(done, len(text)))
    return NormalForm("".join(pieces), origins)
