"""Log distillation: a log's records grouped into templates, its alerts kept, its totals stated.

The distiller is split by role, as a template miner is: its tuning numbers are
``organs.stomach.core.tuning.LogConfig`` (handed in, never read from a global), ``structured``
(a source prefix, JSON lines and logfmt read as fields), ``masking`` (variable fields as
``<*>``), ``headers`` (leading fields that are header, not event), ``alerts`` (what kind of
alert a record is, and the numbers that split templates), ``crash`` (a process-ending report
it holds, kept whole), ``mining`` (records and templates), ``display`` (template lines and
examples), ``pieces`` (what a rendering holds, its order and grouping), ``excerpt`` (a log
just over its target) and ``fitting`` (to a token target). This module is the facade.

What is served, in order of preference: the whole log when it fits its target;
an excerpt of its own lines when the target is at least
``LogConfig.excerpt_within_share`` of its size; else its templates in order of first appearance. There, what a
reader looks for comes first: alert templates (with the first ones' real
lines), then templates holding the ask's terms (with the line that holds
them), then the log's last lines, then what the log mostly says, then the
shortest templates; distinct alert lines and other examples after. Tight
budgets drop whole templates, and the rendering says exactly how many templates
and lines, and how many alert lines of shown templates, it did not show.
Nothing here knows a particular log format beyond generic signals.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from organs.accounting import count_tokens
from organs.stomach.core.asked import AskTerms, rarity
from organs.stomach.core.compare import Comparison
from organs.stomach.core.distill.log.alerts import kinds_text
from organs.stomach.core.distill.log.crash import Crash, crash_of
from organs.stomach.core.distill.log.display import clip, constant_line, example, template_line
from organs.stomach.core.distill.log.excerpt import excerpt
from organs.stomach.core.distill.log.fitting import estimate_tokens, fit
from organs.stomach.core.distill.log.masking import mask_variables
from organs.stomach.core.distill.log.mining import Records, Shape, Template, mine_templates, records_of
from organs.stomach.core.distill.log.pieces import SLOT_TEMPLATE, AskRaise, Piece, ask_raise, pieces_of, render
from organs.stomach.core.distill.log.structured import structured_view
from organs.stomach.core.distill.shown import shown_lines
from organs.stomach.core.distill.text import head_tail, plural, thousands
from organs.stomach.core.shapes.line_shapes import closes_run
from organs.stomach.core.shapes.signals import is_alert
from organs.stomach.core.shapes.timestamps import window_of, window_of_lines
from organs.stomach.core.tuning import LogConfig, StomachTuning
from organs.text_views import lines_of

__all__ = ["LogConfig", "LogDigest", "LogDistiller", "distill_log", "mask_variables"]


@dataclass(frozen=True, slots=True)
class LogDigest:
    rendering: str
    templates: int
    alerts: int
    valid_from: str | None
    valid_to: str | None
    tokens: int | None = None


def distill_log(
    text: str,
    target_tokens: int,
    encoding: str,
    *,
    mine: bool = True,
    ask: AskTerms | None = None,
    tuning: StomachTuning | None = None,
    comparison: Comparison | None = None,
) -> LogDigest:
    """A rendering of a log within ``target_tokens`` when it can be done (the caller measures it).

    A log whose full text fits the target is served whole; one at most twice its target
    (``LogConfig.excerpt_within_share``) is served as an excerpt of its own lines; any other is templated.
    ``ask`` raises what holds its terms; an excerpt keeps the lines answering ``comparison`` (the slowest
    request) first.
    """
    return LogDistiller(text, ask, tuning, comparison).render(target_tokens, encoding, mine=mine)


@dataclass(frozen=True, slots=True)
class _Mined:
    """What mining a log found: everything a rendering needs that does not depend on its target."""

    lines: Sequence[str]
    records: Records
    heads: list[Shape]
    templates: list[Template]
    header: str
    alerts: str
    alert_templates: int
    valid_from: str | None
    valid_to: str | None
    tail: list[str]
    # Per template: one line said as it is, shown as received (``display.constant_line``), read once per log.
    as_received: list[bool]
    # Per template: the weight of the ask's terms it holds and whether it is raised for them.
    ask_raise: AskRaise
    # Per template: whether its line is a run's tally (``line_shapes.closes_run``).
    tallies: list[bool]
    # The crash the log holds, if any (``crash``).
    crash: Crash | None


class LogDistiller:
    """One log, rendered at as many targets as the budget asks for (a refit asks again), mined at most once.

    Mining (records, templates, the window) does not depend on the target and is
    nearly all of a rendering's cost, so it is kept from the first rendering that
    needs it; so is the log's exact token count.
    """

    def __init__(
        self,
        text: str,
        ask: AskTerms | None = None,
        tuning: StomachTuning | None = None,
        comparison: Comparison | None = None,
    ) -> None:
        # Served whole, the log is as received; mined and rendered, it is without the indentation every line shares
        # (a log pasted from a quote or a list item): its clocks then open its lines, as the log wrote them.
        self.received = text
        self.tuning = tuning or StomachTuning()
        self.config = self.tuning.log
        self.text = _single_spaced(_dedented(text), self.config)
        self.ask = ask
        self.comparison = comparison
        self.lines = lines_of(self.text)
        self._mined: _Mined | None = None
        self._full_tokens: dict[str, int] = {}
        self._frame_tokens: dict[str, int] = {}

    def _count_full(self, target_tokens: int, encoding: str, *, trial: bool = True) -> int | None:
        """The whole log's exact count, or (on ``trial``) ``None`` when it is so much longer than the target that it
        cannot fit."""
        if trial and len(self.received) > target_tokens * self.config.whole_text_trial:
            return None
        if encoding not in self._full_tokens:
            self._full_tokens[encoding] = count_tokens(self.received, encoding)
        return self._full_tokens[encoding]

    def _bare_frame_tokens(self, found: _Mined, encoding: str) -> int:
        """The count of the template rendering with no piece in it (header, legend, omission notes): the same for
        every target, so counted once."""
        if encoding not in self._frame_tokens:
            self._frame_tokens[encoding] = count_tokens(
                render(found.header, [], found.templates, self.config), encoding
            )
        return self._frame_tokens[encoding]

    def _mine(self) -> _Mined:
        if self._mined is not None:
            return self._mined
        lines, text, config = self.lines, self.text, self.config
        view = structured_view(lines, config)
        mined = lines if view is None else view.lines
        records, heads, fields = records_of(mined, text if view is None else "\n".join(mined), config)
        templates = mine_templates(
            mined, records, heads, config, _asked(mined, records, self.ask, config.asked_common_share)
        )
        # Blank lines that head records of their own (a tool's output, its records set apart) are no template: a
        # count of nothing tells the reader nothing.
        templates = [template for template in templates if template.masked.strip()]
        valid_from, valid_to = window_of(
            mined[start][:end] for start, end in zip(records.start, records.stamp_end, strict=True) if end
        )
        alerts = _alerts_text(templates, config.alert_kinds_shown)
        header = _header(len(lines), len(records.start), len(templates), alerts, valid_from, valid_to)
        if view is not None:
            header += "\n" + view.note
        if fields.columns:
            after = " after the clock" if any(records.stamp_end) else ""
            header += (
                f"\ntemplate lines leave out the first {plural(fields.columns, 'space-separated field')}{after} "
                f"where a message follows them (they hold: {clip(fields.summary, config.template_chars)})"
            )
        alert_templates = sum(1 for template in templates if template.alert)
        tail = _tail(lines, records, heads, config)
        as_received = [constant_line(template, records, mined, lines, config, bool(self.ask)) for template in templates]
        raised = ask_raise(mined, records, templates, self.ask, config)
        tallies = [closes_run(mined[records.start[template.first_record]]) for template in templates]
        self._mined = _Mined(
            mined,
            records,
            heads,
            templates,
            header,
            alerts,
            alert_templates,
            valid_from,
            valid_to,
            tail,
            as_received,
            raised,
            tallies,
            crash_of(text, lines, config),
        )
        return self._mined

    def render(self, target_tokens: int, encoding: str, *, mine: bool = True) -> LogDigest:
        """The log within ``target_tokens`` when it can be done; see ``distill_log``."""
        lines, text, config = self.lines, self.text, self.config
        full_tokens = self._count_full(target_tokens, encoding)
        if full_tokens is not None and full_tokens <= target_tokens:
            # Served whole: its alert lines stand for its alert templates (the caller values a log by them).
            alert_lines = sum(1 for line in lines if is_alert(line))
            return LogDigest(self.received, 0, alert_lines, *window_of_lines(lines), full_tokens)
        if not mine:
            valid_from, valid_to = window_of_lines(lines, self.tuning.window_edge_lines)
            header = f"[{thousands(len(lines))}-line log · head and tail only (shallow tier)]"
            cut = head_tail(text, max(target_tokens - 20, 1), self.tuning)
            return LogDigest(header + "\n" + cut, 0, 0, valid_from, valid_to)
        found = self._mine()
        mined, records, templates = found.lines, found.records, found.templates
        window = found.valid_from, found.valid_to
        # Pieces carry the estimates of one fitting, so each rendering starts from fresh ones.
        pieces = pieces_of(
            mined,
            records,
            templates,
            found.tail,
            config,
            lines,
            found.as_received,
            found.ask_raise,
            found.tallies,
            found.crash,
        )

        def spell(piece: Piece) -> str:
            if piece.text is None:
                template = templates[piece.template]
                if piece.slot == SLOT_TEMPLATE:
                    received = lines if found.as_received[piece.template] else None
                    piece.text = template_line(mined, records, template, config, self.ask, received)
                else:
                    piece.text = example(mined, records, template, lines, config, self.ask)
                piece.size = len(piece.text)
            return piece.text

        counts = len(templates), found.alert_templates
        if self._served_as_excerpt(found, full_tokens, target_tokens, encoding):
            excerpted = excerpt(
                lines,
                mined,
                records,
                found.heads,
                found.alerts,
                target_tokens,
                encoding,
                self.ask,
                config,
                compared=self._compared(mined),
            )
            if excerpted is not None:
                return LogDigest(excerpted[0], *counts, *window, excerpted[1])
        if len(text) <= target_tokens * config.whole_rendering_trial:
            everything = sorted(pieces, key=lambda piece: piece.priority)
            for piece in everything:
                spell(piece)
            whole = render(found.header, everything, templates, config)
            # A rendering no longer than the log it renders often fits a small log's target: one exact count
            # tells, and spares the estimates and the fitting rounds.
            tokens = count_tokens(whole, encoding) if len(whole) <= len(text) else target_tokens + 1
            if tokens <= target_tokens:
                return LogDigest(whole, *counts, *window, tokens)
        sample_chars = min(
            config.estimate_sample_chars,
            max(target_tokens, config.estimate_least_tokens) * self.tuning.prose_chars_per_token,
        )
        rates = estimate_tokens(pieces, encoding, spell, sample_chars)
        frame_tokens = self._bare_frame_tokens(found, encoding)
        rendering, tokens = fit(
            found.header, pieces, templates, target_tokens, encoding, spell, rates, frame_tokens, config
        )
        return LogDigest(rendering, *counts, *window, tokens)

    def _served_as_excerpt(self, found: _Mined, full_tokens: int | None, target_tokens: int, encoding: str) -> bool:
        """Whether the log is to be served as an excerpt of its own lines.

        A log whose target is at least ``excerpt_within_share`` of its count is an excerpt; so is a short log
        whose templates' header and legend alone would take more than ``excerpt_frame_share`` of the target (they
        could show their legend and no line at all), and one whose lines are few or whose records are mostly
        distinct: its templates would be nearly as many as its lines, their masks hiding what each line says (a
        score of long JSON records, a device's report). Logs up to ``excerpt_distinct_trial`` characters a target
        token are counted to tell."""
        config = self.config
        few = len(found.lines) <= config.excerpt_few_lines
        templates_a_record = len(found.templates) / max(len(found.records.start), 1)
        if full_tokens is None and len(self.received) <= target_tokens * config.excerpt_distinct_trial:
            full_tokens = self._count_full(target_tokens, encoding, trial=False)
        return full_tokens is not None and (
            few
            or templates_a_record >= config.excerpt_distinct_share
            or target_tokens >= full_tokens * config.excerpt_within_share
            or self._bare_frame_tokens(found, encoding) > target_tokens * config.excerpt_frame_share
        )

    def _compared(self, mined: Sequence[str]) -> list[int]:
        """The indexes of the lines that answer what the ask compares, best first (none when it compares nothing)."""
        return [] if self.comparison is None else self.comparison.pick_dated(mined)

    def filled(self, rendering: str, tokens: int, limit: int, encoding: str, full_tokens: int) -> tuple[str, int]:
        """A rendering of this log (``tokens`` long) and, in the room left up to ``limit``, an excerpt of the
        log's own lines; the rendering alone when the log is over ``fill_within`` times the limit or the room is
        too small. The caller gives it room no other frame needs: the budget's leftover."""
        config = self.config
        room = limit - tokens - config.fit_frame_slack
        if full_tokens > limit * config.fill_within or room < config.fill_min_tokens:
            return rendering, tokens
        found = self._mine()
        # The lines the rendering quotes already (its examples, its last lines) say nothing new in the excerpt.
        quoted = shown_lines(rendering)
        more = excerpt(
            self.lines,
            found.lines,
            found.records,
            found.heads,
            found.alerts,
            room,
            encoding,
            self.ask,
            config,
            header=FILL_HEADING,
            compared=self._compared(found.lines),
            shown=frozenset(index for index, line in enumerate(self.lines) if line.strip() in quoted),
        )
        if more is None:
            return rendering, tokens
        both = rendering + "\n" + more[0]
        both_tokens = count_tokens(both, encoding)
        return (both, both_tokens) if both_tokens <= limit else (rendering, tokens)


_OPENING_INDENT = re.compile(r"\n*([ \t]+)")


def _dedented(text: str) -> str:
    """``text`` without the leading spaces or tabs that every line that is not blank opens with."""
    # The first line's indentation, read where it is: stripping the text to find it would copy the whole log.
    opening = _OPENING_INDENT.match(text)
    if opening is None:
        return text
    indent = opening.group(1)
    # A line that is not blank and does not open with the indentation: then no indentation is shared.
    if re.search(rf"^(?!{re.escape(indent)})[ \t]*\S", text, re.MULTILINE):
        return text
    return re.sub(rf"^{re.escape(indent)}", "", text, flags=re.MULTILINE)


_GAP = re.compile(r"\n(?:[ \t]*\n)*")


def _single_spaced(text: str, config: LogConfig) -> str:
    """``text`` without the blank line a console's copy put after every line (a CI job's page copied whole): when
    nearly every gap between its lines (``double_spaced_share`` of those in its first ``double_spaced_sample``
    characters) is an odd count of blank lines (one after each line, three where the log had a blank line of its
    own), each gap of ``k`` blank lines becomes ``k // 2``: its records are its lines again, its own blank lines
    stay."""
    gaps = [gap.group().count("\n") - 1 for gap in _GAP.finditer(text, 0, config.double_spaced_sample)]
    odd = sum(gap % 2 for gap in gaps)
    if len(gaps) < config.double_spaced_least_lines or odd < len(gaps) * config.double_spaced_share:
        return text
    return _GAP.sub(lambda gap: "\n" * (1 + (gap.group().count("\n") - 1) // 2), text)


# Heads the log's own lines after its templates (see ``LogDistiller.filled``).
FILL_HEADING = "its lines as received, in order, the least telling elided:"


def _alerts_text(templates: list[Template], kinds_shown: int) -> str:
    """``"12 alerts (9 HTTP 404, 3 error)"``."""
    kinds: dict[str, int] = {}
    for template in templates:
        for kind, count in template.kinds.items():
            kinds[kind] = kinds.get(kind, 0) + count
    return plural(sum(kinds.values()), "alert") + (f" ({kinds_text(kinds, kinds_shown)})" if kinds else "")


def _header(lines: int, records: int, templates: int, alerts: str, valid_from: str | None, valid_to: str | None) -> str:
    window = f" · {valid_from} → {valid_to}" if valid_from else ""
    # A record is a head line and its continuation lines: their count is news only when they are not the lines.
    record_count = f"{plural(records, 'record')} · " if records != lines else ""
    return f"[{thousands(lines)}-line log · {record_count}{plural(templates, 'template')} · {alerts}{window}]"


def _asked(
    lines: Sequence[str], records: Records, ask: AskTerms | None, common_share: float
) -> dict[int, tuple[int, int]]:
    """The records holding the ask's terms (in any of their lines, a term held by more than ``common_share`` of
    the records aside), each with its hits and its weight. Hits:
    each term counts once, a specific one (a number, a code, an identifier, a quoted string) twice, as it names
    one thing. Weight, in thousandths (ties stay exact): the same, each term also by its rarity among the records
    (BM25's idf), so the record naming the rarest of them is the template's example."""
    if not ask:
        return {}
    kind_of = dict(zip(ask.terms, ask.kinds, strict=True))
    named: dict[int, set[str]] = {}
    for number, (start, end) in enumerate(zip(records.start, records.end, strict=True)):
        found = {term for line in lines[start:end] for term in ask.named(line)}
        if found:
            named[number] = found
    holding = Counter(term for found in named.values() for term in found)
    # A term nearly every record holds (the product's name in every logger's) tells none of them apart: no record
    # is asked for it (BM25's idf falls to nothing there).
    common = {term for term, held in holding.items() if held > common_share * len(records.start)}
    if common:
        named = {number: kept for number, found in named.items() if (kept := found - common)}
        holding = Counter(term for found in named.values() for term in found)
    counts = {term: 1 if kind_of.get(term) == "word" else 2 for term in holding}
    weight_of = {term: rarity(held, len(records.start)) * counts[term] for term, held in holding.items()}
    return {
        number: (sum(counts[term] for term in found), round(math.fsum(weight_of[term] for term in found) * 1000))
        for number, found in named.items()
    }


def _tail(lines: Sequence[str], records: Records, heads: list[Shape], config: LogConfig) -> list[str]:
    """Among the log's last non-blank lines (a build's outcome, a test run's summary), each clipped, those of rare
    ordinary records: a repeat of a common template says nothing its template line does not, and an alert record
    is shown with the alert templates."""
    frequency = Counter(f"{shape.masked}\x00{shape.split}" for shape in heads)
    tail: list[str] = []
    seen = 0
    for index in range(len(lines) - 1, -1, -1):
        if seen == config.tail_lines:
            break
        if not lines[index].strip():
            continue
        seen += 1
        head = heads[bisect_right(records.start, index) - 1]
        # An alert record is shown with the alert templates, ahead of these.
        if not head.alert and frequency[f"{head.masked}\x00{head.split}"] <= config.excerpt_rare_records:
            tail.append(clip(lines[index], config.example_chars))
    return tail[::-1]
