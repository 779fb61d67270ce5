"""Display: a template's line, its real example records, and how a long line is clipped.

Each shown template gets one line, ``×count`` and the template with ``<*>``
where a field varies among its first, second and last lines or is a long
constant with a digit (an id). A kept line says why when it is not plain:
``(matches ask)``, ``(alert)`` in an excerpt. A masked field keeps its shape when its samples share it:
a ``host:port`` reads ``<*>:<*>``, a decimal ``<*>.<*>``, a method of a numbered
class ``<*>::name``, an absolute path ``/<*>``, a quoted value ``'<*>'``. Very long
lines keep their head and tail around a counted ``…`` marker (or, with the ask, the
stretches around its terms). An example whose record has no clock of its own is dated by the line right above
it when that line holds a date and a time (``after: === puma startup: 2016-05-09 08:22:10 +0800 ===``). What a
rendering holds, in which order, and how it is laid out is ``organs.stomach.core.distill.log.pieces``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from organs.stomach.core.asked import AskTerms
from organs.stomach.core.distill.log.masking import WILDCARD, collapse_runs, split_variables
from organs.stomach.core.distill.log.mining import Records, Template
from organs.stomach.core.distill.text import TIMES, elision, plural, thousands
from organs.stomach.core.shapes.line_shapes import is_wordless
from organs.stomach.core.shapes.timestamps import holds_date_and_time
from organs.stomach.core.shapes.trace_shapes import library_frame
from organs.stomach.core.tuning import LogConfig

__all__ = [
    "ALERT_MARK",
    "ASK_MARK",
    "clip",
    "constant_line",
    "example",
    "stamp_text",
    "telling_continuation",
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
    tail_start = len(line) - limit // 4
    if not any(start >= limit - limit // 4 and stop <= tail_start for start, stop in positions):
        return None
    # Cut to stretches, the head is its opening quarter: a term past it is shown in a stretch of its own too.
    hidden = [(start, stop) for start, stop in positions if stop <= tail_start]
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
    if records.stamp_end[record] <= 0:
        # A record with no clock of its own is dated by the clocked line the program printed right before it.
        when = _clocked_before(real, first_start, config)
        if when is not None:
            entry = f"    after: {clip(when, config.example_chars, ask)}\n{entry}"
    if first_end - first_start > 1:
        entry += "\n" + "\n".join(_continuation(real, first_start, first_end, config, ask))
    return entry


def telling_continuation(
    real: Sequence[str], start: int, end: int, count: int, ask: AskTerms | None, read: int
) -> list[int]:
    """The ``count`` continuation lines of the record at ``start`` that tell most, in order (``_continuation``),
    chosen among its first ``read``: a record of a million lines is not ranked whole every time it is shown. A
    line of no word (a blank, a gutter, a pointer) comes after every other."""

    def rank(index: int) -> tuple[bool, bool, bool, bool, int]:
        line = real[index]
        return is_wordless(line), index != start + 1, library_frame(line), not (ask and ask.named(line)), index

    return sorted(sorted(range(start + 1, min(end, start + 1 + read)), key=rank)[:count])


def _continuation(real: Sequence[str], start: int, end: int, config: LogConfig, ask: AskTerms | None) -> list[str]:
    """The record's continuation lines that tell most, ``continuation_lines_shown`` of them in order, the rest
    counted: the first (what the record's head goes on to say), then the application's own lines before a runtime's
    or an installed package's frames (a Ruby backtrace under a job's warning is mostly gems;
    ``app/models/folder.rb:34`` is the line the reader wants), those naming the ask's terms first among each."""
    shown = telling_continuation(real, start, end, config.continuation_lines_shown, ask, config.continuation_lines_read)
    body: list[str] = []
    previous = start
    for index in shown:
        if index > previous + 1:
            body.append(f"      {elision(index - previous - 1, 'continuation line')}")
        body.append("      " + clip(real[index], config.example_chars, ask))
        previous = index
    if end - 1 > previous:
        body.append(f"      {elision(end - 1 - previous, 'continuation line')}")
    return body


def _clocked_before(real: Sequence[str], start: int, config: LogConfig) -> str | None:
    """The nearest line within ``when_lines_back`` lines above ``start`` that holds a date and a time, if any: a
    banner the program prints before a record with no clock of its own ("=== puma startup: 2016-05-09 08:22 ===")."""
    for index in range(start - 1, max(start - 1 - config.when_lines_back, -1), -1):
        if holds_date_and_time(real[index]):
            return real[index]
    return None


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
