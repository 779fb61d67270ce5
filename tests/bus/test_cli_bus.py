"""The `ichor` command as a user runs it: real processes, a real embedded server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_security_files import assert_no_stored_secret, exposed_secret_files, secrets_in

pytestmark = pytest.mark.bus

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "paste.txt"


def ichor(*args: str, stdin: str | None = None, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "organs.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def _alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return found


def start_up(data: Path, *extra: str):  # type: ignore[no-untyped-def]
    process, url, _ = start_up_saying(data, *extra)
    return process, url


def start_up_saying(data: Path, *extra: str):  # type: ignore[no-untyped-def]
    """`ichor up` started, its server's url, and every line it printed until then."""
    process = subprocess.Popen(
        [sys.executable, "-m", "organs.cli", "up", "--port", "0", "--data", str(data), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "ICHOR_NATS_URL"},
    )
    assert process.stdout is not None
    url = None
    said = []
    deadline = time.monotonic() + 30
    while url is None and time.monotonic() < deadline:
        line = process.stdout.readline()
        said.append(line)
        if line.startswith("{"):
            event = json.loads(line)
            if event.get("event") == "nats.embedded_started":
                url = event["url"]
    assert url, "ichor up never reported its embedded server"
    return process, url, said


@pytest.fixture
def ichor_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """`ichor up` (secure, the default) on a free port; yields (process, url); stopped with SIGTERM after the test.

    ``ICHOR_DATA`` names its data directory, so the commands a test runs find their identity there, as a
    user's do with no flag in the default directory."""
    process, url = start_up(tmp_path / "data")
    monkeypatch.setenv("ICHOR_DATA", str(tmp_path / "data"))
    try:
        yield process, url
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)


def test_up_is_secure_by_default_and_commands_find_their_identity_in_the_data_directory(tmp_path: Path) -> None:
    data = tmp_path / "data"
    process, url = start_up(data)
    try:
        nowhere = {"ICHOR_DATA": str(tmp_path / "nowhere")}
        anonymous = _run_with(nowhere, "ingest", "-", "--nats", url, "--timeout", "5", stdin="What is this?")
        assert anonymous.returncode != 0, "the server refuses a client without an identity"
        # The server closes the connection, naming the violation when the client hears it first.
        assert "cannot connect" in anonymous.stderr or "authorization" in anonymous.stderr.lower(), anonymous.stderr
        # No credentials named anywhere: `--data` is enough, as the default directory is beside `make run`.
        result = ichor("ingest", str(EXAMPLE), "--nats", url, "--data", str(data), "--json", "--timeout", "60")
        assert result.returncode == 0, result.stderr
        envelope = json.loads(result.stdout)
        assert [step["stage"] for step in envelope["chain"]["steps"] if step["signature"]] == [
            "digested",
            "yielded",
            "admitted",
        ]
        assert envelope["chain"]["seal"]["covers"]["paste_id"]
        # The host may not ask for a paste as received; the operator's identity, found the same way, may.
        frame_id = next(report["frame_id"] for report in envelope["payload"]["report"] if report["frame_id"])
        raw = _run_with({"ICHOR_DATA": str(data)}, "frame", frame_id, "--raw", "--nats", url)
        assert raw.returncode == 0 and raw.stdout, raw.stderr
        # The dead letters are the operator's: the host is told it was refused, not that nobody answered.
        as_host = {"ICHOR_NATS_USER": "host", "ICHOR_NATS_NKEY_FILE": str(data / "security" / "seeds" / "host.seed")}
        refused = _run_with(as_host, "dlq", "ls", "--nats", url)
        assert refused.returncode == 1 and "permissions forbid it" in refused.stderr, refused.stderr
        listed = _run_with({"ICHOR_DATA": str(data)}, "dlq", "ls", "--nats", url)
        assert listed.returncode == 0 and "0 dead letter(s)" in listed.stderr, listed.stderr
        # Every file `ichor up` wrote that holds a secret (a seed) is the owner's alone, in owner-only
        # directories; the server's configuration holds public keys only.
        holding, exposed = exposed_secret_files(data, secrets_in(data / "security"))
        assert holding and all(path.suffix == ".seed" for path in holding)
        assert exposed == []
        assert {oct(folder.stat().st_mode & 0o777) for folder in (data / "security", data / "security" / "seeds")} == {
            "0o700"
        }
        [server_config] = data.rglob("nats-server.conf")
        assert "nkey:" in server_config.read_text()
        assert "host: 127.0.0.1" in server_config.read_text()
        assert_no_stored_secret(server_config.read_text())
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0


def test_up_insecure_keeps_the_open_mode_and_says_so_at_every_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for _ in range(2):
        process, url, said = start_up_saying(data, "--insecure")
        try:
            assert any("--insecure: NO authentication" in line for line in said), said
            assert not (data / "security").exists()
            nowhere = {"ICHOR_DATA": str(tmp_path / "nowhere")}
            anonymous = _run_with(nowhere, "status", "--nats", url, "--json", "--wait", "0.2")
            assert "authorization" not in anonymous.stderr.lower(), anonymous.stderr
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0


def test_commands_beside_an_insecure_up_on_a_once_secure_directory_connect_as_they_are(tmp_path: Path) -> None:
    data = tmp_path / "data"
    process, _ = start_up(data)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0
    process, url = start_up(data, "--insecure")
    try:
        # The seeds are still there, but the open server answers no one's own outcome subject.
        result = _run_with({"ICHOR_DATA": str(data)}, "ingest", "-", "--nats", url, "--timeout", "60", stdin="Why?")
        assert result.returncode == 0, result.stderr
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    assert (data / "security").exists() and (data / "INSECURE").exists()


def _run_with(environment: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "organs.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=90,
        cwd=ROOT,
        env={**os.environ, **environment},
    )


def test_up_then_ingest_prints_an_admitted_prompt(ichor_up) -> None:  # type: ignore[no-untyped-def]
    process, url = ichor_up
    workers = _children(process.pid)
    tail = subprocess.Popen(
        [sys.executable, "-m", "organs.cli", "tail", "--json", "--limit", "5", "--nats", url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    # tail reads from the streams' next message on: the paste goes in once it says it follows both streams.
    assert tail.stderr is not None
    # As the operator (found in the data directory): the tract and the dead letters carry pastes as received.
    assert [tail.stderr.readline().split()[3] for _ in range(2)] == ["ICHOR_TRACT", "ICHOR_DLQ"]
    result = ichor("ingest", str(EXAMPLE), "--nats", url, "--actor", "ana", "--json", "--timeout", "60")
    # A generous wait: on a loaded machine (make test's three workers on two cores) the last hops can lag the reply.
    tail_out, _ = tail.communicate(timeout=90)
    hops = [json.loads(line) for line in tail_out.splitlines()]
    # The border's answer goes to the brain and, as a copy, to the sender's own outcome subject (either first).
    assert [(hop["hop"], hop["kind"]) for hop in hops[:3]] == [
        ("stomach.in", "paste"),
        ("absorption.in", "digested"),
        ("border.in", "yield"),
    ]
    assert sorted((hop["hop"], hop["kind"]) for hop in hops[3:]) == [
        ("brain.in", "admitted"),
        ("outcome.host", "admitted"),
    ]
    assert {hop["origin"] for hop in hops} == {"user_input:ana"}
    # The example fits the default budget, so it is served whole: nothing is cut that need not be.
    assert hops[1]["tokens_in"] >= hops[1]["tokens_out"] > 0
    assert result.returncode == 0, result.stderr
    envelope = json.loads(result.stdout)
    assert envelope["kind"] == "admitted"
    assert envelope["chain"]["origin"] == {"kind": "user_input", "actor": "ana", "channel": "cli"}
    assert envelope["tier"] == "full"
    goal = envelope["payload"]["goal"]
    assert goal and goal in EXAMPLE.read_text()
    assert goal in envelope["payload"]["prompt"]["text"]

    # Frame ids are content addresses: the local digest names the frames the bus stored.
    local = json.loads(ichor("digest", str(EXAMPLE), "--json").stdout)
    text = EXAMPLE.read_text()
    for frame in local["frames"]:
        fetched = ichor("frame", frame["id"], "--full", "--nats", url)
        assert fetched.returncode == 0, fetched.stderr
        assert fetched.stdout == text[frame["span"][0] : frame["span"][1]]

    status = ichor("status", "--nats", url, "--json")
    assert status.returncode == 0, status.stderr
    organs = {reply["metadata"]["organ"]: reply for reply in json.loads(status.stdout)}
    assert set(organs) == {"stomach", "absorption", "border"}
    assert all(reply["type"] == "io.nats.micro.v1.stats_response" for reply in organs.values())
    assert sum(e["num_requests"] for e in organs["border"]["endpoints"]) == 1

    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0
    time.sleep(0.2)
    assert not [pid for pid in workers if _alive(pid)], "ichor up left a worker or nats-server running"


def test_a_crashed_worker_is_restarted(ichor_up) -> None:  # type: ignore[no-untyped-def]
    process, url = ichor_up
    deadline = time.monotonic() + 20
    while len(_children(process.pid)) < 4 and time.monotonic() < deadline:
        time.sleep(0.1)
    before = set(_children(process.pid))
    victim = max(before)
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        now = set(_children(process.pid))
        if victim not in now and len(now) == len(before):
            break
        time.sleep(0.1)
    assert victim not in now and len(now) == len(before)
    result = ichor("ingest", "-", "--nats", url, "--timeout", "60", stdin="./src/net.rs\n\nWhat does this module do?")
    assert result.returncode == 0, result.stderr
    assert "What does this module do?" in result.stdout


def test_digest_runs_the_core_locally() -> None:
    result = ichor("digest", str(EXAMPLE), "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["tier"] == "full"
    assert "./services/checkout/app/payments.py" in document["anchors"]
    assert {frame["kind"] for frame in document["frames"]} >= {"log", "stack_trace", "table"}


def test_schema_prints_json_schema() -> None:
    result = ichor("schema")
    assert result.returncode == 0
    assert "Envelope" in json.loads(result.stdout)["$defs"]


def test_ingest_without_organs_times_out_clearly(nats_server) -> None:  # type: ignore[no-untyped-def]
    result = ichor("ingest", "-", "--nats", nats_server.url, "--timeout", "1", stdin="What is this?")
    assert result.returncode == 3
    assert "are the organs up" in result.stderr


def test_status_without_organs_exits_non_zero(nats_server) -> None:  # type: ignore[no-untyped-def]
    result = ichor("status", "--nats", nats_server.url)
    assert result.returncode == 5
    assert "stomach" in result.stderr


def test_frame_with_an_unknown_id_fails_clearly(nats_server) -> None:  # type: ignore[no-untyped-def]
    result = ichor("frame", "blake3:" + "0" * 64, "--nats", nats_server.url)
    assert result.returncode == 3
    assert "no stomach answered" in result.stderr
