"""Mining templates: records keyed by their masked body, then templates that differ in one word merged.

Lines are keyed with their digits flattened to ``0`` (a C-speed translate), so
masking and level detection run once per distinct shape, not once per line, and
masking runs once per distinct word. The leading timestamp is set aside first,
so it never splits a template; then header fields (see ``headers``).

When most lines open with a clock, a line without one continues the record
above it, so a stack trace inside a log stays with the line that announced it;
when only some do (records carrying long traces), an unclocked line continues the
record when it reads as a continuation (indented, a frame, a cause, wrapped JSON).

Templates that differ in one word are merged with ``<*>`` there when that word
takes at least ``merge_min_variants`` values (user names, host names), or two
values when one of them is already partly variable and the line has enough other
words to be the same event; two or three plain values (``opened``/``closed``)
are kept apart, because they are usually different events. A merge also needs at
least three other constant words (and, with fewer than four, twice
``merge_min_variants`` values): a word that is, beside a tag or a level, the
whole message is the event itself (``closeQs``, ``instantCollapse``), not a field.
"""

from __future__ import annotations

import heapq
import re
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain

from organs.stomach.core.distill.log.alerts import alert_kind, separating_spans
from organs.stomach.core.distill.log.headers import Header, cut_fields, header_columns
from organs.stomach.core.distill.log.masking import DIGITS_TO_ZERO, WILDCARD, joined, mask_by_words, word_masks
from organs.stomach.core.shapes.line_shapes import is_compiler_diagnostic, is_source_quote
from organs.stomach.core.shapes.timestamps import leading_stamp
from organs.stomach.core.shapes.trace_shapes import is_trace_frame
from organs.stomach.core.tuning import LogConfig
from organs.text_views import line_pieces

__all__ = ["Records", "Shape", "Template", "alert_key", "mine_templates", "records_of"]
# A diagnostic that says its finding on its own line (a checker that heads its findings with "In a.sh line 3:" says
# them in the lines under it, each a record of its own).
_SEVERITY = re.compile(r"\b(?:error|warning|note|remark)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Shape:
    """What every line with the same digit-flattened spelling shares."""

    stamp_end: int
    masked: str
    # The alert's kind (see ``alerts.alert_kind``), ``""`` for an ordinary line.
    kind: str
    # The body's space-separated words, each masked on its own (one per word of the body, leading
    # blanks included); empty when the body takes the line-wide masking path.
    words: tuple[str, ...] = ()
    # Where the real lines hold numbers that may tell alerts apart (judged line by line), and the numbers a
    # real line held there: they split its template.
    spans: tuple[tuple[int, int, str], ...] = ()
    split: str = ""

    @property
    def alert(self) -> bool:
        return bool(self.kind)


@dataclass(slots=True)
class Template:
    masked: str
    first_record: int
    last_record: int
    second_record: int = -1
    count: int = 0
    line_count: int = 0
    alert: bool = False
    alert_records: int = 0
    # Distinct alert lines (after the clock) and how often each recurs; lines that differ only in their digits
    # are one alert line, spelled as it first appeared (``alert_keys`` maps the digit-flattened spelling to it).
    alert_lines: dict[str, int] = field(default_factory=dict)
    alert_keys: dict[str, str] = field(default_factory=dict)
    # An alert line's last spelling, by its first, where the two differ in their digits.
    alert_last: dict[str, str] = field(default_factory=dict)
    # Alert records by kind, and the separating numbers every record of the template holds.
    kinds: dict[str, int] = field(default_factory=dict)
    split: str = ""
    # The record holding the ask's rarest terms (-1 for none), how many it holds and what they weigh
    # (``distill.log._asked``): shown as the example.
    asked_record: int = -1
    asked_hits: int = 0
    asked_weight: int = 0
    # The records holding the ask's rarest terms (at most ``LogConfig.asked_lines_shown``), in order: what differs
    # among them is often the answer ("Active log file name: <*>" for each of five appenders; of 35 "Can't resolve
    # '<*>'" records, those naming the module asked of). ``asked_best`` holds them as a heap while mining:
    # (weight, hits, -record), the earlier record first among equals.
    asked_records: list[int] = field(default_factory=list)
    asked_best: list[tuple[int, int, int]] = field(default_factory=list)
    # The first record of each template merged into this one, in order (none for a template never merged): its
    # spellings of the word the merge made a field.
    variant_records: list[int] = field(default_factory=list)


@dataclass(slots=True)
class Records:
    """Records (a head line plus its continuation lines) as parallel columns.

    ``stamp_end`` is where the head line's clock ends; ``body_start`` is where its
    template body starts (after the clock and any header fields left out). Arrays, not lists: a log of
    millions of lines holds four numbers a record in 32 bytes instead of 150.
    """

    start: array[int]
    end: array[int]
    stamp_end: array[int]
    body_start: array[int]


@dataclass(slots=True)
class _Shared:
    """One copy of each masked body and word tuple: lines that differ only in an id share their masks, where a
    log of ids would otherwise hold one copy per line. ``mask_prefix`` is how much of a line is masked,
    ``count_digits`` how long a number counting failures may be (``LogConfig``)."""

    mask_prefix: int
    count_digits: int
    masked: dict[str, str] = field(default_factory=dict)
    words: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)
    # Shapes, and heads with their header fields cut off (with where their body starts): compared by value.
    shapes: dict[Shape, Shape] = field(default_factory=dict)
    cut: dict[tuple[Shape, int], tuple[Shape, int]] = field(default_factory=dict)


_POINTER_LEAD = re.compile(r"[ \t]*\^[-~^]*")


def _shape_of(key: str, words: dict[str, str], shared: _Shared) -> Shape:
    stamp = leading_stamp(key)
    stamp_end = -1 if stamp is None else stamp.end
    body = key[max(stamp_end, 0) :]
    masked_words = word_masks(body, words, shared.mask_prefix)
    masked = mask_by_words(body, words, shared.mask_prefix) if masked_words is None else joined(masked_words)
    if masked.lstrip(" \t")[:1] == "^":
        # A pointer under a quoted line ("      ^---^ SC2086 (info): …") sits and stretches where its column is:
        # its findings are one template whatever the column.
        masked = _POINTER_LEAD.sub("^--", masked, count=1)
    masked = shared.masked.setdefault(masked, masked)
    masked_words = shared.words.setdefault(masked_words, masked_words) if masked_words else ()
    kind, spans = alert_kind(key, shared.count_digits), separating_spans(key, shared.count_digits)
    shape = Shape(stamp_end, masked, kind, masked_words, spans)
    return shared.shapes.setdefault(shape, shape)


def _refined(shape: Shape, key: int, line: str, cache: dict[tuple[int, str], Shape], count_digits: int) -> Shape:
    """The shape of a real line (of the ``key``-th distinct key) whose numbers may tell an alert apart: its own
    kind and split."""
    values = "|".join(line[start:end] for start, end, _ in shape.spans)
    refined = cache.get((key, values))
    if refined is None:
        kind = shape.kind or alert_kind(line, count_digits)
        refined = Shape(shape.stamp_end, shape.masked, kind, shape.words, shape.spans, values)
        cache[key, values] = refined
    return refined


# Distinct keys kept whole (about 150 bytes each); those past them cost about 50.
_KEYS_KEPT = 1 << 16


class _KeyNumbers:
    """Each distinct key's number, in order of first appearance.

    The first ``_KEYS_KEPT`` distinct keys are kept whole. Past them (a log of ids, where nearly every line is a
    key of its own) a key is kept as its hash and the line it first appeared on, which gives it back: a copy of
    every line's key would cost as much as the log again.
    """

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines
        self.kept: dict[str, int] = {}
        self.kept_keys: list[str] = []
        self.hashed: dict[int, int] = {}
        # Keys whose hash an earlier key has.
        self.colliding: dict[str, int] = {}
        self.first_line = array("q")

    def key(self, number: int) -> str:
        """The key numbered ``number``."""
        if number < len(self.kept_keys):
            return self.kept_keys[number]
        return self.lines[self.first_line[number]].translate(DIGITS_TO_ZERO)

    def number(self, key: str, line: int) -> int:
        """The number of ``key`` (not among the kept keys), first seen on ``line`` when it is new."""
        fresh = len(self.first_line)
        if len(self.kept) < _KEYS_KEPT:
            self.kept[key] = fresh
            self.kept_keys.append(key)
        else:
            hashed = hash(key)
            known = self.hashed.get(hashed)
            if known is not None and self.key(known) == key:
                return known
            known = self.colliding.get(key) if known is not None else None
            if known is not None:
                return known
            if hashed in self.hashed:
                self.colliding[key] = fresh
            else:
                self.hashed[hashed] = fresh
        self.first_line.append(line)
        return fresh


_DIGIT_RUN = re.compile(r"\d+")
_CONTINUATION_OPENINGS = (" ", "\t", "}", "]", ")", '"', "Caused by", "Stack trace", "[stacktrace]", "Traceback")
# A full date and time anywhere in a line's opening: ISO-like (2024-11-09T07:32:54, 2024-11-09 07:32:54) or an
# access log's (08/Nov/2024:06:31:57).
_OWN_CLOCK = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}|\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2}")


def _continues(line: str) -> bool:
    """Whether an unclocked line reads as part of the record above: indented, a trace frame (``#3 …`` too), a
    cause, a closing bracket of wrapped JSON, or blank."""
    if not line or line.startswith(_CONTINUATION_OPENINGS) or is_trace_frame(line):
        return True
    return line[0] == "#" and line[1:2].isdigit()


def _own_record(line: str, within: int) -> bool:
    """Whether a line that does not open with a clock is a record of its own all the same: a whole JSON object (a
    JSON record between a service's clocked lines), or a line that carries a full date and time of its own in its
    first ``within`` characters (an access log's) and does not read as a continuation."""
    if line.startswith('{"') and line.rstrip().endswith("}"):
        return True
    # The clock first: it is rare on such a line and cheap to look for; reading a continuation is neither.
    return _OWN_CLOCK.search(line, 0, within) is not None and not _continues(line)


def records_of(lines: Sequence[str], text: str, config: LogConfig) -> tuple[Records, list[Shape], Header]:
    """Records (a head line plus its continuation lines), the shape of each record's head, and the header."""
    words: dict[str, str] = {}
    shared = _Shared(config.mask_prefix, config.count_digits)
    keys, key_shapes, line_keys, line_shapes, refined_keys = _line_shapes(lines, text, words, shared)
    starts, ends, stamps, heads = _bounds(lines, line_shapes, config)
    # Records per key (a key whose lines are refined has none: its refined shapes have them) and per shape object.
    key_weights = array("q", bytes(8 * len(key_shapes)))
    for number in line_keys if heads is line_shapes else map(line_keys.__getitem__, starts):
        key_weights[number] += 1
    for number, shape in enumerate(key_shapes):
        if shape.spans:
            key_weights[number] = 0
    shape_weights = Counter(map(id, heads))
    del line_shapes
    # Fields are the non-empty words: columns padded with several spaces stay aligned. Shapes with the same
    # fields count together (the columns are read by weight), so a log of ids holds one entry per template.
    split: dict[tuple[str, ...], int] = {}
    weighed = chain(
        zip(key_shapes, key_weights, strict=True),
        ((shape, shape_weights[id(shape)]) for _, shape in refined_keys.values() if id(shape) in shape_weights),
    )
    for shape, weight in weighed:
        if shape.words and weight:
            fields = shape.words if "" not in shape.words else tuple(filter(None, shape.words))
            split[fields] = split.get(fields, 0) + weight
    header = header_columns(list(split.items()), config)
    if not header.columns:
        return Records(starts, ends, stamps, stamps), heads, header
    # A key no record heads is never cut: it holds its uncut shape.
    key_cuts = [
        _cut(keys.key(number), shape, header, words, shared) if weight else (shape, 0)
        for number, (shape, weight) in enumerate(zip(key_shapes, key_weights, strict=True))
    ]
    refined_cuts = {
        id(shape): _cut(keys.key(number), shape, header, words, shared)
        for number, shape in refined_keys.values()
        if id(shape) in shape_weights
    }
    # The keys are cut: what numbered them goes before the records' columns are built.
    del keys, key_shapes, key_weights, refined_keys, shape_weights
    cut_heads: list[Shape] = []
    body_starts = array("q")
    for head, shape, stamp in zip(starts, heads, stamps, strict=True):
        cut_shape, offset = refined_cuts[id(shape)] if shape.spans else key_cuts[line_keys[head]]
        cut_heads.append(cut_shape)
        body_starts.append(stamp + offset)
    return Records(starts, ends, stamps, body_starts), cut_heads, header


def _line_shapes(
    lines: Sequence[str], text: str, words: dict[str, str], shared: _Shared
) -> tuple[_KeyNumbers, list[Shape], array[int], list[Shape], dict[int, tuple[int, Shape]]]:
    """Each line's key number and shape: the distinct keys, their shapes, each line's key number and shape, and
    the shapes refined by a line's own numbers with their key's number, in order of appearance."""
    # Each distinct key is numbered, and each line holds its key's number: the header and the cut are judged
    # key by key. Their shapes are shared by value, so a log of ids holds one per template, not per line.
    keys = _KeyNumbers(lines)
    kept = keys.kept
    key_shapes: list[Shape] = []
    line_keys = array("q")
    line_shapes: list[Shape] = []
    # Keyed a piece of the text at a time: a list of every line's key would cost as much as the lines.
    for piece in line_pieces(text):
        for key in piece.translate(DIGITS_TO_ZERO).split("\n"):
            number = kept.get(key)
            if number is None:
                number = keys.number(key, len(line_keys))
                if number == len(key_shapes):
                    key_shapes.append(_shape_of(key, words, shared))
            line_keys.append(number)
            line_shapes.append(key_shapes[number])
    refined_keys: dict[int, tuple[int, Shape]] = {}
    refinements: dict[tuple[int, str], Shape] = {}
    for index, shape in enumerate(line_shapes):
        if shape.spans:
            number = line_keys[index]
            refined = _refined(shape, number, lines[index], refinements, shared.count_digits)
            line_shapes[index] = refined
            refined_keys[id(refined)] = number, refined
    return keys, key_shapes, line_keys, line_shapes, refined_keys


def _bounds(
    lines: Sequence[str], line_shapes: list[Shape], config: LogConfig
) -> tuple[array[int], array[int], array[int], list[Shape]]:
    """Where each record starts and ends, where its clock ends, and its head's shape (``line_shapes`` itself when
    every line is a record of its own)."""
    stamp_ends = array("q", (shape.stamp_end for shape in line_shapes))
    count = len(stamp_ends)
    clocked = count - stamp_ends.count(-1)
    mostly = clocked * 2 >= count
    continues: list[bool] = []
    if not mostly and clocked:
        continues = [end < 0 and _continues(line) for line, end in zip(lines, stamp_ends, strict=True)]
        # Records with a clock must be what the log is made of: when more lines neither carry a clock nor read as
        # a continuation, the clocked lines are incidental (a build step that prints a date).
        if count - clocked - sum(continues) > clocked:
            clocked = 0
    if clocked == 0:
        diagnosed = _diagnostic_records(lines, line_shapes, config)
        if diagnosed is not None:
            return diagnosed
    if clocked in (0, count):
        # No continuation lines: every line is a record of its own.
        stamps = array("q", (max(end, 0) for end in stamp_ends))
        return array("q", range(count)), array("q", range(1, count + 1)), stamps, line_shapes
    # When most lines open with a clock, a line without one continues the record above it unless it carries a
    # clock of its own; when few do (records that carry long traces), only a line that reads as a continuation does.
    starts, ends, stamps, heads = array("q"), array("q"), array("q"), []
    for index, shape in enumerate(line_shapes):
        if (
            shape.stamp_end < 0
            and starts
            and (not _own_record(lines[index], config.own_clock_chars) if mostly else continues[index])
        ):
            ends[-1] = index + 1
        else:
            starts.append(index)
            ends.append(index + 1)
            stamps.append(max(shape.stamp_end, 0))
            heads.append(shape)
    return starts, ends, stamps, heads


def _diagnostic_records(
    lines: Sequence[str], line_shapes: list[Shape], config: LogConfig
) -> tuple[array[int], array[int], array[int], list[Shape]] | None:
    """A compiler's or linter's run as records: each diagnostic naming its severity (``warning: …``,
    ``a.c:3:5: error: …`` at the line's start) with the location, source and notes indented under it; None
    unless the diagnostics and their indented lines are nearly all the run (``LogConfig.diagnosed_tenths``)."""
    heads = [
        index
        for index, line in enumerate(lines)
        if line[:1].strip() and is_compiler_diagnostic(line) and _SEVERITY.search(line) is not None
    ]
    if len(heads) < config.diagnosed_least:
        return None
    starts, ends, heads_shapes = array("q"), array("q"), []
    covered = 0
    first = set(heads)
    for index, line in enumerate(lines):
        if index not in first and starts and (_continues(line) or is_source_quote(line)):
            ends[-1] = index + 1
            covered += 1
            continue
        starts.append(index)
        ends.append(index + 1)
        heads_shapes.append(line_shapes[index])
    if (covered + len(heads)) * 10 < len(lines) * config.diagnosed_tenths:
        return None
    return starts, ends, array("q", bytes(8 * len(starts))), heads_shapes


def _cut(key: str, shape: Shape, header: Header, words: dict[str, str], shared: _Shared) -> tuple[Shape, int]:
    """A head's shape with its header fields cut off, and where its body starts (0 when nothing is cut)."""
    body = key[max(shape.stamp_end, 0) :]
    raw_words = body.split(" ")
    cut = cut_fields(raw_words, header.columns)
    if not cut:
        return shape, 0
    # The cut words and the space after each.
    offset = len(" ".join(raw_words[:cut])) + 1
    if shape.spans and shape.spans[0][0] < max(shape.stamp_end, 0) + offset:
        # A number that tells alerts apart is never left out with the header fields.
        return shape, 0
    masked = joined(shape.words[cut:]) if shape.words else mask_by_words(body[offset:], words, shared.mask_prefix)
    cut_shape = Shape(shape.stamp_end, masked, shape.kind, split=shape.split), offset
    return shared.cut.setdefault(cut_shape, cut_shape)


def mine_templates(
    lines: Sequence[str],
    records: Records,
    heads: list[Shape],
    config: LogConfig,
    asked: dict[int, tuple[int, int]] | None = None,
) -> list[Template]:
    """One template per masked head body, in order of first appearance, variants merged.

    ``asked`` maps records holding the ask's terms to their hits and weight.
    """
    templates: dict[str, Template] = {}
    starts, ends = records.start, records.end
    for number, shape in enumerate(heads):
        key = f"{shape.masked}\x00{shape.split}" if shape.split else shape.masked
        template = templates.get(key)
        if template is None:
            template = Template(shape.masked, number, number, split=shape.split)
            templates[key] = template
        template.count += 1
        if template.count == 2:
            template.second_record = number
        template.line_count += ends[number] - starts[number]
        template.last_record = number
        if asked and number in asked:
            hits, weight = asked[number]
            if (weight, hits) > (template.asked_weight, template.asked_hits):
                template.asked_record, template.asked_hits, template.asked_weight = number, hits, weight
            if len(template.asked_records) < config.asked_lines_shown:
                template.asked_records.append(number)
            heapq.heappush(template.asked_best, (weight, hits, -number))
            if len(template.asked_best) > config.asked_lines_shown:
                heapq.heappop(template.asked_best)
        if shape.kind:
            template.alert = True
            template.alert_records += 1
            template.kinds[shape.kind] = template.kinds.get(shape.kind, 0) + 1
            body = lines[starts[number]][records.stamp_end[number] :].strip()
            _count_alert_line(template, body, 1, config.alert_lines_per_template)
    for template in templates.values():
        template.asked_records = _asked_shown(template.asked_records, template.asked_best, config.asked_lines_shown)
    return _merge_variants(list(templates.values()), config)


def _asked_shown(first: Sequence[int], best: Sequence[tuple[int, int, int]], shown: int) -> list[int]:
    """The asked records a template shows, in order: half of them those holding the ask's rarest terms (the
    records naming the module asked of), the rest the first ones (what differs from record to record)."""
    chosen = {-negated for _, _, negated in heapq.nlargest((shown + 1) // 2, best)}
    for number in first:
        if len(chosen) >= shown:
            break
        chosen.add(number)
    return sorted(chosen)


def _merge_variants(templates: list[Template], config: LogConfig) -> list[Template]:
    """Merge templates that differ in one word taking many values (see the module docstring)."""
    tokens = [template.masked.split(" ") for template in templates]
    # Templates split by a separating number (an HTTP status) never merge across it.
    seeds = [hash(template.split) for template in templates]
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
        if len(words) > config.merge_max_tokens:
            continue
        low, high = halves[index]
        first = 0 if shared[False, high] > 1 else len(low)
        last = len(words) if shared[True, low] > 1 else len(low)
        if first >= last:
            continue
        # Chained prefix and suffix hashes key "every word but one" in linear time; members are
        # compared word by word before merging, so a hash collision can never merge unlike lines.
        prefixes = [seeds[index]]
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
    results: list[Template] = []
    for (_, position, _, _), members in sorted(groups.items(), key=lambda item: (-len(item[1]), item[1][0])):
        if len(members) < 2:
            continue
        free = [index for index in members if index not in merged_into]
        if free:
            reference, split = tokens[free[0]], templates[free[0]].split
            free = [
                index
                for index in free
                if templates[index].split == split and _equal_but(tokens[index], reference, position)
            ]
        # A word already partly variable in one member is a variable field, so two spellings suffice,
        # provided enough other words agree that the lines are the same event.
        partly_variable = len(tokens[free[0]]) >= config.merge_context_words if free else False
        partly_variable = partly_variable and any(WILDCARD in tokens[index][position] for index in free)
        if len(free) < (2 if partly_variable else config.merge_min_variants):
            continue
        # Whatever the spellings, the merged line must keep enough constant words to name one event: a
        # word that is, beside a tag or a level, the whole message (``closeQs``) is the event, not a field.
        # With little context, only a word taking many values (an open set: user names) is a field.
        context = _constant_words(tokens[free[0]], position)
        if context < config.merge_context_words - 1 or (
            context < config.merge_context_words and not partly_variable and len(free) < 2 * config.merge_min_variants
        ):
            continue
        words = list(tokens[free[0]])
        words[position] = WILDCARD
        results.append(
            _combine(
                " ".join(words),
                [templates[index] for index in free],
                config.alert_lines_per_template,
                config.asked_lines_shown,
            )
        )
        merged_into.update(free)
    results.extend(template for index, template in enumerate(templates) if index not in merged_into)
    return sorted(results, key=lambda template: template.first_record)


def alert_key(body: str) -> str:
    """An alert line's spelling with each run of digits read as one ``0``: lines that differ only in their numbers
    are one alert line."""
    return _DIGIT_RUN.sub("0", body)


def _count_alert_line(template: Template, body: str, count: int, kept: int, last: str | None = None) -> None:
    """Count an alert line (``count`` of them, the last spelled ``last`` when not ``body``) under its first spelling,
    and remember its last spelling where it differs (the third attempt of three, after the first)."""
    key = alert_key(body)
    first = template.alert_keys.get(key)
    if first is not None:
        template.alert_lines[first] += count
        latest = last or body
        if latest != first:
            template.alert_last[first] = latest
    elif len(template.alert_lines) < kept:
        template.alert_keys[key] = body
        template.alert_lines[body] = count
        if last is not None and last != body:
            template.alert_last[body] = last


def _constant_words(words: list[str], position: int) -> int:
    """How many words other than the one at ``position`` hold no variable."""
    return sum(1 for index, word in enumerate(words) if index != position and word and WILDCARD not in word)


def _equal_but(words: list[str], reference: list[str], position: int) -> bool:
    return words[:position] == reference[:position] and words[position + 1 :] == reference[position + 1 :]


def _combine(masked: str, parts: list[Template], alert_lines_kept: int, asked_kept: int) -> Template:
    combined = Template(
        masked, min(part.first_record for part in parts), max(part.last_record for part in parts), split=parts[0].split
    )
    for part in sorted(parts, key=lambda part: part.first_record):
        combined.count += part.count
        combined.line_count += part.line_count
        combined.alert = combined.alert or part.alert
        combined.alert_records += part.alert_records
        for kind, count in part.kinds.items():
            combined.kinds[kind] = combined.kinds.get(kind, 0) + count
        if (part.asked_weight, part.asked_hits) > (combined.asked_weight, combined.asked_hits):
            combined.asked_record, combined.asked_hits = part.asked_record, part.asked_hits
            combined.asked_weight = part.asked_weight
        for body, count in part.alert_lines.items():
            _count_alert_line(combined, body, count, alert_lines_kept, part.alert_last.get(body))
    combined.asked_best = heapq.nlargest(asked_kept, chain.from_iterable(part.asked_best for part in parts))
    first = sorted(number for part in parts for number in part.asked_records)
    combined.asked_records = _asked_shown(first, combined.asked_best, asked_kept)
    combined.variant_records = sorted(part.first_record for part in parts)
    # The display reads what varies from a few records: one of them is another variant's first, so the word the
    # merge made a field is never shown as the first variant's value.
    combined.second_record = combined.variant_records[1]
    return combined
