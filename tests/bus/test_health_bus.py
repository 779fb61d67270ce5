"""Each worker's ``/healthz``, ``/readyz`` and ``/metrics``: under ``ichor up``, one port per organ."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from organs.anatomy import ORGAN_NAMES
from organs.runtime.health import HealthServer, OrganProbes
from organs.runtime.metrics import ConsumerView, OrganMetrics
from organs.runtime.server import free_port
from tests.bus.test_cli_bus import EXAMPLE, ROOT, ichor

pytestmark = pytest.mark.bus


def get(port: int, path: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read().decode()


def samples(text: str) -> dict[str, float]:
    """Every sample line of a text-format scrape, by its name and labels."""
    found = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            found[series] = float(value)
    return found


def wait_until_ready(port: int, timeout: float = 60.0) -> tuple[int, str]:
    deadline = time.monotonic() + timeout
    status, body = 0, "no answer"
    while time.monotonic() < deadline:
        try:
            status, _, body = get(port, "/readyz")
        except (urllib.error.URLError, ConnectionError):
            status, body = 0, "no answer"
        if status == 200:
            break
        time.sleep(0.2)
    return status, body


def test_every_organ_under_ichor_up_serves_its_own_port(tmp_path: Path) -> None:
    base = free_port()
    environment = {key: value for key, value in os.environ.items() if key != "ICHOR_NATS_URL"}
    process = subprocess.Popen(
        [sys.executable, "-m", "organs.cli", "up", "--port", "0", "--data", str(tmp_path / "data")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env={**environment, "ICHOR_METRICS_PORT": str(base)},
    )
    assert process.stdout is not None
    try:
        url = None
        while url is None:
            event = json.loads(line) if (line := process.stdout.readline()).startswith("{") else {}
            url = event.get("url") if event.get("event") == "nats.embedded_started" else None
        ports = {organ: base + index for index, organ in enumerate(ORGAN_NAMES)}
        for organ, port in ports.items():
            assert wait_until_ready(port) == (200, "ready\n"), organ
            assert get(port, "/healthz")[::2] == (200, "ok\n")
        ingested = ichor("ingest", str(EXAMPLE), "--nats", url, "--data", str(tmp_path / "data"), "--timeout", "60")
        assert ingested.returncode == 0, ingested.stderr
        scrapes = {organ: get(port, "/metrics") for organ, port in ports.items()}
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    for organ, (status, content_type, text) in scrapes.items():
        assert status == 200 and content_type.startswith("text/plain; version=0.0.4")
        found = samples(text)
        assert found[f'ichor_bus_connected{{organ="{organ}"}}'] == 1
        assert found[f'ichor_inputs_processed_total{{organ="{organ}",consumer="{organ}"}}'] == 1
        assert found[f'ichor_handling_seconds_count{{organ="{organ}",consumer="{organ}"}}'] == 1
        assert found[f'ichor_consumer_pending{{organ="{organ}",consumer="{organ}"}}'] == 0
        assert found[f'ichor_inputs_dead_lettered_total{{organ="{organ}",consumer="{organ}"}}'] == 0
    stomach = samples(scrapes["stomach"][2])
    assert stomach['ichor_outputs_total{organ="stomach",consumer="stomach",kind="digested",tier="full"}'] == 1
    assert stomach['ichor_tokens_in_total{organ="stomach",consumer="stomach"}'] > 0
    border = samples(scrapes["border"][2])
    # Secure by default: the admitted envelope goes to the brain and, as a copy, to its sender's outcome subject.
    assert border['ichor_outputs_total{organ="border",consumer="border",kind="admitted",tier="full"}'] == 2
    assert border['ichor_tokens_out_total{organ="border",consumer="border"}'] > 0


async def test_an_organ_not_yet_connected_is_alive_but_not_ready() -> None:
    probes = OrganProbes("stomach")
    server = await HealthServer("stomach", "127.0.0.1", 0, probes.readiness, probes.scrape).start()
    try:
        ready, healthy, missing = await asyncio.gather(
            asyncio.to_thread(get, server.port, "/readyz"),
            asyncio.to_thread(get, server.port, "/healthz"),
            asyncio.to_thread(get, server.port, "/nothing"),
        )
        metrics = await asyncio.to_thread(get, server.port, "/metrics")
    finally:
        await server.close()
    assert (ready[0], ready[2]) == (503, "starting: not connected to NATS yet\n")
    assert (healthy[0], healthy[2]) == (200, "ok\n")
    assert missing[0] == 404
    found = samples(metrics[2])
    assert [found.pop(key) for key in list(found) if key.startswith("ichor_build_info{")] == [1.0]
    assert found == {'ichor_bus_connected{organ="stomach"}': 0.0}


def test_the_text_format_counts_buckets_cumulatively_and_escapes_labels() -> None:
    metrics = OrganMetrics('a"b\\c')
    for seconds in (0.003, 0.2, 0.2, 120.0):
        metrics.observe("stomach", [], seconds)
    text = metrics.render(
        [
            ConsumerView("stomach", "ichor.stomach.in", 4, 1, 1, True, pending=7, refusal="limit.max_bytes"),
            ConsumerView("stomach-deferred", "ichor.stomach.deferred", 0, 0, 0, True),
        ],
        connected=True,
    )
    found = samples(text)
    labels = 'organ="a\\"b\\\\c",consumer="stomach"'
    assert found[f'ichor_handling_seconds_bucket{{{labels},le="0.005"}}'] == 1
    assert found[f'ichor_handling_seconds_bucket{{{labels},le="0.25"}}'] == 3
    assert found[f'ichor_handling_seconds_bucket{{{labels},le="60"}}'] == 3
    assert found[f'ichor_handling_seconds_bucket{{{labels},le="+Inf"}}'] == 4
    assert found[f"ichor_handling_seconds_count{{{labels}}}"] == 4
    assert found[f"ichor_consumer_pending{{{labels}}}"] == 7
    assert f"ichor_consumer_ack_pending{{{labels}}}" not in found, "what the bus did not say is left out"
    assert found[f'ichor_write_refused{{{labels},cause="limit.max_bytes"}}'] == 1
    assert not any("stomach-deferred" in series and "refused" in series for series in found)
    assert "# TYPE ichor_handling_seconds histogram" in text and text.endswith("\n")


def test_a_metrics_port_already_taken_stops_the_worker_with_one_line() -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "organs.cli", "worker", "border", "--nats", "nats://127.0.0.1:9"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
            env={**os.environ, "ICHOR_METRICS_PORT": str(port)},
        )
    assert result.returncode == 2
    assert result.stderr.startswith(f"ichor worker: ICHOR_METRICS_PORT={port} (host 127.0.0.1) is not allowed")
