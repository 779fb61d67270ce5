"""Placeholders that keep meaning: ``‹secret:aws_access_key_id#1›``, ``‹email#2›``.

One ``Redactor`` serves one paste, so the same value gets the same placeholder in
every segment of it: the model still sees that two lines used one key, or that one
address shows up across a log. Nothing of the value is kept in the placeholder;
the number counts distinct values of that kind, in order of first appearance.
"""

from __future__ import annotations

from collections import Counter

from envelopes.types import Redaction
from organs.redaction.engine import Hit, find_hits
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
        placeholder = self._placeholders.get(value)
        if placeholder is None:
            self._distinct[hit.kind] += 1
            label = hit.kind if hit.personal else f"secret:{hit.kind}"
            placeholder = f"{_OPEN}{label}#{self._distinct[hit.kind]}{_CLOSE}"
            self._placeholders[value] = placeholder
        return placeholder

    def redact(self, text: str) -> tuple[str, tuple[Redaction, ...]]:
        """``text`` with every hit replaced, and the counts per kind (the same text back when nothing matched)."""
        hits = find_hits(text, self._rules)
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
