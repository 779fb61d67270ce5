"""The rate limit counts who really sent a paste (its seal), with the actor it names as a smaller limit inside."""

from __future__ import annotations

from envelopes.types import Envelope, Reason, UserInput
from organs.border.guard import BorderPolicy, GuardState, RateLimit, Rejection, screen
from organs.border.senders import UNVERIFIED_SENDER, rate_keys
from organs.signing import Signer, new_seed
from tests.support.envelopes import yield_envelope

HOST, UPSTREAM = Signer.from_seed("host", new_seed()), Signer.from_seed("upstream", new_seed())
TRUSTED: dict[str, str | list[str]] = {"host": HOST.public_key, "upstream": UPSTREAM.public_key}
# Signatures of the tract's steps are another test's subject: here only the rate's reasons are read.
POLICY = BorderPolicy(
    rate=RateLimit(capacity=2, window_s=3600.0),
    sender_rate=RateLimit(capacity=3, window_s=3600.0),
    trusted_keys=TRUSTED,
)


def sent(actor: str, sender: Signer | None) -> Envelope:
    return yield_envelope(origin=UserInput(actor=actor), sealed_by=sender)


def rate_reasons(state: GuardState, envelope: Envelope, policy: BorderPolicy = POLICY) -> list[Reason]:
    verdict = screen(envelope, policy, state, now=0.0)
    reasons = verdict.reasons if isinstance(verdict, Rejection) else ()
    return [reason for reason in reasons if reason.code == "rate.limited"]


def test_a_sealed_paste_counts_against_its_sender_and_its_actor_inside_it() -> None:
    keys = rate_keys(sent("alice", UPSTREAM), TRUSTED)
    assert (keys.sender, keys.actor, keys.problem) == (("sender", "upstream"), ("user_input@upstream", "alice"), None)


def test_without_trusted_keys_the_actor_alone_is_the_key() -> None:
    keys = rate_keys(sent("alice", UPSTREAM), None)
    assert (keys.sender, keys.actor) == (None, ("user_input", "alice"))


def test_a_sender_naming_a_real_actor_spends_only_its_own_tokens() -> None:
    state = GuardState()
    assert [rate_reasons(state, sent("alice", UPSTREAM)) for _ in range(2)] == [[], []]
    [limited] = rate_reasons(state, sent("alice", UPSTREAM))
    assert limited.message.startswith("user_input 'alice' from sender 'upstream' exceeded 2")
    # The real alice, through the host, still has all of hers.
    assert [rate_reasons(state, sent("alice", HOST)) for _ in range(2)] == [[], []]


def test_rotating_actor_names_stays_within_the_senders_limit() -> None:
    state = GuardState()
    limited = [bool(rate_reasons(state, sent(f"actor-{n}", UPSTREAM))) for n in range(10)]
    assert limited == [False] * 3 + [True] * 7
    assert rate_reasons(state, sent("actor-99", UPSTREAM))[0].message.startswith("sender 'upstream' exceeded 3")
    assert rate_reasons(state, sent("actor-0", HOST)) == []


def test_unsealed_or_forged_seals_share_one_bucket_and_spend_no_real_senders_tokens() -> None:
    state = GuardState()
    impostor = Signer.from_seed("host", new_seed())
    for n, sender in enumerate((None, impostor, None)):
        envelope = sent(f"actor-{n}", sender)
        keys = rate_keys(envelope, TRUSTED)
        assert keys.sender == ("sender", UNVERIFIED_SENDER) and keys.problem is not None
        assert rate_reasons(state, envelope) == []
    assert rate_reasons(state, sent("bob", None))[0].message.startswith(f"sender {UNVERIFIED_SENDER!r} exceeded")
    assert rate_reasons(state, sent("actor-0", HOST)) == []
