"""#27 from outside, against a real secured server and organs: a lifted seal, and what one host may see of another's.

Each attack prints what was tried and what came of it (``report``), as the other security scenarios do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import msgspec
import nats.errors
import pytest

from envelopes.codec import decode, encode
from envelopes.types import Paste, Rejected
from organs.client import fetch_frame, resolve_frame_id
from organs.errors import FrameNotFound, PermissionRefused
from organs.runtime.bus import stream_info, unless_refused
from organs.runtime.stream_reader import follow_stream
from tests.bus.helpers import read_envelopes
from tests.support.secured import Secured, admitted, report, secured_server, with_organs

pytestmark = pytest.mark.bus


@pytest.fixture
def tenanted(tmp_path: Path) -> Iterator[Secured]:
    """A secured server whose security has one tenant, ``alice``, besides the ``host``."""
    with secured_server(tmp_path, tenants=("alice",)) as secured:
        yield secured


async def _outcome_of(admin, trace_id: str, known: set[str], timeout: float = 60.0):  # type: ignore[no-untyped-def]
    """The first outcome of ``trace_id`` on the tract that is not one of the ``known`` ids (which it joins)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        for subject in (admin.subjects.brain_in, admin.subjects.border_rejected):
            for envelope in await read_envelopes(admin, subject):
                if envelope.trace_id == trace_id and envelope.id not in known:
                    known.add(envelope.id)
                    return envelope
        await asyncio.sleep(0.3)
    raise AssertionError(f"no outcome for trace {trace_id}")


async def test_a_lifted_seal_with_a_new_id_or_goal_is_rejected_and_charges_no_one(tenanted: Secured) -> None:
    async with with_organs(tenanted, [], "host", "alice") as (admin, host, alice):
        victim, outcome = await admitted(alice, "alice", intent="Why?")
        rates_before = await stream_info(admin, "KV_" + admin.subjects.rates_bucket)
        assert isinstance(victim.payload, Paste)
        lifts = {
            "a new id": msgspec.structs.replace(victim, id="ab" * 16),
            "a new id and goal": msgspec.structs.replace(
                victim, id="cd" * 16, payload=msgspec.structs.replace(victim.payload, intent="ATTACKER GOAL: leak it")
            ),
            "a new id and budget": msgspec.structs.replace(
                victim, id="ef" * 16, payload=msgspec.structs.replace(victim.payload, budget_tokens=1)
            ),
        }
        known = {outcome.id}
        for what, lifted in lifts.items():
            # The host publishes the victim's sealed paste (which it could once read off the tract) with the change.
            await host.js.publish(admin.subjects.stomach_in, encode(lifted), headers={"Nats-Msg-Id": lifted.id})
            rejection = await _outcome_of(admin, lifted.trace_id, known)
            assert isinstance(rejection.payload, Rejected)
            codes = {reason.code for reason in rejection.payload.reasons}
            assert codes == {"seal.mismatch"}, codes
            attack = f"alice's sealed paste re-published by the host with {what}"
            report(27, attack, "rejected with reason seal.mismatch")
        rates_after = await stream_info(admin, "KV_" + admin.subjects.rates_bucket)
        # No rate bucket was written by the three rejections: alice's, the host's and the shared one are untouched.
        assert rates_after.state.messages == rates_before.state.messages
        report(27, "the rate limit after three lifted seals", "no bucket charged (alice's untouched)")


async def test_one_host_sees_only_its_own_outcomes_and_no_raw_paste_or_dead_letter(tenanted: Secured) -> None:
    async with with_organs(tenanted, [], "alice", "host") as (admin, alice, host):
        seen_by_host: list[bytes] = []

        async def keep(msg) -> None:  # type: ignore[no-untyped-def]
            seen_by_host.append(msg.data)

        # The host listens on alice's outcome subject and the tract's; the server refuses each subscription.
        for subject in (admin.subjects.outcome("alice"), admin.subjects.stomach_in, admin.subjects.brain_in):
            await host.nc.subscribe(subject, cb=keep)
        await host.nc.flush()
        _, outcome = await admitted(alice, "alice")
        await asyncio.sleep(0.5)
        assert seen_by_host == []
        report(27, "host subscribes to alice's outcomes, ichor.stomach.in and ichor.brain.in", "refused at the door")
        # Reading the dead letters through their stream is refused at once; a stored paste by sequence, too.
        with pytest.raises(PermissionRefused):
            await follow_stream(host, [admin.subjects.dlq_all], keep, stream=admin.subjects.dlq_stream)
        report(27, "host follows ICHOR_DLQ (dead letters, raw bytes)", "refused at the door")
        for sequence in (1, 2):
            with pytest.raises((PermissionRefused, nats.errors.TimeoutError, nats.errors.NoRespondersError)):
                await host.js.get_msg(admin.subjects.tract_stream, sequence)
        report(27, "host asks $JS.API.STREAM.MSG.GET.ICHOR_TRACT for alice's paste", "refused at the door")
        info = f"$JS.API.STREAM.INFO.{admin.subjects.tract_stream}"
        with pytest.raises(PermissionRefused):
            counts = host.nc.request(info, b'{"subjects_filter": "ichor.outcome.*"}', timeout=5)
            await unless_refused(host, info, counts)
        report(27, "host asks the tract's subject counts (which tenants have outcomes)", "refused at the door")
        # Alice herself got her outcome on her own subject; the host gets its own there too, and not alice's.
        _, own = await admitted(host, "ana")
        assert own.trace_id != outcome.trace_id
        assert [decode(data).trace_id for data in seen_by_host] == []
        report(27, "host hands its own paste in", "admitted, its outcome on ichor.outcome.host only")


async def test_a_frame_id_reveals_nothing_to_a_host_that_did_not_hand_that_content_in(tenanted: Secured) -> None:
    async with with_organs(tenanted, [], "alice", "host") as (admin, alice, host):
        _, outcome = await admitted(alice, "alice")
        frame_ids = [report.frame_id for report in outcome.payload.report if report.frame_id]
        assert frame_ids
        unknown = "blake3:" + "0" * 64
        for frame_id in frame_ids:
            assert (await fetch_frame(alice, frame_id, "full")).frame is not None
            # The short id a prompt's table shows: resolved for alice among her own frames, for the host among none.
            short = frame_id.removeprefix("blake3:")[:16]
            assert await resolve_frame_id(alice, short) == frame_id
            with pytest.raises(FrameNotFound, match=f"no frame starts with {short}"):
                await resolve_frame_id(host, short)
            # Asked by the host: the very answer a frame that does not exist gets, id aside.
            for representation in ("full", "compact"):
                probed = await fetch_frame(host, frame_id, representation)
                absent = await fetch_frame(host, unknown, representation)
                assert probed.frame is None and absent.frame is None
                assert probed.error == f"no frame {frame_id}" and absent.error == f"no frame {unknown}"
        report(27, "host asks for alice's frames by id (full and compact)", "answered as no frame: learns nothing")
        # On alice's subject, the shared one, or the stores (listing or reading the index): refused at the door.
        for subject in (admin.subjects.frames_get_for("alice"), admin.subjects.frames_get):
            with pytest.raises(PermissionRefused):
                await unless_refused(host, subject, host.nc.request(subject, b"", timeout=5))
        index = f"$JS.API.STREAM.MSG.GET.KV_{admin.subjects.frame_index_bucket}"
        with pytest.raises(PermissionRefused):
            await unless_refused(host, index, host.nc.request(index, b'{"seq": 1}', timeout=5))
        attack = "host asks on alice's frames subject, the shared one, or reads the frame index"
        report(27, attack, "refused at the door")
        # The host's own paste of the same text: now its frames too.
        await admitted(host, "ana")
        for frame_id in frame_ids:
            assert (await fetch_frame(host, frame_id, "compact")).frame is not None
        report(27, "host hands in the same text itself, then asks", "served (its own paste)")
