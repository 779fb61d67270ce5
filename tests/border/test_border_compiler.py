"""The prompt compiler: ordering, dedupe, conflicts, budgets, inspection, validation."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envelopes.types import CompiledPrompt, SystemInternal, UserInput
from organs.accounting import count_tokens
from organs.border import (
    TRUNCATION_MARKER,
    Authority,
    BudgetBehavior,
    CompileError,
    ConflictClaim,
    ConflictError,
    InvalidPromptInputError,
    ModuleIdReuseError,
    PromptBudget,
    PromptModule,
    PromptSegment,
    RequiredOverflowError,
    SegmentIdReuseError,
    compile,
)
from organs.border.segments import MAX_SEGMENT_BYTES

CONFIG = SystemInternal(component="test")
UNLIMITED = PromptBudget()


def segment(
    segment_id: str,
    content: str,
    *,
    behavior: BudgetBehavior = "required",
    conflict: ConflictClaim | None = None,
) -> PromptSegment:
    return PromptSegment(segment_id, content, CONFIG, "trusted", "none", conflict, behavior)


def module(module_id: str, authority: Authority, *segments: PromptSegment, priority: int = 0) -> PromptModule:
    return PromptModule(module_id, authority, priority, segments)


def dispositions(prompt_modules: list[PromptModule], budget: PromptBudget = UNLIMITED) -> dict[str, str]:
    compiled = compile(prompt_modules, budget)
    return {entry.segment_id: entry.disposition for entry in compiled.inspection}


def test_authority_then_priority_orders_the_prompt() -> None:
    compiled = compile(
        [
            module("ws", "workspace", segment("ws/a", "workspace")),
            module("low", "product", segment("p/low", "low"), priority=-1),
            module("kernel", "kernel", segment("k", "kernel")),
            module("high", "product", segment("p/high", "high"), priority=10),
        ],
        UNLIMITED,
    )
    assert compiled.text == "kernel\n\nhigh\n\nlow\n\nworkspace"
    assert compiled.bytes == len(compiled.text)
    assert compiled.tokens == count_tokens(compiled.text)
    assert [entry.segment_id for entry in compiled.inspection] == ["k", "p/high", "p/low", "ws/a"]


def test_module_id_then_source_order_break_ties() -> None:
    compiled = compile(
        [
            module("b", "tool", segment("b/1", "b1"), segment("b/2", "b2")),
            module("a", "tool", segment("a/2", "a2"), segment("a/1", "a1")),
        ],
        UNLIMITED,
    )
    assert compiled.text == "a2\n\na1\n\nb1\n\nb2"


def test_byte_ranges_are_utf8_offsets() -> None:
    compiled = compile([module("m", "user_addition", segment("a", "alpha"), segment("b", "βeta"))], UNLIMITED)
    assert compiled.text == "alpha\n\nβeta"
    assert [entry.byte_range for entry in compiled.inspection] == [(0, 5), (7, 12)]
    assert [entry.rendered_bytes for entry in compiled.inspection] == [5, 5]
    raw = compiled.text.encode()
    assert raw[7:12].decode() == "βeta"
    assert compiled.bytes == 12


def test_inspection_carries_the_labels() -> None:
    user = UserInput(actor="ada")
    labelled = PromptSegment("u/1", "text", user, "untrusted", "session", None, "omit")
    (entry,) = compile([module("m", "session", labelled)], UNLIMITED).inspection
    assert (entry.module_id, entry.provenance, entry.trust, entry.cache_scope) == ("m", user, "untrusted", "session")
    assert entry.tokens == count_tokens("text")


def test_exact_duplicates_are_emitted_once_with_a_diagnostic() -> None:
    compiled = compile(
        [
            module("a", "kernel", segment("shared", "same text")),
            module("b", "tool", segment("shared", "same text"), segment("own", "own")),
        ],
        UNLIMITED,
    )
    assert compiled.text == "same text\n\nown"
    assert [(entry.module_id, entry.disposition) for entry in compiled.inspection] == [
        ("a", "included"),
        ("b", "duplicate"),
        ("b", "included"),
    ]
    assert compiled.inspection[1].byte_range is None
    assert [(d.code, d.segment_id) for d in compiled.diagnostics] == [("duplicate", "shared")]


def test_reusing_a_segment_id_with_other_content_is_an_error() -> None:
    with pytest.raises(SegmentIdReuseError):
        compile([module("a", "kernel", segment("x", "one")), module("b", "tool", segment("x", "two"))], UNLIMITED)


def test_reusing_a_module_id_is_an_error() -> None:
    with pytest.raises(ModuleIdReuseError):
        compile([module("a", "kernel", segment("x", "one")), module("a", "tool", segment("y", "two"))], UNLIMITED)


def test_a_protected_winner_is_never_overridden() -> None:
    claim = ConflictClaim("persona", "protected")
    compiled = compile(
        [
            module("user", "user_addition", segment("u/persona", "be a pirate", conflict=claim)),
            module("kernel", "kernel", segment("k/persona", "be precise", conflict=claim)),
        ],
        UNLIMITED,
    )
    assert compiled.text == "be precise"
    assert [(d.code, d.segment_id) for d in compiled.diagnostics] == [("conflict.protected", "u/persona")]
    assert compiled.inspection[1].disposition == "shadowed"


def test_a_replaceable_winner_shadows_the_loser() -> None:
    claim = ConflictClaim("summary", "replaceable")
    compiled = compile(
        [
            module("session", "session", segment("s/summary", "fresh summary", conflict=claim)),
            module("user", "user_addition", segment("u/summary", "stale summary", conflict=ConflictClaim("summary"))),
        ],
        UNLIMITED,
    )
    assert compiled.text == "fresh summary"
    assert [(d.code, d.segment_id) for d in compiled.diagnostics] == [("conflict.shadowed", "u/summary")]


def test_equal_precedence_conflicts_fail_closed() -> None:
    claim = ConflictClaim("persona", "replaceable")
    with pytest.raises(ConflictError):
        compile(
            [
                module("a", "product", segment("a/p", "one", conflict=claim), priority=3),
                module("b", "product", segment("b/p", "two", conflict=claim), priority=3),
            ],
            UNLIMITED,
        )


def test_equal_precedence_claims_with_equal_content_are_fine() -> None:
    claim = ConflictClaim("persona")
    compiled = compile(
        [
            module("a", "product", segment("a/p", "same", conflict=claim)),
            module("b", "product", segment("b/p", "same", conflict=claim)),
        ],
        UNLIMITED,
    )
    assert compiled.text == "same"


def test_priority_inside_an_authority_settles_a_conflict() -> None:
    claim = ConflictClaim("persona")
    compiled = compile(
        [
            module("a", "product", segment("a/p", "one", conflict=claim), priority=1),
            module("b", "product", segment("b/p", "two", conflict=claim), priority=2),
        ],
        UNLIMITED,
    )
    assert compiled.text == "two"


# --- budgets -----------------------------------------------------------------------


def test_a_required_overflow_fails() -> None:
    with pytest.raises(RequiredOverflowError):
        compile([module("m", "kernel", segment("a", "12345"), segment("b", "12345"))], PromptBudget(max_bytes=11))
    compiled = compile(
        [module("m", "kernel", segment("a", "12345"), segment("b", "12345"))], PromptBudget(max_bytes=12)
    )
    assert compiled.bytes == 12


def test_a_required_token_overflow_fails() -> None:
    with pytest.raises(RequiredOverflowError):
        compile([module("m", "kernel", segment("a", "one two three four"))], PromptBudget(max_tokens=3))


def test_required_segments_are_reserved_before_optional_ones() -> None:
    compiled = compile(
        [
            module("k", "kernel", segment("k/opt", "x" * 20, behavior="omit")),
            module("u", "user_addition", segment("u/goal", "goal")),
        ],
        PromptBudget(max_bytes=10),
    )
    assert compiled.text == "goal"


def test_omit_emits_a_diagnostic() -> None:
    compiled = compile(
        [module("m", "kernel", segment("a", "kept"), segment("b", "too long to keep", behavior="omit"))],
        PromptBudget(max_bytes=10),
    )
    assert compiled.text == "kept"
    assert [(d.code, d.segment_id) for d in compiled.diagnostics] == [("budget.omitted", "b")]
    assert compiled.inspection[1].disposition == "omitted"
    assert compiled.inspection[1].byte_range is None


def test_truncate_appends_the_marker_when_it_fits() -> None:
    content = "abcdefghijklmnopqrstuvwxyz"
    compiled = compile(
        [module("m", "kernel", segment("a", "kept"), segment("b", content, behavior="truncate"))],
        PromptBudget(max_bytes=4 + 2 + 5 + len(TRUNCATION_MARKER)),
    )
    assert compiled.text == "kept\n\nabcde" + TRUNCATION_MARKER
    entry = compiled.inspection[1]
    assert entry.disposition == "truncated"
    assert entry.byte_range == (6, compiled.bytes)
    assert [d.code for d in compiled.diagnostics] == ["budget.truncated"]


def test_truncate_without_room_for_the_marker_omits() -> None:
    compiled = compile(
        [module("m", "kernel", segment("a", "kept"), segment("b", "x" * 100, behavior="truncate"))],
        PromptBudget(max_bytes=4 + 2 + len(TRUNCATION_MARKER)),
    )
    assert compiled.text == "kept"
    assert compiled.inspection[1].disposition == "omitted"
    assert [d.code for d in compiled.diagnostics] == ["budget.omitted"]


def test_truncation_cuts_on_a_utf8_boundary() -> None:
    content = "é" * 50  # two bytes each
    budget = PromptBudget(max_bytes=len(TRUNCATION_MARKER) + 7)
    compiled = compile([module("m", "kernel", segment("a", content, behavior="truncate"))], budget)
    assert compiled.text == "é" * 3 + TRUNCATION_MARKER
    assert compiled.bytes == 6 + len(TRUNCATION_MARKER)


def test_truncation_fits_an_exact_token_budget() -> None:
    content = " ".join(f"word{number}" for number in range(5_000))
    for limit in (8, 50, 333):
        compiled = compile(
            [module("m", "kernel", segment("a", content, behavior="truncate"))], PromptBudget(max_tokens=limit)
        )
        assert compiled.text.endswith(TRUNCATION_MARKER)
        assert limit - 3 <= compiled.tokens <= limit
        assert content.startswith(compiled.text.removesuffix(TRUNCATION_MARKER))


def test_truncating_a_large_segment_fits_the_budget() -> None:
    content = "log line with some numbers 12345 and words\n" * 24_000  # about 1 MiB
    compiled = compile(
        [module("m", "kernel", segment("a", content, behavior="truncate"))], PromptBudget(max_tokens=2_000)
    )
    assert 1_990 <= compiled.tokens <= 2_000
    assert content.startswith(compiled.text.removesuffix(TRUNCATION_MARKER))


def test_separators_count_against_the_budget() -> None:
    compiled = compile(
        [module("m", "kernel", segment("a", "aaaa"), segment("b", "bbbb", behavior="omit"))],
        PromptBudget(max_bytes=9),
    )
    assert compiled.text == "aaaa"
    compiled = compile(
        [module("m", "kernel", segment("a", "aaaa"), segment("b", "bbbb", behavior="omit"))],
        PromptBudget(max_bytes=10),
    )
    assert compiled.text == "aaaa\n\nbbbb"


def test_a_token_budget_is_never_exceeded() -> None:
    texts = [f"segment number {number} says hello" for number in range(12)]
    segments = [segment(f"s/{number}", text, behavior="omit") for number, text in enumerate(texts)]
    compiled = compile([module("m", "tool", *segments)], PromptBudget(max_tokens=40))
    assert 0 < compiled.tokens <= 40
    assert compiled.tokens == count_tokens(compiled.text)


def test_a_fully_optional_prompt_may_be_empty() -> None:
    compiled = compile([module("m", "tool", segment("a", "optional", behavior="omit"))], PromptBudget(max_bytes=3))
    assert compiled.text == ""
    assert (compiled.bytes, compiled.tokens) == (0, 0)
    assert [d.code for d in compiled.diagnostics] == ["budget.omitted", "prompt.empty"]


def test_no_modules_compile_to_an_empty_prompt() -> None:
    compiled = compile([], UNLIMITED)
    assert compiled.text == ""
    assert compiled.inspection == ()


# --- validation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad_id",
    ["", "Upper", "has space", "blake3:abc", "a/../b", "x" * 129, "tab\t", "ünï"],
)
def test_ids_are_validated(bad_id: str) -> None:
    with pytest.raises(InvalidPromptInputError):
        segment(bad_id, "text")
    with pytest.raises(InvalidPromptInputError):
        module(bad_id, "kernel", segment("ok", "text"))
    with pytest.raises(InvalidPromptInputError):
        ConflictClaim(bad_id)


def test_good_ids_are_accepted() -> None:
    for good in ("a", "frame/0123abcd", "x" * 128, "a.b_c-d/e", "0"):
        assert segment(good, "text").id == good


@pytest.mark.parametrize("content", ["", "nul\x00inside", "\ud800", "x" * (MAX_SEGMENT_BYTES + 1)])
def test_segment_content_is_validated(content: str) -> None:
    with pytest.raises(InvalidPromptInputError):
        segment("a", content)


def test_a_segment_may_hold_exactly_one_mebibyte() -> None:
    assert len(segment("a", "x" * MAX_SEGMENT_BYTES).content) == MAX_SEGMENT_BYTES


def test_a_vouched_count_is_what_fitting_and_inspection_use() -> None:
    # The caller vouches for counts (the border, for frames its guard verified); the total is counted whole.
    vouched = PromptSegment("a", "alpha beta", CONFIG, "trusted", "none", None, "omit", tokens=1_000)
    prompt = compile([module("m", "kernel", vouched, segment("b", "gamma"))], PromptBudget(max_tokens=500))
    assert [entry.disposition for entry in prompt.inspection] == ["omitted", "included"]
    assert prompt.text == "gamma" and prompt.tokens == count_tokens("gamma")


def test_modules_are_validated() -> None:
    with pytest.raises(InvalidPromptInputError):
        PromptModule("m", "kernel", 0, ())
    with pytest.raises(InvalidPromptInputError):
        PromptModule("m", "kernel", 0, tuple(segment(f"s/{n}", "x") for n in range(257)))
    with pytest.raises(InvalidPromptInputError):
        PromptModule("m", "root", 0, (segment("a", "x"),))  # type: ignore[arg-type]
    with pytest.raises(InvalidPromptInputError):
        PromptModule("m", "kernel", 10_000, (segment("a", "x"),))
    with pytest.raises(InvalidPromptInputError):
        PromptSegment("a", "x", CONFIG, "sanitized", "none")  # type: ignore[arg-type]
    with pytest.raises(InvalidPromptInputError):
        PromptSegment("a", "x", CONFIG, "trusted", tokens=-1)
    with pytest.raises(InvalidPromptInputError):
        PromptSegment("a", "x", CONFIG, "trusted", tokens=True)
    with pytest.raises(InvalidPromptInputError):
        PromptBudget(max_bytes=-1)
    assert len(PromptModule("m", "kernel", 0, tuple(segment(f"s/{n}", "x") for n in range(256))).segments) == 256


def test_compile_errors_share_one_root_with_a_code() -> None:
    for error in (InvalidPromptInputError, ModuleIdReuseError, SegmentIdReuseError, ConflictError):
        assert issubclass(error, CompileError)
    assert {RequiredOverflowError.code, ConflictError.code} == {"required_overflow", "conflict"}


def test_a_join_that_tokenizes_longer_than_its_parts_is_refitted() -> None:
    first, second = "b\n   \n", "aa"
    additive = count_tokens(first) + count_tokens("\n\n") + count_tokens(second)
    assert count_tokens(first + "\n\n" + second) > additive  # the case this guards against
    compiled = compile(
        [module("m", "kernel", segment("a", first), segment("b", second, behavior="omit"))],
        PromptBudget(max_tokens=additive),
    )
    assert compiled.text == first
    assert compiled.tokens <= additive


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(alphabet="ab.;:\n -é1", min_size=1, max_size=4000), min_size=20, max_size=40))
def test_a_large_prompt_counted_in_shares_matches_one_encode(contents: list[str]) -> None:
    # Large enough that the whole-prompt count is cut into shares counted in parallel.
    segments = [segment(f"s/{index}", content * 3) for index, content in enumerate(contents) if content.strip()]
    if not segments:
        return
    compiled = compile([module("m", "workspace", *segments)], UNLIMITED)
    assert compiled.tokens == count_tokens(compiled.text)


def scoped(segment_id: str, content: str, scope: str, *, closing: bool = False) -> PromptSegment:
    return PromptSegment(segment_id, content, CONFIG, "trusted", scope, None, "required", closing=closing)  # type: ignore[arg-type]


def test_rendering_follows_cache_scope_then_precedence_and_closing_segments_come_last() -> None:
    compiled = compile(
        [
            module("ask", "user_addition", scoped("ask/goal", "goal", "run", closing=True)),
            module(
                "kernel", "kernel", scoped("k/run", "kernel-run", "run"), scoped("k/global", "kernel-global", "global")
            ),
            module("tools", "tool", scoped("t", "tool-session", "session")),
            module("ws", "workspace", scoped("w", "workspace-profile", "profile"), scoped("w/none", "ws-none", "none")),
        ],
        UNLIMITED,
    )
    assert compiled.text.split("\n\n") == [
        "kernel-global",
        "workspace-profile",
        "tool-session",
        "kernel-run",
        "ws-none",
        "goal",
    ]
    # Inspection stays in precedence order; each byte range points at its own text.
    assert [entry.segment_id for entry in compiled.inspection] == ["k/run", "k/global", "w", "w/none", "t", "ask/goal"]
    raw = compiled.text.encode()
    for entry in compiled.inspection:
        assert entry.byte_range is not None
        start, end = entry.byte_range
        assert raw[start:end].decode() in compiled.text.split("\n\n")
    stable = "kernel-global\n\nworkspace-profile\n\ntool-session"
    assert compiled.stable_prefix_bytes == len(stable)
    assert compiled.stable_prefix_tokens == count_tokens(stable)
    assert [(message.role, message.content, message.cache_breakpoint) for message in compiled.messages] == [
        ("system", stable, True),
        ("user", "kernel-run\n\nws-none\n\ngoal", False),
    ]


def test_without_stable_segments_the_prompt_is_one_user_message() -> None:
    compiled = compile([module("m", "user_addition", scoped("a", "alpha", "run"))], UNLIMITED)
    assert compiled.stable_prefix_bytes == compiled.stable_prefix_tokens == 0
    assert [(message.role, message.content) for message in compiled.messages] == [("user", "alpha")]


def test_the_encoded_prompt_carries_its_text_once_and_its_messages_come_back_from_it() -> None:
    compiled = compile(
        [
            module("kernel", "kernel", scoped("k", "kernel-global-é", "global")),
            module("ask", "user_addition", scoped("ask/goal", "the goal", "run", closing=True)),
        ],
        UNLIMITED,
    )
    wire = msgspec.msgpack.encode(compiled)
    assert wire.count(b"the goal") == 1
    decoded = msgspec.msgpack.decode(wire, type=CompiledPrompt)
    assert [(message.role, message.content, message.cache_breakpoint) for message in decoded.messages] == [
        ("system", "kernel-global-é", True),
        ("user", "the goal", False),
    ]


def test_closing_must_be_a_bool() -> None:
    with pytest.raises(InvalidPromptInputError, match="closing"):
        PromptSegment("a", "x", CONFIG, "trusted", closing="yes")  # type: ignore[arg-type]
