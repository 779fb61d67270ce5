"""No paste sent twice in one conversation, through the whole tract on a real nats-server."""

from __future__ import annotations

import pytest

from envelopes.types import UserInput
from organs.absorption import build_absorption
from organs.border.worker import build_border
from organs.client import chat_messages, hand_in_paste
from organs.runtime.bus import BusSettings, Tract
from organs.stomach.worker import build_stomach
from tests.conftest import running_organ
from tests.support.prompts import admitted_payload, evidence_tokens

pytestmark = pytest.mark.bus

COMPONENTS = ("api", "db", "cache", "auth", "queue", "billing", "search", "mailer")
ACTIONS = ("accepted request", "opened connection", "evicted key", "refreshed token", "enqueued job", "sent mail")


def _line(n: int) -> str:
    level = "ERROR" if n % 53 == 0 else "WARN" if n % 31 == 0 else "INFO"
    action = ACTIONS[n * 5 % len(ACTIONS)]
    stamp = f"2026-03-01T10:{n // 60 % 60:02d}:{n % 60:02d}Z"
    return f"{stamp} {level} [{COMPONENTS[n % 8]}-{n % 3}] {action} id={n * 7919 % 100000} took {n * 7 % 900} ms"


LOG = "\n".join(_line(n) for n in range(1200))
PASTE = LOG + "\n\nWhy do some jobs fail?"


async def test_a_session_gets_each_frame_once(tract: Tract, bus_settings: BusSettings) -> None:
    origin = UserInput(actor="ana")
    async with (
        running_organ("stomach", bus_settings, build_stomach(bus_settings)),
        running_organ("absorption", bus_settings, build_absorption(bus_settings)),
        running_organ("ada_border", bus_settings, build_border(bus_settings)),
    ):
        turns = [
            admitted_payload((await hand_in_paste(tract, PASTE, origin=origin, session=session, resend=resend))[1])
            for session, resend in (("chat-1", False), ("chat-1", False), ("chat-2", False), ("chat-1", True))
        ]
        first, second, other, resent = turns
        assert "already in this conversation" not in first.prompt.text
        assert "already in this conversation, turn 1" in second.prompt.text
        assert second.goal == first.goal == "Why do some jobs fail?"
        assert second.prompt.text.endswith("\n\nWhy do some jobs fail?")
        ratio = evidence_tokens(second) / evidence_tokens(first)
        print(f"second turn evidence {evidence_tokens(second)} / first {evidence_tokens(first)} = {ratio:.3f}")
        assert ratio <= 0.05
        assert evidence_tokens(other) == evidence_tokens(first), "another conversation gets the frames in full"
        assert evidence_tokens(resent) == evidence_tokens(first), "the host asked for them again"
        # Without a session nothing is remembered: the opt-in is the session id.
        _, plain = await hand_in_paste(tract, PASTE, origin=origin)
        assert evidence_tokens(admitted_payload(plain)) == evidence_tokens(first)
        system, user = chat_messages(plain)
        assert system["role"] == "system" and user["role"] == "user"
        assert user["content"].endswith("Why do some jobs fail?")
    bucket = await tract.js.key_value(tract.subjects.sessions_bucket)
    assert sorted(await bucket.keys()) == ["chat-1", "chat-2"]
