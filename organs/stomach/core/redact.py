"""A whole paste, redacted block by block with one ``Redactor`` (so placeholders agree across blocks).

The stomach serves, counts and stores for serving only these redacted texts; the
paste as received stays under its own digest for the operator (``frames.raw``).
The redacted paste keeps the received text between blocks (whitespace), so each
block's redacted span in it is known and a frame's full text is a slice of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from envelopes.types import Redaction
from organs.redaction.pseudonyms import Redactor

__all__ = ["PasteRedaction", "describe", "redact_paste"]


class _Span(Protocol):
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...


@dataclass(frozen=True, slots=True)
class PasteRedaction:
    """Each block's text with its secrets replaced, what was replaced, and the paste put back together."""

    texts: tuple[str, ...]
    found: tuple[tuple[Redaction, ...], ...]
    # The blocks as received, where a block changed: the goal is never rewritten, so it is counted as received.
    received: tuple[str, ...]
    text: str
    spans: dict[tuple[int, int], tuple[int, int]]

    @property
    def changed(self) -> bool:
        return bool(self.received)

    def span(self, received: tuple[int, int]) -> tuple[int, int]:
        """Where the block received at ``received`` lies in the redacted paste."""
        return self.spans.get(received, received)

    def totals(self) -> dict[str, int]:
        """Kind → how many values of it were replaced in the whole paste."""
        totals: dict[str, int] = {}
        for found in self.found:
            for redacted in found:
                totals[redacted.kind] = totals.get(redacted.kind, 0) + redacted.count
        return totals


def describe(found: Sequence[Redaction]) -> str:
    """``'; redacted 2 secrets (aws_access_key_id ×2)'`` for a report's reason; empty when nothing was replaced."""
    notes = []
    for personal, what in ((False, "secret"), (True, "personal value")):
        kinds = [redacted for redacted in found if redacted.personal is personal]
        if kinds:
            total = sum(redacted.count for redacted in kinds)
            listed = ", ".join(f"{redacted.kind} ×{redacted.count}" for redacted in kinds)
            verb = "pseudonymised" if personal else "redacted"
            notes.append(f"; {verb} {total} {what}{'' if total == 1 else 's'} ({listed})")
    return "".join(notes)


def redact_paste(
    text: str,
    blocks: Sequence[_Span],
    personal: frozenset[str] = frozenset(),
    block_texts: Mapping[tuple[int, int], str] | None = None,
) -> PasteRedaction:
    """Redact every block of ``text``; a paste with nothing to redact comes back as the same string.

    ``block_texts`` holds blocks' texts the caller sliced already, by span, so a large block is not copied again.
    """
    known = block_texts or {}
    redactor = Redactor(personal)
    texts: list[str] = []
    found: list[tuple[Redaction, ...]] = []
    received: list[str] = []
    pieces: list[str] = []
    spans: dict[tuple[int, int], tuple[int, int]] = {}
    done = length = 0
    block_texts_in_order = [known.get((block.start, block.end)) or text[block.start : block.end] for block in blocks]
    # Together: a credential found in one block is replaced wherever else in the paste it occurs.
    redactions = redactor.redact_all(block_texts_in_order)
    for block, block_text, (redacted, counts) in zip(blocks, block_texts_in_order, redactions, strict=True):
        texts.append(redacted)
        found.append(counts)
        if counts:
            received.append(block_text)
        length += block.start - done
        spans[(block.start, block.end)] = (length, length + len(redacted))
        pieces += [text[done : block.start], redacted]
        length += len(redacted)
        done = block.end
    if not received:
        return PasteRedaction(tuple(texts), tuple(found), (), text, {})
    pieces.append(text[done:])
    return PasteRedaction(tuple(texts), tuple(found), tuple(received), "".join(pieces), spans)
