"""``ingest_paste``: a user's paste, decomposed into the goal, anchors and budgeted evidence frames.

The pipeline is split → classify (``organs.stomach.classify``) → resolve the
intent → distill each distinct evidence segment → fit the token budget.

* Goal. With ``intent`` given, the goal is exactly ``intent``; a block equal to
  it is the goal segment and every other prose block becomes a note. Without it,
  the prose that reads as an ask (a question or an imperative) is the goal,
  several pieces joined verbatim in order with a blank line; when no prose reads
  as an ask, the last prose block is the goal; with no prose at all the goal is
  the empty string. The goal is a field of the query, never a frame, so no
  budget can cut it.
* Anchors. Path references, in order, without repeats; they cost no tokens.
* Frames. One per distinct evidence segment (``id`` = blake3 of its text); a
  repeat reports ``duplicate`` and points at the first. A compact rendering is
  served only when it has fewer tokens than the full text.
* Budget. Served frames together fit ``budget_tokens``. The budget is shared
  out before rendering (small segments first, each taking at most an equal share
  of what is left), and if the renderings still overrun, the lowest-value frames
  become zero-cost references, still fetchable through the provider. Value runs
  stack traces > logs with warn/error lines > logs > tables and code > notes;
  among equals the later segment yields first.
* Tiers: see ``organs.stomach.tiers``. Deferred frames carry no time window
  because nothing of them was read beyond the classifier's sample.

Every distinct segment is counted in full exactly once. For a paste of 64 KiB or
more that starts on a side thread (``organs.accounting.SharedCount``) from the
moment the paste is split, while this thread classifies and distills, and this
thread takes the rest of it once it needs the counts; long segments are cut at
boundaries where counts provably add up (``organs.accounting.additive_chunks``),
so both threads stay busy even for a single log. A smaller paste is counted
inline: handing it to a thread costs more than the overlap gives.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from envelopes.types import DegradationTier, Frame, FrameKind, SegmentKind, SegmentOutcome, SegmentReport
from organs.accounting import (
    DEFAULT_ENCODING,
    THREADED_COUNT_CHARS,
    SharedCount,
    count_tokens,
    count_tokens_exact,
    count_tokens_many,
    digest_text,
)
from organs.stomach.classify import Classification, classify
from organs.stomach.distill.log import distill_log
from organs.stomach.distill.table import distill_table
from organs.stomach.distill.text import CHARS_PER_TOKEN, TIMES, head_tail, plural, thousands
from organs.stomach.distill.trace import distill_trace
from organs.stomach.intent import reads_as_ask
from organs.stomach.split import Block, split_blocks
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
_VALUE: dict[FrameKind, int] = {"stack_trace": 5, "log": 3, "table": 2, "code": 2, "note": 1}
_ALERT_LOG_VALUE = 4
# What a deferred frame's compact rendering aims at when someone asks for it later.
_LAZY_TARGET_TOKENS = 1024
_RERENDER_ATTEMPTS = 2
# The kinds whose rendering follows its target; a table or trace rendered again comes out the same.
_TARGETED_KINDS: frozenset[FrameKind] = frozenset({"log", "code", "note"})


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


@dataclass(frozen=True, slots=True)
class ContextQuery:
    goal: str
    anchors: tuple[str, ...]
    budget_tokens: int


@dataclass(slots=True)
class _Evidence:
    frame_id: str
    kind: FrameKind
    text: str
    span: tuple[int, int]
    index: int
    value: int = 0
    title: str = ""
    full_tokens: int = 0
    valid_from: str | None = None
    valid_to: str | None = None
    compact: str | None = None
    compact_tokens: int = 0
    target: int = 0


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
        return self._evidence[frame_id].text

    def span(self, frame_id: str) -> tuple[int, int]:
        return self._evidence[frame_id].span

    def serve(self, frame_id: str, representation: Literal["compact", "full"] = "compact") -> Frame:
        """The frame in the asked representation; ``compact`` falls back to verbatim when that is smaller."""
        evidence = self._evidence[frame_id]
        if representation == "full":
            return _build_frame(evidence, "full", self._encoding, self._tier)
        if evidence.compact is None:
            self._render_later(evidence)
        return _build_frame(evidence, _best_representation(evidence), self._encoding, self._tier)


@dataclass(frozen=True, slots=True)
class IngestBundle:
    query: ContextQuery
    provider: IngestProvider
    report: tuple[SegmentReport, ...]
    tier: DegradationTier
    tier_reason: str
    encoding: str
    source_digest: str


def _shorter_compact(evidence: _Evidence) -> bool:
    """Whether the compact rendering has fewer characters than the full text: only then is it worth counting."""
    return evidence.compact is not None and len(evidence.compact) < len(evidence.text)


def _best_representation(evidence: _Evidence) -> Literal["compact", "full"]:
    """Compact when it is smaller than the full text in characters and in tokens, else full."""
    if _shorter_compact(evidence) and evidence.compact_tokens < evidence.full_tokens:
        return "compact"
    return "full"


def _build_frame(
    evidence: _Evidence,
    representation: Literal["compact", "full", "reference"],
    encoding: str,
    tier: DegradationTier,
) -> Frame:
    content: str | None
    if representation == "reference":
        content, cost = None, 0
    elif representation == "compact" and evidence.compact is not None:
        content, cost = evidence.compact, evidence.compact_tokens
    else:
        content, cost = evidence.text, evidence.full_tokens
    return Frame(
        id=evidence.frame_id,
        kind=evidence.kind,
        representation=representation,
        content=content,
        content_digest=None
        if content is None
        else (evidence.frame_id if content is evidence.text else digest_text(content)),
        token_cost=cost,
        full_bytes=len(evidence.text.encode("utf-8", "surrogatepass")),
        full_tokens=evidence.full_tokens,
        encoding=encoding,
        span=evidence.span,
        lines=evidence.text.count("\n") + 1,
        title=evidence.title,
        tier=tier,
        valid_from=evidence.valid_from,
        valid_to=evidence.valid_to,
    )


@dataclass(slots=True)
class _Segment:
    block: Block
    text: str
    classification: Classification
    outcome: SegmentOutcome = "frame"
    frame_id: str | None = None
    note: str = ""


@dataclass(slots=True)
class _Plan:
    segments: list[_Segment]
    goal_pieces: list[str] = field(default_factory=list)
    anchors: list[str] = field(default_factory=list)


def _resolve(text: str, blocks: list[Block], intent: str | None, max_blocks: int) -> _Plan:
    segments = []
    for block in blocks:
        segment_text = text[block.start : block.end]
        segments.append(_Segment(block, segment_text, classify(segment_text, fenced=block.fenced)))
    if blocks and blocks[-1].remainder:
        segments[-1].note = f"; the last of max_blocks {max_blocks} blocks: it holds the rest of the paste whole"
    plan = _Plan(segments)
    for segment in segments:
        if segment.classification.kind == "path_ref":
            segment.outcome = "anchor"
            token = segment.text.strip()
            if token not in plan.anchors:
                plan.anchors.append(token)
    prose = [segment for segment in segments if segment.classification.kind == "prose"]
    if intent is not None:
        plan.goal_pieces = [intent]
        stated = next(
            (segment for segment in segments if segment.text.strip() == intent.strip() and intent.strip()), None
        )
        if stated is not None:
            stated.outcome = "goal"
            stated.note += "; the stated intent"
        return plan
    asks = [segment for segment in prose if reads_as_ask(segment.text)]
    if asks:
        for segment in asks:
            segment.note += "; reads as the ask"
    elif prose:
        asks = [prose[-1]]
        asks[0].note += "; no prose reads as an ask, so the last prose block is the goal"
    for segment in asks:
        segment.outcome = "goal"
        plan.goal_pieces.append(segment.text)
    return plan


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


def _allocate(evidence: list[_Evidence], budget: int, *, exact: bool) -> None:
    """Share the budget out: smallest segments first, none above an equal share of what is left.

    A segment's size is its exact full count when ``exact``, else an estimate from its characters.
    """

    def size(item: _Evidence) -> int:
        return item.full_tokens if exact else int(len(item.text) / CHARS_PER_TOKEN) + 1

    remaining = budget
    ordered = sorted(evidence, key=lambda item: (size(item), item.index))
    for position, item in enumerate(ordered):
        share = remaining // (len(ordered) - position)
        item.target = max(min(size(item), share), 1)
        remaining -= item.target


def _render(evidence: _Evidence, encoding: str, tier: DegradationTier) -> None:
    """Set the compact rendering, the title detail and the time window; -1 tokens means not yet measured."""
    detail: str | None = None
    evidence.compact_tokens = -1
    cheap = tier != "full"
    if evidence.kind == "log":
        digest = distill_log(evidence.text, evidence.target, encoding, mine=not cheap)
        evidence.compact = digest.rendering
        evidence.compact_tokens = -1 if digest.tokens is None else digest.tokens
        evidence.valid_from, evidence.valid_to = digest.valid_from, digest.valid_to
        if digest.alerts:
            evidence.value = _ALERT_LOG_VALUE
    elif evidence.kind == "stack_trace":
        trace = distill_trace(evidence.text)
        evidence.compact, detail = trace.rendering, trace.exception
        stamps = [line[: stamp.end] for line in evidence.text.split("\n")[:2000] if (stamp := leading_stamp(line))]
        evidence.valid_from, evidence.valid_to = window_of(stamps)
    elif evidence.kind == "table":
        table = distill_table(evidence.text, infer_types=not cheap)
        evidence.compact = table.rendering
        detail = f"{thousands(table.rows)} rows {TIMES} {thousands(table.columns)} columns"
    else:
        # Head and tail only ever cut; a text whose exact count fits its target is kept whole.
        fits = 0 < evidence.full_tokens <= evidence.target
        evidence.compact = evidence.text if fits else head_tail(evidence.text, evidence.target)
    evidence.title = _title(evidence, detail)


def _measure(items: list[_Evidence], encoding: str, threads: int) -> None:
    """Exact token counts of the renderings that the distiller has not already measured exactly."""
    unmeasured = [item for item in items if item.compact_tokens < 0]
    counts = count_tokens_many([item.compact or "" for item in unmeasured], encoding, threads) if unmeasured else []
    for item, compact_tokens in zip(unmeasured, counts, strict=True):
        item.compact_tokens = compact_tokens


def _fit_budget(evidence: list[_Evidence], budget: int) -> set[str]:
    """The ids that must fall back to references so the served total fits the budget."""
    served = {
        item.frame_id: (item.compact_tokens if _best_representation(item) == "compact" else item.full_tokens)
        for item in evidence
    }
    total = sum(served.values())
    references: set[str] = set()
    for item in sorted(evidence, key=lambda item: (item.value, -item.index)):
        if total <= budget:
            break
        references.add(item.frame_id)
        total -= served[item.frame_id]
    return references


def ingest_paste(text: str, config: IngestConfig | None = None, *, intent: str | None = None) -> IngestBundle:
    """Digest one paste: the goal verbatim, path anchors, budgeted evidence frames and a report per segment."""
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
    blocks = split_blocks(text, config.max_blocks)
    # Every distinct segment is counted in full (frames, the goal, anchors): a large paste on a
    # long-lived thread from here on, while it is classified and rendered; a small one right away.
    counted_texts = list(dict.fromkeys(text[block.start : block.end] for block in blocks))
    overlapped = sum(len(segment) for segment in counted_texts) >= THREADED_COUNT_CHARS
    full_counts = SharedCount(counted_texts, encoding) if overlapped else None
    # Counted first when small, so the budget is shared out by exact sizes rather than estimates.
    segment_tokens = None if overlapped else _counted(counted_texts, count_tokens_exact(counted_texts, encoding, 1))
    plan = _resolve(text, blocks, intent, config.max_blocks)
    evidence: dict[str, _Evidence] = {}
    for segment in plan.segments:
        if segment.outcome != "frame":
            continue
        frame_id = digest_text(segment.text)
        segment.frame_id = frame_id
        if frame_id in evidence:
            segment.outcome = "duplicate"
            continue
        kind = _FRAME_KIND[segment.classification.kind]
        evidence[frame_id] = _Evidence(
            frame_id, kind, segment.text, (segment.block.start, segment.block.end), len(evidence), value=_VALUE[kind]
        )
    items = list(evidence.values())
    if segment_tokens is not None:
        _set_full_tokens(items, segment_tokens)
    if tier != "deferred":
        _allocate(items, config.budget_tokens, exact=segment_tokens is not None)
        for item in items:
            _render(item, encoding, tier)
    else:
        for item in items:
            item.title = _title(item, None)
    if segment_tokens is None:
        assert full_counts is not None
        segment_tokens = _counted(counted_texts, full_counts.result())
        _set_full_tokens(items, segment_tokens)
    rendered = [item for item in items if _shorter_compact(item)]
    _measure(rendered, encoding, config.token_threads)
    for _ in range(_RERENDER_ATTEMPTS):
        # Renderings planned by a characters-per-token estimate can overshoot; ask again, scaled down. One whose
        # full text fits its target needs no shrinking: the smaller of the two is served.
        overshot = [
            item
            for item in rendered
            if item.compact_tokens > item.target and item.full_tokens > item.target and item.kind in _TARGETED_KINDS
        ]
        for item in overshot:
            item.target = max(int(item.target * item.target / item.compact_tokens * 0.95), 1)
            _render(item, encoding, tier)
        _measure(overshot, encoding, config.token_threads)
    references = set(evidence) if tier == "deferred" else _fit_budget(items, config.budget_tokens)
    frames = tuple(
        _build_frame(item, "reference" if item.frame_id in references else _best_representation(item), encoding, tier)
        for item in items
    )
    served = {frame.id: frame for frame in frames}
    report = tuple(_report(index, segment, served, segment_tokens) for index, segment in enumerate(plan.segments))

    def render_later(item: _Evidence) -> None:
        item.target = max(config.budget_tokens, _LAZY_TARGET_TOKENS)
        _render(item, encoding, "shallow")
        if _shorter_compact(item) and item.compact_tokens < 0:
            item.compact_tokens = count_tokens(item.compact or "", encoding)

    provider = IngestProvider(frames, evidence, encoding, tier, render_later)
    query = ContextQuery(
        goal="\n\n".join(plan.goal_pieces), anchors=tuple(plan.anchors), budget_tokens=config.budget_tokens
    )
    return IngestBundle(query, provider, report, tier, tier_reason, encoding, digest_text(text))


def _report(index: int, segment: _Segment, served: dict[str, Frame], tokens: dict[str, int]) -> SegmentReport:
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
        after = before if segment.outcome == "goal" else 0
    return SegmentReport(
        index=index,
        kind=segment.classification.kind,
        span=span,
        outcome=segment.outcome,
        reason=reason,
        frame_id=frame_id,
        tokens_before=before,
        tokens_after=after,
    )
