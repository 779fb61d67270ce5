"""A dead letter always fits one message (#28): as it is, or cut with the cut stated (no bus needed)."""

from __future__ import annotations

from envelopes.ids import digest_bytes
from organs.runtime.dead_letters import CUT, WHOLE, within_max_payload
from organs.runtime.payload import message_size

MAX_PAYLOAD = 64 * 1024
PLACE = ("ICHOR_TRACT", 7)


def test_a_letter_that_fits_is_kept_as_it_is() -> None:
    headers = {"Ichor-Dlq-Reason": "undecodable envelope", "Nats-Msg-Id": "dlq-stomach-ICHOR_TRACT-7"}
    assert within_max_payload(b"x" * 1000, headers, PLACE, MAX_PAYLOAD) == (b"x" * 1000, headers)


def test_a_letter_past_max_payload_keeps_its_first_bytes_and_names_the_whole() -> None:
    data = bytes(range(256)) * (MAX_PAYLOAD // 256)
    kept, stated = within_max_payload(data, {"Ichor-Dlq-Reason": "undecodable envelope"}, PLACE, MAX_PAYLOAD)
    assert data.startswith(kept) and message_size(kept, stated) <= MAX_PAYLOAD
    assert stated[CUT].startswith(f"kept the first {len(kept)} of {len(data)} bytes")
    assert stated[WHOLE] == "ICHOR_TRACT 7" and stated["Ichor-Dlq-Digest"] == digest_bytes(data)


def test_headers_that_leave_no_room_are_dropped_and_the_cut_says_so() -> None:
    headers = {"X-Padding": "v" * 40_000, "Ichor-Dlq-Reason": "core raised", "Nats-Msg-Id": "dlq-stomach-x"}
    kept, stated = within_max_payload(b"d" * 30_000, headers, PLACE, MAX_PAYLOAD)
    assert "X-Padding" not in stated and stated["Ichor-Dlq-Reason"] == "core raised"
    assert "bytes of headers it came with dropped" in stated[CUT]
    assert message_size(kept, stated) <= MAX_PAYLOAD and len(kept) > 0
