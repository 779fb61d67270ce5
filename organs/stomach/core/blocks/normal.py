"""The normal form of a paste: the text a terminal would show for the bytes received.

Pastes copied from terminals and CI pages carry what the terminal consumed:
ANSI/VT escape sequences (colours, cursor and title commands, CI timing marks),
carriage returns that redraw a progress line in place, backspaces, and CRLF line
ends. The model is served the normal form, never those controls; the frame's id
and retrievable full text stay those of the bytes received (Law 4).

* Escape sequences are removed: CSI (``ESC [`` … final byte, and the 8-bit
  ``U+009B`` introducer), the string sequences OSC, DCS, APC, PM and SOS (to BEL,
  ``ESC \\`` or the line end) and the two-byte ``ESC x`` commands.
* Each line is rendered as a terminal leaves it. Text is written at the cursor,
  overwriting what is there; ``\\r`` moves the cursor to column 0, so a shorter
  redraw leaves the longer tail of the earlier state visible, exactly as on a
  screen; a backspace moves the cursor one column left; erase-in-line
  (``ESC [ K``, ``ESC [ 1 K``, ``ESC [ 2 K``) clears to the end, from the start,
  or the whole line. A ``\\r`` with nothing after it changes nothing, so CRLF
  becomes LF.

The form is line-local: a line's normal form depends on that line alone, so it
never adds or removes a ``\\n`` and the normal form of a run of whole lines is the
same run of the whole text's normal form. A text with no ESC, CSI, ``\\r`` or
backspace is its own normal form and is returned as the same object. Every step
is one regex pass or one pass over a line's pieces: linear in the text.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from organs.text_views import line_pieces

__all__ = ["NormalText", "normal_form", "normalize"]

# The characters whose presence means the normal form may differ from the text.
_CONTROLS = ("\x1b", "\r", "\x08", "\x9b")


def _has_controls(text: str) -> bool:
    # One substring search per character runs at memory speed; a character-class regex does not.
    return any(control in text for control in _CONTROLS)


# Escape sequences, each alternative over disjoint character ranges so a match costs linear time.
# Erase-in-line is captured (group 1 holds its mode digit, possibly empty) because it changes the line.
_ESCAPE = re.compile(
    r"(?:\x1b\[|\x9b)(?:([0-2]?)K|[0-?]*[ -/]*[@-~]?)"
    r"|\x1b[\]P_^X][^\x07\x1b\n]*(?:\x07|\x1b\\)?"
    r"|\x1b[ -/]*[0-~]?"
)
# The pieces of a line that move the cursor or erase: everything else is text written at the cursor.
_LINE_CONTROL = re.compile(r"\r|\x08|(?:\x1b\[|\x9b)([0-2]?)K")


def normal_form(text: str) -> str:
    """``text`` as a terminal shows it: no escape sequences, each line in its last drawn state, LF line ends."""
    if not _has_controls(text):
        return text
    # A piece of whole lines at a time: a list of a large paste's lines would cost more than the paste.
    return _joined_growing("\n".join(map(_render_line, piece.split("\n"))) for piece in line_pieces(text))


def _joined_growing(pieces: Iterable[str]) -> str:
    """``"\\n".join(pieces)``, grown a piece at a time: CPython extends a string that only this frame holds in
    place, so a large text is built beside one piece of it, not beside a list of all its pieces."""
    joined = ""
    for number, piece in enumerate(pieces):
        if number:
            joined += "\n"
        joined += piece
    return joined


def _render_line(line: str) -> str:
    # A carriage return with nothing after it redraws nothing: CRLF is LF.
    line = line.rstrip("\r")
    if "\r" not in line and "\x08" not in line and "K" not in line:
        return _strip_escapes(line)
    # Erase-in-line must survive the stripping, so other escapes go first and the erases are kept.
    kept = _ESCAPE.sub(_keep_erase, line)
    if "\r" not in kept and "\x08" not in kept and "\x1b" not in kept and "\x9b" not in kept:
        return kept
    screen = _Screen()
    position = 0
    for control in _LINE_CONTROL.finditer(kept):
        screen.write(kept[position : control.start()])
        position = control.end()
        piece = control.group()
        if piece == "\r":
            screen.cursor = 0
        elif piece == "\x08":
            screen.cursor = max(screen.cursor - 1, 0)
        else:
            screen.erase(control.group(1))
    screen.write(kept[position:])
    # Erased cells show as blanks; a terminal shows no difference between trailing blanks and nothing.
    return "".join(screen.cells).rstrip(" ")


def _strip_escapes(line: str) -> str:
    return _ESCAPE.sub("", line) if "\x1b" in line or "\x9b" in line else line


def _keep_erase(match: re.Match[str]) -> str:
    return match.group() if match.group(1) is not None else ""


class _Screen:
    """One terminal line: its cells and cursor. The cursor never passes the end of the cells.

    Every operation costs what it changes: a write its text, an erase only the cells not already blank
    (``blank`` counts the leading cells known to be blank), so a line of any controls renders in linear time.
    """

    __slots__ = ("blank", "cells", "cursor")

    def __init__(self) -> None:
        self.cells: list[str] = []
        self.cursor = 0
        self.blank = 0

    def write(self, text: str) -> None:
        if not text:
            return
        cells, cursor = self.cells, self.cursor
        overlap = min(len(text), len(cells) - cursor)
        cells[cursor : cursor + overlap] = text[:overlap]
        cells.extend(text[overlap:])
        self.blank = min(self.blank, cursor)
        self.cursor = cursor + len(text)

    def erase(self, mode: str) -> None:
        cells = self.cells
        if mode in ("", "0"):
            del cells[self.cursor :]
            self.blank = min(self.blank, self.cursor)
            return
        # Erasing from the line start (1) or the whole line (2) blanks cells; the cursor stays where it is.
        upto = min(self.cursor + 1, len(cells)) if mode == "1" else len(cells)
        if upto > self.blank:
            cells[self.blank : upto] = " " * (upto - self.blank)
            self.blank = upto


@dataclass(frozen=True, slots=True)
class NormalText:
    """A paste's normal form and the map from its lines back to the received text's lines.

    ``starts`` and ``received_starts`` hold each line's offset in the normal and the
    received text; both are empty when the two texts are the same.
    """

    text: str
    received: str
    starts: Sequence[int] = ()
    received_starts: Sequence[int] = ()

    @property
    def changed(self) -> bool:
        return self.text is not self.received

    def received_span(self, start: int, end: int) -> tuple[int, int]:
        """The received span of the whole lines that the normal span ``[start, end)`` covers.

        ``start`` must be a line start; the end maps to the end of the received
        line holding ``end - 1``, trailing whitespace left out unless the line
        redraws itself: spaces written after a carriage return or a backspace
        blank what was drawn before, so they belong to the line.
        """
        if not self.changed:
            return start, end
        first = _line_of(self.starts, start)
        received_start = self.received_starts[first]
        if end <= start:
            return received_start, received_start
        last = _line_of(self.starts, end - 1)
        line_start = self.received_starts[last]
        line_end = self.received.find("\n", line_start)
        line = self.received[line_start : len(self.received) if line_end < 0 else line_end].rstrip("\r")
        redraws = "\r" in line or "\x08" in line
        return received_start, line_start + len(line if redraws else line.rstrip())

    def received_form(self, start: int, end: int) -> str:
        """The normal form of the received span that ``received_span(start, end)`` names, read from this text.

        The form is line-local, so the span's lines are this text's lines, all but the last: the received span
        may end that one before its trailing whitespace, which is left out before the line is drawn (an escape
        sequence after a space keeps the space), so only that line is drawn again.
        """
        if not self.changed:
            return self.text[start:end]
        if end <= start:
            return ""
        last = _line_of(self.starts, end - 1)
        _, received_end = self.received_span(start, end)
        drawn = normal_form(self.received[self.received_starts[last] : received_end])
        if self.text.startswith(drawn, self.starts[last], end) and self.starts[last] + len(drawn) == end:
            # The usual case: the line draws as this text holds it, and the form is one slice of this text.
            return self.text[start:end]
        return self.text[start : self.starts[last]] + drawn


def _line_of(starts: Sequence[int], position: int) -> int:
    return bisect_right(starts, position) - 1


def normalize(text: str) -> NormalText:
    """The normal form of ``text`` with the line map that places its spans in ``text``."""
    if not _has_controls(text):
        return NormalText(text, text)
    # Offsets in arrays and lines a piece at a time: a large paste's lines and their offsets as lists and tuples
    # would cost several times the paste.
    starts = array("q")
    received_starts = array("q")
    normal = ""
    normal_position = 0
    received_position = 0
    for number, piece in enumerate(line_pieces(text)):
        lines: list[str] = []
        for line in piece.split("\n"):
            rendered = _render_line(line)
            starts.append(normal_position)
            received_starts.append(received_position)
            lines.append(rendered)
            normal_position += len(rendered) + 1
            received_position += len(line) + 1
        # Grown in place (see ``_joined_growing``): the normal form is never held beside a list of its pieces.
        if number:
            normal += "\n"
        normal += "\n".join(lines)
    return NormalText(normal, text, starts, received_starts)
