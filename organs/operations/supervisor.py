"""The ``ichor up`` supervisor: one worker process per organ, restarted when it dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any

__all__ = ["Supervisor", "spawn_worker", "worker_arguments"]


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
    ) -> None:
        self.nats_url = nats_url
        self.log_level = log_level
        self.log = log
        self.environments = environments or {}
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.started_at: dict[str, float] = {}
        self.quick_failures: dict[str, int] = {}
        self.restart_at: dict[str, float] = {}

    def spawn(self, organ: str) -> None:
        environment = {"ICHOR_NATS_URL": self.nats_url, **self.environments.get(organ, {})}
        self.children[organ] = spawn_worker(organ, self.nats_url, env=environment, log_level=self.log_level)
        self.started_at[organ] = time.monotonic()
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
                continue
            quick = now - self.started_at[organ] < self.STABLE_AFTER_S
            self.quick_failures[organ] = self.quick_failures.get(organ, 0) + 1 if quick else 0
            delay = min(self.MAX_RESTART_DELAY_S, 0.5 * 2 ** self.quick_failures[organ]) if quick else 0.0
            self.log.error("supervisor.worker_exited", worker=organ, exit_code=code, action="restart", delay_s=delay)
            self.restart_at[organ] = now + delay

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
