"""An excerpt: the log's own lines in order, the least telling ones elided, for a log just over its target.

When the target is within a quarter of the log's full size, templates would cost
a reader more than they save: the log is served as its lines, with the fewest
ordinary lines elided (each gap counted). Lines are kept in this order: lines
that hold the ask's terms (the rarest first; a term on most lines raises none; a line whose terms weigh less than
``LogConfig.excerpt_weak_share`` of the best such line's comes after the log's ends),
the head lines of alert records (of an alert's records, whatever files they name,
its first few and its last), other alert lines with the record's lines under them and the first
continuation lines of alert records, the records on each side of the log's longest
silences (a hang, a restart), the log's last lines (a build's outcome, a test run's summary), its
first lines, the lines beside those holding the ask's terms, then lines of rare
templates, then the rest, then the source a tool's diagnostic quotes under it (its
gutter and pointer lines: the diagnostic's own line says what and where), then a
line said again word for word (kept once where it ranks best) whatever it holds. An alert heading that
announces its body (``1. Failure: … -----``) brings the body's first lines with it, at its rank.
Kept alert and ask lines say why they were kept.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise

from organs.accounting import count_tokens, count_tokens_many
from organs.fitting import fit_tokens
from organs.stomach.core.asked import AskTerms, rarity
from organs.stomach.core.distill.log.alerts import SEVERE_KINDS
from organs.stomach.core.distill.log.display import ALERT_MARK, ASK_MARK, clip, telling_continuation
from organs.stomach.core.distill.log.mining import Records, Shape
from organs.stomach.core.distill.text import elision, headings_of, thousands
from organs.stomach.core.shapes.line_shapes import announces_body, is_banner, is_source_quote
from organs.stomach.core.shapes.signals import is_alert
from organs.stomach.core.shapes.timestamps import clock_seconds
from organs.stomach.core.tuning import LogConfig

__all__ = ["excerpt"]

_ASK = 0
_ALERT_HEAD = 1
_ALERT_LINE = 2
# The records on each side of a long silence (the last words before a hang, the first of a restart).
_SILENCE = 3
_TAIL = 4
_HEAD = 5
# A line whose ask's terms weigh less than a share of the best such line's: after the log's ends.
_WEAK_ASK = 6
_NEAR_ASK = 7
_RARE = 8
_REST = 9
# The source a diagnostic quotes under itself, after every other line but a repeat: its own line tells.
_QUOTE = 10
# A line said again word for word, after every other line.
_SAID_AGAIN = 11
# The tie-break that puts a compared line before every line the ask's terms raise (theirs are weights in
# thousandths, far below it).
_COMPARED_TIE = 1 << 40
# A word naming a file or a path: a slash, a backslash, or a name with an extension.
_PATHLIKE = re.compile(r"[/\\]|\w\.[A-Za-z]\w*\b")
_NAMED = "<path>"


def _ranks(
    lines: Sequence[str],
    records: Records,
    heads: list[Shape],
    ask: AskTerms | None,
    config: LogConfig,
    compared: Sequence[int] = (),
) -> tuple[list[tuple[int, int, int]], set[int]]:
    """Each line's (reason, tie-break, index): lower reasons are kept first; the lines answering what the ask
    compares (``compared``, best first) are asked lines stronger than any term makes one. With them, the headings
    kept for the lines under them (``_raise_headings``), which are marked for none of their own."""
    count = len(lines)
    reasons = [_REST] * count
    ties = [0] * count
    repeats, kinds = _rank_records(lines, records, heads, ask, config, reasons, ties)
    _rank_alert_lines(lines, records, repeats, config, reasons)
    _rank_asked(lines, ask, config, reasons, ties)
    # The lines beside an alert of a kind the log says rarely (the one error among seventy warnings: the file it
    # was checking, the source it quotes) come with it.
    rare = [
        start
        for start, shape in zip(records.start, heads, strict=True)
        if shape.alert and kinds[shape.kind] <= config.excerpt_rare_alerts
    ]
    _raise_beside(rare, _ALERT_LINE, reasons, ties, config)
    # What a line holding the ask's terms says is often finished or caused by the lines beside it: they come next,
    # the neighbours of the rarest matches first.
    _raise_beside([index for index in range(count) if reasons[index] == _ASK], _NEAR_ASK, reasons, ties, config)
    _raise_compared(compared, reasons, ties)
    for index in _beside_silences(lines, records, config):
        reasons[index] = min(reasons[index], _SILENCE)
    _said_again(lines, reasons, ties)
    for index, line in enumerate(lines):
        if reasons[index] in (_RARE, _REST) and is_source_quote(line):
            reasons[index] = _QUOTE
    for index in range(max(count - config.tail_lines, 0), count):
        reasons[index] = min(reasons[index], _TAIL)
    for index in range(min(config.excerpt_head_lines, count)):
        reasons[index] = min(reasons[index], _HEAD)
    _rank_bodies(lines, reasons, ties, config)
    raised = _raise_headings(lines, reasons, ties)
    return [(reasons[index], ties[index], index) for index in range(count)], raised


def _rank_records(
    lines: Sequence[str],
    records: Records,
    heads: list[Shape],
    ask: AskTerms | None,
    config: LogConfig,
    reasons: list[int],
    ties: list[int],
) -> tuple[set[int], Counter[str]]:
    """Ranks each record's head and the lines under an alert's (those that tell most, ``telling_continuation``);
    returns the alerts said again (ranked as ordinary lines) and how often each alert kind is said."""
    count = len(reasons)
    frequency = Counter(f"{shape.masked}\x00{shape.split}" for shape in heads)
    said = [_event_of(shape) for shape in heads]
    last = {event: start for start, event in zip(records.start, said, strict=True)}
    seen: Counter[str] = Counter()
    repeats: set[int] = set()
    # An alert of a rare kind tells more than one of a common kind (the one error among seventy warnings).
    kinds = Counter(shape.kind for shape in heads if shape.alert)
    for start, end, shape, event in zip(records.start, records.end, heads, said, strict=True):
        key = f"{shape.masked}\x00{shape.split}"
        # A record a level names as an error (or worse) comes before the warnings and the lines that only say a
        # word of trouble ("[Note] … failed"); among each, the rarer its kind, the sooner.
        milder = shape.alert and shape.kind not in SEVERE_KINDS
        ties[start] = frequency[key] + (kinds[shape.kind] * count if shape.alert else 0) + milder * (count + 1) ** 2
        seen[event] += 1
        if shape.alert and seen[event] > config.excerpt_alert_repeats and start != last[event]:
            # An alert said again and again (a full disk on every write) is told by its first and last times.
            repeats.add(start)
            continue
        if shape.alert:
            reasons[start] = _ALERT_HEAD
            shown, read = config.continuation_lines_shown, config.continuation_lines_read
            for index in telling_continuation(lines, start, end, shown, ask, read):
                reasons[index] = _ALERT_LINE
        elif frequency[key] <= config.excerpt_rare_records:
            reasons[start] = _RARE
    return repeats, kinds


def _rank_alert_lines(
    lines: Sequence[str], records: Records, repeats: set[int], config: LogConfig, reasons: list[int]
) -> None:
    """A line that reads as an alert inside a record (not its head) is kept as one, with the lines under it."""
    ends = {index: end for start, end in zip(records.start, records.end, strict=True) for index in range(start, end)}
    for index, line in enumerate(lines):
        if reasons[index] > _ALERT_LINE and index not in repeats and is_alert(line):
            reasons[index] = _ALERT_LINE
            # What an alert line says goes on in the record's lines under it (a driver's error, then "Is the
            # server running on host …"): they are kept with it.
            for after in range(index + 1, min(index + 1 + config.excerpt_alert_after, ends.get(index, index + 1))):
                reasons[after] = min(reasons[after], _ALERT_LINE)


def _rank_bodies(lines: Sequence[str], reasons: list[int], ties: list[int], config: LogConfig) -> None:
    """An alert that announces its body ("1. Failure: … ------", its message under it) is told by that body, in its
    record or not: the body's first lines rank with it, just after it."""
    for index, line in enumerate(lines):
        if reasons[index] <= _ALERT_LINE and is_alert(line) and announces_body(line):
            for after in range(index + 1, min(index + 1 + config.excerpt_alert_after, len(lines))):
                if lines[after].strip() and (reasons[index], ties[index]) < (reasons[after], ties[after]):
                    reasons[after], ties[after] = reasons[index], ties[index]


def _rank_asked(
    lines: Sequence[str], ask: AskTerms | None, config: LogConfig, reasons: list[int], ties: list[int]
) -> None:
    """The lines holding the ask's terms are kept first, the rarer their terms the sooner; a line holding only
    the weaker of them ("server" where the best line names the failing call) yields to the log's last and first
    lines."""
    broad = ask.broad() if ask is not None else None
    named = [broad.named(line) if broad else () for line in lines]
    rarity = _rarity(named, len(lines), config)
    asked: dict[int, tuple[int, int]] = {}
    for index, line in enumerate(lines):
        lowered = line.lower() if named[index] else ""
        # A term the line says again weighs more, saturating as BM25's term frequency does.
        weight = sum(
            rarity.get(term, 0.0) * _saturated(lowered.count(term), config.excerpt_term_saturation)
            for term in named[index]
        )
        if reasons[index] > _ASK and weight > 0:
            # A rounded weight, so ties stay stable.
            asked[index] = reasons[index], ties[index]
            reasons[index], ties[index] = _ASK, -round(weight * 1000)
    best = min((tie for index, tie in enumerate(ties) if reasons[index] == _ASK), default=0)
    for index, (reason, tie) in asked.items():
        if ties[index] > best * config.excerpt_weak_share:
            # Weakly asked, a line keeps the rank it had if higher (an error record's head stays one).
            reasons[index], ties[index] = (reason, tie) if reason < _WEAK_ASK else (_WEAK_ASK, ties[index])


def _headings(lines: Sequence[str]) -> list[int]:
    """Each line's heading: the nearest line above it indented less (``headings_of``), or else, where the log
    titles its parts with banners (``=== cciss,3 ===``, two of them at least), the banner above it."""
    heading_of = headings_of(lines)
    banners = {index for index, line in enumerate(lines) if is_banner(line)}
    if len(banners) < 2:
        return heading_of
    banner = -1
    for index, line in enumerate(lines):
        if index in banners:
            banner = index
        elif heading_of[index] < 0 and line.strip():
            heading_of[index] = banner
    return heading_of


def _raise_headings(lines: Sequence[str], reasons: list[int], ties: list[int]) -> set[int]:
    """Each heading kept with the best of the lines indented under it, just before it (a linter's diagnostic tells
    where only with its file's name above it, a frame with its exception, a script's lines with the banner naming
    what it looped over); the headings so raised."""
    heading_of = _headings(lines)
    raised: set[int] = set()
    # From the end, so a heading raised by its lines raises its own heading in turn.
    for index in range(len(lines) - 1, -1, -1):
        heading = heading_of[index]
        if heading >= 0 and (reasons[index], ties[index]) < (reasons[heading], ties[heading]):
            reasons[heading], ties[heading] = reasons[index], ties[index]
            raised.add(heading)
    return raised


def _event_of(shape: Shape) -> str:
    """What an alert says, whatever files or paths it names: a warning said for each of forty jars, the jar's
    name and path words that masking keeps, is one alert said forty times."""
    words = [_NAMED if _PATHLIKE.search(word) else word for word in shape.masked.split(" ")]
    return f"{' '.join(words)}\x00{shape.split}"


def _beside_silences(lines: Sequence[str], records: Records, config: LogConfig) -> list[int]:
    """The head lines of the records before and after the log's longest silences: gaps between records of at
    least ``excerpt_silence_seconds`` and ``excerpt_silence_times`` the log's mean gap, the longest
    ``excerpt_silences`` of them."""
    clocked = [(start, seconds) for start in records.start if (seconds := clock_seconds(lines[start])) is not None]
    if len(clocked) < 3:
        return []
    span = clocked[-1][1] - clocked[0][1]
    least = max(config.excerpt_silence_seconds, config.excerpt_silence_times * span / (len(clocked) - 1))
    gaps = [
        (after[1] - before[1], before[0], after[0])
        for before, after in pairwise(clocked)
        if after[1] - before[1] >= least
    ]
    longest = sorted(gaps, reverse=True)[: config.excerpt_silences]
    return [index for _, before, after in longest for index in (before, after)]


def _raise_compared(compared: Sequence[int], reasons: list[int], ties: list[int]) -> None:
    """The lines answering what the ask compares, best first, are kept as asked lines before any other."""
    for rank, index in enumerate(compared):
        reasons[index], ties[index] = min(reasons[index], _ASK), -_COMPARED_TIE + rank


def _said_again(lines: Sequence[str], reasons: list[int], ties: list[int]) -> None:
    """A line said again word for word (a licence notice each test assembly prints) is kept once, where it ranks
    best (next to the asked line, not its first time): its other times are the first to be elided."""
    best: dict[str, int] = {}
    for index, line in enumerate(lines):
        text = line.strip()
        if not text:
            continue
        kept = best.setdefault(text, index)
        if kept == index:
            continue
        if (reasons[index], ties[index]) < (reasons[kept], ties[kept]):
            best[text], kept, index = index, index, kept
        reasons[index] = _SAID_AGAIN


def _raise_beside(lines: list[int], reason: int, reasons: list[int], ties: list[int], config: LogConfig) -> None:
    """The lines within ``excerpt_near_lines`` of each of ``lines`` are kept for ``reason`` at the latest, tied
    with the line beside them."""
    for index in lines:
        for near in range(
            max(index - config.excerpt_near_lines, 0), min(index + config.excerpt_near_lines + 1, len(reasons))
        ):
            if reasons[near] > reason:
                reasons[near], ties[near] = reason, ties[index]


def _saturated(count: int, saturation: float) -> float:
    """BM25's term-frequency factor without length: 1 for one mention, approaching ``saturation + 1``."""
    return count * (saturation + 1) / (count + saturation)


def _rarity(named: Sequence[tuple[str, ...]], count: int, config: LogConfig) -> dict[str, float]:
    """Each term of the ask found in the log, weighted by how rare it is there (BM25's idf); a term on more than
    ``excerpt_common_share`` of the lines weighs nothing: a line that holds only such a word is one of many
    ordinary mentions of it (``index`` on every line of a docs build)."""
    frequency = Counter(term for terms in named for term in terms)
    return {
        term: rarity(lines, count) for term, lines in frequency.items() if lines <= count * config.excerpt_common_share
    }


def _rendered(header: str, lines: Sequence[str], kept: set[int], marks: dict[int, str]) -> str:
    """The kept lines in order, each gap counted; a gap that a count would not make shorter (blank lines, one line
    no longer than its count's note) is shown as it is."""
    out = [header]
    gap: list[str] = []

    def close() -> None:
        note = elision(len(gap), "line")
        if all(not line.strip() for line in gap) or (len(gap) == 1 and len(gap[0]) <= len(note)):
            out.extend(gap)
        else:
            out.append(note)
        gap.clear()

    for index, line in enumerate(lines):
        if index not in kept:
            gap.append(line)
            continue
        if gap:
            close()
        out.append(line + marks.get(index, ""))
    if gap:
        close()
    return "\n".join(out)


def excerpt(
    lines: Sequence[str],
    mined: Sequence[str],
    records: Records,
    heads: list[Shape],
    alerts: str,
    target: int,
    encoding: str,
    ask: AskTerms | None,
    config: LogConfig,
    header: str | None = None,
    compared: Sequence[int] = (),
    shown: frozenset[int] = frozenset(),
) -> tuple[str, int] | None:
    """The richest excerpt of ``lines`` that measures within ``target``, or ``None`` when none does.

    ``mined`` are the lines as mined (a JSON line as its fields), judged for alerts and the ask. ``header``
    replaces the excerpt's own first line (the log's size and alerts). The lines ``shown`` (by the rendering the
    excerpt is added to) are never kept.
    """
    ranks, headings = _ranks(mined, records, heads, ask, config, compared)
    ranked = sorted(ranks)
    # Each line's own count, with its mark: an excerpt keeps the lines that tell, and those (paths, ids, a build's
    # long errors) run more tokens a character than the log's average. A log served as an excerpt is small.
    # A line of thousands of characters (a syscall's buffer, a dumped request) is cut around the ask's terms.
    line_chars = int(target * config.excerpt_line_chars_per_token)
    line_chars = min(config.excerpt_line_chars, max(config.excerpt_line_least_chars, line_chars))
    clipped = [clip(line, line_chars, ask) for line in lines]
    costs = count_tokens_many([line + "\n" for line in clipped], encoding, 1)
    marked = {
        index: ALERT_MARK if reason == _ALERT_HEAD else ASK_MARK
        for reason, _, index in ranked
        if reason in (_ALERT_HEAD, _ASK) and index not in headings
    }
    mark_costs = {mark: count_tokens(mark, encoding) for mark in (ALERT_MARK, ASK_MARK)}
    for index, mark in marked.items():
        costs[index] += mark_costs[mark]
    gap_cost = count_tokens(elision(10, "line") + "\n", encoding)
    if header is None:
        header = f"[{thousands(len(lines))}-line log · {alerts} · excerpt: the lines in order, some elided]"

    def render(allowance: int) -> str:
        # The ends stand kept: no gap before the first line nor after the last.
        kept: set[int] = {-1, len(lines)}
        spent = 0
        for _, _, index in ranked:
            if index in shown:
                continue
            # A line kept inside a gap splits it in two (one more note); one that fills a gap ends a note.
            notes = 1 - (index - 1 in kept) - (index + 1 in kept)
            cost = costs[index] + notes * gap_cost
            # A blank line alone in a gap says nothing and costs a second note.
            if spent + cost <= allowance and (notes <= 0 or clipped[index].strip()):
                kept.add(index)
                spent += cost
        # A kept line says why: an alert record's head or a line holding the ask's terms.
        return _rendered(header, clipped, kept, {index: marked[index] for index in kept if index in marked})

    fitted = fit_tokens(
        render,
        lambda rendering: count_tokens(rendering, encoding),
        target,
        start=target - count_tokens(header, encoding) - config.fit_frame_slack,
        rounds=config.fit_rounds,
        slack=target // config.fit_close_share + config.fit_close_tokens,
    )
    return None if fitted is None else (fitted.rendering, fitted.tokens)
