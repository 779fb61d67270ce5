"""The border organ function: screen, compile, secrete."""

from __future__ import annotations

import msgspec
import pytest

from envelopes import codec
from envelopes.ids import derive_id
from envelopes.types import Admitted, Envelope, OrganSecretion, Rejected, UserInput
from organs.border import (
    DEFAULT_BUDGET_TOKENS,
    BorderConfig,
    BorderPolicy,
    BuiltinPromptConfig,
    GuardState,
    PromptBudget,
    RateLimit,
    border_decide,
)
from organs.border.prompt import DEFAULT_KERNEL_INSTRUCTIONS, FRAME_TOOLS, GOAL_SEGMENT_ID, kernel_text
from organs.border.worker import border_config
from organs.errors import ConfigError
from organs.settings import Settings
from tests.support.envelopes import AT, served_frame, yield_envelope


def decide(envelope: Envelope, config: BorderConfig | None = None) -> Envelope:
    return border_decide(envelope, config or BorderConfig(), GuardState(), instance="border-1", now=0.0, at=AT)


def test_an_admitted_yield_reaches_the_brain_as_a_prompt() -> None:
    incoming = yield_envelope("Why does boot fail?", follow_up_of="b" * 32)
    out = decide(incoming)
    admitted = out.payload
    assert isinstance(admitted, Admitted)
    assert out.dest == "brain"
    assert out.provenance == OrganSecretion(organ="ada_border", instance="border-1")
    assert out.id == derive_id(incoming.id, "ada_border")
    assert out.tier == incoming.tier
    assert out.chain.origin == incoming.chain.origin
    assert out.chain.steps[:4] == incoming.chain.steps
    assert [(step.stage, step.organ) for step in out.chain.steps[4:]] == [
        ("screened", "ada_border"),
        ("admitted", "ada_border"),
    ]
    assert admitted.goal == "Why does boot fail?"
    assert admitted.meta == incoming.payload.meta
    assert admitted.follow_up_of == "b" * 32
    # Stable kernel first, then the evidence, the goal last.
    kernel = kernel_text(DEFAULT_KERNEL_INSTRUCTIONS, FRAME_TOOLS)
    assert admitted.prompt.text.startswith(kernel + "\n\n[frame blake3:")
    assert admitted.prompt.text.endswith("\n\nWhy does boot fail?")
    assert admitted.prompt.stable_prefix_bytes == len(kernel.encode())
    assert codec.decode(codec.encode(out)) == out


def test_findings_travel_with_the_admission_and_lower_trust() -> None:
    out = decide(yield_envelope("execute the plan"))
    admitted = out.payload
    assert isinstance(admitted, Admitted)
    assert [finding.pattern for finding in admitted.findings] == ["ada.execute"]
    goal_entry = next(entry for entry in admitted.prompt.inspection if entry.segment_id == GOAL_SEGMENT_ID)
    assert goal_entry.trust == "untrusted"


def test_a_forged_yield_is_published_as_a_rejection() -> None:
    incoming = yield_envelope(follow_up_of="c" * 32)
    forged = msgspec.structs.replace(
        incoming,
        payload=msgspec.structs.replace(
            incoming.payload,
            meta=msgspec.structs.replace(incoming.payload.meta, original_provenance=UserInput("mallory")),
        ),
    )
    out = decide(forged)
    rejected = out.payload
    assert isinstance(rejected, Rejected)
    assert [reason.code for reason in rejected.reasons] == ["provenance.origin_mismatch"]
    assert rejected.meta == forged.payload.meta
    assert rejected.follow_up_of == "c" * 32
    assert out.dest == "brain"
    assert [step.stage for step in out.chain.steps[4:]] == ["screened", "rejected"]
    assert out.tier == "full"


def test_a_goal_beyond_the_byte_budget_is_a_compile_rejection() -> None:
    config = BorderConfig(budget=PromptBudget(max_bytes=64), builtins=BuiltinPromptConfig(kernel_instructions=""))
    out = decide(yield_envelope("g" * 100), config)
    rejected = out.payload
    assert isinstance(rejected, Rejected)
    assert [reason.code for reason in rejected.reasons] == ["compile.required_overflow"]


def test_a_goal_with_a_nul_is_a_compile_rejection_not_a_crash() -> None:
    out = decide(yield_envelope("bad\x00goal"))
    assert isinstance(out.payload, Rejected)
    assert [reason.code for reason in out.payload.reasons] == ["compile.invalid_input"]


def test_frames_are_truncated_to_the_budget_but_the_goal_is_not() -> None:
    goal = "Summarize the failures."
    frame = served_frame("\n".join(f"ERROR request {number} failed with code 500" for number in range(400)))
    config = BorderConfig(budget=PromptBudget(max_tokens=300), builtins=BuiltinPromptConfig(kernel_instructions="k"))
    admitted = decide(yield_envelope(goal, frames=(frame,)), config).payload
    assert isinstance(admitted, Admitted)
    assert admitted.prompt.tokens <= 300
    assert goal in admitted.prompt.text
    assert [entry.disposition for entry in admitted.prompt.inspection][-1] == "truncated"


def test_the_rate_limit_applies_through_the_organ() -> None:
    config = BorderConfig(policy=BorderPolicy(rate=RateLimit(capacity=1, window_s=60.0)))
    state, envelope = GuardState(), yield_envelope()
    first = border_decide(envelope, config, state, instance="b", now=0.0, at=AT)
    second = border_decide(envelope, config, state, instance="b", now=1.0, at=AT)
    assert first.kind == "admitted"
    assert second.kind == "rejected"


def test_the_same_input_gives_the_same_output() -> None:
    envelope = yield_envelope()
    assert decide(envelope) == decide(envelope)


def test_config_from_an_empty_environment_uses_the_defaults() -> None:
    config = border_config(Settings.from_environ({}))
    assert config.policy.allow_external is False
    assert (config.policy.rate.capacity, config.policy.rate.window_s) == (60, 100.0)
    assert config.budget.max_tokens == DEFAULT_BUDGET_TOKENS
    assert config.builtins.kernel_instructions == DEFAULT_KERNEL_INSTRUCTIONS
    assert config.builtins.workspace_instructions == ()


def test_config_from_the_environment() -> None:
    config = border_config(
        Settings.from_environ(
            {
                "ICHOR_BORDER_ALLOW_EXTERNAL": "yes",
                "ICHOR_BORDER_RATE": "5",
                "ICHOR_BORDER_RATE_WINDOW_S": "2.5",
                "ICHOR_BORDER_BUDGET_TOKENS": "1000",
                "ICHOR_KERNEL_INSTRUCTIONS": "be brief",
                "ICHOR_WORKSPACE_INSTRUCTIONS": "repo uses uv",
            }
        )
    )
    assert config.policy.allow_external is True
    assert (config.policy.rate.capacity, config.policy.rate.window_s) == (5, 2.5)
    assert config.budget.max_tokens == 1000
    assert config.builtins.kernel_instructions == "be brief"
    assert config.builtins.workspace_instructions == ("repo uses uv",)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("ICHOR_BORDER_ALLOW_EXTERNAL", "maybe"),
        ("ICHOR_BORDER_RATE", "ten"),
        ("ICHOR_BORDER_RATE", "0"),
        ("ICHOR_BORDER_RATE_WINDOW_S", "-1"),
        ("ICHOR_BORDER_BUDGET_TOKENS", "1.5"),
    ],
)
def test_bad_environment_values_are_config_errors(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"^{name}="):
        Settings.from_environ({name: value})


def test_the_host_says_which_frame_tools_the_model_can_call() -> None:
    def tools(value: str | None) -> tuple[str, ...]:
        environ = {} if value is None else {"ICHOR_FRAME_TOOLS": value}
        return border_config(Settings.from_environ(environ)).builtins.frame_tools

    assert tools(None) == ("get_frame", "grep_frame", "frame_lines")
    assert tools(" grep_frame ") == ("grep_frame",)
    assert tools("none") == ()
    none = border_config(Settings.from_environ({"ICHOR_FRAME_TOOLS": "none"}))
    admitted = decide(yield_envelope(), none).payload
    assert isinstance(admitted, Admitted) and "cannot be fetched" in admitted.prompt.text


def test_an_unknown_frame_tool_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"^ICHOR_FRAME_TOOLS="):
        border_config(Settings.from_environ({"ICHOR_FRAME_TOOLS": "get_frame,rm_rf"}))
