"""A user's view of #12: `ichor up --secure`, planted (generated) secrets in, none out but to the operator."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bench.planted_secrets import planted_pastes
from tests.bus.test_cli_bus import ROOT, ichor, start_up

pytestmark = pytest.mark.bus

ASK = "Why does the deploy fail?"


def _as(user_env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "organs.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **user_env},
        timeout=90,
    )


def _exports(data: Path, user: str) -> dict[str, str]:
    exports = ichor("security", "env", str(data / "security"), user)
    assert exports.returncode == 0, exports.stderr
    return dict(line.removeprefix("export ").split("=", 1) for line in exports.stdout.splitlines())


def test_ichor_frame_full_and_the_logs_hold_no_planted_secret_and_raw_is_the_operators(tmp_path: Path) -> None:
    planted = planted_pastes(11)
    secrets = [secret for paste in planted for secret in paste.secrets]
    # Three evidence blocks (pastes joined without blank lines), so a handful of frames to fetch.
    thirds = [planted[index::3] for index in range(3)]
    paste = ASK + "\n\n" + "\n\n".join("\n".join(item.text for item in third) for third in thirds) + "\n"
    source = tmp_path / "paste.txt"
    source.write_text(paste)
    data = tmp_path / "data"
    process, url = start_up(data, "--secure")
    try:
        host, operator = _exports(data, "host"), _exports(data, "operator")
        result = _as(host, "ingest", str(source), "--intent", ASK, "--nats", url, "--json", "--timeout", "60")
        assert result.returncode == 0, result.stderr
        assert not [secret for secret in secrets if secret in result.stdout]
        admitted = json.loads(result.stdout)
        frame_ids = [report["frame_id"] for report in admitted["payload"]["report"] if report["frame_id"]]
        assert frame_ids and sum(len(report["redacted"]) for report in admitted["payload"]["report"]) >= 3
        frames = list(dict.fromkeys(frame_ids))
        raw_texts = []
        for frame_id in frames:
            full = _as(host, "frame", frame_id, "--full", "--nats", url)
            assert full.returncode == 0, full.stderr
            assert not [secret for secret in secrets if secret in full.stdout]
            raw = _as(operator, "frame", frame_id, "--raw", "--nats", url)
            assert raw.returncode == 0, raw.stderr
            raw_texts.append(raw.stdout)
            # The host may not ask: the server's refusal ends the request at once, not its 10 s timeout.
            refused = _as(host, "frame", frame_id, "--raw", "--nats", url)
            assert refused.returncode == 1 and refused.stdout == ""
            assert "the server refused this user a request on ichor.frames.raw" in refused.stderr
        assert all(any(secret in text for text in raw_texts) for secret in secrets)
    finally:
        process.send_signal(signal.SIGTERM)
        logs, _ = process.communicate(timeout=30)
    assert "stomach.digested" in logs
    assert not [secret for secret in secrets if secret in logs]
