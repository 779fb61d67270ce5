"""What an operator watches: paste-to-prompt time, dead letters read from their stream, stream usage, build info."""

from __future__ import annotations

from importlib.metadata import version

import pytest

from envelopes.types import UserInput
from organs.absorption import build_absorption
from organs.border.worker import build_border
from organs.client import hand_in_paste
from organs.runtime.bus import BusSettings, Tract
from organs.runtime.health import OrganProbes
from organs.runtime.metrics import OrganMetrics, StreamUsage, TractUsage, seconds_between
from organs.stomach.worker import build_stomach
from tests.bus.helpers import wait_for_count
from tests.bus.test_health_bus import samples
from tests.conftest import running_organ

pytestmark = pytest.mark.bus

PASTE = "Why does the cron job stop?\n\n2026-11-30T03:00:00Z ERROR cron job 4 stopped: out of memory\n"


async def test_the_border_measures_paste_to_prompt_and_reports_usage(tract: Tract, bus_settings: BusSettings) -> None:
    probes = OrganProbes("border")
    async with (
        running_organ("stomach", bus_settings, build_stomach(bus_settings)),
        running_organ("absorption", bus_settings, build_absorption(bus_settings)),
        running_organ("border", bus_settings, build_border(bus_settings)) as border,
    ):
        probes.attach(border)
        paste, outcome = await hand_in_paste(tract, PASTE, origin=UserInput(actor="t"), timeout=30)
        found = samples(await probes.scrape())
    trip = seconds_between(paste.created_at, outcome.created_at)
    assert found['ichor_paste_to_prompt_seconds_count{organ="border"}'] == 1
    assert found['ichor_paste_to_prompt_seconds_sum{organ="border"}'] == pytest.approx(trip)
    assert found['ichor_paste_to_prompt_seconds_bucket{organ="border",le="+Inf"}'] == 1
    assert found['ichor_dead_letters{organ="border"}'] == 0
    assert found['ichor_stream_messages{organ="border",stream="ICHOR_TRACT"}'] == 4  # paste, digest, yield, prompt
    assert found['ichor_stream_bytes{organ="border",stream="ICHOR_TRACT"}'] > 0
    assert 'ichor_stream_messages{organ="border",stream="KV_ichor-admitted"}' in found
    python_label = next(key for key in found if key.startswith("ichor_build_info"))
    assert f'version="{version("ichor-organs")}"' in python_label and found[python_label] == 1


async def test_the_dead_letter_gauge_is_read_from_the_stream_and_survives_a_restart(
    tract: Tract, bus_settings: BusSettings
) -> None:
    async with running_organ("stomach", bus_settings, build_stomach(bus_settings)) as stomach:
        await tract.js.publish(tract.subjects.stomach_in, b"not an envelope")
        await tract.js.publish(tract.subjects.stomach_in, b"nor this")
        assert await wait_for_count(tract, tract.subjects.border_rejected, 2, timeout=20) == 2
        before = OrganProbes("stomach")
        before.attach(stomach)
        counted = samples(await before.scrape())
    async with running_organ("stomach", bus_settings, build_stomach(bus_settings)) as restarted:
        after = OrganProbes("stomach")
        after.attach(restarted)
        recounted = samples(await after.scrape())
    assert counted['ichor_dead_letters{organ="stomach"}'] == 2
    # A new process counted nothing itself, and still reports the letters the stream keeps.
    assert recounted['ichor_inputs_dead_lettered_total{organ="stomach",consumer="stomach"}'] == 0
    assert recounted['ichor_dead_letters{organ="stomach"}'] == 2
    assert 'ichor_stream_bytes{organ="stomach",stream="OBJ_ichor-frames"}' in recounted


def test_an_organ_that_publishes_no_prompt_has_no_paste_to_prompt_series() -> None:
    usage = TractUsage(dead_letters=3, streams=(StreamUsage("ICHOR_TRACT", 5, 900, None),))
    found = samples(OrganMetrics("stomach").render([], connected=True, usage=usage, version="9"))
    assert not any(key.startswith("ichor_paste_to_prompt") for key in found)
    assert found['ichor_dead_letters{organ="stomach"}'] == 3
    assert 'ichor_stream_max_bytes{organ="stomach",stream="ICHOR_TRACT"}' not in found, "unlimited is left out"


def test_seconds_between_reads_the_contracts_times() -> None:
    assert seconds_between("2026-12-01T21:59:59.500Z", "2026-12-01T22:00:01Z") == 1.5
    assert seconds_between("2026-12-01T22:00:00.123456789Z", "2026-12-01T22:00:00.123457Z") == pytest.approx(1e-6)


def test_the_grafana_dashboard_reads_only_series_the_organs_export() -> None:
    import json
    import re
    from pathlib import Path

    from organs.runtime.metrics import ConsumerView

    dashboard = json.loads((Path(__file__).resolve().parents[2] / "deploy" / "grafana-dashboard.json").read_text())
    usage = TractUsage(dead_letters=0, streams=(StreamUsage("ICHOR_TRACT", 1, 1, 10),))
    view = ConsumerView(
        "border", "ichor.border.in", 1, 0, 0, True, pending=0, ack_pending=0, redelivered=0, refusal="x"
    )
    exported = {
        line.split()[2]
        for line in OrganMetrics("border").render([view], connected=True, usage=usage, version="1").splitlines()
        if line.startswith("# TYPE")
    }
    used = {
        re.sub(r"_bucket$", "", name)
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"\bichor_[a-z_]+", target["expr"])
    }
    assert used <= exported
    assert {"ichor_paste_to_prompt_seconds", "ichor_dead_letters", "ichor_stream_bytes", "ichor_build_info"} <= used
