"""Pieces: what a log's templates rendering holds, in which order, and how it is laid out.

Each shown template gets its line before any template gets extras (but the first
alert templates, those holding the ask's terms and those that make up a twentieth
of the log have their real line right after their own; the log's last lines are
listed under ``last lines:``; a crash the log holds comes first): then real example
lines, then distinct alert lines (whole after the clock, lines that differ only in
digits counted as one and spelled as last said) with their repeat counts. When not
every template line fits, templates that begin with the same tag (the leading words
up to one ending in ``:``, such as a process ``kernel[0]:``) are listed together
under a ``§ tag`` heading, each indented and without the tag, as the legend then
says. Template lines are spelled out only when the fit reaches them
(``organs.stomach.core.distill.log.fitting``); how each is spelled is
``organs.stomach.core.distill.log.display``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from organs.stomach.core.asked import AskTerms, rarity
from organs.stomach.core.distill.log.crash import CRASH_HEADING, Crash
from organs.stomach.core.distill.log.display import clip
from organs.stomach.core.distill.log.masking import WILDCARD
from organs.stomach.core.distill.log.mining import Records, Template, alert_key
from organs.stomach.core.distill.text import TIMES, plural, thousands
from organs.stomach.core.shapes.trace_shapes import is_caret_line
from organs.stomach.core.tuning import LogConfig

__all__ = [
    "SLOT_ALERTS",
    "SLOT_ASKED",
    "SLOT_CRASH",
    "SLOT_EXAMPLE",
    "SLOT_TAIL",
    "SLOT_TEMPLATE",
    "TAIL_HEADING",
    "AskRaise",
    "Piece",
    "ask_raise",
    "pieces_of",
    "render",
]


@dataclass(slots=True)
class Piece:
    template: int
    slot: int
    priority: int
    # ``None`` until the piece is first needed: a template line that no budget reaches is never spelled out.
    text: str | None
    # Characters of ``text``, or an estimate of them while it is not spelled out yet.
    size: int
    tokens: int = 0
    # Alert-level lines this piece quotes (a repeat of a quoted line counts as quoted).
    quotes: int = 0


_DIGIT_RUNS = re.compile(r"\d+")

SLOT_TEMPLATE = 0
SLOT_EXAMPLE = 1
# More of a template's records holding the ask's terms, as received, after its example.
SLOT_ASKED = 2
SLOT_ALERTS = 3
# One of the log's last lines: listed after the templates under ``TAIL_HEADING``.
SLOT_TAIL = 4
TAIL_HEADING = "last lines:"
# A crash the log holds (``crash``), in chunks of its lines as received, before every template.
SLOT_CRASH = 5


def pieces_of(
    lines: Sequence[str],
    records: Records,
    templates: list[Template],
    tail: list[str],
    config: LogConfig,
    real: Sequence[str] | None = None,
    as_received: Sequence[bool] = (),
    raise_for_ask: AskRaise | None = None,
    tallies: Sequence[bool] = (),
    crash: Crash | None = None,
) -> list[Piece]:
    """Every template's line first (a leading template's real line right after its own), then examples, then
    extra alert lines; the log's ``tail`` lines before the ordinary templates; the head of a ``crash`` it holds
    before all of them.

    Within a tier alert templates go first, then the templates holding the ask's
    terms (with the line that holds them), then the last lines of the log, then
    the templates that make up a twentieth of the log (what it mostly says), then
    the shortest templates, so a tight budget shows as many distinct events as it
    can before any of them gets extras. Template lines are ranked by their masked
    key's length and spelled out only when the fit reaches them; examples need
    their template's line, so they are spelled out only for templates that could
    be shown.
    """
    real = lines if real is None else real
    records_total = sum(template.count for template in templates)
    # A template that makes up a good share of the log is what the log mostly says, whatever its length: its
    # line and a real one come before the rarer templates.
    leading = [template.count * config.leading_one_in >= records_total for template in templates]
    # The templates holding the most of the ask are raised; a weak match (one common word) gets no early example.
    for_ask = raise_for_ask or ask_raise(lines, records, templates, None, config)
    weight, asked = for_ask.weight, for_ask.raised
    # A run's tally ("22 failing", "Found 3 errors") says what the run came to, wherever it stands: first of all.
    tallies = tallies or [False] * len(templates)
    ranked = _ranked(templates, tallies, asked, weight, leading)
    rank_of = {index: rank for rank, index in enumerate(ranked)}
    # The last lines come right after the alert and ask templates: ordinary templates' priorities make room.
    raised = sum(1 for index in ranked if tallies[index] or templates[index].alert or asked[index])
    total = 2 * (len(templates) + len(tail))
    pieces: list[Piece] = []
    for position, line in enumerate(tail):
        # The very last line (the outcome) first.
        priority = 2 * raised + 2 * (len(tail) - 1 - position)
        pieces.append(Piece(len(templates) + position, SLOT_TAIL, priority, line, len(line)))
    if crash is not None:
        pieces += _crash_pieces(crash, 2 * raised, config)
    for index, template in enumerate(templates):
        rank = rank_of[index]
        place = 2 * rank if rank < raised else 2 * rank + 2 * len(tail)
        pieces.append(Piece(index, SLOT_TEMPLATE, place, None, min(len(template.masked), config.template_chars) + 8))
        record = template.asked_record if template.asked_hits else template.first_record
        first_start = records.start[record]
        # A leading or asked template shows a real line right after its own; other alert templates once every
        # template line is in; other examples come after every alert line.
        late_tier = total if template.alert else 3 * total
        # The first few alert templates' real lines come right after them too (the rest once every template
        # line is in): an alert's real line is what a reader looks for first.
        first_alerts = template.alert and rank < config.alert_examples_early
        early = leading[index] or first_alerts or (asked[index] and template.asked_hits > 1)
        example_priority = place + 1 if early else late_tier + rank
        first_line = lines[first_start]
        if not (as_received and as_received[index]):
            pieces += _example_pieces(index, template, record, records, first_line, real, example_priority, config)
        if template.alert_lines:
            reference = first_line[records.stamp_end[record] :].strip()
            example_body = template.alert_keys.get(alert_key(reference), "")
            if pieces[-1].slot == SLOT_EXAMPLE:
                pieces[-1].quotes = template.alert_lines.get(example_body, 0)
            order = (2 * total + rank, 3 * total + rank, len(templates))
            pieces.extend(_alert_pieces(index, template, example_body, reference, order, config))
    return pieces


def _ranked(
    templates: list[Template],
    tallies: Sequence[bool],
    asked: Sequence[bool],
    weight: Sequence[float],
    leading: list[bool],
) -> list[int]:
    """The templates' indexes, the most telling first (``pieces_of``)."""
    return sorted(
        range(len(templates)),
        key=lambda i: (
            not tallies[i],
            not templates[i].alert,
            not asked[i],
            -weight[i],
            not leading[i],
            len(templates[i].masked),
            i,
        ),
    )


def _crash_pieces(crash: Crash, after_raised: int, config: LogConfig) -> list[Piece]:
    """A crash's heading and its innermost lines before anything (what failed and where: its first chunk, or its
    last when the innermost frame is last), the rest once the alert and ask templates are in (priorities from
    ``after_raised``); listed before every template, in order (their indexes are negative, the heading's first)."""
    step = config.crash_chunk_lines
    # A line of carets under a frame's source says nothing the source line does not; where the innermost frame is
    # last, the chunks are counted from it, so the first served is a whole one.
    lines = [line for line in crash.lines if not is_caret_line(line)]
    edges = range(len(lines), 0, -step) if crash.innermost_last else range(0, len(lines), step)
    spans = sorted((max(edge - step, 0), edge) if crash.innermost_last else (edge, edge + step) for edge in edges)
    chunks = ["\n".join(clip(line, config.example_chars) for line in lines[start:end]) for start, end in spans]
    innermost = len(chunks) - 1 if crash.innermost_last else 0
    pieces = [Piece(-len(chunks) - 1, SLOT_CRASH, -1, CRASH_HEADING, len(CRASH_HEADING))]
    for number, text in enumerate(chunks):
        priority = -1 if number == innermost else after_raised + number
        pieces.append(Piece(number - len(chunks), SLOT_CRASH, priority, text, len(text)))
    return pieces


@dataclass(frozen=True, slots=True)
class AskRaise:
    """Per template, the weight of the ask's terms its asked record holds, and whether it is one of the
    ``ask_templates`` weighing most, which are raised right after the alert templates."""

    weight: tuple[float, ...]
    raised: tuple[bool, ...]


def ask_raise(
    lines: Sequence[str], records: Records, templates: list[Template], ask: AskTerms | None, config: LogConfig
) -> AskRaise:
    """Each template's ``AskRaise``, read once per mined log. A term weighs by its rarity among the templates
    (a term most of them hold tells none apart)."""
    named = [set[str]() for _ in templates]
    if ask:
        for terms, template in zip(named, templates, strict=True):
            if template.asked_hits:
                record = template.asked_record
                for line in lines[records.start[record] : records.end[record]]:
                    terms.update(ask.named(line))
    holding = Counter(term for terms in named for term in terms)
    weights = {term: rarity(held, len(templates)) for term, held in holding.items()}
    # fsum: the sets' order varies from run to run, and a float sum with it; the ranking must not.
    weight = tuple(math.fsum(weights[term] for term in terms) for terms in named)
    by_weight = sorted((i for i, template in enumerate(templates) if template.asked_hits), key=lambda i: -weight[i])
    top = set(by_weight[: config.ask_templates])
    return AskRaise(weight, tuple(index in top for index in range(len(templates))))


def _example_pieces(
    index: int,
    template: Template,
    record: int,
    records: Records,
    first_line: str,
    real: Sequence[str],
    priority: int,
    config: LogConfig,
) -> list[Piece]:
    """The template's example and, as received, its other records that hold the ask's terms and, for an asked
    template, the first record of each of its few variants (what differs among them is often the answer: the
    request each worker was killed on; an alert's distinct lines are quoted as alerts)."""
    pieces = [Piece(index, SLOT_EXAMPLE, priority, None, min(len(first_line), config.example_chars) + 10)]
    # A record said again word for word, or but for its numbers (its clock), adds nothing to the example or to the
    # others.
    said = {_DIGIT_RUNS.sub("0", real[records.start[record]])}
    others = list(template.asked_records) if template.asked_hits > 1 else []
    if template.asked_hits and not template.alert and len(template.variant_records) <= config.variants_shown:
        others += template.variant_records
    more = []
    for number in others:
        line = real[records.start[number]]
        if (numberless := _DIGIT_RUNS.sub("0", line)) not in said:
            said.add(numberless)
            more.append(line)
    if more:
        text = "\n".join("    e.g. " + clip(line, config.example_chars) for line in more)
        pieces.append(Piece(index, SLOT_ASKED, priority, text, len(text)))
    return pieces


def _alert_pieces(
    index: int,
    template: Template,
    example_body: str,
    reference: str,
    order: tuple[int, int, int],
    config: LogConfig,
) -> list[Piece]:
    """A template's distinct alert lines besides its example's (each as it was last said: its first time is the
    example's or is counted with it), in pieces of a few: the first after every
    template line (priority ``order[0]``), the rest after every example (``order[1]``, a chunk ``order[2]``
    apart), so a roomy target quotes many alerts and a tight one still quotes some."""
    # Each distinct alert line as it was last said (the example shows the first time): the third attempt of three.
    # The example's own line, said last otherwise, was quoted with the example: it is shown, not counted again.
    extra = [
        (template.alert_last.get(body, body), count, 0 if body == example_body else count)
        for body, count in template.alert_lines.items()
        if body != example_body or body in template.alert_last
    ]
    step = config.alert_lines_per_piece
    pieces = []
    for chunk, first in enumerate(range(0, len(extra), step)):
        part = extra[first : first + step]
        text = "\n".join(
            f"    ! {TIMES}{thousands(count)} {clip(_against(body, reference), config.example_chars)}"
            for body, count, _ in part
        )
        priority = order[0] if chunk == 0 else order[1] + chunk * order[2]
        pieces.append(Piece(index, SLOT_ALERTS, priority, text, len(text), quotes=sum(q for _, _, q in part)))
    return pieces


def _against(body: str, reference: str) -> str:
    """An alert line as the words where it differs from ``reference`` (its template's example line), each run
    after the word before it, ``…`` for the words they share; the whole line when they differ in shape or in
    more than half their words."""
    words, shared = body.split(" "), reference.split(" ")
    if len(words) != len(shared):
        return body
    differ = [index for index, (word, other) in enumerate(zip(words, shared, strict=True)) if word != other]
    if not differ or len(differ) * 2 > len(words):
        return body
    shown: list[str] = []
    last = -1
    for index in differ:
        start = max(index - 1, last + 1)
        if start > last + 1:
            shown.append("…")
        shown.extend(words[start : index + 1])
        last = index
    if last < len(words) - 1:
        shown.append("…")
    return " ".join(shown)


def _tag_prefix(text: str, most_words: int) -> str:
    """The leading tag of a template line's text (after its count), or ``""``.

    A tag is the run of at most ``most_words`` leading words that ends at the first word ending in
    ``:`` and holding a letter (``kernel[0]:``, ``D PowerManagerService:``): the process or component that
    logged the event. Something must follow it.
    """
    rest = text.split(" ", 1)[1] if " " in text else ""
    words = rest.split(" ", most_words)
    for index, word in enumerate(words[:most_words]):
        if index + 1 < len(words) and len(word) > 1 and word.endswith(":") and any(c.isalpha() for c in word):
            return " ".join(words[: index + 1])
    return ""


def _grouped_body(ordered: list[Piece], config: LogConfig) -> tuple[list[str], bool]:
    """The pieces' lines with templates that share a leading tag listed under one ``§ tag`` heading.

    Each template line under a heading is indented by one space and leaves out the tag; a group is
    listed where its first template appears, its members in order of first appearance.
    """
    tags: dict[int, str] = {}
    members: dict[str, list[int]] = {}
    for piece in ordered:
        if piece.slot == SLOT_TEMPLATE:
            tag = _tag_prefix(piece.text or "", config.group_prefix_words)
            if tag:
                tags[piece.template] = tag
                members.setdefault(tag, []).append(piece.template)
    grouped = {tag for tag, indices in members.items() if len(indices) >= config.group_min_templates}
    if not grouped:
        return [piece.text or "" for piece in ordered], False
    blocks: dict[int, list[str]] = {}
    for piece in ordered:
        text = piece.text or ""
        tag = tags.get(piece.template, "")
        if piece.slot == SLOT_TEMPLATE and tag in grouped:
            count, rest = text.split(" ", 1)
            text = f" {count} {rest[len(tag) + 1 :]}"
        blocks.setdefault(piece.template, []).append(text)
    body: list[str] = []
    done: set[int] = set()
    for index, block in blocks.items():
        if index in done:
            continue
        tag = tags.get(index, "")
        if tag not in grouped:
            body.extend(block)
            continue
        body.append(f"§ {tag}")
        for member in members[tag]:
            body.extend(blocks[member])
            done.add(member)
    return body, True


def _single_events(chosen: list[Piece], templates: list[Template]) -> list[Piece]:
    """A template seen once whose real line is shown, and says nothing that line does not, says the same thing
    twice: its line becomes ``×1`` and the real line (with its continuation lines), and the example is dropped.
    (A structured log's template may say more: the level a JSON line gives as a number.)"""
    lines = {piece.template: piece.text for piece in chosen if piece.slot == SLOT_TEMPLATE and piece.text}
    examples = {
        piece.template: piece
        for piece in chosen
        if piece.slot == SLOT_EXAMPLE
        and piece.text is not None
        and templates[piece.template].count == 1
        and _says_no_more(lines.get(piece.template, ""), piece.text)
    }
    if not examples:
        return chosen
    merged = []
    for piece in chosen:
        example_piece = examples.get(piece.template)
        if example_piece is None or piece.slot not in (SLOT_TEMPLATE, SLOT_EXAMPLE):
            merged.append(piece)
        elif piece.slot == SLOT_TEMPLATE:
            real = (example_piece.text or "").removeprefix("    e.g. ")
            line = f"{TIMES}1 {real}"
            merged.append(
                Piece(piece.template, SLOT_TEMPLATE, piece.priority, line, len(line), 0, example_piece.quotes)
            )
    return merged


def _says_no_more(template_text: str, example_text: str) -> bool:
    """Whether every word of a template line (its count and wildcards aside) is in the real line."""
    words = template_text.split()[1:]
    return bool(words) and all(word in example_text for word in words if word != WILDCARD)


def render(header: str, chosen: list[Piece], templates: list[Template], config: LogConfig, group: bool = False) -> str:
    shown = {piece.template for piece in chosen if piece.slot == SLOT_TEMPLATE}
    chosen = _single_events(chosen, templates)
    ordered = sorted(chosen, key=lambda piece: (piece.template, piece.slot))
    if group:
        body, grouped = _grouped_body(ordered, config)
    else:
        body, grouped = [piece.text or "" for piece in ordered], False
    # The legend names only what the rendering holds: at a tight target its words are a good share of it.
    slots = {piece.slot for piece in chosen}
    legend = f"templates by first appearance: {TIMES}count, the line with {WILDCARD} for a varying field or a long id"
    if SLOT_EXAMPLE in slots:
        legend += "; e.g. a real line"
    if SLOT_ALERTS in slots:
        legend += "; ! a distinct alert line (numbers aside), or its words that differ from the e.g. line"
    if grouped:
        legend += (
            f"; § T heads the templates that begin with the tag T: each is listed under it, indented, "
            f"as {TIMES}count and the rest of its line"
        )
    tail_at = next((position for position, piece in enumerate(ordered) if piece.slot == SLOT_TAIL), -1)
    if tail_at >= 0:
        body.insert(len(body) - (len(ordered) - tail_at), TAIL_HEADING)
    lines = [header, legend, *body]
    omitted = [template for index, template in enumerate(templates) if index not in shown]
    if omitted:
        omitted_lines = sum(template.line_count for template in omitted)
        lines.append(f"… [{plural(len(omitted), 'template')} ({plural(omitted_lines, 'line')}) not shown] …")
    quoted = sum(piece.quotes for piece in chosen)
    unquoted = sum(templates[index].alert_records for index in shown) - quoted
    if unquoted:
        lines.append(f"… [{plural(unquoted, 'alert line')} of shown templates not quoted] …")
    return "\n".join(lines)
