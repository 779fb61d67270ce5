"""One distiller protocol for every kind of evidence, and the table from kind to distiller.

A distiller is built from its text, the text's exact token count when it is known (0 until then) and the
paste's ``DistillContext`` (the ask, the encoding, the tier's thrift, the tuning), and answers
``render(target) -> Rendering``: the compact text, its exact token count when the distiller measured it, the
time window it read, the detail a frame's title names and what it kept. ``counted`` hands it the count once
the counting beside the pipeline has it. ``DISTILLERS`` maps each frame kind to its distiller's constructor,
so the pipeline renders every kind the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from envelopes.types import FrameKind
from organs.stomach.core.asked import AskTerms
from organs.stomach.core.budget import rarest_salient
from organs.stomach.core.compare import Comparison
from organs.stomach.core.distill.config import settings_first
from organs.stomach.core.distill.log import LogDistiller
from organs.stomach.core.distill.passages import answering_lines
from organs.stomach.core.distill.table import distill_table
from organs.stomach.core.distill.text import TIMES, headings_of, kept_and_ends, thousands
from organs.stomach.core.distill.trace import distill_trace
from organs.stomach.core.relevance import LineScorer
from organs.stomach.core.shapes.signals import is_alert
from organs.stomach.core.shapes.timestamps import window_of_lines
from organs.stomach.core.tuning import StomachTuning

__all__ = ["DISTILLERS", "DistillContext", "Distiller", "LogRenderer", "Rendering", "alerts_echoed", "distiller_for"]

Window = tuple[str | None, str | None]
_NO_WINDOW: Window = (None, None)


@dataclass(frozen=True, slots=True)
class Rendering:
    """One compact rendering: ``tokens`` is its exact count when the distiller measured it, else ``None``."""

    text: str
    tokens: int | None
    window: Window
    # What a frame's title names besides its kind (a table's size, a trace's exception), or None.
    detail: str | None
    # What the rendering kept, and why: for people reading the pipeline, never served.
    kept: str


@dataclass(frozen=True, slots=True)
class DistillContext:
    """What every distiller of one paste is built with besides its text."""

    ask: AskTerms
    encoding: str
    # The shallow and deferred tiers render cheaply: no template mining, no column types.
    cheap: bool
    tuning: StomachTuning
    # What the ask compares ("the slowest request"), if anything: a log's excerpt keeps the lines answering it.
    comparison: Comparison | None = None
    # What the paste's other blocks say went wrong (``alerts_echoed``): a dump's threads that name it come first.
    echo: AskTerms | None = None


def _at_own_rate(tuning: StomachTuning, text: str, full_tokens: int) -> StomachTuning:
    """The tuning with ``text``'s own characters per token when its count is known and denser than the estimate:
    a table of numbers or a dump of hex spends a token on a character or two, and planned at the usual rate a
    rendering would take in nearly every line and outgrow the text."""
    if full_tokens and len(text) < full_tokens * tuning.chars_per_token:
        return replace(tuning, chars_per_token=len(text) / full_tokens)
    return tuning


def alerts_echoed(pieces: Sequence[tuple[FrameKind, str]], tuning: StomachTuning) -> AskTerms | None:
    """The terms of the alert lines of a paste's blocks that are not traces, read from each block's first and
    last ``echo_scan_chars``, when the paste holds a trace beside them; else None."""
    if not any(kind == "stack_trace" for kind, _ in pieces) or len(pieces) < 2:
        return None
    alerts: dict[str, None] = {}
    scan = tuning.echo_scan_chars
    for kind, text in pieces:
        if kind == "stack_trace":
            continue
        # Only the ends are read, and only they are split: a block of many megabytes is not copied line by line.
        ends = [text] if len(text) <= 2 * scan else [text[:scan], text[-scan:]]
        for line in (line for end in ends for line in end.split("\n")):
            if len(alerts) >= tuning.echo_alert_lines:
                break
            if is_alert(line):
                alerts.setdefault(line.strip())
    return AskTerms.echoed(list(alerts), tuning.ask, tuning.echo_terms) if alerts else None


class Distiller(Protocol):
    def render(self, target: int) -> Rendering: ...

    def counted(self, full_tokens: int) -> Distiller: ...


@dataclass(frozen=True, slots=True)
class HeadTailRenderer:
    """Code and notes: kept whole when their exact count fits the target; else a config's settings first
    (``config.settings_first``), or with an ask its opening and the lines that answer it (``passages``), or head
    and tail with the lines that hold an alert level between them."""

    text: str
    full_tokens: int
    context: DistillContext
    # Each line's score against the ask and its heading, read once however many times the text is rendered (and
    # kept by ``counted``, which copies the memo).
    read_memo: list[tuple[list[float], list[int]]] = field(default_factory=list, compare=False, repr=False)

    def _read(self, tuning: StomachTuning) -> tuple[list[float], list[int]]:
        if not self.read_memo:
            # The text its own corpus: the ask's terms weigh by their rarity in it.
            scorer = replace(
                LineScorer.of("", [self.text], tuning.relevance, ask=self.context.ask),
                comparison=self.context.comparison,
            )
            lines = self.text.split("\n")
            self.read_memo.append((scorer.scores(lines, wide=True), headings_of(lines)))
        return self.read_memo[0]

    def render(self, target: int) -> Rendering:
        # Head and tail only ever cut; a text whose exact count fits its target is kept whole.
        if 0 < self.full_tokens <= target:
            return Rendering(self.text, None, _NO_WINDOW, None, "whole: its count fits the target")
        why = "with an alert level or the ask's terms"
        tuning = _at_own_rate(self.context.tuning, self.text, self.full_tokens)
        keep = rarest_salient(self.text, self.context.ask, tuning.kept_common_share)
        kept = settings_first(self.text, target, keep, tuning, why=why)
        if kept is None and self.context.ask:
            kept = answering_lines(self.text, target, *self._read(tuning), tuning)
            return Rendering(kept, None, _NO_WINDOW, None, "its first lines, and the lines that answer the ask")
        if kept is None:
            kept = kept_and_ends(self.text, target, keep, tuning, why=why)
        return Rendering(kept, None, _NO_WINDOW, None, f"its first and last lines, and lines {why}")

    def counted(self, full_tokens: int) -> Distiller:
        return replace(self, full_tokens=full_tokens)


@dataclass(frozen=True, slots=True)
class TraceRenderer:
    """A stack trace: its cause chain and the frames that matter; its window read from both of its ends."""

    text: str
    context: DistillContext

    def render(self, target: int) -> Rendering:
        trace = distill_trace(self.text, target, self.context.tuning, self.context.ask, self.context.echo)
        # Both ends are read, so the stamps bound the whole trace, not its first lines.
        window = window_of_lines(self.text.split("\n"), self.context.tuning.window_edge_lines)
        return Rendering(trace.rendering, None, window, trace.exception, "every section's header and its end frames")

    def counted(self, full_tokens: int) -> Distiller:
        return self


@dataclass(frozen=True, slots=True)
class TableRenderer:
    """A table: its profile and the rows that matter (the ask's, alerts, extremes, head and tail)."""

    text: str
    context: DistillContext
    full_tokens: int = 0

    def render(self, target: int) -> Rendering:
        context = self.context
        compared = context.comparison
        tuning = _at_own_rate(context.tuning, self.text, self.full_tokens)
        table = distill_table(
            self.text,
            infer_types=not context.cheap,
            ask=context.ask,
            target_tokens=target,
            tuning=tuning,
            comparison=compared,
        )
        detail = f"{thousands(table.rows)} rows {TIMES} {thousands(table.columns)} columns"
        return Rendering(table.rendering, None, _NO_WINDOW, detail, "its profile and the rows that matter")

    def counted(self, full_tokens: int) -> Distiller:
        return replace(self, full_tokens=full_tokens)


class LogRenderer:
    """A log through its ``LogDistiller``, which mines it at most once for every target it is rendered at."""

    def __init__(self, text: str, context: DistillContext) -> None:
        self.distiller = LogDistiller(text, context.ask, context.tuning, context.comparison)
        self.context = context

    def render(self, target: int) -> Rendering:
        digest = self.distiller.render(target, self.context.encoding, mine=not self.context.cheap)
        kept = f"{digest.templates} templates, {digest.alerts} alerts"
        return Rendering(digest.rendering, digest.tokens, (digest.valid_from, digest.valid_to), None, kept)

    def counted(self, full_tokens: int) -> Distiller:
        # It counts its own text when a target could hold it, and keeps that count.
        return self


DISTILLERS: Mapping[FrameKind, Callable[[str, int, DistillContext], Distiller]] = {
    "log": lambda text, _, context: LogRenderer(text, context),
    "stack_trace": lambda text, _, context: TraceRenderer(text, context),
    "table": lambda text, full_tokens, context: TableRenderer(text, context, full_tokens),
    "code": HeadTailRenderer,
    "note": HeadTailRenderer,
}


def distiller_for(kind: FrameKind, text: str, full_tokens: int, context: DistillContext) -> Distiller:
    """The distiller of one piece of evidence of ``kind``."""
    return DISTILLERS[kind](text, full_tokens, context)
