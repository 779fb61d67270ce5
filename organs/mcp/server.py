"""``ichor mcp``: the frame tools and resource served over stdio or streamable HTTP."""

from __future__ import annotations

import hmac
import secrets
import socket
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import structlog
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError

from organs.mcp.frames import BusFrames, FrameSource, FrameUnavailable, UnknownFrame
from organs.mcp.sandbox import GrepPool
from organs.mcp.tools import TOOL_NAMES, call_tool, frame_resource_template, list_tools, read_frame_resource
from organs.runtime.bus import BusSettings
from organs.runtime.logs import configure_logging, get_logger
from organs.runtime.server import write_private

__all__ = ["LOOPBACK", "SERVER_INSTRUCTIONS", "bearer_token", "build_server", "serve_http", "serve_stdio"]

SERVER_INSTRUCTIONS = (
    "Evidence frames in the prompt are compact renderings; each header names the frame's id "
    f"(blake3:...). Use {', '.join(TOOL_NAMES)} with that id to read more of a frame, or read the "
    "resource ichor://frame/<hex> for its full text."
)


def build_server(frames: FrameSource, searches: GrepPool) -> Server[Any]:
    """The MCP server over ``frames``: three tools and the ``ichor://frame/{hex}`` resource template;
    ``searches`` runs ``grep_frame`` apart."""

    async def on_list_tools(_: Any, __: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list_tools())

    async def on_call_tool(_: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await call_tool(frames, params.name, params.arguments, searches)

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
    frames, searches = BusFrames(settings), GrepPool()
    server = build_server(frames, searches)
    log.info("mcp.serving", transport="stdio", nats=settings.url)
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        searches.close()
        await frames.close()


LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def bearer_token(path: Path) -> str:
    """The HTTP server's bearer token, kept in ``path`` (owner-only), made on first use."""
    if not path.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_private(path, secrets.token_urlsafe(32) + "\n")
    return path.read_text().strip()


def _hosts_allowed(host: str, extra: tuple[str, ...]) -> TransportSecuritySettings:
    """Host and Origin checks for a bind beyond loopback: the names this machine answers to, and ``extra``."""
    names = {"127.0.0.1", "localhost", "[::1]", *extra}
    if host in ("0.0.0.0", "::"):
        names |= {socket.gethostname(), socket.getfqdn()}
    else:
        names.add(f"[{host}]" if ":" in host else host)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=sorted(f"{name}:*" for name in names),
        allowed_origins=sorted(f"{scheme}://{name}:*" for name in names for scheme in ("http", "https")),
    )


def _bearer_only(app: Any, token: str, log: Any) -> Any:
    """``app`` behind a bearer token: a request without it gets 401 and is logged, the app never sees it."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                client = scope.get("client")
                log.warning("mcp.unauthorized", client=client[0] if client else None, path=scope.get("path"))
                headers = [(b"www-authenticate", b'Bearer realm="ichor"'), (b"content-type", b"text/plain")]
                await send({"type": "http.response.start", "status": 401, "headers": headers})
                await send({"type": "http.response.body", "body": b"ichor mcp: a bearer token is required\n"})
                return
        await app(scope, receive, send)

    return guarded


async def serve_http(
    settings: BusSettings, host: str, port: int, *, token_file: Path | None = None, allowed_hosts: tuple[str, ...] = ()
) -> None:
    """Streamable HTTP on ``host:port``. Beyond loopback it takes a bearer token (from ``token_file``, made
    there when missing) and checks Host and Origin against the names this machine answers to."""
    import uvicorn

    log = _log_to_stderr()
    exposed = host not in LOOPBACK
    if exposed and token_file is None:
        raise ValueError(f"binding {host} beyond loopback needs a bearer token file")
    frames, searches = BusFrames(settings), GrepPool()
    server = build_server(frames, searches)
    security = _hosts_allowed(host, allowed_hosts) if exposed else None
    app: Any = server.streamable_http_app(host=host, transport_security=security)
    if token_file is not None:
        app = _bearer_only(app, bearer_token(token_file), log)
    log.info(
        "mcp.serving",
        transport="streamable-http",
        url=f"http://{host}:{port}/mcp",
        nats=settings.url,
        bearer_token_file=None if token_file is None else str(token_file),
        allowed_hosts=None if security is None else security.allowed_hosts,
    )
    try:
        # log_config=None: uvicorn's loggers keep no handler of their own, so their records reach structlog's.
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", log_config=None)
        await uvicorn.Server(config).serve()
    finally:
        searches.close()
        await frames.close()
