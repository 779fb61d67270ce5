"""The border's defence in depth against credentials, with the stomach's own rules.

* A secret in the goal: the goal is never rewritten, so the stomach passes it on
  and the border's policy decides. By default the yield is rejected with
  ``secret.in_goal``, naming the kind and where it stood (never the value), so the
  host can ask the user to rephrase; ``ICHOR_BORDER_SECRET_IN_GOAL=admit`` admits
  it and reports a ``secret.<kind>`` finding on the goal instead.
* A secret in anything else the border compiles (anchors, served frames): the
  stomach should have redacted it, so that is a stomach bug and the yield is
  rejected with ``secret.leak``, which says so.
"""

from __future__ import annotations

from typing import Literal

from envelopes.types import Finding, Reason, Yield
from organs.border.prompt import GOAL_SEGMENT_ID, paste_segment_texts
from organs.redaction import Hit, find_secrets

__all__ = ["SECRET_IN_GOAL_VARIABLE", "SecretInGoal", "screen_secrets"]

SecretInGoal = Literal["reject", "admit"]
SECRET_IN_GOAL_VARIABLE = "ICHOR_BORDER_SECRET_IN_GOAL"


def _where(text: str, hit: Hit) -> str:
    line = text.count("\n", 0, hit.start) + 1
    column = hit.start - (text.rfind("\n", 0, hit.start) + 1) + 1
    return f"a {hit.kind} at line {line}, column {column} ({len(hit)} characters)"


def screen_secrets(payload: Yield, in_goal: SecretInGoal) -> tuple[list[Reason], list[Finding]]:
    """The reasons to reject and the findings to report for the credentials in what the border compiles."""
    reasons: list[Reason] = []
    findings: list[Finding] = []
    for segment_id, text in paste_segment_texts(payload):
        hits = find_secrets(text)
        if not hits:
            continue
        if segment_id != GOAL_SEGMENT_ID:
            reasons.extend(
                Reason(
                    "secret.leak",
                    f"served segment {segment_id} still holds {_where(text, hit)}: the stomach should have "
                    "redacted it (a stomach bug)",
                )
                for hit in hits
            )
            continue
        action: Literal["reject", "mark_untrusted"] = "reject" if in_goal == "reject" else "mark_untrusted"
        findings.extend(Finding(f"secret.{hit.kind}", segment_id, action) for hit in hits)
        if in_goal == "reject":
            reasons.extend(
                Reason(
                    "secret.in_goal",
                    f"the goal holds {_where(text, hit)}; ask the user to rephrase without it "
                    f"({SECRET_IN_GOAL_VARIABLE}=admit admits it as a finding)",
                )
                for hit in hits
            )
    return reasons, findings
