"""The arguments of the frame tools as msgspec Structs, and the JSON Schemas made from them.

The Structs are the single source: ``tools/list`` publishes the schema msgspec
generates from each, and a call's arguments are converted into the Struct,
so what is advertised and what is checked cannot drift apart.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

import msgspec

from organs.mcp.grep import MAX_PATTERN_CHARS, MAX_RANGE_LINES

__all__ = [
    "FRAME_ID_PATTERN",
    "FrameLinesArgs",
    "GetFrameArgs",
    "GrepFrameArgs",
    "frame_hex",
    "input_schema",
    "parse_args",
]

# The id as frame headers print it ("blake3:<hex>"), or the bare hex of a resource URI.
FRAME_ID_PATTERN = "^(blake3:)?[0-9a-f]{64}$"

FrameId = Annotated[
    str,
    msgspec.Meta(
        pattern=FRAME_ID_PATTERN,
        description="The frame id from a frame header: 'blake3:' and 64 lowercase hex digits.",
    ),
]


class GetFrameArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: FrameId
    full: Annotated[
        bool,
        msgspec.Meta(description="true: the full text, every line as received; false: the compact rendering."),
    ] = False


class GrepFrameArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: FrameId
    pattern: Annotated[
        str,
        msgspec.Meta(
            min_length=1,
            max_length=MAX_PATTERN_CHARS,
            description=(
                "A regular expression searched in each line of the full text. Repeated groups that hold a "
                "quantifier or an alternation, and backreferences, are refused."
            ),
        ),
    ]
    context: Annotated[int, msgspec.Meta(ge=0, le=20, description="Lines shown before and after each match.")] = 2
    max_lines: Annotated[int, msgspec.Meta(ge=1, le=1000, description="Stop after this many matching lines.")] = 200
    ignore_case: Annotated[bool, msgspec.Meta(description="Match regardless of letter case.")] = False


class FrameLinesArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: FrameId
    start: Annotated[int, msgspec.Meta(ge=1, description="First line, counting from 1.")]
    end: Annotated[
        int,
        msgspec.Meta(
            ge=1, description=f"Last line, inclusive; at most {MAX_RANGE_LINES:,} lines are returned per call."
        ),
    ]


_S = TypeVar("_S", bound=msgspec.Struct)


def input_schema(struct: type[msgspec.Struct]) -> dict[str, Any]:
    """The JSON Schema of ``struct`` as an object at the root (MCP asks for ``type: object`` there)."""
    schema = msgspec.json.schema(struct)
    definitions = dict(schema.get("$defs", {}))
    root = dict(definitions.pop(struct.__name__))
    root.pop("title", None)
    if definitions:
        root["$defs"] = definitions
    return root


def parse_args(struct: type[_S], arguments: dict[str, Any] | None) -> _S:
    """``arguments`` as ``struct``; raises ``msgspec.ValidationError`` saying what is wrong."""
    return msgspec.convert(arguments or {}, struct)


def frame_hex(frame_id: str) -> str:
    """The 64 hex digits of a frame id given with or without its 'blake3:' prefix."""
    return frame_id.removeprefix("blake3:")
