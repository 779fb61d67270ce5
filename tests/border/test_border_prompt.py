"""Built-in modules and the admitted paste as prompt modules."""

from __future__ import annotations

import pytest

from envelopes.types import External, Trust, Yield
from organs.accounting import count_tokens
from organs.border import (
    BuiltinPromptConfig,
    InvalidPromptInputError,
    PromptBudget,
    SkillInfo,
    ToolHint,
    builtin_modules,
    compile,
    frame_segment_id,
    paste_modules,
    render_frame,
)
from organs.border.prompt import (
    ANCHORS_SEGMENT_ID,
    FRAME_TOOLS,
    GOAL_SEGMENT_ID,
    SESSION_SUMMARY_KEY,
    delivered_reference,
    kernel_text,
    paste_segment_texts,
)
from tests.support.envelopes import reference_frame, served_frame, yield_envelope


def a_yield(**kwargs: object) -> Yield:
    payload = yield_envelope(**kwargs).payload
    assert isinstance(payload, Yield)
    return payload


def delegated(_segment_id: str) -> Trust:
    return "delegated"


def test_builtin_modules_cover_every_source_in_authority_order() -> None:
    config = BuiltinPromptConfig(
        kernel_instructions="kernel rules",
        workspace_instructions=("workspace doc one", "workspace doc two"),
        tool_hints=(ToolHint("grep", "search text"),),
        skills=(SkillInfo("triage", "sort a crash into a bucket"),),
        session_summary="we were debugging boot",
    )
    modules = builtin_modules(config)
    assert [(module.id, module.authority) for module in modules] == [
        ("kernel", "kernel"),
        ("workspace", "workspace"),
        ("tools", "tool"),
        ("skills", "skill"),
        ("session", "session"),
    ]
    text = compile(modules, PromptBudget()).text
    # Rendered by cache scope: global (kernel), profile (workspace, skills), session (tools, summary).
    kernel = kernel_text("kernel rules", FRAME_TOOLS)
    assert text.startswith(kernel + "\n\nworkspace doc one\n\nworkspace doc two\n\nSkills")
    assert "`@skill <id>`" in text
    assert "- triage: sort a crash into a bucket\n\ngrep: search text\n\n" in text
    assert text.endswith("we were debugging boot")


def test_the_session_summary_holds_a_replaceable_claim() -> None:
    (module,) = [
        module for module in builtin_modules(BuiltinPromptConfig(session_summary="s")) if module.id == "session"
    ]
    claim = module.segments[0].conflict
    assert claim is not None
    assert (claim.key, claim.mode) == (SESSION_SUMMARY_KEY, "replaceable")


def test_empty_sources_yield_no_modules() -> None:
    assert [module.id for module in builtin_modules(BuiltinPromptConfig())] == ["kernel"]
    assert builtin_modules(BuiltinPromptConfig(kernel_instructions="")) == ()


def test_builtin_ids_are_validated() -> None:
    with pytest.raises(InvalidPromptInputError):
        builtin_modules(BuiltinPromptConfig(skills=(SkillInfo("Bad Id", "x"),)))
    with pytest.raises(InvalidPromptInputError):
        builtin_modules(BuiltinPromptConfig(tool_hints=(ToolHint("Grep", "x"),)))


def test_the_paste_becomes_anchors_goal_and_frames() -> None:
    served, pointer = served_frame("ERROR one\nERROR two"), reference_frame("row\n" * 1999 + "row")
    payload = a_yield(goal="fix boot", anchors=("a.py", "b/"), frames=(served, pointer))
    modules = paste_modules(payload, payload.meta.original_provenance, delegated)
    assert [(module.id, module.authority) for module in modules] == [
        ("paste", "user_addition"),
        ("paste/frames/000", "user_addition"),
    ]
    anchors, goal = modules[0].segments
    assert goal.closing and anchors.closing
    assert (goal.id, goal.content, goal.budget_behavior) == (GOAL_SEGMENT_ID, "fix boot", "required")
    assert (anchors.id, anchors.content, anchors.budget_behavior) == (ANCHORS_SEGMENT_ID, "a.py\nb/", "omit")
    served_segment, pointer_segment = modules[1].segments
    assert served_segment.budget_behavior == "truncate"
    assert served_segment.content.endswith("\nERROR one\nERROR two")
    assert pointer_segment.budget_behavior == "omit"
    assert all(
        segment.provenance == payload.meta.original_provenance for module in modules for segment in module.segments
    )
    assert all(segment.cache_scope == "run" for module in modules for segment in module.segments)


def test_verified_frames_carry_their_exact_count_so_the_compiler_need_not_count_them() -> None:
    frames = (served_frame("ERROR one\nERROR two"), served_frame("  indented first line\nsecond"))
    payload = a_yield(goal="fix boot", frames=(*frames, reference_frame("row\n" * 9 + "row")))
    modules = paste_modules(payload, payload.meta.original_provenance, delegated, verified_encoding=frames[0].encoding)
    solid, indented, pointer = modules[1].segments
    assert solid.tokens == count_tokens(solid.content) and indented.tokens == count_tokens(indented.content)
    assert pointer.tokens is None
    unverified = paste_modules(payload, payload.meta.original_provenance, delegated)
    assert all(segment.tokens is None for module in unverified for segment in module.segments)
    vouched = compile(modules, PromptBudget())
    assert vouched == compile(unverified, PromptBudget())
    assert vouched.tokens == count_tokens(vouched.text)


def test_a_reference_frame_renders_as_a_one_line_pointer() -> None:
    frame = reference_frame("row\n" * 1999 + "row")
    pointer = render_frame(frame)
    assert "\n" not in pointer
    assert pointer == f"[frame {frame.id} · log · reference · 2,000 lines · {frame.full_tokens:,} tokens]"


def test_frame_segment_ids_are_valid_ids() -> None:
    frame = served_frame("x")
    assert frame_segment_id(frame) == "frame/" + frame.id[len("blake3:") :][:16]


def test_many_frames_are_split_across_modules() -> None:
    frames = tuple(served_frame(f"ERROR number {number}") for number in range(300))
    payload = a_yield(frames=frames)
    modules = paste_modules(payload, payload.meta.original_provenance, delegated)
    assert [(module.id, len(module.segments)) for module in modules] == [
        ("paste", 2),
        ("paste/frames/000", 256),
        ("paste/frames/001", 44),
    ]
    text = compile(modules, PromptBudget()).text
    assert text.index("ERROR number 0\n") < text.index("ERROR number 299")


def test_trust_comes_from_the_callback() -> None:
    payload = a_yield(origin=External(uri="https://example.com"))
    modules = paste_modules(payload, payload.meta.original_provenance, lambda segment_id: "untrusted")
    assert {segment.trust for module in modules for segment in module.segments} == {"untrusted"}


def test_an_empty_goal_and_no_anchors_give_no_head_module() -> None:
    payload = a_yield(goal="", anchors=())
    modules = paste_modules(payload, payload.meta.original_provenance, delegated)
    assert [module.id for module in modules] == ["paste/frames/000"]


def test_screening_reads_the_same_segments_the_prompt_renders() -> None:
    payload = a_yield(frames=(served_frame("ERROR x"), reference_frame("y\n" * 3)))
    modules = paste_modules(payload, payload.meta.original_provenance, delegated)
    rendered = tuple((segment.id, segment.content) for module in modules for segment in module.segments)
    assert paste_segment_texts(payload) == rendered


def test_screening_texts_are_those_of_the_payload_asked_about() -> None:
    # The last payload's texts are kept for the second read; another payload, even an equal one, is read afresh.
    first, second = a_yield(goal="the first ask"), a_yield(goal="the second ask")
    assert paste_segment_texts(first) is paste_segment_texts(first)
    for payload in (second, first, a_yield(goal="the first ask"), second):
        texts = [text for _, text in paste_segment_texts(payload)]
        modules = paste_modules(payload, payload.meta.original_provenance, delegated)
        assert payload.goal in texts
        assert texts == [segment.content for module in modules for segment in module.segments]


def test_the_kernel_names_the_frame_tools_the_host_has() -> None:
    every = kernel_text("rules.", FRAME_TOOLS)
    assert all(f"{tool}(id" in every for tool in FRAME_TOOLS)
    assert "ichor frame" not in every, "no shell command a hosted model cannot run"
    only_grep = kernel_text("rules.", ("grep_frame",))
    assert "grep_frame(id, pattern)" in only_grep and "get_frame" not in only_grep
    assert "cannot be fetched" in kernel_text("rules.", ())
    with pytest.raises(InvalidPromptInputError, match="unknown frame tools"):
        kernel_text("rules.", ("drop_frame",))


def test_the_prompt_renders_stable_material_then_evidence_then_anchors_then_the_goal() -> None:
    served = served_frame("ERROR one\nERROR two")
    payload = a_yield(goal="fix boot", anchors=("a.py",), frames=(served,))
    config = BuiltinPromptConfig(workspace_instructions=("house style",), tool_hints=(ToolHint("grep", "search"),))
    modules = (*builtin_modules(config), *paste_modules(payload, payload.meta.original_provenance, delegated))
    prompt = compile(modules, PromptBudget())
    text = prompt.text
    positions = [text.index(part) for part in ("You are the model", "house style", "grep: search", "ERROR one", "a.py")]
    assert positions == sorted(positions)
    assert text.endswith("\n\nfix boot")
    # The stable prefix is everything before the first frame, as a system message marked for caching.
    stable = text[: text.index("[frame ")].removesuffix("\n\n")
    assert prompt.stable_prefix_bytes == len(stable.encode())
    assert prompt.stable_prefix_tokens == count_tokens(stable)
    system, user = prompt.messages
    assert (system.role, system.content, system.cache_breakpoint) == ("system", stable, True)
    assert (user.role, user.cache_breakpoint) == ("user", False)
    assert system.content + "\n\n" + user.content == text
    assert compile(modules, PromptBudget()) == prompt, "deterministic"


def test_two_pastes_share_every_byte_before_the_first_frame() -> None:
    config = BuiltinPromptConfig(workspace_instructions=("house style",))
    prompts = []
    for goal, content in (("why a?", "ERROR a"), ("why b?", "WARN b\nWARN b")):
        payload = a_yield(goal=goal, frames=(served_frame(content),))
        modules = (*builtin_modules(config), *paste_modules(payload, payload.meta.original_provenance, delegated))
        prompts.append(compile(modules, PromptBudget()))
    first, second = prompts
    assert first.stable_prefix_bytes == second.stable_prefix_bytes > 0
    prefix = first.text.encode()[: first.stable_prefix_bytes]
    assert second.text.encode().startswith(prefix)
    assert first.messages[0] == second.messages[0]


def test_delivered_frames_are_one_line_per_turn_pointing_back_and_the_goal_stays_whole() -> None:
    first, second, fresh = (served_frame(f"ERROR {name}\n" * 50) for name in ("one", "two", "three"))
    payload = a_yield(goal="ERROR one", frames=(first, second, fresh))
    marked = {frame_segment_id(second)}
    modules = paste_modules(
        payload,
        payload.meta.original_provenance,
        lambda segment_id: "untrusted" if segment_id in marked else "delegated",
        delivered={first.id: 3, second.id: 3},
    )
    segments = {segment.id: segment for module in modules for segment in module.segments}
    line = segments["paste/delivered/3"]
    assert line.content == delivered_reference((first, second), 3)
    total = first.token_cost + second.token_cost
    assert line.content == (
        f"[frames {first.id[:15]}…, {second.id[7:15]}… · already in this conversation, turn 3 · {total:,} tokens]"
    )
    assert line.trust == "untrusted", "as little trusted as the least of the frames it stands for"
    assert frame_segment_id(first) not in segments and frame_segment_id(fresh) in segments
    assert segments[GOAL_SEGMENT_ID].content == "ERROR one"
