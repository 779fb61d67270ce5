"""``ingest_paste``: a user's paste, decomposed into the goal, anchors and budgeted evidence frames.

The pipeline is normalize → split → classify (``organs.stomach.classify``) →
resolve the intent → distill each distinct evidence segment → fit the token budget.

* Segments and goal: ``organs.stomach.segments``. Blocks are cut from the
  paste's normal form and placed back in the received text, so every span
  locates received characters. A segment's full text is the received segment
  (its digest is the frame id; fetching it in full returns it); what the model
  is served, whole or compact, and what titles and windows are read from, is its
  normal form (``segment_texts``). With ``intent`` given, the goal is exactly
  ``intent``; without it, the user's own words (``organs.stomach.intent``), each
  piece as the terminal shows it. The goal is a field of the query, never a
  frame, so no budget can cut it.
* Anchors. Path references, in order, without repeats; they cost no tokens.
* Frames. One per distinct evidence segment (``id`` = blake3 of its text); a
  repeat reports ``duplicate`` and points at the first.
* Budget. Served frames together fit ``budget_tokens``: shared out before
  rendering by value, a segment that fits its share served full, an overrun
  absorbed lowest value first, frames that cannot be served becoming zero-cost
  references, still fetchable through the provider (``organs.stomach.budget``).
  Notes and code that do not fit keep their alert lines and the lines holding
  the ask's terms between their head and tail.
* Tiers: see ``organs.stomach.tiers``. Deferred frames carry no time window
  because nothing of them was read beyond the classifier's sample.

Every distinct segment is counted in full exactly once. For a paste of 64 KiB or
more that starts beside this thread, in a counting process on the other CPU
(``organs.counting.beside``), as soon as the paste is cut into blocks, while this
thread classifies and distills; it collects the counts once it needs them. A
smaller paste is counted inline: handing it over costs more than the overlap gives;
so is a deferred one, of which nothing is rendered for the counting to overlap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from envelopes.types import DegradationTier, Frame, FrameKind, SegmentKind, SegmentReport
from organs.accounting import (
    DEFAULT_ENCODING,
    THREADED_COUNT_CHARS,
    SharedCount,
    count_tokens,
    count_tokens_exact,
    count_tokens_many,
    digest_text,
)
from organs.fitting import fit_tokens
from organs.stomach.asked import AskTerms
from organs.stomach.budget import (
    TARGETED_KINDS,
    allocate,
    best_representation,
    fit_budget,
    salient,
    served_tokens,
    shorter_compact,
    weigh,
)
from organs.stomach.distill.log import CONFIG as LOG_CONFIG
from organs.stomach.distill.log import LogDistiller
from organs.stomach.distill.table import distill_table
from organs.stomach.distill.text import TIMES, kept_and_ends, plural, thousands
from organs.stomach.distill.trace import distill_trace
from organs.stomach.redact import PasteRedaction, describe, redact_paste
from organs.stomach.rungs import Classification
from organs.stomach.segments import Plan, Segment, cut_blocks, plan_blocks, segment_texts
from organs.stomach.text_views import HandedText, digest_in_pieces, utf8_size
from organs.stomach.tiers import choose_tier
from organs.stomach.timestamps import leading_stamp, window_of

__all__ = ["ContextQuery", "IngestBundle", "IngestConfig", "IngestProvider", "ingest_paste"]

_FRAME_KIND: dict[SegmentKind, FrameKind] = {
    "code": "code",
    "stack_trace": "stack_trace",
    "log": "log",
    "table": "table",
    "prose": "note",
}
# What a deferred frame's compact rendering aims at when someone asks for it later.
_LAZY_TARGET_TOKENS = 1024
_RERENDER_ATTEMPTS = 2
_RERENDER_MARGIN = 0.95
# Head-and-tail renderings grow with their target; one served under this share of its share is rendered again.
_GROWING_KINDS: frozenset[FrameKind] = frozenset({"code", "note"})
_UNDERSHOOT = 0.8


@dataclass(frozen=True, slots=True)
class IngestConfig:
    """Knobs for ``ingest_paste``; ``backlog`` is supplied by the worker (pending messages)."""

    encoding: str = DEFAULT_ENCODING
    budget_tokens: int = 4096
    # Full-tier ingest runs near tokenizer speed (about 4 MB/s), so 1 MiB keeps a full digest well under a second.
    shallow_chars: int = 1024 * 1024
    deferred_chars: int = 8 * 1024 * 1024
    backlog: int = 0
    shallow_backlog: int = 1
    deferred_backlog: int = 64
    token_threads: int = 2
    # More blank-line blocks than this and the last one holds the rest whole: a paste of
    # countless tiny blocks would otherwise cost a report, a classification and memory each.
    max_blocks: int = 2048
    # Personal-data categories to pseudonymise (``ICHOR_REDACT``); credentials are always redacted.
    redact_personal: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class ContextQuery:
    goal: str
    anchors: tuple[str, ...]
    budget_tokens: int


@dataclass(slots=True)
class _Evidence:
    """One distinct evidence segment: ``text`` is what is served whole (the normal form), ``received`` the full text."""

    frame_id: str
    kind: FrameKind
    text: str
    span: tuple[int, int]
    index: int
    received: str = ""
    received_tokens: int = 0
    value: int = 0
    title: str = ""
    full_tokens: int = 0
    valid_from: str | None = None
    valid_to: str | None = None
    compact: str | None = None
    compact_tokens: int = 0
    target: int = 0
    share: int = 0
    claim: int = 0
    # A log's distiller, kept so that rendering it again at another target does not mine it again.
    distiller: LogDistiller | None = None


class IngestProvider:
    """A local provider of one paste's evidence: what was served, and everything on request."""

    def __init__(
        self,
        frames: tuple[Frame, ...],
        evidence: dict[str, _Evidence],
        encoding: str,
        tier: DegradationTier,
        render_later: Callable[[_Evidence], None],
    ) -> None:
        self._frames = frames
        self._evidence = evidence
        self._encoding = encoding
        self._tier = tier
        self._render_later = render_later

    @property
    def frames(self) -> tuple[Frame, ...]:
        """The frames served under the budget, in paste order."""
        return self._frames

    def full_text(self, frame_id: str) -> str:
        return self._evidence[frame_id].received

    def span(self, frame_id: str) -> tuple[int, int]:
        return self._evidence[frame_id].span

    def serve(self, frame_id: str, representation: Literal["compact", "full"] = "compact") -> Frame:
        """The frame in the asked representation; ``compact`` falls back to verbatim when that is smaller."""
        evidence = self._evidence[frame_id]
        if representation == "full":
            return _build_frame(evidence, "full", self._encoding, self._tier, retrieved=True)
        if evidence.compact is None:
            self._render_later(evidence)
        return _build_frame(evidence, best_representation(evidence), self._encoding, self._tier)


@dataclass(frozen=True, slots=True)
class IngestBundle:
    query: ContextQuery
    provider: IngestProvider
    report: tuple[SegmentReport, ...]
    tier: DegradationTier
    tier_reason: str
    encoding: str
    source_digest: str
    redaction: PasteRedaction


def _build_frame(
    evidence: _Evidence,
    representation: Literal["compact", "full", "reference"],
    encoding: str,
    tier: DegradationTier,
    *,
    retrieved: bool = False,
) -> Frame:
    """The frame as served; ``retrieved`` asks for the received full text itself, which hashes to the id."""
    content: str | None
    if representation == "reference":
        content, cost = None, 0
    elif representation == "compact" and evidence.compact is not None:
        content, cost = evidence.compact, evidence.compact_tokens
    elif retrieved:
        content, cost = evidence.received, evidence.received_tokens
    else:
        content, cost = evidence.text, evidence.full_tokens
    return Frame(
        id=evidence.frame_id,
        kind=evidence.kind,
        representation=representation,
        content=content,
        content_digest=None
        if content is None
        else (evidence.frame_id if content is evidence.received else digest_text(content)),
        token_cost=cost,
        full_bytes=utf8_size(evidence.received),
        full_tokens=evidence.received_tokens,
        encoding=encoding,
        span=evidence.span,
        lines=evidence.received.count("\n") + 1,
        title=evidence.title,
        tier=tier,
        valid_from=evidence.valid_from,
        valid_to=evidence.valid_to,
        normal_form=content is not None and not retrieved and evidence.text is not evidence.received,
    )


def _title(evidence: _Evidence, detail: str | None) -> str:
    lines = evidence.text.count("\n") + 1
    if evidence.kind == "table" and detail:
        return f"table · {detail}"
    if evidence.kind == "stack_trace" and detail:
        return f"stack_trace · {detail[:80]}"
    return f"{evidence.kind} · {plural(lines, 'line')}"


def _counted(texts: list[str], counts: list[int]) -> dict[str, int]:
    return dict(zip(texts, counts, strict=True))


def _set_full_tokens(items: list[_Evidence], tokens: dict[str, int]) -> None:
    for item in items:
        item.full_tokens = tokens[item.text]
        item.received_tokens = tokens[item.received]


def _render(evidence: _Evidence, encoding: str, tier: DegradationTier, ask: AskTerms) -> None:
    """Set the compact rendering, the title detail and the time window; -1 tokens means not yet measured."""
    detail: str | None = None
    evidence.compact_tokens = -1
    cheap = tier != "full"
    if evidence.kind == "log":
        if evidence.distiller is None:
            evidence.distiller = LogDistiller(evidence.text, ask)
        digest = evidence.distiller.render(evidence.target, encoding, mine=not cheap)
        evidence.compact = digest.rendering
        evidence.compact_tokens = -1 if digest.tokens is None else digest.tokens
        evidence.valid_from, evidence.valid_to = digest.valid_from, digest.valid_to
    elif evidence.kind == "stack_trace":
        trace = distill_trace(evidence.text, evidence.target)
        evidence.compact, detail = trace.rendering, trace.exception
        # Both ends are read, so the stamps bound the whole trace, not its first two thousand lines.
        lines = evidence.text.split("\n")
        ends = lines if len(lines) <= 2000 else lines[:1000] + lines[-1000:]
        stamps = [line[: stamp.end] for line in ends if (stamp := leading_stamp(line))]
        evidence.valid_from, evidence.valid_to = window_of(stamps)
    elif evidence.kind == "table":
        table = distill_table(evidence.text, infer_types=not cheap, ask=ask, target_tokens=evidence.target)
        evidence.compact = table.rendering
        detail = f"{thousands(table.rows)} rows {TIMES} {thousands(table.columns)} columns"
    else:
        # Head and tail only ever cut; a text whose exact count fits its target is kept whole.
        fits = 0 < evidence.full_tokens <= evidence.target
        why = "with an alert level or the ask's terms"
        evidence.compact = (
            evidence.text if fits else kept_and_ends(evidence.text, evidence.target, salient(ask), why=why)
        )
    evidence.title = _title(evidence, detail)


def _measure(items: list[_Evidence], encoding: str, threads: int) -> None:
    """Exact token counts of the renderings that the distiller has not already measured exactly."""
    unmeasured = [item for item in items if item.compact_tokens < 0]
    counts = count_tokens_many([item.compact or "" for item in unmeasured], encoding, threads) if unmeasured else []
    for item, compact_tokens in zip(unmeasured, counts, strict=True):
        item.compact_tokens = compact_tokens


def ingest_paste(
    text: str | HandedText, config: IngestConfig | None = None, *, intent: str | None = None
) -> IngestBundle:
    """Digest one paste: the goal verbatim, path anchors, budgeted evidence frames and a report per segment.

    A paste handed over (``HandedText``) is let go once its segments are cut and redacted, before anything is
    rendered; its bundle's ``redaction.text`` is then empty unless a secret was redacted.
    """
    handed = isinstance(text, HandedText)
    if isinstance(text, HandedText):
        text = text.take()
    config = config or IngestConfig()
    encoding = config.encoding
    tier, tier_reason = choose_tier(
        len(text),
        budget_tokens=config.budget_tokens,
        backlog=config.backlog,
        shallow_chars=config.shallow_chars,
        deferred_chars=config.deferred_chars,
        shallow_backlog=config.shallow_backlog,
        deferred_backlog=config.deferred_backlog,
    )
    # Blocks are cut from the normal form and placed back in the received text, where every span is.
    blocks = cut_blocks(text, config.max_blocks)
    # A large paste's blocks are counted beside this thread from here on, while they are classified and rendered:
    # nearly always they are its segments (the goal, anchors and evidence), received and served.
    full_counts = None
    # Each block's text is sliced once, and counted, classified and redacted as that one copy.
    block_texts = {(block.start, block.end): text[block.start : block.end] for block in blocks}
    # A deferred paste is only counted, so nothing would overlap the counting, and handing it over would copy it.
    if len(text) >= THREADED_COUNT_CHARS and tier != "deferred":
        full_counts = SharedCount(list(dict.fromkeys(block_texts.values())), encoding)
    plan = plan_blocks(text, blocks, intent, config.max_blocks, block_texts)
    del block_texts
    # Secrets go before anything is counted or rendered; a goal is never rewritten, so it is counted as received.
    redaction = redact_paste(
        text,
        [segment.block for segment in plan.segments],
        config.redact_personal,
        {(segment.block.start, segment.block.end): segment.text for segment in plan.segments},
    )
    if redaction.changed:
        _apply_redaction(plan, redaction)
    source_digest = digest_in_pieces(text)
    if handed:
        # Held here alone: a paste that differs from its one block by a trailing newline is otherwise held twice
        # while the block is rendered.
        if not redaction.changed:
            redaction = replace(redaction, text="")
        del text
    # Every distinct segment is counted in full, received and served (frames, the goal, anchors); what the
    # blocks did not hold (a redacted text, a normal form, a block cut around glued lines) is added.
    counted_texts = list(
        dict.fromkeys(
            (*(piece for segment in plan.segments for piece in (segment.text, segment.served)), *redaction.received)
        )
    )
    if full_counts is not None:
        full_counts.add(counted_texts)
    # Counted first when small, so the budget is shared out by exact sizes rather than estimates.
    segment_tokens = None
    if full_counts is None:
        segment_tokens = _counted(counted_texts, count_tokens_exact(counted_texts, encoding, 1))
    evidence: dict[str, _Evidence] = {}
    for segment in plan.segments:
        if segment.outcome != "frame":
            continue
        frame_id = digest_in_pieces(segment.text)
        segment.frame_id = frame_id
        if frame_id in evidence:
            segment.outcome = "duplicate"
            continue
        kind = _FRAME_KIND[segment.classification.kind]
        evidence[frame_id] = _Evidence(
            frame_id,
            kind,
            segment.served,
            (segment.block.start, segment.block.end),
            len(evidence),
            received=segment.text,
        )
    items = list(evidence.values())
    if segment_tokens is not None:
        _set_full_tokens(items, segment_tokens)
    ask = AskTerms.of("\n\n".join(plan.goal_pieces))
    if tier != "deferred":
        weigh(items, ask)
        allocate(items, config.budget_tokens, exact=segment_tokens is not None)
        for item in items:
            _render(item, encoding, tier, ask)
    else:
        for item in items:
            item.title = _title(item, None)
    if segment_tokens is None:
        assert full_counts is not None
        segment_tokens = full_counts.counts()
        _set_full_tokens(items, segment_tokens)
    rendered = [item for item in items if shorter_compact(item)]
    _measure(rendered, encoding, config.token_threads)

    def refit(item: _Evidence, limit: int, start: int | None = None) -> bool:
        """Render ``item`` again within ``limit`` tokens; False (and the rendering unchanged) when none fits."""
        before = item.compact, item.compact_tokens, item.target

        def render(target: int) -> int:
            item.target = target
            _render(item, encoding, tier, ask)
            if item.compact_tokens < 0:
                # A rendering grown back into the whole text is not counted again: each text once.
                same = item.compact == item.text and item.full_tokens > 0
                item.compact_tokens = item.full_tokens if same else count_tokens(item.compact or "", encoding)
            return item.compact_tokens

        # The first rendering within the limit ends the search, so it is the one the item now holds.
        fitted = fit_tokens(render, lambda tokens: tokens, limit, start=start, rounds=_RERENDER_ATTEMPTS)
        if fitted is None or not shorter_compact(item):
            item.compact, item.compact_tokens, item.target = before
            return False
        return True

    for item in rendered:
        if item.kind not in TARGETED_KINDS or item.full_tokens <= item.share:
            # A full text that fits its share is served whole: its rendering needs no fitting.
            continue
        if item.compact_tokens > item.target:
            # Renderings planned by a characters-per-token estimate can overshoot; ask again, scaled down.
            refit(item, item.share, max(int(item.target * item.share / item.compact_tokens * _RERENDER_MARGIN), 1))
        elif item.kind in _GROWING_KINDS and item.compact_tokens < item.share * _UNDERSHOOT:
            # Or undershoot, leaving a share unused: ask again, scaled up; kept only if it fits and shows more.
            shown = item.compact, item.compact_tokens, item.target
            grown = int(item.target * item.share / max(item.compact_tokens, 1) * _RERENDER_MARGIN)
            if not refit(item, item.share, grown) or item.compact_tokens <= shown[1]:
                item.compact, item.compact_tokens, item.target = shown
    if tier == "deferred":
        chosen: dict[str, Literal["compact", "full", "reference"]] = dict.fromkeys(evidence, "reference")
    else:
        chosen = fit_budget(items, config.budget_tokens, refit)
        _fill_logs(items, chosen, config.budget_tokens, encoding)
    frames = tuple(_build_frame(item, chosen[item.frame_id], encoding, tier) for item in items)
    served = {frame.id: frame for frame in frames}
    report = tuple(_report(index, segment, served, segment_tokens) for index, segment in enumerate(plan.segments))

    def render_later(item: _Evidence) -> None:
        item.target = max(config.budget_tokens, _LAZY_TARGET_TOKENS)
        _render(item, encoding, "shallow", ask)
        if shorter_compact(item) and item.compact_tokens < 0:
            item.compact_tokens = count_tokens(item.compact or "", encoding)

    provider = IngestProvider(frames, evidence, encoding, tier, render_later)
    query = ContextQuery(
        goal="\n\n".join(plan.goal_pieces), anchors=tuple(plan.anchors), budget_tokens=config.budget_tokens
    )
    return IngestBundle(query, provider, report, tier, tier_reason, encoding, source_digest, redaction)


def _fill_logs(
    items: list[_Evidence], chosen: dict[str, Literal["compact", "full", "reference"]], budget: int, encoding: str
) -> None:
    """What the budget has left goes to the logs served compact, the most valued first: after its templates, a
    log shows as many of its own lines as fit (``LogDistiller.filled``). Only the leftover: every frame's share
    was settled first, so no frame gives way to a fuller log."""
    spare = budget - sum(served_tokens(item, chosen[item.frame_id]) for item in items)
    for item in sorted(items, key=lambda item: (-item.value, item.index)):
        if spare < LOG_CONFIG.fill_min_tokens:
            return
        if item.kind != "log" or chosen[item.frame_id] != "compact" or item.distiller is None:
            continue
        if item.compact_tokens < 0 or item.full_tokens <= 0:
            continue
        before = item.compact_tokens
        item.compact, item.compact_tokens = item.distiller.filled(
            item.compact or "", before, before + spare, encoding, item.full_tokens
        )
        spare -= item.compact_tokens - before


def _apply_redaction(plan: Plan, redaction: PasteRedaction) -> None:
    """Every segment but the goal takes its redacted text; the report says what was replaced."""
    credentials = set()
    for segment, redacted, found in zip(plan.segments, redaction.texts, redaction.found, strict=True):
        if segment.outcome == "goal" or not found:
            continue
        full, served = segment_texts(redacted)
        if segment.outcome == "anchor":
            # A credential is never an anchor (a bare key can look like a path): it is a note, redacted.
            credentials.add(segment.served.strip())
            segment.outcome = "frame"
            segment.classification = Classification("prose", "held a credential, so not a path reference")
        segment.text, segment.served, segment.redacted = full, served, found
        segment.note += describe(found)
    plan.anchors = [anchor for anchor in plan.anchors if anchor not in credentials]


def _report(index: int, segment: Segment, served: dict[str, Frame], tokens: dict[str, int]) -> SegmentReport:
    span = (segment.block.start, segment.block.end)
    reason = segment.classification.reason + segment.note
    frame_id = None
    if segment.outcome in ("frame", "duplicate") and segment.frame_id is not None:
        frame = served[segment.frame_id]
        frame_id, before = segment.frame_id, frame.full_tokens
        if segment.outcome == "duplicate":
            reason += "; identical to an earlier segment"
            after = 0
        else:
            reason += f"; served {frame.representation}"
            after = frame.token_cost
    else:
        before = tokens.get(segment.text, 0)
        after = tokens.get(segment.served, before) if segment.outcome == "goal" else 0
    return SegmentReport(
        index=index,
        kind=segment.classification.kind,
        span=span,
        outcome=segment.outcome,
        reason=reason,
        frame_id=frame_id,
        tokens_before=before,
        tokens_after=after,
        redacted=segment.redacted,
    )
