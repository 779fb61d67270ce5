"""An AsyncAPI 3.0 document of the tract, generated from the types and subjects.

Nothing here is written by hand twice: channel addresses come from
``envelopes.subjects.Subjects`` and message schemas from the contract's JSON
Schema (``envelopes.schema``), so the document cannot drift from the code.

AsyncAPI's default schema format is its own superset of JSON Schema draft-07, so
the 2020-12 keywords msgspec writes are said the draft-07 way: a tuple's
``prefixItems`` (with ``items: false``) as an ``items`` list closed by
``additionalItems: false``, and OpenAPI's discriminator object as AsyncAPI's
discriminator, the name of the tag property.
"""

from __future__ import annotations

from typing import Any

from envelopes.schema import contract_schema_components
from envelopes.subjects import Subjects
from envelopes.types import SCHEMA_VERSION, Envelope, FrameReply, FrameRequest
from organs.anatomy import ORGAN_NAMES, ORGANS

__all__ = ["asyncapi_document"]

# (channel id, subject attribute, payload kinds it carries); who sends and receives is the organ table's.
_TRACT_CHANNELS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("stomachIn", "stomach_in", ("paste",)),
    ("stomachDeferred", "stomach_deferred", ("deferred_notice",)),
    ("stomachLarge", "stomach_large", ("paste",)),
    ("absorptionIn", "absorption_in", ("digested",)),
    ("borderIn", "border_in", ("yield",)),
    ("brainIn", "brain_in", ("admitted",)),
    ("borderRejected", "border_rejected", ("rejected",)),
    ("outcomes", "outcomes", ("admitted", "rejected")),
)


def _draft_07(node: Any) -> Any:
    """``node`` (JSON Schema 2020-12 as msgspec writes it) in AsyncAPI's draft-07 schema dialect."""
    if isinstance(node, list):
        return [_draft_07(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {key: _draft_07(value) for key, value in node.items()}
    if "prefixItems" in converted:
        converted["items"] = converted.pop("prefixItems")
        converted["additionalItems"] = False
    discriminator = converted.get("discriminator")
    if isinstance(discriminator, dict):
        converted["discriminator"] = discriminator["propertyName"]
    return converted


def _schemas() -> dict[str, Any]:
    (envelope_ref, request_ref, reply_ref), definitions = contract_schema_components(
        (Envelope, FrameRequest, FrameReply), ref_template="#/components/schemas/{name}"
    )
    return {"refs": (envelope_ref, request_ref, reply_ref), "definitions": _draft_07(definitions)}


def _tract_channels(names: Subjects, envelope_ref: Any, channels: dict[str, Any], operations: dict[str, Any]) -> None:
    """The tract's envelope channels into ``channels``, and who receives and sends on each into ``operations``."""
    headers = {
        "type": "object",
        "properties": {
            "Nats-Msg-Id": {"type": "string", "description": "the envelope id; JetStream drops duplicates"},
            "traceparent": {"type": "string", "description": "W3C trace context"},
            "Ichor-Kind": {"type": "string", "description": "the payload kind"},
        },
    }
    for channel_id, attribute, kinds in _TRACT_CHANNELS:
        channels[channel_id] = {
            "address": getattr(names, attribute),
            "description": f"envelopes of kind {', '.join(kinds)} (msgpack on the wire)",
            "messages": {
                "envelope": {
                    "name": "Envelope",
                    "contentType": "application/msgpack",
                    "headers": headers,
                    "payload": envelope_ref,
                }
            },
        }
        for receiver in (organ.name for organ in ORGANS if attribute in (c.subject for c in organ.consumers)):
            operations[f"{receiver}Receives{channel_id[0].upper()}{channel_id[1:]}"] = {
                "action": "receive",
                "channel": {"$ref": f"#/channels/{channel_id}"},
            }
        for sender in (organ.name for organ in ORGANS if attribute in organ.outputs):
            operations[f"{sender}Sends{channel_id[0].upper()}{channel_id[1:]}"] = {
                "action": "send",
                "channel": {"$ref": f"#/channels/{channel_id}"},
            }
    for organ in ORGANS:
        if "border_rejected" not in organ.outputs:
            # Every organ tells a dead-lettered input's host (organs.runtime.dead_letter_outcomes).
            operations[f"{organ.name}SendsBorderRejected"] = {
                "action": "send",
                "channel": {"$ref": "#/channels/borderRejected"},
                "description": "the rejection of an input this organ dead-lettered (payload.dead_letter names it)",
            }


def asyncapi_document(subjects: Subjects | None = None) -> dict[str, Any]:
    names = subjects or Subjects()
    schemas = _schemas()
    envelope_ref, request_ref, reply_ref = schemas["refs"]
    channels: dict[str, Any] = {}
    operations: dict[str, Any] = {}
    _tract_channels(names, envelope_ref, channels, operations)
    channels["framesGet"] = {
        "address": names.frames_get,
        "description": "request/reply served by the stomach: a frame, compact or full",
        "messages": {
            "request": {"name": "FrameRequest", "contentType": "application/msgpack", "payload": request_ref},
            "reply": {"name": "FrameReply", "contentType": "application/msgpack", "payload": reply_ref},
        },
    }
    channels["framesGetTenant"] = {
        "address": names.frames_get_for("{tenant}"),
        "description": "request/reply served by the stomach to one tenant (a host user, only it may ask here): "
        "a frame of a paste it handed in, compact or full; any other frame is answered as no frame",
        "parameters": {"tenant": {"description": "the host user's name"}},
        "messages": {
            "request": {"name": "FrameRequest", "contentType": "application/msgpack", "payload": request_ref},
            "reply": {"name": "FrameReply", "contentType": "application/msgpack", "payload": reply_ref},
        },
    }
    channels["framesRaw"] = {
        "address": names.frames_raw,
        "description": "request/reply served by the stomach to the operator user only: a frame's bytes as received",
        "messages": {
            "request": {"name": "FrameRequest", "contentType": "application/msgpack", "payload": request_ref},
            "reply": {"name": "RawReply", "contentType": "application/msgpack"},
        },
    }
    channels["deadLetters"] = {
        "address": names.dlq("{organ}"),
        "description": "the original bytes and headers of an input an organ could not process, plus Ichor-Dlq-Reason",
        "parameters": {"organ": {"enum": list(ORGAN_NAMES)}},
        "messages": {"deadLetter": {"name": "DeadLetter", "contentType": "application/octet-stream"}},
    }
    operations["stomachRepliesFramesGet"] = {
        "action": "receive",
        "channel": {"$ref": "#/channels/framesGet"},
        "messages": [{"$ref": "#/channels/framesGet/messages/request"}],
        "reply": {
            "channel": {"$ref": "#/channels/framesGet"},
            "messages": [{"$ref": "#/channels/framesGet/messages/reply"}],
        },
    }
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "Ichor organs",
            "version": f"{SCHEMA_VERSION}.0.0",
            "description": "The digestive tract for LLM context: stomach → absorption → border → brain.",
        },
        "defaultContentType": "application/msgpack",
        "servers": {"nats": {"host": "127.0.0.1:4222", "protocol": "nats"}},
        "channels": channels,
        "operations": operations,
        "components": {"schemas": schemas["definitions"]},
    }
