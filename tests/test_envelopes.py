"""The wire contract: round trips, strictness, schema."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings

from envelopes import DecodeError, Envelope, decode, decode_json, encode, encode_json, envelope_schema
from envelopes.subjects import Subjects
from envelopes.types import UserInput
from organs.secretion import paste_envelope, secrete
from tests.strategies import envelopes
from tests.support.envelopes import AT, deferred_notice_envelope, digested_envelope


@settings(max_examples=150, deadline=None)
@given(envelopes())
def test_every_envelope_round_trips_through_msgpack_and_json(envelope: Envelope) -> None:
    assert decode(encode(envelope)) == envelope
    assert decode_json(encode_json(envelope)) == envelope


def _paste_dict() -> dict[str, object]:
    envelope = paste_envelope("a log\nand an ask?", origin=UserInput(actor="ana"), source="host", instance="h1", now=AT)
    return msgspec.to_builtins(envelope)


def test_unknown_payload_tag_is_rejected_with_its_path() -> None:
    document = _paste_dict()
    document["payload"]["kind"] = "smoothie"  # type: ignore[index]
    with pytest.raises(msgspec.ValidationError, match=r"\$\.payload"):
        decode(msgspec.msgpack.encode(document))


def test_unknown_provenance_tag_is_rejected_with_its_path() -> None:
    document = _paste_dict()
    document["chain"]["origin"]["kind"] = "rumour"  # type: ignore[index]
    with pytest.raises(msgspec.ValidationError, match=r"\$\.chain\.origin"):
        decode(msgspec.msgpack.encode(document))


def test_wrong_type_is_rejected_with_its_path() -> None:
    document = _paste_dict()
    document["payload"]["budget_tokens"] = "lots"  # type: ignore[index]
    with pytest.raises(
        msgspec.ValidationError, match=r"Expected `int \| null`, got `str` - at `\$\.payload\.budget_tokens`"
    ):
        decode(msgspec.msgpack.encode(document))


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("id",), "not-hex", "id must be 32 lowercase hex"),
        (("trace",), "garbage", "traceparent"),
        (("created_at",), "2026-11-30 10:00", "RFC 3339"),
        (("chain", "input_digest"), "sha256:abc", "blake3"),
        (("kind",), "digested", "kind must equal"),
        (("v",), 99, "unsupported schema version"),
    ],
)
def test_invariants_are_enforced_on_decode(path: tuple[str, ...], value: object, message: str) -> None:
    document = _paste_dict()
    target = document
    for key in path[:-1]:
        target = target[key]  # type: ignore[assignment]
    target[path[-1]] = value
    with pytest.raises(msgspec.ValidationError, match=message):
        decode(msgspec.msgpack.encode(document))


@pytest.mark.parametrize("garbage", [b"", b"\xc1", b"\x92\x01", msgspec.msgpack.encode({"v": 1})[:-1]])
def test_undecodable_bytes_raise_a_decode_error(garbage: bytes) -> None:
    with pytest.raises(DecodeError):
        decode(garbage)


def test_new_fields_with_defaults_still_decode_old_envelopes() -> None:
    document = _paste_dict()
    del document["payload"]["text_ref"]  # type: ignore[attr-defined]
    document["payload"]["some_future_field"] = 1  # type: ignore[index]
    assert decode(msgspec.msgpack.encode(document)).payload.text_ref is None  # type: ignore[union-attr]


def test_a_chain_from_an_older_stomach_that_still_carries_pasted_at_decodes_to_its_one_home() -> None:
    # Before the paste's time had one home, the stomach also wrote it as chain.pasted_at.
    digested = digested_envelope()
    document = msgspec.to_builtins(digested)
    document["chain"]["pasted_at"] = digested.chain.received.created_at  # type: ignore[union-attr]
    for decoded in (decode(msgspec.msgpack.encode(document)), decode_json(msgspec.json.encode(document))):
        assert decoded == digested
        assert not hasattr(decoded.chain, "pasted_at")


def test_every_envelope_after_the_paste_carries_the_paste_time_as_received_follow_ups_included() -> None:
    notice = deferred_notice_envelope()
    follow_up = secrete(
        notice,
        organ="stomach",
        instance="stomach-2",
        dest="absorption",
        payload=digested_envelope().payload,
        stages=("ingested", "classified", "digested"),
        tier="full",
        now="2025-01-02T03:09:05.000Z",
    )
    assert notice.chain.received is not None and follow_up.chain.received == notice.chain.received
    assert follow_up.chain.received.created_at == AT


def test_schema_names_every_payload_and_provenance_kind() -> None:
    schema = envelope_schema()
    definitions = schema["$defs"]
    for name in (
        "Paste",
        "Digested",
        "Yield",
        "Admitted",
        "Rejected",
        "UserInput",
        "External",
        "SystemInternal",
        "OrganSecretion",
    ):
        assert name in definitions


def test_subjects_follow_the_prefix() -> None:
    subjects = Subjects("acme")
    assert subjects.stomach_in == "acme.stomach.in"
    assert subjects.dlq("border") == "acme.dlq.border"
    assert subjects.tract_stream == "ACME_TRACT"
    assert all(subject.startswith("acme.") for subject in subjects.tract_subjects)
