"""``ingest_paste``: a user's paste, decomposed into the goal, anchors and budgeted evidence frames.

The pipeline is a row of named phases, each a function of frozen inputs returning
frozen results: cut and classify (``_cut``) → redact (``_redact``) → count
(``_count``) → identify the evidence (``_identify``) → weigh, share the budget and
render (``_shared_and_rendered``) → measure (``_measured``) → fit each rendering
to its share (``_fitted_to_shares``) → serve within the budget (``_served``) →
frames and report (``_bundle``). A piece of evidence's identity
(``organs.stomach.core.evidence.Evidence``) is separate from its renderings (``Item``);
every kind renders through one protocol (``organs.stomach.core.distill.kinds``), and
every tuning number comes from ``IngestConfig.tuning``.

* Segments and goal: ``organs.stomach.core.blocks.segments``. Blocks are cut from the
  paste's normal form and placed back in the received text, so every span
  locates received characters. A segment's full text is the received segment
  (its digest is the frame id; fetching it in full returns it); what the model
  is served, whole or compact, and what titles and windows are read from, is its
  normal form (``segment_texts``). With ``intent`` given, the goal is exactly
  ``intent``; without it, the user's own words (``organs.stomach.core.blocks.intent``), each
  piece as the terminal shows it. The goal is a field of the query, never a
  frame, so no budget can cut it.
* Anchors. Path references, in order, without repeats; they cost no tokens.
* Frames. One per distinct evidence segment (``id`` = blake3 of its text); a
  repeat reports ``duplicate`` and points at the first.
* Budget. Served frames together fit ``budget_tokens``: shared out before
  rendering by value, a segment that fits its share served full, an overrun
  absorbed lowest value first, frames that cannot be served becoming zero-cost
  references, still fetchable through the provider (``organs.stomach.core.budget``).
  Notes and code that do not fit keep their alert lines and the lines holding
  the ask's terms between their head and tail.
* Tiers: see ``organs.stomach.core.tiers``. Deferred frames carry no time window
  because nothing of them was read beyond the classifier's sample.

Every distinct segment is counted in full exactly once. For a paste of 64 KiB or
more that starts beside this thread, in a counting process on the other CPU
(``organs.counting.beside``), as soon as the paste is cut into blocks, while this
thread classifies and distills; it collects the counts once it needs them. A
smaller paste is counted inline: handing it over costs more than the overlap gives;
so is a deferred one, of which nothing is rendered for the counting to overlap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from envelopes.types import DegradationTier, Frame, FrameKind, SegmentKind, SegmentReport
from organs.accounting import (
    DEFAULT_ENCODING,
    THREADED_COUNT_CHARS,
    SharedCount,
    count_tokens,
    count_tokens_exact,
    count_tokens_many,
)
from organs.fitting import fit_tokens
from organs.stomach.core.asked import AskTerms
from organs.stomach.core.blocks.segments import Plan, Segment, cut_blocks, plan_blocks, segment_texts
from organs.stomach.core.budget import TARGETED_KINDS, allocate, fit_budget, served_tokens, shorter_compact, weigh
from organs.stomach.core.classify.rungs import Classification
from organs.stomach.core.compare import Comparison
from organs.stomach.core.distill.kinds import DistillContext, LogRenderer, alerts_echoed
from organs.stomach.core.evidence import Evidence, IngestProvider, Item, build_frame, rendered, rendered_later, title_of
from organs.stomach.core.redact import PasteRedaction, describe, redact_paste
from organs.stomach.core.relevance import Fillable, LineScorer, fill_relevant, scorer_for
from organs.stomach.core.tiers import choose_tier
from organs.stomach.core.tuning import StomachTuning
from organs.text_views import HandedText, digest_in_pieces

__all__ = ["ContextQuery", "IngestBundle", "IngestConfig", "IngestProvider", "ingest_paste"]

_FRAME_KIND: dict[SegmentKind, FrameKind] = {
    "code": "code",
    "stack_trace": "stack_trace",
    "log": "log",
    "table": "table",
    "prose": "note",
}
# Head-and-tail renderings grow with their target; one served under ``undershoot`` of its share is rendered again.
_GROWING_KINDS: frozenset[FrameKind] = frozenset({"code", "note"})
Chosen = dict[str, Literal["compact", "full", "reference"]]


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
    # Every tuning number of the pipeline and its distillers (``organs.stomach.core.tuning``).
    tuning: StomachTuning = field(default_factory=StomachTuning)


@dataclass(frozen=True, slots=True)
class ContextQuery:
    goal: str
    anchors: tuple[str, ...]
    budget_tokens: int


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


@dataclass(frozen=True, slots=True)
class _Cut:
    """The paste cut into classified segments, its tier, and the counting started beside (a large paste)."""

    tier: DegradationTier
    tier_reason: str
    plan: Plan
    full_counts: SharedCount | None


@dataclass(frozen=True, slots=True)
class _Redacted:
    """The segments with their secrets replaced (the goal never), the anchors as redacted, and what was."""

    segments: tuple[Segment, ...]
    anchors: tuple[str, ...]
    redaction: PasteRedaction


def ingest_paste(
    text: str | HandedText, config: IngestConfig | None = None, *, intent: str | None = None
) -> IngestBundle:
    """Digest one paste: the goal verbatim, path anchors, budgeted evidence frames and a report per segment.

    A paste handed over (``HandedText``) is let go once its segments are cut and redacted, before anything is
    rendered; its bundle's ``redaction.text`` is then empty unless a secret was redacted.
    """
    handed = isinstance(text, HandedText)
    received = text.take() if isinstance(text, HandedText) else text
    del text
    config = config or IngestConfig()
    cut = _cut(received, config, intent)
    redacted = _redact(received, cut.plan, config)
    source_digest = digest_in_pieces(received)
    redaction = redacted.redaction
    if handed:
        # Held here alone: a paste that differs from its one block by a trailing newline is otherwise held twice
        # while the block is rendered.
        if not redaction.changed:
            redaction = replace(redaction, text="")
        del received
    tokens = _count(redacted.segments, redaction, cut.full_counts, config.encoding)
    segments, evidence = _identify(redacted.segments)
    goal = "\n\n".join(cut.plan.goal_pieces)
    prose = [piece.text for piece in evidence if piece.kind == "note"]
    ask = AskTerms.of(goal, config.tuning.ask).with_context(prose, config.tuning.ask)
    comparison = Comparison.of(goal, config.tuning.relevance)
    echo = alerts_echoed([(piece.kind, piece.text) for piece in evidence], config.tuning)
    context = DistillContext(
        ask, config.encoding, cheap=cut.tier != "full", tuning=config.tuning, comparison=comparison, echo=echo
    )
    items = [Item(piece) if tokens is None else Item(piece).counted(tokens) for piece in evidence]
    if cut.tier != "deferred":
        items = _shared_and_rendered(items, config.budget_tokens, context, exact=tokens is not None)
    else:
        items = [replace(item, title=title_of(item.evidence, None, config.tuning)) for item in items]
    if tokens is None:
        assert cut.full_counts is not None
        tokens = cut.full_counts.counts()
        items = [item.counted(tokens) for item in items]
    items = _fitted_to_shares(_measured(items, config), context)
    chosen, items = _served(items, cut.tier, config.budget_tokens, context, goal)
    query = ContextQuery(goal, redacted.anchors, config.budget_tokens)
    return _bundle(query, segments, items, chosen, tokens, cut, context, source_digest, redaction)


def _cut(text: str, config: IngestConfig, intent: str | None) -> _Cut:
    """The tier, and the paste cut into blocks, each classified: the segments, the goal and the anchors."""
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
    blocks, served_texts = cut_blocks(text, config.max_blocks, config.tuning)
    # Each block's text is sliced once, and counted, classified and redacted as that one copy.
    block_texts = {(block.start, block.end): text[block.start : block.end] for block in blocks}
    # A large paste's blocks are counted beside this thread from here on, while they are classified and rendered:
    # nearly always they are its segments (the goal, anchors and evidence), received and served. A deferred paste
    # is only counted, so nothing would overlap the counting, and handing it over would copy it.
    full_counts = None
    if len(text) >= THREADED_COUNT_CHARS and tier != "deferred":
        full_counts = SharedCount(list(dict.fromkeys(block_texts.values())), config.encoding)
    plan = plan_blocks(text, blocks, intent, config.max_blocks, block_texts, config.tuning.classify, served_texts)
    return _Cut(tier, tier_reason, plan, full_counts)


def _redact(text: str, plan: Plan, config: IngestConfig) -> _Redacted:
    """Secrets go before anything is counted or rendered: every segment but the goal takes its redacted text,
    and its report says what was replaced."""
    texts = {(segment.block.start, segment.block.end): segment.text for segment in plan.segments}
    blocks = [segment.block for segment in plan.segments]
    redaction = redact_paste(text, blocks, config.redact_personal, texts)
    if not redaction.changed:
        return _Redacted(tuple(plan.segments), tuple(plan.anchors), redaction)
    credentials = set()
    segments = []
    for segment, redacted, found in zip(plan.segments, redaction.texts, redaction.found, strict=True):
        if segment.outcome == "goal" or not found:
            segments.append(segment)
            continue
        full, served = segment_texts(redacted)
        if segment.outcome == "anchor":
            # A credential is never an anchor (a bare key can look like a path): it is a note, redacted.
            credentials.add(segment.served.strip())
            segment = replace(
                segment,
                outcome="frame",
                classification=Classification("prose", "held a credential, so not a path reference"),
            )
        segments.append(replace(segment, text=full, served=served, redacted=found, note=segment.note + describe(found)))
    anchors = tuple(anchor for anchor in plan.anchors if anchor not in credentials)
    return _Redacted(tuple(segments), anchors, redaction)


def _count(
    segments: Sequence[Segment], redaction: PasteRedaction, full_counts: SharedCount | None, encoding: str
) -> dict[str, int] | None:
    """Every distinct segment counted in full, received and served (frames, the goal, anchors), with what the
    blocks did not hold (a redacted text, a normal form, a block cut around glued lines): counted here, first,
    when small, so the budget is shared out by exact sizes; added to the counting beside (``None``) when large.
    A goal is never rewritten, so it is counted as received."""
    pieces = (piece for segment in segments for piece in (segment.text, segment.served))
    counted = list(dict.fromkeys((*pieces, *redaction.received)))
    if full_counts is not None:
        full_counts.add(counted)
        return None
    return dict(zip(counted, count_tokens_exact(counted, encoding, 1), strict=True))


def _identify(segments: Sequence[Segment]) -> tuple[tuple[Segment, ...], tuple[Evidence, ...]]:
    """Each evidence segment's frame id (the digest of its text), and one ``Evidence`` per distinct one; a repeat
    is a ``duplicate`` pointing at the first."""
    evidence: dict[str, Evidence] = {}
    identified = []
    for segment in segments:
        if segment.outcome != "frame":
            identified.append(segment)
            continue
        frame_id = digest_in_pieces(segment.text)
        if frame_id in evidence:
            identified.append(replace(segment, frame_id=frame_id, outcome="duplicate"))
            continue
        kind = _FRAME_KIND[segment.classification.kind]
        span = (segment.block.start, segment.block.end)
        evidence[frame_id] = Evidence(frame_id, kind, segment.served, segment.text, span, len(evidence))
        identified.append(replace(segment, frame_id=frame_id))
    return tuple(identified), tuple(evidence.values())


def _shared_and_rendered(items: list[Item], budget: int, context: DistillContext, *, exact: bool) -> list[Item]:
    """Each item weighed, given its share of the budget (by exact sizes when ``exact``), and rendered at it."""
    weights = weigh(items, context.ask, context.tuning)
    weighed = [
        replace(item, value=weight.value, claim=weight.claim) for item, weight in zip(items, weights, strict=True)
    ]
    shares = allocate(weighed, budget, context.tuning, exact=exact)
    return [rendered(replace(item, share=share), share, context) for item, share in zip(weighed, shares, strict=True)]


def _measured(items: list[Item], config: IngestConfig) -> list[Item]:
    """Exact counts of the renderings worth serving (shorter than their text) that the distiller did not measure."""
    unmeasured = [index for index, item in enumerate(items) if shorter_compact(item) and item.measured is None]
    texts = [items[index].compact or "" for index in unmeasured]
    counts = count_tokens_many(texts, config.encoding, config.token_threads) if unmeasured else []
    measured = list(items)
    for index, tokens in zip(unmeasured, counts, strict=True):
        measured[index] = replace(measured[index], measured=tokens)
    return measured


def _refit(item: Item, limit: int, start: int | None, context: DistillContext) -> tuple[Item, bool]:
    """``item`` rendered again within ``limit`` tokens, and whether one fitted; when none did, the rendering it
    held (its title and window are the last attempt's, as rendering it again read them)."""
    attempts = [item]

    def render(target: int) -> int:
        attempt = rendered(attempts[-1], target, context)
        if attempt.measured is None:
            # A rendering grown back into the whole text is not counted again: each text once.
            same = attempt.compact == attempt.text and attempt.full_tokens > 0
            tokens = attempt.full_tokens if same else count_tokens(attempt.compact or "", context.encoding)
            attempt = replace(attempt, measured=tokens)
        attempts.append(attempt)
        return attempt.compact_tokens

    # The first rendering within the limit ends the search, so it is the last one made.
    fitted = fit_tokens(render, lambda tokens: tokens, limit, start=start, rounds=context.tuning.rerender_attempts)
    last = attempts[-1]
    if fitted is None or not shorter_compact(last):
        return last.reverted(item), False
    return last, True


def _fitted_to_shares(items: list[Item], context: DistillContext) -> list[Item]:
    """Renderings planned by a characters-per-token estimate can miss their share: one over it is asked again,
    scaled down; a head-and-tail one well under it, scaled up, kept only if it fits and shows more. A full text
    that fits its share is served whole: its rendering needs no fitting."""
    tuning = context.tuning
    fitted = []
    for item in items:
        if not shorter_compact(item) or item.kind not in TARGETED_KINDS or item.full_tokens <= item.share:
            fitted.append(item)
        elif item.compact_tokens > item.target:
            scaled = int(item.target * item.share / item.compact_tokens * tuning.rerender_margin)
            fitted.append(_refit(item, item.share, max(scaled, 1), context)[0])
        elif item.kind in _GROWING_KINDS and item.compact_tokens < item.share * tuning.undershoot:
            grown = int(item.target * item.share / max(item.compact_tokens, 1) * tuning.rerender_margin)
            attempt, fits = _refit(item, item.share, grown, context)
            shows_more = fits and attempt.compact_tokens > item.compact_tokens
            fitted.append(attempt if shows_more else attempt.reverted(item))
        else:
            fitted.append(item)
    return fitted


def _served(
    items: list[Item], tier: DegradationTier, budget: int, context: DistillContext, goal: str
) -> tuple[Chosen, list[Item]]:
    """How each frame is served within the budget (``fit_budget``), the logs filled into what is left; every
    frame of a deferred paste is a reference."""
    if tier == "deferred":
        return dict.fromkeys((item.frame_id for item in items), "reference"), items
    chosen, items = fit_budget(items, budget, lambda item, limit: _refit(item, limit, None, context), context.tuning)
    # What the budget leaves goes by relevance to the ask: its strong lines first, then the logs' own
    # excerpts, then the rest by rank (``organs.stomach.core.relevance``).
    scorer = (
        scorer_for([_Open(item) for item in items], chosen, goal, context.tuning.relevance, ask=context.ask)
        if tier == "full"
        else None
    )
    if scorer is not None:
        items = _filled_relevant(items, chosen, budget, context, scorer, may_shrink=True)
    items = _filled_logs(items, chosen, budget, context)
    if scorer is not None:
        items = _filled_relevant(items, chosen, budget, context, scorer, may_shrink=False)
    return chosen, items


class _Open:
    """An item the relevance fill may render again in place (``relevance.Fillable``): the frozen item it holds
    is replaced by each new rendering."""

    def __init__(self, item: Item) -> None:
        self.item = item

    frame_id = property(lambda self: self.item.frame_id)
    kind = property(lambda self: self.item.kind)
    text = property(lambda self: self.item.text)
    index = property(lambda self: self.item.index)
    value = property(lambda self: self.item.value)
    full_tokens = property(lambda self: self.item.full_tokens)

    @property
    def compact(self) -> str | None:
        return self.item.compact

    @compact.setter
    def compact(self, rendering: str | None) -> None:
        self.item = replace(self.item, compact=rendering)

    @property
    def compact_tokens(self) -> int:
        return self.item.compact_tokens

    @compact_tokens.setter
    def compact_tokens(self, tokens: int) -> None:
        self.item = replace(self.item, measured=tokens)


def _filled_relevant(
    items: list[Item], chosen: Chosen, budget: int, context: DistillContext, scorer: LineScorer, *, may_shrink: bool
) -> list[Item]:
    """``fill_relevant`` over the items; with ``may_shrink``, a frame may be rendered again smaller for its
    strong lines or for the user's own words."""
    held = [_Open(item) for item in items]

    def shrink(open_item: Fillable, limit: int) -> bool:
        assert isinstance(open_item, _Open)
        open_item.item, fits = _refit(open_item.item, limit, None, context)
        return fits

    def served(open_item: Fillable, representation: str) -> int:
        assert isinstance(open_item, _Open)
        return served_tokens(open_item.item, representation)

    fill_relevant(held, chosen, budget, context.encoding, scorer, served, shrink if may_shrink else None)
    return [open_item.item for open_item in held]


def _filled_logs(items: list[Item], chosen: Chosen, budget: int, context: DistillContext) -> list[Item]:
    """What the budget has left goes to the logs served compact, the most valued first: after its templates, a
    log shows as many of its own lines as fit (``LogDistiller.filled``). Only the leftover: every frame's share
    was settled first, so no frame gives way to a fuller log."""
    spare = budget - sum(served_tokens(item, chosen[item.frame_id]) for item in items)
    filled = {item.frame_id: item for item in items}
    for item in sorted(items, key=lambda item: (-item.value, item.index)):
        if spare < context.tuning.log.fill_min_tokens:
            break
        if item.kind != "log" or chosen[item.frame_id] != "compact" or not isinstance(item.distiller, LogRenderer):
            continue
        if item.measured is None or item.full_tokens <= 0:
            continue
        before = item.measured
        compact, tokens = item.distiller.distiller.filled(
            item.compact or "", before, before + spare, context.encoding, item.full_tokens
        )
        if tokens >= item.full_tokens:
            # Templates and their lines together would cost more than the log itself; it stays as it was shared.
            continue
        filled[item.frame_id] = replace(item, compact=compact, measured=tokens)
        spare -= tokens - before
    return list(filled.values())


def _bundle(
    query: ContextQuery,
    segments: Sequence[Segment],
    items: list[Item],
    chosen: Chosen,
    tokens: dict[str, int],
    cut: _Cut,
    context: DistillContext,
    source_digest: str,
    redaction: PasteRedaction,
) -> IngestBundle:
    """The frames as served, a report per segment, and the provider that serves every frame on request."""
    encoding, tier = context.encoding, cut.tier
    frames = tuple(build_frame(item, chosen[item.frame_id], encoding, tier) for item in items)
    served = {frame.id: frame for frame in frames}
    report = tuple(_report(index, segment, served, tokens) for index, segment in enumerate(segments))
    later_target = max(query.budget_tokens, context.tuning.lazy_target_tokens)
    provider = IngestProvider(
        frames,
        {item.frame_id: item for item in items},
        encoding,
        tier,
        lambda item: rendered_later(item, later_target, context),
        context.tuning.meaningful_saving,
    )
    return IngestBundle(query, provider, report, tier, cut.tier_reason, encoding, source_digest, redaction)


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
