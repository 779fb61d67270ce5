"""Reading a large text without copying it whole: its lines by offset, line-aligned pieces, its UTF-8 size and digest.

A paste of tens of megabytes held once is affordable; held three or four times
over (a list of its lines, a translated copy, its encoded bytes) it is what
bounds the stomach's memory. These views give what those copies gave, exactly,
a piece at a time: ``TextLines`` is ``text.split("\\n")`` as a sequence that
slices each line when it is read, ``line_pieces`` cuts a text at line ends into
pieces of about ``PIECE_CHARS``, and ``utf8_size`` and ``digest_in_pieces``
encode one piece at a time. Pure, deterministic.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from typing import overload

import blake3

from envelopes.ids import digest_text

__all__ = [
    "LINES_BY_OFFSET_CHARS",
    "PIECE_CHARS",
    "HandedText",
    "TextLines",
    "digest_in_pieces",
    "line_pieces",
    "lines_of",
    "utf8_size",
]

# A text this long or longer is read a piece at a time; a shorter one is copied whole, which is faster.
PIECE_CHARS = 1 << 20
# Lines of a text this long or longer are kept as offsets (8 bytes a line) instead of a list (57 bytes a line and
# their characters again).
LINES_BY_OFFSET_CHARS = 1 << 20
_UTF8 = ("utf-8", "surrogatepass")


class HandedText:
    """A text its owner hands over and keeps no reference to: whoever takes it holds it alone, so it can let
    it go once it has what it needs of it (a large paste, once its blocks are cut)."""

    __slots__ = ("_text",)

    def __init__(self, text: str) -> None:
        self._text: str | None = text

    def take(self) -> str:
        """The text, once: the handle lets go of it."""
        text, self._text = self._text, None
        if text is None:
            raise ValueError("a handed-over text is taken once")
        return text


def line_pieces(text: str, size: int = PIECE_CHARS) -> Iterator[str]:
    """``text`` in pieces of whole lines (the ``\\n`` between two pieces left out), each about ``size`` characters.

    Joined with ``\\n`` the pieces are ``text``, so their lines, in order, are ``text.split("\\n")``.
    """
    start, length = 0, len(text)
    while length - start > size:
        cut = text.find("\n", start + size)
        if cut < 0:
            break
        yield text[start:cut]
        start = cut + 1
    yield text if start == 0 else text[start:]


class TextLines(Sequence[str]):
    """``text.split("\\n")`` as a sequence holding the text and where each line starts: lines are sliced when read."""

    __slots__ = ("_starts", "_text")

    def __init__(self, text: str) -> None:
        self._text = text
        starts = array("q", [0])
        position = text.find("\n")
        while position >= 0:
            starts.append(position + 1)
            position = text.find("\n", position + 1)
        self._starts = starts

    def __len__(self) -> int:
        return len(self._starts)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self._line(number) for number in range(*index.indices(len(self._starts)))]
        count = len(self._starts)
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError("line index out of range")
        return self._line(index)

    def _line(self, number: int) -> str:
        starts = self._starts
        end = starts[number + 1] - 1 if number + 1 < len(starts) else len(self._text)
        return self._text[starts[number] : end]

    def __iter__(self) -> Iterator[str]:
        for piece in line_pieces(self._text):
            yield from piece.split("\n")


def first_lines(text: str, count: int) -> list[str]:
    """``text.split("\\n")[:count]``, reading no further than those lines."""
    lines: list[str] = []
    start = 0
    while len(lines) < count:
        end = text.find("\n", start)
        if end < 0:
            lines.append(text[start:])
            break
        lines.append(text[start:end])
        start = end + 1
    return lines


def last_lines(text: str, count: int) -> list[str]:
    """``text.split("\\n")[-count:]`` (none for a count of 0), reading no further back than those lines."""
    lines: list[str] = []
    end = len(text)
    while len(lines) < count:
        start = text.rfind("\n", 0, end)
        lines.append(text[start + 1 : end])
        if start < 0:
            break
        end = start
    return lines[::-1]


def lines_of(text: str) -> Sequence[str]:
    """``text.split("\\n")``: a list for a short text, ``TextLines`` for a long one (the same lines either way)."""
    return text.split("\n") if len(text) < LINES_BY_OFFSET_CHARS else TextLines(text)


def utf8_size(text: str) -> int:
    """``len(text.encode("utf-8", "surrogatepass"))``, without holding the whole encoding at once."""
    if text.isascii():
        return len(text)
    return sum(len(text[start : start + PIECE_CHARS].encode(*_UTF8)) for start in range(0, len(text), PIECE_CHARS))


def digest_in_pieces(text: str) -> str:
    """``blake3:<hex>`` of the text's UTF-8 bytes (surrogates passed), as ``envelopes.ids.digest_text`` spells it."""
    if len(text) < PIECE_CHARS:
        return digest_text(text)
    hasher = blake3.blake3()
    # Each character encodes on its own (surrogates too, passed one by one), so cutting anywhere is safe.
    for start in range(0, len(text), PIECE_CHARS):
        hasher.update(text[start : start + PIECE_CHARS].encode(*_UTF8))
    return "blake3:" + hasher.hexdigest()
