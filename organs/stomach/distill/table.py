"""Table distillation: dimensions, column names with inferred types, ranges, head and tail rows.

Types: ``int``, ``float``, ``percent``, ``currency``, ``bool``, ``timestamp``,
``text``, or ``empty`` when a column holds only nulls; a trailing ``?`` marks a
column with some nulls (empty, ``null``, ``none``, ``n/a``, ``na``, ``nan``,
``nil``, ``-``). A column whose values disagree is ``text``. Head and tail rows
are the paste's own lines, so the sample is verbatim.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass

from organs.stomach.asked import AskTerms
from organs.stomach.classify import aligned_columns
from organs.stomach.distill.text import TIMES, elision, plural
from organs.stomach.timestamps import leading_stamp

__all__ = ["TableDigest", "distill_table", "infer_column_type"]

_HEAD_ROWS = 5
_TAIL_ROWS = 3
_TYPED_ROWS = 20_000
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
    return str(int(number)) if number.is_integer() and abs(number) < 1e15 else f"{number:g}"


def _split_rows(lines: list[str]) -> tuple[list[list[str]], str]:
    if sum(1 for line in lines if "|" in line) * 10 >= len(lines) * 9:
        rows = [line.strip().removeprefix("|").removesuffix("|").split("|") for line in lines]
        return [[cell.strip() for cell in row] for row in rows], "pipe-delimited"
    if sum(1 for line in lines if "\t" in line) * 10 >= len(lines) * 9:
        return [line.split("\t") for line in lines], "tab-delimited"
    if sum(1 for line in lines if "," in line) * 10 >= len(lines) * 9:
        try:
            return list(csv.reader(lines)), "comma-delimited"
        except csv.Error:
            pass
    columns = aligned_columns(lines[:400])
    return [[line[start:end].strip() for start, end in columns] for line in lines], "whitespace-aligned"


def distill_table(text: str, *, infer_types: bool = True, ask: AskTerms | None = None) -> TableDigest:
    lines = text.split("\n")
    rows, layout = _split_rows(lines)
    data_lines = [
        index
        for index, row in enumerate(rows)
        if index > 0 and not all(_SEPARATOR_CELL.fullmatch(cell) for cell in row if cell)
    ]
    header = rows[0]
    width = max((len(row) for row in rows), default=0)
    summary = f"[{plural(len(data_lines), 'row')} {TIMES} {plural(width, 'column')} · {layout}]"
    columns: list[str] = []
    for column in range(width):
        name = header[column] if column < len(header) and header[column] else f"#{column + 1}"
        if infer_types:
            values = [rows[index][column] if column < len(rows[index]) else "" for index in data_lines[:_TYPED_ROWS]]
            columns.append(f"{name[:60]} ({infer_column_type(values)})")
        else:
            columns.append(name[:60])
    body = [summary, "columns: " + " · ".join(columns), lines[0]]
    if len(data_lines) <= _HEAD_ROWS + _TAIL_ROWS + 1:
        body.extend(lines[1:])
    else:
        head_end = data_lines[_HEAD_ROWS - 1] + 1
        tail_start = data_lines[-_TAIL_ROWS]
        body.extend(lines[1:head_end])
        body.append(elision(len(data_lines) - _HEAD_ROWS - _TAIL_ROWS, "row"))
        body.extend(lines[tail_start:])
    return TableDigest("\n".join(body), len(data_lines), width)
