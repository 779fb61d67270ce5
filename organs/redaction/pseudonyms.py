"""Placeholders that keep meaning: ``‹secret:aws_access_key_id#1›``, ``‹email#2›``.

One ``Redactor`` serves one paste, so the same value gets the same placeholder in
every segment of it: the model still sees that two lines used one key, or that one
address shows up across a log. Nothing of the value is kept in the placeholder;
the number counts distinct values of that kind, in order of first appearance.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence

from envelopes.types import Redaction
from organs.redaction.engine import Hit, find_hits
from organs.redaction.normal import normal_form
from organs.redaction.rules import PERSONAL_RULES, SECRET_RULES, Rule

__all__ = ["REDACT_VARIABLE", "Redactor", "parse_personal", "rules_for"]

REDACT_VARIABLE = "ICHOR_REDACT"
_OPEN, _CLOSE = "‹", "›"


def parse_personal(value: str | None) -> frozenset[str]:
    """The personal-data categories a comma-separated ``ICHOR_REDACT`` value opts into."""
    if not value or not value.strip() or value.strip().lower() == "none":
        return frozenset()
    words = {word.strip().lower() for word in value.split(",") if word.strip()}
    known = {rule.category for rule in PERSONAL_RULES}
    unknown = sorted(words - known)
    if unknown:
        raise ValueError(
            f"{REDACT_VARIABLE}={value!r}: unknown {', '.join(unknown)}; use a comma-separated subset of "
            f"{','.join(sorted(str(category) for category in known))}, or none"
        )
    return frozenset(words)


def rules_for(personal: frozenset[str]) -> tuple[Rule, ...]:
    return SECRET_RULES + tuple(rule for rule in PERSONAL_RULES if rule.category in personal)


class Redactor:
    """Replaces what the rules find with placeholders, consistently across every text it is given."""

    def __init__(self, personal: frozenset[str] = frozenset()) -> None:
        self._rules = rules_for(personal)
        self._placeholders: dict[str, str] = {}
        self._distinct: Counter[str] = Counter()

    def _placeholder(self, value: str, hit: Hit) -> str:
        # The same value however it was disguised (a zero-width space, fullwidth letters): one placeholder.
        value = normal_form(value).text
        placeholder = self._placeholders.get(value)
        if placeholder is None:
            self._distinct[hit.kind] += 1
            label = hit.kind if hit.personal else f"secret:{hit.kind}"
            placeholder = f"{_OPEN}{label}#{self._distinct[hit.kind]}{_CLOSE}"
            self._placeholders[value] = placeholder
        return placeholder

    def redact(self, text: str) -> tuple[str, tuple[Redaction, ...]]:
        """``text`` with every hit replaced, and the counts per kind (the same text back when nothing matched)."""
        return self._replace(text, find_hits(text, self._rules))

    def redact_all(self, texts: Sequence[str]) -> list[tuple[str, tuple[Redaction, ...]]]:
        """Each of ``texts`` redacted, and every credential found in one of them replaced wherever else it occurs:
        one value, one placeholder, in every text, whether or not its context gives it away there."""
        found = [find_hits(text, self._rules) for text in texts]
        values = {
            text[hit.start : hit.end]: hit.kind
            for text, hits in zip(texts, found, strict=True)
            for hit in hits
            if not hit.personal and hit.end - hit.start >= _LEAST_REPEATED
        }
        return [self._replace(text, _with_repeats(text, hits, values)) for text, hits in zip(texts, found, strict=True)]

    def _replace(self, text: str, hits: list[Hit]) -> tuple[str, tuple[Redaction, ...]]:
        if not hits:
            return text, ()
        pieces: list[str] = []
        done = 0
        for hit in hits:
            pieces += [text[done : hit.start], self._placeholder(text[hit.start : hit.end], hit)]
            done = hit.end
        pieces.append(text[done:])
        counts = Counter((hit.kind, hit.personal) for hit in hits)
        return "".join(pieces), tuple(Redaction(kind, count, personal) for (kind, personal), count in counts.items())


# A credential this long found once is replaced wherever else it occurs; a shorter one could be a common word.
_LEAST_REPEATED = 8


def _with_repeats(text: str, hits: list[Hit], values: dict[str, str]) -> list[Hit]:
    """``hits`` with every other occurrence in ``text`` of the known credential ``values`` (where no hit stands)."""
    repeats = []
    for value, kind in values.items():
        at = text.find(value)
        while at != -1:
            repeats.append(Hit(at, at + len(value), kind, False))
            at = text.find(value, at + len(value))
    if not repeats:
        return hits
    kept = list(hits)
    for repeat in sorted(repeats, key=lambda hit: (hit.start, -len(hit))):
        place = bisect.bisect_right([hit.start for hit in kept], repeat.start)
        if place and kept[place - 1].end > repeat.start:
            continue
        if place < len(kept) and kept[place].start < repeat.end:
            continue
        kept.insert(place, repeat)
    return kept
