"""Ada's Trust_Guard: decides whether a yield envelope may cross the border. Pure.

``screen`` runs every check and reports every failure, each as a ``Reason`` with
a machine-readable code and a message for people:

* ``schema.*``       the payload is a ``Yield`` addressed to the border;
* ``provenance.*``   the envelope was secreted by absorption, the chain holds the
  tract's steps in order (stomach ingested, classified, digested; absorption
  yielded), none missing, duplicated or reordered, the last step names this
  envelope, and ``meta.original_provenance`` is ``chain.origin``;
* ``tier.*``         the tier is on the envelope, in the meta and on every frame;
* ``frame.*``        every served frame's digest and token cost are recomputed
  (``frame.dishonest``); references serve nothing and cost 0;
* ``cost.actual``    ``meta.actual_cost`` equals ``yield_cost``;
* ``origin.*``       the origin policy admits the origin (``system_internal`` only under a tract key's seal);
* ``rate.limited``   the sender (who really handed the paste in, by its seal) and, inside
  its limit, the origin's actor are within their token buckets (``organs.border.senders``);
* ``signature.*``, ``sender.*``, ``seal.mismatch``  with trusted keys, every signature and the sender's seal
  hold, and the seal was made for this paste envelope (id, time, intent, budget as the stomach received them);
* ``screening.*``    a pattern configured to reject matched;
* ``secret.*``       a credential in the goal (policy) or in served content (a leak),
  see ``organs.border.secrets``.

Screening patterns otherwise only *mark*: a match lowers the matched segment to
``untrusted`` and is reported as a ``Finding``. Trust labels describe where text
came from, for downstream policy and inspection. They never sanitize anything
and are no defence against prompt injection; nothing here claims to be.
"""

from __future__ import annotations

import re
import string
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from envelopes.types import (
    TRACT_STAGES,
    AnyProvenance,
    Envelope,
    External,
    Finding,
    Frame,
    Organ,
    OrganSecretion,
    Reason,
    Stage,
    SystemInternal,
    Trust,
    UserInput,
    Yield,
    YieldMeta,
)
from organs.accounting import DEFAULT_ENCODING, RememberedCounts, digest_text, yield_cost
from organs.anatomy import ABSORPTION, BORDER, ORGANS, STOMACH
from organs.border.prompt import paste_segment_texts
from organs.border.secrets import SecretInGoal, screen_secrets
from organs.border.senders import RateKeys, rate_actor, rate_keys
from organs.signing import TrustedKeys, verify_chain

__all__ = [
    "BASE64_ALPHABET",
    "DEFAULT_PATTERNS",
    "FEEDING_ORGAN",
    "Admission",
    "BorderPolicy",
    "GuardState",
    "PatternAction",
    "RateLimit",
    "Rejection",
    "RunPattern",
    "ScreeningPattern",
    "TokenBucket",
    "WordPattern",
    "rate_actor",
    "screen",
    "yield_cost",
]

PatternAction = Literal["mark_untrusted", "reject"]

FEEDING_ORGAN = ABSORPTION.wire_name
BASE64_ALPHABET = string.ascii_letters + string.digits + "+/"
_STAGE_ORGANS: dict[Stage, Organ] = {
    "ingested": STOMACH.wire_name,
    "classified": STOMACH.wire_name,
    "digested": STOMACH.wire_name,
    "yielded": ABSORPTION.wire_name,
}


# --- screening patterns -------------------------------------------------------
#
# The non-ASCII characters that Python's regex engine, ignoring case, takes for an ASCII letter
# (a test checks every code point): "İ" and "ı" for i, "ſ" for s, the Kelvin sign for k.
_ASCII_LOOKALIKES = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


_LOOKALIKE_CHARACTERS = "\u0130\u0131\u017f\u212a"


def fold_case(text: str) -> str:
    """``text`` lower-cased, with every character a case-blind regex takes for an ASCII letter made that letter."""
    # ``str.translate`` looks every character up; searching for the four first is far cheaper when none is there.
    if any(character in text for character in _LOOKALIKE_CHARACTERS):
        text = text.translate(_ASCII_LOOKALIKES)
    return text.lower()


# Patterns are not free-form regular expressions: each kind compiles to a regex
# built here whose matching time is linear in the text, so no configured pattern
# can backtrack catastrophically.


@dataclass(frozen=True, slots=True)
class WordPattern:
    """Any of ``words`` as a whole word (not inside a longer word), case-insensitive."""

    name: str
    words: tuple[str, ...]
    action: PatternAction = "mark_untrusted"
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _ascii_words: tuple[str, ...] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.words or not all(self.words):
            raise ValueError(f"pattern {self.name!r} needs at least one non-empty word")
        alternatives = "|".join(re.escape(word) for word in sorted(set(self.words), key=len, reverse=True))
        object.__setattr__(self, "regex", re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE))
        ascii_words = all(word.isascii() for word in self.words)
        object.__setattr__(self, "_ascii_words", tuple(word.lower() for word in self.words) if ascii_words else None)

    def found_in(self, text: str, folded: str) -> bool:
        """Whether ``text`` holds one of the words; ``folded`` is ``fold_case(text)``.

        An ASCII word the regex finds ignoring case is a substring of the folded
        text, so a text whose folded form holds none of them is passed over
        without the regex scan (a tenth of its cost).
        """
        if self._ascii_words is not None and not any(word in folded for word in self._ascii_words):
            return False
        return self.regex.search(text) is not None


@dataclass(frozen=True, slots=True)
class RunPattern:
    """An unbroken run of at least ``min_length`` characters drawn from ``alphabet``."""

    name: str
    alphabet: str
    min_length: int
    action: PatternAction = "mark_untrusted"
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _within_words: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.alphabet or self.min_length < 1:
            raise ValueError(f"pattern {self.name!r} needs an alphabet and a min_length >= 1")
        members = "".join(re.escape(character) for character in sorted(set(self.alphabet)))
        # The lookbehind lets a match start only where a run starts, so each
        # character is scanned a bounded number of times.
        object.__setattr__(self, "regex", re.compile(rf"(?<![{members}])[{members}]{{{self.min_length}}}"))
        object.__setattr__(self, "_within_words", not any(character.isspace() for character in self.alphabet))

    def found_in(self, text: str, folded: str) -> bool:
        """Whether ``text`` holds such a run. With no whitespace in the alphabet, a run lies inside one
        whitespace-free word, so a text with no word that long is passed over without the regex (in C, the
        split costs about half the scan)."""
        if self._within_words and max(map(len, text.split()), default=0) < self.min_length:
            return False
        return self.regex.search(text) is not None


ScreeningPattern = WordPattern | RunPattern

DEFAULT_PATTERNS: tuple[ScreeningPattern, ...] = (
    RunPattern("ada.base64_blob", BASE64_ALPHABET, 200),
    WordPattern("ada.execute", ("execute",)),
    WordPattern("ada.store_core_memory", ("store_core_memory",)),
    WordPattern("ada.authority", ("authority",)),
    WordPattern("ada.xmrig", ("xmrig",)),
)


# --- policy and state ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RateLimit:
    """A token bucket per origin actor: ``capacity`` envelopes, refilled over ``window_s`` seconds."""

    capacity: int = 60
    window_s: float = 100.0

    def __post_init__(self) -> None:
        if self.capacity < 1 or not self.window_s > 0:
            raise ValueError("a rate limit needs capacity >= 1 and window_s > 0")

    @property
    def refill_per_s(self) -> float:
        return self.capacity / self.window_s


@dataclass(frozen=True, slots=True)
class BorderPolicy:
    """What the guard admits.

    ``allow_external``: admit an ``external`` origin, labelled untrusted, instead
    of rejecting it. ``accepted_encodings``: the token encodings a frame may be
    accounted in; the guard never loads an encoding a sender names on its own.
    ``trusted_keys``: name → Ed25519 public key(s); when set, the stomach's
    ``digested`` step and absorption's ``yielded`` step must carry valid
    signatures, so a client with publish rights still cannot forge or alter a yield,
    and the paste must carry a trusted sender's seal. ``sender_rate`` is the limit of
    one sender, ``rate`` that of one actor inside it.
    """

    allow_external: bool = False
    rate: RateLimit = field(default_factory=RateLimit)
    sender_rate: RateLimit = field(default_factory=lambda: RateLimit(capacity=600))
    patterns: tuple[ScreeningPattern, ...] = DEFAULT_PATTERNS
    accepted_encodings: frozenset[str] = frozenset({DEFAULT_ENCODING})
    cost_encoding: str = DEFAULT_ENCODING
    trusted_keys: TrustedKeys | None = None
    # A credential in the goal (which is never rewritten): reject with ``secret.in_goal``, or admit with a finding.
    secret_in_goal: SecretInGoal = "reject"


@dataclass(slots=True)
class TokenBucket:
    """One actor's tokens left and when they were last counted (the unit shared between replicas)."""

    tokens: float
    updated_at: float


@dataclass(slots=True)
class GuardState:
    """The token buckets of the rate limit: the one piece of border state.

    The border worker gives each decision a fresh state holding the fleet's bucket
    for its actor (``organs.border.rate_store``), so replicas share one rate.
    Buckets that have refilled completely are dropped
    once the table grows past ``prune_above`` entries; a full bucket and a missing
    one behave the same, so pruning never changes a decision. Taking a token is
    atomic: a worker screens a large input on a thread while the loop screens others.
    """

    prune_above: int = 10_000
    buckets: dict[tuple[str, str], TokenBucket] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def take(self, actor: tuple[str, str], rate: RateLimit, now: float) -> bool:
        """Take one token from ``actor``'s bucket at time ``now`` (seconds); False when empty."""
        with self._lock:
            return self._take(actor, rate, now)

    def _take(self, actor: tuple[str, str], rate: RateLimit, now: float) -> bool:
        bucket = self.buckets.get(actor)
        if bucket is None:
            if len(self.buckets) >= self.prune_above:
                self._prune(rate, now)
            bucket = self.buckets[actor] = TokenBucket(float(rate.capacity), now)
        # A clock that steps back refills nothing, and the bucket counts on from the new reading: kept at the
        # old one, a step back of an hour would refill nothing for an hour.
        elapsed = max(0.0, now - bucket.updated_at)
        bucket.tokens = min(float(rate.capacity), bucket.tokens + elapsed * rate.refill_per_s)
        bucket.updated_at = now
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True

    def _prune(self, rate: RateLimit, now: float) -> None:
        # A sender's bucket has its own, larger rate; senders are few, so only actors' buckets are pruned.
        full = [
            actor
            for actor, bucket in self.buckets.items()
            if actor[0] != "sender"
            and bucket.tokens + max(0.0, now - bucket.updated_at) * rate.refill_per_s >= rate.capacity
        ]
        for actor in full:
            del self.buckets[actor]


# --- verdicts -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Admission:
    """The yield may cross. ``origin_trust`` is the label its origin earns.

    ``findings`` lists the patterns that matched; a segment named by one is
    labelled untrusted. The labels are for downstream policy, not a sanitizer.
    """

    payload: Yield
    origin_trust: Trust
    findings: tuple[Finding, ...] = ()

    def trust_of(self, segment_id: str) -> Trust:
        if self.origin_trust == "untrusted" or any(finding.segment_id == segment_id for finding in self.findings):
            return "untrusted"
        return self.origin_trust


@dataclass(frozen=True, slots=True)
class Rejection:
    """The envelope may not cross; ``reasons`` lists every failed check."""

    reasons: tuple[Reason, ...]
    meta: YieldMeta | None = None
    follow_up_of: str | None = None


# --- checks -------------------------------------------------------------------


# The steps whose signatures the guard requires: each organ signs the last step it appends.
SIGNED_STAGES = ("digested", "yielded")


def _check_schema(envelope: Envelope) -> Iterator[Reason]:
    if not isinstance(envelope.payload, Yield):
        yield Reason("schema.kind", f"the border admits only 'yield' payloads, not {envelope.kind!r}")
    if envelope.dest != BORDER.wire_name:
        yield Reason("schema.dest", f"the envelope is addressed to {envelope.dest!r}, not {BORDER.wire_name!r}")


def _check_secretion(envelope: Envelope) -> Iterator[Reason]:
    match envelope.provenance:
        case OrganSecretion(organ=organ, instance=instance):
            if organ != FEEDING_ORGAN:
                yield Reason("provenance.organ", f"secreted by {organ!r}; only {FEEDING_ORGAN!r} feeds the border")
            steps = envelope.chain.steps
            if steps and steps[-1].instance != instance:
                yield Reason(
                    "provenance.instance",
                    f"secreted by instance {instance!r} but the last step names {steps[-1].instance!r}",
                )
        case other:
            yield Reason(
                "provenance.not_secretion",
                f"bus-level provenance is {type(other).__name__}; the border only admits an organ's secretion",
            )


def _check_chain(envelope: Envelope) -> Iterator[Reason]:
    steps = envelope.chain.steps
    stages = [step.stage for step in steps]
    missing = [stage for stage in TRACT_STAGES if stage not in stages]
    duplicated = [stage for stage in TRACT_STAGES if stages.count(stage) > 1]
    unexpected = sorted({stage for stage in stages if stage not in TRACT_STAGES})
    if missing:
        yield Reason("provenance.chain.missing", f"the chain lacks the step(s) {', '.join(missing)}")
    if duplicated:
        yield Reason("provenance.chain.duplicate", f"the chain repeats the step(s) {', '.join(duplicated)}")
    if unexpected:
        yield Reason("provenance.chain.unexpected", f"the chain holds step(s) past the tract: {', '.join(unexpected)}")
    if not (missing or duplicated or unexpected) and tuple(stages) != TRACT_STAGES:
        yield Reason(
            "provenance.chain.order",
            f"the chain's steps are {', '.join(stages)}; expected {', '.join(TRACT_STAGES)}",
        )
    for step in steps:
        expected = _STAGE_ORGANS.get(step.stage)
        if expected is not None and step.organ != expected:
            yield Reason("provenance.chain.organ", f"step {step.stage!r} was taken by {step.organ!r}, not {expected!r}")
    if steps and steps[-1].envelope_id != envelope.id:
        yield Reason(
            "provenance.last_step",
            f"the last step names envelope {steps[-1].envelope_id!r}, not this envelope {envelope.id!r}",
        )


_TRACT_SIGNERS = frozenset(organ.wire_name for organ in ORGANS)


def _check_origin(origin: AnyProvenance, policy: BorderPolicy, keys: RateKeys) -> tuple[list[Reason], Trust]:
    """Reasons the origin policy gives, and the trust an admitted origin earns.

    ``system_internal`` is the tract's own provenance (the border's configuration speaks as one): a paste
    claiming it is admitted only when sealed with one of the tract's own keys, never a sender's.
    """
    match origin:
        case UserInput():
            return [], "delegated"
        case SystemInternal(component=component):
            sealed_by = None if keys.sender is None or keys.problem is not None else keys.sender[1]
            if sealed_by in _TRACT_SIGNERS:
                return [], "delegated"
            who = "an unauthenticated sender" if sealed_by is None else f"sender {sealed_by!r}"
            return [
                Reason("origin.system_internal", f"{who} may not claim the tract's own origin {component!r}")
            ], "untrusted"
        case External(uri=uri):
            if policy.allow_external:
                return [], "untrusted"
            return [Reason("origin.external", f"external origin {uri!r} is not admitted by this policy")], "untrusted"
        case OrganSecretion(organ=organ):
            return [
                Reason("origin.organ_secretion", f"an organ ({organ!r}) cannot be the origin of input")
            ], "untrusted"
        case _:
            return [Reason("provenance.origin_missing", "the chain names no origin")], "untrusted"


def _check_rate(keys: RateKeys, policy: BorderPolicy, state: GuardState, now: float) -> Iterator[Reason]:
    # The sender's limit first: a sender out of tokens spends none of its actors'.
    if keys.sender is not None and not state.take(keys.sender, policy.sender_rate, now):
        limit = policy.sender_rate
        yield Reason(
            "rate.limited", f"sender {keys.sender[1]!r} exceeded {limit.capacity} envelopes per {limit.window_s:g} s"
        )
    elif keys.actor is not None and not state.take(keys.actor, policy.rate, now):
        kind, _, sender = keys.actor[0].partition("@")
        via = f" from sender {sender!r}" if sender else ""
        yield Reason(
            "rate.limited",
            f"{kind} {keys.actor[1]!r}{via} exceeded {policy.rate.capacity} envelopes per {policy.rate.window_s:g} s",
        )


def _check_tier(envelope: Envelope, payload: Yield) -> Iterator[Reason]:
    if envelope.tier is None:
        yield Reason("tier.missing", "the envelope names no degradation tier")
        return
    if payload.meta.digestion_tier != envelope.tier:
        yield Reason(
            "tier.mismatch",
            f"meta.digestion_tier is {payload.meta.digestion_tier!r} but the envelope says {envelope.tier!r}",
        )
    for frame in payload.frames:
        if frame.tier != envelope.tier:
            yield Reason("tier.frame_mismatch", f"frame {frame.id} is tier {frame.tier!r}, not {envelope.tier!r}")


# A served frame's tokens, recounted once per process: the same frame often comes again (a deferred paste's
# follow-up, a redelivery, a paste handed in twice), and its digest, computed here, names exactly that text.
_recounted = RememberedCounts()


def _check_frame(frame: Frame, policy: BorderPolicy) -> Iterator[Reason]:
    if frame.representation == "reference":
        if frame.content is not None or frame.content_digest is not None or frame.token_cost != 0:
            yield Reason("frame.reference_content", f"reference frame {frame.id} must serve nothing and cost 0")
        return
    if frame.encoding not in policy.accepted_encodings:
        yield Reason("frame.encoding", f"frame {frame.id} is accounted in {frame.encoding!r}, which is not accepted")
        return
    if frame.content is None:
        yield Reason("frame.dishonest", f"served frame {frame.id} carries no content")
        return
    digest = digest_text(frame.content)
    if digest != frame.content_digest:
        yield Reason("frame.dishonest", f"frame {frame.id} claims digest {frame.content_digest} but serves {digest}")
    cost = _recounted.count(frame.content, digest, frame.encoding)
    if cost != frame.token_cost:
        yield Reason("frame.dishonest", f"frame {frame.id} claims {frame.token_cost} tokens but serves {cost}")


def _check_yield(envelope: Envelope, payload: Yield, policy: BorderPolicy) -> Iterator[Reason]:
    if payload.meta.original_provenance != envelope.chain.origin:
        yield Reason(
            "provenance.origin_mismatch",
            "meta.original_provenance differs from chain.origin: the origin changed on the way",
        )
    yield from _check_tier(envelope, payload)
    for frame in payload.frames:
        yield from _check_frame(frame, policy)
    if payload.encoding not in policy.accepted_encodings:
        yield Reason("cost.encoding", f"the yield is accounted in {payload.encoding!r}, which is not accepted")
        return
    expected = yield_cost(payload.goal, payload.anchors, payload.frames, payload.encoding)
    if payload.meta.actual_cost != expected:
        yield Reason("cost.actual", f"meta.actual_cost is {payload.meta.actual_cost}; the yield costs {expected}")


def _findings(payload: Yield, patterns: tuple[ScreeningPattern, ...]) -> tuple[Finding, ...]:
    return tuple(
        Finding(pattern=pattern.name, segment_id=segment_id, action=pattern.action)
        for segment_id, text in paste_segment_texts(payload)
        for folded in [fold_case(text)]
        for pattern in patterns
        if pattern.found_in(text, folded)
    )


def screen(envelope: Envelope, policy: BorderPolicy, state: GuardState, *, now: float) -> Admission | Rejection:
    """Run every check on ``envelope``; admit it or report every failure.

    ``now`` is a clock reading in seconds (monotonic is best) for the rate limit,
    passed in so the guard stays deterministic. Every envelope takes a token from its
    sender's bucket and then its actor's, whatever else fails.
    """
    origin = envelope.chain.origin
    keys = rate_keys(envelope, policy.trusted_keys)
    origin_reasons, origin_trust = _check_origin(origin, policy, keys)
    reasons = [
        *_check_schema(envelope),
        *_check_secretion(envelope),
        *_check_chain(envelope),
        *origin_reasons,
        *_check_rate(keys, policy, state, now),
    ]
    payload = envelope.payload
    if not isinstance(payload, Yield):
        return Rejection(tuple(reasons))
    reasons.extend(_check_yield(envelope, payload, policy))
    if policy.trusted_keys is not None:
        problems = [*verify_chain(envelope, policy.trusted_keys, SIGNED_STAGES), *filter(None, [keys.problem])]
        reasons.extend(Reason(problem.code, problem.message) for problem in problems)
    secret_reasons, secret_findings = screen_secrets(payload, policy.secret_in_goal)
    reasons.extend(secret_reasons)
    findings = (*_findings(payload, policy.patterns), *secret_findings)
    reasons.extend(
        Reason("screening.reject", f"pattern {finding.pattern!r} matched segment {finding.segment_id!r}")
        for finding in findings
        if finding.action == "reject"
    )
    if reasons:
        return Rejection(tuple(reasons), payload.meta, payload.follow_up_of)
    return Admission(payload, origin_trust, findings)
