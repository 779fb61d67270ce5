"""``ichor dlq``: dead letters listed, shown, replayed to be processed again, and purged, on a real server."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from nats.js import api

from envelopes.codec import decode, encode
from envelopes.types import Admitted, UserInput
from organs.absorption import build_absorption
from organs.border.worker import build_border
from organs.operations.dlq import get_letter, list_letters, preview, replay_letter
from organs.runtime.bus import BusSettings, Tract
from organs.runtime.server import EmbeddedServer
from organs.runtime.worker import dead_letter
from organs.secretion import paste_envelope
from organs.stomach.worker import build_stomach
from tests.bus.helpers import read_envelopes, wait_for_count
from tests.bus.test_cli_bus import ROOT
from tests.conftest import running_organ
from tests.support.envelopes import AT

pytestmark = pytest.mark.bus

ORIGIN = UserInput(actor="dlq-operator", channel="test")
DEAD_URL = "nats://127.0.0.1:9"


def ichor_dlq(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "organs.cli", "dlq", *args, "--nats", url],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


async def _dead_letter_a_paste(tract: Tract, text: str, reason: str) -> int:
    """A paste taken from the tract and dead-lettered by the workers' own function, as a crash would leave it.

    The original is then deleted from the tract, so only a replay can bring it back to the organs.
    """
    paste = paste_envelope(text, origin=ORIGIN, source="test-host", instance="t", now=AT)
    stored = await tract.js.publish(tract.subjects.stomach_in, encode(paste), headers={"Nats-Msg-Id": paste.id})
    taker = await tract.js.pull_subscribe(
        tract.subjects.stomach_in,
        stream=tract.subjects.tract_stream,
        config=api.ConsumerConfig(ack_policy=api.AckPolicy.EXPLICIT, inactive_threshold=5.0),
    )
    [msg] = await taker.fetch(1, timeout=5)
    await dead_letter(tract, "stomach", msg, reason)
    await msg.term()
    await taker.unsubscribe()
    await tract.js.delete_msg(tract.subjects.tract_stream, stored.seq)
    letter = (await list_letters(tract))[-1]
    assert (await get_letter(tract, letter.id))[1] == encode(paste)
    return letter.id


async def test_a_replayed_letter_is_processed_again_with_its_provenance(
    tract: Tract, bus_settings: BusSettings
) -> None:
    letter_id = await _dead_letter_a_paste(tract, "Why does the job fail?\n\nERROR job 7 failed", "core raised X")
    [listed] = await list_letters(tract)
    assert (listed.organ, listed.subject, listed.reason) == ("stomach", tract.subjects.stomach_in, "core raised X")
    assert listed.size > 0 and listed.at.endswith("Z")
    async with (
        running_organ("stomach", bus_settings, build_stomach(bus_settings)),
        running_organ("absorption", bus_settings, build_absorption(bus_settings)),
        running_organ("border", bus_settings, build_border(bus_settings)),
    ):
        replayed = await replay_letter(tract, letter_id)
        # The paste's own id was published moments ago: under it, the duplicate window would drop the replay.
        assert await wait_for_count(tract, tract.subjects.brain_in, 1, timeout=60) == 1
    [outcome] = await read_envelopes(tract, tract.subjects.brain_in)
    assert isinstance(outcome.payload, Admitted)
    assert outcome.chain.origin == ORIGIN == outcome.payload.meta.original_provenance
    assert replayed.subject == tract.subjects.stomach_in and not replayed.kept
    assert await list_letters(tract) == []


async def test_replaying_one_letter_twice_stores_it_once(tract: Tract) -> None:
    letter_id = await _dead_letter_a_paste(tract, "What broke?\n\nWARN disk 91%", "transient: gave up")
    first = await replay_letter(tract, letter_id, keep=True)
    second = await replay_letter(tract, letter_id, keep=True)
    assert first.msg_id == second.msg_id and first.sequence == second.sequence
    assert len(await list_letters(tract)) == 1


async def test_the_command_lists_shows_replays_and_purges(tract: Tract, nats_server: EmbeddedServer) -> None:
    url = nats_server.url
    first = await _dead_letter_a_paste(tract, "Why?\n\npassword=hunter2-secret-value\nERROR boom", "core raised A")
    second = await _dead_letter_a_paste(tract, "What now?\n\nERROR again", "core raised B")
    await tract.js.publish(
        tract.subjects.dlq("border"), b"\x00\xff\x1b[2Jbinary", headers={"Ichor-Dlq-Organ": "border"}
    )

    listing = ichor_dlq(url, "ls")
    assert listing.returncode == 0, listing.stderr
    rows = listing.stdout.splitlines()[1:]
    assert [int(row.split()[0]) for row in rows] == [first, second, second + 1]
    assert "core raised A" in rows[0] and "stomach" in rows[0]
    as_json = json.loads(ichor_dlq(url, "ls", "--organ", "stomach", "--json").stdout)
    assert [letter["id"] for letter in as_json] == [first, second]

    shown = ichor_dlq(url, "show", str(first), "--json")
    document = json.loads(shown.stdout)
    assert document["form"] == "envelope" and document["reason"] == "core raised A"
    assert "hunter2-secret-value" not in document["content"], "credentials are redacted unless --raw"
    assert "hunter2-secret-value" in json.loads(ichor_dlq(url, "show", str(first), "--json", "--raw").stdout)["content"]
    binary = ichor_dlq(url, "show", str(second + 1))
    assert "content (hex):" in binary.stdout and "\x1b" not in binary.stdout
    elsewhere = ichor_dlq(url, "replay", str(second + 1))
    assert elsewhere.returncode == 1 and "not one of the tract's subjects; not replayed" in elsewhere.stderr

    replayed = ichor_dlq(url, "replay", str(second))
    assert replayed.returncode == 0 and f"to {tract.subjects.stomach_in}" in replayed.stdout
    assert decode((await tract.js.get_last_msg(tract.subjects.tract_stream, tract.subjects.stomach_in)).data)

    purged = ichor_dlq(url, "purge", "--organ", "border")
    assert (purged.returncode, purged.stdout.strip()) == (0, "purged 1 dead letter(s) of border")
    assert [letter.id for letter in await list_letters(tract)] == [first]
    assert ichor_dlq(url, "purge").stdout.strip() == "purged 1 dead letter(s)"


async def test_a_missing_letter_or_an_unreachable_bus_is_an_error(nats_server: EmbeddedServer, tract: Tract) -> None:
    missing = ichor_dlq(nats_server.url, "show", "999")
    assert missing.returncode == 1
    assert missing.stderr.strip() == "ichor dlq: no dead letter 999 in ICHOR_DLQ (see ichor dlq ls)"
    assert ichor_dlq(nats_server.url, "replay", "999").returncode == 1
    unreachable = ichor_dlq(DEAD_URL, "ls")
    assert unreachable.returncode == 1
    assert unreachable.stderr.startswith(f"ichor dlq: cannot connect to {DEAD_URL}")


def test_a_preview_shows_text_escaped_and_binary_as_hex() -> None:
    assert preview(b"line one\nline\x1b[31m two", 100) == ("text", "line one\nline\\x1b[31m two")
    form, shown = preview(bytes(range(250, 256)) + b"abc", 100)
    assert form == "hex" and shown.startswith("00000000  fa fb fc fd fe ff 61 62 63") and shown.endswith("......abc")
    assert preview(b"x" * 50, 10) == ("text", "x" * 10 + "… (50 bytes in all)")
