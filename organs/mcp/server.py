"""``ichor mcp``: the frame tools and resource served over stdio or streamable HTTP."""

from __future__ import annotations

import sys
from typing import Any

import mcp_types as types
import structlog
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from organs.mcp.frames import BusFrames, FrameSource, FrameUnavailable, UnknownFrame
from organs.mcp.tools import TOOL_NAMES, call_tool, frame_resource_template, list_tools, read_frame_resource
from organs.runtime.bus import BusSettings
from organs.runtime.logs import configure_logging, get_logger

__all__ = ["SERVER_INSTRUCTIONS", "build_server", "serve_http", "serve_stdio"]

SERVER_INSTRUCTIONS = (
    "Evidence frames in the prompt are compact renderings; each header names the frame's id "
    f"(blake3:...). Use {', '.join(TOOL_NAMES)} with that id to read more of a frame, or read the "
    "resource ichor://frame/<hex> for its full text."
)


def build_server(frames: FrameSource) -> Server[Any]:
    """The MCP server over ``frames``: three tools and the ``ichor://frame/{hex}`` resource template."""

    async def on_list_tools(_: Any, __: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list_tools())

    async def on_call_tool(_: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await call_tool(frames, params.name, params.arguments)

    async def on_list_resources(_: Any, __: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        # Frames are many and come and go with pastes; they are reached through the template.
        return types.ListResourcesResult(resources=[])

    async def on_list_templates(_: Any, __: types.PaginatedRequestParams | None) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[frame_resource_template()])

    async def on_read_resource(_: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        try:
            return await read_frame_resource(frames, str(params.uri))
        except (ValueError, UnknownFrame) as error:
            raise MCPError(types.INVALID_PARAMS, str(error)) from None
        except FrameUnavailable as error:
            raise MCPError(types.INTERNAL_ERROR, str(error)) from None

    return Server(
        "ichor",
        version=_version(),
        instructions=SERVER_INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_templates,
        on_read_resource=on_read_resource,
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ichor-organs")
    except PackageNotFoundError:
        return "0"


def _log_to_stderr() -> Any:
    # Over stdio, stdout is the protocol's wire: every log line goes to stderr.
    configure_logging()
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=sys.stderr))
    return get_logger("mcp")


async def serve_stdio(settings: BusSettings) -> None:
    log = _log_to_stderr()
    frames = BusFrames(settings)
    server = build_server(frames)
    log.info("mcp.serving", transport="stdio", nats=settings.url)
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await frames.close()


async def serve_http(settings: BusSettings, host: str, port: int) -> None:
    import uvicorn

    log = _log_to_stderr()
    frames = BusFrames(settings)
    server = build_server(frames)
    app = server.streamable_http_app(host=host)
    log.info("mcp.serving", transport="streamable-http", url=f"http://{host}:{port}/mcp", nats=settings.url)
    try:
        # log_config=None: uvicorn's loggers keep no handler of their own, so their records reach structlog's.
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", log_config=None)
        await uvicorn.Server(config).serve()
    finally:
        await frames.close()
