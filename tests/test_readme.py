"""Every ```python block of the README runs, as written, against a real tract.

A block that is not meant to run is fenced as something else (``text``, ``sh``). What a block leaves to the
reader (``ask_model``, ``tool_message``: the model provider's SDK) is given here as a scripted model that
asks for one frame through the real ``ichor mcp`` and answers with what it read.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from organs.absorption import build_absorption
from organs.border.worker import build_border
from organs.runtime.bus import BusSettings
from organs.stomach.worker import build_stomach
from tests.conftest import running_organ

pytestmark = pytest.mark.bus

README = Path(__file__).resolve().parents[1] / "README.md"
FRAME_ID = re.compile(r"blake3:[0-9a-f]{64}")
PASTE = (
    "Why does the import job fail at night?\n\n"
    + "\n".join(f"2026-11-30T02:0{n}:00Z INFO import batch {n} started" for n in range(8))
    + "\n2026-11-30T02:09:00Z ERROR import batch 8 failed: disk quota exceeded on /var/spool/import\n"
)


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any]


@dataclass
class Reply:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)


async def scripted_model(messages: list[dict[str, Any]], tools: list[Any]) -> Reply:
    """First asks for the whole of the first frame the prompt names, then answers with the tool's text."""
    answered = [message for message in messages if message["role"] == "tool"]
    if answered:
        return Reply(text=answered[-1]["content"])
    assert "get_frame" in {tool.name for tool in tools}
    [frame_id, *_] = FRAME_ID.findall(" ".join(message["content"] for message in messages))
    return Reply(text="", tool_calls=[ToolCall("get_frame", {"id": frame_id, "full": True})])


def tool_message(call: ToolCall, content: list[Any]) -> dict[str, Any]:
    return {"role": "tool", "name": call.name, "content": "".join(getattr(part, "text", "") for part in content)}


def test_the_readme_has_python_blocks() -> None:
    assert python_blocks(README.read_text())


async def test_every_python_block_of_the_readme_runs(
    bus_settings: BusSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICHOR_NATS_URL", bus_settings.url)
    # `ichor` (the MCP server the block starts) is this environment's.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    async with (
        running_organ("stomach", bus_settings, build_stomach(bus_settings)),
        running_organ("absorption", bus_settings, build_absorption(bus_settings)),
        running_organ("border", bus_settings, build_border(bus_settings)),
    ):
        for block in python_blocks(README.read_text()):
            namespace: dict[str, Any] = {"ask_model": scripted_model, "tool_message": tool_message}
            exec(compile(block, str(README), "exec"), namespace)
            if "turn" in namespace:
                answer = await namespace["turn"](PASTE, "readme-1")
                assert "disk quota exceeded on /var/spool/import" in answer
