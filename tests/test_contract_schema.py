"""The published JSON Schema carries the wire rules: a validator refuses what the organs' decoder refuses."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import jsonschema
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envelopes.codec import DecodeError, decode, encode, encode_json
from envelopes.ids import digest_bytes
from envelopes.schema import contract_schema
from envelopes.types import Digested, StoredText
from organs.stomach import ingest_paste
from organs.stomach.worker import digest_paste
from tests.strategies import envelopes
from tests.support.envelopes import AT, digested_envelope, fresh_paste

VALIDATOR = jsonschema.Draft202012Validator(contract_schema())


def _schema_accepts(document: Any) -> bool:
    return bool(VALIDATOR.is_valid(document))


def _decoder_accepts(document: Any) -> bool:
    try:
        decode(msgspec.msgpack.encode(document))
    except DecodeError:
        return False
    return True


def _real_paste() -> dict[str, Any]:
    # Through JSON, as a host holds it: arrays are lists.
    document: dict[str, Any] = msgspec.json.decode(encode_json(fresh_paste()))
    return document


def test_the_schema_is_valid_json_schema_2020_12() -> None:
    jsonschema.Draft202012Validator.check_schema(contract_schema())


def test_a_real_paste_passes_the_schema() -> None:
    assert _schema_accepts(_real_paste())


def test_a_chain_from_an_older_stomach_that_still_carries_pasted_at_passes_the_schema() -> None:
    document: dict[str, Any] = msgspec.json.decode(encode_json(digested_envelope()))
    document["chain"]["pasted_at"] = document["chain"]["received"]["created_at"]
    assert "pasted_at" not in contract_schema()["$defs"]["ProvenanceChain"]["properties"]
    assert _schema_accepts(document) and _decoder_accepts(document)


@pytest.mark.parametrize(("field", "value"), [("created_at", "not a date"), ("id", ""), ("trace", "zzz"), ("v", 999)])
def test_a_value_the_stomach_dead_letters_fails_the_schema(field: str, value: Any) -> None:
    document = _real_paste()
    document[field] = value
    assert not _decoder_accepts(document)
    errors = list(VALIDATOR.iter_errors(document))
    assert {tuple(error.absolute_path) for error in errors} == {(field,)}


def test_a_kind_other_than_the_payloads_fails_the_schema() -> None:
    document = _real_paste()
    document["kind"] = "rejected"
    assert not _schema_accepts(document)
    assert not _decoder_accepts(document)


def test_a_digest_in_capitals_fails_the_schema() -> None:
    document = _real_paste()
    document["chain"]["input_digest"] = document["chain"]["input_digest"].upper()
    assert not _schema_accepts(document)
    assert not _decoder_accepts(document)


def _digest_by_reference() -> dict[str, Any]:
    """A digested envelope whose goal travels by reference, through JSON as a host holds it."""
    paste = fresh_paste()
    digested = digest_paste(paste, ingest_paste(paste.payload.text), instance="s1", now=AT)
    assert isinstance(digested.payload, Digested)
    goal = digested.payload.goal.encode()
    ref = StoredText(name=digest_bytes(goal).removeprefix("blake3:"), size=len(goal), digest=digest_bytes(goal))
    slim = msgspec.structs.replace(digested, payload=msgspec.structs.replace(digested.payload, goal="", goal_ref=ref))
    document: dict[str, Any] = msgspec.json.decode(encode_json(slim))
    return document


def test_a_digest_with_its_goal_by_reference_passes_the_schema() -> None:
    document = _digest_by_reference()
    assert document["payload"]["goal_ref"]["size"] > 0
    assert _schema_accepts(document) and _decoder_accepts(document)


@pytest.mark.parametrize(
    ("field", "value"),
    [("name", "../" + "0" * 61), ("name", "A" * 64), ("size", -1), ("digest", "blake3:" + "0" * 63)],
)
def test_a_goal_reference_the_decoder_refuses_fails_the_schema(field: str, value: Any) -> None:
    document = _digest_by_reference()
    document["payload"]["goal_ref"][field] = value
    assert not _decoder_accepts(document)
    assert not _schema_accepts(document)
    # The payload and the reference are unions: an error of the branches beneath names the field.
    assert ("payload", "goal_ref", field) in _paths_beneath(list(VALIDATOR.iter_errors(document)))


def _frame_by_reference() -> dict[str, Any]:
    """A digested envelope whose first frame's content travels by reference, through JSON as a host holds it."""
    paste = fresh_paste()
    digested = digest_paste(paste, ingest_paste(paste.payload.text), instance="s1", now=AT)
    assert isinstance(digested.payload, Digested)
    first, *rest = digested.payload.frames
    content = (first.content or "").encode()
    ref = StoredText(
        name=digest_bytes(content).removeprefix("blake3:"), size=len(content), digest=digest_bytes(content)
    )
    slim = msgspec.structs.replace(first, content="", content_ref=ref)
    payload = msgspec.structs.replace(digested.payload, frames=(slim, *rest))
    document: dict[str, Any] = msgspec.json.decode(encode_json(msgspec.structs.replace(digested, payload=payload)))
    return document


def test_a_digest_with_a_frame_by_reference_passes_the_schema() -> None:
    document = _frame_by_reference()
    frame = document["payload"]["frames"][0]
    assert frame["content"] == "" and frame["content_ref"]["digest"] == frame["content_digest"]
    assert _schema_accepts(document) and _decoder_accepts(document)


def test_a_reference_frame_with_a_content_reference_fails_the_schema() -> None:
    document = _frame_by_reference()
    frame = document["payload"]["frames"][0]
    frame.update(representation="reference", content=None, content_digest=None, token_cost=0)
    assert not _decoder_accepts(document)
    assert not _schema_accepts(document)
    assert ("payload", "frames", 0, "content_ref") in _paths_beneath(list(VALIDATOR.iter_errors(document)))


def test_a_content_reference_that_names_other_bytes_is_refused_and_the_schema_says_so() -> None:
    # Two fields equal to each other is past what JSON Schema states: the rule is in the field's description.
    document = _frame_by_reference()
    document["payload"]["frames"][0]["content_ref"]["digest"] = "blake3:" + "0" * 64
    assert not _decoder_accepts(document)
    described = contract_schema()["$defs"]["Frame"]["properties"]["content_ref"]["description"]
    assert "its digest is content_digest" in described


def _paths_beneath(errors: list[Any]) -> set[tuple[Any, ...]]:
    paths: set[tuple[Any, ...]] = set()
    while errors:
        error = errors.pop()
        paths.add(tuple(error.absolute_path))
        errors.extend(error.context or ())
    return paths


def test_the_cli_prints_the_schema_with_its_rules() -> None:
    result = subprocess.run([sys.executable, "-m", "organs.cli", "schema"], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout) == json.loads(json.dumps(contract_schema()))


# Values near and far from each rule: the right shape with one character off, other scripts' digits,
# a trailing line break, capitals, wrong types. Each replaces one field of a valid envelope.
_near_misses = st.sampled_from(
    [
        "",
        "zzz",
        "not a date",
        "0" * 32,
        "0" * 31,
        "0" * 32 + "\n",
        "A" * 32,
        "blake3:" + "0" * 64,
        "blake3:" + "0" * 63,
        "blake3:" + "0" * 64 + "\n",
        "BLAKE3:" + "0" * 64,
        "00-" + "1" * 32 + "-" + "2" * 16 + "-01",
        "01-" + "1" * 32 + "-" + "2" * 16 + "-01",
        "00-" + "1" * 32 + "-" + "2" * 16 + "-01\n",
        "2026-12-01T21:00:00Z",
        "2026-12-01T21:00:00.123456789Z",
        "2026-12-01T21:00:00.1234567890Z",
        "2026-12-01T21:00:00+00:00",
        "2026-12-01T21:00:00Z\n",
        "٢٠٢٦-12-01T21:00:00Z",
        "2026-12-01 21:00:00Z",
        "paste",
        "digested",
        "yield",
        "admitted",
        "rejected",
        "deferred_notice",
        "full",
        "brain",
    ]
)
_values = st.one_of(
    _near_misses,
    st.text(max_size=40),
    st.integers(-2, 1000),
    st.none(),
    st.booleans(),
    st.just([]),
    st.just({}),
)
_paths = st.sampled_from(
    [
        ("v",),
        ("id",),
        ("kind",),
        ("dest",),
        ("tier",),
        ("trace",),
        ("created_at",),
        ("source",),
        ("chain", "input_digest"),
        ("chain", "origin", "kind"),
        ("payload", "kind"),
        ("payload", "budget_tokens"),
        ("payload", "text_ref"),
        ("payload", "goal_ref"),
        ("payload", "source_ref"),
        ("payload", "meta"),
        ("session",),
    ]
)


def _replaced(document: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    node = document
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return document


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(envelopes(), st.lists(st.tuples(_paths, _values), max_size=2))
def test_the_schema_and_the_decoder_agree_on_generated_envelopes(
    envelope: Any, changes: list[tuple[tuple[str, ...], Any]]
) -> None:
    document: dict[str, Any] = msgspec.msgpack.decode(encode(envelope))
    for path, value in changes:
        document = _replaced(document, path, value)
    assert _schema_accepts(document) == _decoder_accepts(document), document
