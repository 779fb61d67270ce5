"""Table distillation: dimensions, column names with inferred types and ranges, the rows that matter.

Types: ``int``, ``float``, ``percent``, ``currency``, ``bool``, ``timestamp``,
``text``, or ``empty`` when a column holds only nulls; a trailing ``?`` marks a
column with some nulls (empty, ``null``, ``none``, ``n/a``, ``na``, ``nan``,
``nil``, ``-``). A column whose values disagree is ``text``.

Layouts: pipe-, tab- and comma-delimited, whitespace-aligned and space-separated (as many words on nearly
every line, where the gaps do not align: an access log read as a table), lines ending in
CRLF or LF. A header of directives (Zeek's ``#fields``/``#types`` lines) names the
columns; its other ``#`` lines are not rows.

Rows kept, in this order while the target allows: the header, rows holding the
ask's terms (the rarer in the table its terms, the sooner, each part of the ask
answered before any part twice), the rows whose value answers what the ask compares (``compare.Comparison``:
the greatest, those past a threshold), alert rows (a few when most rows are alerts), the rows at each numeric
column's minimum and maximum (the values the column profile names), then head and tail rows. What room is left
is filled: the other rows holding the ask's terms, then rows spread evenly over the table, so a table over its
target is served at its target. Kept rows are the paste's own lines, in paste order, each gap counted out;
a row kept for more than being near an end says why after a ``◂``.

A table that goes on as another under a header row of its own (a dump of mappings, then a summary per member
under ``#osd count …``) is served as its tables one after another, the smaller ones first given what they need
of the target and the largest the rest.
"""

from __future__ import annotations

import csv
import heapq
import math
import re
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise

from organs.stomach.core.asked import AskTerms, rarity
from organs.stomach.core.compare import Comparison
from organs.stomach.core.distill.text import TIMES, clip_line, elision, plural
from organs.stomach.core.shapes.line_shapes import box_as_pipes
from organs.stomach.core.shapes.signals import aligned_columns, is_alert
from organs.stomach.core.shapes.timestamps import leading_stamp
from organs.stomach.core.tuning import StomachTuning

__all__ = ["KEPT_MARK", "TableDigest", "distill_table", "infer_column_type"]

# What opens a kept row's reasons after the row.
KEPT_MARK = "  ◂ "
_NUMERIC_KINDS = ("int", "float", "percent", "currency")
_NULLS = frozenset({"", "null", "none", "n/a", "na", "nan", "nil", "-", "—", "?"})
_INT = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+|[-+]?\d+")
_FLOAT = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?\d{1,3}(?:,\d{3})+\.\d+")
_PERCENT = re.compile(r"[-+]?(?:\d+(?:\.\d+)?|\.\d+) ?%")
_CURRENCY = re.compile(r"[-+]?[$€£¥₹] ?\d[\d,]*(?:\.\d+)?|\d[\d,]*(?:\.\d+)? ?(?:USD|EUR|GBP|JPY|[$€£¥₹])")
_BOOLEANS = frozenset({"true", "false", "yes", "no"})
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_SEPARATOR_CELL = re.compile(r"\s*:?-{3,}:?\s*")


@dataclass(frozen=True, slots=True)
class TableDigest:
    rendering: str
    rows: int
    columns: int


def _number(value: str) -> float | None:
    digits = re.sub(r"[^\d.eE+-]", "", value)
    try:
        return float(digits)
    except ValueError:
        return None


def _value_type(value: str) -> str:
    if value.lower() in _BOOLEANS:
        return "bool"
    if _INT.fullmatch(value):
        return "int"
    if _FLOAT.fullmatch(value):
        return "float"
    if _PERCENT.fullmatch(value):
        return "percent"
    if _CURRENCY.fullmatch(value):
        return "currency"
    if not any(separator in value for separator in ":-/"):
        return "text"
    stamp = leading_stamp(value)
    if (stamp is not None and stamp.end >= len(value) - 1) or _DATE.fullmatch(value):
        return "timestamp"
    return "text"


def infer_column_type(values: list[str]) -> str:
    """The type of a column, spelled as in the rendering (``int?``, ``percent``, ``empty``…)."""
    present = [value.strip() for value in values if value.strip().lower() not in _NULLS]
    has_nulls = len(present) < len(values)
    if not present:
        return "empty"
    kinds = {_value_type(value) for value in present}
    if kinds <= {"int", "float"}:
        kind = "float" if "float" in kinds else "int"
    elif len(kinds) == 1:
        kind = next(iter(kinds))
    else:
        kind = "text"
    if kind in ("int", "float", "percent", "currency"):
        numbers = [number for value in present if (number := _number(value)) is not None]
        if numbers:
            kind += f" {_plain(min(numbers))}…{_plain(max(numbers))}"
    return kind.replace(" ", "? ", 1) if has_nulls and " " in kind else kind + ("?" if has_nulls else "")


def _plain(number: float) -> str:
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    # The shortest spelling that reads back as the number: usually the value as the table wrote it.
    spelled = repr(number)
    return spelled if len(spelled) <= 18 else f"{number:g}"


def _split_rows(lines: list[str], tuning: StomachTuning) -> tuple[list[list[str]], str]:
    least = len(lines) * tuning.table_delimiter_tenths
    boxed = [box_as_pipes(line) for line in lines]
    if boxed != lines and sum(1 for line in boxed if "|" in line) * 10 >= least:
        # Drawn with box characters: read as pipes, its rules as dashes.
        lines = boxed
    if sum(1 for line in lines if "|" in line) * 10 >= least:
        rows = [line.strip().removeprefix("|").removesuffix("|").split("|") for line in lines]
        return [[cell.strip() for cell in row] for row in rows], "pipe-delimited"
    if sum(1 for line in lines if "\t" in line) * 10 >= least:
        return [line.split("\t") for line in lines], "tab-delimited"
    if sum(1 for line in lines if "," in line) * 10 >= least:
        try:
            return list(csv.reader(lines)), "comma-delimited"
        except csv.Error:
            pass
    columns = aligned_columns(lines[: tuning.table_aligned_lines])
    fields = _word_fields(lines, tuning)
    if fields > len(columns):
        # Fields one space apart, as many on every line (a server's access lines): the gaps do not align, the
        # words do.
        return [line.split(maxsplit=fields - 1) for line in lines], "space-separated"
    return [[line[start:end].strip() for start, end in columns] for line in lines], "whitespace-aligned"


def _word_fields(lines: list[str], tuning: StomachTuning) -> int:
    """How many space-separated words nearly every line holds (``table_delimiter_tenths`` of them), or 0."""
    counts = Counter(len(line.split()) for line in lines if line.strip())
    if not counts:
        return 0
    fields, lines_with = counts.most_common(1)[0]
    return fields if fields >= 3 and lines_with * 10 >= sum(counts.values()) * tuning.table_delimiter_tenths else 0


@dataclass(slots=True)
class _Layout:
    """Where the header and the data rows are among the lines, and the header's cells."""

    header_line: int
    header: list[str]
    data: list[int]
    directives: list[int]


def _layout(lines: list[str], rows: list[list[str]], directive_lines: int) -> _Layout:
    fields = next(
        (index for index, line in enumerate(lines[:directive_lines]) if line.startswith(("#fields", "#Fields"))),
        None,
    )
    if fields is not None:
        # Zeek/W3C style: the directive names the columns after its own name; every "#" line is a directive.
        named = lines[fields].split("\t") if "\t" in lines[fields] else lines[fields].split()
        directives = [index for index, line in enumerate(lines) if line.startswith("#")]
        data = [index for index, line in enumerate(lines) if line and not line.startswith("#")]
        return _Layout(fields, [cell.strip() for cell in named[1:]], data, directives)
    data = [
        index
        for index, row in enumerate(rows)
        if index > 0 and not all(_SEPARATOR_CELL.fullmatch(cell) for cell in row if cell)
    ]
    return _Layout(0, rows[0] if rows else [], data, [])


def _extremes(rows: list[list[str]], data: list[int], column: int, typed_rows: int) -> tuple[int, int] | None:
    """The data lines holding the column's minimum and maximum (the first of equals), or None."""
    low: tuple[float, int] | None = None
    high: tuple[float, int] | None = None
    for index in data[:typed_rows]:
        row = rows[index]
        if column >= len(row) or row[column].strip().lower() in _NULLS:
            continue
        try:
            number = float(row[column])
        except ValueError:
            parsed = _number(row[column])
            if parsed is None:
                continue
            number = parsed
        if low is None or number < low[0]:
            low = (number, index)
        if high is None or number > high[0]:
            high = (number, index)
    if low is None or high is None or low[0] == high[0]:
        # A constant column has no row that stands out.
        return None
    return low[1], high[1]


def _spans(rows: list[list[str]], data: list[int], start: int, end: int, rising_tenths: int) -> dict[int, float]:
    """Each data row's ``end`` column less its ``start`` column, when the two are a start and an end: the second
    never below the first and not always equal to it, and the starts rising down the table in ``rising_tenths`` of
    its steps at least, as events' do (a build's steps, a job's tasks; a repair cost and a total cost are none);
    else none."""
    spans: dict[int, float] = {}
    starts = [
        number for index in data if start < len(rows[index]) and (number := _number(rows[index][start])) is not None
    ]
    if sum(later > earlier for earlier, later in pairwise(starts)) * 10 < (len(starts) - 1) * rising_tenths:
        return {}
    for index in data:
        row = rows[index]
        if end >= len(row):
            continue
        low, high = _number(row[start]), _number(row[end])
        if low is None or high is None:
            continue
        if high < low:
            return {}
        spans[index] = high - low
    return spans if any(spans.values()) else {}


def _numeric_sample(values: list[str]) -> bool:
    """Whether the present values of a sample all read as numbers: the cheap test when types are not inferred."""
    present = [value for value in values if value.strip().lower() not in _NULLS]
    return bool(present) and all(_number(value) is not None and _FLOAT.fullmatch(value.strip()) for value in present)


def _why(reasons: list[str], shown_count: int) -> str:
    """What a kept row says after it: its first reasons, and how many more."""
    if not reasons:
        return ""
    shown = "; ".join(reasons[:shown_count])
    more = len(reasons) - shown_count
    return KEPT_MARK + shown + (f"; +{more} more" if more > 0 else "")


def distill_table(
    text: str,
    *,
    infer_types: bool = True,
    ask: AskTerms | None = None,
    target_tokens: int | None = None,
    tuning: StomachTuning | None = None,
    comparison: Comparison | None = None,
) -> TableDigest:
    """The table's profile and the rows that matter, within about ``target_tokens`` when given; ``comparison`` is
    what the ask compares (its rows by value, and which way a span is ranked)."""
    tuning = tuning or StomachTuning()
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    rows, layout = _split_rows(lines, tuning)
    starts = _section_starts(rows, tuning.table_section_rows) if target_tokens is not None else [0]
    if len(starts) > 1 and target_tokens is not None:
        return _sections_distilled(
            _Split(lines, rows, layout), starts, target_tokens, tuning, infer_types, ask, comparison
        )
    return _digest(_Split(lines, rows, layout), infer_types, ask, target_tokens, tuning, comparison)


@dataclass(frozen=True, slots=True)
class _Split:
    """A table's lines, each line's cells, and how they were split."""

    lines: list[str]
    rows: list[list[str]]
    layout: str


def _digest(
    split: _Split,
    infer_types: bool,
    ask: AskTerms | None,
    target_tokens: int | None,
    tuning: StomachTuning,
    comparison: Comparison | None,
) -> TableDigest:
    lines, rows, layout = split.lines, split.rows, split.layout
    shape = _layout(lines, rows, tuning.table_directive_lines)
    data_lines = shape.data
    header = shape.header
    width = max(len(header), max((len(rows[index]) for index in data_lines), default=0))
    summary = f"[{plural(len(data_lines), 'row')} {TIMES} {plural(width, 'column')} · {layout}]"
    names = [
        header[column][: tuning.table_name_chars] if column < len(header) and header[column] else f"#{column + 1}"
        for column in range(width)
    ]
    columns: list[str] = []
    numeric: list[int] = []
    for column, name in enumerate(names):
        if infer_types:
            values = [
                rows[index][column] if column < len(rows[index]) else ""
                for index in data_lines[: tuning.table_typed_rows]
            ]
            kind = infer_column_type(values)
            columns.append(f"{name} ({kind})")
            if kind.startswith(_NUMERIC_KINDS):
                numeric.append(column)
        else:
            columns.append(name)
            sample = [
                rows[index][column] for index in data_lines[: tuning.table_sampled_rows] if column < len(rows[index])
            ]
            if _numeric_sample(sample):
                numeric.append(column)
    opening = [summary, "columns: " + " · ".join(columns)]
    # The header line, and for a directive header its column names and types (the other directives are noise).
    opening.append(lines[shape.header_line])
    if shape.header_line + 1 in shape.directives:
        opening.append(lines[shape.header_line + 1])
    room = None if target_tokens is None else int(target_tokens * tuning.chars_per_token) - sum(map(len, opening))
    reasons: dict[int, list[str]] = {}
    kept: list[int] = []
    candidates = _candidates(lines, rows, data_lines, names, numeric, ask, tuning, comparison)
    if room is not None:
        candidates += _fill(lines, data_lines, ask, tuning)
    for index, why in candidates:
        if index not in reasons:
            if room is not None:
                cost = min(len(lines[index]), tuning.table_row_chars) + 2
                if room < cost and kept:
                    # A filling row that does not fit leaves room a shorter one may take.
                    if why in _FILLING:
                        continue
                    break
                room -= cost
            reasons[index] = []
            kept.append(index)
        if why and why not in _FILLING:
            reasons[index].append(why)
    body = list(opening)
    position = {index: place for place, index in enumerate(data_lines)}
    previous = -1
    for index in sorted(kept):
        if position[index] > previous + 1:
            body.append(elision(position[index] - previous - 1, "row"))
        body.append(clip_line(lines[index], tuning.table_row_chars) + _why(reasons[index], tuning.table_reasons_shown))
        previous = position[index]
    if previous < len(data_lines) - 1:
        body.append(elision(len(data_lines) - 1 - previous, "row"))
    return TableDigest("\n".join(body), len(data_lines), width)


def _section_starts(rows: list[list[str]], least_rows: int) -> list[int]:
    """Where each of the tables one block holds begins: the first at 0, each other at a header row (no cell of it
    a number) whose count of cells differs from the row above it and is shared by the ``least_rows`` rows under
    it, at least ``least_rows`` rows after the table before."""
    starts = [0]
    for index in range(1, len(rows) - least_rows):
        count = len(rows[index])
        if count < 2 or count == len(rows[index - 1]) or index - starts[-1] < least_rows:
            continue
        if any(_number(cell) is not None for cell in rows[index]):
            continue
        if all(len(rows[below]) == count for below in range(index + 1, index + 1 + least_rows)):
            starts.append(index)
    return starts


def _sections_distilled(
    split: _Split,
    starts: list[int],
    target_tokens: int,
    tuning: StomachTuning,
    infer_types: bool,
    ask: AskTerms | None,
    comparison: Comparison | None,
) -> TableDigest:
    """Each of the tables one after another, split as the whole was, the target shared smallest first: each takes
    what it needs when that is at most ``table_section_whole_share`` of what is left, else the lesser of what it
    needs and an even part of what is left."""
    bounds = list(pairwise([*starts, len(split.lines)]))
    # Costed as the table's rendering costs its room: each row and its newline, and its opening (its size line,
    # its header, and its columns named again with their types).
    needs = [
        math.ceil(
            (
                sum(min(len(line), tuning.table_row_chars) + 2 for line in split.lines[start:end])
                + 2 * len(split.lines[start])
                + tuning.table_section_opening_chars * (1 + len(split.rows[start]))
            )
            / tuning.chars_per_token
        )
        for start, end in bounds
    ]
    shares = [0] * len(bounds)
    left = target_tokens
    for place, section in enumerate(sorted(range(len(bounds)), key=needs.__getitem__)):
        # A table small beside what is left (a summary under a dump) is served whole; the largest takes the rest.
        whole = needs[section] <= left * tuning.table_section_whole_share
        shares[section] = min(needs[section], left if whole else left // (len(bounds) - place))
        left -= shares[section]
    digests = [
        _digest(
            _Split(split.lines[start:end], split.rows[start:end], split.layout),
            infer_types,
            ask,
            share,
            tuning,
            comparison,
        )
        for (start, end), share in zip(bounds, shares, strict=True)
    ]
    return TableDigest(
        "\n".join(digest.rendering for digest in digests),
        sum(digest.rows for digest in digests),
        max(digest.columns for digest in digests),
    )


# Why a row answering the ask's comparison is kept, by whether the ask states a value and which way it compares.
_COMPARED = {
    (False, 1): "greatest asked", (False, -1): "least asked", (False, 0): "compared",
    (True, 1): "past the ask's bound", (True, -1): "under the ask's bound", (True, 0): "near the ask's value",
}  # fmt: skip
# Why a row that fills the room left is kept: it says nothing after the row, and one that does not fit is passed over.
_FILLING = frozenset({"filling"})


def _fill(lines: list[str], data: list[int], ask: AskTerms | None, tuning: StomachTuning) -> list[tuple[int, str]]:
    """Rows for the room the rows that matter leave: the other rows holding the ask's terms (most first), then rows
    spread evenly over the table, the halves first, then the quarters, and so on."""
    filling: list[tuple[int, str]] = []
    if ask:
        named = {index: terms for index in data if (terms := ask.named(lines[index]))}
        holding = Counter(term for terms in named.values() for term in terms)
        weight = {term: rarity(count, len(data)) for term, count in holding.items()}
        ranked = sorted(named, key=lambda index: (-math.fsum(weight[term] for term in named[index]), index))
        filling.extend((index, "filling") for index in ranked[: tuning.table_fill_rows])
    step = len(data)
    while step > 1 and len(filling) < tuning.table_fill_rows * 2:
        step //= 2
        filling.extend((data[position], "filling") for position in range(step, len(data), step * 2))
    # Halving a count that is no power of two passes rows over: the rest follow in order.
    filling.extend((index, "filling") for index in data[: max(tuning.table_fill_rows * 2 - len(filling), 0)])
    return filling


def _covering(named: dict[int, tuple[str, ...]], weight: dict[str, float], count: int, fade: float) -> list[int]:
    """Up to ``count`` rows, each the one whose terms weigh most once the terms of the rows before it count
    ``fade`` times less for each such row: the rows answer each part of the ask before any part twice. (Lazy
    greedy: a row's worth only falls as rows are taken, so a row is weighed again only when it tops the heap.)"""
    taken: dict[str, int] = {}

    def worth(index: int) -> float:
        return sum(weight[term] * fade ** taken.get(term, 0) for term in named[index])

    heap = [(-worth(index), index) for index in named]
    heapq.heapify(heap)
    chosen: list[int] = []
    while heap and len(chosen) < count:
        stale, index = heapq.heappop(heap)
        current = worth(index)
        if heap and current < -heap[0][0] and current < -stale:
            heapq.heappush(heap, (-current, index))
            continue
        chosen.append(index)
        for term in named[index]:
            taken[term] = taken.get(term, 0) + 1
    return chosen


def _candidates(
    lines: list[str],
    rows: list[list[str]],
    data: list[int],
    names: list[str],
    numeric: list[int],
    ask: AskTerms | None,
    tuning: StomachTuning,
    comparison: Comparison | None = None,
) -> list[tuple[int, str]]:
    """Rows worth keeping, most worth first, each with why (empty for a head or tail row)."""
    candidates: list[tuple[int, str]] = []
    direction = comparison.direction if comparison is not None and comparison.bound is None else 0
    if ask:
        # A term of the ask counts by how few rows hold it (BM25's idf over the rows): the row naming the one
        # process asked about comes before the hundred rows sharing a word of the ask with it.
        named = {index: terms for index in data if (terms := ask.named(lines[index]))}
        holding = Counter(term for terms in named.values() for term in terms)
        weight = {term: rarity(count, len(data)) for term, count in holding.items()}
        for index in _covering(named, weight, tuning.table_ask_rows, tuning.table_term_fade):
            rarest = sorted(named[index], key=lambda term: -weight[term])
            candidates.append((index, "holds " + ", ".join(rarest[: tuning.table_terms_named])))
    if comparison is not None:
        label = _COMPARED[(comparison.bound is not None, comparison.direction)]
        picked = comparison.pick_rows(names, {index: rows[index] for index in data}, lines)
        candidates.extend((index, label) for index in picked)
    alerts = [index for index in data if is_alert(lines[index])]
    # Alerts on a large part of the rows (every process lsof could not read) single out none of them: a few show it.
    common = len(alerts) > len(data) * tuning.table_common_alerts
    candidates.extend(
        (index, "alert") for index in alerts[: tuning.table_common_alert_rows if common else tuning.table_alert_rows]
    )
    for column in numeric:
        ends = _extremes(rows, data, column, tuning.table_typed_rows)
        if ends is not None:
            candidates.append((ends[1], f"max {names[column]}"))
            candidates.append((ends[0], f"min {names[column]}"))
    for start, end in pairwise(numeric):
        if end != start + 1:
            continue
        spans = _spans(rows, data[: tuning.table_typed_rows], start, end, tuning.table_span_rising_tenths)
        # The longest spans first; as many as the ask compares for when it asks for the longest or the shortest.
        count = tuning.table_span_rows if direction else 1
        ranked = sorted(spans, key=lambda index: (-spans[index] * (direction or 1), index))[:count]
        label = "longest" if direction >= 0 else "shortest"
        candidates.extend((index, f"{label} {names[start]} to {names[end]}") for index in ranked)
    # A table barely longer than its head and tail is shown whole rather than with a one-row gap.
    head_rows, tail_rows = tuning.table_head_rows, tuning.table_tail_rows
    head = data if len(data) <= head_rows + tail_rows + 1 else data[:head_rows]
    tail = data[max(len(data) - tail_rows, len(head)) :]
    candidates.extend((index, "") for index in head + tail)
    return candidates
