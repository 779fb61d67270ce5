"""Leading timestamps of log lines: recognise them, and read the ones that name an instant.

A line "opens with a clock" when a time of day sits at its start (optionally in
brackets), or an uptime in brackets (``[   163.009]``, a kernel's or Xorg's).
Only stamps that carry a full date become instants; uptimes, syslog stamps
(``Jul 20 18:00:01``), bare clocks and two-field dates such as ``03-17`` or
``17/06/09`` identify a log but name no unambiguous day, so they bound nothing.
A zone-less stamp is read as UTC: a log rarely says its zone, and inventing a
local offset would be a guess, whereas UTC is the convention servers log in.
``Z``, ``UTC`` and ``GMT`` are UTC; a numeric offset is subtracted exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

__all__ = [
    "UPTIME",
    "LeadingStamp",
    "clock_seconds",
    "format_instant",
    "holds_date_and_time",
    "leading_stamp",
    "read_instant",
    "window_of",
    "window_of_lines",
]

_MONTHS = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec"
_MONTH_NUMBER = {name: index for index, name in enumerate(_MONTHS.split("|"), start=1)}
_YEAR_PIVOT = 70
_WEEKDAYS = "Mon|Tue|Wed|Thu|Fri|Sat|Sun"
_ZONE = r"(?:\s?(?P<zone>Z|UTC|GMT|[+-]\d{2}(?::?\d{2})?)(?![\w:]))?"

# Every alternative is anchored and built from bounded or possessive pieces, so
# a match attempt costs a few dozen steps whatever the line holds.
# An uptime in brackets, padded as the kernel and Xorg pad it: [    0.000000], [   163.009] (it names no instant).
UPTIME = r"\[\s{0,12}\d{1,10}\.\d{3,9}\]"

_LEADING = re.compile(
    rf"{UPTIME}"
    r"|[\[(]?\s?(?:"
    # ISO-8601-like: 2024-01-02T03:04:05.123Z, 2015-10-18 18:01:47,978, 2016/09/27 20:30:31, and MySQL's
    # space-padded hour (2024-01-07  9:38:26)
    rf"(?P<iy>\d{{4}})(?P<isep>[-/])(?P<im>\d{{2}})(?P=isep)(?P<id>\d{{2}})"
    rf"(?:T| (?=\d{{2}}:)|  (?=\d:))(?P<iH>\d{{1,2}}):(?P<iM>\d{{2}}):(?P<iS>\d{{2}})"
    rf"(?:[.,](?P<ifrac>\d{{1,9}}))?{_ZONE}"
    # compact, full date: 20171223-22:15:29:606
    r"|(?P<cy>\d{4})(?P<cm>\d{2})(?P<cd>\d{2})-(?P<cH>\d{1,2}):(?P<cM>\d{1,2}):(?P<cS>\d{1,2})"
    r"(?::(?P<cfrac>\d{1,3}))?(?!\d)"
    # compact, two-digit year: 081109 203615 (yyMMdd HHmmss)
    r"|(?P<ky>\d{2})(?P<km>\d{2})(?P<kd>\d{2}) (?P<kH>\d{2})(?P<kM>\d{2})(?P<kS>\d{2})(?!\d)"
    # ctime: Sun Dec 04 04:47:44 2005
    rf"|(?:{_WEEKDAYS}) (?P<tmon>{_MONTHS}) {{1,2}}(?P<td>\d{{1,2}}) (?P<tH>\d{{2}}):(?P<tM>\d{{2}}):(?P<tS>\d{{2}})"
    r"(?:\.\d{1,9})? (?P<ty>\d{4})(?!\d)"
    # no date: syslog (Jul 20 18:00:01), day-month pairs (03-17 16:13:38, 10.30 16:49:06, 17/06/09 20:10:40)
    rf"|(?P<undated>(?:(?:{_MONTHS}) {{1,2}}\d{{1,2}}|\d{{2}}[-/.]\d{{2}}(?:/\d{{2}})?)"
    r" \d{1,2}:\d{2}:\d{2}(?:[.,]\d{1,9})?)"
    # a bare clock: 18:00:01
    r"|(?P<clock>\d{1,2}:\d{2}:\d{2}(?:[.,]\d{1,9})?)(?![\d:])"
    r")\]?"
)


@dataclass(frozen=True, slots=True)
class LeadingStamp:
    """A stamp at the start of a line: where it ends, and (read on demand) the instant it names."""

    end: int
    match: re.Match[str]

    def instant(self) -> tuple[int, str] | None:
        """``(epoch_seconds, fraction_digits)`` in UTC, or ``None`` for an undated or impossible stamp."""
        return _instant_of(self.match)


def _epoch(year: int, month: int, day: int, hour: int, minute: int, second: int) -> int | None:
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        return None
    return int(moment.timestamp())


def _offset_seconds(zone: str | None) -> int:
    if zone is None or zone in ("Z", "UTC", "GMT"):
        return 0
    digits = zone[1:].replace(":", "")
    hours = int(digits[:2])
    minutes = int(digits[2:4]) if len(digits) >= 4 else 0
    sign = 1 if zone[0] == "+" else -1
    return sign * (hours * 3600 + minutes * 60)


def _instant_of(match: re.Match[str]) -> tuple[int, str] | None:
    group = match.group
    if group("iy") is not None:
        epoch = _epoch(
            int(group("iy")), int(group("im")), int(group("id")), int(group("iH")), int(group("iM")), int(group("iS"))
        )
        if epoch is None:
            return None
        return epoch - _offset_seconds(group("zone")), group("ifrac") or ""
    if group("cy") is not None:
        epoch = _epoch(
            int(group("cy")), int(group("cm")), int(group("cd")), int(group("cH")), int(group("cM")), int(group("cS"))
        )
        # An unpadded millisecond field ("…:47:7") means 7 ms, so it is padded before it becomes a fraction.
        return None if epoch is None else (epoch, (group("cfrac") or "").zfill(3) if group("cfrac") else "")
    if group("ky") is not None:
        # Two-digit years pivot at 70, the POSIX convention for %y.
        short_year = int(group("ky"))
        year = 2000 + short_year if short_year < _YEAR_PIVOT else 1900 + short_year
        epoch = _epoch(year, int(group("km")), int(group("kd")), int(group("kH")), int(group("kM")), int(group("kS")))
        return None if epoch is None else (epoch, "")
    if group("ty") is not None:
        epoch = _epoch(
            int(group("ty")),
            _MONTH_NUMBER[group("tmon")],
            int(group("td")),
            int(group("tH")),
            int(group("tM")),
            int(group("tS")),
        )
        return None if epoch is None else (epoch, "")
    return None


def leading_stamp(line: str) -> LeadingStamp | None:
    """The stamp the line opens with, or ``None`` when it does not open with a clock."""
    match = _LEADING.match(line)
    if match is None:
        return None
    return LeadingStamp(end=match.end(), match=match)


# A date and a time anywhere in a line ("[error] 2018-05-03T14:43:03Z …", "=== startup: 2016/05/09 08:22 ==="); a
# time alone may be a duration (ffmpeg's "time=00:00:12.00").
_DATE_AND_TIME = re.compile(r"\d{2,4}[-/]\d\d[-/]\d{2,4}[ T]\d\d:\d\d")


def holds_date_and_time(line: str) -> bool:
    """Whether a date and a time stand anywhere in ``line``: a record's clock, whatever opens the line."""
    return _DATE_AND_TIME.search(line) is not None


_TIME_OF_DAY = re.compile(r"(\d{1,2}):(\d{2}):(\d{2})")


def clock_seconds(line: str) -> int | None:
    """The seconds the stamp ``line`` opens with names: since the epoch for a dated stamp, since midnight for a
    syslog stamp or a bare clock (enough to tell how long a log was silent within a day); ``None`` for no clock
    or an uptime."""
    stamp = leading_stamp(line)
    if stamp is None:
        return None
    instant = stamp.instant()
    if instant is not None:
        return instant[0]
    clock = _TIME_OF_DAY.search(stamp.match.group(0))
    if clock is None:
        return None
    hours, minutes, seconds = (int(part) for part in clock.groups())
    return hours * 3600 + minutes * 60 + seconds


def read_instant(text: str) -> str | None:
    """The RFC 3339 UTC spelling of the stamp ``text`` opens with, if it names a full date."""
    stamp = leading_stamp(text)
    instant = None if stamp is None else stamp.instant()
    return None if instant is None else format_instant(instant)


_DIGIT_SHAPE = str.maketrans("0123456789", "0000000000")
# Shapes whose digits run from the most significant field to the least, with no zone
# offset or month name: among stamps of one such shape, text order is time order.
_ORDERED_SHAPE = re.compile(r"[\[(]?\s?0000(?:-00-00[T ]|/00/00[T ]|0{4}-)[0:.,]*(?:\s?(?:Z|UTC|GMT))?\]?")


_TWO_DIGIT_YEAR_SHAPE = re.compile(r"[\[(]?\s?000000 000000\]?")


def _same_century(shape: str, ordered: list[str]) -> bool:
    """Whether ``yyMMdd HHmmss`` stamps, sorted as text, are in time order: their years sit on one side of the pivot."""
    if not ordered or _TWO_DIGIT_YEAR_SHAPE.fullmatch(shape) is None:
        return False
    first, last = (text.lstrip("[( ")[:2] for text in (ordered[0], ordered[-1]))
    return (int(first) < _YEAR_PIVOT) == (int(last) < _YEAR_PIVOT)


def _sort_key(instant: tuple[int, str]) -> tuple[int, str]:
    return instant[0], instant[1].ljust(9, "0")


def _instant_of_text(text: str) -> tuple[int, str] | None:
    stamp = leading_stamp(text)
    return None if stamp is None else stamp.instant()


def window_of(stamp_texts: Iterable[str]) -> tuple[str | None, str | None]:
    """The earliest and latest instants among leading stamps, as RFC 3339 UTC (min/max, so order does not matter).

    A window is reported only where the stamps bound one: when any stamp names no
    day (a syslog stamp, a bare clock), the dated stamps bound only some of the
    lines, so there is no window at all rather than a wrong one (a log of syslog
    lines from April to June with two ISO-stamped lines is not a 0.25 s window).
    Impossible dates are skipped. Stamps of an ordered shape are sorted as text
    and only read from each end until a valid one turns up, which spares reading
    every line of a long log.
    """
    by_shape: dict[str, set[str]] = {}
    for text in stamp_texts:
        by_shape.setdefault(text.translate(_DIGIT_SHAPE), set()).add(text)
    if any(_undated(next(iter(texts))) for texts in by_shape.values()):
        return None, None
    instants: list[tuple[int, str]] = []
    for shape, texts in by_shape.items():
        ordered = sorted(texts)
        if _ORDERED_SHAPE.fullmatch(shape) or _same_century(shape, ordered):
            for candidates in (ordered, reversed(ordered)):
                for text in candidates:
                    instant = _instant_of_text(text)
                    if instant is not None:
                        instants.append(instant)
                        break
            continue
        for text in ordered:
            stamp = leading_stamp(text)
            if stamp is None:
                continue
            instant = stamp.instant()
            if instant is not None:
                instants.append(instant)
    if not instants:
        return None, None
    try:
        return format_instant(min(instants, key=_sort_key)), format_instant(max(instants, key=_sort_key))
    except ValueError:
        return None, None


def window_of_lines(lines: Sequence[str], edge_lines: int | None = None) -> tuple[str | None, str | None]:
    """The time window of the lines' leading stamps (``window_of``); with ``edge_lines``, of the first and last
    that many lines only, so a long text read in part is still bounded at both ends. The one home of a frame's
    window: every kind reads it here (a log's records hand ``window_of`` the stamps they found)."""
    if edge_lines is not None and len(lines) > 2 * edge_lines:
        lines = [*lines[:edge_lines], *lines[-edge_lines:]]
    return window_of([line[: stamp.end] for line in lines if (stamp := leading_stamp(line))])


def _undated(text: str) -> bool:
    """Whether the stamp names no day; which alternative matches depends on the shape alone."""
    stamp = leading_stamp(text)
    return stamp is not None and (stamp.match.group("undated") is not None or stamp.match.group("clock") is not None)


def format_instant(instant: tuple[int, str]) -> str:
    epoch, fraction = instant
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=epoch)
    if not 1 <= moment.year <= 9999:
        raise ValueError("instant out of range")
    stamp = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{fraction}Z" if fraction else f"{stamp}Z"
