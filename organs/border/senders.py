"""Whom an envelope counts against at the border's rate limit: who really handed its paste in. Pure.

The actor a paste names is any text its sender chose, so it cannot be the limit
on its own: one sender could spend a real actor's tokens by naming them, or
escape the limit by naming a new actor each time. With trusted keys configured,
the limit is keyed by the sender whose seal (``organs.signing.seal_paste``, made
with the nkey the sender connects with) holds, and the actor is a second,
smaller limit inside that sender's: the same actor name from two senders is two
buckets. A paste whose seal is missing, unknown or broken counts against one
bucket shared by every such paste (and is rejected besides), so it can neither
drain a real sender's tokens nor escape a limit; a real seal lifted onto another
paste (``seal.mismatch``) is charged to no one. Without trusted keys nothing is
authenticated and the actor alone is the key, as it names itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from envelopes.types import AnyProvenance, Envelope, External, SystemInternal, UserInput
from organs.signing import SignatureProblem, TrustedKeys, verify_seal

__all__ = ["UNVERIFIED_SENDER", "RateKeys", "rate_actor", "rate_keys"]

# The one bucket every paste no trusted seal vouches for shares; no user may be named so (names are words).
UNVERIFIED_SENDER = "(unverified)"


@dataclass(frozen=True, slots=True)
class RateKeys:
    """The buckets one envelope takes a token from: its sender's (``None`` when nothing is
    authenticated), then its actor's inside it (``None`` when the origin names no actor)."""

    sender: tuple[str, str] | None
    actor: tuple[str, str] | None
    problem: SignatureProblem | None = None

    @property
    def keys(self) -> tuple[tuple[str, str], ...]:
        return tuple(key for key in (self.sender, self.actor) if key is not None)


def rate_actor(origin: AnyProvenance) -> tuple[str, str] | None:
    """The origin's actor as a (kind, name) pair; ``None`` for an origin that names none."""
    match origin:
        case UserInput(actor=actor):
            return "user_input", actor
        case External(uri=uri):
            return "external", uri
        case SystemInternal(component=component):
            return "system_internal", component
        case _:
            return None


def rate_keys(envelope: Envelope, trusted_keys: TrustedKeys | None) -> RateKeys:
    """The envelope's buckets, and why its seal does not hold (``problem``) when it does not."""
    actor = rate_actor(envelope.chain.origin)
    if trusted_keys is None:
        return RateKeys(sender=None, actor=actor)
    sender, problem = verify_seal(envelope, trusted_keys)
    if problem is not None and problem.code == "seal.mismatch":
        # A real sender's seal lifted onto another paste: the thief has no bucket to spend, the owner keeps theirs.
        return RateKeys(sender=None, actor=None, problem=problem)
    name = sender or UNVERIFIED_SENDER
    inside = None if actor is None else (f"{actor[0]}@{name}", actor[1])
    return RateKeys(sender=("sender", name), actor=inside, problem=problem)
