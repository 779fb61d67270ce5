"""The border organ as one pure function: screen a yield, then admit it as a prompt or reject it.

``border_decide`` never raises for a bad envelope: a failed check or a prompt
that cannot be compiled becomes a ``Rejected`` envelope whose reasons say why.
The only state it touches is the guard's rate-limit buckets (``GuardState``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from envelopes.types import Admitted, Envelope, Reason, Rejected, Yield
from organs.accounting import DEFAULT_ENCODING
from organs.anatomy import BORDER
from organs.border.compiler import compile
from organs.border.guard import Admission, BorderPolicy, GuardState, Rejection, screen
from organs.border.prompt import BuiltinPromptConfig, builtin_modules, paste_modules
from organs.border.segments import PromptBudget
from organs.errors import CompileError
from organs.secretion import secrete
from organs.signing import Signer

__all__ = ["DEFAULT_BUDGET_BYTES", "DEFAULT_BUDGET_TOKENS", "BorderConfig", "border_decide", "reject_replay"]

DEFAULT_BUDGET_TOKENS = 32_768
DEFAULT_BUDGET_BYTES = 1 << 20
DEFAULT_SESSION_TTL_S = 24 * 3600.0


@dataclass(frozen=True, slots=True)
class BorderConfig:
    """Everything the border decides with: guard policy, prompt budget, built-in modules, encoding, signer.

    The worker builds it from the settings (``organs.border.worker.border_config``) and
    passes it in: the decision itself reads no environment and no file.
    """

    policy: BorderPolicy = field(default_factory=BorderPolicy)
    budget: PromptBudget = field(
        default_factory=lambda: PromptBudget(max_bytes=DEFAULT_BUDGET_BYTES, max_tokens=DEFAULT_BUDGET_TOKENS)
    )
    builtins: BuiltinPromptConfig = field(default_factory=BuiltinPromptConfig)
    encoding: str = DEFAULT_ENCODING
    signer: Signer | None = None
    session_ttl_s: float = DEFAULT_SESSION_TTL_S


def _to_brain(
    envelope: Envelope, payload: Admitted | Rejected, config: BorderConfig, *, instance: str, at: str
) -> Envelope:
    """The border's answer to ``envelope``: screened, then admitted or rejected, signed when it has a key."""
    return secrete(
        envelope,
        organ=BORDER.wire_name,
        instance=instance,
        dest="brain",
        payload=payload,
        stages=("screened", "admitted" if isinstance(payload, Admitted) else "rejected"),
        tier=envelope.tier,
        now=at,
        signer=config.signer,
    )


def _rejected(envelope: Envelope, rejection: Rejection, config: BorderConfig, *, instance: str, at: str) -> Envelope:
    payload = Rejected(reasons=rejection.reasons, meta=rejection.meta, follow_up_of=rejection.follow_up_of)
    return _to_brain(envelope, payload, config, instance=instance, at=at)


def _admit(
    envelope: Envelope,
    admission: Admission,
    config: BorderConfig,
    *,
    instance: str,
    at: str,
    delivered: Mapping[str, int] | None,
) -> Envelope:
    payload = admission.payload
    try:
        modules = (
            *builtin_modules(config.builtins),
            *paste_modules(
                payload,
                payload.meta.original_provenance,
                admission.trust_of,
                verified_encoding=config.encoding,
                delivered=delivered,
            ),
        )
        prompt = compile(modules, config.budget, config.encoding)
    except CompileError as error:
        reason = Reason(code=f"compile.{error.code}", message=str(error))
        rejection = Rejection((reason,), payload.meta, payload.follow_up_of)
        return _rejected(envelope, rejection, config, instance=instance, at=at)
    admitted = Admitted(
        prompt=prompt,
        goal=payload.goal,
        anchors=payload.anchors,
        meta=payload.meta,
        findings=admission.findings,
        follow_up_of=payload.follow_up_of,
        report=payload.report,
    )
    return _to_brain(envelope, admitted, config, instance=instance, at=at)


def border_decide(
    envelope: Envelope,
    config: BorderConfig,
    state: GuardState,
    *,
    instance: str,
    now: float,
    at: str,
    delivered: Mapping[str, int] | None = None,
) -> Envelope:
    """Screen ``envelope`` and return the ``admitted`` or ``rejected`` envelope for the brain.

    ``now`` (seconds) drives the rate limit; ``at`` (RFC 3339 UTC) stamps the new
    steps; the worker reads the clock for both. ``delivered`` maps the frames the
    envelope's session already carries to the turn that carried them; each is
    compiled as a one-line reference. Given the same envelope, config, state,
    ``now``, ``at`` and ``delivered``, the output is the same.
    """
    match screen(envelope, config.policy, state, now=now):
        case Admission() as admission:
            return _admit(envelope, admission, config, instance=instance, at=at, delivered=delivered)
        case Rejection() as rejection:
            return _rejected(envelope, rejection, config, instance=instance, at=at)


def reject_replay(
    envelope: Envelope, config: BorderConfig, *, instance: str, why: str, at: str, sequence: int
) -> Envelope:
    """The rejection of an envelope the border already admitted (or too old to tell): reason ``replay``.

    Its id is derived from the replayed message's tract ``sequence``, not as an
    outcome's, so it is never taken for (nor deduplicated against) the admission
    it repeats, each replay gets its own rejection, and a redelivery the same one.
    """
    payload = envelope.payload
    meta = payload.meta if isinstance(payload, Yield) else None
    follow_up_of = payload.follow_up_of if isinstance(payload, Yield) else None
    return secrete(
        envelope,
        organ=BORDER.wire_name,
        instance=instance,
        dest="brain",
        payload=Rejected(reasons=(Reason(code="replay", message=why),), meta=meta, follow_up_of=follow_up_of),
        stages=("screened", "rejected"),
        tier=envelope.tier,
        now=at,
        signer=config.signer,
        role=f"replay@{sequence}",
    )
