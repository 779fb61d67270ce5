"""The ``ichor up`` supervisor: one worker process per organ, restarted when it dies or stops making progress.

With a liveness directory, each worker touches its own file there while it makes progress
(``organs.runtime.liveness``); one whose file has not been touched for ``stall_after_s`` is killed
and restarted like a worker that died.

Every worker writes its log lines to its own pipe, and the supervisor copies them
to its own output a whole line at a time, so that no line ever holds parts of two
workers' log objects. The data directory of the embedded server belongs to one
``ichor up`` at a time: a second one finds it locked and refuses to start.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, BinaryIO

from organs.errors import EmbeddedServerError, IchorError
from organs.runtime.liveness import STALE_AFTER_S, beat_age_s
from organs.runtime.server import EmbeddedServer, server_line

__all__ = [
    "DataDirectoryInUse",
    "ServerKeeper",
    "Supervisor",
    "forward_lines",
    "lock_data_directory",
    "log_server_line",
    "spawn_worker",
    "worker_arguments",
]

LOCK_FILE = ".ichor-up.lock"
# One line at a time reaches each output, whichever worker it came from.
_OUTPUT_LOCK = threading.Lock()


class DataDirectoryInUse(IchorError):
    """Another ``ichor up`` holds the data directory."""


def lock_data_directory(data: Path) -> IO[str]:
    """Take the data directory for this process until it exits; keep the returned file open meanwhile.

    Two servers writing one JetStream store lose acknowledged writes, so the second is refused.
    """
    data.mkdir(parents=True, exist_ok=True)
    handle = (data / LOCK_FILE).open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown"
        handle.close()
        raise DataDirectoryInUse(
            f"data directory {data} is in use by another ichor up (pid {holder}); stop it or pass another --data"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def forward_lines(source: IO[bytes], sink: BinaryIO) -> None:
    """Copy ``source`` to ``sink`` whole line by whole line until ``source`` ends."""
    for line in iter(source.readline, b""):
        with _OUTPUT_LOCK:
            sink.write(line if line.endswith(b"\n") else line + b"\n")
            sink.flush()
    source.close()


def worker_arguments(organ: str, nats_url: str, log_level: str | None = None) -> list[str]:
    """What follows ``python`` to run ``ichor worker <organ>``: the one way every spawner starts a worker."""
    level = ["--log-level", log_level] if log_level else []
    return ["-m", "organs.cli", *level, "worker", organ, "--nats", nats_url]


def spawn_worker(
    organ: str,
    nats_url: str,
    *,
    env: Mapping[str, str] | None = None,
    log_level: str | None = None,
    **popen: Any,
) -> subprocess.Popen[bytes]:
    """``ichor worker <organ>`` as its own process, with this environment plus ``env``."""
    arguments = [sys.executable, *worker_arguments(organ, nats_url, log_level)]
    return subprocess.Popen(arguments, env={**os.environ, **(env or {})}, **popen)


class Supervisor:
    """Runs one process per organ and restarts any that dies.

    A worker that dies soon after it started is restarted after a delay that
    doubles each time (up to ``MAX_RESTART_DELAY_S``), so a worker that cannot
    start does not spin; one that ran for a while restarts at once.
    """

    STABLE_AFTER_S = 10.0
    MAX_RESTART_DELAY_S = 30.0

    def __init__(
        self,
        nats_url: str,
        log: Any,
        environments: dict[str, dict[str, str]] | None = None,
        log_level: str = "info",
        liveness_dir: Path | None = None,
        stall_after_s: float = STALE_AFTER_S,
    ) -> None:
        self.liveness_dir = liveness_dir
        self.stall_after_s = stall_after_s
        self.nats_url = nats_url
        self.log_level = log_level
        self.log = log
        self.environments = environments or {}
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.started_at: dict[str, float] = {}
        self.quick_failures: dict[str, int] = {}
        self.restart_at: dict[str, float] = {}
        self.spawned_wall: dict[str, float] = {}
        self.forwarders: list[threading.Thread] = []

    def _liveness_file(self, organ: str) -> Path | None:
        return None if self.liveness_dir is None else self.liveness_dir / organ

    def spawn(self, organ: str) -> None:
        environment = {"ICHOR_NATS_URL": self.nats_url, **self.environments.get(organ, {})}
        liveness = self._liveness_file(organ)
        if liveness is not None:
            liveness.parent.mkdir(parents=True, exist_ok=True)
            environment["ICHOR_LIVENESS_FILE"] = str(liveness)
        child = spawn_worker(
            organ,
            self.nats_url,
            env=environment,
            log_level=self.log_level,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.forwarders = [thread for thread in self.forwarders if thread.is_alive()]
        for source, sink in ((child.stdout, sys.stdout.buffer), (child.stderr, sys.stderr.buffer)):
            forwarder = threading.Thread(target=forward_lines, args=(source, sink), daemon=True)
            forwarder.start()
            self.forwarders.append(forwarder)
        self.children[organ] = child
        self.started_at[organ] = time.monotonic()
        self.spawned_wall[organ] = time.time()
        self.restart_at.pop(organ, None)
        self.log.info("supervisor.spawned", worker=organ, pid=self.children[organ].pid)

    def check(self) -> None:
        now = time.monotonic()
        for organ, child in list(self.children.items()):
            if organ in self.restart_at:
                if now >= self.restart_at[organ]:
                    self.spawn(organ)
                continue
            code = child.poll()
            if code is None:
                self._unless_stalled(organ, child)
                continue
            quick = now - self.started_at[organ] < self.STABLE_AFTER_S
            self.quick_failures[organ] = self.quick_failures.get(organ, 0) + 1 if quick else 0
            delay = min(self.MAX_RESTART_DELAY_S, 0.5 * 2 ** self.quick_failures[organ]) if quick else 0.0
            self.log.error("supervisor.worker_exited", worker=organ, exit_code=code, action="restart", delay_s=delay)
            self.restart_at[organ] = now + delay

    def _unless_stalled(self, organ: str, child: subprocess.Popen[bytes]) -> None:
        """Kill a running worker that has stopped making progress; the next check restarts it."""
        liveness = self._liveness_file(organ)
        if liveness is None:
            return
        silent_s = beat_age_s(liveness, self.spawned_wall[organ])
        if silent_s <= self.stall_after_s:
            return
        self.log.error(
            "supervisor.worker_stalled",
            worker=organ,
            pid=child.pid,
            silent_s=round(silent_s, 1),
            stall_after_s=self.stall_after_s,
            action="kill",
        )
        child.kill()
        child.wait()

    def stop(self, timeout: float = 15.0) -> None:
        for child in self.children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for organ, child in self.children.items():
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.log.warning("supervisor.kill", worker=organ)
                child.kill()
                child.wait()
        # A forwarder still writing a worker's last lines while the interpreter shuts down aborts it (SIGABRT:
        # stdout's lock cannot be taken at shutdown); each ends once its worker's pipe closes.
        for forwarder in self.forwarders:
            forwarder.join(timeout=max(0.1, deadline - time.monotonic()))


def log_server_line(log: Any, line: str) -> None:
    """One line of the embedded server's output as a structured ``nats.server`` event at the server's level."""
    if not line.strip():
        return
    said = server_line(line)
    getattr(log, said.level)(
        "nats.server", message=said.message, server_pid=said.server_pid, server_time=said.server_time
    )


class ServerKeeper:
    """Restarts ``ichor up``'s embedded server when its process ends, on the same data directory and port, and
    reopens its storage in place when the storage failed and room came back.

    The organs reconnect on their own (they retry four times a second). A server that cannot be started
    again within ``RESTART_ATTEMPTS`` raises ``EmbeddedServerError``: ``ichor up`` then stops everything
    and exits non-zero rather than run organs that have no bus.

    A server whose disk filled says so in its log ("no space left on device"; JetStream "out of resources,
    will be DISABLED") and stays that way: a file store that met a write error keeps it (nats-server 2.15:
    every later write to that stream fails with the same "no space left" long after space is freed), and a
    reload of the same configuration changes nothing, for the server reloads only what changed. Once the disk
    under its data directory has ``ROOM_BYTES`` more free than when it failed, the keeper has the server
    reload its configuration twice, JetStream off then on: the server shuts JetStream down and starts it again
    in the same process, which reopens every store from disk, and no client is disconnected. Only when the
    server does not confirm a reload within ``RELOAD_TIMEOUT_S`` is it restarted instead. What the organs hold
    meanwhile is retried, not spent (``organs.runtime.settling``).
    """

    RESTART_ATTEMPTS = 3
    RETRY_DELAY_S = 1.0
    ROOM_BYTES = 1 << 20
    # A storage failure is given this long to be a passing one before the storage is reopened.
    STORAGE_SETTLE_S = 2.0
    # A reload takes the server milliseconds; one unconfirmed this long is taken to have failed.
    RELOAD_TIMEOUT_S = 5.0

    def __init__(self, server: EmbeddedServer, log: Any, server_log: Any = None) -> None:
        self.server = server
        self.log = log
        self.server_log = server_log if server_log is not None else log
        self.restarts = 0
        self.reopened = 0
        # When the server said its storage failed (monotonic), and the disk's free bytes then.
        self._storage_failed_at: float | None = None
        self._free_then = 0
        self._reloaded = threading.Event()

    def heard(self, line: str) -> None:
        """The server's ``on_line``: log the line, and note a storage failure or a finished reload it reports."""
        log_server_line(self.server_log, line)
        if _RELOADED in line:
            self._reloaded.set()
        if self._storage_failed_at is None and _STORAGE_FAILED.search(line):
            self._free_then = _free_bytes(self.server.data_dir)
            self._storage_failed_at = time.monotonic()

    def check(self) -> None:
        if not self.server.running:
            code, pid = self.server.exit_code, self.server.pid
            self.log.error(
                "nats.embedded_exited",
                pid=pid,
                exit_code=code,
                url=self.server.url,
                data_dir=str(self.server.data_dir),
                action="restart",
                output=self.server.output_tail(5),
            )
            self._start_again(pid, code, "exited")
        elif self._storage_failed_at is not None:
            self._unless_storage_stuck()

    def _unless_storage_stuck(self) -> None:
        assert self._storage_failed_at is not None
        free = _free_bytes(self.server.data_dir)
        settled = time.monotonic() - self._storage_failed_at >= self.STORAGE_SETTLE_S
        if not settled or free < self._free_then + self.ROOM_BYTES:
            return
        pid = self.server.pid
        self._storage_failed_at = None
        began = time.monotonic()
        room = {"pid": pid, "free_bytes": free, "free_bytes_at_failure": self._free_then}
        if self._reload_jetstream(False) and self._reload_jetstream(True):
            self.reopened += 1
            took_s = round(time.monotonic() - began, 3)
            self.log.warning("nats.embedded_storage_reopened", **room, action="reload", took_s=took_s)
            return
        self.log.error(
            "nats.embedded_storage_recovered",
            **room,
            action="restart",
            why=f"the server confirmed no configuration reload within {self.RELOAD_TIMEOUT_S:.0f} s",
        )
        self.server.stop()
        self.server.jetstream_enabled = True
        self._start_again(pid, None, "storage recovered")

    def _reload_jetstream(self, enabled: bool) -> bool:
        """Have the server reload its configuration with JetStream ``enabled`` or not; whether it confirmed."""
        self._reloaded.clear()
        try:
            self.server.reload_jetstream(enabled)
        except (EmbeddedServerError, OSError) as error:
            self.log.error("nats.embedded_reload_failed", jetstream=enabled, error=str(error))
            return False
        return self._reloaded.wait(self.RELOAD_TIMEOUT_S)

    def _start_again(self, pid: int | None, code: int | None, why: str) -> None:
        began = time.monotonic()
        for attempt in range(1, self.RESTART_ATTEMPTS + 1):
            try:
                self.server.start()
            except EmbeddedServerError as error:
                self.log.error("nats.embedded_restart_failed", attempt=attempt, error=str(error))
                time.sleep(self.RETRY_DELAY_S)
                continue
            self.restarts += 1
            self.log.warning(
                "nats.embedded_restarted",
                pid=self.server.pid,
                url=self.server.url,
                attempt=attempt,
                why=why,
                took_s=round(time.monotonic() - began, 2),
            )
            return
        raise EmbeddedServerError(
            f"the embedded nats-server (pid {pid}, {why}, exit code {code}) could not be started again on "
            f"{self.server.url} with data in {self.server.data_dir} after {self.RESTART_ATTEMPTS} attempts"
        )


# What the server says once it has applied a configuration reload.
_RELOADED = "Reloaded server configuration"
# How a server says its storage failed: the disk's own error, or JetStream switching itself off over it.
_STORAGE_FAILED = re.compile(r"no space left on device|JetStream out of .{0,20}resources", re.IGNORECASE)


def _free_bytes(path: Path) -> int:
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return 0
