"""A write the server refuses is named by its cause; a full stream is found by its use against its limits."""

from __future__ import annotations

import nats.errors
import nats.js.errors

from organs.operations.storage import StreamUse, full_streams, organ_refusals
from organs.runtime.refusals import (
    describe_bus_error,
    exhaustion_of,
    named_by_exhaustion,
    refusal_of,
    unconfirmed_write,
)


def _unavailable(err_code: int | None, description: str | None) -> nats.js.errors.ServiceUnavailableError:
    return nats.js.errors.ServiceUnavailableError(code=503, err_code=err_code, description=description)


def test_a_stream_at_its_byte_limit_is_named_with_the_servers_words() -> None:
    refusal = refusal_of(_unavailable(10077, "maximum bytes exceeded"))
    assert refusal is not None and refusal.cause == "limit.max_bytes"
    assert "maximum bytes exceeded" in refusal.detail and "10077" in refusal.detail


def test_storage_exhausted_and_jetstream_off_are_told_apart() -> None:
    exhausted = refusal_of(_unavailable(10023, "insufficient resources"))
    disabled = refusal_of(_unavailable(10076, "jetstream not enabled"))
    silent = refusal_of(nats.js.errors.ServiceUnavailableError())
    reservation = refusal_of(
        nats.js.errors.ServerError(code=500, err_code=10047, description="insufficient storage resources available")
    )
    assert exhausted is not None and exhausted.cause == "server.insufficient_resources"
    assert "disk is full" in exhausted.detail
    assert disabled is not None and disabled.cause == "server.jetstream_disabled"
    assert silent is not None and silent.cause == "server.jetstream_unavailable"
    assert reservation is not None and reservation.cause == "server.storage_reservation"


def test_errors_that_are_not_refusals_keep_their_own_words() -> None:
    assert refusal_of(TimeoutError()) is None
    assert (
        refusal_of(nats.js.errors.BadRequestError(code=400, err_code=10058, description="stream name in use")) is None
    )
    assert describe_bus_error(TimeoutError()) == "TimeoutError()"
    described = describe_bus_error(_unavailable(10077, "maximum messages exceeded"))
    assert described.startswith("the server refused the write: limit.max_msgs")


def test_a_stream_within_five_percent_of_a_limit_is_full() -> None:
    uses = [
        StreamUse(name="FULL", bytes=980, max_bytes=1000, messages=3, max_msgs=-1),
        StreamUse(name="ROOMY", bytes=500, max_bytes=1000, messages=3, max_msgs=-1),
        StreamUse(name="UNLIMITED", bytes=10**12, max_bytes=-1, messages=10**9, max_msgs=-1),
        StreamUse(name="COUNTED", bytes=1, max_bytes=-1, messages=10, max_msgs=10),
    ]
    problems = full_streams(uses)
    assert len(problems) == 2
    assert problems[0].startswith("stream FULL is at its byte limit (980 of max_bytes 1,000)")
    assert problems[1].startswith("stream COUNTED is at its message limit")


def test_an_organs_reported_refusal_is_named_with_the_organ() -> None:
    problems = organ_refusals(
        {
            "stomach-1": {"organ": "stomach", "refusal": "limit.max_bytes: a stream is at its byte limit"},
            "border-1": {"organ": "border", "refusal": ""},
        }
    )
    assert problems == [
        "stomach (stomach-1): the server refused its last write: limit.max_bytes: a stream is at its byte limit"
    ]


def test_a_write_unanswered_while_connected_is_named_and_one_while_away_is_not() -> None:
    stalled = unconfirmed_write(nats.errors.TimeoutError(), connected=True, waited_s=3.0)
    assert stalled is not None and stalled.cause == "server.write_unconfirmed" and "within 3 s" in stalled.detail
    assert unconfirmed_write(TimeoutError(), connected=False, waited_s=3.0) is None
    assert unconfirmed_write(nats.errors.ConnectionClosedError(), connected=True, waited_s=3.0) is None


def test_deliveries_spent_while_the_server_wanted_room_are_named_by_it() -> None:
    reason = "delivered 6 times (ICHOR_MAX_DELIVER=6) without being settled"
    stream_full = "limit.max_bytes: a stream is at its byte limit (max_bytes) and refuses new messages"
    disk_full = "server.write_unconfirmed: the server is connected but confirmed no write within 3 s"
    assert (
        named_by_exhaustion(reason, stream_full)
        == f"limit.max_bytes: {reason}; the server's last refusal: {stream_full}"
    )
    assert named_by_exhaustion(reason, disk_full).startswith(f"server.out_of_storage: {reason}; ")


def test_deliveries_spent_otherwise_keep_their_reason() -> None:
    reason = "delivered 6 times (ICHOR_MAX_DELIVER=6) without being settled"
    assert named_by_exhaustion(reason, "") == reason
    assert named_by_exhaustion(reason, "limit.max_msg_size: the message is larger than max_msg_size") == reason
    assert {exhaustion_of("server.insufficient_resources"), exhaustion_of("server.disk_full")} == {
        "server.out_of_storage"
    }
    assert exhaustion_of("server.no_stream") is None
