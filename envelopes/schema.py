"""The JSON Schema of the contract, carrying every rule the decoder enforces that JSON Schema can state.

Field rules (patterns, lengths, formats, minimums, the version constant) are annotations on the types
(``envelopes.types``), so msgspec writes them. The rules that tie two fields together are added here,
once, for both ``ichor schema`` and the AsyncAPI document:

* the tag rule: an envelope's ``kind`` equals its payload's ``kind``;
* an envelope whose payload carries digested content (digested, yield, admitted) names its ``tier``;
* a frame served by ``reference`` has no content, no content digest, no content reference and costs 0 tokens;
  any other carries content and its digest.

What JSON Schema cannot state is in the descriptions: a span is ``[start, end)`` with ``start <= end``; a frame's
content reference names its ``content_digest``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from envelopes.types import AnyPayload, Envelope

__all__ = ["PAYLOAD_KINDS", "contract_schema", "contract_schema_components"]

PAYLOAD_KINDS: tuple[str, ...] = tuple(member.__struct_config__.tag for member in AnyPayload.__args__)
_CARRIES_DIGEST = ("digested", "yield", "admitted")

_TAG_RULE = (
    "The tag rule: `kind` is the payload's tag, one of "
    + ", ".join(PAYLOAD_KINDS)
    + "; an envelope whose payload carries digested content (digested, yield, admitted) names its `tier`."
)


def _envelope_rules(envelope: dict[str, Any]) -> None:
    envelope["properties"]["kind"] = {"enum": list(PAYLOAD_KINDS), "description": "equals payload.kind"}
    rules: list[dict[str, Any]] = [
        {
            "if": {"properties": {"kind": {"const": kind}}},
            "then": {"properties": {"payload": {"properties": {"kind": {"const": kind}}}}},
        }
        for kind in PAYLOAD_KINDS
    ]
    rules.append(
        {
            "if": {"properties": {"kind": {"enum": list(_CARRIES_DIGEST)}}},
            "then": {"properties": {"tier": {"type": "string"}}},
        }
    )
    envelope["allOf"] = rules
    envelope["description"] = f"{envelope.get('description', '')}\n\n{_TAG_RULE}".strip()


def _frame_rules(frame: dict[str, Any]) -> None:
    frame["if"] = {"properties": {"representation": {"const": "reference"}}}
    frame["then"] = {
        "properties": {
            "content": {"type": "null"},
            "content_digest": {"type": "null"},
            "content_ref": {"type": "null"},
            "token_cost": {"const": 0},
        }
    }
    frame["else"] = {"properties": {"content": {"type": "string"}, "content_digest": {"type": "string"}}}


def _with_rules(definitions: dict[str, Any]) -> dict[str, Any]:
    _envelope_rules(definitions["Envelope"])
    _frame_rules(definitions["Frame"])
    return definitions


def contract_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) of the envelope and every type it contains, with the cross-field rules."""
    schema = msgspec.json.schema(Envelope)
    _with_rules(schema["$defs"])
    return schema


def contract_schema_components(types: tuple[Any, ...], ref_template: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``msgspec.json.schema_components`` of ``types`` (which must include ``Envelope``), with the rules."""
    refs, definitions = msgspec.json.schema_components(types, ref_template=ref_template)
    return refs, _with_rules(definitions)
