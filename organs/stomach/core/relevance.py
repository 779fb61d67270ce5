"""The paste as its own corpus: which of its lines answer the ask, and the budget's leftover filled with them.

* ``LineScorer`` weighs each line against the ask BM25-style, with the paste's lines as the
  documents: a term of the ask that is rare in the paste counts most, one on every line next to
  nothing. The terms are the ask's own (``organs.stomach.core.asked``: identifiers, numbers, codes,
  paths, quoted strings, content words), a plain word also found by its stem (``pauses`` finds
  ``pause``). Fused with it: what the ask compares, selected by value
  (``organs.stomach.compare``: the slowest request, every pause over 500 ms, the row that spent
  the most) and the structural salience the stomach already reads (an alert line, worth less where
  alerts are common).
* ``fill_relevant`` serves the budget's leftover: a paste over its budget whose frames left room
  unused gets, after each compact frame's rendering, that frame's best lines that the rendering
  did not show, verbatim and in paste order under one heading, the best first across the paste
  until the room is spent. The total stays within the budget, counted exactly. A paste without an
  ask (a bare log) has nothing to rank by and keeps its compact rendering.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from envelopes.types import FrameKind
from organs.accounting import count_tokens, count_tokens_many
from organs.stomach.core.asked import AskTerms, family_pattern, rarity
from organs.stomach.core.blocks.structures import written_by_user
from organs.stomach.core.compare import Comparison
from organs.stomach.core.distill.log import FILL_HEADING as LOG_FILL_HEADING
from organs.stomach.core.distill.log.display import clip
from organs.stomach.core.distill.log.masking import mask_variables
from organs.stomach.core.distill.shown import shown_lines
from organs.stomach.core.shapes.line_shapes import is_wordless
from organs.stomach.core.shapes.signals import is_alert
from organs.stomach.core.shapes.timestamps import holds_date_and_time
from organs.stomach.core.tuning import RelevanceTuning

__all__ = ["FILL_HEADING", "Fillable", "LineScorer", "fill_relevant", "scorer_for"]

FILL_HEADING = "[more of its lines, chosen for the ask, in order:]"
# The kinds whose sections are paragraphs: a trace or report, a note.
_REPORT_KINDS: frozenset[FrameKind] = frozenset({"stack_trace", "note"})


def _matcher(ask: AskTerms) -> tuple[re.Pattern[str] | None, list[str]]:
    """One alternation over every term, and the term each group stands for."""
    names: list[str] = []
    patterns: list[str] = []
    # A plain word of the ask is its stem already (``AskTerms.of``): matched at a word start, it finds every form.
    for term, kind in zip(ask.terms, ask.kinds, strict=True):
        if kind == "family":
            patterns.append(f"(?P<t{len(names)}>{family_pattern(term)})")
        else:
            start = r"(?<![a-z0-9])" if term[:1].isalnum() else ""
            end = (
                r"(?![\d])" if kind == "number" else r"(?![a-z0-9])" if kind in ("code", "identifier", "quoted") else ""
            )
            patterns.append(f"(?P<t{len(names)}>{start}{re.escape(term)}{end})")
        names.append(term)
    if not patterns:
        return None, names
    return re.compile("|".join(patterns)), names


@dataclass(slots=True)
class LineScorer:
    """Scores lines of one paste against its ask; built once per paste from all its evidence lines."""

    ask: AskTerms
    comparison: Comparison | None
    tuning: RelevanceTuning = field(default_factory=RelevanceTuning)
    _pattern: re.Pattern[str] | None = None
    _names: list[str] = field(default_factory=list)
    _idf: dict[str, float] = field(default_factory=dict)
    _mean_length: float = 1.0
    # Each distinct line's terms and how often each occurs in it, found once: a paste's lines are scored several
    # times while it is filled.
    _terms: dict[str, dict[str, int]] = field(default_factory=dict)

    @classmethod
    def of(
        cls, goal: str, texts: Sequence[str], tuning: RelevanceTuning | None = None, *, ask: AskTerms | None = None
    ) -> LineScorer:
        """The scorer of ``texts`` for ``goal``; ``ask`` is the goal's terms when the caller read them already."""
        tuning = tuning or RelevanceTuning()
        ask = AskTerms.of(goal) if ask is None else ask
        scorer = cls(ask, Comparison.of(goal, tuning), tuning)
        # Lines are weighed by rarity here, so the ask's words of trouble count too (``AskTerms.broad``).
        scorer._pattern, scorer._names = _matcher(ask.broad())
        documents = 0
        characters = 0
        frequency: dict[str, int] = {}
        for text in texts:
            for line in text.split("\n"):
                documents += 1
                characters += len(line)
                for term in scorer.terms_in(line):
                    frequency[term] = frequency.get(term, 0) + 1
        scorer._mean_length = max(characters / max(documents, 1), 1.0)
        scorer._idf = {
            term: math.log(1 + (documents - count + 0.5) / (count + 0.5)) for term, count in frequency.items()
        }
        return scorer

    def _counts(self, line: str) -> dict[str, int]:
        if self._pattern is None:
            return {}
        found = self._terms.get(line)
        if found is None:
            found = {}
            for match in self._pattern.finditer(line.lower()):
                term = self._names[int((match.lastgroup or "t0")[1:])]
                found[term] = found.get(term, 0) + 1
            self._terms[line] = found
        return found

    def terms_in(self, line: str) -> frozenset[str]:
        return frozenset(self._counts(line))

    def rarity(self, line: str) -> float:
        """The line's BM25 score against the ask, the paste's lines being the documents: a term weighs by its
        rarity and, saturating, by how often the line says it."""
        counts = self._counts(line)
        if not counts:
            return 0.0
        k1, b = self.tuning.k1, self.tuning.b
        norm = k1 * (1 - b + b * len(line) / self._mean_length)
        # fsum: the terms' order varies with the line, and a float sum with it; the score must not.
        return math.fsum(self._idf.get(term, 0.0) * count * (k1 + 1) / (count + norm) for term, count in counts.items())

    def scores(self, lines: Sequence[str], *, least: float = 0.0, wide: bool = False, odd: bool = False) -> list[float]:
        """Each line's fused score: compared value, then rarity (scaled to at most 1), then alert; then the
        context a line takes from scored neighbours. With ``least``, only lines scoring at least that much
        themselves lend context, and no other line scores. ``wide`` lets context run through a paragraph (a
        report's section), not only the nearest lines (a log's records). ``odd`` (a log's lines) raises a little
        the lines of a rare shape (``odd_share`` of the lines at most): what a log does differently is often
        what was asked, in words the ask could not know."""
        rarity = [self.rarity(line) for line in lines]
        # Scaled to the best line, or to a share of what a line holding every term of the ask found in the paste
        # would score, whichever is more: a line that holds only a word the whole paste repeats stays weak.
        top = max(max(rarity, default=0.0), math.fsum(self._idf.values()) * self.tuning.ceiling_share) or 1.0
        fused = [value / top for value in rarity]
        if self.comparison is not None:
            picked = self.comparison.pick_dated(lines)
            for rank, index in enumerate(picked):
                fused[index] += self.tuning.compared_weight - rank / (len(picked) + 1)
        if odd:
            for index in _odd_lines(lines, self.tuning):
                fused[index] += self.tuning.odd_weight
        alerts = [index for index, line in enumerate(lines) if is_alert(line)]
        alert_weight = self.tuning.alert_weight * _alert_rarity(len(alerts), len(lines), self.tuning)
        for index in alerts:
            fused[index] += alert_weight
        if wide:
            fused = _repeats_fade(fused, lines, self.tuning)
        if least:
            return _with_context(
                [score if score >= least else 0.0 for score in fused], lines, wide, self.tuning, rest=False
            )
        return _with_context(fused, lines, wide, self.tuning)


def _odd_lines(lines: Sequence[str], tuning: RelevanceTuning) -> list[int]:
    """The lines whose shape (variable fields masked, ``distill.log.masking``) few other lines share."""
    shapes = [mask_variables(line, tuning.odd_shape_chars) if line.strip() else "" for line in lines]
    counts = Counter(shapes)
    most = max(len(lines) * tuning.odd_share, 1)
    return [index for index, shape in enumerate(shapes) if shape and counts[shape] <= most]


def _alert_rarity(alerts: int, lines: int, tuning: RelevanceTuning) -> float:
    """How much an alert tells its line apart: fully while alerts are at most ``rare_alerts`` of the lines, less
    as they grow common (by BM25's idf), next to nothing when every line is one (a table of "Permission denied")."""
    if alerts <= lines * tuning.rare_alerts:
        return 1.0
    return rarity(alerts, lines) / rarity(math.ceil(lines * tuning.rare_alerts), lines)


_DIGITS = re.compile(r"0x[0-9a-f]+|\d+")


def _event_of(line: str) -> str:
    """A dated record's event: the line with its numbers masked. An undated line is its own: a counter's value is
    what it says."""
    return _DIGITS.sub("#", line.lower()) if holds_date_and_time(line) else line


def _repeats_fade(fused: list[float], lines: Sequence[str], tuning: RelevanceTuning) -> list[float]:
    """In a report (a thread dump, a crash), a scored line whose shape (digits aside) an earlier scored line had is
    a section's heading again: each repeat counts ``repeat_fade`` of the one before, down to ``repeat_floor``, so
    the leftover goes to what the first such sections hold before the headings of the rest."""
    seen: dict[str, int] = {}
    faded = list(fused)
    for index, score in enumerate(fused):
        if score <= 0:
            continue
        shape = _DIGITS.sub("#", lines[index].lower())
        repeats = seen.get(shape, 0)
        seen[shape] = repeats + 1
        faded[index] = score * max(tuning.repeat_fade**repeats, tuning.repeat_floor)
    return faded


def _with_context(
    fused: list[float], lines: Sequence[str], wide: bool, tuning: RelevanceTuning, *, rest: bool = True
) -> list[float]:
    """A line that scores nothing itself takes a share of its best scored neighbour's score, a neighbour being
    within ``context_lines`` lines, or when ``wide`` within ``paragraph_lines`` lines and no blank line between
    (the rest of a deadlock report, the header of a crashed thread); below every such line, a trace that favours
    the head: so the budget's leftover goes first to what surrounds the answers, then to the rest in order."""
    count = len(fused)
    reach = tuning.paragraph_lines if wide else tuning.context_lines
    near = [0.0] * count
    for index, score in enumerate(fused):
        if score <= 0:
            continue
        for step in (-1, 1):
            position = index + step
            # Past the nearest lines, context stays within the paragraph: a blank line crossed ends it.
            crossed = False
            while 0 <= position < count and abs(position - index) <= reach:
                crossed = crossed or not lines[position].strip()
                if abs(position - index) > tuning.context_lines and crossed:
                    break
                near[position] = max(near[position], score)
                position += step
    trace = tuning.rest_score if rest else 0.0
    return [
        score if score > 0 else near[index] * tuning.context_share if near[index] > 0 else trace * (1 - index / count)
        for index, score in enumerate(fused)
    ]


class Fillable(Protocol):
    """What filling reads and sets on a frame (the stomach's evidence record)."""

    frame_id: str
    kind: FrameKind
    text: str
    index: int
    value: int
    full_tokens: int
    compact: str | None
    compact_tokens: int


Chosen = dict[str, Literal["compact", "full", "reference"]]


def _candidates(
    item: Fillable, scorer: LineScorer, least: float, *, strong: float = 0.0
) -> list[tuple[float, int, str]]:
    """The frame's lines that its rendering does not show, scoring above ``least``: (score, index, line).
    With ``strong``, only lines that strong and their context (``LineScorer.scores``)."""
    lines = item.text.split("\n")
    # A line the rendering shows says nothing new; a line said several times (a frame every thread of a dump
    # holds) is picked once, where it scores best (under the thread the ask names, not the first one).
    shown = shown_lines(item.compact or "")
    best: dict[str, tuple[float, int]] = {}
    scores = scorer.scores(lines, least=strong, wide=item.kind in _REPORT_KINDS, odd=item.kind == "log")
    for index, (score, line) in enumerate(zip(scores, lines, strict=True)):
        clipped = clip(line, scorer.tuning.line_chars, scorer.ask)
        if (
            score > least
            and not is_wordless(line)
            and clipped.strip() not in shown
            and score > best.get(clipped, (0.0, 0))[0]
        ):
            best[clipped] = (score, index)
    # Records alike but for their numbers (their clock, a process id) are one event said again: offered a few
    # times at most, the best scoring. Those the rendering shows (an example, an earlier fill's) count.
    alike = Counter(_event_of(line) for line in shown if holds_date_and_time(line))
    offered = []
    for line, (score, index) in sorted(best.items(), key=lambda pair: (-pair[1][0], pair[1][1])):
        shape = _event_of(line)
        alike[shape] += 1
        if alike[shape] <= scorer.tuning.alike_offered:
            offered.append((score, index, line))
    return sorted(offered, key=lambda entry: entry[1])


def _render(item: Fillable, picked: list[tuple[float, int, str]], line_chars: int, ask: AskTerms) -> str:
    """The rendering with the picked lines under the heading, in paste order (with those an earlier fill added)."""
    base, heading, added = (item.compact or "").partition("\n" + FILL_HEADING + "\n")
    where = {clip(line, line_chars, ask): index for index, line in reversed(list(enumerate(item.text.split("\n"))))}
    lines = [(where.get(line, -1), line) for line in added.split("\n")] if heading else []
    lines += [(index, line) for _, index, line in picked]
    return "\n".join([base, FILL_HEADING, *(line for _, line in sorted(lines, key=lambda pair: pair[0]))])


def _ranked_want(item: Fillable, scorer: LineScorer, encoding: str) -> int:
    """The room a frame's best-ranked lines ask of its rendering, whatever their strength: lines the ask raises
    (``ranked_least``) take up to ``ranked_share`` of it, so what is served is never only structure. A log's
    alert lines are left out: its distiller quotes each distinct one already, in fewer tokens than the line."""
    tuning = scorer.tuning
    ranked = sorted(
        (
            entry
            for entry in _candidates(item, scorer, tuning.ranked_least)
            if item.kind != "log" or not is_alert(entry[2])
        ),
        key=lambda entry: -entry[0],
    )
    if not ranked:
        return 0
    cap = int(item.compact_tokens * tuning.ranked_share)
    costs = count_tokens_many([line + "\n" for _, _, line in ranked], encoding, 1)
    want = tuning.heading_tokens
    for cost in costs:
        if want + cost > cap:
            break
        want += cost
    return want if want > tuning.heading_tokens else 0


def _make_room(
    open_items: list[Fillable], scorer: LineScorer, spare: int, encoding: str, shrink: Callable[[Fillable, int], bool]
) -> None:
    """Render again smaller the frames whose strong lines (a compared value, the ask's rarest terms, and the lines
    around them) the rendering leaves out and the leftover cannot hold: up to ``reserve`` of each rendering gives
    way to them."""
    tuning = scorer.tuning
    wants: dict[int, int] = {}
    for item_index, item in enumerate(open_items):
        if LOG_FILL_HEADING in (item.compact or ""):
            # Already given the leftover as its own lines (``LogDistiller.filled``): rendering it again drops them.
            continue
        # A report's strong lines come with their section; a log's records stand alone.
        if item.kind in _REPORT_KINDS:
            strong = [line for _, _, line in _candidates(item, scorer, 0.0, strong=tuning.strong)]
        else:
            strong = [line for score, _, line in _candidates(item, scorer, tuning.strong) if score >= tuning.strong]
        want = 0
        if strong:
            cost = sum(count_tokens_many([line + "\n" for line in strong], encoding, 1)) + tuning.heading_tokens
            reserve = tuning.tight_reserve if item.compact_tokens < tuning.tight_tokens else tuning.reserve
            want = min(cost, int(item.compact_tokens * reserve))
        want = max(want, _ranked_want(item, scorer, encoding))
        if want:
            wants[item_index] = want
    short = sum(wants.values()) - spare
    if short <= 0:
        return
    total = sum(wants.values())
    for item_index, want in wants.items():
        item = open_items[item_index]
        give = math.ceil(short * want / total)
        if give > 0:
            shrink(item, item.compact_tokens - give)


def scorer_for(
    items: Sequence[Fillable],
    chosen: Chosen,
    goal: str,
    tuning: RelevanceTuning | None = None,
    *,
    ask: AskTerms | None = None,
) -> LineScorer | None:
    """The paste's scorer when filling can serve anything: a frame served compact, and an ask to rank by."""
    if not any(chosen[item.frame_id] == "compact" and item.compact is not None for item in items):
        return None
    tuning = tuning or RelevanceTuning()
    if sum(len(item.text) for item in items) > tuning.max_chars:
        return None
    # Without an ask there is nothing to rank by: the rendering stays what compression made it.
    ask = AskTerms.of(goal) if ask is None else ask
    if not ask and Comparison.of(goal, tuning) is None:
        return None
    return LineScorer.of(goal, [item.text for item in items], tuning, ask=ask)


def fill_relevant(
    items: Sequence[Fillable],
    chosen: Chosen,
    budget: int,
    encoding: str,
    scorer: LineScorer,
    served: Callable[[Fillable, str], int],
    shrink: Callable[[Fillable, int], bool] | None = None,
) -> None:
    """Fill what the budget has left with each compact frame's most relevant unshown lines (module docstring).

    With ``shrink``, a log takes only lines the ask raises (its terms, what it compares; an alert alone is not
    enough), and frames make room for their strong lines first: the log's leftover is then the log distiller's
    to fill with its own excerpt, which knows its alerts.
    Without it, every line may be taken, in the fused order, until the room is spent.
    """
    tuning = scorer.tuning
    if shrink is not None:
        _keep_short_whole(items, chosen, budget, served, shrink, tuning)
    open_items = [item for item in items if chosen[item.frame_id] == "compact" and item.compact is not None]
    if shrink is not None:
        _make_room(open_items, scorer, budget - _total(items, chosen, served), encoding, shrink)
    spare = budget - _total(items, chosen, served)
    if spare < tuning.min_room:
        return
    pool = [(score, item_index, index, line) for item_index, item in enumerate(open_items)
            for score, index, line in _candidates(item, scorer, _least_for(item, tuning, logs_raised=bool(shrink)))
            ]  # fmt: skip
    if not pool:
        return
    pool.sort(key=lambda entry: (-entry[0], entry[1], entry[2]))
    costs = count_tokens_many([entry[3] + "\n" for entry in pool], encoding, 1)
    heading = count_tokens(FILL_HEADING + "\n", encoding)
    room = spare
    for _ in range(tuning.fit_rounds):
        taken: dict[int, list[tuple[float, int, str]]] = {}
        used = 0
        # A compact rendering stays smaller than its whole text (else the whole text would be served).
        grown = dict.fromkeys(range(len(open_items)), 0)
        for (score, item_index, index, line), cost in zip(pool, costs, strict=True):
            item = open_items[item_index]
            extra = cost + (heading if item_index not in taken and FILL_HEADING not in (item.compact or "") else 0)
            if (
                used + extra > room
                or item.compact_tokens + grown[item_index] + extra >= item.full_tokens - tuning.slack_tokens
            ):
                continue
            taken.setdefault(item_index, []).append((score, index, line))
            used += extra
            grown[item_index] += extra
        renderings = {
            item_index: _render(open_items[item_index], picked, tuning.line_chars, scorer.ask)
            for item_index, picked in taken.items()
        }
        counted = count_tokens_many(list(renderings.values()), encoding, 1) if renderings else []
        growth = sum(
            tokens - open_items[item_index].compact_tokens
            for item_index, tokens in zip(renderings, counted, strict=True)
        )
        fits = all(
            tokens < open_items[item_index].full_tokens for item_index, tokens in zip(renderings, counted, strict=True)
        )
        if growth <= spare and fits:
            for (item_index, rendering), tokens in zip(renderings.items(), counted, strict=True):
                open_items[item_index].compact, open_items[item_index].compact_tokens = rendering, tokens
            return
        # Counted apart, lines cost a little less or more than together: ask again with less room.
        room -= max(growth - spare, 0) + tuning.slack_tokens


def _least_for(item: Fillable, tuning: RelevanceTuning, *, logs_raised: bool) -> float:
    """The score a frame's line must pass to be offered: a log's, when the log distiller fills it after, must be
    raised by the ask (an alert alone is not enough)."""
    return tuning.alert_weight if logs_raised and item.kind == "log" else 0.0


def _keep_short_whole(
    items: Sequence[Fillable], chosen: Chosen, budget: int, served: Callable[[Fillable, str], int],
    shrink: Callable[[Fillable, int], bool], tuning: RelevanceTuning,
) -> None:  # fmt: skip
    """The user's own prose (a short note written to the reader, ``structures.written_by_user``, up to
    ``user_words_share`` of the budget) and a short code snippet (up to ``snippet_share``) are not served cut:
    what the whole text lacks is taken from the largest compact frame, rendered again smaller. (A budget too
    small for it still makes it a reference, whole on request.)"""
    for item in items:
        if chosen[item.frame_id] != "compact":
            continue
        users_words = item.kind == "note" and item.full_tokens <= budget * tuning.user_words_share
        # A short snippet of code (the plugin line of a build file) cut to a few tokens says nothing: whole, or not.
        snippet = item.kind == "code" and item.full_tokens <= budget * tuning.snippet_share
        if not (snippet or (users_words and written_by_user(item.text))):
            continue
        need = item.full_tokens - served(item, chosen[item.frame_id]) - (budget - _total(items, chosen, served))
        donors = [other for other in items if other is not item and chosen[other.frame_id] == "compact"]
        donor = max(donors, key=lambda other: other.compact_tokens, default=None)
        if need > 0 and (
            donor is None
            or donor.compact_tokens - need < tuning.smallest_donor
            or not shrink(donor, donor.compact_tokens - need)
        ):
            continue
        if _total(items, chosen, served) - served(item, chosen[item.frame_id]) + item.full_tokens <= budget:
            chosen[item.frame_id] = "full"


def _total(items: Sequence[Fillable], chosen: Chosen, served: Callable[[Fillable, str], int]) -> int:
    return sum(served(item, chosen[item.frame_id]) for item in items)
