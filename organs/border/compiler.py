"""The prompt compiler: pure, synchronous and deterministic.

Modules of segments go in; one ``CompiledPrompt`` comes out. The steps:

1. Validate every module and segment (the constructors already do; ``compile``
   adds the cross-module rules: module ids are unique).
2. Order every segment by authority (``AUTHORITY_ORDER``, high to low), then
   descending priority, then module id, then its position in the module. Module
   ids are unique, so the order does not depend on the order modules were given.
3. Resolve, in that order: a segment id seen before with the same content is a
   duplicate (emitted once, diagnosed); with other content it is an error. For a
   conflict key, the first claimant wins; a lower-precedence claimant is shadowed
   (diagnosed ``conflict.protected`` or ``conflict.shadowed`` by the winner's
   mode); an equal-precedence claimant with other content fails closed.
4. Fit the budget. Required segments are reserved first and must all fit; the
   rest are taken in order, each whole, truncated (``truncate``) or omitted.
   Separators (``SEPARATOR``) count against the budget.
5. Render the kept segments joined by ``SEPARATOR`` in cache order (below) and
   record, for every input segment, what became of it and which UTF-8 bytes of
   the text it occupies.

Precedence (step 2) decides what wins and what is kept; the rendered order is
chosen for providers' prompt caches, which reuse the longest byte prefix shared
with an earlier prompt. Stable material comes first, by cache scope from the
longest-lived (``global``, ``profile``, ``session``, then ``run`` and ``none``),
then by precedence within a scope; ``closing`` segments (the paste's anchors and
the goal: the question goes after the documents it is about) come last, in
precedence order. The rendering is deterministic: the same modules give the
same bytes. The leading segments of scope ``global``, ``profile`` or ``session``
are the *stable prefix*: its size is reported, and ``messages`` cuts the
prompt there into a system message (the stable prefix, marked as the cache
breakpoint) and a user message (the rest).

Token budgets are exact: the reported ``tokens`` is the count of the whole text in
the named encoding, and it never exceeds ``max_tokens``. Fitting adds per-segment
counts; should joining ever tokenize to more than that sum, the fit is redone
against a tighter limit until the exact count fits. The whole count tokenizes only
the stretches around each join and takes the rest from the segments' counts
(``count_tokens_joined``), so a segment's vouched ``tokens`` must be right.

Trust labels and provenance are carried through for inspection and downstream
policy. The compiler never inspects or rewrites content to make it safe: a trust
label says where text came from, not that it is harmless.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from envelopes.types import (
    CompiledPrompt,
    Diagnostic,
    InspectionEntry,
)
from organs.accounting import DEFAULT_ENCODING, count_tokens, count_tokens_joined, count_tokens_many, encoding_for
from organs.border.segments import (
    AUTHORITY_RANK,
    CACHE_ORDER,
    SEPARATOR,
    STABLE_SCOPES,
    TRUNCATION_MARKER,
    ConflictClaim,
    Disposition,
    PromptBudget,
    PromptModule,
    PromptSegment,
)
from organs.errors import (
    ConflictError,
    InvalidPromptInputError,
    ModuleIdReuseError,
    RequiredOverflowError,
    SegmentIdReuseError,
)
from organs.fitting import fit_tokens

__all__ = ["compile"]

_CACHE_RANK = {scope: rank for rank, scope in enumerate(CACHE_ORDER)}


@dataclass(frozen=True, slots=True)
class _Entry:
    module: PromptModule
    segment: PromptSegment
    position: int

    @property
    def precedence(self) -> tuple[int, int]:
        return AUTHORITY_RANK[self.module.authority], -self.module.priority

    @property
    def order_key(self) -> tuple[int, int, str, int]:
        return (*self.precedence, self.module.id, self.position)

    @property
    def render_key(self) -> tuple[bool, int, int, int, str, int]:
        closing = self.segment.closing
        # Closing segments keep their precedence order among themselves, whatever their scope.
        return (closing, 0 if closing else _CACHE_RANK[self.segment.cache_scope], *self.order_key)


@dataclass(frozen=True, slots=True)
class _Rendered:
    text: str
    bytes: int
    tokens: int


@dataclass(frozen=True, slots=True)
class _Fit:
    rendered: dict[int, _Rendered]
    dispositions: dict[int, Disposition]
    diagnostics: list[Diagnostic]


def _ordered_entries(modules: Iterable[PromptModule]) -> list[_Entry]:
    seen_modules: set[str] = set()
    entries: list[_Entry] = []
    for module in modules:
        if not isinstance(module, PromptModule):
            raise InvalidPromptInputError(f"expected a PromptModule, got {type(module).__name__}")
        if module.id in seen_modules:
            raise ModuleIdReuseError(f"module id {module.id!r} is used by more than one module")
        seen_modules.add(module.id)
        entries.extend(_Entry(module, segment, position) for position, segment in enumerate(module.segments))
    entries.sort(key=lambda entry: entry.order_key)
    return entries


def _resolve(entries: list[_Entry]) -> tuple[dict[int, Disposition], list[Diagnostic]]:
    """Dispositions for duplicates and conflict losers; every other entry stays a candidate."""
    dispositions: dict[int, Disposition] = {}
    diagnostics: list[Diagnostic] = []
    first_by_id: dict[str, _Entry] = {}
    winners: dict[str, tuple[_Entry, ConflictClaim]] = {}
    for index, entry in enumerate(entries):
        segment = entry.segment
        earlier = first_by_id.get(segment.id)
        if earlier is not None:
            if earlier.segment.content != segment.content:
                raise SegmentIdReuseError(
                    f"segment id {segment.id!r} is used with different content "
                    f"(modules {earlier.module.id!r} and {entry.module.id!r})"
                )
            dispositions[index] = "duplicate"
            diagnostics.append(
                Diagnostic(
                    code="duplicate",
                    message=f"exact duplicate from module {entry.module.id!r} emitted once",
                    segment_id=segment.id,
                )
            )
            continue
        first_by_id[segment.id] = entry
        if segment.conflict is None:
            continue
        key = segment.conflict.key
        if key not in winners:
            winners[key] = entry, segment.conflict
            continue
        winner, winning_claim = winners[key]
        if winner.precedence == entry.precedence and winner.segment.content != segment.content:
            raise ConflictError(
                f"segments {winner.segment.id!r} and {segment.id!r} claim conflict key {key!r} "
                "at equal precedence with different content"
            )
        protected = winning_claim.mode == "protected"
        dispositions[index] = "shadowed"
        diagnostics.append(
            Diagnostic(
                code="conflict.protected" if protected else "conflict.shadowed",
                message=(
                    f"conflict key {key!r} is held by {'protected' if protected else 'replaceable'} "
                    f"segment {winner.segment.id!r}; this claim is not rendered"
                ),
                segment_id=segment.id,
            )
        )
    return dispositions, diagnostics


def _exceeds(used: int, limit: int | None) -> bool:
    return limit is not None and used > limit


def _truncated_text(content: str, room_bytes: int | None, room_tokens: int | None, encoding: str) -> str | None:
    """The longest found prefix of ``content`` plus ``TRUNCATION_MARKER`` within the room, or None.

    The byte cut falls on a UTF-8 boundary. The token cut is a binary search over
    character cut points, bounded by the bytes of the first ``room_tokens`` tokens,
    so it costs one encoding of the content plus O(log n) encodings of the prefix.
    Token counts are not strictly monotone in the prefix length, so the search
    returns a prefix that fits, possibly a few characters short of the longest.
    """
    if room_tokens is not None and room_tokens <= 0:
        return None
    marker_bytes = len(TRUNCATION_MARKER.encode("utf-8"))
    raw = content.encode("utf-8")
    byte_cap = len(raw) if room_bytes is None else room_bytes - marker_bytes
    if room_tokens is not None:
        tokens = encoding_for(encoding).encode_ordinary(content)
        byte_cap = min(byte_cap, len(encoding_for(encoding).decode_bytes(tokens[: room_tokens + 1])))
    if byte_cap <= 0:
        return None
    candidate = raw[:byte_cap].decode("utf-8", "ignore")
    if room_tokens is None:
        return candidate + TRUNCATION_MARKER if candidate else None
    low, high = 0, len(candidate)
    while low < high:
        middle = (low + high + 1) // 2
        if count_tokens(candidate[:middle] + TRUNCATION_MARKER, encoding) <= room_tokens:
            low = middle
        else:
            high = middle - 1
    return candidate[:low] + TRUNCATION_MARKER if low else None


def _fit(
    entries: list[_Entry],
    candidates: list[int],
    measures: dict[int, _Rendered],
    max_bytes: int | None,
    max_tokens: int | None,
    encoding: str,
) -> _Fit:
    separator_bytes = len(SEPARATOR.encode("utf-8"))
    separator_tokens = count_tokens(SEPARATOR, encoding)
    required = [index for index in candidates if entries[index].segment.budget_behavior == "required"]
    used_bytes = sum(measures[index].bytes for index in required) + separator_bytes * max(0, len(required) - 1)
    used_tokens = sum(measures[index].tokens for index in required) + separator_tokens * max(0, len(required) - 1)
    if _exceeds(used_bytes, max_bytes) or _exceeds(used_tokens, max_tokens):
        raise RequiredOverflowError(
            f"required segments need {used_bytes} bytes and {used_tokens} tokens; "
            f"the budget allows {max_bytes} bytes and {max_tokens} tokens"
        )
    rendered = {index: measures[index] for index in required}
    dispositions: dict[int, Disposition] = dict.fromkeys(required, "included")
    diagnostics: list[Diagnostic] = []
    for index in candidates:
        if index in rendered:
            continue
        segment = entries[index].segment
        joins = bool(rendered)
        room_bytes = None if max_bytes is None else max_bytes - used_bytes - separator_bytes * joins
        room_tokens = None if max_tokens is None else max_tokens - used_tokens - separator_tokens * joins
        whole = measures[index]
        disposition: Disposition
        if not _exceeds(whole.bytes, room_bytes) and not _exceeds(whole.tokens, room_tokens):
            kept, disposition = whole, "included"
        elif segment.budget_behavior == "truncate" and (
            cut := _truncated_text(segment.content, room_bytes, room_tokens, encoding)
        ):
            kept = _Rendered(cut, len(cut.encode("utf-8")), count_tokens(cut, encoding))
            disposition = "truncated"
            diagnostics.append(
                Diagnostic(
                    code="budget.truncated",
                    message=f"cut from {whole.bytes} to {kept.bytes} bytes to fit the budget",
                    segment_id=segment.id,
                )
            )
        else:
            dispositions[index] = "omitted"
            no_cut = ", nor does any prefix with the truncation marker" if segment.budget_behavior == "truncate" else ""
            message = f"{whole.bytes} bytes and {whole.tokens} tokens do not fit the budget{no_cut}"
            diagnostics.append(Diagnostic(code="budget.omitted", message=message, segment_id=segment.id))
            continue
        rendered[index] = kept
        dispositions[index] = disposition
        used_bytes += kept.bytes + separator_bytes * joins
        used_tokens += kept.tokens + separator_tokens * joins
    return _Fit(rendered, dispositions, diagnostics)


def _render_order(entries: list[_Entry], kept: Iterable[int]) -> list[int]:
    """The kept entries in the order they are rendered (see the module docstring)."""
    return sorted(kept, key=lambda index: entries[index].render_key)


@dataclass(frozen=True, slots=True)
class _StablePrefix:
    segments: int  # how many rendered segments, from the first, it holds
    rendered: _Rendered


@dataclass(frozen=True, slots=True)
class _Attempt:
    """One fit rendered in cache order and counted exactly."""

    fit: _Fit
    kept: list[int]
    text: str
    tokens: int
    stable: _StablePrefix


def _stable_prefix(
    entries: list[_Entry], kept: list[int], rendered: dict[int, _Rendered], encoding: str
) -> _StablePrefix:
    """The leading rendered segments whose cache scope outlives a run, joined and counted exactly."""
    count = 0
    for index in kept:
        segment = entries[index].segment
        if segment.closing or segment.cache_scope not in STABLE_SCOPES:
            break
        count += 1
    parts = [rendered[index] for index in kept[:count]]
    text = SEPARATOR.join(part.text for part in parts)
    tokens = count_tokens_joined(_joined_parts(parts), encoding) if parts else 0
    return _StablePrefix(count, _Rendered(text, len(text.encode("utf-8")), tokens))


def _joined_parts(rendered: list[_Rendered]) -> list[tuple[str, int | None]]:
    parts: list[tuple[str, int | None]] = []
    for position, segment in enumerate(rendered):
        if position:
            parts.append((SEPARATOR, None))
        parts.append((segment.text, segment.tokens))
    return parts


def _measures(entries: list[_Entry], candidates: list[int], encoding: str) -> dict[int, _Rendered]:
    """Each candidate segment's content, bytes and tokens (counted here, in one batch, when it names none)."""
    segments = {index: entries[index].segment for index in candidates}
    uncounted = [index for index, segment in segments.items() if segment.tokens is None]
    counts = dict(
        zip(uncounted, count_tokens_many([segments[index].content for index in uncounted], encoding), strict=True)
    )
    return {
        index: _Rendered(
            segment.content,
            len(segment.content.encode("utf-8")),
            counts[index] if segment.tokens is None else segment.tokens,
        )
        for index, segment in segments.items()
    }


def compile(
    modules: Iterable[PromptModule],
    budget: PromptBudget,
    encoding: str = DEFAULT_ENCODING,
) -> CompiledPrompt:
    """Compile ``modules`` into one prompt within ``budget`` (see the module docstring).

    Raises a ``CompileError`` subclass when the input is invalid, an id is reused
    with other content, equal-precedence claims conflict, or the required
    segments do not fit. Every output byte belongs to exactly one rendered
    segment's ``byte_range`` or to a separator between two of them.
    """
    entries = _ordered_entries(modules)
    resolved, resolution_diagnostics = _resolve(entries)
    candidates = [index for index in range(len(entries)) if index not in resolved]
    measures = _measures(entries, candidates, encoding)

    def fitted_at(token_limit: int | None) -> _Attempt:
        fit = _fit(entries, candidates, measures, budget.max_bytes, token_limit, encoding)
        kept = _render_order(entries, fit.rendered)
        stable = _stable_prefix(entries, kept, fit.rendered, encoding)
        # Exact: only the stretches around each join are tokenized, the segments' own counts give the rest
        # (the stable prefix counts as one part, counted once).
        rest = [fit.rendered[index] for index in kept[stable.segments :]]
        tokens = count_tokens_joined(_joined_parts([stable.rendered, *rest] if stable.segments else rest), encoding)
        return _Attempt(fit, kept, SEPARATOR.join(fit.rendered[index].text for index in kept), tokens, stable)

    if budget.max_tokens is None:
        attempt = fitted_at(None)
    else:
        # Joining can tokenize to more than the parts' sum; then the fit is redone against a tighter limit.
        fitted = fit_tokens(fitted_at, lambda attempt: attempt.tokens, budget.max_tokens, rounds=None)
        if fitted is None:
            raise RequiredOverflowError(f"no fit of the segments joins within {budget.max_tokens} tokens")
        attempt = fitted.rendering
    fit, kept, text, tokens, stable = attempt.fit, attempt.kept, attempt.text, attempt.tokens, attempt.stable

    diagnostics = [*resolution_diagnostics, *fit.diagnostics]
    if not kept:
        diagnostics.append(Diagnostic(code="prompt.empty", message="no segment was rendered; the prompt is empty"))
    ranges: dict[int, tuple[int, int]] = {}
    offset = 0
    separator_bytes = len(SEPARATOR.encode("utf-8"))
    for index in kept:
        ranges[index] = (offset, offset + fit.rendered[index].bytes)
        offset = ranges[index][1] + separator_bytes
    inspection = tuple(
        InspectionEntry(
            segment_id=entry.segment.id,
            module_id=entry.module.id,
            provenance=entry.segment.provenance,
            trust=entry.segment.trust,
            cache_scope=entry.segment.cache_scope,
            disposition=resolved.get(index) or fit.dispositions[index],
            byte_range=ranges.get(index),
            rendered_bytes=fit.rendered[index].bytes if index in fit.rendered else 0,
            tokens=fit.rendered[index].tokens if index in fit.rendered else 0,
        )
        for index, entry in enumerate(entries)
    )
    return CompiledPrompt(
        text=text,
        bytes=len(text.encode("utf-8")),
        tokens=tokens,
        encoding=encoding,
        diagnostics=tuple(diagnostics),
        inspection=inspection,
        stable_prefix_bytes=stable.rendered.bytes,
        stable_prefix_tokens=stable.rendered.tokens,
    )
