"""Log distillation: group lines into templates, keep the alerts, state the totals.

A line's template key is the line with its variable fields masked as ``<*>``:
any token carrying a digit (numbers, ids, hex, IPs, UUIDs, versions, paths with
digits; a digit-free lead such as ``attempt_`` or ``node-`` stays, and so do a
lone leading ``/`` and a trailing ``.``, ``:`` or ``-``), quoted values,
``key=value`` values and digit-free absolute paths; side-by-side wildcards
collapse into one. The leading timestamp is set aside first, so it never splits
a template. Then leading header fields are set aside too when the log has them
(see ``_header_columns``): fields that hold one value in nearly every line (a
host, a pid, an epoch) or whose values are interchangeable (the same event
logged by several hosts), never a level. What they held is stated once, under
the header line, and the example lines still show them. Templates that differ
in one word are merged with ``<*>`` there when that word takes at least
``MERGE_MIN_VARIANTS`` values (user names, host names), or two values when one
of them is already partly variable and the line has enough other words to be the
same event; two or three plain values (``opened``/``closed``) are kept apart,
because they are usually different events. A merge also needs at least
three other constant words (and, with fewer than four, twice ``MERGE_MIN_VARIANTS``
values): a word that is, beside a tag or a level, the whole message is the event
itself (``closeQs``, ``instantCollapse``), not a field. When most lines open with a clock, a
line without one continues the record above it, so a stack trace inside a log
stays with the line that announced it.

The rendering lists templates in order of first appearance. Each shown template
gets one line, ``×count`` and the template with ``<*>`` where a field varies
among its first, second and last lines or is a long constant with a digit (an
id), before any template gets extras (but a template that makes up a twentieth
of the log, whose real line follows its own): then real example lines (alert
templates first), then distinct warn/error lines with their repeat counts. A masked field keeps its shape when
its samples share it: a ``host:port`` reads ``<*>:<*>``, a decimal ``<*>.<*>``, a
method of a numbered class ``<*>::name``, an absolute path ``/<*>``, a quoted
value ``'<*>'``. When not every template line
fits, templates that begin with the same tag (the leading words up to one ending in
``:``, such as a process ``kernel[0]:``) are listed together under a ``§ tag``
heading, each indented and without the tag, as the legend then says. Tight budgets drop whole
templates, longest first (never an alert template or one that makes up a twentieth of the log
before the others), and the rendering says
exactly how many templates and lines, and how many alert lines of shown
templates, it did not show. Very long lines keep their head and tail around a
counted ``…`` marker. Nothing here knows a particular log format beyond the
generic signals in ``organs.stomach.signals``.

Lines are keyed with their digits flattened to ``0`` (a C-speed translate), so
masking and level detection run once per distinct shape, not once per line, and
masking runs once per distinct word. Template lines are spelled out only when
the budget fit reaches them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from organs.accounting import count_tokens
from organs.stomach.distill.text import TIMES, elision, head_tail, plural, thousands
from organs.stomach.signals import ALERT_LEVELS, level_of
from organs.stomach.timestamps import leading_stamp, window_of

__all__ = ["MERGE_MIN_VARIANTS", "LogDigest", "distill_log", "mask_variables"]

MERGE_MIN_VARIANTS = 4
_MASK_PREFIX = 1000
_EXAMPLE_CHARS = 400
_TEMPLATE_CHARS = 240
_CONSTANT_CHARS = 12
_HEADER_MAX_COLUMNS = 8
_HEADER_MIN_RECORDS = 20
_HEADER_COVERAGE = 0.9
_HEADER_CONSTANT_SHARE = 0.9
_HEADER_MIN_RECURRING = 5
_HEADER_SHARED_SHARE = 0.3
_HEADER_VALUES_SHOWN = 3
# A field holding one of these is a level: it tells events apart and stays in the template lines.
_LEVEL_WORDS = frozenset({"trace", "debug", "info", "information", "notice"}) | {
    level for level in ALERT_LEVELS if len(level) > 1
}
_LEVEL_LETTERS = frozenset("VDIWEF")
_ALERT_LINES_PER_TEMPLATE = 8
_MERGE_MAX_TOKENS = 64
_ESTIMATE_SAMPLE_CHARS = 4_096
_FIT_ROUNDS = 5
# A log of at most this many characters per target token may render whole within the target: try that first.
_WHOLE_RENDERING_TRIAL = 4
_MERGE_CONTEXT_WORDS = 4
_WILDCARD = "<*>"
_GROUP_PREFIX_WORDS = 6
_GROUP_MIN_TEMPLATES = 2
_LEADING_ONE_IN = 20
_MASK_MARK = re.compile(r"[0-9=/]")
_PUNCTUATION_RUN = re.compile(r"([^A-Za-z0-9]+)")
_SHAPE_MAX_PIECES = 3
_DIGITS_TO_ZERO = str.maketrans("0123456789", "0000000000")

_VARIABLE = re.compile(
    r"(?<![\w])\"[^\"\n]{0,200}\""
    r"|(?<![\w])'[^'\n]{0,200}'(?!\w)"
    r"|(?<==)[^\s,;&)\]}>\"']{1,200}"
    # A token carrying a digit. A digit-free lead of letters ending in a separator (``attempt_``,
    # ``node-``, ``Thread.java:``) is a name, not a value, so it stays: a match starts at a token start
    # that opens no such lead, or right after a letter and a separator. Each look-around is bounded or
    # scans one letter run once, so masking stays linear in the line.
    # A lone leading slash (``/10.0.0.1:50010``) is punctuation the template keeps.
    r"|(?:(?<![\w.:/@+\-#])(?!/)|(?<=[A-Za-z][_\-:./#@])|(?<=(?<![\w.:/@+\-#])/))(?![A-Za-z]+[_\-:./#@])"
    # A trailing ``.``, ``:`` or ``-`` is the sentence's punctuation, not the value's (``from 10.0.0.1: 11:``).
    r"(?=[\w.:/@+\-#]{0,300}?\d)[\w.:/@+\-#]*[\w/@+#]"
    r"|(?<![\w.])(?:/[\w.\-@+~]{1,200}){2,}"
)
# Variables standing side by side are one variable: "<*> <*> <*>" says no more than "<*>".
_WILDCARD_RUN = re.compile(r"<\*>(?: +<\*>)+")


def mask_variables(body: str) -> str:
    masked = _VARIABLE.sub(_WILDCARD, body[:_MASK_PREFIX])
    if "> <*>" in masked:
        masked = _WILDCARD_RUN.sub(_WILDCARD, masked)
    return masked if len(body) <= _MASK_PREFIX else masked + "<…>"


def _mask_by_words(body: str, words: dict[str, str]) -> str:
    """``mask_variables(body)``, computed one space-separated word at a time through a cache.

    Every alternative of ``_VARIABLE`` except the quoted ones matches inside one
    word and looks at most at a space beyond it, which it treats like the string
    edge, so masking each word alone is the same as masking the line; lines with
    a quote character, or longer than the masked prefix, take the line-wide path.
    Words repeat across lines far more than lines do, so most words cost a lookup.
    """
    masked_words = _word_masks(body, words)
    return mask_variables(body) if masked_words is None else _joined(masked_words)


def _word_masks(body: str, words: dict[str, str]) -> tuple[str, ...] | None:
    """Each word of ``body`` masked on its own, or ``None`` when the body needs the line-wide path."""
    if len(body) > _MASK_PREFIX or '"' in body or "'" in body:
        return None
    pieces = []
    for word in body.split(" "):
        masked_word = words.get(word)
        if masked_word is None:
            # Without a digit, ``=`` or ``/`` no alternative can match (quotes were ruled out above).
            plain = word.isascii() and _MASK_MARK.search(word) is None
            masked_word = word if plain else _VARIABLE.sub(_WILDCARD, word)
            words[word] = masked_word
        pieces.append(masked_word)
    return tuple(pieces)


def _joined(masked_words: tuple[str, ...]) -> str:
    masked = " ".join(masked_words)
    return _WILDCARD_RUN.sub(_WILDCARD, masked) if "> <*>" in masked else masked


@dataclass(frozen=True, slots=True)
class LogDigest:
    rendering: str
    templates: int
    alerts: int
    valid_from: str | None
    valid_to: str | None
    tokens: int | None = None


@dataclass(frozen=True, slots=True)
class _Shape:
    """What every line with the same digit-flattened spelling shares."""

    stamp_end: int
    masked: str
    alert: bool
    # The body's space-separated words, each masked on its own (one per word of the body, leading
    # blanks included); empty when the body takes the line-wide masking path.
    words: tuple[str, ...] = ()


@dataclass(slots=True)
class _Template:
    masked: str
    first_record: int
    last_record: int
    second_record: int = -1
    count: int = 0
    line_count: int = 0
    alert: bool = False
    alert_records: int = 0
    alert_lines: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class _Records:
    """Records (a head line plus its continuation lines) as parallel columns.

    ``stamp_end`` is where the head line's clock ends; ``body_start`` is where its
    template body starts (after the clock and any header fields left out).
    """

    start: list[int]
    end: list[int]
    stamp_end: list[int]
    body_start: list[int]


@dataclass(frozen=True, slots=True)
class _Header:
    """Leading fields that every template line leaves out, and what they held."""

    columns: int
    summary: str


_NO_HEADER = _Header(0, "")


def _shape_of(key: str, words: dict[str, str]) -> _Shape:
    stamp = leading_stamp(key)
    stamp_end = -1 if stamp is None else stamp.end
    level = level_of(key)
    body = key[max(stamp_end, 0) :]
    masked_words = _word_masks(body, words)
    masked = mask_variables(body) if masked_words is None else _joined(masked_words)
    return _Shape(stamp_end, masked, level is not None and level in ALERT_LEVELS, masked_words or ())


def _column_summary(values: dict[str, int], total: int) -> str:
    ranked = sorted(values.items(), key=lambda item: -item[1])
    if ranked[0][1] == total:
        return ranked[0][0] or "''"
    shown = "|".join(value or "''" for value, _ in ranked[:_HEADER_VALUES_SHOWN])
    return shown + ("|…" if len(ranked) > _HEADER_VALUES_SHOWN else "")


def _header_columns(split: list[tuple[tuple[str, ...], int]]) -> _Header:
    """How many leading fields of the record bodies are header, not event: see ``distill_log``.

    ``split`` holds each distinct body's masked words (leading blanks dropped) and
    how many records have it. A leading field is header when every field before
    it is, a message follows it in nearly every record, no value of it is a level,
    and it either holds one value (masked) in nearly every record (a host, a pid,
    an epoch) or its values are interchangeable: among the rests of line that
    recur, a good share recur with several of its values (one event logged by
    several hosts or processes). A field that tells events apart (a verb) rarely
    shares its rest of line across values.
    """
    total = sum(weight for _, weight in split)
    if total < _HEADER_MIN_RECORDS:
        return _NO_HEADER
    summaries: list[str] = []
    for column in range(_HEADER_MAX_COLUMNS):
        values: dict[str, int] = {}
        rests: dict[str, set[str]] = {}
        rest_weight: dict[str, int] = {}
        covered = 0
        for masked, weight in split:
            if len(masked) <= column + 1:
                continue
            covered += weight
            value = masked[column]
            values[value] = values.get(value, 0) + weight
            rest = " ".join(masked[column + 1 :])
            rests.setdefault(rest, set()).add(value)
            rest_weight[rest] = rest_weight.get(rest, 0) + weight
        if covered < total * _HEADER_COVERAGE:
            break
        if any(value.strip("[]():,|<>").lower() in _LEVEL_WORDS or value in _LEVEL_LETTERS for value in values):
            # A level tells events apart and marks the alerts: it stays in the template lines.
            break
        constant = max(values.values()) >= covered * _HEADER_CONSTANT_SHARE
        # As when merging templates: two or three plain values are usually different events, unless the
        # rest of the line is long enough to be the same event.
        few = len(values) < MERGE_MIN_VARIANTS
        recurring = [
            rest
            for rest, weight in rest_weight.items()
            if weight > 1 and not (few and rest.count(" ") + 1 < _MERGE_CONTEXT_WORDS)
        ]
        shared = sum(1 for rest in recurring if len(rests[rest]) > 1)
        interchangeable = len(recurring) >= _HEADER_MIN_RECURRING and shared >= len(recurring) * _HEADER_SHARED_SHARE
        if not (constant or interchangeable):
            break
        summaries.append(_column_summary(values, covered))
    if not summaries:
        return _NO_HEADER
    return _Header(len(summaries), " ".join(summaries))


def _cut(words: list[str] | tuple[str, ...], columns: int) -> int:
    """How many of the body's space-split words the first ``columns`` fields (non-empty words, the spaces
    after them included) take, or 0 when no message would follow them."""
    fields = 0
    index = 0
    while index < len(words) and fields < columns:
        fields += bool(words[index])
        index += 1
    while index < len(words) and not words[index]:
        index += 1
    return index if fields == columns and index < len(words) else 0


def _records(lines: list[str], text: str) -> tuple[_Records, list[_Shape], _Header]:
    """Records (a head line plus its continuation lines), the shape of each record's head, and the header."""
    words: dict[str, str] = {}
    keys = text.translate(_DIGITS_TO_ZERO).split("\n")
    shapes_by_key = {key: _shape_of(key, words) for key in dict.fromkeys(keys)}
    line_shapes = [shapes_by_key[key] for key in keys]
    stamp_ends = [shape.stamp_end for shape in line_shapes]
    count = len(stamp_ends)
    clocked = count - stamp_ends.count(-1)
    if clocked * 2 < count or clocked == count:
        # No continuation lines: every line is a record of its own.
        starts = list(range(count))
        ends = list(range(1, count + 1))
        stamps = [max(end, 0) for end in stamp_ends]
        heads = line_shapes
    else:
        starts, ends, stamps, heads = [], [], [], []
        for index, shape in enumerate(line_shapes):
            if shape.stamp_end < 0 and starts:
                ends[-1] = index + 1
            else:
                starts.append(index)
                ends.append(index + 1)
                stamps.append(max(shape.stamp_end, 0))
                heads.append(shape)
    weights = Counter(map(id, heads))
    # Fields are the non-empty words: columns padded with several spaces stay aligned.
    split = [
        (tuple(word for word in shape.words if word), weights[id(shape)])
        for shape in shapes_by_key.values()
        if shape.words and id(shape) in weights
    ]
    header = _header_columns(split)
    if not header.columns:
        return _Records(starts, ends, stamps, stamps), heads, header
    cut_shapes: dict[int, tuple[_Shape, int]] = {}
    for key, shape in shapes_by_key.items():
        if id(shape) not in weights:
            continue
        body = key[max(shape.stamp_end, 0) :]
        raw_words = body.split(" ")
        cut = _cut(raw_words, header.columns)
        if not cut:
            cut_shapes[id(shape)] = shape, 0
            continue
        offset = sum(len(word) for word in raw_words[:cut]) + cut
        masked = _joined(shape.words[cut:]) if shape.words else mask_variables(body[offset:])
        cut_shapes[id(shape)] = _Shape(shape.stamp_end, masked, shape.alert), offset
    cuts = [cut_shapes[id(shape)] for shape in heads]
    body_starts = [stamp + cut[1] for stamp, cut in zip(stamps, cuts, strict=True)]
    return _Records(starts, ends, stamps, body_starts), [cut[0] for cut in cuts], header


def _mine(lines: list[str], records: _Records, heads: list[_Shape]) -> list[_Template]:
    templates: dict[str, _Template] = {}
    starts, ends, body_starts = records.start, records.end, records.body_start
    for number, shape in enumerate(heads):
        template = templates.get(shape.masked)
        if template is None:
            template = _Template(shape.masked, number, number)
            templates[shape.masked] = template
        template.count += 1
        if template.count == 2:
            template.second_record = number
        template.line_count += ends[number] - starts[number]
        template.last_record = number
        if shape.alert:
            template.alert = True
            template.alert_records += 1
            body = lines[starts[number]][body_starts[number] :].strip()
            if body in template.alert_lines or len(template.alert_lines) < _ALERT_LINES_PER_TEMPLATE:
                template.alert_lines[body] = template.alert_lines.get(body, 0) + 1
    return _merge_variants(list(templates.values()))


def _merge_variants(templates: list[_Template]) -> list[_Template]:
    """Merge templates that differ in one word taking many values (see the module docstring)."""
    tokens = [template.masked.split(" ") for template in templates]
    groups: dict[tuple[int, int, int, int], list[int]] = {}
    # Two templates that differ in one word of their first half share their whole second half, and the
    # other way round, so only templates sharing a half with another one can have a partner there.
    halves: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
    shared: dict[tuple[bool, tuple[str, ...]], int] = {}
    for words in tokens:
        middle = len(words) // 2
        low, high = tuple(words[:middle]), tuple(words[middle:])
        halves.append((low, high))
        shared[False, high] = shared.get((False, high), 0) + 1
        shared[True, low] = shared.get((True, low), 0) + 1
    for index, words in enumerate(tokens):
        if len(words) > _MERGE_MAX_TOKENS:
            continue
        low, high = halves[index]
        first = 0 if shared[False, high] > 1 else len(low)
        last = len(words) if shared[True, low] > 1 else len(low)
        if first >= last:
            continue
        # Chained prefix and suffix hashes key "every word but one" in linear time; members are
        # compared word by word before merging, so a hash collision can never merge unlike lines.
        prefixes = [0]
        for word in words:
            prefixes.append(hash((prefixes[-1], word)))
        suffixes = [0]
        for word in reversed(words):
            suffixes.append(hash((suffixes[-1], word)))
        suffixes.reverse()
        for position in range(first, last):
            if words[position]:
                key = (len(words), position, prefixes[position], suffixes[position + 1])
                groups.setdefault(key, []).append(index)
    merged_into: set[int] = set()
    results: list[_Template] = []
    for (_, position, _, _), members in sorted(groups.items(), key=lambda item: (-len(item[1]), item[1][0])):
        if len(members) < 2:
            continue
        free = [index for index in members if index not in merged_into]
        if free:
            reference = tokens[free[0]]
            free = [index for index in free if _equal_but(tokens[index], reference, position)]
        # A word already partly variable in one member is a variable field, so two spellings suffice,
        # provided enough other words agree that the lines are the same event.
        partly_variable = len(tokens[free[0]]) >= _MERGE_CONTEXT_WORDS if free else False
        partly_variable = partly_variable and any(_WILDCARD in tokens[index][position] for index in free)
        if len(free) < (2 if partly_variable else MERGE_MIN_VARIANTS):
            continue
        # Whatever the spellings, the merged line must keep enough constant words to name one event: a
        # word that is, beside a tag or a level, the whole message (``closeQs``) is the event, not a field.
        # With little context, only a word taking many values (an open set: user names) is a field.
        context = _constant_words(tokens[free[0]], position)
        if context < _MERGE_CONTEXT_WORDS - 1 or (
            context < _MERGE_CONTEXT_WORDS and not partly_variable and len(free) < 2 * MERGE_MIN_VARIANTS
        ):
            continue
        words = list(tokens[free[0]])
        words[position] = _WILDCARD
        results.append(_combine(" ".join(words), [templates[index] for index in free]))
        merged_into.update(free)
    results.extend(template for index, template in enumerate(templates) if index not in merged_into)
    return sorted(results, key=lambda template: template.first_record)


def _constant_words(words: list[str], position: int) -> int:
    """How many words other than the one at ``position`` hold no variable."""
    return sum(1 for index, word in enumerate(words) if index != position and word and _WILDCARD not in word)


def _equal_but(words: list[str], reference: list[str], position: int) -> bool:
    return words[:position] == reference[:position] and words[position + 1 :] == reference[position + 1 :]


def _combine(masked: str, parts: list[_Template]) -> _Template:
    combined = _Template(masked, min(part.first_record for part in parts), max(part.last_record for part in parts))
    for part in sorted(parts, key=lambda part: part.first_record):
        combined.count += part.count
        combined.line_count += part.line_count
        combined.alert = combined.alert or part.alert
        combined.alert_records += part.alert_records
        for body, count in part.alert_lines.items():
            if body in combined.alert_lines or len(combined.alert_lines) < _ALERT_LINES_PER_TEMPLATE:
                combined.alert_lines[body] = combined.alert_lines.get(body, 0) + count
    return combined


def _clip(line: str, limit: int = _EXAMPLE_CHARS) -> str:
    """``line`` cut to about ``limit`` characters: its head and tail kept, the middle counted out."""
    if len(line) <= limit:
        return line
    tail = limit // 4
    head = limit - tail
    return f"{line[:head]} …[{plural(len(line) - head - tail, 'character')} elided]… {line[-tail:]}"


def _stamp_text(line: str, stamp_end: int) -> str:
    return line[:stamp_end].strip(" []()")


@dataclass(slots=True)
class _Piece:
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


_SLOT_TEMPLATE = 0
_SLOT_EXAMPLE = 1
_SLOT_ALERTS = 2


def _split_variables(body: str) -> tuple[list[str], list[str]]:
    """The constant pieces of ``body`` and the variable values between them (as ``mask_variables`` sees them)."""
    constants: list[str] = []
    values: list[str] = []
    position = 0
    for match in _VARIABLE.finditer(body, 0, _MASK_PREFIX):
        constants.append(body[position : match.start()])
        values.append(match.group())
        position = match.end()
    constants.append(body[position:])
    return constants, values


def _display(lines: list[str], records: _Records, template: _Template) -> str:
    """The template with only the fields that vary as ``<*>``, judged on its first, second and last lines.

    A short field with one value in every sampled line (a constant ``uid=0``, a
    fixed port) is shown as it is; a long one stays ``<*>``. When the samples do not share one shape (merged
    templates), the masked key is the display.
    """
    numbers = {template.first_record, template.last_record}
    if template.second_record >= 0:
        numbers.add(template.second_record)
    samples = []
    for number in sorted(numbers):
        body = lines[records.start[number]][records.body_start[number] :]
        if len(body) > _MASK_PREFIX:
            return template.masked
        samples.append(_split_variables(body))
    constants, values = samples[0]
    if any(other_constants != constants for other_constants, _ in samples[1:]):
        return template.masked
    pieces = [constants[0]]
    for index, value in enumerate(values):
        same = all(other_values[index] == value for _, other_values in samples[1:])
        # A long constant with a digit (a session id, a hash) costs many tokens and says little: it stays
        # masked, but for its named pieces (see ``_value_shape``). One without a digit is a name or a phrase.
        if same and _named(value):
            pieces.append(value)
        else:
            pieces.append(_value_shape([other_values[index] for _, other_values in samples]))
        pieces.append(constants[index + 1])
    shown = "".join(pieces)
    return _WILDCARD_RUN.sub(_WILDCARD, shown) if "> <*>" in shown else shown


def _value_shape(values: list[str]) -> str:
    """``<*>`` for a field that varies or is a long constant, keeping its shape when every sample shares it.

    An address with its port (``10.0.0.1:50010``) or a ``host:port`` reads as ``<*>:<*>``; a value of at most
    three word pieces with the same punctuation between them reads as that punctuation around ``<*>``
    (``<*>.<*>`` a decimal, ``<*>::powerChange`` a method of a numbered class): the separators tell what kind of
    value it is for a token or two. A piece with one value in every sample stays when it is short or holds no
    digit (a name, not an id).
    """
    for split in (_colon_pieces, _word_pieces):
        shaped = _shape_by(values, split)
        if shaped is not None:
            return shaped
    return _opening(values) + _WILDCARD + _opening([value[::-1] for value in values])[::-1]


def _opening(values: list[str]) -> str:
    """The punctuation every value opens with (the ``/`` of an absolute path, a quote), or ``""``."""
    openings = set()
    for value in values:
        match = _PUNCTUATION_RUN.match(value)
        openings.add("" if match is None or match.end() == len(value) else match.group())
    return openings.pop() if len(openings) == 1 else ""


def _named(value: str) -> bool:
    """Whether a value that is the same in every sample is worth its tokens: short, or holding no digit."""
    return len(value) <= _CONSTANT_CHARS or not any(character.isdigit() for character in value)


def _colon_pieces(value: str) -> tuple[list[str], list[str]] | None:
    pieces = value.split(":")
    return (pieces, [":"] * (len(pieces) - 1)) if all(pieces) else None


def _word_pieces(value: str) -> tuple[list[str], list[str]]:
    split = _PUNCTUATION_RUN.split(value)
    return split[::2], split[1::2]


def _shape_by(values: list[str], split: Callable[[str], tuple[list[str], list[str]] | None]) -> str | None:
    """The values as their shared pieces and separators (see ``_value_shape``), or ``None`` when they differ."""
    shapes = [split(value) for value in values]
    first = shapes[0]
    if first is None or not 2 <= len(first[0]) <= _SHAPE_MAX_PIECES:
        return None
    pieces, separators = first
    if any(shape is None or shape[1] != separators for shape in shapes[1:]):
        return None
    shown = []
    for position, piece in enumerate(pieces):
        same = all(shape is not None and shape[0][position] == piece for shape in shapes)
        shown.append(piece if same and _named(piece) else _WILDCARD)
    return "".join(piece + separator for piece, separator in zip(shown, [*separators, ""], strict=True))


def _template_line(lines: list[str], records: _Records, template: _Template) -> str:
    shown = _display(lines, records, template).strip()
    return f"{TIMES}{thousands(template.count)} {_clip(shown, _TEMPLATE_CHARS)}"


def _example(lines: list[str], records: _Records, template: _Template) -> str:
    """The template's first real line (with its continuation lines) and, if it recurs, when it last did."""
    first_start = records.start[template.first_record]
    first_end = records.end[template.first_record]
    last_stamp = records.stamp_end[template.last_record]
    entry = "    e.g. " + _clip(lines[first_start])
    if template.count > 1 and last_stamp:
        entry += f" (last {_stamp_text(lines[records.start[template.last_record]], last_stamp)})"
    continuation = first_end - first_start - 1
    if continuation:
        shown = lines[first_start + 1 : first_start + 4]
        entry += "\n" + "\n".join("      " + _clip(line) for line in shown)
        if continuation > len(shown):
            entry += f"\n      {elision(continuation - len(shown), 'continuation line')}"
    return entry


def _pieces(lines: list[str], records: _Records, templates: list[_Template]) -> list[_Piece]:
    """Every template's line first (a leading template's real line right after its own), then examples, then
    extra alert lines.

    Within a tier alert templates go first, then the templates that make up a
    twentieth of the log (what it mostly says), then the shortest templates, so a
    tight budget shows as many distinct events as it can before any of them gets
    extras. Template lines are ranked by their masked key's length and spelled
    out only when the fit reaches them; examples need their template's line, so
    they are spelled out only for templates that could be shown.
    """
    records_total = sum(template.count for template in templates)
    # A template that makes up a good share of the log is what the log mostly says, whatever its length: its
    # line and a real one come before the rarer templates.
    leading = [template.count * _LEADING_ONE_IN >= records_total for template in templates]
    ranked = sorted(
        range(len(templates)), key=lambda i: (not templates[i].alert, not leading[i], len(templates[i].masked), i)
    )
    rank_of = {index: rank for rank, index in enumerate(ranked)}
    total = 2 * len(templates)
    pieces: list[_Piece] = []
    for index, template in enumerate(templates):
        rank = rank_of[index]
        pieces.append(_Piece(index, _SLOT_TEMPLATE, 2 * rank, None, min(len(template.masked), _TEMPLATE_CHARS) + 8))
        first_start = records.start[template.first_record]
        # A leading template shows a real line right after its own; alert templates once every template line
        # is in; other examples come after every alert line.
        late_tier = total if template.alert else 3 * total
        example_priority = 2 * rank + 1 if leading[index] else late_tier + rank
        first_line = lines[first_start]
        example_size = min(len(first_line), _EXAMPLE_CHARS) + 10
        pieces.append(_Piece(index, _SLOT_EXAMPLE, example_priority, None, example_size))
        if template.alert_lines:
            example_body = first_line[records.body_start[template.first_record] :].strip()
            pieces[-1].quotes = template.alert_lines.get(example_body, 0)
            extra = [(body, count) for body, count in template.alert_lines.items() if body != example_body]
            if extra:
                text = "\n".join(f"    ! {TIMES}{thousands(count)} {_clip(body)}" for body, count in extra)
                pieces.append(
                    _Piece(
                        index, _SLOT_ALERTS, 2 * total + rank, text, len(text), quotes=sum(count for _, count in extra)
                    )
                )
    return pieces


def distill_log(text: str, target_tokens: int, encoding: str, *, mine: bool = True) -> LogDigest:
    """A compact rendering of a log within ``target_tokens`` when it can be done (the caller measures it)."""
    lines = text.split("\n")
    if not mine:
        stamps = [line[: stamp.end] for line in (lines[:1000] + lines[-1000:]) if (stamp := leading_stamp(line))]
        valid_from, valid_to = window_of(stamps)
        header = f"[{thousands(len(lines))}-line log · head and tail only (shallow tier)]"
        return LogDigest(header + "\n" + head_tail(text, max(target_tokens - 20, 1)), 0, 0, valid_from, valid_to)
    records, heads, fields = _records(lines, text)
    templates = _mine(lines, records, heads)
    valid_from, valid_to = window_of(
        [lines[start][:end] for start, end in zip(records.start, records.stamp_end, strict=True) if end]
    )
    alert_count = sum(template.count for template in templates if template.alert)
    window = f" · {valid_from} → {valid_to}" if valid_from else ""
    header = (
        f"[{thousands(len(lines))}-line log · {plural(len(templates), 'template')} · "
        f"{thousands(alert_count)} error/warn{window}]"
    )
    if fields.columns:
        after = " after the clock" if any(records.stamp_end) else ""
        header += (
            f"\ntemplate and ! lines leave out the first {plural(fields.columns, 'space-separated field')}{after} "
            f"where a message follows them (they hold: {_clip(fields.summary, _TEMPLATE_CHARS)})"
        )
    pieces = _pieces(lines, records, templates)

    def spell(piece: _Piece) -> str:
        if piece.text is None:
            template = templates[piece.template]
            if piece.slot == _SLOT_TEMPLATE:
                piece.text = _template_line(lines, records, template)
            else:
                piece.text = _example(lines, records, template)
            piece.size = len(piece.text)
        return piece.text

    alert_templates = sum(1 for template in templates if template.alert)
    if len(text) <= target_tokens * _WHOLE_RENDERING_TRIAL:
        everything = sorted(pieces, key=lambda piece: piece.priority)
        for piece in everything:
            spell(piece)
        whole = _render(header, everything, templates)
        # A rendering no longer than the log it renders often fits a small log's target: one exact count
        # tells, and spares the estimates and the fitting rounds.
        tokens = count_tokens(whole, encoding) if len(whole) <= len(text) else target_tokens + 1
        if tokens <= target_tokens:
            return LogDigest(whole, len(templates), alert_templates, valid_from, valid_to, tokens)
    rates = _estimate_tokens(pieces, encoding, spell, min(_ESTIMATE_SAMPLE_CHARS, max(target_tokens, 64) * 4))
    rendering, tokens = _fit(header, pieces, templates, target_tokens, encoding, spell, rates)
    return LogDigest(rendering, len(templates), alert_templates, valid_from, valid_to, tokens)


def _estimate_tokens(
    pieces: list[_Piece], encoding: str, spell: Callable[[_Piece], str], sample_chars: int
) -> dict[int, float]:
    """Per-piece token estimates from one exact count per kind of piece, spread by length; the rates per slot.

    Counting each piece alone would cost a tokenizer call per template; the fit
    below measures its result exactly and corrects, so an estimate is enough here.
    Masked lines and real lines tokenize differently, so each slot gets its own rate,
    sampled from its highest-priority pieces (the ones most likely to be shown), about as many
    characters as the target could show.
    """
    rates: dict[int, float] = {}
    for slot in (_SLOT_TEMPLATE, _SLOT_EXAMPLE, _SLOT_ALERTS):
        members = sorted((piece for piece in pieces if piece.slot == slot), key=lambda piece: piece.priority)
        if not members:
            continue
        sample: list[str] = []
        size = 0
        for piece in members:
            if size >= sample_chars:
                break
            sample.append(spell(piece))
            size += len(sample[-1]) + 1
        joined = "\n".join(sample)
        tokens_per_char = count_tokens(joined, encoding) / max(len(joined), 1)
        rates[slot] = tokens_per_char
        for piece in members:
            piece.tokens = int((piece.size + 1) * tokens_per_char) + 1
    return rates


def _fit(
    header: str,
    pieces: list[_Piece],
    templates: list[_Template],
    target: int,
    encoding: str,
    spell: Callable[[_Piece], str],
    rates: dict[int, float],
) -> tuple[str, int]:
    """The richest rendering that measures within ``target``: estimate, measure, rescale, a few times over."""
    by_priority = sorted(pieces, key=lambda piece: piece.priority)
    # The frame around the pieces (header, legend, omission notes) costs about this much whatever is chosen.
    frame = count_tokens(_render(header, [], templates), encoding) + 16
    allowance = target - frame
    smallest = min((piece.tokens for piece in pieces), default=0)
    # When not every template line fits, templates sharing a leading tag are grouped under it (see
    # ``_grouped_body``), so each line spends its tokens on what tells it apart.
    group = sum(piece.tokens for piece in pieces if piece.slot == _SLOT_TEMPLATE) > allowance
    best: tuple[str, int] | None = None
    for _ in range(_FIT_ROUNDS):
        chosen: list[_Piece] = []
        spent = 0
        shown: set[int] = set()
        for piece in by_priority:
            if allowance - spent < smallest:
                break
            # An example or alert lines are only worth their tokens next to their template's line.
            if spent + piece.tokens > allowance or (piece.slot and piece.template not in shown):
                continue
            if piece.text is None:
                spell(piece)
                piece.tokens = int((piece.size + 1) * rates.get(piece.slot, 0.5)) + 1
                if spent + piece.tokens > allowance:
                    continue
            chosen.append(piece)
            spent += piece.tokens
            if piece.slot == _SLOT_TEMPLATE:
                shown.add(piece.template)
        rendering = _render(header, chosen, templates, group)
        measured = count_tokens(rendering, encoding)
        if measured <= target and (best is None or measured > best[1]):
            best = rendering, measured
        everything = len(chosen) == len(pieces)
        if (everything and measured <= target) or not chosen:
            break
        if measured <= target and target - measured <= target // 40 + 8:
            break
        # Estimates are off by a roughly constant factor: rescale the allowance by what was measured.
        factor = max(spent, 1) / max(measured - frame, 1)
        allowance = int((target - frame) * factor * 0.99) - 4
    if best is None:
        # Nothing measured within the target: the header and the omission note alone.
        rendering = _render(header, [], templates)
        best = rendering, count_tokens(rendering, encoding)
    return best


def _tag_prefix(text: str) -> str:
    """The leading tag of a template line's text (after its count), or ``""``.

    A tag is the run of at most ``_GROUP_PREFIX_WORDS`` leading words that ends at the first word ending in
    ``:`` and holding a letter (``kernel[0]:``, ``D PowerManagerService:``): the process or component that
    logged the event. Something must follow it.
    """
    rest = text.split(" ", 1)[1] if " " in text else ""
    words = rest.split(" ", _GROUP_PREFIX_WORDS)
    for index, word in enumerate(words[:_GROUP_PREFIX_WORDS]):
        if index + 1 < len(words) and len(word) > 1 and word.endswith(":") and any(c.isalpha() for c in word):
            return " ".join(words[: index + 1])
    return ""


def _grouped_body(ordered: list[_Piece]) -> tuple[list[str], bool]:
    """The pieces' lines with templates that share a leading tag listed under one ``§ tag`` heading.

    Each template line under a heading is indented by one space and leaves out the tag; a group is
    listed where its first template appears, its members in order of first appearance.
    """
    tags: dict[int, str] = {}
    members: dict[str, list[int]] = {}
    for piece in ordered:
        if piece.slot == _SLOT_TEMPLATE:
            tag = _tag_prefix(piece.text or "")
            if tag:
                tags[piece.template] = tag
                members.setdefault(tag, []).append(piece.template)
    grouped = {tag for tag, indices in members.items() if len(indices) >= _GROUP_MIN_TEMPLATES}
    if not grouped:
        return [piece.text or "" for piece in ordered], False
    blocks: dict[int, list[str]] = {}
    for piece in ordered:
        text = piece.text or ""
        tag = tags.get(piece.template, "")
        if piece.slot == _SLOT_TEMPLATE and tag in grouped:
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


def _render(header: str, chosen: list[_Piece], templates: list[_Template], group: bool = False) -> str:
    shown = {piece.template for piece in chosen if piece.slot == _SLOT_TEMPLATE}
    ordered = sorted(chosen, key=lambda piece: (piece.template, piece.slot))
    if group:
        body, grouped = _grouped_body(ordered)
    else:
        body, grouped = [piece.text or "" for piece in ordered], False
    legend = (
        f"templates by first appearance ({TIMES}count, then the line with {_WILDCARD} where a field or part of one "
        "varies among its first, second and last lines or is a long id; e.g. a real line; ! a distinct alert line)"
    )
    if grouped:
        legend += (
            f"; § T heads the templates that begin with the tag T: each is listed under it, indented, "
            f"as {TIMES}count and the rest of its line"
        )
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
