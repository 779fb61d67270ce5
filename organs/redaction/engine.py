"""Finding what the rules match in a text, and choosing which matches to replace.

The pre-filter lower-cases the text once and finds every rule's keywords in one
Aho-Corasick pass; a rule's pattern then runs only over the lines that hold one of
its keywords, each line once. A PEM private key spans lines, so its header is found
like any match and the engine extends it over the key's body to its footer.
Overlapping matches are resolved by position: credentials first (the earliest,
then the longest, then the rule listed first), then personal data where no
credential stands.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import ahocorasick_rs

from organs.redaction.normal import normal_form
from organs.redaction.rules import PRIVATE_KEY_KIND, SECRET_RULES, Rule
from organs.redaction.shapes import shape_hits
from organs.text_views import line_pieces

__all__ = ["Hit", "find_hits", "holds_keyword"]

# A key's body: base64, whitespace, JSON's escaped line breaks and the header lines of an encrypted key,
# up to (not into) the next run of five dashes.
_PEM_BODY = re.compile(r"(?:\\n|[\w\s+/=:,.]|-(?!--|-*[ \t]?END\b))*")
_PEM_FOOTER = re.compile(r"(?i)-{3,6}[ \t]?END[ A-Z0-9_]{0,40}PRIVATE[ _]{0,3}KEY(?:[ _]BLOCK)?[ \t]?-{3,6}")


@dataclass(frozen=True, slots=True)
class Hit:
    start: int
    end: int
    kind: str
    personal: bool

    def __len__(self) -> int:
        return self.end - self.start


@lru_cache(maxsize=8)
def _automata(keywords: tuple[str, ...]) -> tuple[ahocorasick_rs.BytesAhoCorasick | None, ahocorasick_rs.AhoCorasick]:
    """Automata that find every keyword in one pass: over ``str``, and over ASCII bytes (several times faster)
    when every keyword is ASCII."""
    over_bytes = None
    if all(keyword.isascii() for keyword in keywords):
        encoded = [keyword.encode("ascii") for keyword in keywords]
        over_bytes = ahocorasick_rs.BytesAhoCorasick(encoded, implementation=ahocorasick_rs.Implementation.DFA)
    return over_bytes, ahocorasick_rs.AhoCorasick(list(keywords))


def _keyword_matches(lowered: str, keywords: tuple[str, ...], *, overlapping: bool) -> list[tuple[int, int, int]]:
    """(keyword index, start, end) of the keywords in ``lowered``, in one pass."""
    over_bytes, over_text = _automata(keywords)
    if over_bytes is not None and lowered.isascii():
        # ASCII: byte offsets are character offsets, and the byte automaton is several times faster.
        return over_bytes.find_matches_as_indexes(lowered.encode("ascii"), overlapping=overlapping)
    return over_text.find_matches_as_indexes(lowered, overlapping=overlapping)


class _Lines:
    """The lines of one text that hold each keyword, found for every keyword in one pass over the text.

    One Aho-Corasick pass finds every occurrence of every keyword at once, where a
    search per keyword would read the whole text once each (about 30 times).
    """

    def __init__(self, text: str, keywords: tuple[str, ...]) -> None:
        self._found: dict[str, dict[int, int]] = {keyword: {} for keyword in keywords}
        if not keywords:
            return
        # A piece of whole lines at a time: no keyword spans a line, and a lower-cased copy and its bytes of the
        # whole of a large paste would cost twice its size.
        offset = 0
        for piece in line_pieces(text):
            lowered = piece.lower()
            if len(lowered) != len(piece):
                # Lower-casing can change the length (U+0130 becomes two characters): positions would not line
                # up, so a keyword found anywhere then makes the whole text one line.
                self._found = {keyword: {} for keyword in keywords}
                self._whole_text_found(text.lower(), len(text), keywords)
                return
            self._find(lowered, offset, keywords)
            offset += len(piece) + 1

    def _find(self, lowered: str, offset: int, keywords: tuple[str, ...]) -> None:
        """The lines of ``lowered`` (which starts at ``offset`` in the text) holding each keyword."""
        matches = _keyword_matches(lowered, keywords, overlapping=True)
        # Matches come in order of position, many on one line: its bounds are looked up once per line, not once
        # per match (a long line full of keywords made that quadratic).
        line_start = line_end = -1
        for which, position, _ in matches:
            if not line_start <= position < line_end:
                line_start = lowered.rfind("\n", 0, position) + 1
                end = lowered.find("\n", position)
                line_end = len(lowered) if end == -1 else end
            self._found[keywords[which]][offset + line_start] = offset + line_end

    def _whole_text_found(self, lowered: str, length: int, keywords: tuple[str, ...]) -> None:
        """Every keyword found in ``lowered`` marks the whole text (``length`` characters) as its one line."""
        for which, _, _ in _keyword_matches(lowered, keywords, overlapping=True):
            self._found[keywords[which]][0] = length

    def keywords_found(self) -> list[str]:
        """The keywords that occur (most texts hold none, and then no rule needs a look)."""
        return [keyword for keyword, lines in self._found.items() if lines]

    def holding(self, keywords: tuple[str, ...]) -> list[tuple[int, int]]:
        """The ``[start, end)`` of every line that holds one of ``keywords``, each line once, in order."""
        found = [lines for lines in map(self._found.__getitem__, keywords) if lines]
        if len(found) <= 1:
            return sorted(found[0].items()) if found else []
        merged: dict[int, int] = {}
        for lines in found:
            merged.update(lines)
        return sorted(merged.items())


def _private_keys(text: str, lines: list[tuple[int, int]], rule: Rule) -> Iterable[Hit]:
    """Each PEM private key from its header through its footer, or through its body when the paste cut it short."""
    covered = 0
    for start, end in lines:
        for header in rule.pattern.finditer(text, start, end):
            if header.start() < covered:
                continue
            body = _PEM_BODY.match(text, header.end())
            assert body is not None  # the body pattern matches the empty string
            footer = _PEM_FOOTER.match(text, body.end())
            covered = footer.end() if footer else body.end()
            yield Hit(header.start(), covered, rule.id, False)


@lru_cache(maxsize=8)
def _keywords(rules: tuple[Rule, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(keyword for rule in rules for keyword in rule.keywords))


def holds_keyword(text: str, rules: tuple[Rule, ...]) -> bool:
    """Whether any of the rules' keywords occurs in ``text``: where none does, no rule can match."""
    keywords = _keywords(rules)
    if not keywords:
        return False
    return bool(_keyword_matches(text.lower(), keywords, overlapping=False))


@lru_cache(maxsize=8)
def _rules_by_keyword(rules: tuple[Rule, ...]) -> dict[str, tuple[int, ...]]:
    """Each keyword's rules, by their place in ``rules``."""
    places: dict[str, list[int]] = {}
    for order, rule in enumerate(rules):
        for keyword in rule.keywords:
            places.setdefault(keyword, []).append(order)
    return {keyword: tuple(orders) for keyword, orders in places.items()}


def _candidates(text: str, rules: tuple[Rule, ...]) -> Iterable[tuple[int, Hit]]:
    found = _Lines(text, _keywords(rules))
    # Only the rules one of whose keywords occurs, in their order: most texts hold one or two keywords of forty.
    by_keyword = _rules_by_keyword(rules)
    for order in sorted({order for keyword in found.keywords_found() for order in by_keyword[keyword]}):
        rule = rules[order]
        lines = found.holding(rule.keywords)
        if rule.id == PRIVATE_KEY_KIND:
            yield from ((order, hit) for hit in _private_keys(text, lines, rule))
            continue
        for start, end in lines:
            for match in rule.pattern.finditer(text, start, end):
                value = match.group("secret")
                if value and rule.accepts(value):
                    yield order, Hit(match.start("secret"), match.end("secret"), rule.id, rule.category is not None)


def _shape_candidates(text: str, rules: tuple[Rule, ...]) -> Iterable[tuple[int, Hit]]:
    """Credentials found by their shape (``organs.redaction.shapes``), ranked after every rule's."""

    def inner(decoded: str) -> list[str]:
        return [hit.kind for hit in _select(_candidates(decoded, rules)) if not hit.personal]

    return ((len(rules), Hit(start, end, kind, False)) for start, end, kind in shape_hits(text, inner))


def _select(candidates: Iterable[tuple[int, Hit]]) -> list[Hit]:
    """Non-overlapping hits in order of position: credentials first (earliest, longest, first rule), then personal."""
    ranked = sorted(candidates, key=lambda pair: (pair[1].personal, pair[1].start, -len(pair[1]), pair[0]))
    starts: list[int] = []
    kept: list[Hit] = []
    for _, hit in ranked:
        place = bisect.bisect_right(starts, hit.start)
        if place and kept[place - 1].end > hit.start:
            continue
        if place < len(kept) and kept[place].start < hit.end:
            continue
        starts.insert(place, hit.start)
        kept.insert(place, hit)
    return kept


def find_hits(text: str, rules: tuple[Rule, ...]) -> list[Hit]:
    """What to replace in ``text``: non-overlapping hits in order of position, as spans of the text received.

    The rules match on the text's normal form (``organs.redaction.normal``); with the secret rules,
    credentials known by their shape are found too.
    """
    form = normal_form(text)
    candidates: Iterable[tuple[int, Hit]] = _candidates(form.text, rules)
    if rules and rules[0] is SECRET_RULES[0]:
        candidates = [*candidates, *_shape_candidates(form.text, rules)]
    hits = _select(candidates)
    if form.origins is None:
        return hits
    return [Hit(*form.span(hit.start, hit.end), hit.kind, hit.personal) for hit in hits]
