"""The frame tools and the frame resource: what each returns, and every way each can fail.

A tool never raises to the protocol for something the model can act on (an
unknown id, a refused pattern, bad arguments, the bus away): it returns a
result with ``is_error`` and a message saying what went wrong and what to try.
Every result that names a frame links its full text as a ``resource_link`` to
``ichor://frame/<hex>``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
import msgspec

from envelopes.types import Frame
from organs.mcp.frames import FrameSource, FrameUnavailable
from organs.mcp.grep import MAX_LINE_CHARS, MAX_RANGE_LINES, PatternRefused, line_range, safe_pattern
from organs.mcp.sandbox import GrepPool, SearchRefused
from organs.mcp.schemas import FrameLinesArgs, GetFrameArgs, GrepFrameArgs, frame_hex, input_schema, parse_args
from organs.runtime.logs import get_logger

__all__ = [
    "FRAME_URI_PREFIX",
    "FRAME_URI_TEMPLATE",
    "TOOL_NAMES",
    "call_tool",
    "frame_resource_template",
    "frame_uri",
    "list_tools",
    "read_frame_resource",
]

_log = get_logger("mcp")

FRAME_URI_PREFIX = "ichor://frame/"
FRAME_URI_TEMPLATE = FRAME_URI_PREFIX + "{hex}"


class ToolFailure(Exception):
    """A failure the model can act on; becomes a tool result with ``is_error``."""


def frame_uri(frame_id: str) -> str:
    return FRAME_URI_PREFIX + frame_hex(frame_id)


def _frame_id(given: str) -> str:
    return "blake3:" + frame_hex(given)


def _link(frame: Frame) -> types.ResourceLink:
    return types.ResourceLink(
        uri=frame_uri(frame.id),
        name=frame.title or frame_hex(frame.id)[:16],
        title=f"{frame.kind} frame, full text ({frame.lines:,} lines)",
        description=f"The full text of frame {frame.id}: {frame.full_bytes:,} bytes, {frame.full_tokens:,} tokens.",
        mime_type="text/plain",
        size=frame.full_bytes,
    )


def _text(text: str) -> types.TextContent:
    return types.TextContent(text=text)


async def _get_frame(frames: FrameSource, args: GetFrameArgs, _: GrepPool) -> list[types.ContentBlock]:
    frame = await frames.frame(_frame_id(args.id), full=args.full)
    if frame.content is None:
        header = (
            f"[frame {frame.id} · {frame.kind} · reference · {frame.lines:,} lines · {frame.full_tokens:,} tokens]\n"
            "Not rendered yet; ask with full=true for its text, or use grep_frame and frame_lines."
        )
        return [_text(header), _link(frame)]
    size = f"{frame.representation} · {frame.token_cost:,} of {frame.full_tokens:,} tokens · {frame.lines:,} lines"
    return [_text(f"[frame {frame.id} · {frame.kind} · {size}]\n{frame.content}"), _link(frame)]


def _numbered(number: int, mark: str, line: str) -> str:
    return f"{number}{mark}{line}"


async def _grep_frame(frames: FrameSource, args: GrepFrameArgs, searches: GrepPool) -> list[types.ContentBlock]:
    try:
        safe_pattern(args.pattern, ignore_case=args.ignore_case)
    except PatternRefused as error:
        raise ToolFailure(f"pattern refused: {error}") from None
    frame = await frames.frame(_frame_id(args.id), full=True)
    try:
        result = await searches.grep(
            frame.content or "",
            args.pattern,
            ignore_case=args.ignore_case,
            context=args.context,
            max_matches=args.max_lines,
        )
    except SearchRefused as error:
        raise ToolFailure(str(error)) from None
    body: list[str] = []
    previous = 0
    for number, is_match, line in result.shown:
        if previous and number > previous + 1:
            body.append("--")
        body.append(_numbered(number, ":" if is_match else "-", line))
        previous = number
    notes = [f"stopped: {result.stopped}"] if result.stopped else []
    if result.long_lines:
        notes.append(
            f"{result.long_lines:,} lines are longer than {MAX_LINE_CHARS:,} characters; only their start was searched"
        )
    header = (
        f"[grep {frame.id} · /{args.pattern}/ · {result.matches:,} matching lines in {result.searched_lines:,} "
        f"of {result.total_lines:,} · 'N:' a match, 'N-' context]"
    )
    return [_text("\n".join([header, *notes, *body])), _link(frame)]


async def _frame_lines(frames: FrameSource, args: FrameLinesArgs, _: GrepPool) -> list[types.ContentBlock]:
    frame = await frames.frame(_frame_id(args.id), full=True)
    try:
        selected = line_range(frame.content or "", args.start, args.end)
    except ValueError as error:
        raise ToolFailure(str(error)) from None
    header = f"[lines {selected.start:,}–{selected.end:,} of {selected.total_lines:,} · frame {frame.id}]"
    notes = []
    if selected.clamped and selected.end < selected.total_lines:
        notes.append(f"at most {MAX_RANGE_LINES:,} lines per call; continue with start={selected.end + 1}")
    body = [_numbered(selected.start + offset, ":", line) for offset, line in enumerate(selected.lines)]
    return [_text("\n".join([header, *notes, *body])), _link(frame)]


@dataclass(frozen=True, slots=True)
class _Tool:
    args: type[msgspec.Struct]
    run: Callable[[FrameSource, Any, GrepPool], Awaitable[list[types.ContentBlock]]]
    description: str


_TOOLS: dict[str, _Tool] = {
    "get_frame": _Tool(
        GetFrameArgs,
        _get_frame,
        "Fetch an evidence frame by the id in its header: the compact rendering the prompt carries, "
        "or with full=true every line as the user pasted it (secrets redacted).",
    ),
    "grep_frame": _Tool(
        GrepFrameArgs,
        _grep_frame,
        "Search a frame's full text for a regular expression; returns the matching lines with their "
        "line numbers and context. Bounded in time and output; a pattern that could run away is refused.",
    ),
    "frame_lines": _Tool(
        FrameLinesArgs,
        _frame_lines,
        f"Read lines start..end (1-based, inclusive) of a frame's full text, at most {MAX_RANGE_LINES:,} per call.",
    ),
}
TOOL_NAMES: tuple[str, ...] = tuple(_TOOLS)


def list_tools() -> list[types.Tool]:
    return [
        types.Tool(
            name=name,
            description=tool.description,
            input_schema=input_schema(tool.args),
            annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
        )
        for name, tool in _TOOLS.items()
    ]


def _failure(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[_text(message)], is_error=True)


async def call_tool(
    frames: FrameSource, name: str, arguments: dict[str, Any] | None, searches: GrepPool
) -> types.CallToolResult:
    """Run tool ``name``; every failure is a result with ``is_error``, never an exception."""
    tool = _TOOLS.get(name)
    if tool is None:
        return _failure(f"unknown tool {name!r}; the tools are {', '.join(TOOL_NAMES)}")
    try:
        args = parse_args(tool.args, arguments)
    except msgspec.ValidationError as error:
        return _failure(f"bad arguments for {name}: {error}")
    try:
        return types.CallToolResult(content=await tool.run(frames, args, searches))
    except (ToolFailure, FrameUnavailable) as error:
        return _failure(f"{name}: {error}")
    except Exception as error:
        # Anything else is this server's fault, yet still a tool error the model can read, never a bare
        # protocol error; the log has the details.
        _log.exception("mcp.tool_failed", tool=name)
        return _failure(f"{name}: the server failed to answer ({type(error).__name__}); try again or another tool")


def frame_resource_template() -> types.ResourceTemplate:
    return types.ResourceTemplate(
        name="frame",
        title="Evidence frame (full text)",
        uri_template=FRAME_URI_TEMPLATE,
        description="The full text of an evidence frame; {hex} is the 64 hex digits of its id.",
        mime_type="text/plain",
    )


async def read_frame_resource(frames: FrameSource, uri: str) -> types.ReadResourceResult:
    """The full text behind ``ichor://frame/<hex>``; raises ``ValueError`` for another URI."""
    hex_digits = uri.removeprefix(FRAME_URI_PREFIX)
    if not uri.startswith(FRAME_URI_PREFIX) or len(hex_digits) != 64 or hex_digits.strip("0123456789abcdef"):
        raise ValueError(f"not a frame URI: {uri!r}; expected {FRAME_URI_TEMPLATE} with 64 lowercase hex digits")
    frame = await frames.frame(_frame_id(hex_digits), full=True)
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type="text/plain", text=frame.content or "")]
    )
