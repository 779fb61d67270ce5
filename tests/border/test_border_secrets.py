"""The border's defence in depth (#12): a secret in the goal is policy, one in served content a stomach bug."""

from __future__ import annotations

import pytest

from envelopes.types import Admitted, Envelope, Rejected
from organs.border import BorderConfig, BorderPolicy, GuardState, border_decide
from organs.border.prompt import GOAL_SEGMENT_ID
from organs.border.worker import border_config
from organs.errors import ConfigError
from organs.settings import Settings
from tests.support.envelopes import AT, served_frame, yield_envelope

KEY = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
GOAL = f"Why is {KEY} rejected by the API?"


def decide(envelope: Envelope, config: BorderConfig | None = None) -> Envelope:
    return border_decide(envelope, config or BorderConfig(), GuardState(), instance="border-1", now=0.0, at=AT)


def test_a_secret_in_the_goal_is_rejected_by_default_saying_what_stood_where() -> None:
    out = decide(yield_envelope(GOAL))
    rejected = out.payload
    assert isinstance(rejected, Rejected)
    reason = next(reason for reason in rejected.reasons if reason.code == "secret.in_goal")
    assert "github_token at line 1, column 8" in reason.message
    assert KEY not in reason.message and "ICHOR_BORDER_SECRET_IN_GOAL=admit" in reason.message


def test_the_admit_policy_admits_the_goal_verbatim_with_a_finding() -> None:
    config = BorderConfig(policy=BorderPolicy(secret_in_goal="admit"))
    out = decide(yield_envelope(GOAL), config)
    admitted = out.payload
    assert isinstance(admitted, Admitted)
    assert admitted.goal == GOAL
    finding = next(finding for finding in admitted.findings if finding.pattern == "secret.github_token")
    assert finding.segment_id == GOAL_SEGMENT_ID and finding.action == "mark_untrusted"


@pytest.mark.parametrize("secret_in_goal", ["reject", "admit"])
def test_a_served_frame_holding_a_secret_is_a_leak_whatever_the_goal_policy(secret_in_goal: str) -> None:
    frame = served_frame(f"2025-01-01 10:00:00 ERROR auth failed token {KEY}")
    config = BorderConfig(policy=BorderPolicy(secret_in_goal=secret_in_goal))  # type: ignore[arg-type]
    out = decide(yield_envelope("Why does auth fail?", frames=(frame,)), config)
    rejected = out.payload
    assert isinstance(rejected, Rejected)
    leak = next(reason for reason in rejected.reasons if reason.code == "secret.leak")
    assert "github_token" in leak.message and "stomach bug" in leak.message and KEY not in leak.message


def test_placeholders_and_ordinary_evidence_pass() -> None:
    frame = served_frame("2025-01-01 10:00:00 ERROR auth failed token ‹secret:github_token#1›")
    assert isinstance(decide(yield_envelope("Why does auth fail?", frames=(frame,))).payload, Admitted)


def test_the_goal_policy_is_read_from_the_settings() -> None:
    assert border_config(Settings.from_environ({})).policy.secret_in_goal == "reject"
    admit = Settings.from_environ({"ICHOR_BORDER_SECRET_IN_GOAL": "admit"})
    assert border_config(admit).policy.secret_in_goal == "admit"
    with pytest.raises(ConfigError, match="ICHOR_BORDER_SECRET_IN_GOAL='allow'"):
        Settings.from_environ({"ICHOR_BORDER_SECRET_IN_GOAL": "allow"})
