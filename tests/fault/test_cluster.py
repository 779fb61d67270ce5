"""A 3-node cluster on loopback: streams and stores with 3 replicas survive losing a node."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from organs.runtime.bus import BusSettings, connect, provision
from tests.fault.harness import OrganProcesses, ends_reached, make_pastes, publish_all, tally, wait_for_ends
from tests.support.cluster import EmbeddedCluster

pytestmark = [pytest.mark.bus, pytest.mark.slow]


async def test_killing_one_node_of_three_loses_nothing(tmp_path: Path) -> None:
    cluster = EmbeddedCluster(tmp_path / "cluster").start()
    organs = None
    try:
        settings = BusSettings(url=cluster.url, replicas=3, instance="cluster-test")
        tract = await connect(settings, name="cluster-test")
        await provision(tract)
        info = await tract.js.stream_info(settings.subjects.tract_stream)
        assert info.config.num_replicas == 3
        frames_info = await tract.js.stream_info(f"OBJ_{settings.subjects.frames_bucket}")
        assert frames_info.config.num_replicas == 3

        pastes = make_pastes(600, "cluster")
        organs = OrganProcesses(cluster.url, env={"ICHOR_ACK_WAIT_S": "3", "ICHOR_REPLICAS": "3"}).start()
        await publish_all(tract, pastes)
        await wait_for_ends(tract, 100, timeout=120, organs=organs)
        victim = cluster.servers[1]
        victim.kill()
        killed_at = time.monotonic()
        before = await ends_reached(tract)
        await wait_for_ends(tract, before + 20, timeout=120, organs=organs)
        recovery = round(time.monotonic() - killed_at, 2)
        await wait_for_ends(tract, len(pastes), timeout=300, organs=organs)
        # The stragglers: inputs whose publish or ack failed while the cluster chose new leaders come back on the
        # redelivery schedule (its cap, BACKOFF_CAP_S, bounds how late).
        all_out_s = round(time.monotonic() - killed_at, 2)
        await asyncio.sleep(1)
        result = await tally(tract, pastes)
        result.print("cluster", recovery_s=recovery, all_out_after_kill_s=all_out_s, peak_rss_kib=organs.peak_rss_kib)
        await tract.nc.close()
    finally:
        if organs is not None:
            organs.stop()
        cluster.stop()
    assert result.lost == 0
    assert result.duplicated == 0
