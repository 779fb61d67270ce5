"""The absorption core (M5 tests): shape, provenance, tiers, statelessness."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from envelopes.types import Envelope, External, OrganSecretion, SystemInternal, UserInput, Yield
from organs.absorption import yield_context
from organs.accounting import yield_cost
from organs.errors import PoisonError
from tests.support.envelopes import AT, deferred_notice_envelope, digested_envelope, fresh_paste


def test_yield_has_every_required_field() -> None:
    digested = digested_envelope()
    out = yield_context(digested, "absorption-1", now=AT)
    assert isinstance(out.payload, Yield)
    assert out.kind == "yield"
    assert out.dest == "ada_border"
    assert out.provenance == OrganSecretion(organ="absorption", instance="absorption-1")
    assert out.payload.summary
    assert {e.key for e in out.payload.extractions} >= {"anchor", "frame.note", "tier_reason"}
    meta = out.payload.meta
    assert meta.source_ref == digested.payload.source_ref  # type: ignore[union-attr]
    assert meta.actual_cost == yield_cost(out.payload.goal, out.payload.anchors, out.payload.frames) > 0
    assert out.payload.goal == digested.payload.goal  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "origin", [UserInput(actor="ana"), External(uri="https://x.test/a"), SystemInternal(component="cron")]
)
def test_original_provenance_survives(origin: object) -> None:
    digested = digested_envelope(origin=origin)  # type: ignore[arg-type]
    out = yield_context(digested, "absorption-1", now=AT)
    assert out.chain.origin == origin
    assert out.payload.meta.original_provenance == origin  # type: ignore[union-attr]
    assert out.chain.steps[:-1] == digested.chain.steps
    assert out.chain.steps[-1].stage == "yielded"
    assert out.chain.steps[-1].organ == "absorption"
    assert out.chain.steps[-1].envelope_id == out.id
    assert out.chain.input_digest == digested.chain.input_digest


@pytest.mark.parametrize("tier", ["full", "shallow", "deferred"])
def test_each_tier_is_tagged(tier: str) -> None:
    digested = digested_envelope(tier=tier)  # type: ignore[arg-type]
    out = yield_context(digested, "absorption-1", now=AT)
    assert out.tier == tier
    assert out.payload.meta.digestion_tier == tier  # type: ignore[union-attr]
    assert f"at tier {tier} " in out.payload.summary  # type: ignore[union-attr]
    # The frames (each tagged with its tier by the stomach) pass through untouched.
    assert out.payload.frames == digested.payload.frames  # type: ignore[union-attr]


def test_consecutive_yields_are_independent() -> None:
    first_in, second_in = (
        digested_envelope(goal="first?", evidence="alpha"),
        digested_envelope(goal="second?", evidence="beta"),
    )
    first = yield_context(first_in, "a", now=AT)
    second = yield_context(second_in, "a", now=AT)
    assert first.id != second.id
    assert first.payload.goal == "first?" and second.payload.goal == "second?"  # type: ignore[union-attr]
    # The same input again gives the same id, whatever came between: no memory of earlier yields.
    assert yield_context(first_in, "a", now=AT).id == first.id
    assert yield_context(first_in, "a", now=first.created_at) == first


def test_output_id_is_deterministic_for_redelivery() -> None:
    digested = digested_envelope()
    assert yield_context(digested, "a", now=AT).id == yield_context(digested, "b", now=AT).id


@pytest.mark.parametrize(
    "make",
    [fresh_paste, deferred_notice_envelope, lambda: yield_context(digested_envelope(), "a", now=AT)],
    # Ids that are the same in every process, as pytest-xdist's workers must collect the same tests.
    ids=["paste", "deferred_notice", "yield"],
)
def test_a_non_digested_input_is_poison_and_only_poison(make: Callable[[], Envelope]) -> None:
    with pytest.raises(PoisonError, match="digested"):
        yield_context(make(), "a", now=AT)
