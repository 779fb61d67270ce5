"""The envelope decoder on hostile bytes: it returns an ``Envelope`` or raises one of ``DecodeError``, nothing else.

Truncations, corruptions, wrong values and tags, ten thousand levels of nesting,
invalid UTF-8 and 4 GiB length claims. The decode figures (how long each takes
against a valid envelope's) are in ``bench/hostile_bench.py``; a decode that never
finishes fails here on the suite's per-test timeout.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envelopes.codec import DecodeError, decode, decode_frame_request, encode
from envelopes.types import Envelope, Paste
from tests.support.hostile import (
    HUGE_LENGTH_CLAIMS,
    INVALID_UTF8,
    PAYLOAD_TAGS,
    PROVENANCE_TAGS,
    msgpack_str,
    msgpack_values,
    nested_arrays,
    nested_maps,
    paths,
    raw_map,
    replaced,
    splice,
    valid_envelopes,
)

DECODER_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
VALID = valid_envelopes()
VALID_BYTES = [encode(envelope) for envelope in VALID]
VALID_MAPS = [raw_map(envelope) for envelope in VALID]
# What refusing a length claim may allocate: the message, an error and its text, never the claimed size.
CLAIM_PEAK_BYTES = 64 * 1024


def decode_outcome(data: bytes) -> Envelope | None:
    """Decode ``data``; an allowed failure is ``None``, anything else propagates and fails the test."""
    try:
        envelope = decode(data)
    except DecodeError:
        return None
    # Whatever decodes must survive the round trip: a worker re-encodes what it forwards.
    assert decode(encode(envelope)) == envelope
    return envelope


@DECODER_SETTINGS
@given(st.binary(max_size=4096))
def test_arbitrary_bytes_decode_or_raise_decode_error(data: bytes) -> None:
    decode_outcome(data)


@pytest.mark.parametrize("index", range(len(VALID_BYTES)), ids=[envelope.kind for envelope in VALID])
def test_every_truncation_of_a_valid_envelope_is_a_decode_error(index: int) -> None:
    whole = VALID_BYTES[index]
    assert decode(whole) == VALID[index]
    # Every proper prefix, not a sample: a prefix of one msgpack map is never a whole value.
    for length in range(len(whole)):
        with pytest.raises(DecodeError):
            decode(whole[:length])


@DECODER_SETTINGS
@given(st.sampled_from(VALID_BYTES), st.data())
def test_truncated_and_extended_envelopes_decode_or_raise(whole: bytes, data: st.DataObject) -> None:
    cut = data.draw(st.integers(min_value=0, max_value=len(whole)))
    tail = data.draw(st.binary(max_size=64))
    decode_outcome(whole[:cut] + tail)


@DECODER_SETTINGS
@given(st.sampled_from(VALID_BYTES), st.data())
def test_corrupted_bytes_decode_or_raise(whole: bytes, data: st.DataObject) -> None:
    corrupted = bytearray(whole)
    for _ in range(data.draw(st.integers(min_value=1, max_value=8))):
        position = data.draw(st.integers(min_value=0, max_value=len(corrupted) - 1))
        corrupted[position] = data.draw(st.integers(min_value=0, max_value=255))
    decode_outcome(bytes(corrupted))


@DECODER_SETTINGS
@given(st.sampled_from(VALID_MAPS), st.data())
def test_any_field_with_any_wrong_value_decodes_or_raises(base: dict[str, Any], data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(list(paths(base))))
    value = data.draw(msgpack_values)
    decode_outcome(msgspec.msgpack.encode(replaced(base, path, value)))


@DECODER_SETTINGS
@given(st.sampled_from(VALID_MAPS), st.data())
def test_dropped_fields_decode_or_raise(base: dict[str, Any], data: st.DataObject) -> None:
    containers = [path for path in paths(base) if isinstance(_at(base, path), dict) and _at(base, path)]
    path = data.draw(st.sampled_from(containers))
    copy = msgspec.msgpack.decode(msgspec.msgpack.encode(base))
    holder = _at(copy, path)
    del holder[data.draw(st.sampled_from(sorted(holder)))]
    decode_outcome(msgspec.msgpack.encode(copy))


def _at(data: Any, path: tuple[str | int, ...]) -> Any:
    for key in path:
        data = data[key]
    return data


@pytest.mark.parametrize(
    ("path", "tag"),
    [
        *((("payload", "kind"), tag) for tag in ("", "Paste", "paste ", "unknown", "\x00", "yield\x00")),
        *((("chain", "origin", "kind"), tag) for tag in ("", "admin", "User_Input", *PAYLOAD_TAGS)),
        *((("provenance", "kind"), tag) for tag in ("root", *PAYLOAD_TAGS)),
        *((("kind",), tag) for tag in ("nope", "digested", "deferred_notice")),
    ],
)
def test_wrong_tags_are_decode_errors(path: tuple[str, ...], tag: str) -> None:
    # The paste map: none of these tags names the union member whose fields it carries.
    with pytest.raises(DecodeError):
        decode(msgspec.msgpack.encode(replaced(VALID_MAPS[0], path, tag)))


@pytest.mark.parametrize("tag", [tag for tag in PAYLOAD_TAGS if tag != "paste"])
def test_a_paste_body_under_another_payload_tag_is_a_decode_error(tag: str) -> None:
    data = replaced(replaced(VALID_MAPS[0], ("payload", "kind"), tag), ("kind",), tag)
    with pytest.raises(DecodeError):
        decode(msgspec.msgpack.encode(data))


@pytest.mark.parametrize("tag", PROVENANCE_TAGS)
def test_provenance_tags_without_their_fields_are_decode_errors(tag: str) -> None:
    with pytest.raises(DecodeError):
        decode(msgspec.msgpack.encode(replaced(VALID_MAPS[0], ("chain", "origin"), {"kind": tag})))


TYPED_PATHS: list[tuple[str | int, ...]] = [
    ("source",),
    ("v",),
    ("payload",),
    ("payload", "text"),
    ("payload", "intent"),
    ("provenance",),
    ("chain",),
    ("chain", "steps"),
    ("chain", "origin", "actor"),
]


def _nesting_params() -> list[Any]:
    params = []
    for name, nesting in (("arrays", nested_arrays), ("maps", nested_maps)):
        for path in TYPED_PATHS:
            params.append(pytest.param(path, nesting, id=f"{name}-{'.'.join(map(str, path))}"))
    return params


@pytest.mark.parametrize(("path", "nesting"), _nesting_params())
def test_ten_thousand_levels_in_a_typed_field_are_a_decode_error(
    path: tuple[str | int, ...], nesting: Callable[[int], bytes]
) -> None:
    assert decode_outcome(splice(VALID_MAPS[0], path, nesting(10_000))) is None


UNKNOWN_PATHS: list[tuple[str | int, ...]] = [("x_extra",), ("payload", "x_extra"), ("chain", "origin", "x_extra")]


@pytest.mark.parametrize("path", UNKNOWN_PATHS, ids=[".".join(map(str, path)) for path in UNKNOWN_PATHS])
def test_deep_nesting_in_an_unknown_field_is_a_decode_error(path: tuple[str | int, ...]) -> None:
    # Unknown fields are allowed (schema evolution), so the decoder skips them: it must skip safely.
    assert decode_outcome(splice(VALID_MAPS[0], path, nested_arrays(10_000))) is None


def test_deep_nesting_in_a_frame_request_is_a_decode_error() -> None:
    request = splice({"id": "blake3:" + "0" * 64, "x_extra": 0}, ("x_extra",), nested_arrays(10_000))
    with pytest.raises(DecodeError):
        decode_frame_request(request)


STRING_PATHS: list[tuple[str | int, ...]] = [
    ("source",),
    ("id",),
    ("payload", "text"),
    ("payload", "kind"),
    ("chain", "origin", "actor"),
    ("chain", "input_digest"),
]


@pytest.mark.parametrize("path", STRING_PATHS, ids=[".".join(map(str, path)) for path in STRING_PATHS])
@pytest.mark.parametrize("bad", INVALID_UTF8, ids=[bad.hex() for bad in INVALID_UTF8])
def test_invalid_utf8_in_any_string_is_a_decode_error(path: tuple[str | int, ...], bad: bytes) -> None:
    data = splice(VALID_MAPS[0], path, msgpack_str(b"text " + bad + b" text"))
    with pytest.raises(DecodeError):
        decode(data)


@pytest.mark.parametrize("bad", INVALID_UTF8, ids=[bad.hex() for bad in INVALID_UTF8])
def test_invalid_utf8_in_an_unknown_field_never_travels_on(bad: bytes) -> None:
    # msgspec skips an unknown field unread (schema evolution), so the envelope may decode; what
    # matters is that the bad bytes are gone from what a worker re-encodes and forwards.
    data = splice(VALID_MAPS[0], ("x_extra",), msgpack_str(b"text " + bad + b" text"))
    envelope = decode_outcome(data)
    assert envelope is None or bad not in encode(envelope)


def test_nul_bytes_in_free_text_survive_and_in_checked_fields_are_refused() -> None:
    text = "log line\x00with a NUL\n\n\x00Why?\x00"
    with_nuls = decode(msgspec.msgpack.encode(replaced(VALID_MAPS[0], ("payload", "text"), text)))
    assert isinstance(with_nuls.payload, Paste) and with_nuls.payload.text == text
    for path in (("id",), ("trace",), ("created_at",), ("chain", "input_digest")):
        value = _at(VALID_MAPS[0], path)
        with pytest.raises(DecodeError):
            decode(msgspec.msgpack.encode(replaced(VALID_MAPS[0], path, value[:-1] + "\x00")))


@pytest.mark.parametrize("claim", HUGE_LENGTH_CLAIMS, ids=[claim[:1].hex() for claim in HUGE_LENGTH_CLAIMS])
@pytest.mark.parametrize("where", ["whole", "payload.text"])
def test_huge_length_claims_allocate_nothing_for_the_claim(claim: bytes, where: str) -> None:
    data = claim if where == "whole" else splice(VALID_MAPS[0], ("payload", "text"), claim)
    tracemalloc.start()
    try:
        outcome = decode_outcome(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert outcome is None
    # A decoder that believed the 4 GiB header would reserve it (or fail trying); the refusal costs bytes.
    assert peak < CLAIM_PEAK_BYTES, f"{peak:,} bytes allocated for a {len(data)}-byte message"
