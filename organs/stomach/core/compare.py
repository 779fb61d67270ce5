"""What an ask compares, and the lines of a paste that answer it by value.

``Comparison.of(goal)`` reads the ask's superlatives (``slowest``, ``longest``, ``the most``),
thresholds (``> 500ms``, ``longer than 0.8 seconds``, ``over a million``) and values stated roughly
(``took almost 12 seconds``, ``around 500 ms``), and what kind of quantity they speak of: a time, a size,
or any number. ``Comparison.pick(lines)`` returns the indexes of the lines whose value answers it, best
first: the top values for a superlative, every line past a threshold (best first, capped), the lines
nearest a rough value (within ``RelevanceTuning.near_share`` of it). A line's value is a number with a
unit of that quantity (``18.8ms``, ``0.4 secs``, ``52M``), a number under a key that names a time
(``rt=0.873``, ``duration: 3``; a span under one at its end, times a query plan node's ``loops=``), or, in a
table, the cell of the column that the ask names (``spent``, ``tottime``), or the number under the key=value key it
names (``num_dropped`` for "the largest batch dropped"). ``furthest`` asks for the greatest.
What the ask sets aside ("leaving out the /user/events polling") answers nothing: a line holding its names is
not compared. A table's header may repeat (a report printed every interval, ``iostat -x -t``) and part its names by
one space; the rows under each copy are read. A greatest read down a column comes with the edges of the run of high
rows around it, and ``pick_dated`` gives each picked line that has no clock the time printed above it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from organs.stomach.core.asked import AskTerms, set_aside
from organs.stomach.core.shapes.timestamps import leading_stamp
from organs.stomach.core.tuning import RelevanceTuning

__all__ = ["Comparison"]

# The ask's words that compare, and that name a time or a size.
_MORE_TEXT = """slowest longest largest biggest highest most max maximum worst heaviest peak greatest top strongest
    furthest farthest"""
_LESS_TEXT = "fastest shortest smallest lowest least min minimum fewest cheapest weakest"
_TIME_TEXT = """slow slowest slower fast fastest faster long longest longer short shortest shorter took take takes
    duration durations latency latencies pause pauses time times elapsed seconds milliseconds"""
_SIZE_TEXT = """memory large largest larger big biggest bigger size sizes heap bytes leak leaks leaked leaking
    allocation allocations allocated"""
_MORE = frozenset(_MORE_TEXT.split())
# "How high does the pressure get", "how big did the heap grow": the greatest value, asked in words ("by how much" asks
# for a difference, not the greatest value).
_HOW_HIGH = re.compile(r"(?<!by )\bhow (?:high|big|large|bad)\b")
# "Which of these is the slow one", "which queries are slow": the greatest, asked without a superlative.
_THE_GREAT_ONE = re.compile(
    r"\bthe (?:slow|long|big|large|heavy|expensive|costly) ones?\b"
    r"|\bwhich\b[^.?!]{0,80}\b(?:is|are|was|were) (?:so )?slow\b"
)
_WHEN = re.compile(r"\b(?:what|which) times?\b")
_LESS = frozenset(_LESS_TEXT.split())
_TIME_WORDS = frozenset(_TIME_TEXT.split())
_SIZE_WORDS = frozenset(_SIZE_TEXT.split())
_SCALE = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "k": 1e3}
# Milliseconds per unit of time; the unit spelled as logs spell it.
_TIME_UNITS = {
    "ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "msec": 1.0, "msecs": 1.0, "millisecond": 1.0,
    "milliseconds": 1.0, "s": 1e3, "sec": 1e3, "secs": 1e3, "second": 1e3, "seconds": 1e3,
    "min": 6e4, "mins": 6e4, "minute": 6e4, "minutes": 6e4,
}  # fmt: skip
# Bytes per unit of size.
_SIZE_UNITS = {
    "b": 1.0, "byte": 1.0, "bytes": 1.0, "k": 1024.0, "kb": 1e3, "kib": 1024.0, "m": 1024.0**2, "mb": 1e6,
    "mib": 1024.0**2, "g": 1024.0**3, "gb": 1e9, "gib": 1024.0**3,
}  # fmt: skip
# The words and units a column's name may say its quantity in (a one-letter unit is any column's letter), and the
# parts a name splits into.
_QUANTITY_NAMES = {
    "time": frozenset(_TIME_WORDS | {unit for unit in _TIME_UNITS if len(unit) > 1}),
    "size": frozenset(_SIZE_WORDS | {unit for unit in _SIZE_UNITS if len(unit) > 1}),
}
_NAME_PARTS = re.compile(r"[^a-zµ]+")
_NUMBER = r"(\d[\d,]*(?:\.\d+)?|\.\d+)"
# A number the ask states: not part of a version ("slower than 3.10.4" names a release, not 3.1 seconds).
_STATED = rf"{_NUMBER}(?!\.?\d)"
_THRESHOLD = re.compile(
    r"(>=?|<=?|\bover\b|\babove\b|\bexceed\w*|\bmore than\b|\bgreater than\b|\blonger than\b|\bslower than\b"
    r"|\blarger than\b|\bbigger than\b|\bhigher than\b|\bat least\b|\bunder\b|\bbelow\b|\bless than\b"
    r"|\bshorter than\b|\bfaster than\b|\bsmaller than\b|\blower than\b|\bat most\b)"
    rf"\s*(?:an?\s+|one\s+)?(?:{_STATED})?\s*(thousand|million|billion|k\b)?\s*([a-zµ]+)?",
    re.IGNORECASE,
)
# A value the ask states roughly ("took almost 12 seconds", "around 500 ms"): the lines nearest it answer.
_NEAR = re.compile(
    r"(?:\balmost\b|\bnearly\b|\babout\b|\baround\b|\broughly\b|\bapproximately\b|\bclose to\b|~)"
    rf"\s*{_STATED}\s*(thousand|million|billion|k\b)?\s*([a-zµ]+)?",
    re.IGNORECASE,
)
_BELOW = ("<", "under", "below", "less", "shorter", "faster", "smaller", "lower", "at most")
# A time is a number of its own: the ``4s`` inside ``BTQ4s=`` (base64, a hash) is not one.
_TIMED = re.compile(
    rf"(?<![\w.]){_NUMBER}\s?(ns|us|µs|ms|msecs?|milliseconds?|secs?|seconds?|s|mins?|minutes?)(?![a-z])", re.I
)
# A time under a key without a unit (``rt=0.873``); a clock under one (``time=2025-04-21T10:29``) is not a duration,
# nor is a stamp (``SET timestamp=1611704757``). A span under one (a query plan's ``actual time=0.959..42667.379``) is
# read at its end: when the step finished.
_TIME_KEYED = re.compile(
    rf"(?<![a-z])(?:\w*time(?!stamp)|duration|elapsed|latency|took|rtt?|dur)[\w.]*\s*[=:]\s*(?:{_NUMBER}\.\.)?{_NUMBER}"
    r"(?![\d.])(?![a-zµ])(?![-:/]\d)",
    re.I,
)
_LOOPS = re.compile(r"\bloops=(\d+)\b")
# A time under a key that names its unit ("millis": 10, "cpuNanos": 85181501, "planningTimeMicros": 85096, a quoted
# key or a bare one), in milliseconds per unit.
_UNIT_KEYED = re.compile(rf"""(?<![a-z])"?\w*?(millis|micros|nanos)\w*"?\s*[=:]\s*{_NUMBER}(?![\d.])""", re.I)
_KEY_UNITS = {"millis": 1.0, "micros": 1e-3, "nanos": 1e-6}
# A size may carry its breakdown before its unit: ``1,360 (960 direct, 400 indirect) bytes``.
_SIZED = re.compile(rf"{_NUMBER}\s?(?:\([^()\n]{{0,60}}\)\s?)?(bytes?|[kmg]i?b?)(?![a-z])", re.I)
_WORD = re.compile(r"[a-z_][a-z0-9_]*")
# A number under a key (``num_dropped=73``, ``"rows":120``, ``rows: 120``, ``io_pressure is 7462.7``), the number
# whole (not a date's year, a version); a file's line (``processor.py:925``) is not one.
_KEYED_NUMBER = re.compile(
    r'(?<![\w.])(?:"([A-Za-z_][\w.\-]{0,60})"\s?:\s?|([A-Za-z_][\w.\-]{0,60})(?:=|:\s| is ))'
    r'(-?\d[\d,]*(?:\.\d+)?)(?=[\s,;)"\]}]|$)'
)
# Where a key's words join: num_dropped, log.level, queue-depth.
_KEY_PARTS = re.compile(r"[_.\-]")
_LEADING_BRACKETS = re.compile(r"^(?:\s*\[[^\]\n]{0,40}\])+")


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Comparison:
    """``direction`` +1 (the greatest first), -1, or 0 (the nearest ``bound`` first); ``bound`` a threshold or the
    stated value in the quantity's unit, if any."""

    direction: int
    quantity: str  # "time" (milliseconds), "size" (bytes) or "number"
    bound: float | None = None
    words: tuple[str, ...] = ()
    # Milliseconds per unit of the ask's threshold: how a time stated without a unit is read (seconds if none).
    unit_ms: float = 1e3
    # What the ask sets aside (``asked.set_aside``): a line holding its terms answers nothing.
    aside: AskTerms = field(default_factory=AskTerms)
    tuning: RelevanceTuning = field(default_factory=RelevanceTuning, repr=False, compare=False)

    @classmethod
    def of(cls, goal: str, tuning: RelevanceTuning | None = None) -> Comparison | None:
        """The comparison the ask makes, or None when it makes none."""
        tuning = tuning or RelevanceTuning()
        goal, aside = set_aside(goal[: tuning.goal_chars])
        comparison = cls._read(goal, tuning)
        if comparison is None or not aside:
            return comparison
        return replace(comparison, aside=_aside_terms(aside))

    @classmethod
    def _read(cls, goal: str, tuning: RelevanceTuning) -> Comparison | None:
        lowered = goal.lower()
        words = _WORD.findall(lowered)
        # "At what time" asks when, not how long.
        timed = _TIME_WORDS.intersection(_WORD.findall(_WHEN.sub(" ", lowered)))
        quantity = "time" if timed else "size" if _SIZE_WORDS.intersection(words) else ""
        stated = [
            (match, -1 if match.group(1).lower().startswith(_BELOW) else 1) for match in _THRESHOLD.finditer(lowered)
        ]
        stated += [(match, 0) for match in _NEAR.finditer(lowered)]
        for match, direction in sorted(stated, key=lambda pair: pair[0].start()):
            number, scale, unit = match.groups()[-3:]
            # "over a million" states its number by its scale alone.
            value = _number(number) if number is not None else 1.0 if scale else None
            if value is None:
                continue
            value *= _SCALE.get((scale or "").lower(), 1.0)
            unit = (unit or "").lower()
            if unit in _TIME_UNITS:
                return cls(direction, "time", value * _TIME_UNITS[unit], tuple(words), _TIME_UNITS[unit], tuning=tuning)
            if unit in _SIZE_UNITS and unit != "s":
                return cls(direction, "size", value * _SIZE_UNITS[unit], tuple(words), tuning=tuning)
            if direction == 0 and not quantity:
                # "about 3 of them": a rough count compares nothing a line states.
                continue
            return cls(direction, quantity or "number", value, tuple(words), tuning=tuning)
        if _MORE.intersection(words) or _HOW_HIGH.search(lowered) or _THE_GREAT_ONE.search(lowered):
            return cls(1, quantity or "number", None, tuple(words), tuning=tuning)
        if _LESS.intersection(words):
            return cls(-1, quantity or "number", None, tuple(words), tuning=tuning)
        return None

    def value_of(self, line: str) -> float | None:
        """The line's greatest value of the compared quantity, or None when it states none.

        A line's leading clock or uptime (``2026-12-01 22:01:11.905``, ``[0.462s][info]``) says when, not how
        long: it is not read."""
        values: list[float] = []
        stamp = leading_stamp(line)
        line = _LEADING_BRACKETS.sub("", line[stamp.end :] if stamp else line, count=1)
        if self.quantity == "time":
            for number, unit in _TIMED.findall(line):
                if (value := _number(number)) is not None:
                    values.append(value * _TIME_UNITS[unit.lower()])
            for unit, number in _UNIT_KEYED.findall(line):
                if (value := _number(number)) is not None:
                    values.append(value * _KEY_UNITS[unit.lower()])
            # A query plan's node says its time for one of its loops: it spent that times its loops.
            loops = float(looped.group(1)) if (looped := _LOOPS.search(line)) else 1.0
            for _, number in _TIME_KEYED.findall(line) if not values else ():
                # A time under a key without a unit: read in the ask's own unit, seconds when it names none.
                if (value := _number(number)) is not None:
                    values.append(value * self.unit_ms * loops)
        elif self.quantity == "size":
            for number, unit in _SIZED.findall(line):
                if (value := _number(number)) is not None:
                    values.append(value * _SIZE_UNITS.get(unit.lower(), 1.0))
        return max(values) if values else None

    def _column_values(self, lines: Sequence[str]) -> dict[int, float]:
        """Values of the table column the ask names, by line index; empty when no header names an ask word. A header
        that repeats (a report printed every interval) reads the rows under each of its copies."""
        for position, line in enumerate(lines[: self.tuning.header_lines]):
            for split in (_cells, _words):
                cells = split(line)
                # A header names its columns: a line of words holding a number is a row or a record, not one.
                if split is _words and any(_number(cell) is not None for cell in cells):
                    continue
                if len(cells) < 2 or not self._named_columns(cells):
                    continue
                rows = {index: split(lines[index]) for index in range(position + 1, len(lines))}
                if values := self._named_column_values(cells, rows):
                    return values
        return {}

    def _named_columns(self, header: Sequence[str]) -> list[int]:
        """The columns whose names say a word of the ask, those saying most of its words first ("Cost Total" for
        "the highest total cost", before "Cost Other"); a column naming an id measures nothing."""
        least = self.tuning.column_name_chars
        names = self._named()
        quantity = _QUANTITY_NAMES.get(self.quantity, frozenset())
        matched = {
            index: sum(
                any(part.startswith(word) or word.startswith(part) for word in names)
                for part in cell.strip().lower().split(" ")
                if len(part) >= least
            )
            for index, cell in enumerate(header)
            if (name := cell.strip().lower().split(" ")[0]) and not name.endswith("id")
        }
        # A column whose name says the asked quantity ("duration_ms", "elapsed (s)" for "took more than 800 ms")
        # comes after those naming the ask's own words.
        said = {
            index: bool(quantity.intersection(_NAME_PARTS.split(header[index].lower())))
            for index, count in matched.items()
            if not count
        }
        named = sorted((index for index, count in matched.items() if count), key=lambda index: -matched[index])
        return named + [index for index, says in said.items() if says]

    def _named_column_values(self, header: Sequence[str], rows: Mapping[int, Sequence[str]]) -> dict[int, float]:
        """The values of the first named column (``_named_columns``) that holds numbers, by row index."""
        for column in self._named_columns(header):
            values = {
                index: value
                for index, row in rows.items()
                if len(row) == len(header) and (value := _number(row[column].strip().split(" ")[0])) is not None
            }
            if values:
                return values
        return {}

    def _named(self) -> set[str]:
        """The ask's words that may name a column or a key: long enough, and not the comparing words themselves."""
        least = self.tuning.column_name_chars
        return {word for word in self.words if len(word) >= least and word not in _MORE and word not in _LESS}

    def _keyed_values(self, by_key: dict[str, dict[int, float]]) -> dict[int, float]:
        """Values under the key=value key the ask names (``num_dropped=73`` for "the largest batch it dropped"), by
        line index: of the keys a word of the ask names, the one most lines hold."""
        names = self._named()
        least = self.tuning.column_name_chars
        named = [
            values
            for key, values in by_key.items()
            if any(
                part.startswith(word) or word.startswith(part)
                for part in _KEY_PARTS.split(key.lower())
                if len(part) >= least
                for word in names
            )
        ]
        return max(named, key=len, default={})

    def _extremes(self, by_key: dict[str, dict[int, float]], lines: Sequence[str]) -> list[int]:
        """For a superlative whose quantity the ask does not name ("the strongest signal"), the line of each keyed
        number's extreme, the keys most lines hold first: which key the ask means is unknown, and one of them is
        it. A key counts when it takes at least ``unnamed_values`` values over as many lines (a constant or a flag
        ranks nothing)."""
        least = self.tuning.unnamed_values
        aside = {index for index, line in enumerate(lines) if self._set_aside(line)}
        kept = [{index: value for index, value in values.items() if index not in aside} for values in by_key.values()]
        ranked = sorted((values for values in kept if len(set(values.values())) >= least), key=len, reverse=True)
        picked: list[int] = []
        for values in ranked:
            best = min(values, key=lambda index: (-values[index] * self.direction, index))
            if best not in picked:
                picked.append(best)
        return picked[: self.tuning.top_picks]

    def _set_aside(self, line: str) -> bool:
        return bool(self.aside) and bool(self.aside.named(line))

    def pick(self, lines: Sequence[str]) -> list[int]:
        """Indexes of the lines that answer the comparison, best first (see the module's docstring)."""
        values = self._column_values(lines)
        if values:
            return self._with_run_edges(self._ranked(values, lines), values)
        if self.quantity != "number":
            values = {index: value for index, line in enumerate(lines) if (value := self.value_of(line)) is not None}
        if not values:
            by_key = _numbers_by_key(lines)
            values = self._keyed_values(by_key)
            if not values and self.bound is None:
                return self._extremes(by_key, lines)
        return self._ranked(values, lines)

    def pick_dated(self, lines: Sequence[str]) -> list[int]:
        """``pick``'s lines, best first, each with no clock of its own followed by the nearest line above it (within
        ``stamp_lines_back``) that begins with one: ``iostat -t`` prints each interval's rows under its time."""
        dated: list[int] = []
        for index in self.pick(lines):
            # The value before its time: the two are shown in paste order, and a time alone answers nothing.
            for kept in (index, _stamp_above(lines, index, self.tuning.stamp_lines_back)):
                if kept is not None and kept not in dated:
                    dated.append(kept)
        return dated

    def pick_rows(self, header: Sequence[str], rows: Mapping[int, Sequence[str]], lines: Sequence[str]) -> list[int]:
        """Indexes of a parsed table's rows (its cells by line index, ``header`` its column names) that answer the
        comparison, best first: by the column the ask names, else by a value of the asked quantity in the row."""
        values = self._named_column_values(header, rows)
        if not values and self.quantity != "number":
            values = {index: value for index in rows if (value := self.value_of(lines[index])) is not None}
        if not values and self.direction and self.bound is None:
            # "Which five packages take the most space": a superlative naming no column speaks of the one column
            # that holds numbers, when the table has only one.
            values = _sole_numeric_column(rows, self.tuning.numeric_rows_share)
        return self._ranked(values, lines)

    def _with_run_edges(self, picked: list[int], values: dict[int, float]) -> list[int]:
        """A column's picks, then, for a greatest, the edges of the run of rows around the best one whose values
        stay within ``run_share`` of it, and the row on each side of that run: a column read down a time series
        (``iostat`` every two seconds) answers "when did the slow stretch start and end" there."""
        if not picked or self.bound is not None or self.direction != 1:
            return picked
        order = sorted(values)
        best = order.index(picked[0])
        least = values[picked[0]] * self.tuning.run_share

        def within(position: int) -> bool:
            return 0 <= position < len(order) and values[order[position]] >= least

        first = last = best
        while within(first - 1):
            first -= 1
        while within(last + 1):
            last += 1
        edges = [position for position in (first, last, first - 1, last + 1) if 0 <= position < len(order)]
        return picked + [order[position] for position in edges if order[position] not in picked]

    def _ranked(self, values: dict[int, float], lines: Sequence[str]) -> list[int]:
        """The lines whose values answer the comparison, best first, what the ask sets aside left out."""
        if self.aside:
            values = {index: value for index, value in values.items() if not self._set_aside(lines[index])}
        if not values:
            return []
        if self.bound is not None and self.direction == 0:
            stated = self.bound
            near = [index for index, value in values.items() if abs(value - stated) <= stated * self.tuning.near_share]
            return sorted(near, key=lambda index: (abs(values[index] - stated), index))[: self.tuning.top_picks]
        if self.bound is not None:
            past = [index for index, value in values.items() if (value - self.bound) * self.direction > 0]
            return sorted(past, key=lambda index: (-values[index] * self.direction, index))[
                : self.tuning.threshold_picks
            ]
        return sorted(values, key=lambda index: (-values[index] * self.direction, index))[: self.tuning.top_picks]


def _numbers_by_key(lines: Sequence[str]) -> dict[str, dict[int, float]]:
    """Each key's numbers (``num_dropped=73``, ``"rssi":-61``) by line index, a line's first under a key; a key
    naming an id measures nothing and is left out."""
    by_key: dict[str, dict[int, float]] = {}
    for index, line in enumerate(lines):
        for quoted, bare, number in _KEYED_NUMBER.findall(line):
            key = quoted or bare
            if not _an_id(key) and (value := _number(number)) is not None:
                by_key.setdefault(key, {}).setdefault(index, value)
    return by_key


def _sole_numeric_column(rows: Mapping[int, Sequence[str]], share: float) -> dict[int, float]:
    """The values of the table's one column whose cells are numbers on at least ``share`` of its rows, by row; empty
    when no column or more than one is."""
    numbers: dict[int, dict[int, float]] = {}
    for index, row in rows.items():
        for column, cell in enumerate(row):
            if (value := _number(cell.strip().split(" ")[0] if cell.strip() else "")) is not None:
                numbers.setdefault(column, {})[index] = value
    numeric = [values for values in numbers.values() if len(values) >= len(rows) * share]
    return numeric[0] if len(numeric) == 1 else {}


def _stamp_above(lines: Sequence[str], index: int, within: int) -> int | None:
    """The nearest line above ``index``, at most ``within`` lines up, that begins with a clock, when the line itself
    begins with none."""
    if leading_stamp(lines[index]) is not None:
        return None
    for above in range(index - 1, max(index - 1 - within, -1), -1):
        if leading_stamp(lines[above]) is not None:
            return above
    return None


def _an_id(key: str) -> bool:
    """Whether a key names an id (``flow_id``, ``pid``, ``requestId``): its number names a thing, it measures none."""
    return key.lower().endswith("id")


def _aside_terms(aside: str) -> AskTerms:
    """The terms of what the ask sets aside: its names when it has any (``/user/events``), else its words."""
    terms = AskTerms.of(aside)
    named = [term for term, kind in zip(terms.terms, terms.kinds, strict=True) if kind != "word"]
    return AskTerms.of(" ".join(named)) if named else terms


def _cells(line: str) -> list[str]:
    """A table line's cells: between pipes, else between runs of two spaces or tabs."""
    if "|" in line:
        return line.strip().strip("|").split("|")
    return [cell for cell in re.split(r"\s{2,}|\t", line.strip()) if cell]


def _words(line: str) -> list[str]:
    """A table line's cells when its columns are one word each and one space may part them (``iostat -x``:
    ``%rrqm r_await rareq-sz``), which ``_cells`` would read as one."""
    return line.split()
