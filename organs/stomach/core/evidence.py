"""A paste's evidence: what each piece is (``Evidence``), and where the pipeline has got with it (``Item``).

``Evidence`` is a piece's identity (its frame id, kind, texts and span) and never changes. An ``Item`` is
that evidence at one step of ``ingest_paste``: its exact counts, its value and share of the budget, and its
current rendering. Items are frozen; every step of the pipeline returns new ones. ``IngestProvider`` serves
the frames of one paste, rendering a deferred one when it is first asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from envelopes.types import DegradationTier, Frame, FrameKind
from organs.accounting import count_tokens, digest_text
from organs.stomach.core.budget import best_representation, shorter_compact
from organs.stomach.core.distill.kinds import DistillContext, Distiller, distiller_for
from organs.stomach.core.distill.text import plural
from organs.stomach.core.tuning import StomachTuning
from organs.text_views import utf8_size

__all__ = ["Evidence", "IngestProvider", "Item", "build_frame", "rendered", "rendered_later"]

Window = tuple[str | None, str | None]
Representation = Literal["compact", "full", "reference"]


@dataclass(frozen=True, slots=True)
class Evidence:
    """One distinct evidence segment: ``text`` is what is served whole (its normal form), ``received`` its full
    text (whose digest is ``frame_id``), ``index`` its place among the paste's evidence."""

    frame_id: str
    kind: FrameKind
    text: str
    received: str
    span: tuple[int, int]
    index: int


@dataclass(frozen=True, slots=True)
class Item:
    """A piece of evidence at one step of the pipeline.

    ``compact`` is its current rendering at ``target`` tokens and ``measured`` that rendering's exact count
    (``None`` until measured: every rendering shorter than its text is measured before the budget reads it).
    ``distiller`` is kept so that rendering it again at another target does not read it again.
    """

    evidence: Evidence
    full_tokens: int = 0
    received_tokens: int = 0
    value: int = 0
    claim: int = 0
    share: int = 0
    target: int = 0
    distiller: Distiller | None = field(default=None, compare=False)
    compact: str | None = None
    measured: int | None = None
    title: str = ""
    window: Window = (None, None)

    @property
    def frame_id(self) -> str:
        return self.evidence.frame_id

    @property
    def kind(self) -> FrameKind:
        return self.evidence.kind

    @property
    def text(self) -> str:
        return self.evidence.text

    @property
    def index(self) -> int:
        return self.evidence.index

    @property
    def compact_tokens(self) -> int:
        return 0 if self.measured is None else self.measured

    def counted(self, tokens: dict[str, int]) -> Item:
        """The item with its exact full counts (served and received) from ``tokens``, its distiller told."""
        full = tokens[self.text]
        distiller = None if self.distiller is None else self.distiller.counted(full)
        return replace(self, full_tokens=full, received_tokens=tokens[self.evidence.received], distiller=distiller)

    def reverted(self, to: Item) -> Item:
        """This item with the rendering ``to`` held (its title and window stay as this rendering read them)."""
        return replace(self, compact=to.compact, measured=to.measured, target=to.target)


def title_of(evidence: Evidence, detail: str | None, tuning: StomachTuning) -> str:
    lines = evidence.text.count("\n") + 1
    if evidence.kind == "table" and detail:
        return f"table · {detail}"
    if evidence.kind == "stack_trace" and detail:
        return f"stack_trace · {detail[: tuning.title_detail_chars]}"
    return f"{evidence.kind} · {plural(lines, 'line')}"


def rendered(item: Item, target: int, context: DistillContext) -> Item:
    """``item`` rendered at ``target`` by its kind's distiller (built on first use); its title and window are
    the rendering's."""
    distiller = item.distiller or distiller_for(item.kind, item.text, item.full_tokens, context)
    rendering = distiller.render(target)
    return replace(
        item,
        distiller=distiller,
        compact=rendering.text,
        measured=rendering.tokens,
        target=target,
        title=title_of(item.evidence, rendering.detail, context.tuning),
        window=rendering.window,
    )


def rendered_later(item: Item, target: int, context: DistillContext) -> Item:
    """A deferred item rendered when it is first asked for, cheaply, and measured when worth serving."""
    item = rendered(item, target, replace(context, cheap=True))
    if shorter_compact(item) and item.measured is None:
        item = replace(item, measured=count_tokens(item.compact or "", context.encoding))
    return item


def build_frame(
    item: Item, representation: Representation, encoding: str, tier: DegradationTier, *, retrieved: bool = False
) -> Frame:
    """The frame as served; ``retrieved`` asks for the received full text itself, which hashes to the id."""
    evidence = item.evidence
    content: str | None
    if representation == "reference":
        content, cost = None, 0
    elif representation == "compact" and item.compact is not None:
        content, cost = item.compact, item.compact_tokens
    elif retrieved:
        content, cost = evidence.received, item.received_tokens
    else:
        content, cost = evidence.text, item.full_tokens
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
        full_tokens=item.received_tokens,
        encoding=encoding,
        span=evidence.span,
        lines=evidence.received.count("\n") + 1,
        title=item.title,
        tier=tier,
        valid_from=item.window[0],
        valid_to=item.window[1],
        normal_form=content is not None and not retrieved and evidence.text is not evidence.received,
    )


class IngestProvider:
    """A local provider of one paste's evidence: what was served, and everything on request."""

    def __init__(
        self,
        frames: tuple[Frame, ...],
        items: dict[str, Item],
        encoding: str,
        tier: DegradationTier,
        render_later: Callable[[Item], Item],
        meaningful_saving: float,
    ) -> None:
        self._frames = frames
        # Rendered on request, a deferred item replaces its unrendered self here: rendered once.
        self._items = items
        self._encoding = encoding
        self._tier = tier
        self._render_later = render_later
        self._meaningful_saving = meaningful_saving

    @property
    def frames(self) -> tuple[Frame, ...]:
        """The frames served under the budget, in paste order."""
        return self._frames

    def full_text(self, frame_id: str) -> str:
        return self._items[frame_id].evidence.received

    def span(self, frame_id: str) -> tuple[int, int]:
        return self._items[frame_id].evidence.span

    def serve(self, frame_id: str, representation: Literal["compact", "full"] = "compact") -> Frame:
        """The frame in the asked representation; ``compact`` falls back to verbatim when that is smaller."""
        item = self._items[frame_id]
        if representation == "full":
            return build_frame(item, "full", self._encoding, self._tier, retrieved=True)
        if item.compact is None:
            item = self._items[frame_id] = self._render_later(item)
        return build_frame(item, best_representation(item, self._meaningful_saving), self._encoding, self._tier)
