"""Table distillation: dimensions, column names with inferred types and ranges, the rows that matter.

How a table's lines split into cells and what type each column holds is ``table_cells``'s.

Rows kept, in this order while the target allows: the header (a tool's note or the command above it shown with it),
the greatest row of each numeric column the ask's words name, the rows whose value answers what the ask compares
(``compare.Comparison``: the greatest, those past a threshold; a superlative naming no column reads the table's one
numeric column), rows holding the ask's terms (the rarer in the table its terms, the sooner, each part of the ask
answered before any part twice), alert rows (a few when most rows are alerts), the rows at each numeric
column's minimum and maximum (the values the column profile names), then head and tail rows. What room is left
is filled: the other rows holding the ask's terms, then rows spread evenly over the table, so a table over its
target is served at its target. Kept rows are the paste's own lines, in paste order, each gap counted out;
a row kept for more than being near an end says why after a ``◂``.

A table that goes on as another under a header row of its own (a dump of mappings, then a summary per member
under ``#osd count …``) is served as its tables one after another, the smaller ones first given what they need
of the target and the largest the rest.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

from organs.stomach.core.asked import AskTerms, rarity
from organs.stomach.core.compare import Comparison
from organs.stomach.core.distill.table_cells import (
    NULLS,
    NUMERIC_KINDS,
    Layout,
    infer_column_type,
    layout_of,
    number_of,
    numeric_sample,
    split_rows,
)
from organs.stomach.core.distill.text import TIMES, clip_line, elision, plural
from organs.stomach.core.shapes.signals import is_alert
from organs.stomach.core.tuning import StomachTuning

__all__ = ["KEPT_MARK", "TableDigest", "distill_table", "infer_column_type"]

# What opens a kept row's reasons after the row.
KEPT_MARK = "  ◂ "


@dataclass(frozen=True, slots=True)
class TableDigest:
    rendering: str
    rows: int
    columns: int


def _extremes(rows: list[list[str]], data: list[int], column: int, typed_rows: int) -> tuple[int, int] | None:
    """The data lines holding the column's minimum and maximum (the first of equals), or None."""
    low: tuple[float, int] | None = None
    high: tuple[float, int] | None = None
    for index in data[:typed_rows]:
        row = rows[index]
        if column >= len(row) or row[column].strip().lower() in NULLS:
            continue
        try:
            number = float(row[column])
        except ValueError:
            parsed = number_of(row[column])
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
        number for index in data if start < len(rows[index]) and (number := number_of(rows[index][start])) is not None
    ]
    if sum(later > earlier for earlier, later in pairwise(starts)) * 10 < (len(starts) - 1) * rising_tenths:
        return {}
    for index in data:
        row = rows[index]
        if end >= len(row):
            continue
        low, high = number_of(row[start]), number_of(row[end])
        if low is None or high is None:
            continue
        if high < low:
            return {}
        spans[index] = high - low
    return spans if any(spans.values()) else {}


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
    if target_tokens is not None and (paragraphs := _table_paragraphs(lines, tuning.table_section_rows)):
        # Tables one under another, a blank line between (a report of samples per resource): each read alone.
        def paragraph(start: int, end: int, table: bool) -> Callable[[int], TableDigest]:
            if not table:
                return lambda _: TableDigest("\n".join(lines[start:end]), 0, 0)
            return lambda share: distill_table(
                "\n".join(lines[start:end]),
                infer_types=infer_types,
                ask=ask,
                target_tokens=share,
                tuning=tuning,
                comparison=comparison,
            )

        sections = [
            (_need(lines[start:end], len(lines[start].split()), tuning), paragraph(start, end, table))
            for start, end, table in paragraphs
        ]
        return _shared(sections, target_tokens, tuning, "\n")
    rows, layout = split_rows(lines, tuning)
    starts = _section_starts(rows, tuning.table_section_rows) if target_tokens is not None else [0]
    if len(starts) > 1 and target_tokens is not None:

        def section(start: int, end: int) -> Callable[[int], TableDigest]:
            part = _Split(lines[start:end], rows[start:end], layout)
            return lambda share: _digest(part, infer_types, ask, share, tuning, comparison)

        bounds = list(pairwise([*starts, len(lines)]))
        return _shared(
            [(_need(lines[start:end], len(rows[start]), tuning), section(start, end)) for start, end in bounds],
            target_tokens,
            tuning,
            "",
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
    shape = layout_of(lines, rows, tuning.table_directive_lines)
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
            if kind.startswith(NUMERIC_KINDS):
                numeric.append(column)
        else:
            columns.append(name)
            sample = [
                rows[index][column] for index in data_lines[: tuning.table_sampled_rows] if column < len(rows[index])
            ]
            if numeric_sample(sample):
                numeric.append(column)
    opening = _opening(lines, shape, [summary, "columns: " + " · ".join(columns)])
    room = None if target_tokens is None else int(target_tokens * tuning.chars_per_token) - sum(map(len, opening))
    if room is not None and room < len(opening[1]):
        # A target whose room past the opening is less than the column profile keeps the header's names without
        # their types and ranges: a table shown as its profile and no row tells less than its header and the rows
        # that matter.
        room += len(opening.pop(1))
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


def _opening(lines: list[str], shape: Layout, profile: list[str]) -> list[str]:
    """The table's size and column profile, then its header line after the note or command a tool prints above its
    table; for a directive header, its column names and types (the other directives are noise)."""
    opening = list(profile)
    if not shape.directives:
        opening.extend(lines[: shape.header_line])
    opening.append(lines[shape.header_line])
    if shape.header_line + 1 in shape.directives:
        opening.append(lines[shape.header_line + 1])
    return opening


def _section_starts(rows: list[list[str]], least_rows: int) -> list[int]:
    """Where each of the tables one block holds begins: the first at 0, each other at a header row (no cell of it
    a number) whose count of cells differs from the row above it and is shared by the ``least_rows`` rows under
    it, at least ``least_rows`` rows after the table before."""
    starts = [0]
    for index in range(1, len(rows) - least_rows):
        count = len(rows[index])
        if count < 2 or count == len(rows[index - 1]) or index - starts[-1] < least_rows:
            continue
        if any(number_of(cell) is not None for cell in rows[index]):
            continue
        if all(len(rows[below]) == count for below in range(index + 1, index + 1 + least_rows)):
            starts.append(index)
    return starts


def _table_paragraphs(lines: list[str], least_rows: int) -> list[tuple[int, int, bool]]:
    """The paragraphs of a block of tables a blank line apart, each with whether it is a table (more than
    ``least_rows`` lines: a banner or a note between them is not); none unless two are tables."""
    paragraphs: list[tuple[int, int, bool]] = []
    start = None
    for index, line in enumerate([*lines, ""]):
        if line.strip() and start is None:
            start = index
        elif not line.strip() and start is not None:
            paragraphs.append((start, index, index - start > least_rows))
            start = None
    return paragraphs if sum(table for _, _, table in paragraphs) >= 2 else []


def _need(lines: list[str], cells: int, tuning: StomachTuning) -> int:
    """What a table of ``lines`` costs served whole, as its rendering costs its room: each row and its newline,
    and its opening (its size line, its header, and its ``cells`` columns named again with their types)."""
    kept = sum(min(len(line), tuning.table_row_chars) + 2 for line in lines)
    opening = 2 * len(lines[0]) + tuning.table_section_opening_chars * (1 + cells)
    return math.ceil((kept + opening) / tuning.chars_per_token)


def _shared(
    sections: list[tuple[int, Callable[[int], TableDigest]]], target_tokens: int, tuning: StomachTuning, gap: str
) -> TableDigest:
    """Each of the tables one after another (``gap`` between them), the target shared smallest need first: each
    takes what it needs when that is at most ``table_section_whole_share`` of what is left, else the lesser of what
    it needs and an even part of what is left."""
    shares = [0] * len(sections)
    left = target_tokens
    order = sorted(range(len(sections)), key=lambda section: sections[section][0])
    for place, section in enumerate(order):
        need = sections[section][0]
        # A table small beside what is left (a summary under a dump) is served whole; the largest takes the rest.
        whole = need <= left * tuning.table_section_whole_share
        shares[section] = min(need, left if whole else left // (len(sections) - place))
        left -= shares[section]
    digests = [render(share) for (_, render), share in zip(sections, shares, strict=True)]
    return TableDigest(
        ("\n" + gap).join(digest.rendering for digest in digests),
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
    # A numeric column the ask's words name ("which queues pile up messages": messages, messages_ready) is what it
    # asks about: the row holding its greatest value comes before the rows that only say a word of the ask.
    asked = [column for column in numeric if ask and ask.named(names[column])]
    extremes = {column: _extremes(rows, data, column, tuning.table_typed_rows) for column in numeric}
    candidates.extend((ends[1], f"max {names[column]}") for column in asked if (ends := extremes[column]))
    if comparison is not None:
        # The rows that answer what the ask compares answer it directly: before those that only say its words.
        label = _COMPARED[(comparison.bound is not None, comparison.direction)]
        picked = comparison.pick_rows(names, {index: rows[index] for index in data}, lines)
        candidates.extend((index, label) for index in picked)
    if ask:
        # A term of the ask counts by how few rows hold it (BM25's idf over the rows): the row naming the one
        # process asked about comes before the hundred rows sharing a word of the ask with it.
        named = {index: terms for index in data if (terms := ask.named(lines[index]))}
        holding = Counter(term for terms in named.values() for term in terms)
        weight = {term: rarity(count, len(data)) for term, count in holding.items()}
        for index in _covering(named, weight, tuning.table_ask_rows, tuning.table_term_fade):
            rarest = sorted(named[index], key=lambda term: -weight[term])
            candidates.append((index, "holds " + ", ".join(rarest[: tuning.table_terms_named])))
    alerts = [index for index in data if is_alert(lines[index])]
    # Alerts on a large part of the rows (every process lsof could not read) single out none of them: a few show it.
    common = len(alerts) > len(data) * tuning.table_common_alerts
    candidates.extend(
        (index, "alert") for index in alerts[: tuning.table_common_alert_rows if common else tuning.table_alert_rows]
    )
    for column in numeric:
        if (ends := extremes[column]) is not None:
            if column not in asked:
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
