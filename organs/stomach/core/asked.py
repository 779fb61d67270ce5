"""The ask's terms: what of the user's question can be looked for in the evidence.

``AskTerms.of(goal)`` pulls out the ask's numbers (two digits or more, or with a
decimal point), codes (``E0277``, ``0x1f``, ``ORA-00942``), code families (a capital letter or
up to four, standing alone: ``bugbear (B) findings`` asks for ``B006``, ``B028``), identifiers (snake_case,
CamelCase, dotted names, paths, ``name()`` calls), quoted strings and content
words (three letters or more, not a stop word, not a word every log and every
question is full of such as ``error`` or ``why``). ``hits(line)`` says how many
distinct terms occur in a line, case-blind. ``broad()`` adds the ask's words of trouble
(``problem``, ``failed``) for a ranking that weighs terms by their rarity in the paste. What the ask opens a
clause by setting aside ("Ignoring the TS4114 ones, which files fail?") gives no terms: its lines are what the
user has already looked at.

It runs over every line of multi-megabyte logs, so a line is lowered once and
each term is a substring test; a term's boundaries are checked only on a hit. Numbers match only where no digit
touches them (``404`` is not in ``14045``); words match at a word start, so
``connect`` finds ``connection`` but ``port`` does not find ``report``; a word is looked for by its stem
(``deferred`` finds ``deferring``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from organs.stomach.core.tuning import AskTuning

__all__ = ["AskTerms", "family_pattern", "rarity", "set_aside"]

_QUOTED = re.compile(r"\"([^\"\n]{2,120})\"|'([^'\n]{2,120})'|`([^`\n]{2,120})`|“([^”\n]{2,120})”")
# One token of the ask: a run of word characters with the joiners identifiers use inside them.
_TOKEN = re.compile(r"[\w$#@~-]+(?:[./:\\][\w$#@~-]+)*(?:\(\))?", re.UNICODE)
# Where a compound of words joins them: a word's hyphens and slashes (an identifier's hyphens only).
_COMPOUND = re.compile(r"[-/]")
_NUMBER = re.compile(r"\d{2,}(?:\.\d+)*|\d+\.\d+(?:\.\d+)*")
_CODE = re.compile(r"0x[0-9a-fA-F]+|[A-Za-z]{1,8}-?\d{2,}[A-Za-z0-9]*|\d+[A-Za-z]+\d*")
# A code family named by its letters alone; a lone ``A`` or ``I`` is read as one only in brackets or quotes.
_FAMILY = re.compile(r"(?<![\w.-])([(\[\"'`]?)([A-Z]{1,4})[)\]\"'`]?(?![\w.-])")
_ARTICLES = frozenset({"A", "I"})
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]{2,}")
# Words of every question and every log: they would raise nearly any line.
_STOP_TEXT = """
    a about above after again against all also am an and any anything are aren as at be because been before
    being below besides between both but by can cannot could did didn do does doesn doing don down during each
    either else even ever every few for from further get gets getting got had has hasn have haven having he her
    here hers him his how however i if in into is isn it its itself just keep keeps know let like may me might
    more most much must my myself need needs no nor not now of off on once one only or other our ours out over
    own please same seem seems seeing shall she should so some someone something still such than thank thanks that
    the their theirs them then there these they this those though through to too try tried trying under until up
    us very want wants was wasn way we were weren what whatever when where whether which while who whom whose why
    will with within without won would yet you your yours yourself
    actually again already always another anyway around certain really sure tell told thing things what's i'm
    ask asked explain mean means meaning say says said supposed see show shows shown look looks looking
    happen happens happened happening going went come comes came make makes made work works working worked
    fix fixed fixing help return returns returned give gives gave
    problem problems issue issues wrong right first last new old same different other why's where's
    error errors fail fails failed failing failure failures warning warnings log logs line lines output file
    files code run runs running ran here's this's it's there's
"""
_STOP_WORDS = frozenset(_STOP_TEXT.split())
# Of those, the words that say something went wrong, by their stems: on most lines of one log, on few of another.
# Where the paste weighs each term by its rarity (an excerpt, the fill), they are terms too: a "problem" the ask
# speaks of may be the one line of the log that says "a network problem".
_TROUBLE_STEMS = {
    "problem": "problem", "problems": "problem", "issue": "issue", "issues": "issue", "wrong": "wrong",
    "error": "error", "errors": "error", "fail": "fail", "fails": "fail", "failed": "fail", "failing": "fail",
    "failure": "fail", "failures": "fail", "warning": "warn", "warnings": "warn", "different": "differ",
}  # fmt: skip
_WORDS = re.compile(r"[a-z]+")
_LETTERS_RUN = re.compile(r"[A-Za-z]{3}")
# What the ask sets aside ("leaving out the /user/events polling, which request was slowest?"): from the cue to the
# end of its clause. A line holding its terms answers no comparison.
_SET_ASIDE = re.compile(
    r"\b(?:leaving out|leave out|excluding|exclude|except for|ignoring|ignore|other than|apart from|aside from"
    r"|not counting|setting aside|leaving aside|(?:don't|do not|dont) care about|not interested in)\b"
    r"([^,;.?!\n]{1,120})",
    re.IGNORECASE,
)


# A cue opens a clause where it starts the ask or follows a stop or "and"/"but": "why is it ignoring my config"
# asks about the config, "Ignoring the warnings, why …" does not.
_CLAUSE_OPENING = re.compile(r"(?:^|[.,;:!?()\u2014\u2013-]|\b(?:and|but))\s*$", re.IGNORECASE)


def _without_opening_asides(goal: str) -> str:
    """The goal without the clauses it opens by setting them aside."""
    kept, at = [], 0
    for match in _SET_ASIDE.finditer(goal):
        if _CLAUSE_OPENING.search(goal, 0, match.start()) is not None:
            kept.append(goal[at : match.start()])
            at = match.end()
    return " ".join([*kept, goal[at:]]) if kept else goal


def set_aside(goal: str) -> tuple[str, str]:
    """The goal without the clauses it sets aside, and those clauses joined (empty when it sets none aside)."""
    spans = [match.group(1) for match in _SET_ASIDE.finditer(goal)]
    if not spans:
        return goal, ""
    return _SET_ASIDE.sub(" ", goal), " ".join(spans)


def _kind_of(token: str, min_word_chars: int) -> str | None:
    """``number``, ``code``, ``identifier`` or ``word`` for one token of the ask; None when it names nothing."""
    bare = token.removesuffix("()").strip("-.:~")
    if not any(character.isalnum() for character in bare):
        return None
    if _NUMBER.fullmatch(bare):
        return "number"
    if _CODE.fullmatch(bare):
        return "code"
    if bare != token or any(joiner in bare for joiner in "_./\\:$#@") or _CAMEL.search(bare):
        return "identifier"
    if bare.isdigit() or len(bare) < min_word_chars or bare.lower() in _STOP_WORDS:
        return None
    return "word"


def _terms_of(text: str, tuning: AskTuning) -> Iterator[tuple[str, str, str]]:
    """Each token of ``text`` that names something, as its term (a word by its stem), its kind and the token."""
    for match in _TOKEN.finditer(text):
        token = match.group()
        kind = _kind_of(token, tuning.min_word_chars)
        if kind is None:
            continue
        term = token.removesuffix("()") if kind == "identifier" else token.strip("-.:~")
        term = term.rstrip(".:?!,;").lower()
        if kind == "word":
            term = _stem_of(term, tuning.min_stem)
        if tuning.min_term_chars <= len(term) <= tuning.max_term_chars:
            yield term, kind, token


def _pattern_of(term: str, kind: str) -> str:
    escaped = re.escape(term)
    if kind == "number":
        return rf"(?<![\d.]){escaped}(?!\d)"
    if kind == "family":
        return family_pattern(term)
    start = r"(?<!\w)" if term[:1].isalnum() else ""
    if kind == "word":
        # A word also starts a part of a snake_case name (``policy`` in ``disk_failure_policy``).
        return r"(?<![^\W_])" + escaped
    end = r"(?![a-z0-9])" if term[-1:].isalnum() else ""
    return start + escaped + end


_STEM_SUFFIXES = ("ing", "ies", "ed", "es", "s")
# A plain word's last letter that its other forms replace (``expire``, ``expiring``; ``retry``, ``retries``); a
# compound keeps it, its parts being stemmed each.
_STEM_ENDINGS = ("e", "y")


def _stem_of(word: str, min_stem: int) -> str:
    """The word without its first inflection suffix that leaves at least ``min_stem`` letters (``deferred`` is
    ``deferr``, ``pages`` is ``page``, ``policies`` is ``polic``, ``expire`` is ``expir``, ``retry`` is ``retr``):
    a word matches at a word start, so its stem finds every form of it (``expiring``, ``retries``)."""
    for suffix in _STEM_SUFFIXES + (_STEM_ENDINGS if word.isalpha() else ()):
        if word.endswith(suffix) and len(word) - len(suffix) >= min_stem:
            return word[: -len(suffix)]
    return word


def rarity(holding: int, total: int) -> float:
    """How much a term of the ask tells apart what holds it: BM25's idf of a term held by ``holding`` of ``total``
    lines or templates (near 0 for a term nearly all of them hold)."""
    return math.log(1 + (total - holding + 0.5) / (holding + 0.5))


def family_pattern(term: str) -> str:
    """A code of the family: its letters, then two digits or more, as a whole word (``b`` finds ``b028``).

    Letters standing alone in the ask may also be a value itself (a state in a table, ``WY``; a collector,
    ``GC``): two letters or more also find themselves as a whole word. A lone letter does not, it is too common.
    """
    digits = r"\d{2,}" if len(term) < 2 else r"(?:\d{2,})?"
    return rf"(?<![a-z0-9]){re.escape(term)}{digits}(?![a-z0-9])"


def _families(goal: str) -> list[str]:
    families = []
    for match in _FAMILY.finditer(goal):
        bracket, letters = match.groups()
        if letters in _ARTICLES and not bracket:
            continue
        families.append(letters.lower())
    return families


@dataclass(frozen=True, slots=True)
class AskTerms:
    """The lowercase terms of an ask, longest first, with their kinds and boundary checks."""

    terms: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    # Per term: None when a plain substring test decides, else the pattern that checks its boundaries.
    _bounded: tuple[re.Pattern[str] | None, ...] = field(default=(), repr=False, compare=False)
    # The ask's words of trouble (``_TROUBLE_STEMS``), for ``broad``.
    trouble: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def of(cls, goal: str, tuning: AskTuning | None = None) -> AskTerms:
        tuning = tuning or AskTuning()
        goal = _without_opening_asides(goal[: tuning.goal_chars])
        found: dict[str, str] = {}
        for match in _QUOTED.finditer(goal):
            quoted = next(group for group in match.groups() if group is not None).strip().lower()
            # Quoted, a short name is meant (``'fs'``, ``"id"``): it is a term however short, matched as a whole.
            if len(quoted) >= tuning.min_term_chars and quoted not in _STOP_WORDS:
                found.setdefault(quoted, "quoted")
        for term, kind, _ in _terms_of(goal, tuning):
            found.setdefault(term, kind)
        for family in _families(goal):
            found.setdefault(family, "family")
        # A compound of words (day-mode, network-online, sunrise/sunset) is written apart as often as joined: each
        # of its words is a term too, after every other term (a long ask's cap keeps the ask's own words first). A
        # path's parts (api/orders, an identifier) are not: they would count one mention of it as several.
        for term, kind in list(found.items()):
            parts = _COMPOUND.split(term) if kind == "word" else term.split("-")
            if len(parts) > 1 and all(part.isalpha() for part in parts):
                for part in parts:
                    if len(part) >= tuning.min_word_chars and part not in _STOP_WORDS:
                        found.setdefault(_stem_of(part, tuning.min_stem), "word")
        trouble = tuple(
            dict.fromkeys(_TROUBLE_STEMS[word] for word in _WORDS.findall(goal.lower()) if word in _TROUBLE_STEMS)
        )
        return cls._made(list(found.items())[: tuning.max_terms], trouble)

    @classmethod
    def _made(cls, found: list[tuple[str, str]], trouble: tuple[str, ...] = ()) -> AskTerms:
        ordered = sorted(found, key=lambda pair: -len(pair[0]))
        bounded = tuple(
            None if pattern == re.escape(term) else re.compile(pattern)
            for term, kind in ordered
            for pattern in (_pattern_of(term, kind),)
        )
        return cls(tuple(term for term, _ in ordered), tuple(kind for _, kind in ordered), bounded, trouble)

    @classmethod
    def echoed(cls, lines: Sequence[str], tuning: AskTuning | None = None, most: int = 64) -> AskTerms:
        """The words and identifiers of the paste's alert lines (``lines``), at most ``most`` of them in order:
        what one block says went wrong, to look for in another (a log's failing call among a dump's threads)."""
        tuning = tuning or AskTuning()
        found: dict[str, str] = {}
        for line in lines:
            for term, kind, token in _terms_of(line[: tuning.max_term_chars * 4], tuning):
                # A stamp, a clock or an id (2026-12-07, 10:02, 63a89b00) names no thing to look for elsewhere.
                if kind in ("word", "identifier") and _LETTERS_RUN.search(token) is not None:
                    found.setdefault(term, kind)
                    if len(found) >= most:
                        return cls._made(list(found.items()))
        return cls._made(list(found.items()))

    def with_context(self, texts: Sequence[str], tuning: AskTuning | None = None) -> AskTerms:
        """These terms and the names the user's own prose around the evidence gives (``texts``): its identifiers and
        codes (``XZ_OPT``, ``-T0``, ``E0432``), at most ``context_terms`` of them, read from each text's first
        ``goal_chars``. A user who says what they set, ran or saw names what the evidence should be searched for,
        though the question sentence does not repeat it."""
        tuning = tuning or AskTuning()
        own = dict(zip(self.terms, self.kinds, strict=True))
        names = (
            (term, kind)
            for text in texts
            for term, kind, _ in _terms_of(text[: tuning.goal_chars], tuning)
            if kind in ("identifier", "code") and term not in own
        )
        lent: dict[str, str] = {}
        for term, kind in names:
            if len(lent) >= tuning.context_terms:
                break
            lent.setdefault(term, kind)
        return AskTerms._made([*own.items(), *lent.items()], self.trouble) if lent else self

    def broad(self) -> AskTerms:
        """These terms and the ask's words of trouble: for a ranking that weighs each term by its rarity."""
        if not self.trouble:
            return self
        extra = [(stem, "word") for stem in self.trouble if stem not in self.terms]
        return AskTerms._made([*zip(self.terms, self.kinds, strict=True), *extra])

    def __bool__(self) -> bool:
        return bool(self.terms)

    def hits(self, line: str) -> int:
        """How many distinct terms of the ask occur in ``line`` (0 for none)."""
        return len(self.named(line)) if self.terms else 0

    def named(self, line: str) -> tuple[str, ...]:
        """The terms of the ask that occur in ``line``, longest first: what a kept line says it was kept for."""
        if not self.terms:
            return ()
        lowered = line.lower()
        # A substring test first: it rejects nearly every line at C speed; boundaries are checked only on a hit.
        return tuple(
            term
            for term, bounded in zip(self.terms, self._bounded, strict=True)
            if term in lowered and (bounded is None or bounded.search(lowered) is not None)
        )
