"""Display: template lines, real example records, distinct alert lines, and grouping under a shared tag.

Each shown template gets one line, ``×count`` and the template with ``<*>``
where a field varies among its first, second and last lines or is a long
constant with a digit (an id), before any template gets extras (but the first
alert templates, those holding the ask's terms and those that make up a
twentieth of the log have their real line right after their own; the log's last
lines are listed under ``last lines:``): then real example lines, then distinct
alert lines (whole after the clock, lines that differ only in digits counted as
one) with their repeat counts. A kept line says why when it is not plain:
``(matches ask)``, ``(alert)`` in an excerpt. A masked field keeps its shape when its samples share it:
a ``host:port`` reads ``<*>:<*>``, a decimal ``<*>.<*>``, a method of a numbered
class ``<*>::name``, an absolute path ``/<*>``, a quoted value ``'<*>'``. When
not every template line fits, templates that begin with the same tag (the
leading words up to one ending in ``:``, such as a process ``kernel[0]:``) are
listed together under a ``§ tag`` heading, each indented and without the tag,
as the legend then says. Very long lines keep their head and tail around a
counted ``…`` marker. Template lines are spelled out only when the fit reaches them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from organs.stomach.core.asked import AskTerms, rarity
from organs.stomach.core.distill.log.crash import CRASH_HEADING
from organs.stomach.core.distill.log.masking import WILDCARD, collapse_runs, split_variables
from organs.stomach.core.distill.log.mining import Records, Template, alert_key
from organs.stomach.core.distill.text import TIMES, elision, plural, thousands
from organs.stomach.core.tuning import LogConfig

__all__ = [
    "ALERT_MARK",
    "ASK_MARK",
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
    "clip",
    "constant_line",
    "example",
    "pieces_of",
    "render",
    "stamp_text",
    "template_line",
]

_PUNCTUATION_RUN = re.compile(r"([^A-Za-z0-9]+)")


def clip(line: str, limit: int, ask: AskTerms | None = None) -> str:
    """``line`` cut to about ``limit`` characters: its head and tail kept, the middle counted out. With ``ask``,
    a line whose middle holds the ask's terms keeps a stretch around each of them instead (a long record's answer
    is often in its middle: ``step 4 of 6: 25618`` deep in a changelog entry)."""
    if len(line) <= limit:
        return line
    tail = limit // 4
    head = limit - tail
    stretches = _asked_stretches(line, limit, ask) if ask else None
    if stretches is None:
        return f"{line[:head]} …[{plural(len(line) - head - tail, 'character')} elided]… {line[-tail:]}"
    shown = []
    end = 0
    for start, stop in stretches:
        if start > end:
            shown.append(f" …[{plural(start - end, 'character')} elided]… ")
        shown.append(line[start:stop])
        end = stop
    if end < len(line):
        shown.append(f" …[{plural(len(line) - end, 'character')} elided]…")
    return "".join(shown)


def _asked_stretches(line: str, limit: int, ask: AskTerms) -> list[tuple[int, int]] | None:
    """The stretches of a line to show: its opening quarter, then the ask's terms where the head and tail would not
    show them, each in the middle of an equal share of the rest; None when the head and tail show every term."""
    lowered = line.lower()
    lead = limit // 4
    positions = sorted((at, at + len(term)) for term in ask.named(line) if (at := lowered.find(term, lead)) >= 0)
    hidden = [
        (start, stop) for start, stop in positions if start >= limit - limit // 4 and stop <= len(line) - limit // 4
    ]
    if not hidden:
        return None
    room = (limit - lead) // len(hidden)
    stretches = [(0, lead)]
    for start, stop in hidden:
        around = max(room - (stop - start), 0) // 2
        begin, end = max(start - around, 0), min(stop + around, len(line))
        if begin <= stretches[-1][1]:
            stretches[-1] = (stretches[-1][0], max(end, stretches[-1][1]))
        else:
            stretches.append((begin, end))
    return stretches


def stamp_text(line: str, stamp_end: int) -> str:
    return line[:stamp_end].strip(" []()")


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
ALERT_MARK = " (alert)"
ASK_MARK = " (matches ask)"


def _display(lines: Sequence[str], records: Records, template: Template, config: LogConfig) -> str:
    """The template with only the fields that vary as ``<*>``, judged on its first, second and last lines; the
    line itself for a template of one record.

    A short field with one value in every sampled line (a constant ``uid=0``, a
    fixed port) is shown as it is; a long one stays ``<*>``. When the samples do not share one shape (merged
    templates), the masked key is the display.
    """
    if template.count == 1:
        # One record varies from nothing: masking it would only hide what it says (a version, a count), unless
        # what it masks is long (an id, a hash) and would crowd out other templates.
        record = template.first_record
        body = lines[records.start[record]][records.body_start[record] :]
        if len(body) <= len(template.masked) + config.single_record_unmasked_chars:
            return collapse_runs(body)
    numbers = {template.first_record, template.last_record}
    if template.second_record >= 0:
        numbers.add(template.second_record)
    samples = []
    for number in sorted(numbers):
        body = lines[records.start[number]][records.body_start[number] :]
        if len(body) > config.mask_prefix:
            return template.masked
        samples.append(split_variables(body, config.mask_prefix))
    constants, values = samples[0]
    if any(other_constants != constants for other_constants, _ in samples[1:]):
        return template.masked
    pieces = [constants[0]]
    for index, value in enumerate(values):
        same = all(other_values[index] == value for _, other_values in samples[1:])
        # A long constant with a digit (a session id, a hash) costs many tokens and says little: it stays
        # masked, but for its named pieces (see ``_value_shape``). One without a digit is a name or a phrase.
        if same and _named(value, config):
            pieces.append(value)
        else:
            pieces.append(_value_shape([other_values[index] for _, other_values in samples], config))
        pieces.append(constants[index + 1])
    shown = "".join(pieces)
    return collapse_runs(shown)


def _value_shape(values: list[str], config: LogConfig) -> str:
    """``<*>`` for a field that varies or is a long constant, keeping its shape when every sample shares it.

    An address with its port (``10.0.0.1:50010``) or a ``host:port`` reads as ``<*>:<*>``; a value of at most
    three word pieces with the same punctuation between them reads as that punctuation around ``<*>``
    (``<*>.<*>`` a decimal, ``<*>::powerChange`` a method of a numbered class): the separators tell what kind of
    value it is for a token or two. A piece with one value in every sample stays when it is short or holds no
    digit (a name, not an id).
    """
    for split in (_colon_pieces, _word_pieces):
        shaped = _shape_by(values, split, config)
        if shaped is not None:
            return shaped
    return _opening(values) + WILDCARD + _opening([value[::-1] for value in values])[::-1]


def _opening(values: list[str]) -> str:
    """The punctuation every value opens with (the ``/`` of an absolute path, a quote), or ``""``."""
    openings = set()
    for value in values:
        match = _PUNCTUATION_RUN.match(value)
        openings.add("" if match is None or match.end() == len(value) else match.group())
    return openings.pop() if len(openings) == 1 else ""


def _named(value: str, config: LogConfig) -> bool:
    """Whether a value that is the same in every sample is worth its tokens: short, or holding no digit."""
    return len(value) <= config.constant_chars or not any(character.isdigit() for character in value)


def _colon_pieces(value: str) -> tuple[list[str], list[str]] | None:
    pieces = value.split(":")
    return (pieces, [":"] * (len(pieces) - 1)) if all(pieces) else None


def _word_pieces(value: str) -> tuple[list[str], list[str]]:
    split = _PUNCTUATION_RUN.split(value)
    return split[::2], split[1::2]


def _shape_by(
    values: list[str], split: Callable[[str], tuple[list[str], list[str]] | None], config: LogConfig
) -> str | None:
    """The values as their shared pieces and separators (see ``_value_shape``), or ``None`` when they differ."""
    shapes = [split(value) for value in values]
    first = shapes[0]
    if first is None or not 2 <= len(first[0]) <= config.shape_max_pieces:
        return None
    pieces, separators = first
    if any(shape is None or shape[1] != separators for shape in shapes[1:]):
        return None
    shown = []
    for position, piece in enumerate(pieces):
        same = all(shape is not None and shape[0][position] == piece for shape in shapes)
        shown.append(piece if same and _named(piece, config) else WILDCARD)
    return "".join(piece + separator for piece, separator in zip(shown, [*separators, ""], strict=True))


def template_line(
    lines: Sequence[str],
    records: Records,
    template: Template,
    config: LogConfig,
    ask: AskTerms | None = None,
    received: Sequence[str] | None = None,
) -> str:
    """``×count`` and the template; given ``received`` (the log's lines as received), the template is one line said
    as it is (``constant_line``), shown as that line with when it last recurred."""
    if received is not None:
        first, last = records.start[template.first_record], records.start[template.last_record]
        line = f"{TIMES}{thousands(template.count)} {clip(received[first], config.example_chars, ask)}"
        last_stamp = records.stamp_end[template.last_record]
        return line + (f" (last {stamp_text(lines[last], last_stamp)})" if template.count > 1 and last_stamp else "")
    shown = _display(lines, records, template, config).strip()
    return f"{TIMES}{thousands(template.count)} {clip(shown, config.template_chars, ask)}"


def example(
    lines: Sequence[str],
    records: Records,
    template: Template,
    real: Sequence[str],
    config: LogConfig,
    ask: AskTerms | None = None,
) -> str:
    """The template's first real line (with its continuation lines) and, if it recurs, when it last did; or the
    line that holds most of the ask's terms, saying so.

    ``lines`` are the lines mined (their clocks are where the records say), ``real`` the lines received.
    """
    asked = template.asked_record >= 0
    record = template.asked_record if asked else template.first_record
    first_start = records.start[record]
    first_end = records.end[record]
    last_stamp = records.stamp_end[template.last_record]
    entry = "    e.g. " + clip(real[first_start], config.example_chars, ask)
    if asked:
        entry += ASK_MARK
    elif template.count > 1 and last_stamp:
        entry += f" (last {stamp_text(lines[records.start[template.last_record]], last_stamp)})"
    continuation = first_end - first_start - 1
    if continuation:
        shown = real[first_start + 1 : min(first_end, first_start + 1 + config.continuation_lines_shown)]
        entry += "\n" + "\n".join("      " + clip(line, config.example_chars, ask) for line in shown)
        if continuation > len(shown):
            entry += f"\n      {elision(continuation - len(shown), 'continuation line')}"
    return entry


def constant_line(
    template: Template, records: Records, lines: Sequence[str], real: Sequence[str], config: LogConfig, asked: bool
) -> bool:
    """Whether the template is one line said as it is, each time, to be shown as received (clock and all) with no
    example saying it again: its first record one line received as mined, with no leading field set apart from its
    template (``structured``: those are stated once) and none of its fields varying; and either the paste has an
    ask (``asked``: the model answers it from the log's own words), the template is an alert, or the line has no
    clock (shown as received it is its template line). A bare log keeps its other template lines compact: they
    show more of what it says in the same room."""
    record = template.first_record
    start = records.start[record]
    if (
        not (asked or template.alert or not records.stamp_end[record])
        or records.end[record] - start != 1
        or real[start] != lines[start]
        or records.body_start[record] > records.stamp_end[record]
    ):
        return False
    return WILDCARD not in _display(lines, records, template, config)


def pieces_of(
    lines: Sequence[str],
    records: Records,
    templates: list[Template],
    tail: list[str],
    config: LogConfig,
    real: Sequence[str] | None = None,
    as_received: Sequence[bool] = (),
    raise_for_ask: AskRaise | None = None,
    crash: Sequence[str] = (),
    crash_innermost_last: bool = False,
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
    ranked = sorted(
        range(len(templates)),
        key=lambda i: (
            not templates[i].alert,
            not asked[i],
            -weight[i],
            not leading[i],
            len(templates[i].masked),
            i,
        ),
    )
    rank_of = {index: rank for rank, index in enumerate(ranked)}
    # The last lines come right after the alert and ask templates: ordinary templates' priorities make room.
    raised = sum(1 for index in ranked if templates[index].alert or asked[index])
    total = 2 * (len(templates) + len(tail))
    pieces: list[Piece] = []
    for position, line in enumerate(tail):
        # The very last line (the outcome) first.
        priority = 2 * raised + 2 * (len(tail) - 1 - position)
        pieces.append(Piece(len(templates) + position, SLOT_TAIL, priority, line, len(line)))
    pieces += _crash_pieces(crash, crash_innermost_last, 2 * raised, config)
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


def _crash_pieces(crash: Sequence[str], innermost_last: bool, after_raised: int, config: LogConfig) -> list[Piece]:
    """A crash's heading and its innermost lines before anything (what failed and where: its first chunk, or its
    last when the innermost frame is last), the rest once the alert and ask templates are in (priorities from
    ``after_raised``); listed before every template, in order (their indexes are negative, the heading's first)."""
    step = config.crash_chunk_lines
    chunks = ["\n".join(clip(line, config.example_chars) for line in crash[first : first + step])
              for first in range(0, len(crash), step)]  # fmt: skip
    if not chunks:
        return []
    innermost = len(chunks) - 1 if innermost_last else 0
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
    weight = tuple(sum(weights[term] for term in terms) for terms in named)
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
    """The template's example and, for a template holding the ask's terms, its other records that hold them, as
    received (what differs among them is often the answer)."""
    pieces = [Piece(index, SLOT_EXAMPLE, priority, None, min(len(first_line), config.example_chars) + 10)]
    # A record said again word for word adds nothing to the example or to the others.
    said = {real[records.start[record]]}
    more = []
    for number in template.asked_records:
        line = real[records.start[number]]
        if line not in said:
            said.add(line)
            more.append(line)
    if more and template.asked_hits > 1:
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
