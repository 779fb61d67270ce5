"""Reading a table's cells: how its lines split into rows, where its header and data rows are, and each
column's type.

Types: ``int``, ``float``, ``percent``, ``currency``, ``bool``, ``timestamp``, ``text``, or ``empty`` when a column
holds only nulls; a trailing ``?`` marks a column with some nulls (empty, ``null``, ``none``, ``n/a``, ``na``,
``nan``, ``nil``, ``-``). A column whose values disagree is ``text``.

Layouts: pipe-, tab- and comma-delimited, whitespace-aligned and space-separated (as many words on nearly every
line, where the gaps do not align: an access log read as a table), lines ending in CRLF or LF. A header of
directives (Zeek's ``#fields``/``#types`` lines) names the columns; its other ``#`` lines are not rows.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from dataclasses import dataclass

from organs.stomach.core.shapes.line_shapes import box_as_pipes, is_row_count, is_rule_line
from organs.stomach.core.shapes.signals import aligned_columns
from organs.stomach.core.shapes.timestamps import leading_stamp
from organs.stomach.core.tuning import StomachTuning

__all__ = [
    "NULLS",
    "NUMERIC_KINDS",
    "Layout",
    "infer_column_type",
    "layout_of",
    "number_of",
    "numeric_sample",
    "split_rows",
]

NUMERIC_KINDS = ("int", "float", "percent", "currency")
NULLS = frozenset({"", "null", "none", "n/a", "na", "nan", "nil", "-", "—", "?"})
_INT = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+|[-+]?\d+")
_FLOAT = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?\d{1,3}(?:,\d{3})+\.\d+")
_PERCENT = re.compile(r"[-+]?(?:\d+(?:\.\d+)?|\.\d+) ?%")
_CURRENCY = re.compile(r"[-+]?[$€£¥₹] ?\d[\d,]*(?:\.\d+)?|\d[\d,]*(?:\.\d+)? ?(?:USD|EUR|GBP|JPY|[$€£¥₹])")
_BOOLEANS = frozenset({"true", "false", "yes", "no"})
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_SEPARATOR_CELL = re.compile(r"\s*:?-{3,}:?\s*")
# A shell's prompt before the command that printed a table: "$ ", "PS C:\\> ", "user@host:~$ ".
_PROMPT = re.compile(r"\s*(?:\$|PS [^>\n]{0,200}>|[\w.-]{1,64}@[\w.-]{1,64}:[^$#\n]{0,200}[$#])\s+\S")


def number_of(value: str) -> float | None:
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
    present = [value.strip() for value in values if value.strip().lower() not in NULLS]
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
        numbers = [number for value in present if (number := number_of(value)) is not None]
        if numbers:
            kind += f" {_plain(min(numbers))}…{_plain(max(numbers))}"
    return kind.replace(" ", "? ", 1) if has_nulls and " " in kind else kind + ("?" if has_nulls else "")


def _plain(number: float) -> str:
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    # The shortest spelling that reads back as the number: usually the value as the table wrote it.
    spelled = repr(number)
    return spelled if len(spelled) <= 18 else f"{number:g}"


def _no_row(line: str) -> bool:
    """Whether a table's line is none of its rows: a rule, or a client's count of the rows (psql's ``(4 rows)``)."""
    return is_rule_line(line) or is_row_count(line)


def split_rows(lines: list[str], tuning: StomachTuning) -> tuple[list[list[str]], str]:
    # A rule under the header (psql's ``-----+-----``) and a count of the rows have no delimiter to count, and none
    # against.
    counted = [line for line in lines if not _no_row(line)]
    # Nor has a tool's note above its table ("MPI task timing breakdown:"; ``layout_of`` finds the header under it).
    if len(counted) > 2 and not any(mark in counted[0] for mark in "|\t,"):
        counted = counted[1:]
    least = len(counted) * tuning.table_delimiter_tenths
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
class Layout:
    """Where the header and the data rows are among the lines, and the header's cells."""

    header_line: int
    header: list[str]
    data: list[int]
    directives: list[int]


def layout_of(lines: list[str], rows: list[list[str]], directive_lines: int) -> Layout:
    fields = next(
        (index for index, line in enumerate(lines[:directive_lines]) if line.startswith(("#fields", "#Fields"))),
        None,
    )
    if fields is not None:
        # Zeek/W3C style: the directive names the columns after its own name; every "#" line is a directive.
        named = lines[fields].split("\t") if "\t" in lines[fields] else lines[fields].split()
        directives = [index for index, line in enumerate(lines) if line.startswith("#")]
        data = [index for index, line in enumerate(lines) if line and not line.startswith("#")]
        return Layout(fields, [cell.strip() for cell in named[1:]], data, directives)
    # The command that printed the table ("$ dpkg-query -W …") is no header: the header is looked for under it, and
    # a table whose first line under it is already a row (numbers where its rows hold numbers) has none.
    start = 1 if lines and _PROMPT.match(lines[0]) else 0
    header = start + _header_line(rows[start:], directive_lines)
    headerless = bool(start) and header < len(rows) and any(number_of(cell) is not None for cell in rows[header])
    first = header if headerless else header + 1
    data = [
        index
        for index, row in enumerate(rows)
        if index >= first
        and not all(_SEPARATOR_CELL.fullmatch(cell) for cell in row if cell)
        and not _no_row(lines[index])
    ]
    if headerless:
        return Layout(0, [], data, [])
    return Layout(header, rows[header] if rows else [], data, [])


def _header_line(rows: list[list[str]], within: int) -> int:
    """The line of the table's header: the first, or when the first holds fewer cells than most rows do (a tool's
    note above its table: "Timeout: 60.0 seconds ...", "Listing queues for vhost / ..."), the first line within
    ``within`` that holds as many."""
    counts = Counter(len(row) for row in rows if len(row) > 1)
    if not rows or not counts:
        return 0
    width = counts.most_common(1)[0][0]
    if len(rows[0]) >= width:
        return 0
    return next((index for index, row in enumerate(rows[:within]) if len(row) == width), 0)


def numeric_sample(values: list[str]) -> bool:
    """Whether the present values of a sample all read as numbers: the cheap test when types are not inferred."""
    present = [value for value in values if value.strip().lower() not in NULLS]
    return bool(present) and all(number_of(value) is not None and _FLOAT.fullmatch(value.strip()) for value in present)
