"""How the stomach shares a paste's token budget out among its segments, and fits what was rendered into it.

* Value. Stack traces > logs > tables and code > notes, raised for alert lines
  (``organs.stomach.core.shapes.signals.is_alert``), for lines holding the ask's terms (``organs.stomach.core.asked``)
  and for the paste's last evidence segment, where a test run or a build says
  how it ended. Only a bounded head and tail of a long segment is read for it.
* Claims. A segment's salient lines (alerts, the ask's terms; a repeated line
  once) and the last segment's closing lines claim their share first.
* Shares. A floor first (``floor_share`` of the budget, in equal parts), then
  claims, then the rest of each segment's size, the last two by value, each in
  a water-fill: a segment that asks less than its part takes only what it asks,
  and the rest is shared again. The floor keeps a short segment beside a long
  one readable: value says where what is asked is likely, not that the other
  segments hold none of it.
* Served. A segment whose full text fits its share is served full; a compact
  rendering is served only when it saves at least ``meaningful_saving`` of the
  full text's tokens. An overrun gives way in three steps, lowest value first
  (among equals the later segment): full texts that saved little become their
  compact renderings, renderings that follow a target are rendered again smaller,
  then whole frames become references.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Literal, NamedTuple, Protocol, TypeVar

from envelopes.types import FrameKind
from organs.stomach.core.asked import AskTerms, rarity
from organs.stomach.core.shapes.signals import is_alert
from organs.stomach.core.tuning import StomachTuning

__all__ = [
    "TARGETED_KINDS",
    "Budgeted",
    "Weight",
    "allocate",
    "best_representation",
    "fit_budget",
    "salient",
    "served_tokens",
    "shorter_compact",
    "weigh",
]

_DIGITS_TO_ZERO = str.maketrans("0123456789", "0000000000")
# The kinds whose rendering follows its target, so it can be rendered again smaller.
TARGETED_KINDS: frozenset[FrameKind] = frozenset({"log", "code", "note", "table", "stack_trace"})


class Budgeted(Protocol):
    """What sharing and fitting read of a segment (the stomach's evidence item); they never write it."""

    @property
    def frame_id(self) -> str: ...
    @property
    def kind(self) -> FrameKind: ...
    @property
    def text(self) -> str: ...
    @property
    def index(self) -> int: ...
    @property
    def value(self) -> int: ...
    @property
    def claim(self) -> int: ...
    @property
    def full_tokens(self) -> int: ...
    @property
    def share(self) -> int: ...
    @property
    def compact(self) -> str | None: ...
    @property
    def compact_tokens(self) -> int: ...


class Weight(NamedTuple):
    """A segment's value (its share of the budget follows it) and its claim (tokens its salient lines ask first)."""

    value: int
    claim: int


_Item = TypeVar("_Item", bound=Budgeted)


def shorter_compact(evidence: Budgeted) -> bool:
    """Whether the compact rendering has fewer characters than the full text: only then is it worth counting."""
    return evidence.compact is not None and len(evidence.compact) < len(evidence.text)


def best_representation(evidence: Budgeted, meaningful_saving: float) -> Literal["compact", "full"]:
    """Full when it fits the segment's share or the compact rendering saves too little; else compact.

    A compact rendering must be smaller than the full text in characters and in tokens to be served at all.
    """
    if not (shorter_compact(evidence) and evidence.compact_tokens < evidence.full_tokens):
        return "full"
    if evidence.full_tokens <= evidence.share:
        return "full"
    saves = evidence.full_tokens - evidence.compact_tokens >= evidence.full_tokens * meaningful_saving
    return "compact" if saves else "full"


def salient(ask: AskTerms) -> Callable[[str], int]:
    """How much a line is worth keeping before ordinary ones: an alert most (2), the ask's terms next (1), else 0.

    An alert says what went wrong; a line that only names what the user asked about may be one of many
    ordinary mentions of it, so alerts are picked first (a package log names the package on every line).
    """
    return lambda line: 2 if is_alert(line) else 1 if ask and ask.hits(line) > 0 else 0


def rarest_salient(text: str, ask: AskTerms, common_share: float) -> Callable[[str], int]:
    """``salient`` with the ask's lines ranked by the rarity of the terms they hold among the text's lines (BM25's
    idf, the paste its own corpus): the line naming the one rare thing the user asked of comes before the lines
    naming a common one, and a term on more than ``common_share`` of the lines raises none."""
    if not ask:
        return salient(ask)
    lines = text.split("\n")
    holding = Counter(term for line in lines for term in set(ask.named(line)))
    total = len(lines)
    weight = {term: rarity(held, total) for term, held in holding.items() if held <= common_share * total}
    alert_rank = 1 << 40

    def rank(line: str) -> int:
        asked = sum(weight.get(term, 0.0) for term in ask.named(line))
        score = round(asked * 1000) + (1 if asked else 0)
        return alert_rank + score if is_alert(line) else score

    return rank


def weigh(items: Sequence[Budgeted], ask: AskTerms, tuning: StomachTuning) -> list[Weight]:
    """Each segment's value and claim, read from a bounded head and tail of its text.

    The value is its kind's, raised for alert lines, for the ask's terms and for being the paste's
    last evidence segment. The claim is what its salient lines (``salient``) would cost, estimated,
    and for the last segment its closing lines too: a test run's summary, a build's last words.
    A lone segment shares with nothing, so it is not read for either.
    """
    if len(items) == 1:
        return [Weight(tuning.value_of(items[0].kind), 0)]
    weights = []
    for position, item in enumerate(items):
        text = item.text
        head, tail = tuning.value_head_chars, tuning.value_tail_chars
        if len(text) > head + tail:
            text = text[:head] + "\n" + text[-tail:]
        lines = text.split("\n")
        value = tuning.value_of(item.kind)
        claimed = 0
        alerts = False
        shapes: set[str] = set()
        for line in lines:
            alert = is_alert(line)
            if alert or (ask and ask.hits(line)):
                alerts = alerts or alert
                # A line that repeats another but for its numbers is shown once (``kept_and_ends``): claimed once.
                shape = line.translate(_DIGITS_TO_ZERO)
                if shape not in shapes:
                    shapes.add(shape)
                    claimed += len(line)
        if alerts:
            value += tuning.alert_value
        if ask:
            value += tuning.ask_value * min(ask.hits(text), tuning.ask_terms_counted)
        if position == len(items) - 1 and len(items) > 1:
            value += tuning.last_segment_value
            claimed += sum(len(line) for line in lines[-tuning.summary_lines :])
        weights.append(Weight(value, int(claimed / tuning.chars_per_token) + tuning.claim_overhead if claimed else 0))
    return weights


def _water_fill(
    items: Sequence[Budgeted], demands: dict[str, int], budget: int, *, equal: bool = False
) -> dict[str, int]:
    """Grants within ``budget``: each item's part of what is left follows its value (or is the same for all, when
    ``equal``), and none exceeds its demand.

    Taken in order of demand per unit of value, so an item that asks less than its part takes only
    what it asks and leaves the rest to be shared again.
    """
    grants: dict[str, int] = {}
    remaining = budget

    def value(item: Budgeted) -> int:
        return 1 if equal else item.value

    weight = sum(value(item) for item in items)
    for item in sorted(items, key=lambda item: (demands[item.frame_id] / value(item), item.index)):
        grants[item.frame_id] = max(min(demands[item.frame_id], remaining * value(item) // max(weight, 1)), 0)
        remaining -= grants[item.frame_id]
        weight -= value(item)
    return grants


def allocate(evidence: Sequence[Budgeted], budget: int, tuning: StomachTuning, *, exact: bool) -> list[int]:
    """Each segment's share of the budget: an equal floor, then by value claims, then the rest of each size.

    Each round is a water-fill (``_water_fill``): first ``floor_share`` of the budget in equal parts, then
    each segment's claim (its salient lines, capped at its size) weighted by value, then what remains of the
    budget towards its full size, weighted by value.
    A segment's size is its exact full count when ``exact``, else an estimate from its characters.
    """

    def size(item: Budgeted) -> int:
        return item.full_tokens if exact else int(len(item.text) / tuning.chars_per_token) + 1

    floors = _water_fill(
        evidence, {item.frame_id: size(item) for item in evidence}, int(budget * tuning.floor_share), equal=True
    )
    claims = _water_fill(
        evidence,
        {item.frame_id: max(min(item.claim, size(item)) - floors[item.frame_id], 0) for item in evidence},
        budget - sum(floors.values()),
    )
    rest = _water_fill(
        evidence,
        {item.frame_id: size(item) - claims[item.frame_id] - floors[item.frame_id] for item in evidence},
        budget - sum(claims.values()) - sum(floors.values()),
    )
    shares = {item.frame_id: floors[item.frame_id] + claims[item.frame_id] + rest[item.frame_id] for item in evidence}
    unshared = budget - sum(shares.values())
    if not exact and unshared > 0:
        # An estimate may fall short of the exact count (dense text runs under ``chars_per_token``): a budget with
        # room to spare gives it out by size, or a segment that fits would be held to its estimate and compacted.
        total = sum(size(item) for item in evidence) or 1
        shares = {
            item.frame_id: share + unshared * size(item) // total
            for item in evidence
            for share in [shares[item.frame_id]]
        }
    return [max(shares[item.frame_id], 1) for item in evidence]


def served_tokens(item: Budgeted, representation: str) -> int:
    if representation == "reference":
        return 0
    return item.compact_tokens if representation == "compact" else item.full_tokens


def fit_budget(
    evidence: Sequence[_Item], budget: int, shrink: Callable[[_Item, int], tuple[_Item, bool]], tuning: StomachTuning
) -> tuple[dict[str, Literal["compact", "full", "reference"]], list[_Item]]:
    """How each frame is served so the total fits the budget, lowest value giving way first, and the items as
    they then are (a shrunk one rendered again).

    An overrun is absorbed in three steps, each only while the total is over: a full text
    served because its compact rendering saved little gives way to that rendering; a
    rendering that follows a target is rendered again smaller (``shrink`` to a token limit: the item after
    the attempt, and whether it fits); then whole frames become references, and a reference that now fits the
    room left, shrunk, is served again.
    """
    chosen: dict[str, Literal["compact", "full", "reference"]] = {
        item.frame_id: best_representation(item, tuning.meaningful_saving) for item in evidence
    }
    current = {item.frame_id: item for item in evidence}
    total = sum(served_tokens(item, chosen[item.frame_id]) for item in evidence)
    yielding = [item.frame_id for item in sorted(evidence, key=lambda item: (item.value, -item.index))]
    for frame_id in yielding:
        item = current[frame_id]
        if total <= budget:
            return chosen, list(current.values())
        if chosen[frame_id] == "full" and shorter_compact(item) and item.compact_tokens < item.full_tokens:
            chosen[frame_id] = "compact"
            total -= item.full_tokens - item.compact_tokens
    for frame_id in yielding:
        item = current[frame_id]
        if total <= budget:
            return chosen, list(current.values())
        served = served_tokens(item, chosen[frame_id])
        limit = served - (total - budget)
        if item.kind in TARGETED_KINDS and limit >= tuning.smallest_shrunk:
            current[frame_id], fits = shrink(item, limit)
            if fits:
                chosen[frame_id] = "compact"
                total -= served - current[frame_id].compact_tokens
    referenced = []
    for frame_id in yielding:
        if total <= budget:
            break
        total -= served_tokens(current[frame_id], chosen[frame_id])
        chosen[frame_id] = "reference"
        referenced.append(frame_id)
    # A frame that would not shrink into what its turn left may fit the room the frames given way after it left
    # (a table of numbers whose rendering outgrew its estimate): the most valued first.
    for frame_id in reversed(referenced):
        item = current[frame_id]
        if item.kind in TARGETED_KINDS and budget - total >= tuning.smallest_shrunk:
            shrunk, fits = shrink(item, budget - total)
            if fits:
                current[frame_id], chosen[frame_id] = shrunk, "compact"
                total += shrunk.compact_tokens
    return chosen, list(current.values())
