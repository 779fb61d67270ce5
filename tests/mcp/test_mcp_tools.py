"""The tool list, pure: what the kernel names is what ``ichor mcp`` serves."""

from __future__ import annotations

from organs.border.prompt import FRAME_TOOLS
from organs.mcp import TOOL_NAMES, list_tools
from organs.mcp.schemas import FrameLinesArgs, GetFrameArgs, GrepFrameArgs, input_schema


def test_the_kernel_names_exactly_the_tools_served() -> None:
    assert TOOL_NAMES == FRAME_TOOLS == tuple(tool.name for tool in list_tools())


def test_schemas_are_objects_generated_from_the_msgspec_types() -> None:
    for args in (GetFrameArgs, GrepFrameArgs, FrameLinesArgs):
        schema = input_schema(args)
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert "id" in schema["required"] and "$ref" not in schema
    grep = input_schema(GrepFrameArgs)["properties"]
    assert grep["context"]["default"] == 2 and grep["max_lines"]["default"] == 200
