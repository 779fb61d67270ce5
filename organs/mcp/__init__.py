"""The model's side of the tract: frames as Model Context Protocol tools and resources (``ichor mcp``)."""

from organs.mcp.frames import BusFrames, FrameSource, FrameUnavailable, UnknownFrame
from organs.mcp.server import SERVER_INSTRUCTIONS, build_server, serve_http, serve_stdio
from organs.mcp.tools import FRAME_URI_TEMPLATE, TOOL_NAMES, call_tool, frame_uri, list_tools

__all__ = [
    "FRAME_URI_TEMPLATE",
    "SERVER_INSTRUCTIONS",
    "TOOL_NAMES",
    "BusFrames",
    "FrameSource",
    "FrameUnavailable",
    "UnknownFrame",
    "build_server",
    "call_tool",
    "frame_uri",
    "list_tools",
    "serve_http",
    "serve_stdio",
]
