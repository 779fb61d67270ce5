"""The AsyncAPI document is generated from the code and must agree with it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from envelopes.subjects import Subjects
from envelopes.types import AnyPayload
from organs.asyncapi import asyncapi_document
from tests.support.node import node_or_skip, npm_installed


def test_every_tract_subject_has_a_channel() -> None:
    document = asyncapi_document(Subjects("acme"))
    addresses = {channel["address"] for channel in document["channels"].values()}
    subjects = Subjects("acme")
    served = {subjects.frames_get, subjects.frames_get_for("{tenant}"), subjects.frames_raw, "acme.dlq.{organ}"}
    assert set(subjects.tract_subjects) | served == addresses


def test_every_operation_points_at_a_channel_and_every_ref_resolves() -> None:
    document = asyncapi_document()
    assert document["asyncapi"] == "3.0.0"
    text = json.dumps(document)
    for ref in {part.split('"')[0] for part in text.split('"$ref": "')[1:]}:
        node = document
        for key in ref.removeprefix("#/").split("/"):
            node = node[key]
        assert node is not None


def test_the_envelope_schema_names_every_payload_kind() -> None:
    schemas = asyncapi_document()["components"]["schemas"]
    kinds = {member.__struct_config__.tag for member in AnyPayload.__args__}  # type: ignore[attr-defined]
    described = {
        schema["properties"]["kind"]["enum"][0]
        for schema in schemas.values()
        if "enum" in schema.get("properties", {}).get("kind", {})
    }
    assert kinds <= described


def test_a_goal_prompt_or_frame_by_reference_is_described_where_it_travels() -> None:
    schemas = asyncapi_document()["components"]["schemas"]
    stored = schemas["StoredText"]
    assert set(stored["required"]) == {"name", "size", "digest"}
    assert stored["properties"]["name"]["pattern"] == "^[0-9a-f]{64}$"
    for carrier in ("Digested", "Yield", "Admitted", "Rejected"):
        refs = json.dumps(schemas[carrier]["properties"]["goal_ref"])
        assert "StoredText" in refs and "null" in refs, carrier
    assert "StoredText" in json.dumps(schemas["CompiledPrompt"]["properties"]["text_ref"])
    content_ref = json.dumps(schemas["Frame"]["properties"]["content_ref"])
    assert "StoredText" in content_ref and "null" in content_ref


def test_the_cli_prints_the_document() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "organs.cli", "asyncapi"], capture_output=True, text=True, check=True
    )
    assert json.loads(result.stdout) == json.loads(json.dumps(asyncapi_document()))


# The official parser, pinned: a newer one may add rules, and the pin is bumped on purpose.
ASYNCAPI_PARSER = {"name": "ichor-asyncapi-check", "private": True, "dependencies": {"@asyncapi/parser": "3.6.6"}}


def test_the_official_asyncapi_parser_reports_no_error(tmp_path: Path) -> None:
    folder = npm_installed("asyncapi-parser", ASYNCAPI_PARSER)
    document = tmp_path / "asyncapi.json"
    document.write_text(json.dumps(asyncapi_document()))
    script = Path(__file__).parent / "support" / "parse_asyncapi.cjs"
    result = subprocess.run(
        [node_or_skip(), str(script), str(document)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={**os.environ, "NODE_PATH": str(folder / "node_modules")},
    )
    report = json.loads(result.stdout)
    errors = [diagnostic for diagnostic in report["diagnostics"] if diagnostic["severity"] == 0]
    assert errors == []
    assert report["parsed"] is True
