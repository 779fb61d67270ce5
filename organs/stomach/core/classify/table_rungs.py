"""The rungs that read a block as a table: rows that share a count of cells or the columns they line up in.

A table is told by how its lines agree with each other (the same cells, the same gutters, a header over its rule),
not by what any one line says, so these rungs count columns where the log rungs (``rungs``) count shapes a line
carries alone. The ladder interleaves them with the log rungs (a timestamped log before a pipe table, an aligned
table after the weaker log), so each stays a rung of its own rather than one table test.
"""

from __future__ import annotations

import csv
import re

from organs.stomach.core.classify.rungs import Classification, carried
from organs.stomach.core.distill.text import plural
from organs.stomach.core.shapes.line_shapes import (
    box_as_pipes,
    is_boxed,
    is_psql_rule,
    is_row_count,
    is_rule_line,
    listing_key,
)
from organs.stomach.core.shapes.signals import aligned_columns
from organs.stomach.core.tuning import ClassifyTuning

__all__ = [
    "aligned_table_rung",
    "clocked_samples_rung",
    "delimited_table_rung",
    "listing_rung",
    "numeric_rows_rung",
    "result_table_rung",
]


def _same_count_share(counts: list[int]) -> tuple[int, float]:
    """The most common count and the share of rows that have it (ties go to the larger count)."""
    tally: dict[int, int] = {}
    for count in counts:
        tally[count] = tally.get(count, 0) + 1
    best = max(tally, key=lambda count: (tally[count], count))
    return best, tally[best] / len(counts)


def _pipe_cells(line: str) -> int:
    inner = line.strip()
    inner = inner.removeprefix("|").removesuffix("|")
    return inner.count("|") + 1 if "|" in inner else 1


def _comma_cells_read_like_values(lines: list[str], columns: int, tuning: ClassifyTuning) -> bool:
    rows = [row for row in csv.reader(lines) if len(row) == columns]
    words = [len(cell.split()) for row in rows for cell in row]
    # With many columns kept line after line, a long cell is a name or a description column, not
    # the sign of comma-spliced prose: only the mean must stay value-like.
    if not words or (columns < tuning.many_columns and max(words) > tuning.cell_words):
        return False
    return sum(words) / len(words) <= tuning.mean_cell_words


# A row of three quoted cells or more, comma-separated from its first character (a cut line may end mid-cell).
_QUOTED_ROW = re.compile(r'"[^"]*"(?:,"[^"]*"){2,}')


def delimited_table_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    if len(lines) < 2:
        return None
    least_share = tuning.column_tenths / 10
    # A plain rule under the header (a run of dashes across the columns) draws no row; a drawn table's rules
    # (``+----+``, ``|---|``) are its own.
    cells = [_pipe_cells(box_as_pipes(line)) for line in lines if not (is_rule_line(line) and not line.strip("-= "))]
    # A title above the table ("[+] Group: Lateral Movement") is not one of its rows.
    if len(cells) > 2 and cells[0] == 1:
        cells = cells[1:]
    pipe_columns, pipe_share = _same_count_share(cells)
    if pipe_columns >= 2 and pipe_share >= least_share:
        return Classification("table", f"pipe-delimited table ({pipe_columns} columns)")
    drawn = [line for line in lines if line.strip()]
    if sum(map(is_boxed, drawn)) >= len(drawn) * least_share:
        # Boxes side by side (a query plan) share no column count, but each line is drawn: a table of boxes.
        return Classification("table", "box-drawn table (its rows drawn in boxes)")
    # Tabs that open a line indent it (a config's ``\tkey = value``): only tabs between cells delimit columns.
    tab_columns, tab_share = _same_count_share([line.lstrip("\t").count("\t") + 1 for line in lines])
    if tab_columns >= 2 and tab_share >= least_share:
        return Classification("table", f"tab-delimited table ({tab_columns} columns)")
    quoted = sum(1 for line in lines if _QUOTED_ROW.match(line) is not None)
    if quoted >= len(lines) * least_share:
        # Every cell quoted, line after line, is a CSV export whatever its cells say (a report's descriptions).
        return Classification("table", f"comma-delimited table ({quoted} rows of quoted cells)")
    try:
        comma_counts = [len(row) for row in csv.reader(lines)]
    except csv.Error:
        return None
    if len(comma_counts) != len(lines):
        return None
    comma_columns, comma_share = _same_count_share(comma_counts)
    if (
        comma_columns >= 2
        and comma_share >= least_share
        and _comma_cells_read_like_values(lines, comma_columns, tuning)
    ):
        return Classification("table", f"comma-delimited table ({comma_columns} columns, value-like cells)")
    return None


def result_table_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    # A SQL client's results: a header over a dashed rule, rows, "(N rows)"; the statements that
    # produced them may stand above, as they do in a pasted session.
    ruled = sum(
        1
        for index, line in enumerate(lines[1:], start=1)
        if is_psql_rule(line) and lines[index - 1].strip() and not is_psql_rule(lines[index - 1])
    )
    counted = sum(1 for line in lines if is_row_count(line))
    boxed = sum(1 for line in lines if line.startswith("+-") and is_psql_rule(line))
    # A box's rows are walled ("| 7 | cart |"); a frame of dashes around other lines (a server printing its
    # config between two rules) is no result set.
    walled = sum(1 for line in lines if line.startswith("|"))
    if not ((ruled and counted) or (boxed >= 2 and walled)):
        return None
    return Classification("table", f"SQL client result table ({max(ruled, boxed // 2)} result sets)")


# A sample's clock (``06:02:47``, ``06:02:47 PM``) and a cell of a sample's row (``95.19``, ``1,024``, ``7%``).
_SAMPLE_CLOCK = re.compile(r"\d{1,2}:\d{2}(?::\d{2})?")
_SAMPLE_VALUE = re.compile(r"[-+]?\d[\d.,]*%?")


def _sample_line(fields: list[str]) -> str | None:
    """``row`` for a clock and numbers (one label allowed), ``header`` for a clock and column names, else None."""
    fields = fields[2:] if len(fields) > 1 and fields[1] in ("AM", "PM") else fields[1:]
    if not fields:
        return None
    words = sum(1 for field in fields if _SAMPLE_VALUE.fullmatch(field) is None)
    if words <= 1 and len(fields) >= 2:
        return "row"
    return "header" if words == len(fields) >= 3 else None


def clocked_samples_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    """Samples taken on a clock (sar, iostat, pidstat): rows of a clock and numbers under header rows of a clock
    and column names, a blank line between one resource's table and the next; a log's clock is followed by
    words."""
    written = [line.split() for line in lines if line.strip()]
    kinds = [_sample_line(fields) if fields and _SAMPLE_CLOCK.fullmatch(fields[0]) else None for fields in written]
    rows, headers = kinds.count("row"), kinds.count("header")
    if headers == 0 or rows < tuning.sample_rows or (rows + headers) * 10 < len(written) * tuning.row_tenths:
        return None
    return Classification("table", f"samples on a clock ({rows} rows under {plural(headers, 'header')})")


def aligned_table_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    if len(lines) < 2 or any("\t" in line for line in lines):
        return None
    # A JSON document's nesting lines its keys up in columns: it opens with its brace or bracket alone.
    if lines[0].strip() in ("{", "["):
        return None
    # A rule over or under the header (``-------``) is the table's drawing, not a row: it fills every gutter.
    within = tuning.header_rule_lines
    head = [line for line in lines[:within] if not is_rule_line(line)]
    lines = [*head, *lines[within:]] if head else lines
    columns = aligned_columns(lines)
    if len(columns) < 2:
        return None
    filled = [sum(1 for start, end in columns if line[start:end].strip()) for line in lines]
    full_rows = sum(1 for count in filled if count >= len(columns) - 1)
    if full_rows * 10 < len(lines) * tuning.row_tenths:
        return None
    return Classification("table", f"whitespace-aligned table ({len(columns)} columns)")


def listing_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    # kubectl describe and its kin: "Key:    value" with the values aligned, nested keys indented.
    keyed = sum(1 for line in lines if listing_key(line))
    aligned = sum(1 for line in lines if listing_key(line) and ":  " in line)
    covered = sum(1 for line in lines if listing_key(line) or line.startswith((" ", "\t")))
    if (
        aligned < tuning.listing_aligned_keys
        or not carried(keyed, len(lines), tuning)
        or covered * 10 < len(lines) * tuning.listing_tenths
    ):
        return None
    return Classification("table", f"aligned key/value listing ({keyed}/{len(lines)} keyed lines)")


# A number as a profiler or a process table prints it: "579", "0.255", "82210/6393" (calls, primitive calls), "7%".
_COUNT_OR_MEASURE = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:/\d+)?%?")


def numeric_rows_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    # A profiler's report (cProfile, gprof's flat profile): rows opening with several numbers, right-aligned so a
    # wide count closes the gutter an aligned table is read by, then a name that may hold spaces.
    rows = [line for line in lines if line.strip()]
    leading = tuning.numeric_leading_fields
    numeric = sum(
        1
        for line in rows
        if len(fields := line.split(maxsplit=leading)) > leading
        and all(_COUNT_OR_MEASURE.fullmatch(field) for field in fields[:leading])
    )
    if len(rows) < tuning.numeric_least_rows or numeric * 10 < len(rows) * tuning.row_tenths:
        return None
    return Classification("table", f"rows of numbers then a name ({numeric}/{len(rows)} lines)")
