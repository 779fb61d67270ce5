"""The pure side of the replay ledger: the rejection it makes, and what counts as too old to tell."""

from __future__ import annotations

from datetime import datetime

from envelopes.ids import derive_id
from envelopes.types import Rejected
from organs.border import BorderConfig, GuardState, border_decide
from organs.border.decide import reject_replay
from organs.border.ledger import older_than_ledger
from tests.support.envelopes import AT, yield_envelope


def test_a_replay_is_rejected_with_reason_replay_under_an_id_of_its_own() -> None:
    incoming = yield_envelope("Why does boot fail?")
    admitted = border_decide(incoming, BorderConfig(), GuardState(), instance="border-1", now=0.0, at=AT)
    replay = reject_replay(incoming, BorderConfig(), instance="border-1", why="admitted already", at=AT, sequence=7)
    assert isinstance(replay.payload, Rejected)
    assert [reason.code for reason in replay.payload.reasons] == ["replay"]
    assert replay.payload.meta == incoming.payload.meta  # type: ignore[union-attr]
    assert replay.trace_id == incoming.trace_id
    assert replay.id == derive_id(incoming.id, "ada_border", "replay@7") != admitted.id


def test_an_envelope_is_older_than_the_ledger_once_its_first_step_is_past_the_ttl() -> None:
    incoming = yield_envelope()
    began = datetime.fromisoformat(incoming.chain.steps[0].at.replace("Z", "+00:00")).timestamp()
    assert not older_than_ledger(incoming, began + 99.0, ttl_s=100.0)
    assert older_than_ledger(incoming, began + 101.0, ttl_s=100.0)
