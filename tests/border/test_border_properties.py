"""Properties of the compiler and the organ, checked on generated input."""

from __future__ import annotations

import random

import hypothesis.strategies as st
from hypothesis import given, settings

from envelopes.types import Admitted, CompiledPrompt, SystemInternal
from organs.border import (
    AUTHORITY_ORDER,
    SEPARATOR,
    BorderConfig,
    BudgetBehavior,
    CompileError,
    ConflictClaim,
    GuardState,
    PromptBudget,
    PromptModule,
    PromptSegment,
    border_decide,
    compile,
)
from organs.border.prompt import GOAL_SEGMENT_ID, escape_frame_markers
from tests.support.envelopes import AT, served_frame, yield_envelope

CONFIG = SystemInternal(component="property")
CHARACTERS = st.characters(exclude_categories=["Cs"], exclude_characters="\x00")
BEHAVIORS: tuple[BudgetBehavior, ...] = ("required", "truncate", "truncate", "omit")
TEXT = st.text(CHARACTERS, min_size=1, max_size=40)
LONG_TEXT = st.text(CHARACTERS, min_size=41, max_size=300)
SEGMENT_IDS = [f"s/{name}" for name in "abcdefghijkl"]


@st.composite
def module_lists(draw: st.DrawFn) -> list[PromptModule]:
    # One content per segment id for the whole example, so exact duplicates are
    # common; a rare fresh content exercises the id-reuse error.
    contents = {segment_id: draw(st.one_of(TEXT, LONG_TEXT)) for segment_id in SEGMENT_IDS}

    def segment() -> PromptSegment:
        segment_id = draw(st.sampled_from(SEGMENT_IDS))
        content = draw(st.just(contents[segment_id]) | TEXT) if draw(st.integers(0, 9)) == 0 else contents[segment_id]
        claim = None
        if draw(st.integers(0, 4)) == 0:
            claim = ConflictClaim(
                draw(st.sampled_from(["k1", "k2"])), draw(st.sampled_from(["protected", "replaceable"]))
            )
        behavior = draw(st.sampled_from(BEHAVIORS))
        return PromptSegment(segment_id, content, CONFIG, "trusted", "none", claim, behavior)

    module_ids = draw(st.lists(st.sampled_from([f"m/{n}" for n in range(8)]), min_size=1, max_size=5, unique=True))
    return [
        PromptModule(
            module_id,
            draw(st.sampled_from(AUTHORITY_ORDER)),
            draw(st.integers(-2, 2)),
            tuple(segment() for _ in range(draw(st.integers(1, 4)))),
        )
        for module_id in module_ids
    ]


BUDGETS = st.builds(
    PromptBudget,
    max_bytes=st.none() | st.integers(0, 400),
    max_tokens=st.none() | st.integers(0, 120),
)


def outcome(modules: list[PromptModule], budget: PromptBudget) -> CompiledPrompt | str:
    try:
        return compile(modules, budget)
    except CompileError as error:
        return type(error).__name__


@settings(max_examples=150, deadline=None)
@given(module_lists(), BUDGETS, st.randoms(use_true_random=False))
def test_module_input_order_never_changes_the_output(
    modules: list[PromptModule], budget: PromptBudget, rng: random.Random
) -> None:
    shuffled = list(modules)
    rng.shuffle(shuffled)
    assert outcome(shuffled, budget) == outcome(modules, budget)


@settings(max_examples=150, deadline=None)
@given(module_lists(), BUDGETS)
def test_every_output_byte_belongs_to_one_segment_or_a_separator(
    modules: list[PromptModule], budget: PromptBudget
) -> None:
    compiled = outcome(modules, budget)
    if isinstance(compiled, str):
        return
    raw = compiled.text.encode("utf-8")
    assert compiled.bytes == len(raw)
    ranges = sorted(entry.byte_range for entry in compiled.inspection if entry.byte_range is not None)
    cursor = 0
    for number, (start, end) in enumerate(ranges):
        if number:
            assert raw[cursor:start] == SEPARATOR.encode()
        else:
            assert start == 0
        assert start < end
        cursor = end
    assert cursor == len(raw)
    for entry in compiled.inspection:
        if entry.byte_range is None:
            assert entry.disposition in {"duplicate", "shadowed", "omitted"}
            assert entry.rendered_bytes == 0
        else:
            assert entry.disposition in {"included", "truncated"}
            assert entry.rendered_bytes == entry.byte_range[1] - entry.byte_range[0]
    if budget.max_bytes is not None:
        assert compiled.bytes <= budget.max_bytes
    if budget.max_tokens is not None:
        assert compiled.tokens <= budget.max_tokens


@settings(max_examples=60, deadline=None)
@given(
    goal=TEXT,
    anchors=st.lists(st.from_regex(r"[a-z/_.]{1,20}", fullmatch=True), max_size=3).map(tuple),
    evidence=st.lists(TEXT, max_size=3),
)
def test_the_goal_appears_verbatim_in_every_admitted_prompt(
    goal: str, anchors: tuple[str, ...], evidence: list[str]
) -> None:
    frames = tuple(served_frame(text) for text in dict.fromkeys(evidence))
    out = border_decide(
        yield_envelope(goal, anchors=anchors, frames=frames), BorderConfig(), GuardState(), instance="b", now=0.0, at=AT
    )
    admitted = out.payload
    assert isinstance(admitted, Admitted)
    assert admitted.goal == goal
    (entry,) = [entry for entry in admitted.prompt.inspection if entry.segment_id == GOAL_SEGMENT_ID]
    assert entry.byte_range is not None
    start, end = entry.byte_range
    # Verbatim, but for a line posing as a frame header, which the prompt shows escaped.
    assert admitted.prompt.text.encode("utf-8")[start:end] == escape_frame_markers(goal).encode("utf-8")
