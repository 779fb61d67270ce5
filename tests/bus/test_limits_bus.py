"""Every stream and store of the tract is provisioned with its limits, and ones made before are brought to them."""

from __future__ import annotations

import dataclasses

import pytest
from nats.js import api

from organs.operations.storage import storage_problems, tract_streams
from organs.runtime.bus import BusSettings, Tract, connect, provision
from organs.runtime.limits import MIB, StoreLimits

pytestmark = pytest.mark.bus

NO_LIMITS = StoreLimits(0, 0, 0, 0, 0, 0, 0, 0, 0)


async def _configs(tract: Tract) -> dict[str, api.StreamConfig]:
    return {name: (await tract.js.stream_info(name)).config for name in tract_streams(tract)}


async def test_streams_and_stores_take_their_limits_and_refuse_rather_than_drop(tract: Tract) -> None:
    limits = tract.settings.limits
    configs = await _configs(tract)
    subjects = tract.subjects
    assert configs[subjects.tract_stream].max_bytes == limits.tract_max_bytes
    assert configs[subjects.dlq_stream].max_bytes == limits.dlq_max_bytes
    assert configs[subjects.dlq_stream].max_age == limits.dlq_max_age_s
    assert configs[f"OBJ_{subjects.frames_bucket}"].max_bytes == limits.frames_max_bytes
    assert configs[f"OBJ_{subjects.raw_bucket}"].max_bytes == limits.raw_max_bytes
    assert configs[f"KV_{subjects.frame_index_bucket}"].max_bytes == limits.index_max_bytes
    assert configs[f"OBJ_{subjects.uploads_bucket}"].max_bytes == limits.uploads_max_bytes
    for sender in ("host", "upstream"):
        assert configs[f"OBJ_{subjects.uploads_bucket_of(sender)}"].max_bytes == limits.uploads_sender_max_bytes
    assert all(config.discard == api.DiscardPolicy.NEW for config in configs.values())
    assert await storage_problems(tract) == []


async def test_stores_made_without_limits_are_brought_to_them(bus_settings: BusSettings) -> None:
    unlimited = await connect(dataclasses.replace(bus_settings, limits=NO_LIMITS), name="before")
    try:
        await provision(unlimited)
        assert all(config.max_bytes == -1 for config in (await _configs(unlimited)).values())
    finally:
        await unlimited.nc.close()
    limits = StoreLimits(frames_max_bytes=8 * MIB, index_max_bytes=2 * MIB, store_max_age_s=3600)
    limited = await connect(dataclasses.replace(bus_settings, limits=limits), name="after")
    try:
        await provision(limited)
        configs = await _configs(limited)
    finally:
        await limited.nc.close()
    frames = configs[f"OBJ_{limited.subjects.frames_bucket}"]
    index = configs[f"KV_{limited.subjects.frame_index_bucket}"]
    assert (frames.max_bytes, frames.max_age) == (8 * MIB, 3600)
    assert (index.max_bytes, index.max_age) == (2 * MIB, 3600)
